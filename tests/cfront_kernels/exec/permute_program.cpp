// aicore-sim's own aclnn test program (written for the tests, no vendor code): the ACL
// runtime and aclnnMoeTokenPermuteWithEp's two phases as an example program makes them -
// four tokens of hidden 3 (fp32) routed to top-2 of three experts, the whole range kept -
// then a call with a null required tensor, whose code it prints.
#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_moe_token_permute_with_ep.h"

static aclTensor* Tensor(const std::vector<int64_t>& shape, aclDataType dt, size_t elem,
                         void** dev, const void* host)
{
    size_t n = 1;
    for (int64_t d : shape) n *= static_cast<size_t>(d);
    aclrtMalloc(dev, n * elem, ACL_MEM_MALLOC_HUGE_FIRST);
    if (host != nullptr) aclrtMemcpy(*dev, n * elem, host, n * elem, ACL_MEMCPY_HOST_TO_DEVICE);
    std::vector<int64_t> strides(shape.size(), 1);
    for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) strides[i] = strides[i + 1] * shape[i + 1];
    return aclCreateTensor(shape.data(), shape.size(), dt, strides.data(), 0, ACL_FORMAT_ND,
                           shape.data(), shape.size(), *dev);
}

int main()
{
    aclrtStream stream;
    if (aclInit(nullptr) != ACL_SUCCESS || aclrtSetDevice(0) != ACL_SUCCESS ||
        aclrtCreateStream(&stream) != ACL_SUCCESS) return 1;
    std::vector<float> tokens = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    std::vector<int32_t> indices = {2, 0, 1, 2, 0, 1, 1, 0};
    void *dTokens, *dIdx, *dOut, *dSorted;
    aclTensor* x = Tensor({4, 3}, ACL_FLOAT, 4, &dTokens, tokens.data());
    aclTensor* idx = Tensor({4, 2}, ACL_INT32, 4, &dIdx, indices.data());
    aclTensor* out = Tensor({8, 3}, ACL_FLOAT, 4, &dOut, nullptr);
    aclTensor* sorted = Tensor({8}, ACL_INT32, 4, &dSorted, nullptr);
    int64_t rangeValues[2] = {0, 8};
    aclIntArray* range = aclCreateIntArray(rangeValues, 2);
    uint64_t wsSize = 0;
    aclOpExecutor* executor = nullptr;
    aclnnStatus ret = aclnnMoeTokenPermuteWithEpGetWorkspaceSize(x, idx, nullptr, range, 8, false,
                                                                 out, sorted, nullptr, &wsSize,
                                                                 &executor);
    std::printf("first phase: %d\n", ret);
    void* ws = nullptr;
    if (wsSize > 0) aclrtMalloc(&ws, wsSize, ACL_MEM_MALLOC_HUGE_FIRST);
    ret = aclnnMoeTokenPermuteWithEp(ws, wsSize, executor, stream);
    std::printf("second phase: %d\n", ret);
    aclrtSynchronizeStream(stream);
    std::vector<float> rows(24);
    std::vector<int32_t> order(8);
    aclrtMemcpy(rows.data(), 96, dOut, 96, ACL_MEMCPY_DEVICE_TO_HOST);
    aclrtMemcpy(order.data(), 32, dSorted, 32, ACL_MEMCPY_DEVICE_TO_HOST);
    for (int i = 0; i < 24; ++i) std::printf("row value %d: %.1f\n", i, rows[i]);
    for (int i = 0; i < 8; ++i) std::printf("sorted index %d: %d\n", i, order[i]);
    ret = aclnnMoeTokenPermuteWithEpGetWorkspaceSize(nullptr, idx, nullptr, range, 8, false, out,
                                                     sorted, nullptr, &wsSize, &executor);
    std::printf("null tokens: %d\n", ret);
    aclDestroyTensor(x);
    aclDestroyTensor(idx);
    aclDestroyTensor(out);
    aclDestroyTensor(sorted);
    aclDestroyIntArray(range);
    aclrtFree(dTokens);
    aclrtFree(dIdx);
    aclrtFree(dOut);
    aclrtFree(dSorted);
    if (ws != nullptr) aclrtFree(ws);
    aclrtDestroyStream(stream);
    aclrtResetDevice(0);
    aclFinalize();
    return 0;
}

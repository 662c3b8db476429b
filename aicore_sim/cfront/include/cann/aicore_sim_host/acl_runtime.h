// aicore-sim's host shim: the ACL runtime and aclnn base an operator's example program uses
// (aclInit .. aclFinalize, device memory, streams, aclTensor / aclIntArray / aclFloatArray /
// aclBoolArray, the aclnn two-phase calls' plumbing), run against the simulator.
//
// Written for aicore-sim from the public ACL / aclnn API reference and the call sites of the
// operators' example programs; no vendor code. Device memory is the simulator's: aclrtMalloc
// asks it for a zeroed buffer it can map as GM (so a launch reads and writes the program's
// buffers in place), aclrtMemcpy copies bytes. Every aclnn<Op>GetWorkspaceSize (declared per
// operator in the generated aclnnop/ headers) describes its arguments to the simulator, which
// runs the operator's first phase and keeps the prepared call under the executor it returns;
// aclnn<Op> launches it (one simulated kernel launch, one run folder). Codes follow the
// aclnn contract: 0 success, 161001 a null required argument, 161002 an invalid one, 561002 a
// tiling failure, 561000-range codes for the rest.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "aicore_sim_host/ge.h"

using aclError = int;
using aclnnStatus = int32_t;
using aclrtStream = void*;
using aclrtContext = void*;

constexpr aclError ACL_SUCCESS = 0;
constexpr aclError ACL_ERROR_INVALID_PARAM = 100000;
constexpr aclError ACL_ERROR_BAD_ALLOC = 200000;
constexpr aclError ACL_ERROR_INTERNAL_ERROR = 500000;

// the ACL data types share GE's values
enum aclDataType {
    ACL_DT_UNDEFINED = -1, ACL_FLOAT = 0, ACL_FLOAT16 = 1, ACL_INT8 = 2, ACL_INT32 = 3,
    ACL_UINT8 = 4, ACL_INT16 = 6, ACL_UINT16 = 7, ACL_UINT32 = 8, ACL_INT64 = 9,
    ACL_UINT64 = 10, ACL_DOUBLE = 11, ACL_BOOL = 12, ACL_STRING = 13, ACL_COMPLEX64 = 16,
    ACL_COMPLEX128 = 17, ACL_BF16 = 27, ACL_INT4 = 29, ACL_UINT1 = 30, ACL_COMPLEX32 = 33
};
enum aclFormat {
    ACL_FORMAT_UNDEFINED = -1, ACL_FORMAT_NCHW = 0, ACL_FORMAT_NHWC = 1, ACL_FORMAT_ND = 2,
    ACL_FORMAT_NC1HWC0 = 3, ACL_FORMAT_FRACTAL_Z = 4, ACL_FORMAT_NC1HWC0_C04 = 12,
    ACL_FORMAT_HWCN = 16, ACL_FORMAT_NDHWC = 27, ACL_FORMAT_FRACTAL_NZ = 29,
    ACL_FORMAT_NCDHW = 30, ACL_FORMAT_NDC1HWC0 = 32, ACL_FRACTAL_Z_3D = 33, ACL_FORMAT_NC = 35,
    ACL_FORMAT_NCL = 47
};
enum aclrtMemMallocPolicy {
    ACL_MEM_MALLOC_HUGE_FIRST = 0, ACL_MEM_MALLOC_HUGE_ONLY = 1, ACL_MEM_MALLOC_NORMAL_ONLY = 2,
    ACL_MEM_MALLOC_HUGE_FIRST_P2P = 3, ACL_MEM_MALLOC_HUGE_ONLY_P2P = 4,
    ACL_MEM_MALLOC_NORMAL_ONLY_P2P = 5
};
enum aclrtMemcpyKind {
    ACL_MEMCPY_HOST_TO_HOST = 0, ACL_MEMCPY_HOST_TO_DEVICE = 1, ACL_MEMCPY_DEVICE_TO_HOST = 2,
    ACL_MEMCPY_DEVICE_TO_DEVICE = 3
};

struct aclTensor {
    std::vector<int64_t> view, strides, storage;
    aclDataType dtype;
    int64_t offset;
    aclFormat format;
    void* data;
};
struct aclIntArray {
    std::vector<int64_t> values;
};
struct aclFloatArray {
    std::vector<float> values;
};
struct aclBoolArray {
    std::vector<bool> values;
};
struct aclOpExecutor {
    int64_t id;
};

namespace aicore_sim_acl {

extern "C" {
typedef int64_t (*callback_t)(int64_t op, int64_t* slots, int32_t nslots);
}
constexpr int64_t OP_ALLOC = 1, OP_FREE = 2, OP_PREPARE = 3, OP_LAUNCH = 4;

inline callback_t& callback() {
    static callback_t cb = nullptr;
    return cb;
}

inline int64_t call(int64_t op, int64_t* slots, int32_t n) {
    if (callback() == nullptr) {
        std::fprintf(stderr, "aicore-sim: the ACL shim used outside 'aicore-sim exec'\n");
        std::abort();
    }
    std::fflush(stdout);  // the program's output and the simulator's stay in order
    std::fflush(stderr);
    return callback()(op, slots, n);
}

// the arguments of one aclnn first phase, flattened: a tag, then its payload
struct Args {
    std::vector<int64_t> s;
    // an argument that may be null: its tag, then 1 and its payload, or 0 alone for null
    bool optional(int64_t tag, const void* p) {
        s.push_back(tag);
        s.push_back(p != nullptr ? 1 : 0);
        return p != nullptr;
    }
    void tensor(const aclTensor* t) {
        if (!optional(1, t)) return;
        s.push_back(reinterpret_cast<int64_t>(t->data));
        s.push_back(t->dtype);
        s.push_back(t->offset);
        s.push_back(static_cast<int64_t>(t->view.size()));
        for (int64_t d : t->view) s.push_back(d);
        for (size_t i = 0; i < t->view.size(); ++i)
            s.push_back(i < t->strides.size() ? t->strides[i] : 0);
    }
    void integer(int64_t v) { s.push_back(2); s.push_back(v); }
    void boolean(bool v) { s.push_back(3); s.push_back(v ? 1 : 0); }
    void real(double v) {
        int64_t bits;
        std::memcpy(&bits, &v, sizeof bits);
        s.push_back(4);
        s.push_back(bits);
    }
    void ints(const aclIntArray* a) {
        if (!optional(5, a)) return;
        s.push_back(static_cast<int64_t>(a->values.size()));
        for (int64_t v : a->values) s.push_back(v);
    }
    void text(const char* v) { s.push_back(6); s.push_back(reinterpret_cast<int64_t>(v)); }
};

// the first phase: the simulator prepares the call; its status, workspace bytes, executor
inline aclnnStatus prepare(const char* op, Args& a, uint64_t* workspace, aclOpExecutor** executor) {
    if (workspace == nullptr || executor == nullptr) return 161001;
    int64_t out[2] = {0, 0};
    std::vector<int64_t> s = {reinterpret_cast<int64_t>(op), reinterpret_cast<int64_t>(out),
                              static_cast<int64_t>(a.s.size())};
    s.insert(s.end(), a.s.begin(), a.s.end());
    int64_t status = call(OP_PREPARE, s.data(), static_cast<int32_t>(s.size()));
    if (status != 0) return static_cast<aclnnStatus>(status);
    *workspace = static_cast<uint64_t>(out[0]);
    *executor = new aclOpExecutor{out[1]};
    return 0;
}

// the second phase: the launch of a prepared call
inline aclnnStatus launch(void* workspace, uint64_t size, aclOpExecutor* executor) {
    if (executor == nullptr) return 161001;
    int64_t s[3] = {executor->id, reinterpret_cast<int64_t>(workspace),
                    static_cast<int64_t>(size)};
    delete executor;  // an executor runs once
    return static_cast<aclnnStatus>(call(OP_LAUNCH, s, 3));
}

}  // namespace aicore_sim_acl

extern "C" {
__attribute__((visibility("default"), used)) inline void aicore_sim_acl_init(
    aicore_sim_acl::callback_t cb) {
    aicore_sim_acl::callback() = cb;
}
}

inline aclError aclInit(const char*) { return ACL_SUCCESS; }
inline aclError aclFinalize() { return ACL_SUCCESS; }
inline aclError aclrtSetDevice(int32_t) { return ACL_SUCCESS; }
inline aclError aclrtResetDevice(int32_t) { return ACL_SUCCESS; }
inline aclError aclrtGetDevice(int32_t* id) {
    if (id) *id = 0;
    return ACL_SUCCESS;
}
inline aclError aclrtCreateContext(aclrtContext* c, int32_t) {
    if (c) *c = reinterpret_cast<aclrtContext>(1);
    return ACL_SUCCESS;
}
inline aclError aclrtDestroyContext(aclrtContext) { return ACL_SUCCESS; }
inline aclError aclrtSetCurrentContext(aclrtContext) { return ACL_SUCCESS; }
inline aclError aclrtCreateStream(aclrtStream* s) {
    if (s == nullptr) return ACL_ERROR_INVALID_PARAM;
    *s = reinterpret_cast<aclrtStream>(1);  // launches run when they are called: in order
    return ACL_SUCCESS;
}
inline aclError aclrtDestroyStream(aclrtStream) { return ACL_SUCCESS; }
inline aclError aclrtSynchronizeStream(aclrtStream) { return ACL_SUCCESS; }
inline aclError aclrtSynchronizeDevice() { return ACL_SUCCESS; }

inline aclError aclrtMalloc(void** p, size_t size, aclrtMemMallocPolicy) {
    if (p == nullptr) return ACL_ERROR_INVALID_PARAM;
    int64_t s[1] = {static_cast<int64_t>(size)};
    *p = reinterpret_cast<void*>(aicore_sim_acl::call(aicore_sim_acl::OP_ALLOC, s, 1));
    return *p ? ACL_SUCCESS : ACL_ERROR_BAD_ALLOC;
}
inline aclError aclrtMallocHost(void** p, size_t size) {
    if (p == nullptr) return ACL_ERROR_INVALID_PARAM;
    *p = std::calloc(1, size ? size : 1);
    return *p ? ACL_SUCCESS : ACL_ERROR_BAD_ALLOC;
}
inline aclError aclrtFreeHost(void* p) {
    std::free(p);
    return ACL_SUCCESS;
}
inline aclError aclrtFree(void* p) {
    int64_t s[1] = {reinterpret_cast<int64_t>(p)};
    aicore_sim_acl::call(aicore_sim_acl::OP_FREE, s, 1);
    return ACL_SUCCESS;
}
inline aclError aclrtMemcpy(void* dst, size_t dest_max, const void* src, size_t count,
                            aclrtMemcpyKind) {
    if (dst == nullptr || src == nullptr || count > dest_max) return ACL_ERROR_INVALID_PARAM;
    std::memmove(dst, src, count);
    return ACL_SUCCESS;
}
inline aclError aclrtMemset(void* dst, size_t dest_max, int32_t value, size_t count) {
    if (dst == nullptr || count > dest_max) return ACL_ERROR_INVALID_PARAM;
    std::memset(dst, value, count);
    return ACL_SUCCESS;
}

inline aclTensor* aclCreateTensor(const int64_t* view, uint64_t view_num, aclDataType dtype,
                                  const int64_t* strides, int64_t offset, aclFormat format,
                                  const int64_t* storage, uint64_t storage_num, void* data) {
    auto* t = new aclTensor{};
    t->view.assign(view, view + view_num);
    if (strides != nullptr) t->strides.assign(strides, strides + view_num);
    if (storage != nullptr) t->storage.assign(storage, storage + storage_num);
    t->dtype = dtype;
    t->offset = offset;
    t->format = format;
    t->data = data;
    return t;
}
inline aclnnStatus aclDestroyTensor(const aclTensor* t) {
    delete t;
    return 0;
}

namespace aicore_sim_acl {
// an aclIntArray / aclFloatArray / aclBoolArray holding the n values at v (none for null)
template <typename Array, typename T>
inline Array* make_array(const T* v, uint64_t n) {
    auto* a = new Array{};
    if (v != nullptr) a->values.assign(v, v + n);
    return a;
}
}  // namespace aicore_sim_acl

inline aclIntArray* aclCreateIntArray(const int64_t* v, uint64_t n) {
    return aicore_sim_acl::make_array<aclIntArray>(v, n);
}
inline aclFloatArray* aclCreateFloatArray(const float* v, uint64_t n) {
    return aicore_sim_acl::make_array<aclFloatArray>(v, n);
}
inline aclBoolArray* aclCreateBoolArray(const bool* v, uint64_t n) {
    return aicore_sim_acl::make_array<aclBoolArray>(v, n);
}
inline aclnnStatus aclDestroyIntArray(const aclIntArray* a) {
    delete a;
    return 0;
}
inline aclnnStatus aclDestroyFloatArray(const aclFloatArray* a) {
    delete a;
    return 0;
}
inline aclnnStatus aclDestroyBoolArray(const aclBoolArray* a) {
    delete a;
    return 0;
}

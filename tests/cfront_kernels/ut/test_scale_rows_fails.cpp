// aicore-sim's own kernel unit test that fails on purpose: a wrong expectation, and a launch
// given a pointer AscendC::GmAlloc did not give (the simulator refuses it; the TEST fails).
#include <vector>

#include "gtest/gtest.h"
#include "tikicpulib.h"

extern "C" __global__ __aicore__ void scale_rows(GM_ADDR x, GM_ADDR y, GM_ADDR tiling);

TEST(scale_rows_fails, wrong_expectation) {
    float* x = static_cast<float*>(AscendC::GmAlloc(64 * sizeof(float)));
    float* y = static_cast<float*>(AscendC::GmAlloc(64 * sizeof(float)));
    auto* tiling = static_cast<ScaleRowsTilingData*>(AscendC::GmAlloc(sizeof(ScaleRowsTilingData)));
    x[0] = 1.0f;
    tiling->rowsPerCore = 1;
    tiling->cols = 64;
    ICPU_RUN_KF(scale_rows, 1, (GM_ADDR)x, (GM_ADDR)y, (GM_ADDR)tiling);
    EXPECT_EQ(y[0], 3.0f);  // it is 2
    AscendC::GmFree(x);
    AscendC::GmFree(y);
    AscendC::GmFree(tiling);
}

TEST(scale_rows_fails, pointer_not_from_gm_alloc) {
    std::vector<float> host(64, 1.0f);
    float* y = static_cast<float*>(AscendC::GmAlloc(64 * sizeof(float)));
    ICPU_RUN_KF(scale_rows, 1, (GM_ADDR)host.data(), (GM_ADDR)y, (GM_ADDR)nullptr);
    AscendC::GmFree(y);
}

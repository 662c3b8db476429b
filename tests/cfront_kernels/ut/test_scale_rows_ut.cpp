// aicore-sim's own kernel unit test in upstream's CPU-debug style: scale_rows.cpp (one folder
// up) launched through ICPU_RUN_KF on GmAlloc'd buffers, its results checked inside the TESTs.
#include <cstdio>
#include <string>

#include "gtest/gtest.h"
#include "tikicpulib.h"
#include "data_utils.h"

extern "C" __global__ __aicore__ void scale_rows(GM_ADDR x, GM_ADDR y, GM_ADDR tiling);

namespace {
constexpr int kRows = 12;
constexpr int kCols = 64;
constexpr size_t kBytes = kRows * kCols * sizeof(float);
}  // namespace

TEST(scale_rows_ut, doubles_every_row_on_four_cores) {
    float* x = static_cast<float*>(AscendC::GmAlloc(kBytes));
    float* y = static_cast<float*>(AscendC::GmAlloc(kBytes));
    auto* tiling = static_cast<ScaleRowsTilingData*>(AscendC::GmAlloc(sizeof(ScaleRowsTilingData)));
    for (int i = 0; i < kRows * kCols; ++i) x[i] = static_cast<float>(i) - 100.0f;
    tiling->rowsPerCore = 3;
    tiling->cols = kCols;
    AscendC::SetKernelMode(KernelMode::AIV_MODE);
    ICPU_SET_TILING_KEY(0);
    ICPU_RUN_KF(scale_rows, 4, (GM_ADDR)x, (GM_ADDR)y, (GM_ADDR)tiling);
    for (int i = 0; i < kRows * kCols; ++i) EXPECT_EQ(y[i], 2.0f * x[i]) << "element " << i;
    // data_utils.h: the results written and read back
    std::string path = testing::TempDir() + "aicore_sim_scale_rows_y.bin";
    ASSERT_TRUE(WriteFile(path, y, kBytes));
    float back[kRows * kCols] = {};
    size_t got = 0;
    ASSERT_TRUE(ReadFile(path, got, back, sizeof back));
    EXPECT_EQ(got, kBytes);
    EXPECT_EQ(back[kRows * kCols - 1], y[kRows * kCols - 1]);
    std::remove(path.c_str());
    EXPECT_FALSE(ReadFile(path, got, back, sizeof back));  // gone: the read fails, no crash
    AscendC::GmFree(x);
    AscendC::GmFree(y);
    AscendC::GmFree(tiling);
}

TEST(scale_rows_ut, pointers_inside_a_buffer_launch_on_its_rows) {
    float* x = static_cast<float*>(AscendC::GmAlloc(kBytes));
    float* y = static_cast<float*>(AscendC::GmAlloc(kBytes));
    auto* tiling = static_cast<ScaleRowsTilingData*>(AscendC::GmAlloc(sizeof(ScaleRowsTilingData)));
    for (int i = 0; i < kRows * kCols; ++i) x[i] = 1.5f;
    tiling->rowsPerCore = 3;
    tiling->cols = kCols;
    // the second half of the rows, on two cores
    ICPU_RUN_KF(scale_rows, 2, (GM_ADDR)(x + kRows / 2 * kCols), (GM_ADDR)(y + kRows / 2 * kCols),
                (GM_ADDR)tiling);
    EXPECT_EQ(y[0], 0.0f);
    EXPECT_EQ(y[kRows / 2 * kCols - 1], 0.0f);
    EXPECT_EQ(y[kRows / 2 * kCols], 3.0f);
    EXPECT_EQ(y[kRows * kCols - 1], 3.0f);
    AscendC::GmFree(x);
    AscendC::GmFree(y);
    AscendC::GmFree(tiling);
}

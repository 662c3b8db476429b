// aicore-sim's stand-in for the CPU-debug interface a kernel unit test includes.
//
// Written for aicore-sim from the call sites of the kernel unit tests it runs and the public
// Ascend C documentation of the CPU debug interface; it contains no vendor code. A test built
// by 'aicore-sim ut' runs on the host: GmAlloc gives a GM buffer the simulator maps (a numpy
// array Python owns, named gm0, gm1, ... in the run folders), and ICPU_RUN_KF is one simulated
// launch of the kernel entry on blockDim AIV cores with the tiling key ICPU_SET_TILING_KEY
// set; the results are in the test's buffers when it returns, and each launch writes a run
// folder (docs/cpp_kernels.md, "Upstream's kernel unit tests").
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernel_operator.h"
#include "aicore_sim/host.h"

namespace AscendC {
// A zeroed GM buffer of `size` bytes the simulator can map.
inline void* GmAlloc(size_t size) { return aicore_sim::host::gm_alloc(size); }
inline void GmFree(void* p) { aicore_sim::host::gm_free(p); }
}  // namespace AscendC

// The tests name the kernel mode unqualified.
using AscendC::KernelMode;

// The tiling key the following launches pass (TILING_KEY_IS in the kernel).
#define ICPU_SET_TILING_KEY(key) (aicore_sim::host::g_tiling_key = static_cast<uint64_t>(key))

// One launch of the extern "C" kernel entry `func` on `blockDim` cores.
#define ICPU_RUN_KF(func, blockDim, ...)                                                       \
    aicore_sim::host::launch(#func, reinterpret_cast<void*>(&func), (blockDim), __FILE__,      \
                             __LINE__, __VA_ARGS__)

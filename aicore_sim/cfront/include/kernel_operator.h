// aicore-sim's Ascend C shim: what a kernel includes.
//
// Written for aicore-sim from the public Ascend C API reference and the call sites of the
// kernels it runs; it contains no vendor code. A kernel compiled against it runs on the host,
// one thread per AIV core, and every Ascend C call it makes is recorded, checked and computed
// by the simulator (aicore_sim.ascendc), exactly as for a kernel written in Python.
#pragma once

#include "aicore_sim/api.h"
#include "aicore_sim/runtime.h"
#include "aicore_sim/tiling.h"

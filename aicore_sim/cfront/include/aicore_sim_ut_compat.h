// aicore-sim's CPU-debug harness: kernel-side items a unit test build needs that the shim does
// not declare (yet); outside aicore_sim/ on purpose: not
// part of the shim (nor of its API table), only of unit test builds.
//
// Written for aicore-sim; no vendor code. Included by 'aicore-sim ut' in the kernel's unit
// only, after kernel_operator.h, each item only when the shim lacks it. ASSERT: as in a CPU
// debug build, a false condition stops the kernel (SIGABRT, which the entry runner reports as
// a crash naming the core and its last instruction).
#pragma once

#include <cstdlib>

#ifndef ASSERT
#define ASSERT(cond)                                                                           \
    do {                                                                                       \
        if (!(cond)) std::abort();                                                             \
    } while (0)
#endif

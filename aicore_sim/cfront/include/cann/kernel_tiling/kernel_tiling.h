// aicore-sim host shim: CANN's kernel_tiling/kernel_tiling.h, which gathers the tiling structs
// of the Ascend C library APIs (matrix multiply, softmax, top-k, ...) for host tilings to fill.
// The shim gives none of those structs yet: a host tiling that includes the header without
// using one compiles; one that uses a struct fails at its name (written for aicore-sim; no
// vendor code).
#pragma once

// aicore-sim Ascend C shim: the include path kernel_tiling/kernel_tiling.h when nothing else
// provides it (searched last; no vendor code).
// CANN generates it with the tiling structs of the ops being built; here the same structs are
// generated from the op's own *_tiling.h and prepended to every kernel build (the prelude),
// so this header adds nothing.
#pragma once

// Tiling of aicore-sim's own double-buffered Add example (examples/cpp/add/add_custom.cpp).
//
// z = x + y over a [totalM, totalN] matrix: the rows are split over the launch's cores (the
// first totalM % blockDim cores take one row more) and each core's rows are walked in chunks
// of tileLength elements. aicore-sim reads this block to lay out the struct the kernel's
// GET_TILING_DATA copies and to pack the case file's "tiling.values".
#pragma once

BEGIN_TILING_DATA_DEF(AddCustomTilingData)
TILING_DATA_FIELD_DEF(uint32_t, totalM);
TILING_DATA_FIELD_DEF(uint32_t, totalN);
TILING_DATA_FIELD_DEF(uint32_t, tileLength);
END_TILING_DATA_DEF;

REGISTER_TILING_DATA_CLASS(AddCustom, AddCustomTilingData)

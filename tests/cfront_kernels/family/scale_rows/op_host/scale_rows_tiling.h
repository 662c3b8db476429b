// aicore-sim's own test tiling: rows per core and row length.
BEGIN_TILING_DATA_DEF(ScaleRowsTilingData)
TILING_DATA_FIELD_DEF(int64_t, rowsPerCore);
TILING_DATA_FIELD_DEF(int64_t, cols);
END_TILING_DATA_DEF;
REGISTER_TILING_DATA_CLASS(ScaleRows, ScaleRowsTilingData)

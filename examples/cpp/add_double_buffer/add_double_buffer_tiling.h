// aicore-sim's own example: the shape of a double-buffered Add and how it is split.
BEGIN_TILING_DATA_DEF(AddDoubleBufferTilingData)
TILING_DATA_FIELD_DEF(int64_t, totalM);       // rows of x, y and z
TILING_DATA_FIELD_DEF(int64_t, totalN);       // elements a row
TILING_DATA_FIELD_DEF(int64_t, splitM);       // cores the rows are split over
TILING_DATA_FIELD_DEF(int64_t, dataCopyLen);  // elements a chunk
END_TILING_DATA_DEF;
REGISTER_TILING_DATA_CLASS(AddDoubleBuffer, AddDoubleBufferTilingData)

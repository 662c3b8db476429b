// The test kernel of ../../scale_rows.cpp, as an operator folder of the coverage tests.
#include "../../../scale_rows.cpp"

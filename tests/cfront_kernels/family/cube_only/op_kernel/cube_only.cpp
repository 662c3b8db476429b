// not a kernel of an A2/A3 operator

// aicore-sim host shim: the include path op_common/op_host/util/platform_util.h (no vendor code).
#pragma once
#include "util/platform_util.h"

// aicore-sim host shim: the include path platform/platform_ascendc.h (no vendor code).
#pragma once
#include "aicore_sim_host/platform.h"

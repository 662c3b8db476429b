// aicore-sim host shim: the CANN include path tiling/tiling_api.h, forwarding to aicore_sim_host/platform.h (no vendor code).
#pragma once
#include "aicore_sim_host/platform.h"
#include "aicore_sim_host/tiling_data.h"

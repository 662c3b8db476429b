// aicore-sim host shim: the CANN include path register/tilingdata_base.h, forwarding to aicore_sim_host/tiling_data.h (no vendor code).
#pragma once
#include "aicore_sim_host/tiling_data.h"

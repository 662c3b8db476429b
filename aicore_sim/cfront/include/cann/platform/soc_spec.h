// aicore-sim host shim: the CANN include path platform/soc_spec.h, forwarding to aicore_sim_host/platform.h (no vendor code).
#pragma once
#include "aicore_sim_host/platform.h"

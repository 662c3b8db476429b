// aicore-sim host shim: the CANN include path log/log.h, forwarding to aicore_sim_host/log.h (no vendor code).
#pragma once
#include "aicore_sim_host/log.h"

// aicore-sim host shim: the CANN include path graph/utils/type_utils.h, forwarding to aicore_sim_host/ge.h (no vendor code).
#pragma once
#include "aicore_sim_host/ge.h"

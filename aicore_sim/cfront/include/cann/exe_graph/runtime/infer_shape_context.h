// aicore-sim host shim: the CANN include path exe_graph/runtime/infer_shape_context.h, forwarding to aicore_sim_host/gert.h (no vendor code).
#pragma once
#include "aicore_sim_host/gert.h"

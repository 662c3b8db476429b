// aicore-sim host shim: the CANN include path register/op_impl_registry.h, forwarding to aicore_sim_host/registry.h (no vendor code).
#pragma once
#include "aicore_sim_host/registry.h"

// aicore-sim host shim: the include path acl/acl.h (no vendor code).
#pragma once
#include "aicore_sim_host/acl_runtime.h"

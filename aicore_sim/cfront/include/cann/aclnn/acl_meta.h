// aicore-sim host shim: the include path aclnn/acl_meta.h (no vendor code).
#pragma once
#include "aicore_sim_host/acl_runtime.h"

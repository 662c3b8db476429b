// aicore-sim host shim: the include path aclnn/aclnn_base.h (no vendor code).
#pragma once
#include "aicore_sim_host/acl_runtime.h"

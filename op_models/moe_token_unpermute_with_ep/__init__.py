"""CANN ops-transformer ``MoeTokenUnpermuteWithEp`` (forward): tiling, kernel port, golden."""

from op_models.moe_token_unpermute_with_ep.api import (
    ACLNN_ERR_INNER_TILING_ERROR,
    ACLNN_ERR_PARAM_INVALID,
    ACLNN_ERR_PARAM_NULLPTR,
    ACLNN_SUCCESS,
    DTYPE_COMBINATIONS,
    AclnnError,
    Executor,
    execute,
    get_workspace_size,
    moe_token_unpermute_with_ep,
    run_case,
)
from op_models.moe_token_unpermute_with_ep.kernel_entry import (
    moe_token_unpermute_with_ep as moe_token_unpermute_with_ep_kernel,
)

__all__ = [
    "ACLNN_ERR_INNER_TILING_ERROR", "ACLNN_ERR_PARAM_INVALID", "ACLNN_ERR_PARAM_NULLPTR",
    "ACLNN_SUCCESS", "DTYPE_COMBINATIONS", "AclnnError", "Executor", "execute",
    "get_workspace_size", "moe_token_unpermute_with_ep", "moe_token_unpermute_with_ep_kernel",
    "run_case",
]

"""CANN ops-transformer ``MoeTokenUnpermuteWithEpGrad``: host tiling, kernel ports and golden."""

from op_models.moe_token_unpermute_with_ep_grad.api import (
    ACLNN_ERR_INNER_TILING_ERROR,
    ACLNN_ERR_PARAM_INVALID,
    ACLNN_ERR_PARAM_NULLPTR,
    ACLNN_SUCCESS,
    DTYPE_COMBINATIONS,
    AclnnError,
    Executor,
    execute,
    get_workspace_size,
    moe_token_unpermute_with_ep_grad,
    run_case,
)
from op_models.moe_token_unpermute_with_ep_grad.kernel_entry import (
    moe_token_unpermute_with_ep_grad as moe_token_unpermute_with_ep_grad_kernel,
)

__all__ = [
    "ACLNN_ERR_INNER_TILING_ERROR", "ACLNN_ERR_PARAM_INVALID", "ACLNN_ERR_PARAM_NULLPTR",
    "ACLNN_SUCCESS", "DTYPE_COMBINATIONS", "AclnnError", "Executor", "execute",
    "get_workspace_size", "moe_token_unpermute_with_ep_grad",
    "moe_token_unpermute_with_ep_grad_kernel", "run_case",
]

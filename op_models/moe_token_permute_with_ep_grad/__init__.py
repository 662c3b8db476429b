"""CANN ops-transformer ``MoeTokenPermuteWithEpGrad`` (EP permute backward): tiling, kernel.

``moe_token_permute_with_ep_grad(permuted_tokens_output_grad, sorted_indices,
permuted_probs_output_grad=None, *, num_topk=..., range=..., token_grad=<preallocated>, ...)``
is the Python call the contract generates (:func:`aicore_sim.ops.opmodel.op_function`);
``run_case`` runs a bundled case."""

from aicore_sim import op_function
from op_models.moe_token_permute_with_ep_grad.model import MODEL

moe_token_permute_with_ep_grad = op_function(MODEL)
run_case = MODEL.run_case

__all__ = ["MODEL", "moe_token_permute_with_ep_grad", "run_case"]

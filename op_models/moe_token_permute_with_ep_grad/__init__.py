"""CANN ops-transformer ``MoeTokenPermuteWithEpGrad`` (EP permute backward):
``moe_token_permute_with_ep_grad`` is its Python call, generated from the contract
(``aicore_sim.op_function``); ``run_case`` runs a bundled case."""

from aicore_sim import op_function
from op_models.moe_token_permute_with_ep_grad.model import MODEL

moe_token_permute_with_ep_grad = op_function(MODEL)
run_case = MODEL.run_case

__all__ = ["MODEL", "moe_token_permute_with_ep_grad", "run_case"]

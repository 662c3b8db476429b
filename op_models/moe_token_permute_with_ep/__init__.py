"""CANN ops-transformer ``MoeTokenPermuteWithEp`` (forward EP permute):
``moe_token_permute_with_ep`` is its Python call, generated from the contract
(``aicore_sim.op_function``); ``run_case`` runs a bundled case."""

from aicore_sim import op_function
from op_models.moe_token_permute_with_ep.model import MODEL

moe_token_permute_with_ep = op_function(MODEL)
run_case = MODEL.run_case

__all__ = ["MODEL", "moe_token_permute_with_ep", "run_case"]

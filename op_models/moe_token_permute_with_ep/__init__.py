"""CANN ops-transformer ``MoeTokenPermuteWithEp`` (forward EP permute): tiling, kernels, golden.

``moe_token_permute_with_ep(tokens, indices, probs=None, *, range=..., num_out_tokens=...,
platform=..., mode=...)`` is the Python call the contract generates
(:func:`aicore_sim.ops.opmodel.op_function`); ``run_case`` runs a bundled case."""

from aicore_sim import op_function
from op_models.moe_token_permute_with_ep.model import MODEL

moe_token_permute_with_ep = op_function(MODEL)
run_case = MODEL.run_case

__all__ = ["MODEL", "moe_token_permute_with_ep", "run_case"]

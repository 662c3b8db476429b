"""CANN ops-transformer ``MoeTokenUnpermuteWithEp`` (forward): ``moe_token_unpermute_with_ep`` is
its Python call, generated from the contract (``aicore_sim.op_function``); ``run_case`` runs a
bundled case."""

from aicore_sim import op_function
from op_models.moe_token_unpermute_with_ep.api import AclnnError, get_workspace_size
from op_models.moe_token_unpermute_with_ep.model import MODEL

moe_token_unpermute_with_ep = op_function(MODEL)
run_case = MODEL.run_case

__all__ = ["MODEL", "AclnnError", "get_workspace_size", "moe_token_unpermute_with_ep", "run_case"]

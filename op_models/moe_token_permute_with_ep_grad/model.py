"""``MoeTokenPermuteWithEpGrad`` as an :class:`~aicore_sim.ops.opmodel.OpModel` (its registration).

What the generic commands (``run``, ``tiling``, ``cases``, ``verify --matrix``) know of the
backward EP permute: the IR (inputs, attributes, outputs), the aclnn two-phase API
(:mod:`.api`), the golden (:mod:`.golden`), the bundled cases (:mod:`.cases`), the
equivalence matrix and upstream's ATK records (:mod:`.atk`). No tiling space (``sweep`` /
``search`` are not supported for this op). ``pyproject.toml`` registers :data:`MODEL` in the
``aicore_sim.ops`` entry-point group.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from aicore_sim import AttrSpec, PreparedCall, Spec, TensorSpec, dtypes
from op_models import moe_matrix
from op_models.moe_common import FLOATS, MoeOpModel, ep_text

NAME = "moe_token_permute_with_ep_grad"
_INPUTS = ("permuted_tokens_output_grad", "sorted_indices", "permuted_probs_output_grad")


def _call(n: int, k: int, hidden: int, dt: Any, window: tuple[int, int], probs: bool
          ) -> tuple[dict[str, Spec | None], dict[str, Any]]:
    """Input specs and attributes of a call on the permuted rows ``window`` of ``n * k``."""
    start, end = window
    specs: dict[str, Spec | None] = {
        "permuted_tokens_output_grad": ((end - start, hidden), dt),
        "sorted_indices": ((n * k,), dtypes.int32),
        "permuted_probs_output_grad": ((end - start,), dt) if probs else None,
    }
    return specs, {"num_topk": k, "range": [start, end], "padded_mode": False}


class MoeTokenPermuteWithEpGradModel(MoeOpModel):
    """The backward of the MoE token permute with expert parallelism (CANN ops-transformer)."""

    name = NAME
    description = "CANN ops-transformer MoeTokenPermuteWithEpGrad (backward permute, EP window)"
    inputs = (
        TensorSpec("permuted_tokens_output_grad", FLOATS, 2,
                   doc="(end - start, H) gradient of permute_tokens"),
        TensorSpec("sorted_indices", ("int32",), 1, doc="(N*K,) permuted row of each slot"),
        TensorSpec("permuted_probs_output_grad", FLOATS, 1, optional=True,
                   doc="(end - start,) gradient of permute_probs, the grad's dtype"),
    )
    attrs = (
        AttrSpec("num_topk", "int", 1, "K, the experts of each token"),
        AttrSpec("range", "int_list", (0, 0), "[start, end) permuted rows of this EP rank"),
        AttrSpec("padded_mode", "bool", False, "only false is supported upstream"),
    )
    outputs = (
        TensorSpec("token_grad", FLOATS, 2, doc="(N, H)"),
        TensorSpec("probs_grad", FLOATS, 2, optional=True, doc="(N, K), with probs"),
    )
    aclnn_name = "MoeTokenPermuteWithEpGrad"
    matrix_axes = moe_matrix.PAIRED_AXES

    # -- cases -------------------------------------------------------------------------------

    def case_specs(self, case: Any) -> tuple[dict[str, Spec | None], dict[str, Any]]:
        from op_models.moe_token_permute_with_ep_grad.cases import np_dtype, window

        return _call(case.tokens_num, case.top_k, case.hidden, np_dtype(case.dtype),
                     window(case), case.probs)

    def case_row(self, case: Any) -> dict[str, str]:
        return {"N": str(case.tokens_num), "K": str(case.top_k), "H": str(case.hidden),
                "grad": case.dtype, "probs": case.dtype if case.probs else "-",
                "range": ep_text(case)}

    def matrix_case(self, mc: Any) -> Any:
        return moe_matrix.paired_case(self._module("cases").Case, mc)

    def atk_call(self, tensors: dict[str, Any], attrs: dict[str, Any], seed: int
                 ) -> dict[str, Any]:
        from op_models.moe_token_permute_with_ep_grad import atk

        c = atk.record_call(tensors, attrs, seed)
        specs, attrs = _call(c["n"], c["topk"], c["hidden"], c["dtype"], c["range"], c["probs"])
        return {"label": f"n{c['n']}h{c['hidden']}k{c['topk']}", "input_specs": specs,
                "attrs": attrs, "make_inputs": c["make_inputs"], "expected": c["expected"]}

    # -- the call ----------------------------------------------------------------------------

    def golden(self, inputs: dict[str, np.ndarray | None], attrs: dict[str, Any],
               pc: PreparedCall) -> dict[str, np.ndarray | None]:
        from op_models.moe_token_permute_with_ep_grad.golden import golden

        r = attrs["range"] or [0, 0]
        return golden(inputs["permuted_tokens_output_grad"], inputs["sorted_indices"],
                      inputs.get("permuted_probs_output_grad"), int(attrs["num_topk"]),
                      int(r[0]), int(r[1]))


MODEL = MoeTokenPermuteWithEpGradModel()

"""``MoeTokenPermuteWithEp`` as an :class:`~aicore_sim.ops.opmodel.OpModel` (its registration).

What the generic commands (``run``, ``tiling``, ``cases``, ``verify --matrix``) know of the
forward EP permute: the IR (inputs, attributes, outputs), the aclnn two-phase API
(:mod:`.api`), the golden (:mod:`.golden`), the bundled cases (:mod:`.cases`) and the
equivalence matrix. No ATK reader (upstream's ATK record file is empty) and no tiling space
(``sweep`` / ``search`` are not supported for this op). ``pyproject.toml`` registers
:data:`MODEL` in the ``aicore_sim.ops`` entry-point group.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from aicore_sim import AttrSpec, PreparedCall, Spec, TensorSpec
from aicore_sim.ascendc.host import tensor_descs
from op_models import moe_matrix
from op_models.moe_common import FLOATS, MoeOpModel, ep_text

NAME = "moe_token_permute_with_ep"


class MoeTokenPermuteWithEpModel(MoeOpModel):
    """The forward MoE token permute with expert parallelism (CANN ops-transformer)."""

    name = NAME
    description = "CANN ops-transformer MoeTokenPermuteWithEp (forward permute, EP window)"
    inputs = (
        TensorSpec("tokens", FLOATS, 2, doc="(N, H) the tokens"),
        TensorSpec("indices", ("int32", "int64"), None, doc="(N, K) or (N,) expert ids"),
        TensorSpec("probs", FLOATS, None, optional=True, value_range=(0.01, 0.99),
                   doc="routing weights, indices' shape, tokens' dtype"),
    )
    attrs = (
        AttrSpec("range", "int_list", (0, 0), "[start, end) rows of the permutation kept"),
        AttrSpec("num_out_tokens", "int", 0, "rows kept when range is absent"),
        AttrSpec("padded_mode", "bool", False, "only false is supported upstream"),
    )
    outputs = (
        TensorSpec("permute_tokens", FLOATS, 2, doc="(rows kept, H)"),
        TensorSpec("sorted_indices", ("int32",), 1, doc="(N*K,) permuted row of each slot"),
        TensorSpec("permute_probs", FLOATS, 1, optional=True, doc="(rows kept,)"),
    )
    aclnn_name = "MoeTokenPermuteWithEp"
    matrix_axes = moe_matrix.PAIRED_AXES

    # -- cases -------------------------------------------------------------------------------

    def case_specs(self, case: Any) -> tuple[dict[str, Spec | None], dict[str, Any]]:
        from op_models.moe_token_permute_with_ep.cases import np_dtype, window

        start, end = window(case)
        dt = np_dtype(case.dtype)
        shape = (case.tokens_num, case.top_k)
        specs: dict[str, Spec | None] = {
            "tokens": ((case.tokens_num, case.hidden), dt),
            "indices": (shape, np_dtype(case.indices_dtype)),
            "probs": (shape, dt) if case.probs else None,
        }
        return specs, {"range": [start, end], "num_out_tokens": 0, "padded_mode": False}

    def case_row(self, case: Any) -> dict[str, str]:
        return {"N": str(case.tokens_num), "K": str(case.top_k), "H": str(case.hidden),
                "tokens": case.dtype, "indices": case.indices_dtype,
                "probs": case.dtype if case.probs else "-", "range": ep_text(case)}

    def matrix_case(self, mc: Any) -> Any:
        return moe_matrix.paired_case(self._module("cases").Case, mc)

    def atk_call(self, tensors: dict[str, Any], attrs: dict[str, Any], seed: int
                 ) -> dict[str, Any]:
        raise ValueError("MoeTokenPermuteWithEp: upstream's ATK record file is empty; no ATK "
                         "reader")

    # -- shapes and tiling -------------------------------------------------------------------

    def tiling_outputs(self, input_specs: dict[str, Spec | None], attrs: dict[str, Any]
                       ) -> list[Any]:
        return tensor_descs(self.infer_outputs(dict(zip((t.name for t in self.inputs),
                                                        input_specs.values())), attrs).values())

    # -- the call ----------------------------------------------------------------------------

    def needs_numerics(self, pc: PreparedCall) -> bool:
        from op_models.moe_token_permute_with_ep.api import NUMERIC_KEYS

        return pc.tiling_key in NUMERIC_KEYS

    def golden(self, inputs: dict[str, np.ndarray | None], attrs: dict[str, Any],
               pc: PreparedCall) -> dict[str, np.ndarray | None]:
        from op_models.moe_token_permute_with_ep.golden import golden

        r = attrs["range"] or [0, int(attrs["num_out_tokens"])]
        g = golden(inputs["tokens"], inputs["indices"], inputs.get("probs"), int(r[0]),
                   int(r[1]))
        return {k: g[k] for k in ("permute_tokens", "sorted_indices", "permute_probs")}


MODEL = MoeTokenPermuteWithEpModel()

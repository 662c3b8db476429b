"""``MoeTokenUnpermuteWithEpGrad`` as an :class:`~aicore_sim.ops.opmodel.OpModel` (its
registration).

What the generic commands (``run``, ``verify``, ``tiling``, ``cases``, ``sweep``, ``search``)
know of this operator, and all of it: the IR (inputs, attributes, outputs), the aclnn two-phase
API (:mod:`.api`), the golden (:mod:`.golden`), the bundled cases (:mod:`.cases`), the
equivalence matrix, the ATK reader (:mod:`.atk`) and the tiling space (:mod:`.tiling_space`).
``pyproject.toml`` registers :data:`MODEL` in the ``aicore_sim.ops`` entry-point group.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from aicore_sim import AttrSpec, PreparedCall, Spec, TensorSpec, dtypes
from op_models import moe_matrix
from op_models.moe_common import FLOATS, MoeOpModel, topk_default

NAME = "moe_token_unpermute_with_ep_grad"


class MoeTokenUnpermuteWithEpGradModel(MoeOpModel):
    """The backward of the MoE token unpermute with expert parallelism (CANN ops-transformer)."""

    name = NAME
    description = "CANN ops-transformer MoeTokenUnpermuteWithEpGrad (backward of the unpermute)"
    inputs = (
        TensorSpec("unpermuted_tokens_grad", FLOATS, 2, doc="(N, H) gradient of the output"),
        TensorSpec("sorted_indices", ("int32",), 1, doc="(T = N*K,) flat position -> row"),
        TensorSpec("permuted_tokens", FLOATS, 2, optional=True, doc="(T, H) forward input"),
        TensorSpec("probs", FLOATS, 2, optional=True, value_range=(0.01, 0.99),
                   doc="(N, K) routing weights; absent = path A"),
    )
    attrs = (
        AttrSpec("padded_mode", "bool", False, "only false is supported upstream"),
        AttrSpec("restore_shape", "int_list", (1, 1), "unused by the kernel"),
        AttrSpec("range", "int_list", (-1, -1), "[start, end) window of flat positions"),
        AttrSpec("topk_num", "int", None, "K; default probs.shape[1], else 1"),
    )
    outputs = (
        TensorSpec("permuted_tokens_grad", FLOATS, 2, doc="(T, H) in the tokens dtype"),
        TensorSpec("probs_grad", FLOATS, 2, optional=True, doc="(N, K), only with probs"),
    )
    aclnn_name = "MoeTokenUnpermuteWithEpGrad"
    tiling_arch = True  # the empty-tensor path of 950 (host arch 3510)
    matrix_axes = {**moe_matrix.AXES, "indices": moe_matrix.INDICES}

    @property
    def tiling_space(self) -> Any:
        from op_models.moe_token_unpermute_with_ep_grad.tiling_space import TILING_SPACE

        return TILING_SPACE

    # -- cases -------------------------------------------------------------------------------

    def case_specs(self, case: Any) -> tuple[dict[str, Spec | None], dict[str, Any]]:
        from op_models.moe_token_unpermute_with_ep_grad.cases import np_dtype

        n, k, h, t = case.tokens_num, case.top_k, case.hidden, case.flat_size
        tok = np_dtype(case.dtype)
        specs: dict[str, Spec | None] = {
            "unpermuted_tokens_grad": ((n, h), tok),
            "sorted_indices": ((t,), dtypes.int32),
            "permuted_tokens": ((t, h), tok),
            "probs": None if case.probs_dtype is None else ((n, k), np_dtype(case.probs_dtype)),
        }
        attrs = {"padded_mode": False, "restore_shape": None,
                 "range": None if case.range is None else list(case.range), "topk_num": k}
        return specs, attrs

    def case_row(self, case: Any) -> dict[str, str]:
        rng = "-" if case.range is None else f"[{case.range[0]}, {case.range[1]}]"
        return {"N": str(case.tokens_num), "K": str(case.top_k), "H": str(case.hidden),
                "tokens": case.dtype, "probs": case.probs_dtype or "-", "range": rng}

    def matrix_case(self, mc: Any) -> Any:
        from op_models.moe_token_unpermute_with_ep_grad.cases import Case

        n, k, h = moe_matrix.shape(mc.axes)
        return Case(mc.name, n, k, h, mc.axes["dtype"], moe_matrix.probs_dtype(mc.axes),
                    moe_matrix.window(mc.axes), seed=mc.seed, indices=mc.axes["indices"])

    def atk_call(self, tensors: dict[str, Any], attrs: dict[str, Any], seed: int
                 ) -> dict[str, Any]:
        from op_models.moe_token_unpermute_with_ep_grad import atk

        c = atk.record_call(tensors, attrs, seed)
        return {"label": f"n{c['n']}h{c['hidden']}", "input_specs": c["input_specs"],
                "attrs": {"range": list(c["range"]), "topk_num": c["topk_num"]},
                "make_inputs": c["make_inputs"], "expected": c["expected"]}

    # -- the call ----------------------------------------------------------------------------

    def default_attrs(self, input_specs: dict[str, Spec | None], attrs: dict[str, Any]
                      ) -> dict[str, Any]:
        return topk_default(attrs, "topk_num", input_specs.get("probs"))

    def instruction_bound(self, pc: PreparedCall) -> int | None:
        from op_models.moe_token_unpermute_with_ep_grad.tiling_space import instruction_bound

        return instruction_bound(pc.tiling, pc.block_dim)

    def golden(self, inputs: dict[str, np.ndarray | None], attrs: dict[str, Any],
               pc: PreparedCall) -> dict[str, np.ndarray | None]:
        from op_models.moe_token_unpermute_with_ep_grad.golden import golden, normalise_range

        idx = inputs["sorted_indices"]
        assert idx is not None
        start, end, num_out = normalise_range(attrs["range"], int(idx.shape[0]))
        td = pc.tiling
        pg, prg = golden(inputs["unpermuted_tokens_grad"], idx, inputs.get("permuted_tokens"),
                         inputs.get("probs"), start=start, end=end, num_out_tokens=num_out,
                         hidden_chunk=td.hiddenSizeAlign if td is not None else 1 << 30)
        return {"permuted_tokens_grad": pg, "probs_grad": prg}


MODEL = MoeTokenUnpermuteWithEpGradModel()

"""``MoeTokenUnpermuteWithEp`` as an :class:`~aicore_sim.ops.opmodel.OpModel` (its registration).

What the generic commands (``run``, ``verify``, ``tiling``, ``cases``) know of the forward, and
all of it: the IR (inputs, attributes, outputs), the aclnn two-phase API (:mod:`.api`), the
golden (:mod:`.golden`), the bundled cases (:mod:`.cases`), the equivalence matrix and the ATK
reader (:mod:`.atk`) and the tiling space of ``sweep`` / ``search`` (:mod:`.tiling_space`).
``pyproject.toml`` registers :data:`MODEL` in the ``aicore_sim.ops`` entry-point group.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from aicore_sim import AttrSpec, PreparedCall, Spec, TensorSpec, dtypes
from op_models import moe_matrix
from op_models.moe_common import FLOATS, MoeOpModel, ep_text, topk_default

NAME = "moe_token_unpermute_with_ep"
MATRIX_ZERO_PROBS = 0.25  # share of exactly-zero probs in matrix cases with probs


class MoeTokenUnpermuteWithEpModel(MoeOpModel):
    """The forward MoE token unpermute with expert parallelism (CANN ops-transformer)."""

    name = NAME
    description = "CANN ops-transformer MoeTokenUnpermuteWithEp (forward unpermute, EP window)"
    inputs = (
        TensorSpec("permuted_tokens", FLOATS, 2, doc="(range[1] - range[0], H) this rank's "
                                                      "permuted rows"),
        TensorSpec("sorted_indices", ("int32",), 1, doc="(N*K,) permuted row of each "
                                                        "(token, slot)"),
        TensorSpec("probs", FLOATS, 2, optional=True, value_range=(0.01, 0.99),
                   doc="(N, K) routing weights; absent = no scaling (key 0)"),
    )
    attrs = (
        AttrSpec("num_topk", "int", None, "K; default probs.shape[1], else 1 (the IR's)"),
        AttrSpec("range", "int_list", (0, 0), "[start, end) EP window of permuted rows"),
        AttrSpec("padded_mode", "bool", False, "only false is supported upstream"),
        AttrSpec("restore_shape", "int_list", None, "ignored without padded mode"),
    )
    outputs = (TensorSpec("unpermuted_tokens", FLOATS, 2, doc="(N, H) in the tokens dtype"),)
    aclnn_name = "MoeTokenUnpermuteWithEp"
    matrix_axes = moe_matrix.AXES

    @property
    def tiling_space(self) -> Any:
        from op_models.moe_token_unpermute_with_ep.tiling_space import TILING_SPACE

        return TILING_SPACE

    # -- cases -------------------------------------------------------------------------------

    def case_specs(self, case: Any) -> tuple[dict[str, Spec | None], dict[str, Any]]:
        from op_models.moe_token_unpermute_with_ep.cases import np_dtype, window

        # the window (and so the rows of permuted_tokens) follows from the routing draw
        start, end = window(case)
        rows = max(end - start, 1)  # an empty window keeps one (unread) row
        specs: dict[str, Spec | None] = {
            "permuted_tokens": ((rows, case.hidden), np_dtype(case.dtype)),
            "sorted_indices": ((case.flat_size,), dtypes.int32),
            "probs": None if case.probs_dtype is None
            else ((case.tokens_num, case.top_k), np_dtype(case.probs_dtype)),
        }
        return specs, {"num_topk": case.top_k, "range": [start, end], "padded_mode": False,
                       "restore_shape": None}

    def case_row(self, case: Any) -> dict[str, str]:
        return {"N": str(case.tokens_num), "K": str(case.top_k), "H": str(case.hidden),
                "tokens": case.dtype, "probs": case.probs_dtype or "-", "range": ep_text(case)}

    def matrix_case(self, mc: Any) -> Any:
        from op_models.moe_token_unpermute_with_ep.cases import Case

        n, k, h = moe_matrix.shape(mc.axes)
        probs = moe_matrix.probs_dtype(mc.axes)
        return Case(mc.name, n, k, h, mc.axes["dtype"], probs, experts=2 * k,
                    range=moe_matrix.window(mc.axes) or (0, n * k),
                    zero_probs=MATRIX_ZERO_PROBS if probs else 0.0, seed=mc.seed)

    def atk_call(self, tensors: dict[str, Any], attrs: dict[str, Any], seed: int
                 ) -> dict[str, Any]:
        from op_models.moe_token_unpermute_with_ep import atk

        c = atk.record_call(tensors, attrs, seed)
        start, end = c["range"]
        specs = {"permuted_tokens": ((end - start, c["hidden"]), c["dtype"]),
                 "sorted_indices": ((c["n"] * c["topk"],), dtypes.int32), "probs": None}

        drawn: dict[str, np.ndarray] = {}  # the expert order of the last make_inputs()

        def make_inputs() -> dict[str, np.ndarray | None]:
            inp = c["make_inputs"]()
            drawn["order"] = inp["order"]
            return {k: inp[k] for k in ("permuted_tokens", "sorted_indices", "probs")}

        def expected(inputs: dict[str, np.ndarray | None]) -> dict[str, np.ndarray]:
            return {"unpermuted_tokens": atk.executor_expected(
                inputs["permuted_tokens"], drawn["order"], c["n"], c["topk"], start)}

        return {"label": f"n{c['n']}h{c['hidden']}k{c['topk']}", "input_specs": specs,
                "attrs": {"num_topk": c["num_topk"], "range": [start, end],
                          "restore_shape": c["restore_shape"]},
                "make_inputs": make_inputs, "expected": expected}

    # -- the call ----------------------------------------------------------------------------

    def default_attrs(self, input_specs: dict[str, Spec | None], attrs: dict[str, Any]
                      ) -> dict[str, Any]:
        return topk_default(attrs, "num_topk", input_specs.get("probs"))

    def needs_numerics(self, pc: PreparedCall) -> bool:
        from op_models.moe_token_unpermute_with_ep.api import NUMERIC_KEYS

        return pc.tiling_key in NUMERIC_KEYS

    def golden(self, inputs: dict[str, np.ndarray | None], attrs: dict[str, Any],
               pc: PreparedCall) -> dict[str, np.ndarray | None]:
        from op_models.moe_token_unpermute_with_ep.golden import golden

        start, end = (int(v) for v in attrs["range"])
        return {"unpermuted_tokens": golden(inputs["permuted_tokens"], inputs["sorted_indices"],
                                            inputs.get("probs"), attrs["num_topk"], start, end)}


MODEL = MoeTokenUnpermuteWithEpModel()

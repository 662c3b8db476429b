"""``MoeTokenPermuteWithEp`` as an :class:`~aicore_sim.opmodel.OpModel` (its registration).

What the generic commands (``run``, ``tiling``, ``cases``, ``verify --matrix``) know of the
forward EP permute: the IR (inputs, attributes, outputs), the aclnn two-phase API
(:mod:`.api`), the golden (:mod:`.golden`), the bundled cases (:mod:`.cases`) and the
equivalence matrix. No ATK reader (upstream's ATK record file is empty) and no tiling space
(``sweep`` / ``search`` are not supported for this op). ``pyproject.toml`` registers
:data:`MODEL` in the ``aicore_sim.ops`` entry-point group.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from aicore_sim import dtypes
from aicore_sim.opmodel import AttrSpec, PreparedCall, Spec, TensorSpec, retiled_state
from op_models import moe_matrix

NAME = "moe_token_permute_with_ep"
_FLOATS = ("bfloat16", "float16", "float32")


def _range(attrs: Mapping[str, Any]) -> list[int] | None:
    r = attrs.get("range", (0, 0))
    return None if r is None else [int(v) for v in r]


class MoeTokenPermuteWithEpModel:
    """The forward MoE token permute with expert parallelism (CANN ops-transformer)."""

    name = NAME
    description = "CANN ops-transformer MoeTokenPermuteWithEp (forward permute, EP window)"
    inputs = (
        TensorSpec("tokens", _FLOATS, 2, doc="(N, H) the tokens"),
        TensorSpec("indices", ("int32", "int64"), None, doc="(N, K) or (N,) expert ids"),
        TensorSpec("probs", _FLOATS, None, optional=True, value_range=(0.01, 0.99),
                   doc="routing weights, indices' shape, tokens' dtype"),
    )
    attrs = (
        AttrSpec("range", "int_list", (0, 0), "[start, end) rows of the permutation kept"),
        AttrSpec("num_out_tokens", "int", 0, "rows kept when range is absent"),
        AttrSpec("padded_mode", "bool", False, "only false is supported upstream"),
    )
    outputs = (
        TensorSpec("permute_tokens", _FLOATS, 2, doc="(rows kept, H)"),
        TensorSpec("sorted_indices", ("int32",), 1, doc="(N*K,) permuted row of each slot"),
        TensorSpec("permute_probs", _FLOATS, 1, optional=True, doc="(rows kept,)"),
    )
    aclnn_name = "MoeTokenPermuteWithEp"
    tiling_space = None
    equivalence_matrix = Path(__file__).resolve().parent / "equivalence_matrix.toml"
    matrix_label = staticmethod(moe_matrix.label)  # the names and seeds of before
    matrix_axes = {"dtype": moe_matrix.DTYPE, "probs": moe_matrix.PAIRED_PROBS,
                   "shape": moe_matrix.SHAPE, "range": moe_matrix.RANGE}

    # -- cases -------------------------------------------------------------------------------

    def cases(self) -> Mapping[str, Any]:
        from op_models.moe_token_permute_with_ep.cases import CASES

        return CASES

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

    def case_inputs(self, case: Any, seed: int | None = None) -> dict[str, np.ndarray | None]:
        from op_models.moe_token_permute_with_ep.cases import make_inputs

        inp = make_inputs(case, seed)
        return {k: inp[k] for k in ("tokens", "indices", "probs")}

    def case_row(self, case: Any) -> dict[str, str]:
        ep = f"ep {case.rank}/{case.ep}" if case.range is None else \
            f"[{case.range[0]}, {case.range[1]}]"
        return {"N": str(case.tokens_num), "K": str(case.top_k), "H": str(case.hidden),
                "tokens": case.dtype, "indices": case.indices_dtype,
                "probs": case.dtype if case.probs else "-", "range": ep}

    def matrix_case(self, mc: Any) -> Any:
        from op_models.moe_token_permute_with_ep.cases import Case

        n, k, h = moe_matrix.shape(mc.axes)
        rng = moe_matrix.window(mc.axes) or (0, n * k)
        return Case(mc.name, n, k, h, mc.axes["dtype"], mc.axes["probs"] == "same",
                    experts=2 * k, range=rng, seed=mc.seed)

    def atk_call(self, tensors: dict[str, Any], attrs: dict[str, Any], seed: int
                 ) -> dict[str, Any]:
        raise ValueError("MoeTokenPermuteWithEp: upstream's ATK record file is empty; no ATK "
                         "reader")

    # -- shapes and tiling -------------------------------------------------------------------

    def infer_outputs(self, input_specs: dict[str, Spec | None], attrs: dict[str, Any]
                      ) -> dict[str, Spec | None]:
        from op_models.moe_token_permute_with_ep.infershape import (
            InferDataType4MoeTokenPermuteWithEp,
            InferShape4MoeTokenPermuteWithEp,
        )

        tok, idx, prb = (input_specs.get(k) for k in ("tokens", "indices", "probs"))
        s_tok, s_idx, s_prb = InferShape4MoeTokenPermuteWithEp(
            tok[0], idx[0], _range(attrs), int(attrs.get("num_out_tokens", 0)))
        d_tok, d_idx, d_prb = InferDataType4MoeTokenPermuteWithEp(
            tok[1], None if prb is None else prb[1])
        return {"permute_tokens": (s_tok, d_tok), "sorted_indices": (s_idx, d_idx),
                "permute_probs": None if prb is None else (s_prb, d_prb)}

    def tiling(self, input_specs: dict[str, Spec | None], attrs: dict[str, Any] | list[Any],
               platform: Any) -> dict[str, Any]:
        from aicore_sim.ascendc import PlatformAscendC
        from op_models.moe_token_permute_with_ep.tiling import (
            TensorDesc,
            TilingContext,
            tiling_func,
        )

        descs = [None if s is None else TensorDesc(s[0], dtypes.dtype_name(s[1]))
                 for s in input_specs.values()]
        named = attrs if isinstance(attrs, dict) else \
            dict(zip(("range", "num_out_tokens", "padded_mode"), attrs))
        outs = [None if s is None else TensorDesc(s[0], dtypes.dtype_name(s[1]))
                for s in self.infer_outputs(dict(zip(("tokens", "indices", "probs"),
                                                     input_specs.values())), named).values()]
        if isinstance(attrs, list):
            ctx = TilingContext(tuple(descs), tuple(outs), dict(enumerate(attrs)))
        else:
            ctx = TilingContext.create(*descs, outputs=outs, range=_range(attrs),
                                       num_out_tokens=attrs.get("num_out_tokens", 0),
                                       padded_mode=attrs.get("padded_mode", False))
        tr = tiling_func(ctx, PlatformAscendC(platform))
        return {"status": tr.status, "tiling_key": tr.tiling_key,
                "tiling_data": tr.tiling_data.flat_dict() if tr.tiling_data is not None
                else None, "workspace": list(tr.workspace), "block_dim": tr.block_dim,
                "error": tr.error}

    # -- the call ----------------------------------------------------------------------------

    def prepare(self, inputs: dict[str, np.ndarray | None], attrs: dict[str, Any],
                platform: Any) -> PreparedCall:
        from op_models.moe_token_permute_with_ep import api

        size, ex = api.get_workspace_size(
            inputs["tokens"], inputs["indices"], inputs.get("probs"), _range(attrs),
            attrs.get("num_out_tokens", 0), attrs.get("padded_mode", False), platform=platform)
        tr = ex.tiling
        return PreparedCall(self.name, dict(ex.out_specs), tr.tiling_data, tr.tiling_key,
                            tr.block_dim, size, ex, tuple(ex.warnings))

    def execute(self, pc: PreparedCall, *, mode: str = "timed", **launch_kw: Any) -> Any:
        from op_models.moe_token_permute_with_ep import api

        return api.execute(None, pc.workspace_size, retiled_state(pc), mode=mode, **launch_kw)

    def golden(self, inputs: dict[str, np.ndarray | None], attrs: dict[str, Any],
               pc: PreparedCall) -> dict[str, np.ndarray | None]:
        from op_models.moe_token_permute_with_ep.golden import golden

        r = _range(attrs) or [0, int(attrs.get("num_out_tokens", 0))]
        g = golden(inputs["tokens"], inputs["indices"], inputs.get("probs"), r[0], r[1])
        return {k: g[k] for k in ("permute_tokens", "sorted_indices", "permute_probs")}


MODEL = MoeTokenPermuteWithEpModel()

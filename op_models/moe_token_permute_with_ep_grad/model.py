"""``MoeTokenPermuteWithEpGrad`` as an :class:`~aicore_sim.opmodel.OpModel` (its registration).

What the generic commands (``run``, ``tiling``, ``cases``, ``verify --matrix``) know of the
backward EP permute: the IR (inputs, attributes, outputs), the aclnn two-phase API
(:mod:`.api`), the golden (:mod:`.golden`), the bundled cases (:mod:`.cases`), the
equivalence matrix and upstream's ATK records (:mod:`.atk`). No tiling space (``sweep`` /
``search`` are not supported for this op). ``pyproject.toml`` registers :data:`MODEL` in the
``aicore_sim.ops`` entry-point group.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from aicore_sim import dtypes
from aicore_sim.opmodel import AttrSpec, PreparedCall, Spec, TensorSpec, retiled_state
from op_models import moe_matrix

NAME = "moe_token_permute_with_ep_grad"
_FLOATS = ("bfloat16", "float16", "float32")
_INPUTS = ("permuted_tokens_output_grad", "sorted_indices", "permuted_probs_output_grad")


def _range(attrs: Mapping[str, Any]) -> list[int] | None:
    r = attrs.get("range", (0, 0))
    return None if r is None else [int(v) for v in r]


class MoeTokenPermuteWithEpGradModel:
    """The backward of the MoE token permute with expert parallelism (CANN ops-transformer)."""

    name = NAME
    description = "CANN ops-transformer MoeTokenPermuteWithEpGrad (backward permute, EP window)"
    inputs = (
        TensorSpec("permuted_tokens_output_grad", _FLOATS, 2,
                   doc="(end - start, H) gradient of permute_tokens"),
        TensorSpec("sorted_indices", ("int32",), 1, doc="(N*K,) permuted row of each slot"),
        TensorSpec("permuted_probs_output_grad", _FLOATS, 1, optional=True,
                   doc="(end - start,) gradient of permute_probs, the grad's dtype"),
    )
    attrs = (
        AttrSpec("num_topk", "int", 1, "K, the experts of each token"),
        AttrSpec("range", "int_list", (0, 0), "[start, end) permuted rows of this EP rank"),
        AttrSpec("padded_mode", "bool", False, "only false is supported upstream"),
    )
    outputs = (
        TensorSpec("token_grad", _FLOATS, 2, doc="(N, H)"),
        TensorSpec("probs_grad", _FLOATS, 2, optional=True, doc="(N, K), with probs"),
    )
    aclnn_name = "MoeTokenPermuteWithEpGrad"
    tiling_space = None
    equivalence_matrix = Path(__file__).resolve().parent / "equivalence_matrix.toml"
    matrix_label = staticmethod(moe_matrix.label)  # the names and seeds of before
    matrix_axes = {"dtype": moe_matrix.DTYPE, "probs": moe_matrix.PAIRED_PROBS,
                   "shape": moe_matrix.SHAPE, "range": moe_matrix.RANGE}

    # -- cases -------------------------------------------------------------------------------

    def cases(self) -> Mapping[str, Any]:
        from op_models.moe_token_permute_with_ep_grad.cases import CASES

        return CASES

    def case_specs(self, case: Any) -> tuple[dict[str, Spec | None], dict[str, Any]]:
        from op_models.moe_token_permute_with_ep_grad.cases import np_dtype, window

        start, end = window(case)
        dt = np_dtype(case.dtype)
        specs: dict[str, Spec | None] = {
            "permuted_tokens_output_grad": ((end - start, case.hidden), dt),
            "sorted_indices": ((case.flat_size,), dtypes.int32),
            "permuted_probs_output_grad": ((end - start,), dt) if case.probs else None,
        }
        return specs, {"num_topk": case.top_k, "range": [start, end], "padded_mode": False}

    def case_inputs(self, case: Any, seed: int | None = None) -> dict[str, np.ndarray | None]:
        from op_models.moe_token_permute_with_ep_grad.cases import make_inputs

        inp = make_inputs(case, seed)
        return {k: inp[k] for k in _INPUTS}

    def case_row(self, case: Any) -> dict[str, str]:
        ep = f"ep {case.rank}/{case.ep}" if case.range is None else \
            f"[{case.range[0]}, {case.range[1]}]"
        return {"N": str(case.tokens_num), "K": str(case.top_k), "H": str(case.hidden),
                "grad": case.dtype, "probs": case.dtype if case.probs else "-", "range": ep}

    def matrix_case(self, mc: Any) -> Any:
        from op_models.moe_token_permute_with_ep_grad.cases import Case

        n, k, h = moe_matrix.shape(mc.axes)
        rng = moe_matrix.window(mc.axes) or (0, n * k)
        return Case(mc.name, n, k, h, mc.axes["dtype"], mc.axes["probs"] == "same",
                    experts=2 * k, range=rng, seed=mc.seed)

    def atk_call(self, tensors: dict[str, Any], attrs: dict[str, Any], seed: int
                 ) -> dict[str, Any]:
        from op_models.moe_token_permute_with_ep_grad import atk

        c = atk.record_call(tensors, attrs, seed)
        start, end = c["range"]
        dt = c["dtype"]
        specs = {"permuted_tokens_output_grad": ((end - start, c["hidden"]), dt),
                 "sorted_indices": ((c["n"] * c["topk"],), dtypes.int32),
                 "permuted_probs_output_grad": ((end - start,), dt) if c["probs"] else None}
        return {"label": f"n{c['n']}h{c['hidden']}k{c['topk']}", "input_specs": specs,
                "attrs": {"num_topk": c["topk"], "range": [start, end], "padded_mode": False},
                "make_inputs": c["make_inputs"], "expected": c["expected"]}

    # -- shapes and tiling -------------------------------------------------------------------

    def infer_outputs(self, input_specs: dict[str, Spec | None], attrs: dict[str, Any]
                      ) -> dict[str, Spec | None]:
        from op_models.moe_token_permute_with_ep_grad.infershape import infer_outputs

        grad, idx, prb = (input_specs.get(k) for k in _INPUTS)
        if grad is None or idx is None:
            raise ValueError("permuted_tokens_output_grad and sorted_indices are required")
        k = int(attrs.get("num_topk", 1))
        if k < 1:
            raise ValueError(f"num_topk {k} must be at least 1")
        return infer_outputs(grad[0], grad[1], idx[0], None if prb is None else prb[1], k)

    def tiling(self, input_specs: dict[str, Spec | None], attrs: dict[str, Any] | list[Any],
               platform: Any) -> dict[str, Any]:
        from aicore_sim.ascendc import PlatformAscendC
        from op_models.moe_token_permute_with_ep_grad.tiling import (
            TensorDesc,
            TilingContext,
            tiling_func,
        )

        descs = [None if s is None else TensorDesc(s[0], dtypes.dtype_name(s[1]))
                 for s in input_specs.values()]
        if isinstance(attrs, list):
            ctx = TilingContext(tuple(descs), dict(enumerate(attrs)))
        else:
            ctx = TilingContext.create(*descs, num_topk=attrs.get("num_topk", 1),
                                       range=_range(attrs),
                                       padded_mode=attrs.get("padded_mode", False))
        tr = tiling_func(ctx, PlatformAscendC(platform))
        return {"status": tr.status, "tiling_key": tr.tiling_key,
                "tiling_data": tr.tiling_data.as_dict() if tr.tiling_data is not None
                else None, "workspace": list(tr.workspace), "block_dim": tr.block_dim,
                "error": tr.error}

    # -- the call ----------------------------------------------------------------------------

    def prepare(self, inputs: dict[str, np.ndarray | None], attrs: dict[str, Any],
                platform: Any) -> PreparedCall:
        from op_models.moe_token_permute_with_ep_grad import api

        size, ex = api.get_workspace_size(
            inputs["permuted_tokens_output_grad"], inputs["sorted_indices"],
            inputs.get("permuted_probs_output_grad"), attrs.get("num_topk", 1), _range(attrs),
            attrs.get("padded_mode", False), platform=platform)
        tr = ex.tiling
        return PreparedCall(self.name, dict(ex.out_specs), tr.tiling_data, tr.tiling_key,
                            tr.block_dim, size, ex, tuple(ex.warnings))

    def execute(self, pc: PreparedCall, *, mode: str = "timed", **launch_kw: Any) -> Any:
        from op_models.moe_token_permute_with_ep_grad import api

        return api.execute(None, pc.workspace_size, retiled_state(pc), mode=mode, **launch_kw)

    def golden(self, inputs: dict[str, np.ndarray | None], attrs: dict[str, Any],
               pc: PreparedCall) -> dict[str, np.ndarray | None]:
        from op_models.moe_token_permute_with_ep_grad.golden import golden

        r = _range(attrs) or [0, 0]
        return golden(inputs["permuted_tokens_output_grad"], inputs["sorted_indices"],
                      inputs.get("permuted_probs_output_grad"), int(attrs.get("num_topk", 1)),
                      r[0], r[1])


MODEL = MoeTokenPermuteWithEpGradModel()

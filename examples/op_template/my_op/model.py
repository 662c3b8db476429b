"""``my_op`` as an aicore-sim ``OpModel``: everything the ``aicore-sim`` commands know of it.

Registered in pyproject.toml (``[project.entry-points."aicore_sim.ops"]``). The members are
documented in ``aicore_sim/opmodel.py``; this file only connects them to the port:
``prepare`` is the aclnn GetWorkspaceSize phase (checks with aclnn codes, infershape, tiling),
``execute`` the launch, ``golden`` the independent reference.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from aicore_sim.ascendc import PlatformAscendC
from aicore_sim.ascendc.host import (
    ACLNN_ERR_INNER_TILING_ERROR,
    ACLNN_ERR_PARAM_INVALID,
    ACLNN_ERR_PARAM_NULLPTR,
    AclnnError,
)
from aicore_sim.opmodel import AttrSpec, PreparedCall, Spec, TensorSpec
from aicore_sim.recording import Recording
from my_op import cases as _cases
from my_op.golden import golden
from my_op.kernel import my_op as _kernel
from my_op.tiling import TilingError, tiling_func

NAME = "my_op"
_DTYPES = ("float16", "float32")

class MyOpModel:
    """y = x * scale (replace with one line on the upstream operator you port)."""

    name = NAME
    description = "y = x * scale (template operator)"
    inputs = (TensorSpec("x", _DTYPES, 1, doc="(n,) input"),)
    attrs = (AttrSpec("scale", "float", 1.0, "the multiplier"),)
    outputs = (TensorSpec("y", _DTYPES, 1, doc="(n,) in x's dtype"),)
    aclnn_name = None  # the aclnn_name of your ATK records, to verify them with atk_call
    tiling_space = None  # import path of a tiling-space module, to sweep and search
    equivalence_matrix = Path(__file__).resolve().parent / "equivalence_matrix.toml"
    sweep_columns = ("n", "dtype")
    tiling_short = (("tileLength", "tile"),)

    # -- cases -------------------------------------------------------------------------------

    def cases(self) -> dict[str, _cases.Case]:
        return _cases.CASES

    def case_specs(self, case: _cases.Case) -> tuple[dict[str, Spec | None], dict[str, Any]]:
        return {"x": ((case.n,), _cases.DTYPES[case.dtype])}, {"scale": case.scale}

    def case_inputs(self, case: _cases.Case, seed: int | None = None
                    ) -> dict[str, np.ndarray | None]:
        return _cases.make_inputs(case, seed)

    def case_row(self, case: _cases.Case) -> dict[str, str]:
        return {"n": str(case.n), "dtype": case.dtype, "scale": f"{case.scale:g}"}

    def matrix_case(self, mc: Any) -> _cases.Case:
        # a matrix shape {tokens = T, topk = K, hidden = H} is read here as n = T * K * H
        return _cases.Case(mc.name, mc.tokens * mc.topk * mc.hidden, mc.dtype, 0.75,
                           seed=mc.seed)

    def atk_call(self, tensors: dict[str, Any], attrs: dict[str, Any], seed: int
                 ) -> dict[str, Any]:
        raise ValueError("my_op reads no ATK records (rule atk_op)")

    # -- shapes and tiling -------------------------------------------------------------------

    def infer_outputs(self, input_specs: dict[str, Spec | None], attrs: dict[str, Any]
                      ) -> dict[str, Spec | None]:
        x = input_specs.get("x")
        if x is None:
            raise ValueError("x is required")
        return {"y": (tuple(x[0]), np.dtype(x[1]))}

    def _tiling(self, shape: tuple[int, ...], dtype: np.dtype, platform: Any):
        p = PlatformAscendC(platform)
        return tiling_func(int(np.prod(shape)), dtype.itemsize, p.GetCoreNumAiv(),
                           platform.core_mem_size_ub)

    def tiling(self, input_specs: dict[str, Spec | None], attrs: Any, platform: Any
               ) -> dict[str, Any]:
        x = input_specs["x"]
        try:
            td, key, dim = self._tiling(x[0], np.dtype(x[1]), platform)
        except TilingError as e:
            return {"status": "failed", "tiling_key": None, "tiling_data": None,
                    "workspace": [], "block_dim": None, "error": str(e)}
        return {"status": "success", "tiling_key": key, "tiling_data": td.as_dict(),
                "workspace": [0], "block_dim": dim, "error": None}

    # -- the call ----------------------------------------------------------------------------

    def prepare(self, inputs: dict[str, np.ndarray | None], attrs: dict[str, Any],
                platform: Any) -> PreparedCall:
        x = inputs.get("x")
        if x is None:
            raise AclnnError(ACLNN_ERR_PARAM_NULLPTR, "x is None")
        if str(x.dtype) not in _DTYPES or x.ndim != 1:
            raise AclnnError(ACLNN_ERR_PARAM_INVALID,
                             f"x: expected a 1-D tensor of {'/'.join(_DTYPES)}, got "
                             f"{x.ndim}-D {x.dtype}")
        try:
            td, key, dim = self._tiling(x.shape, x.dtype, platform)
        except TilingError as e:
            raise AclnnError(ACLNN_ERR_INNER_TILING_ERROR, str(e)) from None
        scale = float(attrs.get("scale", 1.0) if attrs.get("scale") is not None else 1.0)
        return PreparedCall(self.name, {"y": (x.shape, x.dtype)}, td, key, dim, 0,
                            state=(x, scale, platform))

    def execute(self, pc: PreparedCall, *, mode: str = "timed", **launch_kw: Any) -> Any:
        x, scale, platform = pc.state
        shape, dtype = pc.out_shapes["y"]
        tensors = {"x": np.ascontiguousarray(x), "y": np.zeros(shape, dtype)}
        return Recording(_kernel, ["x", "y", pc.tiling, scale, dtype], tensors,
                         {"y": (dtype, shape)}, platform, block_dim=pc.block_dim, mode=mode,
                         **launch_kw)

    def golden(self, inputs: dict[str, np.ndarray | None], attrs: dict[str, Any],
               pc: PreparedCall) -> dict[str, np.ndarray | None]:
        scale = attrs.get("scale")
        return {"y": golden(inputs["x"], 1.0 if scale is None else scale)}


MODEL = MyOpModel()

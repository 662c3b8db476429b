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

from aicore_sim import schema
from aicore_sim.ascendc import PlatformAscendC
from aicore_sim.ascendc.host import (
    ACLNN_ERR_INNER_TILING_ERROR,
    ACLNN_ERR_PARAM_INVALID,
    ACLNN_ERR_PARAM_NULLPTR,
    AclnnError,
)
from aicore_sim.ascendc.utils import SYSTEM_WORKSPACE_BYTES
from aicore_sim.opmodel import AttrSpec, OpModelBase, PreparedCall, Spec, TensorSpec
from aicore_sim.recording import Recording
from my_op import cases as _cases
from my_op.golden import golden
from my_op.kernel import my_op as _kernel
from my_op.tiling import TilingError, tiling_func

NAME = "my_op"
_DTYPES = ("float16", "float32")


class MyOpModel(OpModelBase):
    """y = x * scale (+ bias), amax = max |y| (replace with one line on the upstream operator
    you port)."""

    name = NAME
    description = "y = x * scale (+ bias), optional amax (template operator)"
    inputs = (TensorSpec("x", _DTYPES, 1, doc="(n,) input"),
              TensorSpec("bias", _DTYPES, 1, optional=True, value_range=(-1.0, 1.0),
                         doc="(n,) in x's dtype, added to x * scale when given"))
    attrs = (AttrSpec("scale", "float", 1.0, "the multiplier"),
             AttrSpec("with_amax", "bool", False, "also compute amax = max |y|"))
    outputs = (TensorSpec("y", _DTYPES, 1, doc="(n,) in x's dtype"),
               TensorSpec("amax", _DTYPES, 1, optional=True,
                          doc="(1,) max |y| in x's dtype, when with_amax"))
    # OpModelBase gives the rest: no ATK records (aclnn_name, atk_call), no tiling space
    equivalence_matrix = Path(__file__).resolve().parent / "equivalence_matrix.toml"
    # the case axes a matrix file's [axes] table spans, and the rule of one value of each
    matrix_axes = {"dtype": schema.Choice(_DTYPES), "n": schema.Int(minimum=1)}
    sweep_columns = ("n", "dtype")
    tiling_short = (("tileLength", "tile"),)

    # -- cases -------------------------------------------------------------------------------

    def cases(self) -> dict[str, _cases.Case]:
        return _cases.CASES

    def case_specs(self, case: _cases.Case) -> tuple[dict[str, Spec | None], dict[str, Any]]:
        spec = ((case.n,), _cases.DTYPES[case.dtype])
        return ({"x": spec, "bias": spec if case.bias else None},
                {"scale": case.scale, "with_amax": case.amax})

    def case_inputs(self, case: _cases.Case, seed: int | None = None
                    ) -> dict[str, np.ndarray | None]:
        return _cases.make_inputs(case, seed)

    def case_row(self, case: _cases.Case) -> dict[str, str]:
        return {"n": str(case.n), "dtype": case.dtype, "scale": f"{case.scale:g}",
                "bias": "yes" if case.bias else "-", "amax": "yes" if case.amax else "-"}

    def matrix_case(self, mc: Any) -> _cases.Case:
        # one value of each of matrix_axes: equivalence_matrix.toml's [axes] table
        return _cases.Case(mc.name, mc.axes["n"], mc.axes["dtype"], 0.75, seed=mc.seed)

    # -- shapes and tiling -------------------------------------------------------------------

    def infer_outputs(self, input_specs: dict[str, Spec | None], attrs: dict[str, Any]
                      ) -> dict[str, Spec | None]:
        x = input_specs.get("x")
        if x is None:
            raise ValueError("x is required")
        amax = ((1,), np.dtype(x[1])) if attrs.get("with_amax") else None
        return {"y": (tuple(x[0]), np.dtype(x[1])), "amax": amax}

    def _tiling(self, shape: tuple[int, ...], dtype: np.dtype, platform: Any, bias: bool,
                amax: bool):
        p = PlatformAscendC(platform)
        return tiling_func(int(np.prod(shape)), dtype.itemsize, p.GetCoreNumAiv(),
                           platform.core_mem_size_ub, bias, amax)

    @staticmethod
    def _workspace(amax: bool, block_dim: int) -> int:
        """Bytes of GM workspace: the library's system part, and with amax one 32-byte block
        per core for the partial maxima (``GetUserWorkspace``)."""
        return SYSTEM_WORKSPACE_BYTES + 32 * block_dim if amax else 0

    def tiling(self, input_specs: dict[str, Spec | None], attrs: Any, platform: Any
               ) -> dict[str, Any]:
        x = input_specs["x"]
        amax = bool(attrs.get("with_amax")) if isinstance(attrs, dict) else False
        try:
            td, key, dim = self._tiling(x[0], np.dtype(x[1]), platform,
                                        input_specs.get("bias") is not None, amax)
        except TilingError as e:
            return {"status": "failed", "tiling_key": None, "tiling_data": None,
                    "workspace": [], "block_dim": None, "error": str(e)}
        return {"status": "success", "tiling_key": key, "tiling_data": td.as_dict(),
                "workspace": [self._workspace(amax, dim)], "block_dim": dim, "error": None}

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
        bias = inputs.get("bias")
        if bias is not None and (bias.dtype != x.dtype or bias.shape != x.shape):
            raise AclnnError(ACLNN_ERR_PARAM_INVALID,
                             f"bias: expected {x.shape} {x.dtype} like x, got {bias.shape} "
                             f"{bias.dtype} (rule bias_like_x)")
        amax = bool(attrs.get("with_amax"))
        try:
            td, key, dim = self._tiling(x.shape, x.dtype, platform, bias is not None, amax)
        except TilingError as e:
            raise AclnnError(ACLNN_ERR_INNER_TILING_ERROR, str(e)) from None
        scale = float(attrs.get("scale", 1.0) if attrs.get("scale") is not None else 1.0)
        out = {"y": (x.shape, x.dtype), "amax": ((1,), x.dtype) if amax else None}
        return PreparedCall(self.name, out, td, key, dim, self._workspace(amax, dim),
                            state=(x, bias, scale, platform))

    def execute(self, pc: PreparedCall, *, mode: str = "timed", **launch_kw: Any) -> Any:
        x, bias, scale, platform = pc.state
        tensors = {"x": np.ascontiguousarray(x)}
        if bias is not None:
            tensors["bias"] = np.ascontiguousarray(bias)
        outputs = {}
        for name, spec in pc.out_shapes.items():
            if spec is not None:  # an output not asked for is a null GM_ADDR
                tensors[name] = np.zeros(spec[0], spec[1])
                outputs[name] = (spec[1], tuple(spec[0]))
        if pc.workspace_size:  # written by the kernel, not delivered
            tensors["workspace"] = np.zeros(pc.workspace_size, np.uint8)
            outputs["workspace"] = (np.dtype(np.uint8), (pc.workspace_size,))
        args = [n if n in tensors else None for n in ("x", "bias", "y", "amax", "workspace")]
        return Recording(_kernel, [*args, pc.tiling, scale, x.dtype], tensors, outputs,
                         platform, block_dim=pc.block_dim, mode=mode, scratch=("workspace",),
                         **launch_kw)

    def golden(self, inputs: dict[str, np.ndarray | None], attrs: dict[str, Any],
               pc: PreparedCall) -> dict[str, np.ndarray | None]:
        scale = attrs.get("scale")
        return golden(inputs["x"], 1.0 if scale is None else scale, inputs.get("bias"),
                      bool(attrs.get("with_amax")))


MODEL = MyOpModel()

"""``tiny_axpy`` as an aicore-sim OpModel (registered in pyproject.toml, group aicore_sim.ops)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from aicore_sim import AttrSpec, PreparedCall, SimError, TensorSpec, launch
from aicore_sim.ascendc import PlatformAscendC
from tiny_axpy.golden import golden
from tiny_axpy.kernel import tiny_axpy
from tiny_axpy.tiling import TilingError, tiling_func

ACLNN_ERR_PARAM_INVALID = 161002
ACLNN_ERR_INNER_TILING_ERROR = 561002


class AxpyError(SimError):
    """A rejected argument; ``code`` is the aclnn status."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"[{code}] {message}")
        self.code = code


@dataclass(frozen=True)
class Case:
    name: str
    n: int
    alpha: float = 2.0
    description: str = ""
    seed: int = 0


CASES = {c.name: c for c in (
    Case("axpy_small", 1000, 0.5, "1000 fp32 elements, alpha 0.5"),
    Case("axpy_tiles", 200000, -1.5, "200000 elements: 3 tiles per core on 48 cores", seed=3),
)}


class TinyAxpyModel:
    name = "tiny_axpy"
    description = "z = alpha * x + y (fp32), a plug-in example"
    inputs = (TensorSpec("x", ("float32",), 1), TensorSpec("y", ("float32",), 1))
    attrs = (AttrSpec("alpha", "float", 1.0),)
    outputs = (TensorSpec("z", ("float32",), 1),)
    aclnn_name = None
    tiling_space = None
    equivalence_matrix = None
    sweep_columns = ()
    tiling_short = (("tileLength", "tile"),)

    def cases(self) -> dict[str, Case]:
        return CASES

    def case_specs(self, case: Case) -> tuple[dict, dict]:
        spec = ((case.n,), np.dtype(np.float32))
        return {"x": spec, "y": spec}, {"alpha": case.alpha}

    def case_inputs(self, case: Case, seed: int | None = None) -> dict[str, np.ndarray]:
        rng = np.random.default_rng(case.seed if seed is None else seed)
        return {k: rng.uniform(-2, 2, case.n).astype(np.float32) for k in ("x", "y")}

    def case_row(self, case: Case) -> dict[str, str]:
        return {"n": str(case.n), "alpha": f"{case.alpha:g}"}

    def matrix_case(self, mc: Any) -> Case:
        raise ValueError("tiny_axpy has no equivalence matrix")

    def atk_call(self, tensors: dict, attrs: dict, seed: int) -> dict:
        raise ValueError("tiny_axpy reads no ATK records")

    def infer_outputs(self, input_specs: dict, attrs: dict) -> dict:
        x = input_specs["x"]
        if x is None:
            raise ValueError("x is required")
        return {"z": (tuple(x[0]), np.dtype(np.float32))}

    def _tiling(self, n: int, platform: Any) -> tuple[Any, int]:
        p = PlatformAscendC(platform)
        return tiling_func(n, p.GetCoreNumAiv(), platform.core_mem_size_ub)

    def tiling(self, input_specs: dict, attrs: Any, platform: Any) -> dict:
        try:
            td, dim = self._tiling(int(np.prod(input_specs["x"][0])), platform)
        except TilingError as e:
            return {"status": "failed", "tiling_key": None, "tiling_data": None,
                    "workspace": [], "block_dim": None, "error": str(e)}
        return {"status": "success", "tiling_key": 0, "tiling_data": td.as_dict(),
                "workspace": [0], "block_dim": dim, "error": None}

    def prepare(self, inputs: dict, attrs: dict, platform: Any) -> PreparedCall:
        x, y = inputs["x"], inputs["y"]
        for k, a in (("x", x), ("y", y)):
            if a.dtype != np.float32 or a.ndim != 1:
                raise AxpyError(ACLNN_ERR_PARAM_INVALID, f"{k}: expected a 1-D float32 tensor, "
                                                         f"got {a.ndim}-D {a.dtype}")
        if x.shape != y.shape:
            raise AxpyError(ACLNN_ERR_PARAM_INVALID, f"x {x.shape} and y {y.shape} differ")
        try:
            td, dim = self._tiling(x.size, platform)
        except TilingError as e:
            raise AxpyError(ACLNN_ERR_INNER_TILING_ERROR, f"{e} (rule {e.rule})") from None
        return PreparedCall(self.name, {"z": (x.shape, np.dtype(np.float32))}, td, 0, dim,
                            0, (dict(inputs), float(attrs.get("alpha", 1.0)), platform))

    def execute(self, pc: PreparedCall, *, mode: str = "timed", **record_kw: Any) -> Any:
        inputs, alpha, platform = pc.state
        tensors = {k: np.ascontiguousarray(v) for k, v in inputs.items()}
        tensors["z"] = np.zeros(pc.out_shapes["z"][0], np.float32)
        return launch(tiny_axpy, ["x", "y", "z", pc.tiling, alpha], tensors,
                      {"z": (np.dtype(np.float32), pc.out_shapes["z"][0])}, platform,
                      block_dim=pc.block_dim, mode=mode, **record_kw)

    def golden(self, inputs: dict, attrs: dict, pc: PreparedCall) -> dict:
        return {"z": golden(inputs["x"], inputs["y"], attrs.get("alpha", 1.0))}


MODEL = TinyAxpyModel()

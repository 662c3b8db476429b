"""``my_op`` as an ``OpModel`` (``aicore_sim/ops/opmodel.py``): ``OpModelBase`` gives the rest."""

from pathlib import Path
from typing import Any

from aicore_sim import AttrSpec, KernelLaunch, OpModelBase, PreparedCall, TensorSpec, schema
from my_op import golden, kernel, tiling
from my_op.cases import CASES, case_row, case_specs, matrix_case
from my_op.tiling import DTYPES  # float16, float32


class MyOpModel(OpModelBase):
    name, description = "my_op", "y = x * scale (+ bias), optional amax (template operator)"
    inputs = (TensorSpec("x", DTYPES, 1, doc="(n,) input"),
              TensorSpec("bias", DTYPES, 1, optional=True, value_range=(-1.0, 1.0),
                         doc="(n,) in x's dtype, added to x * scale when given"))
    attrs = (AttrSpec("scale", "float", 1.0, "the multiplier"),
             AttrSpec("with_amax", "bool", False, "also compute amax = max |y|"))
    outputs = (TensorSpec("y", DTYPES, 1, doc="(n,) in x's dtype"),
               TensorSpec("amax", DTYPES, 1, optional=True, doc="(1,) max |y|, when with_amax"))
    equivalence_matrix = Path(__file__).resolve().parent / "equivalence_matrix.toml"
    matrix_axes = {"dtype": schema.Choice(DTYPES), "n": schema.Int(minimum=1)}  # its [axes]
    case_specs, case_row, matrix_case = map(staticmethod, (case_specs, case_row, matrix_case))
    cases = staticmethod(lambda: CASES)

    def infer_outputs(self, specs: dict[str, Any], attrs: dict[str, Any]) -> dict:
        return {"y": specs["x"], "amax": ((1,), specs["x"][1]) if attrs.get("with_amax") else None}

    def get_workspace_size(self, inputs: dict, attrs: dict, platform: Any) -> PreparedCall:
        x = inputs.get("x")  # attrs: every attribute, its declared default when left out
        host = tiling.get_workspace_size(x, inputs.get("bias"), attrs["with_amax"], platform)
        launch = KernelLaunch(kernel.my_op, inputs, platform, (float(attrs["scale"]), x.dtype))
        return PreparedCall(self.name, self.infer_outputs({"x": (x.shape, x.dtype)}, attrs),
                            *host, launch)

    def golden(self, inputs: dict, attrs: dict, pc: PreparedCall) -> dict:
        return golden.golden(inputs["x"], attrs["scale"], inputs.get("bias"), attrs["with_amax"])


MODEL = MyOpModel()

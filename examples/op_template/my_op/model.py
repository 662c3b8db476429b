"""``my_op`` as an aicore-sim ``OpModel`` (members: ``aicore_sim/ops/opmodel.py``; registered in
pyproject.toml). ``OpModelBase`` gives the rest: seeded inputs, ``tiling`` (``prepare`` on the
shapes), ``execute`` (the kernel gets inputs, outputs, workspace and tiling, as from aclnn)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aicore_sim import AttrSpec, KernelLaunch, OpModelBase, PreparedCall, TensorSpec, schema
from my_op import cases, golden, kernel, tiling
from my_op.tiling import DTYPES  # float16, float32


class MyOpModel(OpModelBase):
    name = "my_op"
    description = "y = x * scale (+ bias), optional amax (template operator)"
    inputs = (TensorSpec("x", DTYPES, 1, doc="(n,) input"),
              TensorSpec("bias", DTYPES, 1, optional=True, value_range=(-1.0, 1.0),
                         doc="(n,) in x's dtype, added to x * scale when given"))
    attrs = (AttrSpec("scale", "float", 1.0, "the multiplier"),
             AttrSpec("with_amax", "bool", False, "also compute amax = max |y|"))
    outputs = (TensorSpec("y", DTYPES, 1, doc="(n,) in x's dtype"),
               TensorSpec("amax", DTYPES, 1, optional=True,
                          doc="(1,) max |y| in x's dtype, when with_amax"))
    equivalence_matrix = Path(__file__).resolve().parent / "equivalence_matrix.toml"
    matrix_axes = {"dtype": schema.Choice(DTYPES), "n": schema.Int(minimum=1)}  # its [axes]

    def cases(self) -> dict[str, cases.Case]:
        return cases.CASES

    def case_specs(self, case: cases.Case) -> tuple[dict[str, Any], dict[str, Any]]:
        spec = ((case.n,), cases.DTYPES[case.dtype])
        return ({"x": spec, "bias": spec if case.bias else None},
                {"scale": case.scale, "with_amax": case.amax})

    def case_row(self, case: cases.Case) -> dict[str, str]:
        return {"n": str(case.n), "dtype": case.dtype, "scale": f"{case.scale:g}",
                "bias": "yes" if case.bias else "-", "amax": "yes" if case.amax else "-"}

    def matrix_case(self, mc: Any) -> cases.Case:  # mc.axes: a value of each matrix axis
        return cases.Case(mc.name, mc.axes["n"], mc.axes["dtype"], 0.75, seed=mc.seed)

    def infer_outputs(self, specs: dict[str, Any], attrs: dict[str, Any]) -> dict:
        return {"y": specs["x"], "amax": ((1,), specs["x"][1]) if attrs.get("with_amax") else None}

    def prepare(self, inputs: dict[str, Any], attrs: dict[str, Any], platform: Any
                ) -> PreparedCall:  # tiling, key, block dim, workspace; then the launch
        x, scale = inputs.get("x"), float(1.0 if attrs.get("scale") is None else attrs["scale"])
        host = tiling.get_workspace_size(x, inputs.get("bias"), attrs.get("with_amax"), platform)
        return PreparedCall(self.name, self.infer_outputs({"x": (x.shape, x.dtype)}, attrs),
                            *host, KernelLaunch(kernel.my_op, inputs, platform, (scale, x.dtype)))

    def golden(self, inputs: dict[str, Any], attrs: dict[str, Any], pc: PreparedCall) -> dict:
        return golden.golden(inputs["x"], pc.state.args[0], inputs.get("bias"),
                             bool(attrs.get("with_amax")))  # args[0]: the kernel's scale


MODEL = MyOpModel()

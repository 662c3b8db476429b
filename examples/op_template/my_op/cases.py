"""Named cases of ``my_op`` (what ``aicore-sim cases`` lists and ``run --case`` runs); their
inputs are seeded draws in each input's ``value_range`` (``OpModelBase.case_inputs``). Case
names must be unique across all installed operators."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

DTYPES = {"float16": np.dtype(np.float16), "float32": np.dtype(np.float32)}


@dataclass(frozen=True)
class Case:
    """One call: ``n`` elements of ``dtype``, multiplied by ``scale``, plus a ``bias`` input
    when the case has one, and the ``amax`` output when it asks for it."""

    name: str
    n: int
    dtype: str
    scale: float
    description: str = ""
    seed: int = 0
    bias: bool = False
    amax: bool = False


CASES: dict[str, Case] = {c.name: c for c in (
    Case("my_op_small", 5000, "float32", 0.5, "5000 fp32 elements: 3 tiles per core on 'tiny'"),
    Case("my_op_fp16", 100000, "float16", -3.0, "100000 fp16 elements on every core", seed=1),
    Case("my_op_bias_amax", 3000, "float32", 1.5, "3000 fp32 elements with a bias, and amax "
         "(two passes: SyncAll between them)", seed=2, bias=True, amax=True),
)}


def case_specs(case: Case) -> tuple[dict[str, Any], dict[str, Any]]:
    """A case's input ``(shape, dtype)`` (``None``: absent) and its attributes."""
    spec = ((case.n,), DTYPES[case.dtype])
    return ({"x": spec, "bias": spec if case.bias else None},
            {"scale": case.scale, "with_amax": case.amax})


def case_row(case: Case) -> dict[str, str]:
    """The case's columns in ``aicore-sim cases``."""
    return {"n": str(case.n), "dtype": case.dtype, "scale": f"{case.scale:g}",
            "bias": "yes" if case.bias else "-", "amax": "yes" if case.amax else "-"}


def matrix_case(mc: Any) -> Case:
    """One equivalence-matrix combination (``mc.axes``: a value of each matrix axis)."""
    return Case(mc.name, mc.axes["n"], mc.axes["dtype"], 0.75, seed=mc.seed)

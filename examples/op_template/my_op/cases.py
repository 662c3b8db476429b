"""Named cases of ``my_op`` (what ``aicore-sim cases`` lists and ``run --case`` runs); their
inputs are seeded draws in each input's ``value_range`` (``OpModelBase.case_inputs``). Case
names must be unique across all installed operators."""

from __future__ import annotations

from dataclasses import dataclass

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

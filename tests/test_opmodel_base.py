"""``OpModelBase``: the defaults a new operator inherits, so that it writes only its own
members (aicore_sim/opmodel.py)."""

from __future__ import annotations

import numpy as np
import pytest

from aicore_sim.opmodel import REQUIRED_MEMBERS, OpModel, OpModelBase, TensorSpec


class _Minimal(OpModelBase):
    """The thirteen members an operator writes itself (bodies trivial: only the defaults are
    under test)."""

    name = "minimal"
    description = "a test operator"
    inputs = (TensorSpec("x", ("float32",), 1), TensorSpec("b", ("float32",), 1, optional=True))
    attrs = ()
    outputs = (TensorSpec("y", ("float32",), 1),)

    def cases(self):
        return {"one": "one"}

    def case_specs(self, case):
        return {"x": ((4, 2), np.dtype(np.float32)), "b": None}, {"alpha": 0.5, "mode": None}

    def case_inputs(self, case, seed=None):
        return {"x": np.zeros((4, 2), np.float32), "b": None}

    def infer_outputs(self, input_specs, attrs):
        return {"y": input_specs["x"]}

    def tiling(self, input_specs, attrs, platform):
        return {}

    def prepare(self, inputs, attrs, platform):
        raise NotImplementedError

    def execute(self, pc, *, mode="timed", **launch_kw):
        raise NotImplementedError

    def golden(self, inputs, attrs, pc):
        return {}


def test_a_minimal_operator_is_an_opmodel_with_every_member() -> None:
    m = _Minimal()
    assert isinstance(m, OpModel)
    assert all(hasattr(m, k) for k in REQUIRED_MEMBERS)
    assert (m.aclnn_name, m.tiling_space, m.equivalence_matrix) == (None, None, None)
    assert dict(m.matrix_axes) == {}  # no case axes: no matrix


def test_the_default_case_row_shows_inputs_then_attributes() -> None:
    assert _Minimal().case_row("one") == {"x": "4x2 float32", "b": "-", "alpha": "0.5",
                                          "mode": "-"}


def test_no_atk_records_and_no_matrix_are_named_refusals() -> None:
    with pytest.raises(ValueError) as e:
        _Minimal().atk_call({}, {}, 0)
    assert str(e.value) == "op minimal reads no ATK records (rule atk_op)"
    with pytest.raises(ValueError) as e:
        _Minimal().matrix_case(None)
    assert str(e.value) == "op minimal has no equivalence matrix (rule matrix_op)"

"""``OpModelBase``: the defaults a new operator inherits, so that it writes only its own
members (aicore_sim/ops/opmodel.py)."""

from __future__ import annotations

import numpy as np
import pytest

from aicore_sim.ascendc.host import aclnn_invalid
from aicore_sim.ops.opmodel import (
    REQUIRED_MEMBERS,
    AttrSpec,
    KernelLaunch,
    OpModel,
    OpModelBase,
    PreparedCall,
    TensorSpec,
    call,
    draw_inputs,
)
from tests.conftest import TINY
from tests.kernels import copy_in


class _Tiling(dict):
    def as_dict(self):
        return dict(self)


class _Minimal(OpModelBase):
    """The ten members an operator writes itself (bodies small: only the defaults are under
    test). Its kernel copies ``x`` to ``y`` through UB, ``n`` fp32 per core on 2 cores."""

    seen: list = []

    name = "minimal"
    description = "a test operator"
    inputs = (TensorSpec("x", ("float32",), 1), TensorSpec("b", ("float32",), 1, optional=True))
    attrs = ()
    outputs = (TensorSpec("y", ("float32",), 1),)

    def cases(self):
        return {"one": "one"}

    def case_specs(self, case):
        return {"x": ((4, 2), np.dtype(np.float32)), "b": None}, {"alpha": 0.5, "mode": None}

    def infer_outputs(self, input_specs, attrs):
        return {"y": input_specs["x"]}

    def get_workspace_size(self, inputs, attrs, platform):
        x = inputs["x"]
        if x.dtype != np.float32:
            raise aclnn_invalid(f"x: float32 expected, got {x.dtype}", "x_dtype")
        if x.size % 2:
            raise ValueError("not an aclnn refusal")

        def kernel(x, b, y, workspace, tiling, tag):
            self.seen.append((x, b, y, workspace, tag))
            copy_in(x, y, tiling)

        return PreparedCall(self.name, {"y": (x.shape, x.dtype)},
                            _Tiling(n=x.size // 2, sync=attrs.get("sync", True)), 7, 2,
                            int(attrs.get("ws", 0)), KernelLaunch(kernel, inputs, platform, (2.5,)))

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


class _Copy(_Minimal):
    """The minimal operator with attributes ``ws`` (workspace bytes, to see the default
    launch's GM arguments) and ``sync``, and a golden (y = x)."""

    attrs = (AttrSpec("ws", "int", 0), AttrSpec("sync", "bool", True))

    def golden(self, inputs, attrs, pc):
        return {"y": inputs["x"]}


def test_default_case_inputs_are_a_case_files_seeded_draws() -> None:
    class _Ranged(_Minimal):
        inputs = (TensorSpec("x", value_range=(0.5, 1.0)), TensorSpec("b", optional=True))

    a = _Ranged().case_inputs(type("C", (), {"seed": 3})())
    assert a["b"] is None and a["x"].shape == (4, 2) and a["x"].dtype == np.float32
    assert ((a["x"] >= 0.5) & (a["x"] < 1.0)).all()
    want = draw_inputs({"x": ((4, 2), np.dtype(np.float32)), "b": None}, {"x": (0.5, 1.0)}, 3)
    assert np.array_equal(a["x"], want["x"])
    assert not np.array_equal(_Ranged().case_inputs(type("C", (), {"seed": 3})(), seed=4)["x"],
                              a["x"])


def test_default_tiling_is_prepare_on_the_shapes() -> None:
    m, f32 = _Copy(), np.dtype(np.float32)
    t = m.tiling({"x": ((8,), f32), "b": None}, {"ws": 64}, TINY)
    assert t == {"status": "success", "tiling_key": 7, "tiling_data": {"n": 4, "sync": True},
                 "workspace": [64], "block_dim": 2, "error": None}
    # a list: attribute values by IR index
    assert m.tiling({"x": ((8,), f32)}, [0, False], TINY)["tiling_data"]["sync"] is False
    t = m.tiling({"x": ((8,), np.dtype(np.float16))}, {}, TINY)
    assert t["status"] == "failed" and t["error"] == ("[161002] x: float32 expected, got "
                                                      "float16 (rule x_dtype)")
    with pytest.raises(ValueError, match="not an aclnn refusal"):
        m.tiling({"x": ((7,), f32)}, {}, TINY)


@pytest.mark.parametrize("ws", [0, 96])
def test_default_execute_passes_inputs_outputs_workspace_tiling_then_args(ws) -> None:
    m = _Copy()
    m.seen = []
    x = np.arange(16, dtype=np.float32)
    pc, rec = call(m, {"x": x, "b": None}, {"ws": ws}, TINY)
    assert np.array_equal(rec.outputs["y"], x) and list(rec.outputs) == ["y"]
    assert rec.compare()["y"]["exact"] and not rec.hazards
    gx, gb, gy, gw, tag = m.seen[0]
    assert (gx.name, gb, gy.name, tag) == ("x", None, "y", 2.5)
    assert gw is None if ws == 0 else gw.name == "workspace"


# -- declared attribute defaults ---------------------------------------------------------------


def _outcome(model, inputs, attrs, platform):
    """What a call with these attributes gives: the tiling, key, block dim, workspace and the
    outputs' bytes, or the aclnn code and rule it is refused with."""
    try:
        pc, rec = call(model, inputs, attrs, platform, mode="functional", races=False)
    except Exception as e:  # noqa: BLE001 - a refusal is an outcome too
        if getattr(e, "code", None) is None:
            raise
        return ("refused", e.code, getattr(e, "rule", None))
    outs = {k: None if v is None else np.ascontiguousarray(v).tobytes()
            for k, v in rec.outputs.items()}
    td = None if pc.tiling is None else pc.tiling.as_dict()
    return (td, pc.tiling_key, pc.block_dim, pc.workspace_size, outs)


@pytest.mark.parametrize("op", ["moe_token_unpermute_with_ep_grad", "moe_token_unpermute_with_ep",
                                "moe_token_permute_with_ep", "moe_token_permute_with_ep_grad"])
def test_every_attribute_omitted_equals_the_declared_defaults_given(op) -> None:
    """A case with every attribute left out is the same call as with each ``AttrSpec``
    default written out (``None`` = the op decides, e.g. top-K from probs), for the tiling
    command and for a whole call."""
    from aicore_sim.ops.registry import get_op
    from aicore_sim.sim.platform import load_platform

    model, a2 = get_op(op), load_platform("ascend910b1")
    case = min(model.cases().values(), key=lambda c: np.prod(c.hidden) * c.tokens_num)
    specs, _ = model.case_specs(case)
    defaults = {a.name: a.default for a in model.attrs}
    assert model.full_attrs(specs, {}) == model.full_attrs(specs, defaults)
    assert model.tiling(specs, {}, a2) == model.tiling(specs, defaults, a2)
    inputs = model.case_inputs(case)
    got = _outcome(model, inputs, {}, a2)
    assert got[0] != "refused" and got == _outcome(model, inputs, defaults, a2)


@pytest.mark.parametrize("op", ["moe_token_unpermute_with_ep_grad", "moe_token_unpermute_with_ep",
                                "moe_token_permute_with_ep", "moe_token_permute_with_ep_grad"])
def test_the_tiling_context_declares_the_models_ir(op) -> None:
    """Each port's TilingContext (the one ``aicore_sim.ascendc.host.TilingContext``, its IR
    declared) names the model's inputs, their optionality and its attributes in IR order."""
    import importlib

    from aicore_sim.ascendc.host import TilingContext
    from aicore_sim.ops.registry import get_op

    model = get_op(op)
    ctx = importlib.import_module(f"op_models.{op}.tiling").TilingContext
    assert issubclass(ctx, TilingContext)
    assert ctx.INPUTS == tuple((t.name, not t.optional) for t in model.inputs)
    assert [name for name, _ in ctx.ATTRS] == [a.name for a in model.attrs]
    assert not ctx.OUTPUTS or ctx.OUTPUTS == tuple(t.name for t in model.outputs)

"""The operator registry (``aicore_sim/ops/registry.py``) and the OpModel protocol, in-process.

The bundled op comes from the ``aicore_sim.ops`` entry points; ``tests/test_plugin.py``
installs operators from other packages for real.
"""

from __future__ import annotations

import numpy as np
import pytest

from aicore_sim.ops import registry
from aicore_sim.ops.casefile import CaseFileError, case_document, op_spec, parse_case
from aicore_sim.ops.opmodel import REQUIRED_MEMBERS, OpModel, call
from aicore_sim.sim.platform import load_platform

BWD = "moe_token_unpermute_with_ep_grad"


def test_bundled_op_is_registered_and_is_an_opmodel() -> None:
    assert BWD in registry.op_names()
    model = registry.get_op(BWD)
    assert isinstance(model, OpModel)
    assert all(hasattr(model, m) for m in REQUIRED_MEMBERS)
    assert registry.default_op() is model  # it bundles the default case "tiny"
    assert registry.find_case("tiny") == (model, model.cases()["tiny"])


def test_unknown_op_and_case_name_the_field_and_the_known_names() -> None:
    with pytest.raises(registry.UnknownOpError) as e:
        registry.get_op("nope", "sweep.op")
    assert str(e.value).startswith('sweep.op: unknown operator "nope"; expected one of [')
    assert f"'{BWD}'" in str(e.value)
    with pytest.raises(registry.UnknownOpError) as e:
        registry.find_case("no_such_case")
    assert str(e.value).startswith("--case no_such_case: unknown case 'no_such_case'; valid "
                                   "names: seed_example, tiny,")


def test_an_object_lacking_members_is_refused_by_name() -> None:
    class Half:
        name = "half_op"
        description = "only two members"

    with pytest.raises(registry.OpLoadError) as e:
        registry.register(Half())  # type: ignore[arg-type]
    msg = str(e.value)
    assert msg.startswith("op plug-in 'half_op': the object is not an OpModel (missing inputs, ")
    assert "half_op" not in registry.op_names()


def test_case_format_comes_from_the_model() -> None:
    spec = op_spec(BWD)
    assert spec.required == ("unpermuted_tokens_grad", "sorted_indices")
    assert dict(zip(spec.attrs, spec.attr_kinds)) == {
        "padded_mode": "bool", "restore_shape": "int_list", "range": "int_list",
        "topk_num": "int"}
    model = registry.get_op(BWD)
    doc = case_document(model.cases()["tiny"], "tiny", model)
    doc["attrs"]["padded_mode"] = 1  # a bool attribute given an int
    with pytest.raises(CaseFileError) as e:
        parse_case(doc)
    assert str(e.value) == "attrs.padded_mode: expected true or false, got 1"


def test_one_call_path_with_a_replaced_tiling() -> None:
    """call() with the host tiling and with a changed hiddenSizeAlign: both exact against the
    golden, which follows the tiling's hidden chunking (tiny: H 64)."""
    import dataclasses

    model = registry.get_op(BWD)
    case = model.cases()["tiny"]
    inputs, attrs = model.case_inputs(case), model.case_specs(case)[1]
    plat = load_platform("ascend910b1")
    pc, res = call(model, inputs, attrs, plat, mode="functional")
    assert all(v["exact"] for v in res.compare().values())
    td = dataclasses.replace(pc.tiling, hiddenSizeAlign=32, hiddenSizeLoopTimes=2,
                             hiddenSizeTail=32)
    pc2, res2 = call(model, inputs, attrs, plat, mode="functional",
                     tiling=(td, pc.tiling_key, pc.block_dim))
    assert pc2.tiling.hiddenSizeAlign == 32 and pc.tiling.hiddenSizeAlign != 32
    cmp = res2.compare()
    assert all(v["exact"] for v in cmp.values()), cmp
    np.testing.assert_array_equal(res2.outputs["permuted_tokens_grad"],
                                  res.outputs["permuted_tokens_grad"])

"""MoE operators of ops-transformer run from their own sources alone
(:mod:`op_models.moe_family`, :class:`aicore_sim.cfront.source_op.SourceOpModel`): host tiling,
infershape and kernel C++ of the checkout ``AICORE_SIM_OPS_TRANSFORMER`` names, every output
compared with an independent numpy golden. Skipped without a checkout; without one a run of
such an operator is exit 2 naming what to give (tested here without the checkout)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from aicore_sim.ops import registry

_ROOT = os.environ.get("AICORE_SIM_OPS_TRANSFORMER")
FAMILY = [name for name in registry.op_names()
          if registry.get_op(name).__class__.__name__ == "SourceOpModel"]
SMALL = [(op, case) for op in FAMILY for case in registry.get_op(op).cases()
         if "small" in case]

needs_checkout = pytest.mark.skipif(
    not _ROOT or not (Path(_ROOT) / "moe").is_dir(),
    reason="AICORE_SIM_OPS_TRANSFORMER does not name an ops-transformer checkout (the upstream "
           "sources these operators run from)")


def test_without_sources_the_run_names_what_to_give(cli, tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("AICORE_SIM_OPS_TRANSFORMER", raising=False)
    p = cli("run", "--case", "permute_small", "--out", tmp_path / "r", cwd=tmp_path)
    assert p.returncode == 2 and not (tmp_path / "r").exists()
    assert p.stderr == ("aicore-sim: error: moe_token_permute runs from its own sources (host "
                        "tiling and kernel C++): give --op-src <ops-transformer>/moe/"
                        "moe_token_permute, or set AICORE_SIM_OPS_TRANSFORMER to an "
                        "ops-transformer checkout\n")


@needs_checkout
@pytest.mark.parametrize(("op", "case"), SMALL, ids=[c for _, c in SMALL])
def test_small_case_exact_from_sources(cxx_cache, op: str, case: str) -> None:
    from aicore_sim.ops.opmodel import call
    from aicore_sim.sim.platform import load_platform

    model = registry.get_op(op)
    c = model.cases()[case]
    inputs, (_, attrs) = model.case_inputs(c), model.case_specs(c)
    pc, rec = call(model, inputs, attrs, load_platform("ascend910b1"))
    rec.run()
    want = model.golden(inputs, attrs, pc)
    for name, w in want.items():
        got = rec.outputs.get(name)
        assert (got is None) == (w is None), name
        if w is not None:
            assert got.shape == w.shape and np.array_equal(
                np.asarray(got).view(np.uint8), np.asarray(w).view(np.uint8)), name


def test_every_family_op_has_a_small_and_a_real_model_case() -> None:
    for op in FAMILY:
        names = list(registry.get_op(op).cases())
        assert any("small" in n for n in names) and any("small" not in n for n in names), op


def test_a_golden_may_read_the_calls_tiling_fields() -> None:
    """A golden whose float sum follows the tiling's split asks for ``tiling``: the call's
    host tiling fields by name ({} without tiling data); one without it gets none."""
    from types import SimpleNamespace

    from aicore_sim import AttrSpec, TensorSpec
    from aicore_sim.cfront.source_op import SourceCase, SourceOpModel

    seen = []

    def with_tiling(inputs, attrs, tiling):
        seen.append((attrs["n"], tiling))
        return {}

    def without(inputs, attrs):
        seen.append((attrs["n"], None))
        return {}

    def model(golden):
        return SourceOpModel("toy", "", "moe", (TensorSpec("x"),), (TensorSpec("y"),),
                             (AttrSpec("n", "int", 3),), {"toy_small": SourceCase("toy_small",
                                                                                  "", {}, {})},
                             lambda case, rng: {}, golden)

    x = {"x": np.zeros(4, np.float32)}
    fields = SimpleNamespace(flat_dict=lambda: {"chunk": 16, "rows.perCore": 2})
    model(with_tiling).golden(x, {}, SimpleNamespace(tiling=fields))
    model(with_tiling).golden(x, {"n": 5}, SimpleNamespace(tiling=None))
    model(without).golden(x, {}, SimpleNamespace(tiling=fields))
    assert seen == [(3, {"chunk": 16, "rows.perCore": 2}), (5, {}), (3, None)]


def test_every_family_case_is_a_valid_case_file() -> None:
    """``run --case NAME`` reads a bundled case as a case file: every family case passes the
    case-file rules (its drawing parameters, e.g. an expert count, are not operator
    attributes)."""
    from aicore_sim.cli.common import bundled

    names = [c for op in FAMILY for c in registry.get_op(op).cases()]
    assert len(names) > 50
    for name in names:
        cf, _ = bundled(name, "ascend910b1")
        assert cf.name == name and set(cf.attrs) <= {a.name for a in cf.op.model.attrs}

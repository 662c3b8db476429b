"""Results are keyed on the simulator build (``sweep.points.model_fingerprint``): a sweep's
``--resume`` and a search refuse a folder whose rows another build computed, and the
fingerprint follows the bytes of the simulator's and the operator's files."""

from __future__ import annotations

from pathlib import Path

import pytest

from aicore_sim.sweep import points, run_sweep
from aicore_sim.sweep.run import SerialExecutor, read_rows
from aicore_sim.sweep.search import search
from aicore_sim.sweep.spec import SpecError, parse_spec

OP = "moe_token_unpermute_with_ep_grad"
SPEC = {"sweep": {"name": "fp"}, "axes": {"case": ["tiny"], "platform": ["ascend910b1"]}}


def _another_build(monkeypatch) -> None:
    monkeypatch.setattr(points, "model_fingerprint", lambda op: "another build")


def test_a_sweep_resumed_by_another_build_is_refused(tmp_path: Path, monkeypatch) -> None:
    run_sweep(parse_spec(SPEC), tmp_path, SerialExecutor(), progress=False, report=False)
    rows = read_rows(tmp_path)
    assert len(rows) == 1
    # the same build resumes: nothing left to run, nothing written
    run_sweep(parse_spec(SPEC), tmp_path, SerialExecutor(), resume=True, progress=False,
              report=False)
    assert read_rows(tmp_path) == rows
    _another_build(monkeypatch)
    with pytest.raises(SpecError, match="another simulator build"):
        run_sweep(parse_spec(SPEC), tmp_path, SerialExecutor(), resume=True, progress=False,
                  report=False)
    assert read_rows(tmp_path) == rows


def test_a_search_over_rows_of_another_build_is_refused(tmp_path: Path, monkeypatch) -> None:
    search("tiny", SerialExecutor(), tmp_path, budget=1, progress=False, report=False)
    rows = read_rows(tmp_path)
    assert rows
    search("tiny", SerialExecutor(), tmp_path, budget=1, progress=False, report=False)
    assert read_rows(tmp_path) == rows  # the same build reuses its rows
    _another_build(monkeypatch)
    with pytest.raises(SpecError, match="another search or of another simulator build"):
        search("tiny", SerialExecutor(), tmp_path, budget=1, progress=False, report=False)
    assert read_rows(tmp_path) == rows


def test_the_fingerprint_follows_the_files(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "data").mkdir()
    cost = tmp_path / "data" / "a2.toml"
    cost.write_text("issue_cycles = 20.63\n")
    (tmp_path / "__pycache__").mkdir()
    monkeypatch.setattr(points, "_OWN_PACKAGE", tmp_path)
    fingerprint = points.model_fingerprint.__wrapped__
    first = fingerprint("no such op")  # an op that cannot be found: the simulator alone
    (tmp_path / "__pycache__" / "x.py").write_text("# compiled caches do not count\n")
    (tmp_path / "notes.md").write_text("prose does not count\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text("# nor do tests (op_models/<op>/tests/)\n")
    assert fingerprint("no such op") == first
    cost.write_text("issue_cycles = 20.64\n")
    assert fingerprint("no such op") != first
    # the op's own package counts too: its port decides its rows
    assert fingerprint(OP) != fingerprint("no such op")

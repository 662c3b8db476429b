"""The one run pipeline (``aicore_sim/sim/recording.py``): every front end records and replays
through a :class:`Recording`, and nothing else in the package calls the record pass or the
replay; a recording replays on another platform without a new record, and refuses one the
record pass would read differently."""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from aicore_sim.cli import main
from aicore_sim.sim import engine, program
from aicore_sim.sim.platform import load_platform
from aicore_sim.sim.recording import Recording
from aicore_sim.views import slack
from tests import kernels

ROOT = Path(__file__).resolve().parents[1]
# cold L2: the replays below change HBM, which a warm L2 would leave these few KB unused
TINY = load_platform("ascend910b1").with_overrides(aiv_core_num=2,
                                                   costs={"l2_warm_start": False})


@pytest.fixture
def calls(monkeypatch):
    """Counts of record passes and replays (and cost preparations); each must be called from
    ``aicore_sim.sim.recording`` (or, for the costs, the replay itself)."""
    seen = {"record": 0, "replay": 0}
    callers: set[str] = set()

    def counted(name, fn):
        def wrapper(*a, **kw):
            callers.add(sys._getframe(1).f_globals["__name__"])
            seen[name] = seen.get(name, 0) + 1
            return fn(*a, **kw)
        return wrapper

    monkeypatch.setattr(program, "record", counted("record", program.record))
    monkeypatch.setattr(engine, "replay", counted("replay", engine.replay))
    monkeypatch.setattr(engine, "prepare_all", counted("prepare_all", engine.prepare_all))
    yield seen
    assert callers <= {"aicore_sim.sim.recording", "aicore_sim.sim.engine"}, callers


def test_cli_run_and_slack_go_through_recording(calls, tmp_path, capsys) -> None:
    assert main(["run", "--case", "seed_example", "--slack", "--jobs", "1", "--no-plot",
                 "--out", str(tmp_path / "o")]) == 0
    capsys.readouterr()
    # one record; the replay, then one per slack scenario (12)
    assert calls["record"] == 1 and calls["replay"] == 1 + len(slack.scenarios()) == 13


def test_verify_goes_through_recording(calls, tmp_path, capsys) -> None:
    assert main(["verify", "seed_example", "permute_tiny_bf16_probs", "--workers", "1",
                 "--no-progress", "--report", str(tmp_path / "v")]) == 0
    capsys.readouterr()
    assert calls["record"] == 2 and calls["replay"] == 0  # functional mode: no replay


def test_sweep_records_once_and_replays_what_ifs(calls) -> None:
    from aicore_sim.sweep import expand, parse_spec, run_points, worker
    from aicore_sim.sweep.run import SerialExecutor

    worker._RECORDS.clear()
    doc = {"sweep": {"name": "r"}, "axes": {"case": ["tiny"], "hbm_gbps": [800, 1600, 2400]}}
    rows = run_points(expand(parse_spec(doc)), SerialExecutor(), progress=False)
    assert [r["record_reused"] for r in rows] == [False, True, True]
    assert calls["record"] == 1 and calls["replay"] == 3
    assert calls["prepare_all"] == 1  # the costs prepared once, in the first replay
    worker._RECORDS.clear()


def test_calibrate_replays_one_recording(calls) -> None:
    from aicore_sim.correlate import calibrate
    from aicore_sim.sweep.ops import get_op

    op = get_op("moe_token_unpermute_with_ep_grad")
    case = op.resolve_case("seed_example", {})
    rec = op.launch(case, TINY, op.plan(case, TINY, "upstream", {}))
    launch = calibrate.Launch("x", None, "seed_example", rec)
    base = calibrate.simulate(launch, TINY)
    slower = calibrate.simulate(launch, calibrate._knob_platform(TINY, np.log([2, 1, 1, 1])))
    assert sum(slower["MTE2"]) > sum(base["MTE2"])
    assert calls["record"] == 1 and calls["replay"] == 2


def test_op_apis_and_launch_go_through_recording(calls) -> None:
    from op_models.moe_token_permute_with_ep import run_case as permute
    from op_models.moe_token_unpermute_with_ep import run_case as unpermute
    from op_models.moe_token_unpermute_with_ep_grad import run_case as grad

    for run_case, name in ((permute, "permute_tiny_bf16_probs"),
                           (unpermute, "tiny_fp16_noprobs"), (grad, "seed_example")):
        _, result, _ = run_case(name, platform=TINY)
        assert isinstance(result, Recording) and result.trace is not None
    from aicore_sim.sim.launch import launch

    x = np.arange(512, dtype=np.float32)
    r = launch(kernels.double_buffer, ["x", "y", {"n": 64, "loops": 8}],
               {"x": x, "y": np.zeros_like(x)}, {"y": (np.float32, (512,))}, TINY, 1)
    assert r.outputs["y"].shape == (512,)
    assert calls["record"] == 4 and calls["replay"] == 4


def test_validate_scenarios_go_through_recording(calls) -> None:
    from aicore_sim.validate.run import simulate
    from tests.test_validate import FULL  # a small kernel on the 2-core "tiny" platform

    simulate(FULL, 1.0)
    assert calls["record"] == 1 and calls["replay"] == 1


def _calls_outside(path: Path) -> list[str]:
    """Calls of the record pass (``program.record``, ``parallel.record``) or of the replay
    (``engine.replay``, ``engine.prepare_all``), or imports of them by name, in ``path``."""
    banned = {("program", "record"), ("parallel", "record"), ("engine", "replay"),
              ("engine", "prepare_all")}
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and isinstance(node.func.value, ast.Name) \
                and (node.func.value.id, node.func.attr) in banned:
            out.append(f"{node.func.value.id}.{node.func.attr}() line {node.lineno}")
        elif isinstance(node, ast.ImportFrom) and node.module:
            tail = node.module.rsplit(".", 1)[-1]
            out += [f"from {node.module} import {a.name} line {node.lineno}"
                    for a in node.names if (tail, a.name) in banned]
    return out


def test_nothing_else_records_or_replays() -> None:
    allowed = {"aicore_sim/sim/recording.py", "aicore_sim/sim/program.py"}  # program.py: the pass
    found = {}
    for path in sorted([*ROOT.glob("aicore_sim/**/*.py"), *ROOT.glob("op_models/**/*.py")]):
        rel = path.relative_to(ROOT).as_posix()
        if rel in allowed or rel.startswith("aicore_sim/sim/engine/"):
            continue
        bad = _calls_outside(path)
        if bad:
            found[rel] = bad
    assert found == {}


def test_the_source_check_finds_a_replay(tmp_path) -> None:
    f = tmp_path / "x.py"
    f.write_text("from aicore_sim.sim import engine\nfrom aicore_sim.sim.program import record\n\n"
                 "def f(s, p):\n    return engine.replay(s, p)\n")
    assert _calls_outside(f) == ["from aicore_sim.sim.program import record line 2",
                                 "engine.replay() line 5"]


def test_replay_on_another_platform(tmp_path) -> None:
    x = np.arange(4096, dtype=np.float32)
    rec = Recording(kernels.double_buffer, ["x", "y", {"n": 512, "loops": 8}],
                    {"x": x, "y": np.zeros_like(x)}, {"y": (np.float32, (4096,))}, TINY, 1,
                    mode="timing-only")
    assert rec.wall.keys() >= {"record"} and "replay" not in rec.wall  # nothing replayed yet
    trace, hazards = rec.replay()
    assert trace is rec.trace and hazards == rec.hazards == []
    slow = TINY.with_overrides(hbm_gbps=50)
    t2, _ = rec.replay(slow)
    fresh = Recording(kernels.double_buffer, ["x", "y", {"n": 512, "loops": 8}],
                      {"x": x, "y": np.zeros_like(x)}, {"y": (np.float32, (4096,))}, slow, 1,
                      mode="timing-only")
    assert t2.makespan == fresh.trace.makespan > trace.makespan
    with pytest.raises(ValueError, match="record the launch again"):
        rec.replay(TINY.with_overrides(ub_size=65536))


def test_compare_with_a_standard() -> None:
    from aicore_sim.verify.standards import parse_standard

    x = np.arange(512, dtype=np.float32)
    rec = Recording(kernels.double_buffer, ["x", "y", {"n": 64, "loops": 8}],
                    {"x": x, "y": np.zeros_like(x)}, {"y": (np.float32, (512,))}, TINY, 1,
                    mode="functional")
    want = {"y": rec.outputs["y"].copy()}
    assert rec.compare(want)["y"]["exact"]
    (c,) = rec.compare(want, parse_standard("bit-exact"))
    assert c.passed
    rec.expected = lambda: {"y": want["y"] + 1}
    assert not rec.compare()["y"]["exact"]
    assert json.dumps(rec.compare())  # the summary's form

"""A sweep with worker processes stopped by Ctrl-C or killed: no process is left behind within
5 s, no traceback is printed, the message says what was kept, and ``--resume`` completes the
sweep with every point once; a verify with workers stopped by Ctrl-C, likewise. Real processes
(the pool workers must be real to be stray)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from aicore_sim.sweep import expand, parse_spec
from aicore_sim.sweep.rows import read_rows

REPO = Path(__file__).resolve().parents[1]
N = 16  # points of tiny, timed: tens of ms each, so the sweep is mid-way when stopped


def _marked_pids(marker: str) -> list[int]:
    """Processes whose environment holds ``marker`` (the sweep and the workers it spawned)."""
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            if marker.encode() in (d / "environ").read_bytes():
                found.append(int(d.name))
        except OSError:
            continue
    return found


def _start(tmp_path: Path) -> tuple[subprocess.Popen, Path, dict, str]:
    doc = {"sweep": {"name": "stop", "mode": "timed"},
           "axes": {"case": ["tiny"], "hbm_gbps": [float(100 + 10 * i) for i in range(N)]}}
    spec = tmp_path / "stop.json"
    spec.write_text(json.dumps(doc))
    out = tmp_path / "out"
    marker = f"AICORE_SIM_TEST_{uuid.uuid4().hex}"
    env = dict(os.environ, PYTHONPATH=str(REPO), **{marker: "1"})
    proc = subprocess.Popen([sys.executable, "-m", "aicore_sim", "sweep", str(spec), "--out",
                             str(out), "--workers", "2", "--batch", "1", "--no-progress",
                             "--no-report"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    jsonl = out / "results.jsonl"
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        if jsonl.exists() and jsonl.read_text().count("\n") >= 3:
            break
        time.sleep(0.02)
    assert proc.poll() is None, "the sweep ended before it could be stopped"
    return proc, out, doc, marker


def _none_left(marker: str) -> bool:
    deadline = time.time() + 5
    while time.time() < deadline:
        if not _marked_pids(marker):
            return True
        time.sleep(0.05)
    return False


def _resume_completes(out: Path, doc: dict, tmp_path: Path) -> None:
    before = read_rows(out)
    assert 3 <= len(before) < N
    r = subprocess.run([sys.executable, "-m", "aicore_sim", "sweep", str(tmp_path / "stop.json"),
                        "--out", str(out), "--workers", "0", "--resume", "--no-progress",
                        "--no-report"], env=dict(os.environ, PYTHONPATH=str(REPO)),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    keys = [row["key"] for row in read_rows(out)]
    assert len(keys) == len(set(keys)) == N  # no duplicate, none lost
    assert set(keys) == {p.key for p in expand(parse_spec(doc))}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_ctrl_c_stops_workers_keeps_rows_and_resumes(tmp_path: Path) -> None:
    proc, out, doc, marker = _start(tmp_path)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    kept = len(read_rows(out))
    lines = err.strip().splitlines()
    assert lines[-1] == f"aicore-sim: interrupted (SIGINT); kept {kept} rows for --resume", err
    assert len(lines) == 2, err  # the sweep's header line, then that one
    assert _none_left(marker)
    _resume_completes(out, doc, tmp_path)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_kill_9_of_the_sweep_takes_its_workers_with_it(tmp_path: Path) -> None:
    proc, out, doc, marker = _start(tmp_path)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    assert _none_left(marker)  # the workers die with their parent (PR_SET_PDEATHSIG)
    _resume_completes(out, doc, tmp_path)


def test_verify_with_workers_stopped_by_ctrl_c(tmp_path: Path) -> None:
    """``verify --workers 2`` stopped by Ctrl-C while its two workers run cases: exit 130, one
    line saying nothing was written, no report, and no process left within 5 s."""
    shapes = ", ".join(f"{{tokens = {256 + i}, topk = 4, hidden = 1024}}" for i in range(40))
    m = tmp_path / "m.toml"
    m.write_text(f'op = "moe_token_unpermute_with_ep_grad"\n[axes]\ndtype = ["bf16"]\n'
                 f'probs = ["same"]\nshape = [{shapes}]\nrange = ["none"]\n'
                 f'indices = ["permutation"]\n')  # 40 cases, ~4 s on 2 workers
    marker = f"AICORE_SIM_TEST_{uuid.uuid4().hex}"
    env = dict(os.environ, PYTHONPATH=str(REPO), **{marker: "1"})
    proc = subprocess.Popen([sys.executable, "-m", "aicore_sim", "verify", "--matrix", str(m),
                             "--workers", "2", "--no-progress", "--report",
                             str(tmp_path / "rep")], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 60
    while time.time() < deadline and proc.poll() is None and len(_marked_pids(marker)) < 3:
        time.sleep(0.02)  # the command and its two workers
    assert proc.poll() is None
    time.sleep(0.3)
    os.kill(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert err.splitlines() == ["aicore-sim: interrupted (SIGINT); nothing was written"]
    deadline = time.time() + 5
    while time.time() < deadline and _marked_pids(marker):
        time.sleep(0.05)
    assert _marked_pids(marker) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.toml"]

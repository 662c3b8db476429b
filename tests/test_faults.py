"""Under faults a command keeps its word: work counted before it starts, outputs claimed
before the work, a dead worker named, and a seeded sample of the fault injections of
tests/faults.py (benchmarks/fault_injection.py runs thousands)."""

from __future__ import annotations

import os
import random
import signal
from pathlib import Path

import pytest

from aicore_sim.util import leftovers
from aicore_sim.util.claim import ClaimError, claim, lock_path, release_all, remove_dead
from aicore_sim.util.staging import discard, new_stage
from tests import faults

# ----------------------------------------------------------------------------------------
# outputs claimed before the work
# ----------------------------------------------------------------------------------------


def test_a_second_claim_of_one_output_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "a" / "b" / "run"
    try:
        assert claim(out, "--out") == out  # the parents a/b are made for the lock file
        assert lock_path(out).read_text() == f"{os.getpid()}\n{leftovers.tag()}\n"
        with pytest.raises(ClaimError) as e:  # flock: one holder per open file, even here
            claim(str(out), "--out")
        assert str(e.value) == (f"--out {out}: another aicore-sim (pid {os.getpid()}) is "
                                "writing it; wait for it to end or choose another --out "
                                "(rule output_busy)")
    finally:
        release_all()
    assert not (tmp_path / "a").exists()  # lock gone, and the folders made for it (empty)
    claim(out, "--out")  # free again
    release_all()


@pytest.mark.parametrize("name", [".", "..", "x/.."])
def test_a_name_outside_its_folder_is_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(ClaimError, match="names no entry of its folder"):
        claim(str(tmp_path / name) if name != "." else name, "--report")
    assert list(tmp_path.iterdir()) == []


def test_a_link_resolving_elsewhere_is_refused(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "here").mkdir()
    (tmp_path / "here" / "out").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(ClaimError, match="a symbolic link resolving outside its folder"):
        claim(tmp_path / "here" / "out", "--out")


def test_a_second_sweep_on_one_folder_is_refused(tmp_path: Path, cli) -> None:
    (tmp_path / "s.toml").write_text(faults.SWEEP)
    claim(tmp_path / "res", "--out")  # as a first sweep, still running, holds it
    try:
        r = cli("sweep", "s.toml", "--out", "res", "--workers", "0", cwd=tmp_path)
    finally:
        release_all()
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("aicore-sim: error: --out res: another aicore-sim (pid ")
    assert r.stderr.count("\n") == 1 and not (tmp_path / "res").exists()


# ----------------------------------------------------------------------------------------
# what a SIGKILL leaves, the next command removes; nothing of a live command
# ----------------------------------------------------------------------------------------


def test_only_what_ended_owners_left_is_removed(tmp_path: Path) -> None:
    import fcntl
    import subprocess
    import sys

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()  # a pid now unused
    me, start, here = leftovers.parse_tag(leftovers.tag())
    names = {
        f".run.{gone}-12345-{here}.abcdefgh.tmp": "dir",  # owner ended
        f".v.json.{me}-{start + 1}-{here}.k2_x9zzq.tmp": "file",  # my pid, but reused
        f".a.png.{gone}-12345-{here}.aaaaaaaa.png": "file",  # owner ended
        f".far.{gone}-12345-{'f' * 6}.abcdefgh.tmp": "dir",  # another host's: not judged
        f".live.{leftovers.tag()}.abcdefgh.tmp": "dir",  # mine: live
        ".old.abcdefgh.tmp": "dir",  # no owner in its name
        f".run.{gone}-12345-{here}.abcdefgh.txt": "file",  # not a temporary's suffix
        ".x.aicore-sim.lock": f"{gone}\n{gone}-12345-{here}\n",  # its claimer ended
        ".y.aicore-sim.lock": f"{gone}\n{gone}-12345-{here}\n",  # ...but someone holds it
        ".e.aicore-sim.lock": "",  # being claimed now (nothing written yet)
    }
    claim(tmp_path / "z", "--out")  # a live claim's lock, held by this process
    for n, what in names.items():
        if what == "dir":
            (tmp_path / n).mkdir()
            (tmp_path / n / "f").write_text("x")
        else:
            (tmp_path / n).write_text("x" if what == "file" else what)
    held = os.open(tmp_path / ".y.aicore-sim.lock", os.O_RDONLY)
    fcntl.flock(held, fcntl.LOCK_EX)
    try:
        assert remove_dead(tmp_path) == sorted([
            ".x.aicore-sim.lock", f".a.png.{gone}-12345-{here}.aaaaaaaa.png",
            f".run.{gone}-12345-{here}.abcdefgh.tmp",
            f".v.json.{me}-{start + 1}-{here}.k2_x9zzq.tmp"])
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted([
            f".far.{gone}-12345-ffffff.abcdefgh.tmp", f".live.{leftovers.tag()}.abcdefgh.tmp",
            ".old.abcdefgh.tmp", f".run.{gone}-12345-{here}.abcdefgh.txt",
            ".y.aicore-sim.lock", ".e.aicore-sim.lock", ".z.aicore-sim.lock"])
    finally:
        release_all()
        os.close(held)


def test_the_next_run_removes_what_a_sigkilled_run_left(tmp_path: Path, cli) -> None:
    """A run killed with SIGKILL while its folder is staged leaves the hidden stage and its
    lock file; the next run on the same output removes both and publishes its folder, and
    leaves alone the stage of a command still running beside it (this process's)."""
    import re
    import subprocess
    import sys
    import time

    out = tmp_path / "out"
    out.mkdir()
    (out / faults.SENTINEL).write_text(faults.SENTINEL_TEXT)
    live = new_stage(out / "other")  # a live command's stage (this process's)
    argv = ["run", "--case", "tiny", "--mode", "functional", "--trace", "none", "--out",
            "out/run"]
    p = subprocess.Popen([sys.executable, "-m", "aicore_sim", *argv], cwd=tmp_path,
                         env=faults._env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 20
        # the stage lives ~0.1 s (record, checks, outputs) after ~0.4 s of start-up
        while p.poll() is None and time.monotonic() < deadline and not any(
                n.startswith(".run.") and n.endswith(".tmp") for n in os.listdir(out)):
            time.sleep(0.001)
        p.kill()
    finally:
        p.wait()
    assert p.returncode == -signal.SIGKILL, p.stderr.read()
    p.stderr.close()
    left = sorted(os.listdir(out))
    assert len(left) == 4, left
    # the live stage, the killed run's stage (named after its pid) and lock, the user's file
    assert re.fullmatch(rf"\.run\.{p.pid}-\d+-{leftovers.host()}\.[a-z0-9_]{{8}}\.tmp",
                        left[1]), left
    assert [left[0], *left[2:]] == [live.name, ".run.aicore-sim.lock", faults.SENTINEL]
    try:
        r = cli(*argv, cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        assert sorted(os.listdir(out)) == [live.name, faults.SENTINEL, "run"]
        assert (out / "run" / "summary.json").is_file()
    finally:
        discard(live)


# ----------------------------------------------------------------------------------------
# work bounded before it starts
# ----------------------------------------------------------------------------------------


def test_a_sweep_of_a_million_million_points_is_refused_at_once(tmp_path: Path, cli) -> None:
    values = ", ".join(str(v) for v in range(1, 1001))
    (tmp_path / "huge.toml").write_text(
        f'[sweep]\nname = "huge"\n[axes]\ncase = ["tiny"]\nhbm_gbps = [{values}]\n'
        f"clock_mhz = [{values}]\n[tiling]\ninputReserveNum = [{values}]\n"
        f"indicesReserveNum = [{values}]\n")
    r = cli("sweep", "huge.toml", "--out", "res", cwd=tmp_path)
    # 1000 hbm_gbps x 1000 clock_mhz x 1000 x 1000 tiling values = 10**12 points
    assert (r.returncode, r.stderr) == (
        2, "aicore-sim: error: huge.toml: 1000000000000 points, above the limit of 100000 "
           "(rule max_points); cut an axis, or raise the limit with --max-points N\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["huge.toml"]
    r = cli("sweep", "huge.toml", "--out", "res", "--max-points", "0", cwd=tmp_path)
    assert r.returncode == 2 and "--max-points" in r.stderr and "must be >= 1" in r.stderr


def test_a_matrix_of_millions_of_cases_is_refused_before_one_is_built(tmp_path: Path, cli
                                                                      ) -> None:
    shapes = ", ".join(f"{{ tokens = {t}, topk = 2, hidden = {h} }}"
                       for t in range(1, 61) for h in range(8, 608, 8))
    ranges = ", ".join(f"[{-a}, -1]" for a in range(2, 202))
    (tmp_path / "m.toml").write_text(
        'op = "moe_token_unpermute_with_ep_grad"\nname = "big"\n'
        'platforms = ["ascend910b1", "tiny"]\n[axes]\n'
        'dtype = ["bfloat16", "float16", "float32"]\n'
        'probs = ["none", "bfloat16", "float16", "float32"]\n'
        f'shape = [{shapes}]\nrange = [{ranges}]\nindices = ["outside_window"]\n')
    r = cli("verify", "--matrix", "m.toml", "--report", "v", cwd=tmp_path)
    # 3 dtypes x 4 probs x (60 x 75) shapes x 200 ranges x 1 indices x 2 platforms = 21.6e6
    assert (r.returncode, r.stderr) == (2, "aicore-sim: error: 21600000 cases to verify, above the "
                               "limit of 20000 (rule max_cases); pick some with --limit / "
                               "--records, or raise it with --max-cases N\n")
    r = cli("verify", "--matrix", "m.toml", "--max-cases", "3", "--limit", "4", cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.startswith("aicore-sim: error: 4 cases to verify, above the limit of 3")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.toml"]


def test_a_search_budget_past_the_limit_is_refused(cli) -> None:
    r = cli("search", "tiny", "--budget", "100001")
    assert r.returncode == 2 and "must be <= 100000" in r.stderr and r.stderr.count("\n") == 1


# ----------------------------------------------------------------------------------------
# a dead verify worker is a named failure of its case; the others run
# ----------------------------------------------------------------------------------------


def test_a_killed_verify_worker_fails_the_case_it_ran(monkeypatch) -> None:
    from aicore_sim.verify import runner
    from aicore_sim.verify.report import CaseResult

    class Case:  # what _killed reads of a case
        def __init__(self, name: str) -> None:
            self.name, self.source = name, "test"
            self.platform = type("P", (), {"name": "tiny"})()

    def fake_run(vc, mode, *rest):
        if vc.name == "c1":
            os.kill(os.getpid(), signal.SIGKILL)
        return CaseResult(vc.name, "test", "tiny", mode)

    monkeypatch.setattr(runner, "run_case", fake_run)
    jobs = [(Case(f"c{i}"), "functional", None, None, False, None) for i in range(4)]
    got = list(runner._forked(jobs, 2))
    assert [r.case for r in got] == ["c0", "c1", "c2", "c3"]  # all four, in order
    assert [r.error is None for r in got] == [True, False, True, True]
    assert got[1].error.startswith("WorkerDied: the worker process (pid ")
    assert got[1].error.endswith("running this case was killed by signal 9 (SIGKILL)")


# ----------------------------------------------------------------------------------------
# multiprocessing's resource tracker killed under a sweep: no traceback
# ----------------------------------------------------------------------------------------


def test_a_killed_resource_tracker_prints_no_traceback(tmp_path: Path) -> None:
    """A sweep's process pool registers its semaphores with multiprocessing's resource tracker.
    Killed (a kill -9 of the command's children), the standard library starts another at
    the next use that was never told those names: each unregistered as the pool closed was a
    KeyError traceback (five: the pool's queues' semaphores), after a warning line."""
    import subprocess
    import sys
    import time

    (tmp_path / "s.toml").write_text('[sweep]\nname = "t"\nmode = "timing-only"\n[axes]\n'
                                     'case = ["tiny"]\nhbm_gbps = [800, 1600]\n')
    p = subprocess.Popen([sys.executable, "-m", "aicore_sim", "sweep", "s.toml", "--out", "o",
                          "--workers", "1", "--no-progress", "--no-report"], cwd=tmp_path,
                         env=faults._env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         start_new_session=True)
    trackers: list[int] = []
    deadline = time.monotonic() + 30
    try:
        while p.poll() is None and time.monotonic() < deadline:
            for k in faults._children(p.pid):
                if k not in trackers and faults._is_tracker(k):
                    trackers.append(k)
                    if len(trackers) == 1:  # the pool's (it starts with the pool)
                        os.kill(k, signal.SIGKILL)
            time.sleep(0.002)
        out, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
    # the first tracker killed, a second started when the pool next used one
    assert len(trackers) == 2, (trackers, err)
    assert (p.returncode, err.decode()) == (
        0, "sweep t: 2 points, mode timing-only, results in o/\n")  # nothing else
    assert len((tmp_path / "o" / "results.jsonl").read_text().splitlines()) == 2


# ----------------------------------------------------------------------------------------
# a sweep pool whose worker dies holding the task queue's lock ends (was: hung for ever)
# ----------------------------------------------------------------------------------------

_HANG = """
import multiprocessing, os, signal
from concurrent.futures.process import BrokenProcessPool
from aicore_sim.sweep.run import make_executor
from tests.faults import pid_after

with make_executor(2) as ex:  # the sweep's pool: workers ignore SIGTERM
    seen = set()
    while len(seen) < 2:  # until both workers have taken a task: both back in get()
        seen |= {f.result() for f in [ex.submit(os.getpid) for _ in range(2)]}
    # the worker reading the queue (holding its read lock) takes this task and lets the
    # lock go; the other takes it and reads while this one sleeps, then waits for it
    ran = ex.submit(pid_after, 0.3).result()
    holder = next(c.pid for c in multiprocessing.active_children() if c.pid != ran)
    os.kill(holder, signal.SIGKILL)
    try:  # the pool finds the dead worker: every future fails, the pool is broken
        ex.submit(os.getpid).result()
    except BrokenProcessPool:
        pass
    print("broken", flush=True)
print("ended", flush=True)
"""


def test_a_sweep_pool_whose_worker_died_holding_the_queue_lock_ends(tmp_path: Path) -> None:
    """A worker SIGKILLed while it holds the task queue's read lock leaves the other worker
    blocked on that lock for ever, deaf to the SIGTERM the standard pool ends it with (sweep
    workers ignore SIGTERM): the pool's shutdown waited for it for ever (the fault runs' sweep
    hangs). The sweep's executor now kills the workers of a broken pool."""
    import subprocess
    import sys

    p = subprocess.Popen([sys.executable, "-c", _HANG], cwd=tmp_path, env=faults._env(),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         start_new_session=True)
    try:
        out, err = p.communicate(timeout=15)  # ~1.3 s; a regression hangs: killed, failed
        hung = False
    except subprocess.TimeoutExpired:
        hung = True
    finally:
        if faults._group_alive(p.pid):
            os.killpg(p.pid, signal.SIGKILL)
    if hung:
        out, err = p.communicate()
        pytest.fail(f"the pool hung after a worker died holding the queue's lock: {out!r}")
    assert (p.returncode, out.decode(), err.decode()) == (0, "broken\nended\n", "")


# ----------------------------------------------------------------------------------------
# a seeded sample of the fault injections (cheap commands; the benchmark runs every one)
# ----------------------------------------------------------------------------------------

_CHEAP = [(c, f, m) for c in ("run", "tiling") for f in faults.FAULTS
          for m in faults.MOMENTS if f not in ("RLIMIT_CPU", "read-only", "second-writer",
                                               "SIGKILL-tracker")]  # no tracker in run
SAMPLE = random.Random(34).sample(_CHEAP, 3)


@pytest.mark.parametrize(("command", "fault", "moment"), SAMPLE)
def test_fault_injection_sample(tmp_path: Path, command: str, fault: str, moment: float
                                ) -> None:
    o = faults.inject(command, fault, moment, tmp_path / "w")
    assert o.broken == [], (o.code, o.stderr, o.note)


@pytest.mark.slow
def test_ctrl_c_under_a_local_dask_cluster_is_one_line(tmp_path: Path) -> None:
    """The terminal's Ctrl-C reaches the whole process group: the Dask workers ignore it (was:
    ~70 lines of tracebacks, two per worker), the command stops with one line and exit 130."""
    pytest.importorskip("distributed")
    import subprocess
    import sys
    import time

    (tmp_path / "s.toml").write_text(faults.SWEEP)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(faults.ROOT), *sys.path[1:]]))
    p = subprocess.Popen([sys.executable, "-m", "aicore_sim", "sweep", "s.toml", "--out", "o",
                          "--scheduler", "local:2", "--no-progress"], cwd=tmp_path, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    time.sleep(8)
    os.killpg(p.pid, signal.SIGINT)
    out, err = p.communicate(timeout=60)
    lines = err.decode().splitlines()
    assert p.returncode in (0, 130), err
    if p.returncode == 130:
        assert lines[-1].startswith("aicore-sim: interrupted (SIGINT); kept ")
    assert len(lines) == 2 and "Traceback" not in err.decode(), lines

"""Fault injection: a command run as a user would, with one fault injected at one moment, and
the failure contract's invariants checked on what it left (tests/test_faults.py samples a few
injections; benchmarks/fault_injection.py runs thousands).

An injection is (command, fault, moment): the command starts in a fresh folder as its own
process group (``python -m aicore_sim``), the fault lands ``moment`` seconds after the start
(or is set up before it: a resource limit, a closed standard output, a read-only folder), and
:func:`check` returns the broken invariants (empty: kept):

* the exit code is in the contract's set for that fault (never 0 after lost work: a run
  that exits 0 must have written everything; a signal's 128 + N, 1 or 2 otherwise);
* stderr holds no traceback and, when the command failed, ends with one ``aicore-sim:`` line;
* nothing half-written: a run folder is whole or absent, a report's JSON parses, a sweep's
  results hold one row per point at most;
* no hidden staging (``.tmp``) or lock file left; after a SIGKILL of the command itself (which
  it cannot catch) the same command is run again on the same outputs, and none may be left
  once that next run has ended (it removes what the killed one left), nor may it fail with a
  traceback or an exit code outside 0, 1, 2;
* no process of the command's group left once it ended;
* the user's own file next to the outputs is unchanged.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SENTINEL = "mine.txt"
SENTINEL_TEXT = "the user's own file\n"

SWEEP = """[sweep]
name = "fi"
mode = "timing-only"
[axes]
case = ["tiny"]
hbm_gbps = [800, 1600]
strategy = ["upstream", "wide_e"]
[tiling]
inputReserveNum = ["auto", 1, 2]
"""
SWEEP_POINTS = 12  # 2 bandwidths x 2 strategies x 3 inputReserveNum values

COMMANDS = {
    # name: (argv after 'python -m aicore_sim', what it writes (relative), kind of output)
    "run": (["run", "--case", "tiny", "--mode", "functional", "--out", "out/run"],
            "out/run", "folder"),
    "run-inputs": (["run", "case.json", "--inputs", "in", "--out", "out/run"], "out/run",
                   "folder"),
    "run-timed": (["run", "case.json", "--out", "out/run", "--jobs", "2"], "out/run",
                  "folder"),
    "verify": (["verify", "--matrix", "--limit", "24", "--workers", "2", "--no-progress",
                "--report", "out/v"], "out/v", "report"),
    "sweep": (["sweep", "fi.toml", "--out", "out/sw", "--workers", "2", "--no-progress"],
              "out/sw", "sweep"),
    "search": (["search", "tiny", "--budget", "6", "--out", "out/se", "--workers", "1",
                "--no-progress"], "out/se", "sweep"),
    "tiling": (["tiling", "case.json"], None, "none"),
}

FAULTS = ("SIGINT", "SIGTERM", "SIGQUIT", "SIGKILL-worker", "SIGKILL-parent", "stdout-closed",
          "RLIMIT_FSIZE", "RLIMIT_CPU", "RLIMIT_AS", "read-only", "second-writer",
          "input-truncated", "SIGKILL-tracker")
MOMENTS = (0.2, 0.4, 0.7, 1.0, 1.6, 2.4)


@dataclass
class Outcome:
    command: str
    fault: str
    moment: float
    code: int
    stderr: str
    stdout: str
    wall_s: float
    broken: list[str] = field(default_factory=list)
    note: str = ""


def pid_after(seconds: float) -> int:
    """A process pool's task: its worker's pid, after ``seconds`` (tests/test_faults.py)."""
    time.sleep(seconds)
    return os.getpid()


def _prepare(folder: Path) -> None:
    (folder / "out").mkdir(parents=True, exist_ok=True)
    (folder / "out" / SENTINEL).write_text(SENTINEL_TEXT)
    (folder / "fi.toml").write_text(SWEEP)
    shutil.copy(ROOT / "examples" / "cases" / "tiny.json", folder / "case.json")
    _tiny_inputs(folder / "in")


def _tiny_inputs(folder: Path) -> None:
    """The tiny case's inputs (N 10, K 3, H 64, bf16 tokens, fp32 probs) as .npy files."""
    import ml_dtypes
    import numpy as np

    rng = np.random.default_rng(0)
    folder.mkdir()
    for k, v in {
        "unpermuted_tokens_grad": rng.uniform(-2, 2, (10, 64)).astype(ml_dtypes.bfloat16),
        "sorted_indices": rng.permutation(30).astype(np.int32),
        "permuted_tokens": rng.uniform(-2, 2, (30, 64)).astype(ml_dtypes.bfloat16),
        "probs": rng.uniform(0.01, 0.99, (10, 3)).astype(np.float32),
    }.items():
        np.save(folder / f"{k}.npy", v)


def _env() -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONIOENCODING="utf-8")
    env.pop("AICORE_SIM_DEBUG", None)
    return env


def _limits(fault: str, drop_to: int | None):
    def pre() -> None:
        os.setsid()
        # no test run may eat the machine's memory
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
        if fault == "RLIMIT_FSIZE":
            resource.setrlimit(resource.RLIMIT_FSIZE, (3000, 3000))
        elif fault == "RLIMIT_CPU":
            resource.setrlimit(resource.RLIMIT_CPU, (1, 3))
        elif fault == "RLIMIT_AS":
            resource.setrlimit(resource.RLIMIT_AS, (700 << 20, 700 << 20))
        if drop_to is not None:
            os.setgid(drop_to)
            os.setuid(drop_to)
    return pre


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(x) for x in text.split()]


def _is_tracker(pid: int) -> bool:
    try:
        return b"resource_tracker import main" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def _group_state(pid: int) -> str:
    """The command's process and its descendants: pid, state and kernel wait channel."""
    out, todo = [], [pid]
    while todo:
        q = todo.pop()
        try:
            stat = Path(f"/proc/{q}/stat").read_text().rsplit(")", 1)[1].split()[0]
            wchan = Path(f"/proc/{q}/wchan").read_text()
        except OSError:
            continue
        out.append(f"{q} {stat} {wchan}")
        todo += _children(q)
    return ", ".join(out)


def _start(argv: list[str], folder: Path, fault: str, stdout, drop_to: int | None
           ) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "aicore_sim", *argv], cwd=folder,
                            env=_env(), stdin=subprocess.DEVNULL, stdout=stdout,
                            stderr=subprocess.PIPE, preexec_fn=_limits(fault, drop_to))


def inject(command: str, fault: str, moment: float, folder: Path, timeout: float = 90
           ) -> Outcome:
    """Run ``command`` in ``folder`` (made fresh) with ``fault`` at ``moment`` s; the outcome
    with its broken invariants."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    _prepare(folder)
    argv, target, kind = COMMANDS[command]
    if fault == "read-only" and target is not None:
        target_parent = (folder / target).parent
        assert target_parent == folder / "out", target
    drop_to = None
    mounted = False
    if fault == "read-only":
        mounted = _read_only(folder / "out")
    stdout_spec: object = subprocess.PIPE
    r_fd = w_fd = None
    if fault == "stdout-closed":
        r_fd, w_fd = os.pipe()
        os.close(r_fd)  # nobody reads: every write is a broken pipe
        stdout_spec = w_fd
    t0 = time.monotonic()
    p = _start(argv, folder, fault, stdout_spec, drop_to)
    if w_fd is not None:
        os.close(w_fd)
    second = None
    note = ""
    pgid = p.pid
    try:
        if fault in ("SIGINT", "SIGTERM", "SIGQUIT", "SIGKILL-parent", "SIGKILL-worker",
                     "second-writer", "input-truncated", "SIGKILL-tracker"):
            try:
                p.wait(timeout=moment)
            except subprocess.TimeoutExpired:
                if fault == "SIGKILL-worker":  # a worker: not multiprocessing's tracker
                    kids = [k for k in _children(p.pid) if not _is_tracker(k)]
                    grand = [g for k in kids for g in _children(k)]
                    victims = kids or grand
                    if victims:
                        os.kill(victims[-1], signal.SIGKILL)
                        note = f"killed worker {victims[-1]}"
                    else:
                        note = "no worker at that moment"
                elif fault == "SIGKILL-tracker":  # multiprocessing's (a sweep's pool)
                    trackers = [k for k in _children(p.pid) if _is_tracker(k)]
                    for k in trackers:
                        os.kill(k, signal.SIGKILL)
                    note = (f"killed resource tracker {trackers[0]}" if trackers else
                            "no resource tracker at that moment")
                elif fault == "second-writer":
                    second = _start(argv, folder, fault, subprocess.PIPE, None)
                elif fault == "input-truncated":
                    for f in ("case.json", "fi.toml", *(f"in/{p.name}" for p in
                                                         (folder / "in").iterdir())):
                        with open(folder / f, "r+b") as fh:
                            fh.truncate(7)
                    note = "inputs truncated"
                else:
                    name = "SIGKILL" if fault == "SIGKILL-parent" else fault
                    os.kill(p.pid, getattr(signal, name))
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        left = _group_state(p.pid)  # what was alive, and waiting where, for the report
        os.killpg(pgid, signal.SIGKILL)
        out, err = p.communicate()
        return Outcome(command, fault, moment, p.returncode, err.decode(errors="replace"),
                       "", time.monotonic() - t0, ["hung: did not end within the timeout"],
                       note=f"{note}; alive then: {left}")
    wall = time.monotonic() - t0
    o = Outcome(command, fault, moment, p.returncode, err.decode(errors="replace"),
                (out or b"").decode(errors="replace"), wall, note=note)
    if second is not None:
        o2, e2 = second.communicate(timeout=timeout)
        o.note += f"; second writer exit {second.returncode}: {e2.decode().strip()[-200:]}"
        o.broken += _check_second(o, second.returncode, e2.decode(errors="replace"), kind,
                                  folder)
    deadline = time.monotonic() + 5
    while _group_alive(pgid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if _group_alive(pgid):
        o.broken.append("a process of the command's group is left")
        os.killpg(pgid, signal.SIGKILL)
    o.broken += check(o, folder, target, kind)
    if fault == "SIGKILL-parent" and o.code == -9:
        o.broken += _next_run(o, argv, folder, timeout)
    if fault == "read-only":
        if mounted:
            subprocess.run(["umount", str(folder / "out")], check=False)
        else:
            os.chmod(folder / "out", 0o755)
    return o


def _read_only(out: Path) -> bool:
    """Make folder ``out`` (holding the user's file) read-only; True when done with a
    read-only mount (root writes through permissions), False with permissions."""
    if os.geteuid() == 0 and shutil.which("mount"):
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(out)],
                              capture_output=True).returncode == 0
        if done:
            (out / SENTINEL).write_text(SENTINEL_TEXT)
            if subprocess.run(["mount", "-o", "remount,ro", str(out)],
                              capture_output=True).returncode == 0:
                return True
            subprocess.run(["umount", str(out)], check=False)
    os.chmod(out, 0o555)
    return False


def _allowed(fault: str, code: int) -> bool:
    if fault == "SIGKILL-parent":
        return code in (-9, 0, 1, 2)
    sig = {"SIGINT": 130, "SIGTERM": 143, "SIGQUIT": 131}.get(fault)
    return code in (0, 1, 2) or code == sig


def _hidden(folder: Path) -> list[str]:
    """The hidden staging (``.tmp``) and lock files under ``folder``."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob(".*")
                  if p.name.endswith((".tmp", ".lock")))


def _next_run(o: Outcome, argv: list[str], folder: Path, timeout: float) -> list[str]:
    """Run the SIGKILLed command again on the same outputs; the broken invariants: what the
    killed one left must be gone once this one has ended."""
    before = _hidden(folder)
    p = _start(argv, folder, "none", subprocess.PIPE, None)
    try:
        _, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return ["the next run hung"]
    o.note += f"; left {before}, next run exit {p.returncode}"
    bad = []
    if "Traceback" in err.decode(errors="replace"):
        bad.append("the next run: a traceback on stderr")
    if p.returncode not in (0, 1, 2):
        bad.append(f"the next run: exit {p.returncode}")
    deadline = time.monotonic() + 5
    while _group_alive(p.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = _hidden(folder)
    if left:
        bad.append(f"hidden files left after the next run: {left}")
    return bad


def _check_second(o: Outcome, code2: int, err2: str, kind: str, folder: Path) -> list[str]:
    bad = []
    if "Traceback" in err2:
        bad.append("second writer: a traceback")
    # a second sweep on a folder holding results is refused even after the first ended (a
    # search may run again on its own folder: it reuses its rows)
    if o.command == "sweep" and o.code == 0 and code2 == 0:
        bad.append("two writers of one sweep folder both exited 0")
    if code2 not in (0, 1, 2):
        bad.append(f"second writer: exit {code2}")
    return bad


def check(o: Outcome, folder: Path, target: str | None, kind: str) -> list[str]:
    """The broken invariants of outcome ``o`` in ``folder``."""
    bad = []
    if not _allowed(o.fault, o.code):
        bad.append(f"exit {o.code} not in the contract's set for {o.fault}")
    if "Traceback" in o.stderr:
        bad.append("a traceback on stderr")
    lines = [x for x in o.stderr.splitlines() if x.strip()]
    said = lines and lines[-1].startswith("aicore-sim: ") or (  # a failed check: on stdout
        o.code == 1 and ("check failed: " in o.stdout or (  # verify: FAIL lines and tally
            "\nFAIL " in f"\n{o.stdout}" and " cases passed, " in o.stdout)))
    if o.code not in (0, -9) and not said:
        bad.append(f"no closing 'aicore-sim:' line on stderr: {lines[-1:]}")
    own = [x for x in lines if x.startswith("aicore-sim: ")]
    if len(own) > 1:
        bad.append(f"{len(own)} 'aicore-sim:' lines on stderr")
    sentinel = folder / "out" / SENTINEL
    if not sentinel.exists() or sentinel.read_text() != SENTINEL_TEXT:
        bad.append("the user's file was changed")
    if o.code != -9:  # after a SIGKILL: checked once the next run has ended (_next_run)
        left = _hidden(folder)
        if left:
            bad.append(f"hidden files left: {left}")
    if target is not None:
        t = folder / target
        if kind == "folder":
            if o.code == 0 and not (t / "summary.json").is_file():
                bad.append("exit 0 without the run folder")
            if o.code != 0 and t.exists() and not (t / "summary.json").is_file():
                bad.append("a half-written run folder")
        elif kind == "report":
            js = Path(f"{t}.json")
            machine = "error: environment: " in o.stderr  # the machine failed: nothing kept
            if (o.code == 0 or (o.code == 1 and not machine)) and not js.is_file():
                bad.append(f"exit {o.code} without the report")
            if js.is_file():
                try:
                    json.loads(js.read_text())
                except ValueError:
                    bad.append("a half-written report")
        elif kind == "sweep":
            rows = t / "results.jsonl"
            if rows.is_file():
                keys = [json.loads(x)["key"] for x in rows.read_text().splitlines()
                        if x.strip().endswith("}")]
                if len(keys) != len(set(keys)):
                    bad.append(f"{len(keys)} rows for {len(set(keys))} points")
            if o.code == 0 and o.command == "sweep":
                n = len(keys) if rows.is_file() else 0
                if n != SWEEP_POINTS:
                    bad.append(f"exit 0 with {n} of {SWEEP_POINTS} rows")
    return bad


__all__ = ["COMMANDS", "FAULTS", "MOMENTS", "Outcome", "check", "inject", "pid_after"]

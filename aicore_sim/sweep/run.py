"""Executor-agnostic sweep runner, result writer and resume (step: sweep execution).

One code path for every back end: :func:`run_points` takes any
``concurrent.futures.Executor`` - a ``ProcessPoolExecutor`` with an explicit start method
(``spawn``), a Dask ``client.get_executor(pure=False)`` (``pure=False`` so Dask never merges
identical submissions), or the in-process :class:`SerialExecutor` - and submits one task per
batch of points (:func:`~aicore_sim.sweep.points.iter_batches`: the chunking), the points
streamed: built and planned a window at a time, at most :data:`INFLIGHT` batches unfinished,
so a sweep of 100000 points never holds them all. Rows are appended as
batches finish to ``results.jsonl`` and ``results.csv`` with a flush and an fsync per row, so a
killed sweep loses no finished row; ``--resume`` skips every point whose key is already in
``results.jsonl`` (a torn last line is dropped first).
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import (
    FIRST_COMPLETED,
    Executor,
    Future,
    ProcessPoolExecutor,
    as_completed,
    wait,
)
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from aicore_sim.sweep.points import Point, count_points, iter_batches, iter_points, spec_hash
from aicore_sim.sweep.rows import (
    RESULTS_CSV,
    RESULTS_JSONL,
    SPEC_JSON,
    VERIFY_JSONL,
    ResultWriter,
    Tally,
    append_jsonl,
    atomic_write,
    iter_rows,
    read_rows,
    tally_rows,
)
from aicore_sim.sweep.spec import SpecError, SweepSpec
from aicore_sim.sweep.worker import (
    columns,
    ping,
    record_grouper,
    run_batch,
    verify_point,
    worker_init,
)
from aicore_sim.util.background import end_pool, steady_resource_tracker

OWN_FILES = frozenset({RESULTS_JSONL, RESULTS_CSV, VERIFY_JSONL, SPEC_JSON, "report.md",
                       "heatmap.png", "pareto.png", "bound_by.png"})
"""What a sweep writes into its folder; anything else there is the user's and is kept."""

__all__ = [
    "RESULTS_CSV",
    "RESULTS_JSONL",
    "SPEC_JSON",
    "VERIFY_JSONL",
    "ResultWriter",
    "SerialExecutor",
    "best_rows",
    "check_out",
    "make_executor",
    "rank",
    "read_rows",
    "run_points",
    "run_sweep",
    "verify_rows",
]


# --------------------------------------------------------------------------------------------
# Executors
# --------------------------------------------------------------------------------------------


class SerialExecutor(Executor):
    """Runs each task in the calling process at submit time (``--workers 0``; debugging)."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        f: Future = Future()
        try:
            f.set_result(fn(*args, **kwargs))
        except BaseException as e:  # noqa: BLE001 - delivered through the future
            f.set_exception(e)
        return f


@contextlib.contextmanager
def make_executor(workers: int = 2, scheduler: str | None = None, op: str | None = None,
                  check: Callable[[str], Any] | None = None) -> Iterator[Executor]:
    """An executor for a sweep, closed on exit.

    ``scheduler`` ``None``: a local ``ProcessPoolExecutor`` of ``workers`` processes (start
    method ``spawn``; ``workers`` 0 runs in this process). ``"local:N"``: a new Dask
    ``LocalCluster`` of N single-threaded worker processes. Anything else: the address of an
    existing Dask scheduler, whose workers must be able to import this package (checked with one
    task, ``check(op)``, default :func:`~aicore_sim.sweep.worker.ping`: the op can be swept).
    """
    if scheduler is None:
        if workers <= 0:
            yield SerialExecutor()
            return
        ctx = multiprocessing.get_context("spawn")
        # A stopped sweep ends its workers at once; multiprocessing's resource tracker (a process
        # of its own, started with this interpreter's -W options) would then warn, on two lines
        # of stderr after the sweep's own, about the pool's semaphores it cleans up: expected,
        # so not shown.
        quiet = "ignore::UserWarning:multiprocessing.resource_tracker"
        if quiet not in sys.warnoptions:
            sys.warnoptions.append(quiet)
        steady_resource_tracker()  # a killed tracker is replaced and told the pool's names
        ex = ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=worker_init)
        try:
            yield ex
        except BaseException:
            # stopped (Ctrl-C, SIGTERM) or failed: the workers ignore the signals and would
            # finish their batches first; end them now, nothing of theirs is kept
            end_pool(ex)
            raise
        if getattr(ex, "_broken", False):
            # a worker died (its batch's rows are errors): the pool ends the others with
            # SIGTERM, which they ignore, and would wait for them for ever if one holds the
            # task queue's lock - end them now
            end_pool(ex)
        else:
            ex.shutdown(wait=True)
        return
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise SpecError("--scheduler needs dask[distributed] (pip install 'dask[distributed]')"
                        ) from None
    cluster = None
    if scheduler.startswith("local"):
        n = int(scheduler.partition(":")[2] or workers or 1)
        cluster = _quiet_cluster(LocalCluster, n)
        client = Client(cluster)
    else:
        client = Client(scheduler, timeout="20s")
    try:
        ex = client.get_executor(pure=False)
        try:
            from aicore_sim.sweep.ops import default_op_name

            ex.submit(check or ping, op or default_op_name()).result(timeout=120)
        except Exception as e:  # noqa: BLE001
            raise SpecError(f"--scheduler {scheduler}: workers cannot import the simulator "
                            f"({type(e).__name__}: {e}); install it on every worker") from None
        yield ex
    except BaseException:
        import logging  # stopped: the cluster's closing chatter is not the user's news

        for name in ("distributed", "tornado", "asyncio"):
            logging.getLogger(name).setLevel(logging.CRITICAL + 1)
        raise
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


_IGNORE_SIGINT = ("import logging, signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                  "logging.getLogger('distributed.worker.state_machine').setLevel("
                  "logging.ERROR)\n")
"""A Dask preload (the text of a module, run in each worker process as it starts): Ctrl-C
ignored, and the warnings about the tasks cancelled when the command stops not shown."""


def _quiet_cluster(local_cluster: Any, n: int) -> Any:
    """A Dask ``LocalCluster`` of ``n`` single-threaded worker processes that leave Ctrl-C to
    this command: each ignores SIGINT (a preload), so a Ctrl-C at the terminal, which reaches
    the whole process group, does not print every worker's traceback; this process closes
    them."""
    return local_cluster(n_workers=n, threads_per_worker=1, processes=True,
                         dashboard_address=None, preload=[_IGNORE_SIGINT])


# --------------------------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------------------------


def _progress(total: int, desc: str, enabled: bool) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="pt", disable=not enabled, dynamic_ncols=True,
                smoothing=0.1)


INFLIGHT = 256
"""Batches submitted to an executor and not yet finished, at most: the points further on are
built and planned only as batches finish (a pool's queue stays full; memory stays bounded)."""


def run_points(points: Iterable[Point], executor: Executor, writer: ResultWriter | None = None,
               progress: bool = True, max_batch: int = 32, desc: str = "sweep",
               total: int | None = None, tally: Tally | None = None, keep: bool = True
               ) -> list[dict[str, Any]]:
    """Run ``points`` (any iterable: consumed as batches are submitted, :data:`INFLIGHT` at
    most unfinished) on ``executor``; write each row as its batch finishes and count it in
    ``tally``; return the rows (none with ``keep`` false: a long sweep's rows are on disk).

    ``total`` is how many points there are (for the progress bar; ``len(points)`` when
    omitted). A batch whose task fails as a whole (e.g. a worker process killed) becomes
    ``error`` rows for its points; the sweep goes on.
    """
    rows: list[dict[str, Any]] = []
    counts = {"ok": 0, "infeasible": 0, "error": 0}
    if total is None:
        total = len(points)  # type: ignore[arg-type]
    bar = _progress(total, desc, progress)
    futures: dict[Future, list[Point]] = {}

    def take(fut: Future) -> None:
        b = futures.pop(fut)
        try:
            got = fut.result()
        except Exception as e:  # noqa: BLE001 - the task itself failed
            from aicore_sim.sweep.worker import _base_row

            got = []
            for p in b:
                r = _base_row(p)
                r.update(status="error", error=f"task failed: {type(e).__name__}: {e}")
                got.append(r)
        for r in got:
            if writer is not None:
                writer.write(r)
            if tally is not None:
                tally.add(r)
            if keep:
                rows.append(r)
            counts[r["status"]] = counts.get(r["status"], 0) + 1
        bar.update(len(got))
        bar.set_postfix(ok=counts["ok"], infeasible=counts["infeasible"],
                        failed=counts["error"], refresh=False)

    serial = isinstance(executor, SerialExecutor)  # done at submit: write its rows at once
    try:
        for b in iter_batches(points, max_batch, record_grouper()):
            fut = executor.submit(run_batch, b)
            futures[fut] = b
            if serial:
                take(fut)
            while len(futures) >= INFLIGHT:
                for f in wait(futures, return_when=FIRST_COMPLETED).done:
                    take(f)
        for fut in as_completed(list(futures)):
            take(fut)
    except BaseException:
        for f in futures:
            f.cancel()
        raise
    finally:
        bar.close()
    return rows


def rank(r: dict[str, Any]) -> tuple:
    """Sort key of ok rows: fastest first; on a tie the unchanged upstream tiling wins."""
    up = r.get("strategy") == "upstream" and not r.get("overrides")
    return (r["makespan_cycles"], not up, r["key"])


def best_rows(rows: list[dict[str, Any]], top: int = 1) -> list[dict[str, Any]]:
    """The ``top`` fastest ok rows of every group."""
    by: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        if r.get("status") == "ok":
            by.setdefault(r.get("group") or "", []).append(r)
    out = []
    for g in by.values():
        out.extend(sorted(g, key=rank)[:top])
    return out


def verify_rows(rows: list[dict[str, Any]], executor: Executor, out: Path | None = None,
                progress: bool = True) -> list[dict[str, Any]]:
    """Re-run the points of ``rows`` with numerics and check them against the golden."""
    pts = [Point(r["key"], r["_op"], r["_mode"], r["_seed"], r["axes"]) for r in rows]
    futs = {executor.submit(verify_point, p): p for p in pts}
    res = []
    bar = _progress(len(pts), "verify", progress)
    for f in as_completed(futs):
        try:
            v = f.result()
        except Exception as e:  # noqa: BLE001
            v = {"key": futs[f].key, "status": "error", "detail": str(e)}
        if out is not None:
            append_jsonl(out / VERIFY_JSONL, v)
        res.append(v)
        bar.update(1)
    bar.close()
    return res


@dataclass
class SweepOutcome:
    """What a sweep did: counts, rows of this run, verification results, report path.

    ``ran`` counts the rows of this run and ``tally`` every point's last row in the folder
    (this run's and those a ``--resume`` kept); ``rows`` and ``final`` are those rows
    themselves, kept only when :func:`run_sweep` is asked to (``keep_rows``)."""

    total: int
    skipped: int
    rows: list[dict[str, Any]] = field(default_factory=list)
    verified: list[dict[str, Any]] = field(default_factory=list)
    report: Path | None = None
    wall_s: float = 0.0
    final: list[dict[str, Any]] = field(default_factory=list)  # every point's last row
    ran: Tally = field(default_factory=Tally)
    tally: Tally = field(default_factory=Tally)


def check_out(spec: SweepSpec, out: Path, resume: bool) -> dict[str, Any]:
    """The points already in ``out`` (key -> the status of its last row, in the order of
    :func:`read_rows`) after the checks that the folder is this sweep's to write (SpecError
    otherwise, before anything is written): no file a sweep does not write, no results
    without ``--resume``, and with it the same spec (hash in ``spec.json``)."""
    if out.exists() and not out.is_dir():
        raise SpecError(f"--out {out}: exists and is not a folder")
    names = {p.name for p in out.iterdir() if not p.name.startswith(".")} if out.is_dir() else set()
    foreign = sorted(names - OWN_FILES)
    if foreign or (names and SPEC_JSON not in names):
        what = ", ".join(foreign or sorted(names))
        raise SpecError(f"--out {out}: holds files a sweep did not write ({what}); a sweep "
                        "writes only into an empty folder or its own: choose another --out")
    existing: dict[str, Any] = {}
    for r in iter_rows(out):  # the rows themselves are not kept: a sweep may hold 100000
        existing[r["key"]] = r.get("status")
    if existing and not resume:
        raise SpecError(f"--out {out}: already holds {len(existing)} results; pass --resume to "
                        "continue that sweep or choose another folder")
    if resume and (out / SPEC_JSON).exists():
        try:
            old = json.loads((out / SPEC_JSON).read_text()).get("spec_hash")
        except (ValueError, AttributeError):
            old = None
        new = spec_hash(spec)
        if old != new:
            raise SpecError(f"--resume: {out} holds the results of another sweep spec or of "
                            f"another simulator build (spec hash {old or 'missing'}, this "
                            f"spec here {new}); resuming would mix them: choose another --out")
    return existing


def best_rows_in(out: Path, top: int = 1) -> list[dict[str, Any]]:
    """:func:`best_rows` of :func:`read_rows` ``(out)``, holding only each point's group and
    rank, and then the rows chosen."""
    last: dict[str, tuple | None] = {}  # key -> (group, rank) of its last row when ok
    for r in iter_rows(out):
        last[r["key"]] = (r.get("group") or "", rank(r)) if r.get("status") == "ok" else None
    by: dict[str, list[tuple]] = {}
    for v in last.values():
        if v is not None:
            by.setdefault(v[0], []).append(v[1])
    order = [rk[-1] for g in by.values() for rk in sorted(g)[:top]]  # rank ends with the key
    want = set(order)
    rows = {r["key"]: r for r in iter_rows(out) if r["key"] in want}
    return [rows[k] for k in order]


def run_sweep(spec: SweepSpec, out: str | Path, executor: Executor, *, resume: bool = False,
              verify: bool = False, progress: bool = True, report: bool = True,
              max_batch: int = 32, keep_rows: bool = True) -> SweepOutcome:
    """Run every point of ``spec`` not yet in ``out`` (with ``resume``), then verify, report.
    Without ``keep_rows`` the rows are only counted (:class:`SweepOutcome`)."""
    t0 = time.perf_counter()
    out = Path(out)
    total = count_points(spec)
    done = {k for k, status in check_out(spec, out, resume).items()
            if status != "error"}  # errors run again
    todo = (p for p in iter_points(spec) if p.key not in done)  # built as batches are sent
    out.mkdir(parents=True, exist_ok=True)
    atomic_write(out / SPEC_JSON, json.dumps({**asdict(spec), "spec_hash": spec_hash(spec)},
                                             indent=1) + "\n")
    # every row in ``out`` is one of this spec's points (check_out: the folder is empty or,
    # with --resume, holds the rows of this very spec and build), so ``done`` are points
    ran = Tally()
    with ResultWriter(out, columns(spec.op)) as w:
        rows = run_points(todo, executor, w, progress, max_batch, total=total - len(done),
                          tally=ran, keep=keep_rows)
    outcome = SweepOutcome(total, total - ran.n, rows, ran=ran, tally=tally_rows(out))
    if keep_rows:
        outcome.final = read_rows(out)
    if verify:
        already = {v["key"] for v in iter_rows(out / VERIFY_JSONL)}
        best = [dict(r, _op=spec.op, _mode=spec.mode, _seed=spec.seed)
                for r in best_rows_in(out, spec.verify_top) if r["key"] not in already]
        outcome.verified = verify_rows(best, executor, out, progress)
    if report:
        from aicore_sim.sweep.report import write_report

        outcome.report = write_report(out, heatmap=spec.heatmap or None, title=spec.name)
    outcome.wall_s = time.perf_counter() - t0
    return outcome

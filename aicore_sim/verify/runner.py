"""Cases -> results: gather what ``aicore-sim verify`` runs, run it, compare, report.

Step of the flow: drives the whole pipeline once per case - inputs, infershape (which outputs,
which shape and dtype), the operator API (tiling + launch), the expected outputs (built-in
golden, the ATK executor's expectation, or user files), :func:`~.compare.compare` per output.

Expected-output files (``--expected DIR``): ``DIR/<case>/<output>.npy`` or ``.bin`` (raw
little-endian elements in C order, as msOpST and upstream ``gen_data`` scripts write them;
dtype and shape come from the case through the operator's infershape). With a single case,
``DIR/<output>.{npy,bin}`` is accepted too. All files are checked before anything runs;
a missing file or a wrong size, shape or dtype is a :class:`~aicore_sim.verify.VerifyError`
(exit 2) naming the file and the rule.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from itertools import chain, islice
from pathlib import Path
from typing import Any

import numpy as np

from aicore_sim.sim import dtypes
from aicore_sim.sim.platform import Platform, load_platform
from aicore_sim.util.claim import claim
from aicore_sim.util.staging import safe_name, unique_stamp
from aicore_sim.verify import VerifyError
from aicore_sim.verify.report import CaseResult, format_case, summary_of, write_reports
from aicore_sim.verify.standards import Standard, parse_standard

__all__ = ["Cases", "VerifyCase", "cases_from_args", "run_case", "run_cases", "verify_main"]

Spec = tuple[tuple[int, ...], np.dtype]


@dataclass
class VerifyCase:
    """One operator call to verify, with lazily built inputs (``model``: its OpModel)."""

    model: Any
    name: str
    platform: Platform
    input_specs: dict[str, Spec | None]
    make_inputs: Callable[[], dict[str, np.ndarray | None]]
    attrs: dict[str, Any] = field(default_factory=dict)
    source: str = ""
    standard: Standard | None = None  # the case's own standard (e.g. an ATK record's md5)
    expected: Callable[[dict[str, np.ndarray | None]], dict[str, np.ndarray | None]] | None = None
    mode: str | None = None
    kernel_source: str | None = None  # the op's own C++ kernel in place of its port
    op_source: str | None = None  # the op's source folder: its host tiling C++ too
    tiling: dict[str, int] | None = None  # tiling fields set (the op's tiling space plans)
    tiling_case: Any = None  # what the tiling space plans for: the op's case, or its file

    def output_specs(self) -> dict[str, Spec | None]:
        """The operator's outputs (infershape) from the input shapes and dtypes."""
        try:
            return self.model.infer_outputs(self.input_specs, self.attrs)
        except ValueError as e:
            raise VerifyError(f"case {self.name}: infershape failed: {e}") from None


# --------------------------------------------------------------------------------------------
# Building cases
# --------------------------------------------------------------------------------------------


def _from_case(model: Any, case: Any, platform: Platform, source: str,
               seed: int | None = None, mode: str | None = None) -> VerifyCase:
    """A bundled-style case of ``model`` (its ``case_specs`` / ``case_inputs``) as a
    VerifyCase."""
    specs, attrs = model.case_specs(case)
    return VerifyCase(model, case.name, platform, specs, lambda: model.case_inputs(case, seed),
                      {k: v for k, v in attrs.items() if v is not None}, source, mode=mode,
                      tiling_case=case)


def _from_casefile(cf: Any, source: str, seed: int | None) -> VerifyCase:
    from aicore_sim.ops.casefile import CaseFileError, make_data

    if cf.positional_attrs:
        raise CaseFileError(f"{source}: attrs: a positional list is only accepted by "
                            "'aicore-sim tiling'")
    specs = {k: None if s is None else (s.shape, s.dtype) for k, s in cf.inputs.items()}
    mode = cf.mode if cf.mode in ("functional", "timed") else None
    return VerifyCase(cf.op.model, cf.name, cf.platform, specs, lambda: make_data(cf, seed),
                      dict(cf.attrs), source, mode=mode, tiling=cf.tiling, tiling_case=source)


def _from_matrix_case(model: Any, mc: Any, source: str, mode: str | None) -> VerifyCase:
    return _from_case(model, model.matrix_case(mc), mc.platform, source, mode=mode)


def _atk_model(name: str) -> Any:
    """The registered op whose ``aclnn_name`` is ``name`` (None: none)."""
    from aicore_sim.ops.registry import ops

    return next((m for m in ops() if m.aclnn_name == name), None)


def _atk_cases(path: Path, sel: str | None, platform: Platform, first: int | None = None,
               max_cases: int | None = None) -> Callable[[], Iterator[VerifyCase]]:
    """The records ``sel`` picks (at most ``first`` of them; more than ``max_cases`` refused
    before a case is built) as cases: a function giving them one at a time (the file is read
    once, here)."""
    from aicore_sim.verify.atk import load_atk, select_records

    records = load_atk(path)
    picked = select_records(len(records), sel)[:first]
    if max_cases is not None:
        _check_count(len(picked), max_cases)

    def build() -> Iterator[VerifyCase]:
        models: dict[str, Any] = {}
        for i in picked:
            rec = records[i]
            if rec.aclnn_name not in models:
                models[rec.aclnn_name] = _atk_model(rec.aclnn_name)
            model = models[rec.aclnn_name]
            if model is None:
                raise VerifyError(f"{path.name}: record {i}: aclnn_name {rec.aclnn_name!r} has "
                                  f"no op model (rule atk_op)")
            try:
                call = model.atk_call(rec.tensors, rec.attrs, seed=i)
            except ValueError as e:
                raise VerifyError(f"{path.name}: record {i}: {e}") from None
            acc = rec.acc.lower()
            std = parse_standard("bit-exact" if acc == "md5" else "threshold")
            name = f"atk{i:03d}-{call['label']}"
            yield VerifyCase(model, name, platform, call["input_specs"], call["make_inputs"],
                             dict(call["attrs"]), f"{path.name}#{i}", std, call["expected"])
    return build


MAX_CASES = 20_000
"""Cases one ``verify`` runs at most unless ``--max-cases`` raises it."""


def _check_count(n: int, limit: int) -> None:
    """Refuse, before a case is built, more cases than ``limit``."""
    if n > limit:
        raise VerifyError(f"{n} cases to verify, above the limit of {limit} (rule max_cases); "
                          "pick some with --limit / --records, or raise it with --max-cases N")


class Cases:
    """The cases of a ``verify`` command: counted and checked before the work, then built one
    at a time each time they are iterated - a matrix of 20000 cases is never a list of 20000
    cases (a case holds its input specs and makers: tens of KB for some ops).

    ``parts`` are functions each giving an iterator of cases (a case argument's, an ATK
    file's, the matrix's); the first ``limit`` of them all are the cases, each passed through
    ``adjust``. Building a case again gives the same case (names, seeds and specs are
    functions of the arguments). ``names``: the cases' names, in order."""

    def __init__(self, parts: list[Callable[[], Iterator[VerifyCase]]], names: list[str],
                 limit: int | None = None,
                 adjust: Callable[[VerifyCase], VerifyCase] | None = None) -> None:
        self._parts, self.names, self._limit = parts, names, limit
        self._adjust = adjust

    def __len__(self) -> int:
        return len(self.names)

    def __iter__(self) -> Iterator[VerifyCase]:
        it = islice(chain.from_iterable(part() for part in self._parts), len(self.names))
        return it if self._adjust is None else map(self._adjust, it)

    def adjusted(self, fn: Callable[[VerifyCase], VerifyCase]) -> Cases:
        """These cases, each passed through ``fn`` as it is built."""
        inner = self._adjust
        return Cases(self._parts, self.names, self._limit,
                     fn if inner is None else (lambda c: fn(inner(c))))


def cases_from_args(args: argparse.Namespace) -> tuple[Cases, dict[str, Any]]:
    """The cases named on the command line (built once here, to check them, and again when
    iterated), and what the matrix sets (mode, standard)."""
    from aicore_sim.ops.casefile import load_case
    from aicore_sim.verify.atk import is_atk_file

    plat_override = None
    if args.platform:
        try:
            plat_override = load_platform(args.platform)
        except (ValueError, KeyError, TypeError) as e:
            raise VerifyError(f"--platform {args.platform}: {e.args[0] if e.args else e} "
                              f"(rule platform)") from None
    default_plat = plat_override or load_platform("ascend910b1")
    parts: list[Callable[[], Iterator[VerifyCase]]] = []
    names: list[str] = []  # of every case built (the first --limit of them are run)
    atk = False  # a case of an ATK file was built

    def add(part: Callable[[], Iterator[VerifyCase]]) -> None:
        nonlocal atk
        for c in part():  # built once to check it (a bad record, case file...): exit 2 now
            names.append(c.name)
            atk = atk or bool(c.source.count("#"))
        parts.append(part)

    meta: dict[str, Any] = {}
    for spec in args.cases:
        p = Path(spec)
        if p.is_file() and is_atk_file(p):
            add(_atk_cases(p, args.records, default_plat, args.limit,
                           getattr(args, "max_cases", None) or MAX_CASES))
        elif p.is_file() or spec.endswith(".json"):
            vc = _from_casefile(load_case(p), str(p), args.seed)
            if plat_override is not None:
                vc.platform = plat_override
            add(lambda vc=vc: iter((vc,)))  # one case: kept as built
        else:
            from aicore_sim.ops.registry import UnknownOpError, find_case

            try:
                model, case = find_case(spec, "CASE")
            except UnknownOpError:
                raise VerifyError(f"CASE {spec}: not a file and not a bundled case name "
                                  f"('aicore-sim cases' lists them) (rule case)") from None
            vc = _from_case(model, case, default_plat, "bundled", args.seed)
            add(lambda vc=vc: iter((vc,)))
    limit = getattr(args, "max_cases", None) or MAX_CASES
    if args.matrix:
        from aicore_sim.ops.registry import get_op
        from aicore_sim.verify.matrix import iter_cases, load_matrix

        m = load_matrix(args.matrix)
        meta = {"matrix": m.name, "matrix_mode": m.mode, "matrix_standard": m.standard}
        model = get_op(m.op)
        total = len(names) + len(m)  # counted, not built: a product of the axes' lengths
        _check_count(total if args.limit is None else min(total, args.limit), limit)
        take = len(m) if args.limit is None else max(0, args.limit - len(names))
        add(lambda: (_from_matrix_case(model, mc, f"matrix {m.source}", m.mode)
                     for mc in islice(iter_cases(m), take)))
    _check_count(len(names) if args.limit is None else min(len(names), args.limit), limit)
    if args.records and not atk:
        raise VerifyError("--records applies to ATK json files only, and none was given "
                          "(rule records)")
    if args.limit is not None:
        if args.limit < 1:
            raise VerifyError(f"--limit {args.limit}: expected N >= 1 (rule limit)")
        del names[args.limit:]
    if not names:
        raise VerifyError("nothing to verify: give CASE arguments or --matrix (rule no_cases)")
    if len(set(names)) != len(names):
        from collections import Counter

        times = Counter(names)
        dup = next(n for n in names if times[n] > 1)
        raise VerifyError(f"case name {dup} appears twice; expected outputs are kept per case "
                          f"name (rule duplicate_case)")
    out = Cases(parts, names, args.limit)
    settings = dict(getattr(args, "tiling", None) or [])
    if settings:  # every case runs with these tiling fields set (they win over a case file's)
        out = out.adjusted(lambda c: replace(c, tiling={**(c.tiling or {}), **settings}))
    op_src = getattr(args, "op_src", None)
    if op_src:  # every case runs the op's own host tiling C++ and kernel
        from aicore_sim.cfront.host import HostSource

        host = HostSource.of(op_src)
        out = out.adjusted(lambda c: replace(c, op_source=str(host.op_dir),
                                             kernel_source=str(host.kernel_dir)))
    src = getattr(args, "kernel_src", None)
    if src:  # every case runs the op's own C++ kernel
        if not Path(src).exists():
            raise VerifyError(f"--kernel-src {src}: does not exist (rule kernel_source)")
        kernel = str(Path(src).resolve())
        out = out.adjusted(lambda c: replace(c, kernel_source=kernel))
    return out, meta


# --------------------------------------------------------------------------------------------
# Expected-output files
# --------------------------------------------------------------------------------------------


def _expected_file(folder: Path, case: str, output: str, single: bool) -> Path:
    tried = [folder / case / f"{output}{ext}" for ext in (".npy", ".bin")]
    if single:
        tried += [folder / f"{output}{ext}" for ext in (".npy", ".bin")]
    for f in tried:
        if f.is_file():
            if f.suffix == ".npy" and f.with_suffix(".bin").is_file():
                raise VerifyError(f"--expected: both {f} and {f.with_suffix('.bin')} exist: "
                                  "keep one (rule expected_ambiguous)")
            return f
    raise VerifyError(f"--expected: {tried[0]} (or .bin) missing: output {output} of case "
                      f"{case} (rule expected_missing)")


def _load_expected(f: Path, spec: Spec, case: str, output: str, header_only: bool = False
                   ) -> np.ndarray | None:
    shape, dt = spec
    want = f"{list(shape)} {dtypes.dtype_name(dt)}"
    if f.suffix == ".bin":
        nbytes = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
        size = f.stat().st_size
        if size != nbytes:
            raise VerifyError(f"{f}: {size} bytes, but output {output} of case {case} is {want} "
                              f"= {nbytes} bytes (rule bin_size: shape and dtype from the case)")
        return None if header_only else np.fromfile(f, dtype=dt).reshape(shape)
    try:
        arr = dtypes.read_npy(f, tuple(shape), dt)
    except OSError as e:
        raise VerifyError(f"{f}: cannot read ({e.strerror or e}) (rule npy_format)") from None
    except dtypes.NpyError as e:
        raise VerifyError(f"{f}: {e}, but output {output} of case {case} is {want} (rule "
                          f"{e.rule})") from None
    return None if header_only else np.array(arr)


def check_dump(cases: Iterable[VerifyCase], folder: Path) -> None:
    """No file ``--dump-golden`` would write exists already (checked before any run): a file
    the user has there is never replaced."""
    if folder.exists() and not folder.is_dir():
        raise VerifyError(f"--dump-golden {folder}: exists and is not a folder (rule dump_dir)")
    for c in cases:
        for out, spec in c.output_specs().items():
            f = folder / c.name / f"{out}.npy"
            if spec is not None and (f.exists() or f.is_symlink()):
                raise VerifyError(f"--dump-golden {folder}: {f} exists; verify never replaces "
                                  f"a file (remove it or choose another folder) (rule "
                                  f"dump_exists)")


def check_expected(cases: Iterable[VerifyCase], folder: Path) -> None:
    """Every expected file exists and fits its output's shape and dtype (before any run)."""
    if not folder.is_dir():
        raise VerifyError(f"--expected {folder}: not a folder (rule expected_dir)")
    single = len(cases) == 1  # type: ignore[arg-type]
    for c in cases:
        for out, spec in c.output_specs().items():
            if spec is not None:
                _load_expected(_expected_file(folder, c.name, out, single), spec, c.name, out,
                               header_only=True)


# --------------------------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------------------------


def _op_failure(e: Exception, vc: VerifyCase) -> str | None:
    """The case's error when ``e`` was raised in the operator's own code (a plug-in's inputs,
    tiling or golden: a frame in the op model's package, the innermost named), else None."""
    import traceback

    top = sys.modules.get(type(vc.model).__module__.partition(".")[0])
    roots = [Path(d).resolve() for d in getattr(top, "__path__", ())]
    theirs = [f for f in traceback.extract_tb(e.__traceback__)
              if any(r in Path(f.filename).resolve().parents for r in roots)]
    if not theirs:
        return None
    f = theirs[-1]
    return (f"{type(e).__name__} in op {vc.model.name} at {Path(f.filename).name}:{f.lineno} "
            f"({f.name}): {e}")


def run_case(vc: VerifyCase, mode: str, standard: Standard, expected_dir: Path | None = None,
             single: bool = False, dump_dir: Path | None = None) -> CaseResult:
    """Run one case and compare each of its outputs (errors of the run become ``error``, and
    so does an exception raised in the operator's own code: a plug-in's failure fails its case,
    not the command)."""
    try:
        return _run_case(vc, mode, standard, expected_dir, single, dump_dir)
    except VerifyError:
        raise
    except Exception as e:  # noqa: BLE001 - the op's own code: its case's error
        msg = _op_failure(e, vc)
        if msg is None:
            raise
        return CaseResult(vc.name, vc.source, vc.platform.name, mode, error=msg)


def _host_tiling(vc: VerifyCase) -> Any:
    """The context a case's host tiling runs in: its ``op_source``'s C++, else the port's."""
    from contextlib import nullcontext

    if vc.op_source is None:
        return nullcontext()
    from aicore_sim.ascendc.host import using_host_source
    from aicore_sim.cfront.host import HostSource

    return using_host_source(HostSource.of(vc.op_source))


def _run_case(vc: VerifyCase, mode: str, standard: Standard, expected_dir: Path | None,
              single: bool, dump_dir: Path | None) -> CaseResult:
    from aicore_sim.ops.opmodel import call
    from aicore_sim.sim.errors import SimError

    res = CaseResult(vc.name, vc.source, vc.platform.name, mode,
                     expected_from="files" if expected_dir else
                     ("atk executor" if vc.expected else "golden"))
    t0 = time.perf_counter()
    specs = vc.output_specs()
    inputs = vc.make_inputs()
    t1 = time.perf_counter()
    try:
        launch: dict[str, Any] = {}
        if vc.kernel_source is not None:
            from aicore_sim.cfront import KernelSource

            launch["kernel_source"] = KernelSource.of(vc.kernel_source)
        with _host_tiling(vc):  # the port's, or the op's own C++ (--op-src)
            if vc.tiling:
                launch["tiling"] = _planned_tiling(vc)
            pc, result = call(vc.model, inputs, vc.attrs, vc.platform, mode=mode, **launch)
        res.hazards = len(result.run().hazards)
    except SimError as e:
        res.error = f"{type(e).__name__}: {e}"
        res.wall_s = {"inputs": t1 - t0, "total": time.perf_counter() - t0}
        return res
    t2 = time.perf_counter()
    if expected_dir is not None:
        want = {o: None if s is None else _load_expected(
            _expected_file(expected_dir, vc.name, o, single), s, vc.name, o)
            for o, s in specs.items()}
    elif vc.expected is not None:
        want = vc.expected(inputs)
    else:
        want = result.expected()
    t3 = time.perf_counter()
    if dump_dir is not None:
        (dump_dir / vc.name).mkdir(parents=True, exist_ok=True)
        for o, arr in want.items():
            if arr is not None and specs.get(o) is not None:
                with open(dump_dir / vc.name / f"{o}.npy", "xb") as fh:  # never replaces a file
                    np.save(fh, arr)
    res.outputs += result.compare(want, standard, specs)
    t4 = time.perf_counter()
    res.wall_s = {"inputs": t1 - t0, "run": t2 - t1, "expected": t3 - t2, "compare": t4 - t3,
                  "total": t4 - t0}
    return res


def _planned_tiling(vc: VerifyCase) -> tuple[Any, int | None, int]:
    """(tiling, key, block dim) the op's tiling space plans with ``vc.tiling`` set; a field or
    value it refuses is a :class:`~aicore_sim.sim.errors.InputError` naming the rule (the case is
    then not run)."""
    from aicore_sim.sim.errors import InputError

    space = vc.model.tiling_space
    if space is None:
        raise InputError(f"--tiling: op {vc.model.name} has no tiling space")
    try:
        case = (space.resolve_case(vc.tiling_case, {}) if isinstance(vc.tiling_case, str)
                else vc.tiling_case)
        space.check_knobs(vc.tiling, "upstream")
        plan = space.plan(case, vc.platform, "upstream", vc.tiling)
    except (ValueError, KeyError) as e:
        raise InputError(f"--tiling: {e.args[0] if e.args else e}") from None
    if plan.violations:
        rule, msg = plan.violations[0]
        raise InputError(f"--tiling: {msg} (rule {rule})")
    return plan.tiling, plan.tiling_key, plan.block_dim


# the jobs of a forked verify: (case, mode, standard, expected_dir, single, dump_dir); set
# before the pool forks, so the workers inherit the cases (their input makers are closures,
# which cannot be pickled) and receive only an index
_JOBS: list[tuple] = []
_RUNNER: Any = None  # shared with the workers: the pid of the worker that took case i


def _run_job(i: int) -> CaseResult:
    import os

    if _RUNNER is not None:
        _RUNNER[i] = os.getpid()
    return run_case(*_JOBS[i])


def _killed(vc: VerifyCase, mode: str, pid: int, exitcode: int | None) -> CaseResult:
    """The result of a case whose worker process died while running it."""
    import signal

    how = (f"killed by signal {-exitcode} ({signal.Signals(-exitcode).name})"
           if exitcode is not None and exitcode < 0 and -exitcode in signal.valid_signals()
           else f"ended with exit status {exitcode}")
    return CaseResult(vc.name, vc.source, vc.platform.name, mode, error=(
        f"WorkerDied: the worker process (pid {pid}) running this case was {how}"))


FORK_CHUNK = 1024
"""Jobs of a forked verify built and handed to one pool of workers at a time (the workers
inherit them when they fork): memory stays bounded, a pool is forked per chunk."""


def _forked(jobs: Iterable[tuple], workers: int):
    """The results of ``jobs`` (any iterable: :data:`FORK_CHUNK` built at a time) in order,
    run by ``workers`` forked processes (each case is independent: its inputs, run,
    expected outputs and comparison happen in one worker)."""
    it = iter(jobs)
    while chunk := list(islice(it, FORK_CHUNK)):
        yield from _forked_chunk(chunk, workers)


def _forked_chunk(jobs: list[tuple], workers: int):
    """The results of ``jobs`` in order, run by ``workers`` forked processes.

    A worker that dies (killed, out of memory) fails the case it was running, named with the
    signal; the cases not finished then run again in a new pool."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    from aicore_sim.util.background import end_pool, quiet_child

    global _JOBS, _RUNNER
    ctx = multiprocessing.get_context("fork")
    _JOBS = jobs
    _RUNNER = ctx.RawArray("q", len(jobs))  # shared memory the forked workers write
    done: dict[int, CaseResult] = {}
    pending = list(range(len(jobs)))
    nxt = 0
    try:
        while pending:
            ex = ProcessPoolExecutor(max_workers=min(workers, len(pending)),
                                     initializer=quiet_child, mp_context=ctx)
            try:
                futures = {i: ex.submit(_run_job, i) for i in pending}
                procs = dict(getattr(ex, "_processes", {}))
                broken = False
                for i in pending:
                    try:
                        done[i] = futures[i].result()
                    except BrokenProcessPool:
                        broken = True
                        break
                    while nxt in done:
                        yield done.pop(nxt)
                        nxt += 1
                if broken:
                    procs.update(getattr(ex, "_processes", {}) or {})
                    end_pool(ex)
                    before = len(done)
                    died: dict[int, tuple[int, int]] = {}
                    for i in pending:
                        f = futures[i]
                        if i in done or (f.done() and f.exception() is None):
                            done.setdefault(i, f.result())
                            continue
                        pid = _RUNNER[i]
                        p = procs.get(pid)
                        code = p.exitcode if p is not None else None
                        if pid and code not in (None, 0):  # its worker died running it
                            died[i] = (pid, code)
                    # a broken pool ends its other workers with SIGTERM: those cases run again
                    culprits = {i: d for i, d in died.items() if d[1] != -15} or died
                    for i, (pid, code) in culprits.items():
                        done[i] = _killed(jobs[i][0], jobs[i][1], pid, code)
                    if len(done) == before:  # no case named: the first unfinished one is
                        i = next(i for i in pending if i not in done)  # (never a loop)
                        done[i] = _killed(jobs[i][0], jobs[i][1], _RUNNER[i], None)
                    pending = [i for i in pending if i not in done and i >= nxt]
                    for i in pending:
                        _RUNNER[i] = 0
                    while nxt in done:
                        yield done.pop(nxt)
                        nxt += 1
                    continue
            except BaseException:
                end_pool(ex)  # stopped or a case raised: no worker outlives the command
                raise
            ex.shutdown(wait=True)
            pending = []
        while nxt in done:
            yield done.pop(nxt)
            nxt += 1
    finally:
        _JOBS, _RUNNER = [], None


# the cases a Dask worker rebuilt from a command's case arguments, by those arguments
_REMOTE_CASES: dict[str, list[VerifyCase]] = {}


def _remote_job(source: dict[str, Any], i: int, rest: tuple) -> CaseResult:
    """On a Dask worker: case ``i`` of the command's cases, rebuilt from its case arguments
    (``source``: the parsed options; a case's input maker is a closure, which cannot travel),
    run as :func:`run_case` runs it."""
    key = repr(sorted(source.items()))
    if key not in _REMOTE_CASES:
        _REMOTE_CASES.clear()
        _REMOTE_CASES[key] = list(cases_from_args(argparse.Namespace(**source))[0])
    return run_case(_REMOTE_CASES[key][i], *rest)


def _importable(op: str) -> str:
    """Run on a Dask worker before its first case: the operator is installed there."""
    from aicore_sim.ops.registry import get_op

    return get_op(op).name


def _on_cluster(jobs: Iterable[tuple], scheduler: str, source: dict[str, Any]):
    """The results of ``jobs`` in order, run on a Dask cluster (``scheduler``: an address or
    ``local:N``, as ``sweep --scheduler``); each worker rebuilds the cases from ``source``.
    At most ``FORK_CHUNK`` jobs are submitted ahead of the result awaited."""
    from collections import deque

    from aicore_sim.sweep.run import make_executor

    it = iter(jobs)
    first = next(it, None)
    if first is None:
        return
    with make_executor(scheduler=scheduler, op=first[0].model.name, check=_importable) as ex:
        ahead: deque = deque()
        for i, job in enumerate(chain((first,), it)):
            ahead.append((ex.submit(_remote_job, source, i, job[1:]), job))
            if len(ahead) >= FORK_CHUNK:
                yield _cluster_result(*ahead.popleft())
        while ahead:
            yield _cluster_result(*ahead.popleft())


def _cluster_result(f: Any, job: tuple) -> CaseResult:
    try:
        return f.result()
    except VerifyError:
        raise
    except Exception as e:  # noqa: BLE001 - the worker running it died (KilledWorker)
        vc, mode = job[0], job[1]
        return CaseResult(vc.name, vc.source, vc.platform.name, mode,
                          error=f"{type(e).__name__} on the cluster: {e}")


def run_cases(cases: Iterable[VerifyCase], mode: str | None = None,
              standard: Standard | None = None, expected_dir: Path | None = None,
              dump_dir: Path | None = None, progress: bool = True,
              echo: Callable[[str], None] | None = None,
              default_standard: Standard | None = None, workers: int = 1,
              scheduler: str | None = None, source: dict[str, Any] | None = None
              ) -> list[CaseResult]:
    """Run every case (a list, or :class:`Cases`: built as they run); ``standard``
    overrides the cases' own, else ``default_standard``. ``workers`` > 1 runs the cases in
    that many forked processes (Linux); ``scheduler`` on a Dask cluster instead, whose
    workers rebuild the cases from ``source`` (the command's case options, as
    :func:`cases_from_args` reads them). Results and their order as with one."""
    from tqdm import tqdm

    from aicore_sim.util.background import available

    if expected_dir is not None:
        check_expected(cases, expected_dir)
    n = len(cases)  # type: ignore[arg-type]
    single = n == 1
    fallback = default_standard or parse_standard("bit-exact")
    jobs = ((vc, mode or vc.mode or "functional", standard or vc.standard or fallback,
             expected_dir, single, dump_dir) for vc in cases)
    if scheduler is not None and n:
        if source is None:
            raise ValueError("run_cases: a scheduler needs the cases' source options")
        done = _on_cluster(jobs, scheduler, source)
    elif workers > 1 and n > 1 and available():
        done = _forked(jobs, workers)
    else:
        done = (run_case(*job) for job in jobs)
    results = []
    bar = tqdm(total=n, unit="case", disable=not progress or n <= 1,
               file=sys.stderr, dynamic_ncols=True)
    try:
        for r in done:
            bar.set_postfix_str(r.case, refresh=False)
            results.append(r)
            if echo is not None:
                for line in format_case(r):
                    bar.write(line, file=sys.stdout) if not bar.disable else echo(line)
            bar.update(1)
    finally:
        bar.close()
    return results


def verify_main(args: argparse.Namespace) -> int:
    """The ``verify`` command (see :mod:`.cli_verify`); returns the exit code."""
    t0 = time.perf_counter()
    cli_std = parse_standard(args.standard) if args.standard else None
    cases, meta = cases_from_args(args)
    mat_std = parse_standard(meta["matrix_standard"]) if meta.get("matrix_standard") else None
    expected = Path(args.expected) if args.expected else None
    dump = Path(args.dump_golden) if args.dump_golden else None
    if args.mode is None and meta.get("matrix_mode"):
        matrix_mode = meta["matrix_mode"]
        cases = cases.adjusted(lambda c: c if c.mode else replace(c, mode=matrix_mode))
    stem = Path(args.report) if args.report else unique_stamp(  # never overwrites
        Path("reports"), safe_name(cases.names[0]) if len(cases) else "", (".json", ".md"),
        prefix="verify-")
    if stem.suffix.lower() in (".json", ".md"):  # as write_reports reads it
        stem = stem.with_suffix("")
    claim(stem, "--report")  # every output claimed before the work
    if dump is not None:
        claim(dump, "--dump-golden")
        check_dump(cases, dump)
    source = {k: v for k, v in vars(args).items() if k != "func"}
    results = run_cases(cases, args.mode, cli_std, expected, dump, not args.no_progress, print,
                        mat_std, workers=args.workers, scheduler=args.scheduler, source=source)
    wall = time.perf_counter() - t0
    modes = sorted({r.mode for r in results})
    info = {
        "command": "aicore-sim verify " + " ".join(shlex.quote(a) for a in sys.argv[2:])
        if len(sys.argv) > 1 and sys.argv[1] == "verify" else "aicore-sim verify",
        "mode": ", ".join(modes),
        "standard": cli_std.name if cli_std else (mat_std.name if mat_std else "per case"),
        "expected_from": "files " + str(expected) if expected else
        ", ".join(sorted({r.expected_from for r in results})),
        "wall_s": round(wall, 3),
        **({"scheduler": args.scheduler} if args.scheduler else {"workers": args.workers}),
        "started": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(time.time() - wall)),
        **{k: v for k, v in meta.items() if v is not None},
    }
    jp, mp = write_reports(results, stem, info)
    s = summary_of(results, info)
    for r in results:  # what a failure under hazards means in the timed mode
        if r.mode == "timed" and r.hazards and not r.passed:
            print(f"note: {r.case}: {r.hazards} hazards (races or timed != functional image): in "
                  "timed mode outputs are written in simulated time, so unsynchronised writes "
                  "land in an order the golden (program order, as functional mode) does not "
                  "follow; functional mode checks the arithmetic, timed mode the synchronisation")
    print(f"{s['cases_passed']} / {s['cases']} cases passed, {s['outputs_failed']} of "
          f"{s['outputs_compared']} outputs failed, {s['errors']} not run; "
          f"wall {wall:.1f} s; reports: {jp}, {mp}")
    return 0 if s["cases_failed"] == 0 else 1

"""The ``aicore-sim`` command line: run a case, show its tiling, list platforms and cases.

Step of the flow: the outermost shell. ``run`` goes case file -> operator API (checks, tiling,
launch) -> summary -> artefacts (outputs, Perfetto trace, summary, timeline); the other
subcommands stop earlier. Nothing here computes numbers or cycles.

Exit codes (every command): 0 success, every result trustworthy; 2 a bad input - case file,
parameter, operator argument, platform, output path, or a case too big for the memory - one
line on stderr ``aicore-sim: error: <where>: <rule>`` (with the aclnn code when the operator
API rejected it) and nothing written; 1 a check the user relies on failed (``run``: an output
differs from the golden, a hazard under ``--strict``, ``--check-streams``; ``verify``: an output
failed) or the simulation failed (e.g. a deadlock in the kernel port), or the machine failed
(one line ``error: environment: ...``: a full disk or standard output, a file-size limit, a
closed standard output, an encoding that cannot show a name), or an internal error (one line
asking to report it; ``--debug`` shows the traceback); 130 / 143 interrupted by SIGINT /
SIGTERM (the output folder being written is removed). Option values are checked while the
line is parsed, each by its ``type=`` from :mod:`aicore_sim.cli_types`.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import gc
import json
import os
import re
import shutil
import sys
import time
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from aicore_sim import textinput
from aicore_sim.background import Background
from aicore_sim.casefile import (
    DEFAULT_PLATFORM,
    MODES,
    CaseFile,
    CaseFileError,
    case_document,
    load_case,
    make_data,
    parse_case,
    read_data,
)
from aicore_sim.cli_types import jobs as job_count
from aicore_sim.cli_types import nonempty, nonneg_int, size, state_domains
from aicore_sim.errors import SimError, UsageError
from aicore_sim.export.perfetto import write_trace
from aicore_sim.opmodel import PreparedCall
from aicore_sim.parallel import usable_cpus
from aicore_sim.platform import Platform, list_presets, load_platform
from aicore_sim.registry import (
    DEFAULT_CASE,
    OpLoadError,
    UnknownOpError,
    find_case,
    get_op,
    op_names,
)
from aicore_sim.resources import check_fits, nbytes, parse_size, set_limit
from aicore_sim.staging import (
    Interrupted,
    Terminated,
    check_target_folder,
    discard,
    install_signal_handlers,
    new_stage,
    publish,
    safe_name,
    unique_stamp,
)
from aicore_sim.summary import compare_golden, format_summary, summarize

PROG = "aicore-sim"
DEBUG_ENV = "AICORE_SIM_DEBUG"  # "1" (as --debug): unexpected exceptions show their traceback

_RUN_EXAMPLES = """\
examples:
  aicore-sim run                                 bundled case 'tiny' on ascend910b1
  aicore-sim run --case p1_deepseek_v3 --mode timing-only --no-plot
  aicore-sim run examples/cases/tiny.json --platform ascend910b4 --out traces/tiny_b4
  aicore-sim run my_case.json --inputs my_inputs/  (reads my_inputs/<input name>.npy)
  aicore-sim run --case p1_deepseek_v3 --mode timing-only --trace lanes --verbose
  aicore-sim run my_case.json --mode timing-only --check-streams   (is timing-only valid?)

modes: timed (default) computes the numbers and times them, checks the outputs against the
golden; timing-only times the kernel without vector arithmetic (no outputs, no golden;
valid for kernels whose control flow never depends on computed values: --check-streams
tells); functional computes the numbers only (no timing, no trace).

writes into --out (default traces/<time>-<case>/): outputs/<name>.npy (not in timing-only
mode), trace.json (or trace.json.gz when large; open it in ui.perfetto.dev), summary.json
(with the wall time of each phase), timeline.png, and msprof op's PipeUtilization.csv,
OpBasicInfo.csv, L2Cache.csv and ResourceConflictRatio.csv (the columns a board's 'msprof op'
writes; see docs/correlate.md), and
streams.npz (instruction digests and source lines, for 'aicore-sim diff'); ub.png with --ub-plot
"""

_TILING_EXAMPLES = """\
examples:
  aicore-sim tiling tiny                           a bundled case ('aicore-sim cases')
  aicore-sim tiling examples/cases/tiny.json
  aicore-sim tiling examples/cases/*.json --json   one JSON object per line and case
  aicore-sim tiling my_ut.json --platform '{"preset": "ut-fake-910b", "ub_size": 256}'

Any platform the fields' limits allow is tiled, also one 'run' refuses to simulate (e.g. no
usable UB); exit 0 when every case tiled, 2 otherwise.
"""


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


def _platform_arg(spec: str) -> Platform:
    try:
        if spec.lstrip().startswith("{"):
            return load_platform(textinput.loads_json(spec))
        return load_platform(spec)
    except (ValueError, KeyError, TypeError) as e:
        raise UsageError(f"--platform {spec}: {e.args[0] if e.args else e}") from None


def _bundled(name: str, platform: str | Platform) -> tuple[CaseFile, dict[str, Any]]:
    try:
        model, case = find_case(name)
    except UnknownOpError as e:
        raise UsageError(str(e)) from None
    doc = case_document(case, DEFAULT_PLATFORM, model)
    cf = parse_case(doc, name)
    if isinstance(platform, Platform):
        cf = _with_platform(cf, platform)
    return cf, {"case": case}


def _with_platform(cf: CaseFile, platform: Platform) -> CaseFile:
    from dataclasses import replace

    return replace(cf, platform=platform)


def _json_default(o: Any) -> Any:
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def _timeline():
    from aicore_sim import cli_timeline  # timeline analysis options and the diff subcommand

    return cli_timeline


def _err(msg: str) -> None:
    print(f"{PROG}: {' '.join(str(msg).split())}", file=sys.stderr)


# --------------------------------------------------------------------------------------------
# run
# --------------------------------------------------------------------------------------------


def _prepare_op(cf: CaseFile, inputs: dict[str, np.ndarray | None]) -> PreparedCall:
    """The first aclnn phase (argument checks and host tiling) of the case's operator."""
    if cf.positional_attrs:
        raise CaseFileError("attrs: a positional list is only accepted by 'aicore-sim tiling'; "
                            "'run' needs attributes by name")
    return cf.op.model.prepare(inputs, dict(cf.attrs), cf.platform)


def _golden(cf: CaseFile, inputs: dict[str, np.ndarray | None], pc: PreparedCall
            ) -> dict[str, np.ndarray | None]:
    """The operator's golden outputs for the prepared call ``pc`` (its tiling)."""
    return cf.op.model.golden(inputs, dict(cf.attrs), pc)


def _timed(fn):
    """``fn`` returning (its value, its wall seconds): how a background phase reports."""
    def run():
        t = time.perf_counter()
        value = fn()
        return value, time.perf_counter() - t
    return run


def _spilled(arrays: dict[str, np.ndarray | None], folder: Path, parent: int
             ) -> dict[str, Any]:
    """In a background child, big arrays go back to the parent as .npy files (paths); in the
    parent itself they stay arrays."""
    if os.getpid() == parent:
        return arrays
    folder.mkdir(exist_ok=True)
    out: dict[str, Any] = {}
    for name, arr in arrays.items():
        if arr is not None:
            path = folder / f"{name}.npy"
            np.save(path, arr)
            out[name] = (path, arr.dtype)  # .npy keeps bfloat16 only as raw 2-byte items
        else:
            out[name] = None
    return out


def _unspilled(value: Any) -> np.ndarray | None:
    if isinstance(value, tuple):
        path, dtype = value
        return np.load(path, mmap_mode="r").view(dtype)
    return value


class Phases:
    """Wall seconds of the phases of one command (what ``--verbose`` prints)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._t0 = time.perf_counter()

    def add(self, name: str, seconds: float) -> None:
        self.seconds[name] = self.seconds.get(name, 0.0) + seconds

    @contextlib.contextmanager
    def time(self, name: str) -> Iterator[None]:
        t = time.perf_counter()
        try:
            yield
        finally:
            self.add(name, time.perf_counter() - t)

    def total(self) -> float:
        return time.perf_counter() - self._t0

    def as_dict(self) -> dict[str, float]:
        return {**{k: round(v, 4) for k, v in self.seconds.items()},
                "total": round(self.total(), 4)}

    def line(self) -> str:
        d = self.as_dict()
        return "phases (s): " + ", ".join(f"{k} {v:.2f}" for k, v in d.items())


def _idle_options(args: argparse.Namespace, mode: str, cf: CaseFile) -> list[str]:
    """Options of ``run`` that do nothing in this combination (one ``note:`` line each)."""
    out = []
    if args.seed is not None and args.inputs:
        out.append("--seed does nothing with --inputs (every input is read from the folder)")
    if args.inputs:
        out += [f"--inputs: {k}.npy is not read (input {k} is absent in the case)"
                for k, spec in cf.inputs.items()
                if spec is None and (Path(args.inputs) / f"{k}.npy").exists()]
    return out + _timeline().idle_options(args, mode)


def _fits(sizes: dict[str, int]) -> None:
    """A case whose tensors cannot fit in this machine's memory is a bad input (exit 2)."""
    try:
        check_fits(sizes)
    except MemoryError as e:
        raise UsageError(str(e)) from None


def _out_dir(arg: str | None, name: str) -> Path:
    if arg:
        out = Path(arg)
        try:
            check_target_folder(out)
        except OSError:
            raise UsageError(f"--out {arg}: exists and is not an empty folder") from None
        return out
    return unique_stamp(Path("traces"), safe_name(name))  # the case name as one component




def cmd_run(args: argparse.Namespace) -> int:
    # One launch: its big data are arrays freed by reference counting, and the cyclic
    # collector's passes over the million recorded objects find nothing (measured on P1: 127
    # passes, 0.47 s outside the record and the replay, which pause it themselves), so the
    # command runs without it.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _run(args)
    finally:
        if was_enabled:
            gc.enable()


def _run(args: argparse.Namespace) -> int:
    phases = Phases()
    if args.max_memory is not None:
        try:
            set_limit(parse_size(args.max_memory))
        except ValueError as e:
            raise UsageError(f"--max-memory {args.max_memory}: {e}") from None
    _timeline().check_run_options(args)
    platform = _platform_arg(args.platform) if args.platform else None
    if args.case_file and args.case:
        raise UsageError("give either a CASE.json or --case NAME, not both")
    jobs = args.jobs or usable_cpus()
    with phases.time("inputs"):
        if args.case_file:
            cf = load_case(args.case_file)
            if platform is not None:
                cf = _with_platform(cf, platform)
            extra: dict[str, Any] = {}
        else:
            cf, extra = _bundled(args.case or DEFAULT_CASE, platform or DEFAULT_PLATFORM)
        mode = args.mode or cf.mode or "timed"
        if args.cores:  # a core the platform lacks is refused before the work, not after
            _timeline().parse_cores(args.cores, cf.platform.aiv_core_num)
        if args.window and not args.window.rstrip().endswith(":"):  # both ends given: in
            _timeline().parse_window(args.window, cf.platform.clock_mhz, 0)  # cycles, ordered
        sizes = {f"inputs.{k}": nbytes(v.shape, v.dtype) for k, v in cf.inputs.items()
                 if v is not None}
        _fits(sizes)
        if args.inputs:
            inputs = read_data(cf, args.inputs)
        elif "case" in extra:
            inputs = cf.op.model.case_inputs(extra["case"], args.seed)
        else:
            inputs = make_data(cf, args.seed)
    out = _out_dir(args.out, cf.name)
    pc = _prepare_op(cf, inputs)
    args.notes = tuple(pc.warnings)  # legal but suspicious inputs, one line each
    if mode != "timing-only":  # the outputs, and the golden's copy of them
        _fits({**sizes, **{f"outputs.{k} (and its golden)": 2 * nbytes(*v)
                           for k, v in pc.out_shapes.items() if v is not None}})
    idle = _idle_options(args, mode, cf)  # said with the verdict: stderr keeps one line

    try:
        tmp = new_stage(out)  # everything is written there, renamed to ``out`` at the end
    except OSError as e:
        raise UsageError(f"--out {out}: cannot create a folder there ({e.strerror})") from None
    background: dict[str, Background] = {}
    try:
        def after_record(program) -> None:  # the golden is computed while the replay runs
            if mode != "functional":  # streams.npz, for diff
                background["streams"] = _timeline().start_streams(program, tmp, jobs)
            if program.numerics and pc.tiling is not None:
                parent = os.getpid()
                background["golden"] = Background(_timed(
                    lambda: _spilled(_golden(cf, inputs, pc), tmp / ".golden", parent)),
                    enabled=jobs > 1)

        meta = {"case": cf.name, "platform": cf.platform.name, "mode": mode}

        def after_replay(trace) -> None:  # the trace file is written while the checks run
            if args.trace != "none":
                background["trace"] = Background(_timed(
                    lambda: write_trace(trace, tmp / "trace.json", metadata=meta,
                                        detail=args.trace)), enabled=jobs > 1)

        result = cf.op.model.execute(pc, mode=mode, jobs=jobs,
                                     check_streams=args.check_streams,
                                     after_record=after_record, after_replay=after_replay)
        files, summary, trace_note = _finish_run(args, cf, mode, jobs, result, background,
                                                 phases, tmp)
        lines = [f"case {cf.name}", format_summary(summary),
                 *(f"note: {note}" for note in summary.get("notes", ())),
                 *([trace_note] if trace_note else []),
                 *_timeline().report_lines(args, summary),
                 *([phases.line()] if args.verbose else []),
                 f"wrote {out}/: {', '.join(files)}"]
        if args.check_streams and not result.hazards_of("stream_differs"):
            lines.append("check-streams: the records with and without numerics give the same "
                         f"instruction streams ({result.program.instruction_count} "
                         "instructions)")
        _printable(lines)  # a report the terminal cannot show fails before the folder appears
        publish(tmp, out)
    except BaseException:
        for job in background.values():
            job.close()
        discard(tmp)
        raise
    for line in lines:
        print(line)
    if args.check_streams and result.hazards_of("stream_differs"):
        _say_idle(idle, on_stderr=True)
        return 1
    return _run_verdict(summary, result.hazards, args.strict, idle)


def _say_idle(notes: list[str], on_stderr: bool) -> None:
    """The options that did nothing, as one ``note:`` line: on stderr, or on stdout when
    stderr carries the command's failure line (stderr holds one line at most)."""
    if notes:
        text = f"note: {'; '.join(notes)}"
        if on_stderr:
            _err(text)
        else:
            print(text)


def _printable(lines: list[str]) -> None:
    """UnicodeEncodeError (an environment failure) when standard output's encoding cannot
    show ``lines`` (e.g. a non-ASCII case name under ``PYTHONIOENCODING=ascii``)."""
    enc = getattr(sys.stdout, "encoding", None)
    errors = getattr(sys.stdout, "errors", None) or "strict"
    if enc and errors == "strict":
        "\n".join(lines).encode(enc)


def _run_verdict(summary: dict[str, Any], hazards: list[Any], strict: bool,
                 idle: list[str] = ()) -> int:
    """Exit code of ``run`` after its summary was printed: 1 when an output differs from the
    golden (the first bad element on stderr) or, under ``--strict``, when a hazard was found;
    a hazard otherwise is a warning on stdout. ``idle``: the notes of options that did nothing
    (:func:`_say_idle`)."""
    for name, g in summary.get("golden", {}).items():
        if g.get("error") or not g.get("exact", True):
            fm = g.get("first_mismatch") or {}
            where = (f"{g.get('mismatches')} of {g.get('elements')} elements differ, first at "
                     f"{fm.get('index')}: got {fm.get('got')}, want {fm.get('want')}"
                     if fm else g.get("error"))
            _say_idle(list(idle), on_stderr=False)
            _err(f"check failed: {name}: differs from the golden: {where}")
            return 1
    if hazards:
        kinds = sorted({h.kind for h in hazards})
        if strict:
            _say_idle(list(idle), on_stderr=False)
            _err(f"check failed: --strict: {len(hazards)} hazards ({', '.join(kinds)}); see "
                 "summary.json")
            return 1
        print(f"warning: {len(hazards)} hazards ({', '.join(kinds)}): the outputs can depend "
              "on the order of unsynchronised accesses; --strict makes hazards exit 1")
    _say_idle(list(idle), on_stderr=True)
    return 0


def _finish_run(args: argparse.Namespace, cf: CaseFile, mode: str, jobs: int, result: Any,
                background: dict[str, Background], phases: Phases, tmp: Path
                ) -> tuple[list[str], dict[str, Any], str]:
    """Everything after the launch, into the temporary run folder ``tmp``: summary, golden
    comparison, outputs, plot, and the trace file the background wrote."""
    for k in ("record", "check_streams", "replay", "checks", "timed_replay"):
        if k in result.wall:
            phases.add(k, result.wall[k])
    with phases.time("summary"):
        summary = summarize(result)
    summary["case"] = cf.name
    summary["jobs"] = jobs
    summary["notes"] = list(getattr(args, "notes", ()))
    outs = {k: result.outputs.get(k) for k in cf.op.outputs}
    if "golden" in background:
        with phases.time("golden_wait"):
            gold, seconds = background.pop("golden").result()
        phases.add("golden", seconds)
        gold = {k: _unspilled(v) for k, v in gold.items()}
        if result.outputs:
            with phases.time("compare"):
                summary["golden"] = compare_golden(result.outputs, gold)
        del gold
        shutil.rmtree(tmp / ".golden", ignore_errors=True)
    files = []
    if any(arr is not None for arr in outs.values()):
        with phases.time("outputs"):
            (tmp / "outputs").mkdir()
            for name, arr in outs.items():
                if arr is not None:
                    np.save(tmp / "outputs" / f"{name}.npy", arr)
                    files.append(f"outputs/{name}.npy")
    if result.trace is not None and not args.no_plot:
        from aicore_sim.plots import plot_timeline

        with phases.time("plot"):
            plot_timeline(result.trace, tmp / "timeline.png",
                          title=f"{cf.name} on {cf.platform.name} ({mode}): "
                                f"{result.trace.makespan} cycles",
                          **_timeline().plot_options(args, result.trace))
        files.append("timeline.png")
        if getattr(args, "window_note", None):
            summary["notes"].append(args.window_note)
    trace_note = ""
    if "trace" in background:
        with phases.time("trace_wait"):
            written, seconds = background.pop("trace").result()
        phases.add("trace", seconds)
        files.insert(0, written.path.name)
        summary["trace_file"] = written.path.name
        summary["trace_bytes"] = written.bytes
        summary["trace_events"] = written.events
        trace_note = (f"trace {written.path.name}: {_fmt_size(written.bytes)}, "
                      f"{written.events:,} events ({args.trace})")
    with phases.time("timeline"):
        files += _timeline().finish_run(args, result, summary, tmp, jobs, background)
    if "cores" in summary:  # msprof op's CSVs of the run (PipeUtilization, OpBasicInfo, ...)
        from aicore_sim.export.msprof import write_msprof

        files += write_msprof(tmp, summary, result.platform)
    summary["case_document"] = cf.raw
    summary["phases_seconds"] = phases.as_dict()
    summary["phases_in_background"] = ["golden", "trace"] if jobs > 1 else []
    (tmp / "summary.json").write_text(
        json.dumps(summary, indent=1, default=_json_default) + "\n")
    files.append("summary.json")
    return files, summary, trace_note


def _fmt_size(n: int) -> str:
    for unit, f in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= f:
            return f"{n / f:.1f} {unit}"
    return f"{n} B"


# --------------------------------------------------------------------------------------------
# tiling
# --------------------------------------------------------------------------------------------


def tiling_of(cf: CaseFile) -> dict[str, Any]:
    """The tiling result of a case as a JSON-ready dict (fields in upstream order)."""
    specs = {k: None if s is None else (s.shape, s.dtype) for k, s in cf.inputs.items()}
    attrs = list(cf.attrs) if cf.positional_attrs else dict(cf.attrs)
    return {"case": cf.name, **cf.op.model.tiling(specs, attrs, cf.platform)}


def cmd_tiling(args: argparse.Namespace) -> int:
    platform = _platform_arg(args.platform) if args.platform else None
    ok = True
    first_bad: str | None = None  # "<case>: <error>" of the first case not tiled
    for path in args.case_files:
        try:
            if not Path(path).exists() and not path.endswith(".json") and "/" not in path:
                try:
                    cf, _ = _bundled(path, platform or DEFAULT_PLATFORM)  # a bundled case name
                except UsageError:
                    raise UsageError(f"{path}: not a file and not a bundled case name "
                                     f"('{PROG} cases' lists them)") from None
            else:
                cf = load_case(path)
            if platform is not None:
                cf = _with_platform(cf, platform)
            row = tiling_of(cf)
        except (CaseFileError, UsageError) as e:
            row = {"case": Path(path).stem, "status": "invalid", "tiling_key": None,
                   "tiling_data": None, "workspace": [], "block_dim": None, "error": str(e)}
        ok &= row["status"] == "success"
        if row["status"] != "success" and first_bad is None:
            first_bad = f"{row['case']}: {' '.join(str(row.get('error')).split())}"
        if args.json:
            print(json.dumps(row, default=_json_default))
            continue
        print(f"{row['case']}: {row['status']}")
        if row["status"] == "success":
            td = row["tiling_data"]
            print(f"  tiling_key {row['tiling_key']}, block_dim {row['block_dim']}, "
                  f"workspace {row['workspace']}")
            print(f"  tiling_data: {' '.join(str(v) for v in td.values())}")
            print("  " + ", ".join(f"{k}={v}" for k, v in td.items()))
        else:
            print(f"  error: {row['error']}")
    if first_bad is not None:  # the report above has every case; the contract's one line
        _err(f"error: {first_bad}")
    return 0 if ok else 2


# --------------------------------------------------------------------------------------------
# platforms, cases
# --------------------------------------------------------------------------------------------


def cmd_platforms(args: argparse.Namespace) -> int:
    rows = []
    for name in list_presets():
        p = load_platform(name)
        rows.append({
            "name": name, "soc": p.soc, "aiv_cores": p.aiv_core_num, "clock_mhz": p.clock_mhz,
            "ub_bytes": p.ub_size, "ub_usable_bytes": p.core_mem_size_ub,
            "hbm_gbps": round(p.hbm_bytes_per_cycle * p.clock_mhz / 1000, 1),
            "queue_depth": p.queue_depth, "costs": p.costs.family,
        })
    if args.json:
        for r in rows:
            print(json.dumps(r))
        return 0
    head = f"{'preset':<18} {'soc':<16} {'AIV':>4} {'MHz':>7} {'UB bytes':>9} " \
           f"{'usable':>8} {'HBM GB/s':>9} {'queue':>5}  costs"
    print(head)
    for r in rows:
        print(f"{r['name']:<18} {r['soc']:<16} {r['aiv_cores']:>4} {r['clock_mhz']:>7g} "
              f"{r['ub_bytes']:>9} {r['ub_usable_bytes']:>8} {r['hbm_gbps']:>9g} "
              f"{r['queue_depth']:>5}  {r['costs']}")
    return 0


def _case_table(model: Any) -> list[str]:
    """The lines of one op's case table: name, the op's columns (``case_row``), description;
    columns of integers right-aligned."""
    rows = [(c.name, model.case_row(c), c.description) for c in model.cases().values()]
    heads = list(rows[0][1]) if rows else []
    width = {h: max([len(h), *(len(r[h]) for _, r, _ in rows)]) for h in heads}
    right = {h: all(r[h].isdigit() for _, r, _ in rows) for h in heads}

    def cells(row: dict[str, str]) -> str:
        return " ".join(f"{row[h]:>{width[h]}}" if right[h] else f"{row[h]:<{width[h]}}"
                        for h in heads)

    name_w = max([24, *(len(n) for n, _, _ in rows)])
    lines = [f"{'case':<{name_w}} {cells({h: h for h in heads})} description"]
    for name, row, desc in rows:
        desc = desc if len(desc) <= 60 else desc[:57] + "..."
        lines.append(f"{name:<{name_w}} {cells(row)} {desc}")
    return lines


def cmd_cases(args: argparse.Namespace) -> int:
    models, broken = [], []
    for name in op_names():
        try:
            models.append(get_op(name))
        except OpLoadError as e:  # the other ops are still listed
            broken.append(e)
    models.sort(key=lambda m: DEFAULT_CASE not in m.cases())  # the default op first
    try:
        _print_cases(args, models)
    finally:
        for e in broken:
            _err(f"error: {e}")
    return 1 if broken else 0


def _print_cases(args: argparse.Namespace, models: list[Any]) -> None:
    if args.json:
        for m in models:
            for c in m.cases().values():
                print(json.dumps(case_document(c, DEFAULT_PLATFORM, m)))
        return
    for i, m in enumerate(models):
        if i:
            print()
        print(f"op {m.name}: {m.description}")
        for line in _case_table(m):
            print(line)
    print(f"\nrun one with: {PROG} run --case NAME   (default: {DEFAULT_CASE})")


# --------------------------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    fmt = argparse.RawDescriptionHelpFormatter
    p = _Parser(
        prog=PROG, formatter_class=fmt,
        description="Cycle-approximate simulator of the Ascend AICore vector core (AIV).",
        epilog="examples:\n  aicore-sim run\n  aicore-sim tiling examples/cases/tiny.json\n"
               "  aicore-sim platforms\n  aicore-sim cases\n"
               "  aicore-sim sweep examples/sweeps/tiny_smoke.toml\n"
               "  aicore-sim search p1_deepseek_v3 --tokens 512\n\n"
               "'aicore-sim COMMAND --help' shows the options of one command.")
    p.add_argument("--debug", action="store_true",
                   help=f"show the traceback of an internal error (also {DEBUG_ENV}=1); "
                        "accepted anywhere on the command line")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    r = sub.add_parser("run", help="simulate one case; write outputs, trace, summary, timeline",
                       formatter_class=fmt, epilog=_RUN_EXAMPLES,
                       description="Run one operator call on a simulated chip.")
    r.add_argument("case_file", nargs="?", type=nonempty, metavar="CASE.json",
                   help="case file (format: see aicore_sim/casefile.py or examples/cases/)")
    r.add_argument("--case", type=nonempty, metavar="NAME",
                   help=f"a bundled case ('{PROG} cases' lists them; default {DEFAULT_CASE})")
    r.add_argument("--platform", type=nonempty, metavar="P",
                   help="preset name, a preset TOML path, or a JSON object of fields "
                        "(overrides the case's platform; not empty)")
    r.add_argument("--mode", choices=MODES, help="default: the case's mode, else timed")
    r.add_argument("--inputs", type=nonempty, metavar="DIR",
                   help="read inputs from DIR/<input name>.npy, each exactly the case's dtype "
                        "and shape (bfloat16 also as 2-byte void items, |V2); not empty")
    r.add_argument("--out", type=nonempty, metavar="DIR",
                   help="output folder (not empty; must not exist or be an empty folder; "
                        "default traces/<time>-<case>)")
    r.add_argument("--seed", type=nonneg_int,
                   help="seed of the random inputs (default: the case's)")
    r.add_argument("--no-plot", action="store_true", help="skip timeline.png")
    r.add_argument("--trace", choices=("full", "lanes", "none"), default="full",
                   help="trace.json detail: full (instructions, stalls, flag arrows, UB "
                        "counter), lanes (instruction slices only: smaller, faster), none "
                        "(no trace file); default full")
    r.add_argument("--jobs", type=job_count, metavar="N",
                   help="processes to use (default: the usable CPUs): the record pass is split "
                        "over them, and the golden and the trace file are computed beside the "
                        "simulation; 1 = everything in this process. Results do not "
                        "depend on it")
    r.add_argument("--check-streams", action="store_true",
                   help="also record the kernel the other way (with numerics if the mode has "
                        "none, without otherwise) and fail (exit 1) if the instruction streams "
                        "differ: checks once that a port's control flow never depends on values "
                        "only vector arithmetic produces, which timing-only mode relies on")
    r.add_argument("--max-memory", type=size, metavar="SIZE",
                   help="refuse (exit 2, before any work) a run whose estimated memory - "
                        "tensors, UB images, instruction streams - exceeds SIZE (512M, 4G); "
                        "default: the memory available")
    r.add_argument("--strict", action="store_true",
                   help="exit 1 when a hazard is found (a race, a flag left pending, timed "
                        "outputs that differ from functional ones); without it hazards are "
                        "printed as warnings. A golden mismatch exits 1 either way")
    r.add_argument("--verbose", "-v", action="store_true",
                   help="print the wall time of each phase (inputs, record, replay, checks, "
                        "golden, compare, outputs, trace, plot); summary.json has them always")
    _timeline().add_run_options(r)  # --hotspots, --slack, --cores, --window, --ub-plot
    r.set_defaults(func=cmd_run)

    t = sub.add_parser("tiling", help="host tiling of case files", formatter_class=fmt,
                       epilog=_TILING_EXAMPLES,
                       description="Run the host tiling of each case file and print its result.")
    t.add_argument("case_files", nargs="+", type=nonempty, metavar="CASE",
                   help="case file or bundled case name")
    t.add_argument("--platform", type=nonempty, metavar="P",
                   help="overrides the cases' platform (not empty)")
    t.add_argument("--json", action="store_true", help="one JSON object per line and case")
    t.set_defaults(func=cmd_tiling)

    pl = sub.add_parser("platforms", help="list platform presets with key numbers",
                        description="List the platform presets.")
    pl.add_argument("--json", action="store_true", help="one JSON object per line")
    pl.set_defaults(func=cmd_platforms)

    c = sub.add_parser("cases", help="list the bundled cases",
                       description="List the bundled cases of every installed operator.")
    c.add_argument("--json", action="store_true", help="each case as a case-file document")
    c.set_defaults(func=cmd_cases)

    from aicore_sim.verify.cli_verify import add_parser as _add_verify  # verify subcommand

    _add_verify(sub)

    from aicore_sim.sweep.cli_sweep import add_parsers as _add_sweep  # sweep, search, report

    _add_sweep(sub)
    _timeline().add_parsers(sub)  # diff

    # correlate, calibrate
    from aicore_sim.correlate.cli_correlate import add_parsers as _add_correlate

    _add_correlate(sub)

    from aicore_sim.validate.cli_validate import add_parser as _add_validate  # validate

    _add_validate(sub)
    state_domains(p)
    return p


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (exit 2), for every subcommand too."""

    def _get_value(self, action: argparse.Action, arg_string: str) -> Any:
        """A value refused by its ``type=`` (``aicore_sim/cli_types.py``) is named with the
        option and, when the rule does not quote it already, the value itself."""
        try:
            return super()._get_value(action, arg_string)
        except argparse.ArgumentError as e:
            name = argparse._get_action_name(action)
            if name and e.message and arg_string not in e.message:
                raise argparse.ArgumentError(
                    None, f"argument {name} {arg_string}: {e.message}") from None
            raise

    def error(self, message: str) -> None:  # type: ignore[override]
        _err(f"error: {self.prog}: {message} (see '{self.prog} --help')")
        raise SystemExit(2)


def _user_error(e: BaseException) -> str | None:
    """The one-line message of an exception caused by the user's input, else None."""
    if isinstance(e, SimError):
        return f"error: {e.tag}{e}" if e.exit_code == 2 else None
    if isinstance(e, OSError) and e.filename is not None:  # an output or input path
        what = e.strerror or type(e).__name__
        return f"error: {e.filename}: {what}"
    return None


_ENV_ERRNOS = {errno.ENOSPC, errno.EFBIG, errno.EDQUOT, errno.EIO, errno.EMFILE, errno.ENFILE}


def _environment_error(e: BaseException) -> str | None:
    """The one-line message of a failure of the machine rather than of the input or of the
    simulator - a full disk, a file-size limit, a closed or full standard output, a terminal
    encoding that cannot show a name - else None (exit 1, nothing published)."""
    if isinstance(e, UnicodeEncodeError):
        enc = getattr(sys.stdout, "encoding", None) or e.encoding
        return (f"error: environment: the output encoding {enc} cannot show "
                f"{e.object[e.start:e.end]!r}; set PYTHONIOENCODING=utf-8 (or a UTF-8 locale)")
    if isinstance(e, OSError) and e.errno is None and re.fullmatch(
            r"\d+ requested and \d+ written", str(e)):  # numpy's short write (tofile, np.save)
        return (f"error: environment: a write was cut short ({e}): a full disk or a file-size "
                "limit")
    if isinstance(e, OSError) and (e.errno in _ENV_ERRNOS or
                                   (e.errno == errno.EBADF and e.filename is None)):
        where = e.filename if e.filename is not None else "an output file"
        return (f"error: environment: cannot write {where}: {e.strerror or e} "
                f"({errno.errorcode.get(e.errno, e.errno)})")
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``aicore-sim`` console script; returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = os.environ.get(DEBUG_ENV) == "1"
    if "--debug" in argv:  # accepted anywhere on the line
        argv = [a for a in argv if a != "--debug"]
        debug = True
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:
        return int(e.code or 0)
    if args.command is None:
        parser.print_help()
        return 2
    if sys.stdout is None:  # started with standard output closed: nowhere to report to
        _err("error: environment: standard output is closed; nothing was run")
        return 1
    install_signal_handlers()
    if not debug:  # numpy's overflow / invalid-value warnings are not messages for a user
        warnings.simplefilter("ignore", RuntimeWarning)
    stdout = sys.stdout
    sys.stdout = _NamedStdout(stdout)  # type: ignore[assignment]
    try:
        return _dispatch(args, debug)
    finally:
        sys.stdout = stdout


class _NamedStdout:
    """Standard output whose failed writes name it (``filename``), so a full or closed
    standard output is told apart from an output file; everything else passes through."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def _named(self, call: Any, *a: Any) -> Any:
        try:
            return call(*a)
        except OSError as e:
            if e.filename is None:
                e.filename = "standard output"
            raise

    def write(self, text: str) -> int:
        return self._named(self._stream.write, text)

    def flush(self) -> None:
        self._named(self._stream.flush)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _dispatch(args: argparse.Namespace, debug: bool) -> int:
    """Run the subcommand; every exception becomes its exit code and at most one line."""
    try:
        code = int(args.func(args))
        sys.stdout.flush()  # a full or closed standard output fails here, in the contract
        return code
    except OpLoadError as e:  # an installed plug-in is broken: not the user's input
        _err(f"error: {e}")
        return 1
    except Interrupted as e:  # stopped, with what was kept named
        _err(str(e))
        return e.code
    except KeyboardInterrupt:
        _err("interrupted (SIGINT); nothing was written")
        return 130
    except Terminated as e:
        _err(f"terminated ({e}); nothing was written")
        return 128 + e.signum
    except BrokenPipeError:
        return 0
    except MemoryError:
        _err("error: out of memory: the case does not fit in this machine's memory (try a "
             "smaller case, --mode timing-only, --trace lanes, or see --max-memory)")
        return 2
    except SimError as e:
        msg = _user_error(e)
        if msg is not None:
            _err(msg)
            return e.exit_code
        _err(f"simulation failed: {type(e).__name__}: {e}")
        return e.exit_code
    except Exception as e:  # noqa: BLE001 - no traceback reaches a user unless asked for
        env = _environment_error(e)
        if env is not None and not debug:
            _err(env)
            return 1
        msg = _user_error(e)
        if msg is not None:
            _err(msg)
            return 2
        if debug:
            raise
        _err(f"internal error: {type(e).__name__}: {e} - this is a bug in {PROG}, please "
             "report it with the command line; run again with --debug for the traceback")
        return 1


def entry() -> None:
    """The console script: run :func:`main`, then leave without tearing down the interpreter's
    objects one by one (a big run holds millions; its files are all closed by then)."""
    code = main()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except OSError:  # main() flushed and reported stdout; a closed pipe is not news
            pass
    os._exit(code)


if __name__ == "__main__":
    entry()

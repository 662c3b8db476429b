"""``aicore-sim run``: one operator call on a simulated chip, and its run folder.

Step of the flow: case file (or bundled case) -> operator API (argument checks, tiling,
launch) -> summary -> artefacts: outputs, the Perfetto trace, summary.json, timeline.png and
the timeline options' files (:mod:`aicore_sim.cli.timeline`), msprof op's CSVs. The golden
and the trace file are computed in the background while the simulation goes on (``--jobs``);
the wall time of each phase goes to summary.json. Everything is written into a hidden folder
renamed to ``--out`` when whole. Nothing here computes numbers or cycles.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

import numpy as np

import aicore_sim.cli.timeline as timeline
from aicore_sim.cli.artefacts import Phases, finish_run, spilled, timed
from aicore_sim.cli.common import (
    OP_SRC_HELP,
    PROG,
    add_source_options,
    bundled,
    host_tiling_of,
    op_source,
    out_folder,
    platform_arg,
    subcommand,
    with_platform,
)
from aicore_sim.cli.options import jobs as job_count
from aicore_sim.cli.options import nonempty, nonneg_int, size
from aicore_sim.cli.verdict import printable, run_verdict, say_idle
from aicore_sim.export.perfetto import write_trace
from aicore_sim.ops.casefile import (
    DEFAULT_PLATFORM,
    MODES,
    CaseFile,
    CaseFileError,
    load_case,
    make_data,
    read_data,
)
from aicore_sim.ops.opmodel import PreparedCall, call_attrs
from aicore_sim.ops.registry import DEFAULT_CASE
from aicore_sim.sim.errors import UsageError
from aicore_sim.sim.parallel import usable_cpus
from aicore_sim.util.background import Background
from aicore_sim.util.resources import check_fits, gc_paused, nbytes, parse_size, set_limit
from aicore_sim.util.staging import (
    discard,
    new_stage,
    publish,
)
from aicore_sim.views import rundiff
from aicore_sim.views.summary import format_summary

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


def add_parser(sub: Any) -> None:
    """The ``run`` subcommand, with the timeline options (:mod:`aicore_sim.cli.timeline`)."""
    r = subcommand(sub, "run", "simulate one case; write outputs, trace, summary, timeline",
                   "Run one operator call on a simulated chip.", _RUN_EXAMPLES)
    r.add_argument("case_file", nargs="?", type=nonempty, metavar="CASE.json",
                   help="case file (format: see aicore_sim/ops/casefile.py or examples/cases/)")
    r.add_argument("--case", type=nonempty, metavar="NAME",
                   help=f"a bundled case ('{PROG} cases' lists them; default {DEFAULT_CASE})")
    r.add_argument("--platform", type=nonempty, metavar="P",
                   help="preset name, a preset TOML path, or a JSON object of fields "
                        "(overrides the case's platform; not empty)")
    r.add_argument("--mode", choices=MODES, help="default: the case's mode, else timed")
    r.add_argument("--l2-start", choices=("warm", "cold"),
                   help="what L2 holds when the launch starts: warm = what the same launch "
                        "before left (msprof op measures after its warm-up runs; the A2/A3 "
                        "and 950 presets' default), cold = nothing (the first launch after the "
                        "host wrote the inputs); default: the platform's costs.l2_warm_start")
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
    add_source_options(
        r,
        tiling_help="run with this tiling field set (repeatable; 'aicore-sim tiling CASE' lists "
                    "the fields, the op's tiling space says which it lets you set; cores=N sets "
                    "the block dim of the MoE ops); the rest of the host tiling follows as the "
                    "op's tiling does, and a value the kernel's rules or the UB refuse is exit 2 "
                    "naming the rule. Overrides the case file's \"tiling\"",
        kernel_help="run the operator's own Ascend C kernel sources instead of its Python port: "
                    "a folder holding <entry>.cpp (for a bundled op, "
                    "<ops-transformer>/moe/<op>/op_kernel) or one .cpp; compiled with the system "
                    "C++ compiler against aicore-sim's shim and cached (docs/cpp_kernels.md). "
                    "Overrides the case file's kernel_source",
        op_help=OP_SRC_HELP + "; its op_kernel/ is the kernel unless --kernel-src names another")
    timeline.add_run_options(r)  # --hotspots, --slack, --cores, --window, --ub-plot
    r.set_defaults(func=cmd_run)


# --------------------------------------------------------------------------------------------
# run
# --------------------------------------------------------------------------------------------


def _prepare_op(cf: CaseFile, inputs: dict[str, np.ndarray | None]) -> PreparedCall:
    """The first aclnn phase (argument checks and host tiling) of the case's operator."""
    if cf.positional_attrs:
        raise CaseFileError("attrs: a positional list is only accepted by 'aicore-sim tiling'; "
                            "'run' needs attributes by name")
    return cf.op.model.prepare(inputs, dict(cf.attrs), cf.platform)


def _retile(cf: CaseFile, value: str, settings: dict[str, int], pc: PreparedCall
            ) -> PreparedCall:
    """``pc`` with the tiling the op's tiling space plans for ``settings`` (field -> value)
    of the case ``value`` (a bundled name or a case file): exit 2 naming the field or the rule
    the op refuses."""
    space = cf.op.model.tiling_space
    if space is None:
        raise UsageError(f"--tiling: op {cf.op.name} has no tiling space: it lets no tiling "
                         "field be set")
    try:
        case = space.resolve_case(value, {})
        space.check_knobs(settings, "upstream")
        plan = space.plan(case, cf.platform, "upstream", settings)
    except (ValueError, KeyError) as e:
        raise UsageError(f"--tiling: {e.args[0] if e.args else e}") from None
    if plan.violations:
        rule, msg = plan.violations[0]
        raise UsageError(f"--tiling: {msg} (rule {rule})")
    return pc.with_tiling(plan.tiling, plan.tiling_key, plan.block_dim)


def _tiling_record(pc: PreparedCall, settings: dict[str, int]) -> dict[str, Any]:
    """What ran, for the run folder: every tiling field, the key, the block dim and the
    fields set by hand."""
    return {"fields": None if pc.tiling is None else pc.tiling.as_dict(),
            "tiling_key": pc.tiling_key, "block_dim": pc.block_dim, "set": dict(settings)}


def _idle_options(args: argparse.Namespace, mode: str, cf: CaseFile) -> list[str]:
    """Options of ``run`` that do nothing in this combination (one ``note:`` line each)."""
    out = []
    if args.seed is not None and args.inputs:
        out.append("--seed does nothing with --inputs (every input is read from the folder)")
    if args.inputs:
        out += [f"--inputs: {k}.npy is not read (input {k} is absent in the case)"
                for k, spec in cf.inputs.items()
                if spec is None and (Path(args.inputs) / f"{k}.npy").exists()]
    return out + timeline.idle_options(args, mode)


def _fits(sizes: dict[str, int]) -> None:
    """A case whose tensors cannot fit in this machine's memory is a bad input (exit 2)."""
    try:
        check_fits(sizes)
    except MemoryError as e:
        raise UsageError(str(e)) from None


def _out_dir(arg: str | None, name: str) -> Path:
    """The run folder, claimed (checked writable, locked) before the work; ``--out`` as given
    (what the run's messages show)."""
    out = out_folder(arg, name)
    return Path(arg) if arg else out


def cmd_run(args: argparse.Namespace) -> int:
    # One launch: its big data are arrays freed by reference counting, and the cyclic
    # collector's passes over the million recorded objects find nothing (measured on P1: 127
    # passes, 0.47 s outside the record and the replay, which pause it themselves), so the
    # command runs without it.
    with gc_paused():
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    phases = Phases()
    if args.max_memory is not None:
        try:
            set_limit(parse_size(args.max_memory))
        except ValueError as e:
            raise UsageError(f"--max-memory {args.max_memory}: {e}") from None
    timeline.check_run_options(args)
    platform = platform_arg(args.platform) if args.platform else None
    if args.case_file and args.case:
        raise UsageError("give either a CASE.json or --case NAME, not both")
    jobs = args.jobs or usable_cpus()
    with phases.time("inputs"):
        if args.case_file:
            cf = load_case(args.case_file)
            if platform is not None:
                cf = with_platform(cf, platform)
            extra: dict[str, Any] = {}
        else:
            cf, extra = bundled(args.case or DEFAULT_CASE, platform or DEFAULT_PLATFORM)
        mode = args.mode or cf.mode or "timed"
        if args.l2_start:
            cf = with_platform(cf, cf.platform.with_overrides(
                costs={"l2_warm_start": args.l2_start == "warm"}))
        if args.cores:  # a core the platform lacks is refused before the work, not after
            timeline.parse_cores(args.cores, cf.platform.aiv_core_num)
        if args.window and not args.window.rstrip().endswith(":"):  # both ends given: in
            timeline.parse_window(args.window, cf.platform.clock_mhz, 0)  # cycles, ordered
        sizes = {f"inputs.{k}": nbytes(v.shape, v.dtype) for k, v in cf.inputs.items()
                 if v is not None}
        _fits(sizes)
        out = _out_dir(args.out, cf.name)  # claimed before the work
        if args.inputs:
            inputs = read_data(cf, args.inputs)
        elif "case" in extra:
            inputs = cf.op.model.case_inputs(extra["case"], args.seed)
        else:
            inputs = make_data(cf, args.seed)
    host = op_source(args)  # --op-src: the op's own host tiling C++ and kernel
    source = args.kernel_src or (host and host.kernel_dir) or cf.kernel_source
    settings = {**(cf.tiling or {}), **dict(args.tiling)}
    with host_tiling_of(args):
        pc = _prepare_op(cf, inputs)
        if settings:
            pc = _retile(cf, args.case_file or args.case or DEFAULT_CASE, settings, pc)
    args.tiling_record = _tiling_record(pc, settings)
    args.kernel_record = None if source is None else str(source)
    args.host_record = None if host is None else str(host.host_dir)
    args.notes = tuple(pc.warnings)  # legal but suspicious inputs, one line each
    if mode != "timing-only":  # the outputs, and the golden's copy of them
        _fits({**sizes, **{f"outputs.{k} (and its golden)": 2 * nbytes(*v)
                           for k, v in pc.out_shapes.items() if v is not None}})
    idle = _idle_options(args, mode, cf)  # said with the verdict: stderr keeps one line
    source_kw: dict[str, Any] = {}
    if source is not None:  # the C++ front end, imported only when a run uses it
        from aicore_sim.cfront import KernelSource

        source_kw["kernel_source"] = KernelSource.of(source)

    try:
        tmp = new_stage(out)  # everything is written there, renamed to ``out`` at the end
    except OSError as e:
        raise UsageError(f"--out {out}: cannot create a folder there ({e.strerror})") from None
    background: dict[str, Background] = {}
    try:
        # the steps of the recording, with the background work started between them
        result = cf.op.model.execute(pc, mode=mode, jobs=jobs,  # the record pass
                                     check_streams=args.check_streams, **source_kw)
        prog = result.program
        if mode != "functional" and prog.streams:  # streams.npz, for diff
            background["streams"] = Background(lambda: rundiff.save_streams(
                tmp / rundiff.STREAMS_FILE, prog.streams, prog.sources), enabled=jobs > 1)
        if prog.numerics and pc.tiling is not None:  # the golden, beside the replay
            parent, attrs = os.getpid(), call_attrs(cf.op.model, inputs, cf.attrs)
            background["golden"] = Background(timed(lambda: spilled(
                cf.op.model.golden(inputs, attrs, pc), tmp / ".golden", parent)),
                enabled=jobs > 1)
        trace = result.trace  # the replay
        if trace is not None and args.trace != "none":  # written while the checks run
            meta = {"case": cf.name, "platform": cf.platform.name, "mode": mode}
            background["trace"] = Background(timed(
                lambda: write_trace(trace, tmp / "trace.json", metadata=meta,
                                    detail=args.trace)), enabled=jobs > 1)
        result.run()  # the checks (and the timed image), the outputs
        files, summary, trace_note = finish_run(args, cf, mode, jobs, result, background,
                                                phases, tmp)
        lines = [f"case {cf.name}", format_summary(summary),
                 *(f"note: {note}" for note in summary.get("notes", ())),
                 *([trace_note] if trace_note else []),
                 *timeline.report_lines(args, summary),
                 *([phases.line()] if args.verbose else []),
                 f"wrote {out}/: {', '.join(files)}"]
        if args.check_streams and not result.hazards_of("stream_differs"):
            lines.append("check-streams: the records with and without numerics give the same "
                         f"instruction streams ({result.program.instruction_count} "
                         "instructions)")
        printable(lines)  # a report the terminal cannot show fails before the folder appears
        publish(tmp, out)
    except BaseException:
        for job in background.values():
            job.close()
        discard(tmp)
        raise
    for line in lines:
        print(line)
    if args.check_streams and result.hazards_of("stream_differs"):
        say_idle(idle, on_stderr=True)
        return 1
    return run_verdict(summary, result.hazards, args.strict, idle)

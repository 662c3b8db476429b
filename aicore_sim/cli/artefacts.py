"""A run's folder after the launch: summary.json (with the wall seconds of each phase), the
outputs, the comparison with the golden (computed in a background child, its arrays spilled to
.npy files), timeline.png, the trace file's figures, the timeline options' files and msprof
op's CSVs - all written into the hidden folder :mod:`aicore_sim.cli.run` renames when whole
(step: the command line; the numbers are the summary's and the exporters')."""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

import aicore_sim.cli.timeline as timeline
from aicore_sim.cli.common import json_default
from aicore_sim.ops.casefile import CaseFile
from aicore_sim.util.background import Background
from aicore_sim.views.summary import summarize


def timed(fn):
    """``fn`` returning (its value, its wall seconds): how a background phase reports."""
    def run():
        t = time.perf_counter()
        value = fn()
        return value, time.perf_counter() - t
    return run


def spilled(arrays: dict[str, np.ndarray | None], folder: Path, parent: int
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
    """An array :func:`spilled` sent back (read from its .npy file), or the array itself."""
    if isinstance(value, tuple):
        path, dtype = value
        try:
            return np.load(path, mmap_mode="r").view(dtype)
        except ValueError:  # the file is shorter than its header says: the write was cut
            raise OSError(errno.EFBIG, "the golden's spill file was cut short (a file-size "
                          "limit or a full disk)", str(path)) from None
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


def finish_run(args: argparse.Namespace, cf: CaseFile, mode: str, jobs: int, result: Any,
               background: dict[str, Background], phases: Phases, tmp: Path
               ) -> tuple[list[str], dict[str, Any], str]:
    """Everything after the launch, into the temporary run folder ``tmp``: summary, golden
    comparison, outputs, plot, and the trace file the background wrote."""
    for k, seconds in result.wall.items():  # the recording's steps
        if k != "total":
            phases.add(k, seconds)
    with phases.time("summary"):
        summary = summarize(result)
    summary["case"] = cf.name
    summary["jobs"] = jobs
    if getattr(args, "tiling_record", None) is not None:  # what ran: its inputs beside
        summary["tiling"] = args.tiling_record            # its timing (diff leads with them)
    summary["kernel_source"] = getattr(args, "kernel_record", None) or "port"
    summary["host_tiling"] = getattr(args, "host_record", None) or "port"
    if mode != "functional":  # what the timing model is validated on, for this platform
        from aicore_sim.validate.confidence import statement

        summary["fidelity"] = statement(result.platform, cores=summary["block_dim"])
    summary["notes"] = list(getattr(args, "notes", ()))
    outs = {k: result.outputs.get(k) for k in cf.op.outputs}
    if "golden" in background:
        with phases.time("golden_wait"):
            gold, seconds = background.pop("golden").result()
        phases.add("golden", seconds)
        gold = {k: _unspilled(v) for k, v in gold.items()}
        if result.outputs:
            with phases.time("compare"):
                summary["golden"] = result.compare(gold)
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
    lanes = None
    if result.trace is not None:  # what the pictures draw, kept for 'aicore-sim plot'
        from aicore_sim.views.timeline_file import TIMELINE_FILE, Timeline

        with phases.time("timeline_file"):
            lanes = Timeline.from_trace(result.trace, title=f"{cf.name} on {cf.platform.name} "
                                        f"({mode}): {result.trace.makespan} cycles")
            lanes.save(tmp / TIMELINE_FILE)
        files.append(TIMELINE_FILE)
    if lanes is not None and not args.no_plot:
        from aicore_sim.views.plots import plot_timeline

        with phases.time("plot"):
            plot_timeline(lanes, tmp / "timeline.png", title=lanes.title,
                          **timeline.plot_options(args, result.trace))
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
        files += timeline.finish_run(args, result, summary, tmp, jobs, background, lanes)
    if "cores" in summary:  # msprof op's CSVs of the run (PipeUtilization, OpBasicInfo, ...)
        from aicore_sim.export.msprof import write_msprof

        files += write_msprof(tmp, summary, result.platform)
    summary["case_document"] = dict(cf.raw)
    if getattr(args, "platform", None):  # the platform that ran, not the case's own
        summary["case_document"]["platform"] = cf.platform.name
    summary["phases_seconds"] = phases.as_dict()
    summary["phases_in_background"] = ["golden", "trace"] if jobs > 1 else []
    (tmp / "summary.json").write_text(
        json.dumps(summary, indent=1, default=json_default) + "\n")
    files.append("summary.json")
    return files, summary, trace_note


def _fmt_size(n: int) -> str:
    for unit, f in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= f:
            return f"{n / f:.1f} {unit}"
    return f"{n} B"


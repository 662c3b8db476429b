"""The run folder of one launch a C++ program made (``aicore-sim ut``'s ``ICPU_RUN_KF``,
``aicore-sim exec``'s aclnn calls): ``summary.json`` (what ran, the summary), ``trace.json``,
the msprof op CSVs and ``outputs/<buffer>.npy`` of each buffer the launch changed, staged and
published whole (nothing half-written)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np


def write(rec: Any, folder: Path, title: str, platform: Any, mode: str, trace: str,
          facts: tuple[str, Mapping[str, Any]], written: Mapping[str, np.ndarray]) -> Path:
    """``folder`` for the recording ``rec`` (run): ``summary.json`` with ``case`` = ``title``
    and ``facts`` (its key, its dict), the trace (``trace``: ``full`` / ``lanes`` / ``none``),
    msprof's CSVs, and ``written``'s arrays under ``outputs/``."""
    from aicore_sim.cli.common import json_default
    from aicore_sim.util.staging import discard, new_stage, publish
    from aicore_sim.views.summary import summarize

    tmp = new_stage(folder)
    try:
        summary = summarize(rec)
        summary["case"] = title
        summary[facts[0]] = dict(facts[1])
        if written:
            (tmp / "outputs").mkdir()
            for name, arr in written.items():  # the bytes as the kernel left them
                np.save(tmp / "outputs" / f"{name}.npy", arr)
        if rec.trace is not None and trace != "none":
            from aicore_sim.export.perfetto import write_trace

            w = write_trace(rec.trace, tmp / "trace.json", detail=trace,
                            metadata={"case": title, "platform": platform.name, "mode": mode})
            summary["trace_file"] = w.path.name
        if "cores" in summary:
            from aicore_sim.export.msprof import write_msprof

            write_msprof(tmp, summary, platform)
        (tmp / "summary.json").write_text(json.dumps(summary, indent=1,
                                                     default=json_default) + "\n")
        publish(tmp, folder)
    except BaseException:
        discard(tmp)
        raise
    return folder


__all__ = ["write"]

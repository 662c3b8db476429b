"""Measured against simulated: per-pipe and per-core ratios of two msprof-style launches.

Step of the flow: after the reader (:mod:`aicore_sim.correlate.opprof`), before the report.
Both sides are :class:`~aicore_sim.correlate.opprof.ProfiledLaunch` objects: the board's
``msprof op`` folder and the simulated run's own ``PipeUtilization.csv`` / ``OpBasicInfo.csv``
(written by :mod:`aicore_sim.export.msprof` from its summary), so both are read by one rule.

A ratio is simulated / measured busy time of one pipe on one block - the project's one ratio
convention (``validate`` and ``calibrate`` too): above 1, the model is slower than the board;
a block whose measured or simulated cell is NA, or whose measured or simulated time is 0,
gives no ratio for that pipe (its count is the ``cores`` figure). Per pipe: median, min, max
and the worst block (farthest from 1 in log terms, i.e. ``max |ln r|``). Block counts must
match (blocks are compared one to one); a ``Block Dim`` or clock that differs is flagged,
not refused.
"""

from __future__ import annotations

import math
import statistics
from typing import Any

from aicore_sim.correlate.opprof import PIPES, OpprofError, ProfiledLaunch

FREQ_TOLERANCE = 0.005
"""Relative clock difference above which a frequency mismatch is flagged."""


def ratio_stats(pairs: list[tuple[int, float, float]]) -> dict[str, Any]:
    """Statistics of (core, measured, simulated) pairs with both > 0: simulated / measured."""
    ratios = [(c, s / m) for c, m, s in pairs]
    if not ratios:
        return {"ratio_median": None, "ratio_min": None, "ratio_max": None, "cores": 0,
                "worst_core": None, "worst_ratio": None, "measured_us": 0.0,
                "simulated_us": 0.0}
    values = [r for _, r in ratios]
    worst = max(ratios, key=lambda cr: (abs(math.log(cr[1])) if cr[1] > 0 else math.inf,
                                        -cr[0]))
    return {"ratio_median": statistics.median(values), "ratio_min": min(values),
            "ratio_max": max(values), "cores": len(values), "worst_core": worst[0],
            "worst_ratio": worst[1], "measured_us": sum(m for _, m, _ in pairs),
            "simulated_us": sum(s for _, _, s in pairs)}


def _ratio(measured: float | None, simulated: float | None) -> float | None:
    """simulated / measured; None when either is missing or not positive."""
    if measured is None or simulated is None or measured <= 0 or simulated <= 0:
        return None
    return simulated / measured


def _pairs(meas: list[float | None], sim: list[float | None]) -> tuple[list, int]:
    """(pairs with a ratio, blocks left out) of two per-block columns."""
    out, left = [], 0
    for k, (m, s) in enumerate(zip(meas, sim)):
        if m is None or s is None or s <= 0 or m <= 0:
            left += 1
            continue
        out.append((k, m, s))
    return out, left


def correlate(measured: ProfiledLaunch, simulated: ProfiledLaunch) -> dict[str, Any]:
    """The comparison object (what ``correlate --json`` prints; see docs/correlate.md)."""
    if measured.n_blocks != simulated.n_blocks:
        raise OpprofError(
            f"{measured.pipe_file}: {measured.n_blocks} vector blocks, but the run "
            f"({simulated.pipe_file}) has {simulated.n_blocks} cores (block counts must match: "
            f"simulate the case the board ran, on a platform with its core count)")
    per_pipe: dict[str, Any] = {}
    per_core: list[dict[str, Any]] = []
    for k, blk in enumerate(measured.blocks):
        per_core.append({"core": k, "block_id": blk[0], "sub_block_id": blk[1]})
    for pipe in PIPES:
        pairs, left = _pairs(measured.times[pipe], simulated.times[pipe])
        per_pipe[pipe] = {**ratio_stats(pairs), "cores_without_ratio": left}
        for k, (m, s) in enumerate(zip(measured.times[pipe], simulated.times[pipe])):
            per_core[k][pipe] = {"measured_us": m, "simulated_us": s,
                                 "ratio": _ratio(m, s)}
    pairs, left = _pairs(measured.core_us, simulated.core_us)
    core_time = {**ratio_stats(pairs), "cores_without_ratio": left}
    for k, (m, s) in enumerate(zip(measured.core_us, simulated.core_us)):
        per_core[k]["core_time"] = {"measured_us": m, "simulated_us": s,
                                    "ratio": _ratio(m, s)}
    td_m, td_s = measured.task_duration_us, simulated.task_duration_us
    task = {"measured_us": td_m, "simulated_us": td_s,
            "ratio": _ratio(td_m, td_s)}
    flags = []
    if measured.block_dim is not None and simulated.block_dim is not None \
            and measured.block_dim != simulated.block_dim:
        flags.append(f"block dim: the board launched Block Dim {measured.block_dim} "
                     f"({measured.info_file.name}), the simulation {simulated.block_dim}")
    fm, fs = measured.freq_mhz, simulated.freq_mhz
    if fm and fs and abs(fm - fs) > FREQ_TOLERANCE * fs:
        flags.append(f"frequency: the board ran at {fm:g} MHz ({measured.info_file.name} "
                     f"Current Freq), the simulation at {fs:g} MHz: times are compared in us, "
                     f"cycle counts differ by {fs / fm:.3f}x; simulate at the board's clock "
                     f"with --platform '{{\"preset\": ..., \"clock_mhz\": {fm:g}}}'")
    for pipe, st in per_pipe.items():
        if st["cores_without_ratio"]:
            flags.append(f"{pipe}: {st['cores_without_ratio']} of {measured.n_blocks} blocks "
                         f"have no ratio (NA or blank cell, or no simulated time)")
    return {
        "measured": {"folder": str(measured.folder), "launch": measured.label,
                     "pipe_file": str(measured.pipe_file), "info_file": str(measured.info_file),
                     "op_name": measured.op_name, "block_dim": measured.block_dim,
                     "freq_mhz": fm, "blocks": measured.n_blocks,
                     "cube_rows_skipped": measured.skipped_cube_rows},
        "simulated": {"folder": str(simulated.folder), "op_name": simulated.op_name,
                      "block_dim": simulated.block_dim, "freq_mhz": fs,
                      "blocks": simulated.n_blocks},
        "per_pipe": per_pipe,
        "core_time": core_time,
        "task_duration": task,
        "flags": flags,
        "per_core": per_core,
    }


__all__ = ["FREQ_TOLERANCE", "correlate", "ratio_stats"]

"""The bound-by summary of one launch: small pure functions of the Trace.

Step of the flow: after ``launch`` (Trace + outputs + hazards) and before the exporters. Every
number here is derived from the :class:`~aicore_sim.sim.trace.Trace`, the recorded streams and the
platform; nothing is counted inside the engine, and no cycle is recomputed.

:func:`summarize` returns a plain JSON-ready ``dict``:

- ``makespan_cycles`` / ``makespan_us`` (at the preset clock);
- ``cores``: per core its finish cycle, busy cycles (the sum of the pipe's instruction slices
  in the trace) and utilisation per pipe, ``gm_stretch_cycles`` (copies held by shared HBM
  past their single-core time: drawn and counted as ``gm_bandwidth`` stalls, not as busy),
  ``occupied_share`` ((busy + stretch) / finish), UB high-water mark, and per pipe where the
  time it was not executing went (``waits``, shares of it);
- ``timeline_groups``: the cores in groups of equal timelines, each replayed once
  (``engine/groups.py``; e.g. P1's 48 cores are 5 groups);
- ``bytes_gm_to_ub`` / ``bytes_ub_to_gm`` and ``achieved_gbps`` (payload bytes moved);
  ``hbm_bytes`` (what the copies drew from HBM: L2 misses' line fills, bypassed bytes,
  write-backs; the payload's bus bytes without an L2 model) and ``hbm_roofline_pct``
  (``hbm_bytes`` / (``hbm_bytes_per_cycle`` x makespan)), ``hbm_roofline_source`` where that
  roofline comes from (``boards.py``);
- ``hbm_gbps``: ``hbm_bytes`` over the makespan; ``l2_hit_bytes``: GM->UB bytes L2 served;
  ``l2_start``: ``"warm"`` (L2 as the same launch before left it, as ``msprof op`` measures
  after its warm-up runs: ``costs.l2_warm_start``), ``"cold"``, or None without an L2 model;
- ``bound_by``: the verdict on the critical (last-finishing) core - bandwidth-, throughput-,
  sync- or latency-bound, HBM-bound or not, the chain of causes and the evidence
  (``verdict.py``);
- ``waits``: the chip-wide breakdown of each pipe's non-executing time;
- ``hotspots``: cycles per kernel source line and pipe, the top lines (``hotspots.py``);
- ``hazards`` and, when a golden is given, ``golden`` (mismatches, max abs / rel error: see
  :func:`compare_golden`).

:func:`format_summary` turns the dict into a few lines of text for a terminal.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from itertools import compress, repeat
from operator import attrgetter, is_, itemgetter
from typing import Any

import numpy as np

from aicore_sim.sim.boards import roofline_source
from aicore_sim.sim.isa import Opcode, Pipe
from aicore_sim.sim.trace import STALL_CAUSES, CoreTrace, Trace, core_name, stall_what
from aicore_sim.verify.compare import CHUNK, EXACT_VALUES, compare
from aicore_sim.views.hotspots import hotspots
from aicore_sim.views.verdict import classify, hbm_line, overlap

_OP, _NBYTES = attrgetter("op"), attrgetter("nbytes")

PIPE_ORDER: tuple[Pipe, ...] = (Pipe.SCALAR, Pipe.MTE2, Pipe.VECTOR, Pipe.MTE3)
"""Display order of the pipes (the order data flows through a core)."""

WAIT_KINDS = ("gm_bandwidth", "flag", "queue_full", "auto_sync", "barrier", "sync_all", "idle")
"""Where a pipe's non-executing time goes. ``flag`` is further split by flag in ``flags``."""


# --------------------------------------------------------------------------------------------
# Per-core queries
# --------------------------------------------------------------------------------------------


def copy_bytes(core: CoreTrace) -> tuple[int, int]:
    """Payload bytes (GM->UB, UB->GM) of the copies ``core`` executed."""
    at = core.index[(core.pipe == int(Pipe.MTE2)) | (core.pipe == int(Pipe.MTE3))].tolist()
    if not at:
        return 0, 0
    ins = itemgetter(*at)(core.stream) if len(at) > 1 else (core.stream[at[0]],)
    ops = list(map(_OP, ins))
    nbytes = list(map(_NBYTES, ins))
    return (sum(compress(nbytes, map(is_, ops, repeat(Opcode.COPY_GM_TO_UB)))),
            sum(compress(nbytes, map(is_, ops, repeat(Opcode.COPY_UB_TO_GM)))))


def ub_high_water(core: CoreTrace) -> int:
    """Highest UB byte reserved by ``InitBuffer`` on ``core`` (allocations are static)."""
    return max((int(a.addr) + int(a.nbytes) for a in core.allocations), default=0)


def pipe_waits(core: CoreTrace, pipe: Pipe, window: int) -> dict[str, Any]:
    """Where ``pipe`` of ``core`` spent the ``window`` cycles it was not executing.

    Executing = busy (the sum of the pipe's instruction slices); a copy's wait for shared HBM
    past its single-core time is not in it but is the ``gm_bandwidth`` stall. The rest of the
    window is split into the recorded stalls (HBM bandwidth, flag waits by flag, a full queue,
    auto-sync, barrier) and plain ``idle`` (nothing queued: the pipe was starved or the core
    had finished).
    """
    busy = core.busy_cycles(pipe)
    cycles = dict.fromkeys(WAIT_KINDS, 0)
    flags: dict[str, int] = {}
    rows = core.stall_rows[core.stall_rows[:, 0] == int(pipe)]
    dur = rows[:, 2] - rows[:, 1]
    for code, cause in enumerate(STALL_CAUSES):
        if cause in cycles:  # bank_conflict / same_granule cycles are occupancy, in busy
            cycles[cause] = int(dur[rows[:, 3] == code].sum())
    flag_code = STALL_CAUSES.index("flag")
    flag = rows[:, 3] == flag_code
    waits, where = np.unique(rows[flag, 4], return_inverse=True)  # WaitFlag stream indices
    per_wait = np.bincount(where.reshape(-1), weights=dur[flag], minlength=waits.size)
    names: dict[int, str] = {}  # by WaitFlag object: a stream shares one per distinct call
    for w, c in zip(waits.tolist(), per_wait.tolist()):
        ins = core.stream[w]
        name = names.get(id(ins))
        if name is None:
            name = names[id(ins)] = stall_what(flag_code, w, core.stream)
        flags[name] = flags.get(name, 0) + int(c)
    q = rows[:, 3] == STALL_CAUSES.index("queue_full")  # ``what``: the pipe whose queue
    queues = {Pipe(int(p)).name: int(dur[q & (rows[:, 4] == p)].sum())
              for p in np.unique(rows[q, 4]).tolist()}
    executing = busy
    waiting = max(window - executing, 0)
    stalled = sum(cycles[c] for c in STALL_CAUSES if c in cycles)
    cycles["idle"] = max(waiting - stalled, 0)
    total = max(waiting, stalled)
    shares = {k: (v / total if total else 0.0) for k, v in cycles.items()}
    flag_shares = {k: (v / total if total else 0.0) for k, v in sorted(flags.items())}
    return {"executing_cycles": int(executing), "waiting_cycles": int(waiting),
            "cycles": cycles, "shares": shares, "flags": flag_shares,
            "flag_cycles": dict(sorted(flags.items())), "queues": queues}


def _timeline_summary(core: CoreTrace, makespan: int) -> dict[str, Any]:
    """The part of a core's summary that only its timeline decides (the same for every core
    of a replay group: their flags are the same too)."""
    busy = {p.name: core.busy_cycles(p) for p in PIPE_ORDER}
    stretch = {p.name: core.gm_stretch_cycles(p) for p in PIPE_ORDER}
    finish = core.finish
    return {
        "cycles": int(finish),
        "instructions": int(core.index.size),
        "busy_cycles": busy,
        "gm_stretch_cycles": stretch,
        # busy + gm stretch + a pipelined copy's data in flight: what msprof's pipe time counts
        "pipe_time_cycles": {p.name: core.pipe_time_cycles(p) for p in PIPE_ORDER},
        # cycles of VECTOR execution lost to UB bank conflicts (msprof's bank-conflict counters)
        "bank_conflict_cycles": core.stall_cycles(Pipe.VECTOR, "bank_conflict"),
        # cycles of copies (and the scalar entry read of the kernel's parameter block) queued
        # behind other cores' requests to the same GM granules
        "same_granule_cycles": sum(core.stall_cycles(p, "same_granule")
                                   for p in (Pipe.SCALAR, Pipe.MTE2, Pipe.MTE3)),
        "utilisation": {k: (v / makespan if makespan else 0.0) for k, v in busy.items()},
        "busy_share": {k: (v / finish if finish else 0.0) for k, v in busy.items()},
        "occupied_share": {k: ((v + stretch[k]) / finish if finish else 0.0)
                           for k, v in busy.items()},
        "waits": {p.name: pipe_waits(core, p, makespan) for p in PIPE_ORDER},
        "overlap": overlap(core),
    }


def _timeline_groups(trace: Trace) -> list[list[int]]:
    groups: dict[int, list[int]] = {}
    for core in trace.cores:
        groups.setdefault(core.lead if core.lead >= 0 else -1 - core.core, []).append(core.core)
    return list(groups.values())


def _core_summaries(trace: Trace, makespan: int) -> list[dict[str, Any]]:
    by_lead: dict[int, dict[str, Any]] = {}
    out = []
    for core in trace.cores:
        shared = by_lead.get(core.lead) if core.lead >= 0 else None
        if shared is None:  # computed for this core (and kept for the rest of its group)
            timeline = _timeline_summary(core, makespan)
            if core.lead >= 0:
                by_lead[core.lead] = timeline
        else:  # a member's own copy, so no two cores share a dict
            timeline = copy.deepcopy(shared)
        gm_ub, ub_gm = copy_bytes(core)
        read, hit = l2_bytes(trace, core.core)
        out.append({"core": core.core, **{k: v for k, v in timeline.items() if k != "waits"},
                    "bytes_gm_to_ub": gm_ub, "bytes_ub_to_gm": ub_gm,
                    "l2_read_bytes": read, "l2_hit_bytes": hit,
                    "l2_hit_rate": hit / read if read else None,
                    "ub_high_water_bytes": ub_high_water(core), "waits": timeline["waits"]})
    return out


def _hit_rate(cores: list[dict[str, Any]]) -> float | None:
    read = sum(c["l2_read_bytes"] for c in cores)
    return sum(c["l2_hit_bytes"] for c in cores) / read if read else None


def l2_bytes(trace: Trace, core: int) -> tuple[int, int]:
    """(GM->UB bytes the L2 model saw, of which served from L2) of one core; (0, 0) without
    an L2 model."""
    if core < len(trace.l2_read_bytes):
        return int(trace.l2_read_bytes[core]), int(trace.l2_hit_bytes[core])
    return 0, 0


# --------------------------------------------------------------------------------------------
# Bound-by
# --------------------------------------------------------------------------------------------


# What bounds the launch: views/verdict.py (one verdict for every view).


# --------------------------------------------------------------------------------------------
# Golden comparison
# --------------------------------------------------------------------------------------------


def compare_golden(outputs: Mapping[str, np.ndarray | None],
                   golden: Mapping[str, np.ndarray | None], *,
                   chunk: int = CHUNK) -> dict[str, Any]:
    """Each output against its golden, by :func:`aicore_sim.verify.compare.compare`.

    The rule is :data:`~aicore_sim.verify.compare.EXACT_VALUES`: an element mismatches when its
    value differs from the golden's (NaN equals NaN, ``-0`` equals ``+0``); ``exact`` means no
    element mismatches. Per output: ``elements``, ``mismatches``, ``exact``,
    ``max_abs_error``, ``max_rel_error`` and ``mean_rel_error`` (relative error
    ``|got - want| / (|want| + 1e-7)``, CANN's, as in ``verify``), ``bit_mismatches``
    (elements whose bits differ, a superset of the mismatches) and ``first_mismatch``
    (``{"index", "got", "want"}`` or None); or ``error`` when shape or dtype differ or the
    output is missing. Outputs without a golden are left out.
    """
    out: dict[str, Any] = {}
    for name, ref in golden.items():
        if ref is None or name not in outputs:
            continue
        got = outputs[name]
        if got is None:
            out[name] = {"error": "output missing"}
            continue
        r = compare(name, got, ref, EXACT_VALUES, chunk=chunk)
        if r.error is not None:
            out[name] = {"error": r.error}
            continue
        out[name] = {
            "elements": r.elements,
            "mismatches": r.bad,
            "max_abs_error": r.max_abs,
            "max_rel_error": r.max_rel,
            "mean_rel_error": r.mean_rel,
            "exact": r.passed,
            "bit_mismatches": r.bit_mismatches,
            "first_mismatch": r.first_bad,
        }
    return out


# --------------------------------------------------------------------------------------------
# The summary
# --------------------------------------------------------------------------------------------


def summarize(result: Any, golden: Mapping[str, np.ndarray | None] | None = None
              ) -> dict[str, Any]:
    """The summary dict of a :class:`~aicore_sim.sim.recording.Recording` (see module docstring)."""
    platform = result.platform
    trace: Trace | None = result.trace
    d: dict[str, Any] = {
        "mode": result.mode,
        "platform": platform.name,
        "clock_mhz": float(platform.clock_mhz),
        "block_dim": len(result.program.streams),
        "instructions": sum(len(s) for s in result.program.streams),
    }
    if trace is not None:
        d.update(summarize_trace(trace, platform))
    hz: dict[str, int] = {}
    for h in result.hazards:
        hz[h.kind] = hz.get(h.kind, 0) + 1
    d["hazard_counts"] = hz
    d["hazards"] = [{"kind": h.kind, "core": h.core, "message": h.message}
                    for h in result.hazards]
    if golden is not None:
        d["golden"] = compare_golden(result.outputs, golden)
    d["wall_seconds"] = {k: round(v, 6) for k, v in result.wall.items()}
    return d


def summarize_trace(trace: Trace, platform: Any) -> dict[str, Any]:
    """The timing part of the summary: everything that needs only the Trace and the platform."""
    makespan = trace.makespan
    clock = float(platform.clock_mhz)
    cores = _core_summaries(trace, makespan)
    gm_ub = sum(c["bytes_gm_to_ub"] for c in cores)
    ub_gm = sum(c["bytes_ub_to_gm"] for c in cores)
    moved = gm_ub + ub_gm
    hbm = sum(trace.hbm_bytes) if trace.hbm_bytes else moved
    seconds = makespan / (clock * 1e6) if makespan else 0.0
    peak = platform.hbm_bytes_per_cycle * makespan
    d: dict[str, Any] = {
        "makespan_cycles": int(makespan),
        "makespan_us": makespan / clock,
        # Task Duration as a board's profiler reports it: the launch's overhead on top
        "task_cycles": int(makespan) + platform.launch_cycles(len(cores)),
        "task_us": (int(makespan) + platform.launch_cycles(len(cores))) / clock,
        "bytes_gm_to_ub": gm_ub,
        "bytes_ub_to_gm": ub_gm,
        "achieved_gbps": moved / seconds / 1e9 if seconds else 0.0,
        "hbm_peak_gbps": platform.hbm_bytes_per_cycle * clock * 1e6 / 1e9,
        "hbm_bytes": int(hbm),
        "hbm_gbps": hbm / seconds / 1e9 if seconds else 0.0,
        "hbm_roofline_pct": 100.0 * hbm / peak if peak else 0.0,
        "hbm_roofline_source": roofline_source(platform),
        "ub_capacity_bytes": int(platform.ub_size),
        "l2_hit_rate": _hit_rate(cores),
        "l2_hit_bytes": sum(c["l2_hit_bytes"] for c in cores),
        "l2_start": (("warm" if platform.costs.l2_warm_start else "cold")
                     if platform.costs.l2_line_bytes > 0 else None),
        "bank_conflict_cycles": sum(c["bank_conflict_cycles"] for c in cores),
        "same_granule_cycles": sum(c["same_granule_cycles"] for c in cores),
        "ub_high_water_bytes": max((c["ub_high_water_bytes"] for c in cores), default=0),
        "cores": cores,
        # cores replayed once for all (equal timelines, engine/groups.py), each group in order
        "timeline_groups": _timeline_groups(trace),
    }
    busy_total = {p.name: sum(c["busy_cycles"][p.name] for c in cores) for p in PIPE_ORDER}
    n = len(cores)
    d["utilisation"] = {k: (v / (makespan * n) if makespan and n else 0.0)
                        for k, v in busy_total.items()}
    d["gm_stretch_cycles"] = {p.name: sum(c["gm_stretch_cycles"][p.name] for c in cores)
                              for p in PIPE_ORDER}
    d["waits"] = _chip_waits(cores)
    d["hotspots"] = hotspots(trace)
    if cores and makespan:
        critical = max(range(n), key=lambda i: cores[i]["cycles"])
        d["bound_by"] = classify(cores[critical], d["hbm_roofline_pct"] / 100.0)
    else:
        d["bound_by"] = None
    return d


def _chip_waits(cores: list[dict[str, Any]]) -> dict[str, Any]:
    """Sum of every core's waiting cycles per pipe and cause, with shares."""
    out: dict[str, Any] = {}
    for p in PIPE_ORDER:
        cycles = dict.fromkeys(WAIT_KINDS, 0)
        flags: dict[str, int] = {}
        for c in cores:
            w = c["waits"][p.name]
            for k, v in w["cycles"].items():
                cycles[k] += v
            for what, v in w["flag_cycles"].items():
                flags[what] = flags.get(what, 0) + v
        total = sum(cycles.values())
        out[p.name] = {
            "cycles": cycles,
            "shares": {k: (v / total if total else 0.0) for k, v in cycles.items()},
            "flags": {k: (v / total if total else 0.0) for k, v in sorted(flags.items())},
        }
    return out


# --------------------------------------------------------------------------------------------
# Text
# --------------------------------------------------------------------------------------------


def _fmt_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def format_summary(d: Mapping[str, Any]) -> str:
    """A few lines of human-readable text for a summary dict."""
    lines = [f"platform {d['platform']} ({d['clock_mhz']:g} MHz), mode {d['mode']}, "
             f"{d['block_dim']} cores, {d['instructions']} instructions"]
    if "makespan_cycles" in d:
        lines.append(f"makespan {d['makespan_cycles']} cycles = {d['makespan_us']:.3f} us")
        if "task_cycles" in d:
            lines.append(f"task duration (launch overhead included) {d['task_cycles']} cycles = "
                         f"{d['task_us']:.3f} us")
        util = ", ".join(f"{k} {v:.0%}" for k, v in d["utilisation"].items())
        lines.append(f"mean pipe utilisation (executing): {util}")
        cells = d["block_dim"] * d["makespan_cycles"]
        held = {k: v for k, v in d.get("gm_stretch_cycles", {}).items() if v}
        if held and cells:
            occ = ", ".join(f"{k} {d['utilisation'][k] + v / cells:.0%}"
                            for k, v in held.items())
            lines.append(f"copy pipes occupied incl. waits for shared HBM: {occ}")
        if d.get("l2_hit_rate") is not None:
            start = {"warm": " (L2 warm at the start: as the same launch before left it)",
                     "cold": " (L2 cold at the start)"}.get(d.get("l2_start") or "", "")
            lines.append(f"L2 hit rate of GM->UB bytes: {d['l2_hit_rate']:.1%}{start}")
        if d.get("bank_conflict_cycles"):
            lines.append(f"VECTOR cycles lost to UB bank conflicts: "
                         f"{d['bank_conflict_cycles']:,} (all cores)")
        if d.get("same_granule_cycles"):
            lines.append(f"cycles queued on GM granules other cores request at once (copies "
                         f"and the kernel entry): {d['same_granule_cycles']:,} (all cores)")
        lines.append(f"moved GM->UB {_fmt_bytes(d['bytes_gm_to_ub'])}, UB->GM "
                     f"{_fmt_bytes(d['bytes_ub_to_gm'])}")
        lines.append(f"UB high-water mark {_fmt_bytes(d['ub_high_water_bytes'])} of "
                     f"{_fmt_bytes(d['ub_capacity_bytes'])}")
        if d.get("bound_by"):
            lines.append(f"bound by {d['bound_by']['label']}: {d['bound_by']['why']}")
            lines.append(hbm_line(d, _fmt_bytes))
            if d.get("hbm_roofline_source"):
                lines.append(f"  (HBM roofline: {d['hbm_roofline_source']})")
        if d.get("fidelity"):  # set by the command line (validate/confidence.py)
            lines.append(d["fidelity"]["text"])
    else:
        lines.append("no timing (functional mode)")
    hz = d.get("hazard_counts") or {}
    if hz:
        lines.append("hazards: " + ", ".join(f"{v} {k}" for k, v in sorted(hz.items())))
        for h in d["hazards"][:3]:
            lines.append(f"  [{h['kind']}] {core_name(h['core'])}: {h['message']}")
        if len(d["hazards"]) > 3:
            lines.append(f"  ... {len(d['hazards']) - 3} more in summary.json")
    else:
        lines.append("hazards: none")
    for name, g in (d.get("golden") or {}).items():
        if "error" in g:
            lines.append(f"golden {name}: {g['error']}")
        elif g["exact"]:
            line = f"golden {name}: exact ({g['elements']} elements)"
            if g.get("bit_mismatches"):
                line += (f"; {g['bit_mismatches']} differ only in bits (NaN payload or sign,"
                         f" -0 vs +0)")
            lines.append(line)
        else:
            line = (f"golden {name}: {g['mismatches']} of {g['elements']} elements differ, "
                    f"max abs {g['max_abs_error']:.3g}, max rel {g['max_rel_error']:.3g}")
            fm = g.get("first_mismatch")
            if fm:
                line += f", first at {fm['index']}: got {fm['got']!r}, want {fm['want']!r}"
            lines.append(line)
    return "\n".join(lines)


__all__ = ["compare_golden", "format_summary", "summarize", "summarize_trace"]

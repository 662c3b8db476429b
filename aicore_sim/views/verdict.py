"""What bounds a launch: one verdict, used by the text summary, ``summary.json``, ``--slack``,
``diff`` and the sweep rows.

Step of the flow: a reader of the :class:`~aicore_sim.sim.trace.Trace` after the replay (through
the per-core figures of ``summary.py``); it computes no cycle. The critical core (the last to
finish) is classified by the first rule that holds:

1. **bandwidth-bound (HBM)**: the chip's HBM traffic over the makespan is at least
   :data:`HBM_BOUND_SHARE` of the roofline, or the critical core's busiest pipe is a saturated
   copy pipe whose copies spend at least :data:`HBM_HOLD_SHARE` of their time held by the
   shared HBM bandwidth (all cores copying at once);
2. **throughput-bound (one pipe)**: one pipe is occupied (executing, or its copies held by HBM)
   at least :data:`SATURATED_SHARE` of the core's time: that pipe's work is the time;
3. **sync-bound**: at least :data:`SYNC_SHARE` of the core's time no pipe executes and none
   has a copy in flight while a pipe waits on a synchronisation (``SyncAll``, a
   ``PipeBarrier``, a flag): waiting on each other, not on work;
4. **latency-bound (phases in series)**: otherwise: the pipes take turns - their occupied
   time adds up to more than their overlap lets run at once. The evidence is the missing
   overlap: the union of the pipes' occupied time minus the busiest pipe's (what the core
   would save if its phases overlapped fully).

"HBM-bound" is answered apart from the class (yes for class 1 only), with the bytes the copies
moved beside the bytes HBM served: they differ by what L2 served (read hits) or absorbed
(writes still held at the end). The chain of causes follows an idle pipe to the issuer: a pipe
that waits on nothing queued is starved by the scalar unit, which is itself blocked (a full
queue of another pipe, a barrier, a flag, ``SyncAll``) or busy.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from aicore_sim.sim.isa import Opcode, Pipe
from aicore_sim.sim.trace import STALL_CAUSES, CoreTrace, core_name

HBM_BOUND_SHARE = 0.75
"""From this share of the HBM roofline on (the chip's traffic over the makespan), the copies of
all cores together are bound by HBM bandwidth."""
HBM_HOLD_SHARE = 0.5
"""A saturated copy pipe whose copies wait for shared HBM at least this share of their time is
bound by HBM (in bursts: every core copies at once), not by its own rate."""
SATURATED_SHARE = 0.8
"""A pipe occupied at least this share of the core's time is its bottleneck: a well-pipelined
kernel keeps its bottleneck pipe busy nearly all the time, and the others hide under it."""
SYNC_SHARE = 0.25
"""At least this share of the core's time with nothing executing or in flight, spent in a
synchronisation wait, makes the core sync-bound."""

_SYNC_CAUSES = ("flag", "barrier", "sync_all", "auto_sync")
_COPY = ("MTE2", "MTE3")
_WHAT = {"MTE2": "data movement GM->UB", "MTE3": "data movement UB->GM",
         "VECTOR": "vector compute", "SCALAR": "scalar issue and scalar reads"}
CLASSES = ("bandwidth", "throughput", "sync", "latency")


def _union(spans: np.ndarray) -> np.ndarray:
    """Sorted, disjoint (start, end) rows covering ``spans``."""
    if not spans.size:
        return spans.reshape(0, 2)
    s = spans[np.argsort(spans[:, 0], kind="stable")]
    reach = np.maximum.accumulate(s[:, 1])
    new = np.ones(len(s), bool)
    new[1:] = s[1:, 0] > reach[:-1]
    starts = s[new, 0]
    ends = reach[np.r_[np.flatnonzero(new)[1:] - 1, len(s) - 1]]
    return np.stack([starts, ends], 1)


def _length(spans: np.ndarray) -> int:
    return int((spans[:, 1] - spans[:, 0]).sum()) if spans.size else 0


def overlap(core: CoreTrace) -> dict[str, int]:
    """The critical-path figures of one core the classes need, in cycles:

    - ``union_cycles``: cycles some pipe is occupied (executing, a copy held by HBM, or its
      data in flight) or the scalar unit busy - a ``SyncAll``'s release left out;
    - ``idle_sync_cycles``: cycles none is, while a pipe waits on a synchronisation or a
      ``SyncAll`` is being released;
    - ``sync_all_cycles``: the ``SyncAll`` releases (scalar-unit time that is no work).
    """
    work = ~core.sync
    scalar = core.pipe == int(Pipe.SCALAR)
    pipes = np.stack([core.start[work & ~scalar], core.visible[work & ~scalar]], 1)
    s_rows = np.flatnonzero(scalar)
    is_sync_all = np.fromiter((core.stream[i].op is Opcode.SYNC_ALL
                               for i in core.index[s_rows].tolist()), bool, s_rows.size)
    r = s_rows[is_sync_all]
    releases = np.stack([core.start[r], core.end[r]], 1)
    rows = core.stall_rows
    codes = [STALL_CAUSES.index(c) for c in _SYNC_CAUSES]
    waiting = rows[np.isin(rows[:, 3], codes)][:, 1:3]
    spans = core.scalar_spans.reshape(-1, 2)

    def size(*parts: np.ndarray) -> int:
        return _length(_union(np.concatenate(parts).astype(np.int64)))

    # the releases lie inside the scalar spans: busy = |work u scalar| - |releases \ pipes|
    pipe_len = size(pipes)
    busy = size(pipes, spans) - (size(releases, pipes) - pipe_len)
    return {"union_cycles": busy, "idle_sync_cycles": size(pipes, spans, waiting) - busy,
            "sync_all_cycles": size(releases)}


def top_wait(waits: Mapping[str, Any]) -> tuple[str, float]:
    """The largest cause of a pipe's waiting time in words (flags and full queues named), and
    its share of the waiting."""
    shares = dict(waits["shares"])
    shares.pop("flag", None)
    for what, s in waits.get("flags", {}).items():
        shares[f"flag {what}"] = s
    queues = waits.get("queues", {})
    if queues and shares.get("queue_full"):
        total = sum(queues.values())
        q = shares.pop("queue_full")
        for pipe, c in queues.items():
            shares[f"a full {pipe} queue"] = q * c / total if total else 0.0
    if not shares:
        return "nothing queued (idle)", 0.0
    k = max(shares, key=lambda x: shares[x])
    label = {"idle": "nothing queued (idle)", "gm_bandwidth": "shared HBM bandwidth",
             "queue_full": "a full queue", "auto_sync": "auto-sync waits",
             "barrier": "a PIPE_ALL barrier", "sync_all": "SyncAll (the other cores)"
             }.get(k, k)
    return label, shares[k]


def chain(c: Mapping[str, Any], pipes: list[str]) -> str | None:
    """``"MTE2 idle <- SCALAR blocked on a full VECTOR queue (98% of its waiting)"``: why the
    ``pipes`` of core summary ``c`` whose main wait is having nothing queued were starved -
    the issuer (the scalar unit) busy, or blocked and on what."""
    idle = [p for p in pipes if p != "SCALAR"
            and top_wait(c["waits"][p])[0].startswith("nothing queued")]
    if not idle:
        return None
    s_busy = c["busy_share"]["SCALAR"]
    if s_busy >= SATURATED_SHARE:
        cause = f"SCALAR busy issuing ({s_busy:.0%} of the core's time)"
    else:
        s_cause, s_share = top_wait(c["waits"]["SCALAR"])
        if s_cause.startswith("nothing queued"):
            return None
        cause = f"SCALAR blocked on {s_cause} ({s_share:.0%} of its waiting)"
    return f"{', '.join(idle)} idle <- {cause}"


def classify(c: Mapping[str, Any], hbm_share: float) -> dict[str, Any]:
    """The verdict for critical-core summary ``c`` (``summary.py``'s per-core dict with its
    ``overlap`` figures) and the chip's HBM traffic as a share of the roofline."""
    finish = max(int(c["cycles"]), 1)
    ov = c["overlap"]
    occ = dict(c["occupied_share"])  # the scalar unit releasing a SyncAll does no work
    occ["SCALAR"] = max(occ["SCALAR"] - ov.get("sync_all_cycles", 0) / finish, 0.0)
    pipe = max(occ, key=lambda k: (occ[k], k != "SCALAR"))
    held = {k: (c["gm_stretch_cycles"][k] / (c["busy_cycles"][k] + c["gm_stretch_cycles"][k])
                if c["busy_cycles"][k] + c["gm_stretch_cycles"][k] else 0.0) for k in _COPY}
    occupied = {k: round(v * finish) for k, v in occ.items()}
    missing = max(ov["union_cycles"] - max(occupied.values()), 0)
    shares = ", ".join(f"{k} {occ[k]:.0%}" for k in occ)
    evidence = {"occupied_share": dict(occ), "hbm_roofline_share": hbm_share,
                "hbm_hold_share": held, "union_cycles": ov["union_cycles"],
                "missing_overlap_cycles": missing, "idle_sync_cycles": ov["idle_sync_cycles"]}
    saturated = occ[pipe] >= SATURATED_SHARE
    if hbm_share >= HBM_BOUND_SHARE or (saturated and pipe in _COPY
                                        and held[pipe] >= HBM_HOLD_SHARE):
        kind, short = "bandwidth", "HBM"
        why = (f"the chip's copies are bound by HBM bandwidth: HBM serves {hbm_share:.0%} of "
               f"its roofline over the launch")
        if pipe in _COPY:
            why += (f"; {pipe} is occupied {occ[pipe]:.0%} of the time, {held[pipe]:.0%} of "
                    f"it held by shared HBM")
    elif saturated:
        kind, short = "throughput", pipe
        why = (f"{pipe} ({_WHAT[pipe]}) is occupied {occ[pipe]:.0%} of the time: its work is "
               f"the time (occupied: {shares})")
        if pipe in _COPY and held[pipe] >= 0.2:
            why += f"; {held[pipe]:.0%} of it its copies wait for shared HBM"
    elif ov["idle_sync_cycles"] >= SYNC_SHARE * finish:
        kind, short = "sync", "sync"
        why = (f"for {ov['idle_sync_cycles'] / finish:.0%} of the time no pipe executes or has "
               f"data in flight while one waits on a synchronisation (occupied: {shares})")
        arrive = c["waits"]["SCALAR"]["cycles"].get("sync_all", 0)
        if ov.get("sync_all_cycles") or arrive:
            why += (f"; SyncAll: {ov.get('sync_all_cycles', 0):,} cycles of release, "
                    f"{arrive:,} waiting for the other cores to arrive")
    else:
        kind, short = "latency", "latency"
        why = (f"no pipe is saturated (occupied: {shares}; sum "
               f"{sum(occ.values()):.0%}) and the phases run in series: some pipe is occupied "
               f"{ov['union_cycles'] / finish:.0%} of the time; fully overlapped, the busiest "
               f"pipe's {occupied[pipe]:,} cycles would be the time ({missing:,} cycles, "
               f"{missing / finish:.0%}, of overlap missing)")
    link = chain(c, [p for p in ("MTE2", "VECTOR", "MTE3") if occ[p] > 0 and p != pipe])
    links = [link] if link else []
    if pipe != "SCALAR" and kind != "bandwidth" and not links:
        nxt = max((k for k in occ if k != pipe), key=lambda k: occ[k])
        cause, s = top_wait(c["waits"][nxt])
        links = [f"{nxt} waits mostly on {cause} ({s:.0%} of its waiting)"]
    if links:
        why += "; " + "; ".join(links)
    queued = int(c.get("same_granule_cycles", 0))
    evidence["same_granule_cycles"] = queued
    if queued >= 0.1 * finish:  # the kernel entry's and copies' queue on shared GM granules
        why += (f"; {queued:,} cycles ({queued / finish:.0%}) queued on GM granules other "
                f"cores request at once (the kernel entry's parameter reads, same-address "
                f"copies)")
    waits = [f"{k} {held[k]:.0%}" for k in _COPY if held[k] >= 0.2]
    if kind != "bandwidth" and waits:
        why += (f"; the copies wait for shared HBM ({', '.join(waits)} of their time): in "
                f"bursts, the cores copy at once")
    why = f"{core_name(c['core'])}, the critical core (last to finish, {finish:,} cycles): {why}"
    label = {"bandwidth": "HBM bandwidth", "throughput": f"{pipe} throughput",
             "sync": "synchronisation", "latency": "latency (phases in series)"}[kind]
    return {"class": kind, "short": short, "label": label, "pipe": pipe,
            "core": c["core"], "share": occ[pipe], "hbm_bound": kind == "bandwidth",
            "chain": links, "evidence": evidence, "why": f"{why}."}


def hbm_line(d: Mapping[str, Any], fmt_bytes: Any) -> str:
    """``HBM-bound: no - ...``: HBM's traffic against its roofline, and what the copies moved
    beside it with the part L2 served or absorbed."""
    b = d.get("bound_by") or {}
    yes = "yes" if b.get("hbm_bound") else "no"
    moved = d["bytes_gm_to_ub"] + d["bytes_ub_to_gm"]
    hbm = d.get("hbm_bytes", moved)
    line = (f"HBM-bound: {yes}: HBM traffic {fmt_bytes(hbm)} = {d.get('hbm_gbps', 0.0):.0f} "
            f"GB/s, {d['hbm_roofline_pct']:.1f}% of the {d['hbm_peak_gbps']:.0f} GB/s roofline; "
            f"copies moved {fmt_bytes(moved)} ({d['achieved_gbps']:.0f} GB/s)")
    if moved > hbm:
        hits = d.get("l2_hit_bytes", 0)
        line += (f", {fmt_bytes(moved - hbm)} more than HBM served: L2 read hits "
                 f"{fmt_bytes(hits)}, the rest writes L2 still held at the end")
    return line


__all__ = ["CLASSES", "HBM_BOUND_SHARE", "HBM_HOLD_SHARE", "SATURATED_SHARE", "SYNC_SHARE",
           "chain", "classify", "hbm_line", "overlap", "top_wait"]

"""What-if slack: the makespan a launch would have with one pipe free or faster, or HBM unlimited.

Step of the flow: after a replay, from the same :class:`~aicore_sim.sim.recording.Recording` (no
new record): each scenario is one more timing-only replay of its streams with the
per-instruction costs changed, so the figures are replays, not estimates. Scenarios, for each
pipe P of SCALAR, MTE2, VECTOR, MTE3:

- ``P free``: P's instructions cost 0 cycles (for SCALAR: the scalar instructions, the issue
  cost of every instruction and the data-cache misses);
- ``P 2x``: P's costs halved (rounded up);

and ``HBM unlimited``: no transfer waits for the shared HBM bandwidth or the chip fabric
(each copy takes its single-core time). A free copy pipe still shares HBM: that is the
``HBM unlimited`` lever.
``L2 re-reads hit``: every GM read of data read or written before hits L2, first reads still
miss and writes are written back as they are (``engine/l2.py``): the most better locality
can give, so a kernel that reads each byte once gains nothing from it;
``UB banks no conflicts``: vector calls cost what they would with their operands in distinct
bank groups (``cost.bank_beats``); ``GM granules no queue``: no copy and no kernel entry waits
behind other cores' requests for its GM granule (``cost.granule_queue_cycles``,
``cost.kernel_entry_cycles``). These levers are the ones the cost mechanisms declare
(``sim/cost/mechanisms.py``); ``HBM unlimited`` zeroes the columns its mechanisms declare.

A scenario can end *later* than the launch: with one pipe's work cheaper, the cores' copies
reach the shared HBM (and other shared queues) in another order. Such a row is kept apart
with its reason - more cycles of HBM waiting, or another issue order - never shown as a lever.

The costs are the replay's own prepared columns (``Recording.columns``, ``engine.core.prepare``),
changed and replayed by ``Recording.replay(columns=)``; scenarios run in ``jobs`` forked
processes at once (:class:`~aicore_sim.util.background.Background`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aicore_sim.sim.cost.mechanisms import BANKS, GRANULES, HBM, L2, LEVER_CHANGES, columns_of
from aicore_sim.sim.engine.core import Columns
from aicore_sim.sim.isa import Pipe
from aicore_sim.util.background import Background

PIPES = (Pipe.MTE2, Pipe.VECTOR, Pipe.MTE3, Pipe.SCALAR)
_COPY_PIPES = (int(Pipe.MTE2), int(Pipe.MTE3))


def scenarios() -> list[tuple[str, str]]:
    """(lever, change) pairs in report order: each pipe free and 2x, then the levers of the
    cost mechanisms (HBM unlimited, L2 re-reads hit, UB banks no conflicts, GM granules no
    queue)."""
    out = [(p.name, change) for p in PIPES for change in ("free", "2x")]
    out.extend(LEVER_CHANGES.items())
    return out


def _scale(v: int, change: str) -> int:
    return 0 if change == "free" else -(-v // 2)


def _columns(base: Columns, lever: str, change: str) -> Columns:
    """One core's prepared columns with the scenario's costs (the base is not modified)."""
    if lever == HBM:  # the columns of its mechanisms: HBM bytes, the chip fabric's writes
        n = len(base.gmb)
        return base._replace(**{name: [0] * n for name in columns_of(HBM)})
    if lever == GRANULES:  # the copies' time queued on a granule (the vector calls' is banks)
        return base._replace(
            occ=[o - c if q in _COPY_PIPES else o
                 for o, c, q in zip(base.occ, base.conf, base.pipe_of)],
            conf=[0 if q in _COPY_PIPES else c for c, q in zip(base.conf, base.pipe_of)])
    if lever == BANKS:  # the vector calls' conflicts only (copies' are granule queues)
        v = int(Pipe.VECTOR)
        return base._replace(
            occ=[o - c if q == v else o for o, c, q in zip(base.occ, base.conf, base.pipe_of)],
            conf=[0 if q == v else c for c, q in zip(base.conf, base.pipe_of)])
    p = int(Pipe[lever])
    occ = [_scale(o, change) if q == p else o for o, q in zip(base.occ, base.pipe_of)]
    lat = [_scale(v, change) if q == p else v for v, q in zip(base.lat, base.pipe_of)]
    issue = [_scale(v, change) for v in base.issue] if p == int(Pipe.SCALAR) else base.issue
    return base._replace(occ=occ, lat=lat, issue=issue)


def hbm_wait_cycles(trace: Any) -> int:
    """Cycles all cores' copies were held by the shared HBM past their single-core time."""
    return sum(c.gm_stretch_cycles(p) for c in trace.cores for p in (Pipe.MTE2, Pipe.MTE3))


def replay_makespan(recording: Any, columns: list[Columns], lever: str, change: str
                    ) -> tuple[int, int, tuple[int, int] | None]:
    """(makespan, HBM wait cycles, (re-read bytes, GM->UB bytes) for the L2 scenario) of one
    scenario: a timing-only replay of ``recording`` with the changed costs (``columns``: its
    own)."""
    plat = recording.platform
    reuse = None
    if lever == Pipe.SCALAR.name:  # data-cache misses are scalar-unit time
        plat = plat.with_overrides(dcache_miss_cycles=_scale(int(plat.dcache_miss_cycles), change))
    elif lever == GRANULES:  # the kernel entry's reads queue no more either
        plat = plat.with_overrides(costs={"gm_serial_cycles": 0.0})
    if lever == L2:  # the re-reads, all served by L2
        changed, l2 = recording.l2_reuse_columns()
        reuse = (sum(l2.hit_bytes), sum(l2.read_bytes))
    else:
        changed = [_columns(c, lever, change) for c in columns]
    trace = recording.replay(plat, columns=changed, check=False)[0]
    return trace.makespan, hbm_wait_cycles(trace), reuse


def _reason(lever: str, change: str, hbm_more: int) -> str:
    """Why a scenario that makes ``lever``'s work cheaper ends later."""
    effect = ("an issue-order effect, not a cost of " + lever if lever in Pipe.__members__
              else "an issue-order effect")
    if hbm_more > 0:
        return (f"the copies then wait {hbm_more:,} more cycles for shared HBM: with {lever} "
                f"{change}, the cores reach HBM together in another order ({effect})")
    return (f"instructions then issue in another order and meet the flags and queues later "
            f"({effect})")


def slack(recording: Any, makespan: int | None = None, jobs: int = 1,
          progress: Callable[[str], None] | None = None) -> list[dict[str, Any]]:
    """One row per scenario of a :class:`~aicore_sim.sim.recording.Recording`: ``lever``,
    ``change``, ``makespan_cycles``, ``delta_cycles`` (scenario - ``makespan``, default the
    recording's own) and ``delta_pct``; best lever first is :func:`lever`'s job, the rows stay
    in :func:`scenarios` order."""
    makespan = recording.cycles if makespan is None else makespan
    columns = recording.columns()
    todo = scenarios()
    results: dict[tuple[str, str], tuple[int, int, tuple[int, int] | None]] = {}
    jobs = max(1, int(jobs))
    while todo:
        batch, todo = todo[:jobs], todo[jobs:]
        running = [(sc, Background(lambda sc=sc: replay_makespan(recording, columns, *sc),
                                   enabled=jobs > 1)) for sc in batch]
        try:
            for sc, job in running:
                results[sc] = job.result()
                if progress is not None:
                    progress(f"{sc[0]} {sc[1]}")
        finally:
            for _, job in running:
                job.close()
    base_wait = hbm_wait_cycles(recording.trace) if recording.trace is not None else 0
    out = []
    for (lv, ch) in scenarios():
        m, wait, reuse = results[(lv, ch)]
        row = {"lever": lv, "change": ch, "makespan_cycles": m, "delta_cycles": m - makespan,
               "delta_pct": 100.0 * (m - makespan) / makespan if makespan else 0.0}
        if reuse is not None:
            row["reread_bytes"], row["read_bytes"] = reuse
        if m > makespan:
            row["reason"] = _reason(lv, WORDS[ch], wait - base_wait)
        out.append(row)
    return out


WORDS = {"free": "free", "2x": "2x faster", "unlimited": "unlimited",
         "re-reads hit": "re-reads hit", "no conflicts": "no conflicts", "no queue": "no queue"}


def lever(rows: list[dict[str, Any]]) -> str | None:
    """The lever whose best scenario shortens the makespan most (None if none does)."""
    best = min(rows, key=lambda r: r["delta_cycles"], default=None)
    return best["lever"] if best is not None and best["delta_cycles"] < 0 else None


def _reuse_words(r: dict[str, Any]) -> str:
    """The L2 row's reuse: what share of the GM->UB bytes re-read data (the only reads an
    L2 can serve)."""
    if "reread_bytes" not in r:
        return ""
    read = r["read_bytes"]
    share = r["reread_bytes"] / read if read else 0.0
    return f": {share:.1%} of the GM->UB bytes re-read data (read or written before)"


def format_slack(rows: list[dict[str, Any]], makespan: int,
                 verdict: dict[str, Any] | None = None) -> str:
    """The verdict (``verdict.py``, the summary's) first, then ``"MTE2 2x faster -> ..."``
    lines best first; scenarios that end later apart, each with its reason."""
    if not rows:
        return "slack: nothing to replay"
    lines = [f"what-if slack (timing-only replays of the recorded streams; now {makespan:,} "
             f"cycles):"]
    if verdict:
        lines.append(f"  verdict (as the summary): bound by {verdict['label']}; HBM-bound: "
                     f"{'yes' if verdict.get('hbm_bound') else 'no'}")
    width = max(len(f"{r['lever']} {WORDS[r['change']]}") for r in rows)
    later = [r for r in rows if r["delta_cycles"] > 0]
    for r in sorted((r for r in rows if r["delta_cycles"] <= 0),
                    key=lambda r: (r["delta_cycles"], r["lever"], r["change"])):
        lines.append(f"  {r['lever'] + ' ' + WORDS[r['change']]:<{width}} -> "
                     f"{r['makespan_cycles']:>12,} cycles ({r['delta_pct']:+.1f} %)"
                     + _reuse_words(r))
    if later:
        lines.append("  not levers - these end later:")
        for r in sorted(later, key=lambda r: (r["delta_cycles"], r["lever"], r["change"])):
            lines.append(f"  {r['lever'] + ' ' + WORDS[r['change']]:<{width}} -> "
                         f"{r['makespan_cycles']:>12,} cycles ({r['delta_pct']:+.1f} %)"
                         f"{_reuse_words(r)}: {r['reason']}")
    best = lever(rows)
    lines.append(f"  lever: {best}" if best else "  lever: none (no scenario is faster)")
    return "\n".join(lines)


__all__ = ["BANKS", "GRANULES", "HBM", "L2", "PIPES", "WORDS", "format_slack", "hbm_wait_cycles",
           "lever", "replay_makespan", "scenarios", "slack"]

"""The tests' validator of a Chrome trace against Perfetto's JSON import rules: the events
Perfetto would silently drop or merge (standard library only). Used by the export, trace-rule
and command-line tests on every trace the writer (``aicore_sim/export/perfetto/``) makes;
``tests/test_perfetto_ui.py`` checks the same promises in the real Perfetto UI."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any


def _sub_ns(x: float) -> bool:
    return abs(x * 1000 - round(x * 1000)) > 1e-6


def validate_chrome_trace(obj: Mapping[str, Any] | Iterable[Mapping[str, Any]]) -> list[str]:
    """Problems that make Perfetto drop or merge events; an empty list means none.

    Rules checked: every event has a ``ph``; no pid or tid is 0; a tid belongs to one pid only
    (tids are global in Perfetto's JSON import); timestamps and durations have no fraction of a
    nanosecond; ``X`` events have ``dur >= 0`` and never overlap or nest in another ``X``
    event of the same (pid, tid) — two slices starting at the same ns nest, and so does a 0-ns
    slice at the start or end of another; each flow id has one ``s`` and one ``f`` and the
    ``f`` is not earlier than the ``s``; counters carry numeric args.
    """
    events = obj.get("traceEvents") if isinstance(obj, Mapping) else list(obj)
    if not isinstance(events, list):
        return ["no 'traceEvents' list"]
    problems: list[str] = []

    def bad(i: int, msg: str) -> None:
        if len(problems) < 200:
            problems.append(f"event {i}: {msg}")

    owner: dict[int, int] = {}
    slices: dict[tuple[int, int], list[tuple[int, int, int]]] = {}
    flows: dict[tuple[str, Any], dict[str, tuple[int, float]]] = {}
    for i, e in enumerate(events):
        if not isinstance(e, Mapping) or "ph" not in e:
            bad(i, "not an object with a 'ph'")
            continue
        ph = e["ph"]
        pid, tid = e.get("pid"), e.get("tid")
        if pid == 0:
            bad(i, "pid 0")
        if tid == 0:
            bad(i, "tid 0")
        if isinstance(tid, int) and isinstance(pid, int):
            if owner.setdefault(tid, pid) != pid:
                bad(i, f"tid {tid} used by pids {owner[tid]} and {pid} (tids must be unique)")
        ts = e.get("ts")
        if ph != "M":
            if not isinstance(ts, (int, float)) or not math.isfinite(ts):
                bad(i, f"{ph} event without a finite ts")
                continue
            if _sub_ns(ts):
                bad(i, f"ts {ts} has a sub-nanosecond fraction")
        if ph == "X":
            dur = e.get("dur")
            if not isinstance(dur, (int, float)) or dur < 0:
                bad(i, f"X event with dur {dur!r} (must be >= 0)")
                continue
            if _sub_ns(dur):
                bad(i, f"dur {dur} has a sub-nanosecond fraction")
            t0 = round(ts * 1000)
            slices.setdefault((pid, tid), []).append((t0, t0 + round(dur * 1000), i))
        elif ph in ("s", "t", "f"):
            key = (str(e.get("cat", "")), e.get("id"))
            if e.get("id") is None:
                bad(i, "flow event without an id")
                continue
            seen = flows.setdefault(key, {})
            if ph in seen:
                bad(i, f"flow id {key[1]} has two '{ph}' events")
            seen[ph] = (i, ts)
        elif ph == "C":
            args = e.get("args")
            if not isinstance(args, Mapping) or not all(
                    isinstance(v, (int, float)) for v in args.values()):
                bad(i, "counter without numeric args")
    for (pid, tid), rows in slices.items():
        rows.sort()
        for (a0, a1, ia), (b0, b1, ib) in zip(rows, rows[1:]):
            if b0 < a1 and b0 != a0:
                bad(ib, f"X event overlaps event {ia} on pid {pid} tid {tid} "
                        f"([{a0}, {a1}) ns vs start {b0} ns)")
            elif b0 == a0 or (b0 == a1 and (a0 == a1 or b0 == b1)):
                bad(ib, f"X event nests with event {ia} on pid {pid} tid {tid} "
                        f"([{a0}, {a1}) ns and [{b0}, {b1}) ns: a 0-ns slice touching another)")
    for (_cat, fid), seen in flows.items():
        if "s" not in seen or "f" not in seen:
            i = next(iter(seen.values()))[0]
            bad(i, f"flow id {fid} lacks its {'s' if 's' not in seen else 'f'} event")
            continue
        if seen["f"][1] < seen["s"][1]:
            bad(seen["f"][0], f"flow id {fid} points backward in time "
                              f"({seen['s'][1]} -> {seen['f'][1]})")
    return problems


__all__ = ["validate_chrome_trace"]

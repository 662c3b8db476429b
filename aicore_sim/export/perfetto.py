"""Chrome Trace Event JSON for Perfetto: one process per core, one thread per pipe.

Step of the flow: an exporter after the replay; it reads the :class:`~aicore_sim.trace.Trace`
only and never recomputes a cycle.

Layout of the file (``{"traceEvents": [...], "displayTimeUnit": "ns", "otherData": {...}}``):

- process ``"AIV <core>"`` with ``pid = core + 1``;
- threads ``SCALAR``, ``MTE2``, ``VECTOR``, ``MTE3`` (and ``<PIPE> stalls`` where a pipe
  stalled) with ``tid = core * 8 + lane + 1`` — unique across the trace and never 0;
- one complete event (``"ph": "X"``) per executed instruction, args: opcode, index in the
  core's stream, start/end/``cycles``, bytes or elements, buffers, repeat, mask; the SCALAR
  thread also carries ``issue`` slices (scalar-unit busy time outside scalar instructions);
- stall slices (cause, what, cycles) on the pipe's stall thread;
- a flow arrow (``"s"`` → ``"f"``, same ``id``) from every SetFlag to the WaitFlag it released;
- a counter (``"ph": "C"``) ``UB bytes`` per core: ``reserved`` (InitBuffer total) and ``live``
  (buffers between the first and the last instruction touching them).

Timestamps are µs at the platform clock, quantised to whole ns (3 decimals); cycles are kept in
the args. Perfetto silently drops or merges events that break its import rules;
:func:`validate_chrome_trace` checks those rules with the standard library only.
"""

from __future__ import annotations

import gzip as _gzip
import json
import math
import os
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from aicore_sim.isa import Instr, Opcode, Pipe, Space
from aicore_sim.trace import CoreTrace, Trace

LANES: tuple[Pipe, ...] = (Pipe.SCALAR, Pipe.MTE2, Pipe.VECTOR, Pipe.MTE3)
"""Thread order inside a core: the order data flows through it."""

TIDS_PER_CORE = 8  # 4 pipe threads + 4 stall threads
LARGE_EVENTS = 200_000
"""Above this many events :func:`write_trace` gzips even when the path does not say so."""

_CAT = {
    Opcode.COPY_GM_TO_UB: "copy", Opcode.COPY_UB_TO_GM: "copy",
    Opcode.SET_FLAG: "sync", Opcode.WAIT_FLAG: "sync", Opcode.BARRIER: "sync",
    Opcode.GET_VALUE_GM: "scalar", Opcode.GET_VALUE_UB: "scalar", Opcode.SET_VALUE_UB: "scalar",
}


def pid_of(core: int) -> int:
    """Process id of a core (never 0)."""
    return core + 1


def tid_of(core: int, pipe: Pipe, stall: bool = False) -> int:
    """Thread id of a core's pipe lane (or of its stall lane): unique, never 0."""
    lane = LANES.index(pipe) + (len(LANES) if stall else 0)
    return core * TIDS_PER_CORE + lane + 1


def _ns(cycles: np.ndarray | int, clock_mhz: float) -> np.ndarray:
    """Cycles to whole nanoseconds (rounded), as int64."""
    return np.rint(np.asarray(cycles, dtype=np.float64) * (1000.0 / clock_mhz)).astype(np.int64)


def _us(ns: int) -> float:
    return int(ns) / 1000


def _name(ins: Instr) -> str:
    if ins.op in (Opcode.SET_FLAG, Opcode.WAIT_FLAG):
        return f"{ins.op.value}<{ins.event.name}>({ins.event_id})"
    if ins.op is Opcode.BARRIER:
        return f"PipeBarrier<PIPE_{ins.barrier.name if ins.barrier is not None else 'ALL'}>"
    return ins.op.value


def instr_args(ins: Instr, index: int, start: int, end: int) -> dict[str, Any]:
    """The args of one instruction's slice (cycles included, never recomputed)."""
    a: dict[str, Any] = {"opcode": ins.op.value, "index": index, "cycles": end - start,
                         "start_cycle": start, "end_cycle": end}
    if ins.nbytes:
        a["bytes"] = ins.nbytes
    if ins.count:
        copy = ins.op in (Opcode.COPY_GM_TO_UB, Opcode.COPY_UB_TO_GM)
        a["block_count" if copy else "elements"] = ins.count
    if ins.repeat:
        a["repeat"] = ins.repeat
        a["mask"] = ins.mask
    if ins.dst is not None:
        a["dst"] = f"{ins.dst.buf}@{ins.dst.addr}"
        if ins.dst.space is Space.UB:
            a["buffer"] = ins.dst.buf
    if ins.src:
        a["src"] = ",".join(f"{o.buf}@{o.addr}" for o in ins.src)
        ub = [o.buf for o in ins.src if o.space is Space.UB]
        if ub and "buffer" not in a:
            a["buffer"] = ub[0]
    if ins.dst is not None and ins.dst.dtype is not None:
        a["dtype"] = str(ins.dst.dtype)
    if ins.event is not None:
        a["event"] = ins.event.name
        a["event_id"] = ins.event_id
    if ins.implicit:
        a["implicit"] = True
    if ins.label:
        a["label"] = ins.label
    return a


def _issue_pieces(spans: np.ndarray, scalar_ev: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Scalar-unit busy spans minus the scalar instructions' own slices (no overlaps)."""
    out: list[tuple[int, int]] = []
    ev = sorted(scalar_ev)
    j = 0
    for a, b in spans.tolist():
        cur = a
        while j < len(ev) and ev[j][1] <= cur:
            j += 1
        k = j
        while k < len(ev) and ev[k][0] < b:
            s, e = ev[k]
            if s > cur:
                out.append((cur, min(s, b)))
            cur = max(cur, e)
            k += 1
        if cur < b:
            out.append((cur, b))
    return [(a, b) for a, b in out if b > a]


def _ub_counter(ct: CoreTrace) -> list[tuple[int, int, int]]:
    """(cycle, reserved bytes, live bytes) change points of one core's UB occupancy."""
    if not ct.allocations:
        return []
    reserved = sum(int(a.nbytes) for a in ct.allocations)
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    stream = ct.stream
    for i, s, e in zip(ct.index.tolist(), ct.start.tolist(), ct.end.tolist()):
        ins = stream[i]
        ops = ins.src + ((ins.dst,) if ins.dst is not None else ())
        for o in ops:
            if o.space is Space.UB:
                if o.buf not in first or s < first[o.buf]:
                    first[o.buf] = s
                if e > last.get(o.buf, -1):
                    last[o.buf] = e
    size = {a.name: int(a.nbytes) for a in ct.allocations}
    delta: dict[int, int] = {}
    for buf, t0 in first.items():
        n = size.get(buf, 0)
        delta[t0] = delta.get(t0, 0) + n
        delta[last[buf]] = delta.get(last[buf], 0) - n
    points = [(0, reserved, 0)]
    live = 0
    for t in sorted(delta):
        live += delta[t]
        if points and points[-1][0] == t:
            points[-1] = (t, reserved, live)
        else:
            points.append((t, reserved, live))
    return points


def chrome_trace(trace: Trace, metadata: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The Chrome Trace Event object of ``trace`` (see the module docstring)."""
    clock = float(trace.clock_mhz)
    events: list[dict[str, Any]] = []
    flow_id = 0
    for ct in trace.cores:
        core, pid = ct.core, pid_of(ct.core)
        events.append({"ph": "M", "name": "process_name", "pid": pid,
                       "tid": tid_of(core, Pipe.SCALAR), "args": {"name": f"AIV {core}"}})
        events.append({"ph": "M", "name": "process_sort_index", "pid": pid,
                       "tid": tid_of(core, Pipe.SCALAR), "args": {"sort_index": core}})
        stall_pipes = {int(s[0]) for s in ct.stalls}
        for k, p in enumerate(LANES):
            lanes = [(tid_of(core, p), p.name, 2 * k)]
            if int(p) in stall_pipes:
                lanes.append((tid_of(core, p, stall=True), f"{p.name} stalls", 2 * k + 1))
            for tid, name, order in lanes:
                events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                               "args": {"name": name}})
                events.append({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid,
                               "args": {"sort_index": order}})
        s_ns, e_ns = _ns(ct.start, clock), _ns(ct.end, clock)
        stream = ct.stream
        where: dict[int, tuple[int, int]] = {}  # stream index -> (tid, start ns)
        scalar_ev: list[tuple[int, int]] = []
        for r, (i, s, e) in enumerate(zip(ct.index.tolist(), ct.start.tolist(),
                                          ct.end.tolist())):
            ins = stream[i]
            tid = tid_of(core, ins.pipe)
            t0, t1 = int(s_ns[r]), int(e_ns[r])
            where[i] = (tid, t0)
            if ins.pipe is Pipe.SCALAR:
                scalar_ev.append((s, e))
            events.append({"ph": "X", "name": _name(ins), "cat": _CAT.get(ins.op, "vector"),
                           "pid": pid, "tid": tid, "ts": _us(t0), "dur": _us(t1 - t0),
                           "args": instr_args(ins, i, s, e)})
        stid = tid_of(core, Pipe.SCALAR)
        for a, b in _issue_pieces(ct.scalar_spans, scalar_ev):
            t0, t1 = int(_ns(a, clock)), int(_ns(b, clock))
            events.append({"ph": "X", "name": "issue", "cat": "scalar", "pid": pid,
                           "tid": stid, "ts": _us(t0), "dur": _us(t1 - t0),
                           "args": {"cycles": b - a, "start_cycle": a, "end_cycle": b}})
        for p, a, b, cause, what in ct.stalls:
            t0, t1 = int(_ns(a, clock)), int(_ns(b, clock))
            events.append({"ph": "X", "name": f"stall: {cause}", "cat": "stall", "pid": pid,
                           "tid": tid_of(core, Pipe(p), stall=True), "ts": _us(t0),
                           "dur": _us(t1 - t0),
                           "args": {"cause": cause, "what": what, "cycles": b - a,
                                    "start_cycle": a, "end_cycle": b}})
        for w, s in ct.releases.tolist():
            if w not in where or s not in where:
                continue
            (stid_, sts), (wtid, wts) = where[s], where[w]
            if wts < sts:  # never emit a backward arrow (Perfetto drops it)
                continue
            flow_id += 1
            ev = stream[w].event
            name = f"flag {ev.name if ev is not None else ''}({stream[w].event_id})"
            events.append({"ph": "s", "name": name, "cat": "flag", "id": flow_id, "pid": pid,
                           "tid": stid_, "ts": _us(sts)})
            events.append({"ph": "f", "bp": "e", "name": name, "cat": "flag", "id": flow_id,
                           "pid": pid, "tid": wtid, "ts": _us(wts)})
        for t, reserved, live in _ub_counter(ct):
            events.append({"ph": "C", "name": "UB bytes", "pid": pid,
                           "ts": _us(int(_ns(t, clock))),
                           "args": {"reserved": reserved, "live": live}})
    other = {"clock_mhz": clock, "makespan_cycles": trace.makespan,
             "cores": len(trace.cores), "time_unit": "us (cycles in args)"}
    if metadata:
        other.update(metadata)
    return {"traceEvents": events, "displayTimeUnit": "ns", "otherData": other}


def _dumps(obj: Any) -> bytes:
    try:
        import orjson  # optional: ~10x faster on big traces
    except ImportError:
        return json.dumps(obj, separators=(",", ":")).encode()
    return orjson.dumps(obj, option=orjson.OPT_SERIALIZE_NUMPY)


def write_trace(trace: Trace | Mapping[str, Any], path: str | os.PathLike,
                gzip: bool | None = None, metadata: Mapping[str, Any] | None = None) -> Path:
    """Write the Chrome trace of ``trace`` (or an already built trace object) atomically.

    ``gzip=None`` gzips when ``path`` ends with ``.gz`` or when the trace has more than
    :data:`LARGE_EVENTS` events (then ``.gz`` is appended). Returns the path written. The file
    appears complete or not at all (temporary file in the same folder + ``os.replace``).
    """
    obj = chrome_trace(trace, metadata) if isinstance(trace, Trace) else trace
    path = Path(path)
    if gzip is None:
        gzip = path.suffix == ".gz" or len(obj["traceEvents"]) > LARGE_EVENTS
    if gzip and path.suffix != ".gz":
        path = path.with_name(path.name + ".gz")
    data = _dumps(obj)
    if gzip:
        data = _gzip.compress(data, compresslevel=6, mtime=0)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def read_trace(path: str | os.PathLike) -> dict[str, Any]:
    """Load a trace written by :func:`write_trace` (``.json`` or ``.json.gz``)."""
    path = Path(path)
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = _gzip.decompress(raw)
    return json.loads(raw)


# --------------------------------------------------------------------------------------------
# Validation of Perfetto's import rules
# --------------------------------------------------------------------------------------------


def _sub_ns(x: float) -> bool:
    return abs(x * 1000 - round(x * 1000)) > 1e-6


def validate_chrome_trace(obj: Mapping[str, Any] | Iterable[Mapping[str, Any]]) -> list[str]:
    """Problems that make Perfetto drop or merge events; an empty list means none.

    Rules checked: every event has a ``ph``; no pid or tid is 0; a tid belongs to one pid only
    (tids are global in Perfetto's JSON import); timestamps and durations have no fraction of a
    nanosecond; ``X`` events have ``dur >= 0`` and never overlap another ``X`` event of the same
    (pid, tid); each flow id has one ``s`` and one ``f`` and the ``f`` is not earlier than the
    ``s``; counters carry numeric args.
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
        for (a0, a1, ia), (b0, _b1, ib) in zip(rows, rows[1:]):
            if b0 < a1:
                bad(ib, f"X event overlaps event {ia} on pid {pid} tid {tid} "
                        f"([{a0}, {a1}) ns vs start {b0} ns)")
    for (_cat, fid), seen in flows.items():
        if "s" not in seen or "f" not in seen:
            i = next(iter(seen.values()))[0]
            bad(i, f"flow id {fid} lacks its {'s' if 's' not in seen else 'f'} event")
            continue
        if seen["f"][1] < seen["s"][1]:
            bad(seen["f"][0], f"flow id {fid} points backward in time "
                              f"({seen['s'][1]} -> {seen['f'][1]})")
    return problems


__all__ = [
    "LANES",
    "chrome_trace",
    "instr_args",
    "pid_of",
    "read_trace",
    "tid_of",
    "validate_chrome_trace",
    "write_trace",
]

"""One AIV core in the replay: a scalar issuer feeding three in-order pipes.

The scalar issuer walks the core's recorded stream in program order. It pays each
instruction's issue cost on the scalar unit and pushes it into its pipe's bounded queue; it
stalls only when a queue is full, when a scalar UB read must wait for its producer
(compiler auto-sync), on ``PipeBarrier<PIPE_ALL>``, and on flags aimed at the scalar unit.
It keeps a local clock ahead of SimPy's and synchronises only when it must look at another
process's state, so issuing costs no SimPy event.

Each of VECTOR, MTE2 and MTE3 executes its queue strictly in order, one instruction at a
time. Flags are counters; a SimPy event is created only when a pipe really has to wait. On the
timed image an instruction reads its sources when it starts and writes its result when it
completes, so a missing flag shows up as a wrong number, as on hardware.
"""

from __future__ import annotations

from array import array
from collections import Counter, defaultdict, deque
from itertools import compress
from typing import NamedTuple

import numpy as np
import simpy

from aicore_sim.sim import cost, semantics
from aicore_sim.sim.engine.dcache import DCache
from aicore_sim.sim.engine.events import fire_at
from aicore_sim.sim.engine.gm import GmBandwidth
from aicore_sim.sim.errors import DeadlockError
from aicore_sim.sim.isa import HardEvent, Instr, Opcode, Pipe
from aicore_sim.sim.memory import MemoryImage
from aicore_sim.sim.trace import STALL_CAUSES, core_name

# codes of STALL_CAUSES
_FLAG, _QUEUE_FULL, _GM_BW, _AUTO_SYNC, _BARRIER_WAIT, _BANK, _GRANULE, _SYNC_WAIT = range(8)

S, V, MTE2, MTE3 = Pipe.SCALAR, Pipe.VECTOR, Pipe.MTE2, Pipe.MTE3
_SET, _WAIT, _BARRIER = Opcode.SET_FLAG, Opcode.WAIT_FLAG, Opcode.BARRIER
_SYNC_ALL = Opcode.SYNC_ALL
_GV_GM, _GV_UB, _SV_UB = Opcode.GET_VALUE_GM, Opcode.GET_VALUE_UB, Opcode.SET_VALUE_UB
_WRITE = Opcode.COPY_UB_TO_GM
_EVENT_INDEX = {e: n for n, e in enumerate(HardEvent)}


def _done_text(cause: int, pipe: int, index: int) -> str:
    return f"{STALL_CAUSES[cause]}: waits {Pipe(pipe).name} instruction #{index}"


def _full_text(pipe: int) -> str:
    return f"queue of {Pipe(pipe).name} full"


class ChipBarrier:
    """The cross-core barrier of ``SyncAll``: every core of the launch waits at its k-th
    SyncAll until all ``cores`` have arrived there, and all are released ``cost`` cycles
    (the SyncAll's occupancy) after the last arrival. A replayed core arrives with the weight
    of the cores whose timeline it stands for (``engine/groups.py``)."""

    def __init__(self, env: simpy.Environment, cores: int) -> None:
        self.env, self.cores = env, cores
        self.open: dict[int, list] = {}  # k -> [cores arrived, latest arrival, release event]

    def arrive(self, k: int, t: int, weight: int, cost: int) -> simpy.Event:
        """Arrive at barrier ``k`` at cycle ``t``; the event's value is the release cycle."""
        entry = self.open.get(k)
        if entry is None:
            entry = self.open[k] = [0, t, self.env.event()]
        entry[0] += weight
        if t > entry[1]:
            entry[1] = t
        ev = entry[2]
        if entry[0] >= self.cores:
            del self.open[k]
            at = entry[1] + cost
            fire_at(self.env, ev, at - self.env.now, at)
        return ev

    def arrived(self, k: int) -> int:
        entry = self.open.get(k)
        return entry[0] if entry is not None else self.cores


class Columns(NamedTuple):
    """One core's prepared columns: per instruction (stream position), what the replay's hot
    loops need so they price nothing and hash no enums. The field order is this declaration;
    :func:`prepare` builds the columns by name from the rows of :data:`ROW_FIELDS`, and the
    grouping key of ``groups.py`` is every field but :data:`NOT_KEYED`."""

    occ: list[int]  # cycles the instruction holds its pipe (cost.Price)
    issue: list[int]  # cycles the scalar unit spends issuing it
    gmb: list[int]  # bytes it draws from the shared HBM server
    wbb: list[int]  # HBM bytes it sets off in the background (L2 write-backs it evicts)
    lat: list[int]  # cycles after its occupancy before its result is visible (copies)
    # cycles of its occupancy lost to a conflict: UB bank conflicts of a vector call, a GM
    # granule shared with other cores' requests for a copy (engine/l2.py)
    conf: list[int]
    kind: list[int]  # 0 = work, 1 = WaitFlag, 2 = SetFlag, 3 = PipeBarrier (executed as work)
    fkey: list[int]  # (event, id) of a flag as one int
    eff: list[bool]  # has a numeric effect
    pipe_of: bytearray  # the pipe number of each instruction
    sets_left: dict[int, int]  # SetFlags per flag key
    fab: list[int]  # bytes a UB -> GM write moves across the chip fabric (engine/fabric.py)


# What the replay adds to an instruction's cost.Price, in the order _row appends it; a row is
# the Price's fields and these (ROW_FIELDS), each a column of the same name.
_FACTS = ("fab", "kind", "fkey", "eff", "pipe_of")
ROW_FIELDS: tuple[str, ...] = cost.Price._fields + _FACTS
# Columns the grouping key leaves out, and why: everything else is compared (groups.py).
NOT_KEYED = {"eff": "a replay that groups cores applies no effects",
             "sets_left": "counted from kind and fkey"}


def prepare(stream: list[Instr], platform, priced: dict | None = None) -> Columns:
    """The :class:`Columns` of one stream: occupancy, issue cost, shared-HBM bytes and
    latency from the cost package (then the L2 model's split of GM bytes, ``engine/l2.py``,
    when the platform has one); flag kinds and keys; effects; pipes; SetFlags per flag.
    Read-only for the replay, so replays of one stream on platforms with the same costs and
    clock can share it (``replay(prepared=)``). ``priced`` (id of an Instr -> its row of
    :data:`ROW_FIELDS`) may be shared by the streams of one launch, which share Instr objects
    (the record pass interns equal instructions): each distinct object is priced once, and a
    stream is its objects' rows turned into columns."""
    n = len(stream)
    if priced is None:
        priced = {}
    known = priced.get
    fabric = platform.costs.gm_fabric_ai_core_bytes_per_cycle > 0
    rows = [known(id(ins)) or _row(ins, platform, fabric, priced) for ins in stream]
    cols = dict(zip(ROW_FIELDS, map(list, zip(*rows)))) if n else {f: [] for f in ROW_FIELDS}
    cols["pipe_of"] = bytearray(cols["pipe_of"])
    # SetFlags per flag
    sets_left = dict(Counter(compress(cols["fkey"], map((2).__eq__, cols["kind"]))))
    return Columns(**cols, wbb=[0] * n, sets_left=sets_left)


def _row(ins: Instr, platform, fabric: bool, priced: dict) -> tuple:
    """One instruction's row of :data:`ROW_FIELDS`: its cost.Price and the :data:`_FACTS`,
    kept in ``priced`` under the id of the object."""
    op = ins.op
    p = cost.price(ins, platform)
    fab = p.gmb if fabric and op is _WRITE else 0
    kind, key, eff = 0, 0, False
    if op is _SET or op is _WAIT:
        kind = 2 if op is _SET else 1
        key = _EVENT_INDEX[ins.event] * 8 + ins.event_id
    elif op is _BARRIER:
        kind = 3
    elif op in semantics.HAS_EFFECT:
        eff = True
    row = priced[id(ins)] = p + (fab, kind, key, eff, int(ins.pipe))  # _FACTS' order
    return row


class CoreSim:
    """Replay state of one core: queues, flags, completion counters and trace buffers."""

    def __init__(self, env: simpy.Environment, core: int, stream: list[Instr], platform,
                 gm: GmBandwidth, image: MemoryImage | None, start: int,
                 prepared: Columns | None = None, weight: int = 1,
                 barrier: ChipBarrier | None = None, entry: tuple[int, int] = (0, 0),
                 fabric=None) -> None:
        self.env, self.core, self.stream = env, core, stream
        self.fabric = fabric  # the chip fabric writes cross (fabric.py), or None
        self.barrier = barrier  # the launch's SyncAll barrier
        self.syncs = 0  # SyncAll calls passed
        self.weight = weight  # cores whose timeline this one stands for (engine/__init__.py)
        self.depth = int(platform.queue_depth)
        self.miss_cycles = int(platform.dcache_miss_cycles)
        self.dcache = DCache(platform.dcache_size, platform.dcache_line)
        self.gm = gm
        self.image = image
        self.ub = image.ub[core] if image is not None else None
        self.start = start
        # the scalar unit's kernel entry (cost.kernel_entry_cycles): (cycles, of which queued
        # behind the other cores' reads of the same granule)
        self.entry = entry
        self.q: list[deque] = [deque(), deque(), deque(), deque()]
        self.wake: list[simpy.Event | None] = [None, None, None, None]
        self.space_waiter: tuple[int, simpy.Event] | None = None
        # flag key -> (SetFlag, cycle) of its sets not yet consumed, oldest first
        self.flags: defaultdict[int, deque] = defaultdict(deque)
        self.flag_waiters: dict[int, simpy.Event] = {}
        if prepared is None:
            prepared = prepare(stream, platform)
        self.occ, self.issue, self.gmb, self.lat = (prepared.occ, prepared.issue,
                                                    prepared.gmb, prepared.lat)
        self.wbb, self.conf = prepared.wbb, prepared.conf
        self.fab = prepared.fab
        self.kind, self.fkey, self.eff = prepared.kind, prepared.fkey, prepared.eff
        self.pipe_of = prepared.pipe_of
        self.sets_left = dict(prepared.sets_left)  # counted down by the replay
        self.issued_at = [0] * len(stream)  # cycle each instruction entered its queue
        self.done = [0, 0, 0, 0]
        # per pipe, per instruction in its program order: the cycle by which it and every
        # earlier instruction of the pipe are complete and visible (latency included)
        self.ends: list[list[int]] = [[], [], [], []]
        self.popped: list[deque] = [deque(), deque(), deque(), deque()]  # start cycles
        self.issued = [0, 0, 0, 0]
        self.watch: list[list[tuple[int, simpy.Event]]] = [[], [], [], []]
        # pipe -> what it is blocked on: a text, or (text function, its arguments) when the
        # block is frequent (a flag, a full queue): formatted only for a deadlock
        self.blocked: dict[int, str | tuple] = {}
        self.issuer_done = False
        # trace buffers (see trace.py for their meaning)
        # Flat lists of ints, extended with `+=` (4x cheaper per row than array('q').extend,
        # measured: the replay's hottest lines); trace.py turns them into numpy arrays.
        # (stream index, start, end, visible) per executed instruction: it holds its pipe
        # [start, end) and its result is visible from `visible` (>= end; copies' latency);
        # an array('q') once check_finished has run
        self.events: list[int] = []
        self.spans: list[int] = []  # (start, end) of scalar-unit busy time, coalesced
        self.releases: list[int] = []  # (WaitFlag index, SetFlag index)
        # (pipe, start, end, cause code, what) as ints; trace.py says what `what` is per cause
        self.stalls: list[int] = []
        # (SetFlag index, the earliest set of its flag still pending at its cycle), found by
        # check_finished from the timeline
        self.double_sets: list[tuple[int, int]] = []

    # -- flags -------------------------------------------------------------------------------

    def _set_flag(self, key: int, index: int, at: int) -> None:
        """SetFlag ``index`` makes flag ``key`` visible at cycle ``at``."""
        self.sets_left[key] -= 1
        waiter = self.flag_waiters.pop(key, None)
        if waiter is not None:
            fire_at(self.env, waiter, at - self.env.now, (index, at))
        else:
            self.flags[key].append((index, at))

    def _flag_event(self, pipe: int, i: int) -> simpy.Event:
        """What WaitFlag ``i`` on ``pipe`` waits for when no SetFlag of its flag has executed
        yet: an event the next one fires with (SetFlag index, cycle the flag is visible). The
        caller yields it, then deletes ``blocked[pipe]``."""
        key = self.fkey[i]
        if self.sets_left.get(key, 0) == 0:
            raise DeadlockError(
                f"{core_name(self.core)}, pipe {Pipe(pipe).name} {self._flag_wait_text(i)}, "
                f"which no later SetFlag of this core sets"
            )
        ev = self.flag_waiters[key] = self.env.event()
        self.blocked[pipe] = (self._flag_wait_text, i)
        return ev

    def _flag_wait_text(self, i: int) -> str:
        ins = self.stream[i]
        return f"waits HardEvent {ins.event.name} id {ins.event_id}"

    def _watch(self, pipe: int, count: int) -> simpy.Event:
        ev = self.env.event()
        self.watch[pipe].append((count, ev))
        return ev

    def _completed(self, pipe: int, n: int, at: int) -> None:
        """Fire (at cycle ``at``) the watchers of ``pipe`` whose count has been reached."""
        keep = []
        for count, ev in self.watch[pipe]:
            if n >= count:
                fire_at(self.env, ev, at - self.env.now)
            else:
                keep.append((count, ev))
        self.watch[pipe] = keep

    # -- pipes -------------------------------------------------------------------------------

    def pipe_process(self, pipe: int):
        """Execute ``pipe``'s queue in order.

        The pipe keeps a local clock ``t`` (when it is next free) that may run ahead of
        SimPy's: flags are set "at" a future cycle and consumed by comparing cycles, and in
        timing-only mode a vector instruction needs no event at all. It yields only to wait
        for work or a flag, to start a GM transfer at its real start (HBM sharing depends on
        it), and, on the timed image, to read sources at the start and write at the end.
        """
        env, q, occ, gmb, lat, wbb = (self.env, self.q[pipe], self.occ, self.gmb, self.lat,
                                      self.wbb)
        conf, fab = self.conf, self.fab
        fabric = self.fabric.transfer if self.fabric is not None else None
        reads = pipe == MTE2 and fabric is not None
        fresh = True  # the next read opens a stream (fabric.py): the pipe waited since
        stream, kind, fkey, eff = self.stream, self.kind, self.fkey, self.eff
        events, ub, done, watch = self.events, self.ub, self.done, self.watch
        ends, popped, issued_at = self.ends[pipe], self.popped[pipe], self.issued_at
        effect = self.image is not None
        gm_mem = self.image.gm if effect else None
        flags, wake, blocked = self.flags, self.wake, self.blocked
        sets_left, flag_waiters = self.sets_left, self.flag_waiters
        stalls, releases = self.stalls, self.releases
        timeout, transfer, weight = env.timeout, self.gm.transfer, self.weight
        t = 0
        vis = 0  # every instruction of this pipe so far is visible from this cycle
        while True:
            if not q:
                ev = wake[pipe] = env.event()
                yield ev
                continue
            i = q.popleft()
            t_issue = issued_at[i]
            now = env.now
            if t_issue > t:
                fresh = True  # the pipe waited for the issuer
            start = t_issue if t_issue > t else t
            if start < now:
                start = now
            if start > now:
                popped.append(start)  # leaves the queue in the future (see the issuer)
            sw = self.space_waiter
            if sw is not None and sw[0] == pipe:
                self.space_waiter = None
                fire_at(env, sw[1], start - now)
            k = kind[i]
            if k == 1:
                waiting = flags.get(fkey[i])
                if waiting:
                    s, at = waiting.popleft()
                else:  # no SetFlag of it executed yet
                    s, at = yield self._flag_event(pipe, i)
                    del blocked[pipe]
                if at > start:
                    stalls += (pipe, start, at, _FLAG, i)
                    start = at
                    fresh = True
                releases += (i, s)
                t = start + occ[i]
            elif k == 2:
                # a SetFlag leaves the queue once the pipe's earlier work is visible
                if vis > start:
                    start = vis
                t = start + occ[i]
                key = fkey[i]  # _set_flag, inlined: the pipes set most flags
                sets_left[key] -= 1
                waiter = flag_waiters.pop(key, None)
                if waiter is not None:
                    fire_at(env, waiter, t - now, (i, t))
                else:
                    flags[key].append((i, t))
            elif gmb[i] or wbb[i] or effect or fab[i]:
                if start > now:
                    yield timeout(start - now)
                if wbb[i]:  # write-backs it evicts load HBM; nothing waits for them
                    transfer(wbb[i], env.now, weight)
                pending = semantics.read(stream[i], ub, gm_mem) if effect and eff[i] else None
                floor = env.now + occ[i]
                if fab[i]:  # a write across the chip fabric (fabric.py)
                    handle = fabric(fab[i], floor, weight)
                    if gmb[i]:
                        if (yield transfer(gmb[i], floor, weight)):
                            stalls += (pipe, floor, env.now, _GM_BW, gmb[i])
                    else:
                        yield timeout(occ[i])
                    if not handle[1]:
                        late = yield handle[0]
                        if late and env.now > floor:
                            stalls += (pipe, floor, env.now, _GM_BW, fab[i])
                elif gmb[i]:
                    if (yield transfer(gmb[i], floor, weight, reads and not fresh)):
                        stalls += (pipe, floor, env.now, _GM_BW, gmb[i])
                    fresh = False
                else:
                    yield timeout(occ[i])
                t = env.now
                if pending:
                    semantics.commit(pending)
                if conf[i]:  # the last cycles of its own time went to waiting on a granule
                    stalls += (pipe, floor - conf[i], floor, _GRANULE, i)
            else:
                t = start + occ[i]  # timing only: nothing can observe the interval
                if conf[i]:  # the last cycles of its execution were lost to a conflict
                    stalls += (pipe, t - conf[i], t, _BANK if pipe == V else _GRANULE, i)
            v = t + lat[i]
            if v > vis:
                vis = v
            events += (i, start, t, v)
            ends.append(vis)
            n = done[pipe] = done[pipe] + 1
            if watch[pipe]:
                self._completed(pipe, n, t)

    # -- scalar issuer -----------------------------------------------------------------------

    def _wait_done(self, pipe: int, index: int, t: int, cause: int, what: int):
        """Generator: local time at which instruction ``index`` of ``pipe`` is complete (>= t).

        A wait past ``t`` is a stall of cause code ``cause`` with ``what`` (trace.py)."""
        if self.done[pipe] <= index:
            self.blocked[S] = (_done_text, cause, pipe, index)
            yield self._watch(pipe, index + 1)
            del self.blocked[S]
        end = self.ends[pipe][index]
        if end > t:
            self.stalls += (S, t, end, cause, what)
            return end
        return t

    def issuer_process(self):
        """Walk the stream in program order on the scalar unit's local clock ``t``."""
        env, stream, occ, issue, depth = self.env, self.stream, self.occ, self.issue, self.depth
        queues, wake, issued = self.q, self.wake, self.issued
        events, spans, stalls = self.events, self.spans, self.stalls
        popped, pipe_of, issued_at = self.popped, self.pipe_of, self.issued_at
        flags, fkey, releases = self.flags, self.fkey, self.releases
        span = self.start
        t = span + self.entry[0]
        if self.entry[1]:  # reading the parameter block, queued behind the other cores
            stalls += (S, t - self.entry[1], t, _GRANULE, -1)
        for i, ins in enumerate(stream):
            p = pipe_of[i]
            if p:
                t += issue[i]
                q, pp = queues[p], popped[p]
                while pp and pp[0] <= t:
                    pp.popleft()
                if len(q) + len(pp) >= depth:
                    # Full at our time t: the next entry leaves when the pipe starts it. Either
                    # the pipe has already decided when (a start cycle in `pp`), or we wait for
                    # it to take an entry.
                    free = t
                    while len(q) + len(pp) >= depth and not pp:
                        ev = env.event()
                        self.space_waiter = (p, ev)
                        self.blocked[S] = (_full_text, p)
                        yield ev
                        del self.blocked[S]
                        free = env.now
                        while pp and pp[0] <= free:
                            pp.popleft()
                    if len(q) + len(pp) >= depth:
                        free = pp.popleft()
                    if free > t:
                        spans += (span, t)
                        stalls += (S, t, free, _QUEUE_FULL, p)
                        t = span = free
                issued_at[i] = t
                q.append(i)
                issued[p] += 1
                wk = wake[p]
                if wk is not None:
                    wake[p] = None
                    fire_at(env, wk, t - env.now if t > env.now else 0)
                continue
            op = ins.op
            if op is _GV_GM:
                src = ins.src[0]
                c = occ[i] + self.miss_cycles * self.dcache.access(src.buf, src.addr, src.nbytes)
                events += (i, t, t + c, t + c)
                t += c
                continue
            if op is _GV_UB or op is _SV_UB:
                dep = ins.dep
                if dep is not None:
                    t2 = yield from self._wait_done(dep[0], dep[1], t, _AUTO_SYNC,
                                                    (int(dep[0]) << 32) | dep[1])
                    if t2 > t:
                        spans += (span, t)
                        t = span = t2
                if op is _SV_UB and self.image is not None:
                    semantics.execute(ins, self.ub, self.image.gm)
                events += (i, t, t + occ[i], t + occ[i])
                t += occ[i]
                continue
            t0 = t
            if op is _BARRIER:
                for pp in (V, MTE2, MTE3):
                    if issued[pp]:
                        t = yield from self._wait_done(pp, issued[pp] - 1, t, _BARRIER_WAIT,
                                                       int(pp))
            elif op is _WAIT:
                pending = flags.get(fkey[i])
                if pending:
                    s, at = pending.popleft()
                else:  # no SetFlag of it executed yet
                    s, at = yield self._flag_event(S, i)
                    del self.blocked[S]
                if at > t:
                    stalls += (S, t, at, _FLAG, i)
                    t = at
                releases += (i, s)
            elif op is _SET:
                self._set_flag(fkey[i], i, t)
            elif op is _SYNC_ALL:
                self.syncs = k = self.syncs + 1
                if self.barrier is None:
                    raise DeadlockError(f"{core_name(self.core)}, pipe SCALAR: SyncAll #{k} in a "
                                        "replay without the launch's other cores")
                ev = self.barrier.arrive(k, t, self.weight, occ[i])
                if not ev.triggered:
                    self.blocked[S] = (f"waits SyncAll #{k} ({self.barrier.arrived(k)} of "
                                       f"{self.barrier.cores} cores arrived)")
                at = yield ev
                self.blocked.pop(S, None)
                last = at - occ[i]  # the last core's arrival
                if last > t:
                    self.stalls += (S, t, last, _SYNC_WAIT, k)
                    spans += (span, t0)
                    t = span = last
                events += (i, t, at, at)
                t = at
                continue
            if t > t0:
                spans += (span, t0)
                span = t
            events += (i, t, t + occ[i], t + occ[i])
            t += occ[i]
        spans += (span, t)
        if t > env.now:
            yield env.timeout(t - env.now)
        self.issuer_done = True

    def check_finished(self) -> None:
        """After the run: anything still queued or blocked is a deadlock; name it. A SetFlag
        is a double set when an earlier set of its flag was still unconsumed at its cycle: not
        consumed at all, or consumed by a WaitFlag that ended at or after it. Judged from the
        timeline after the run (each flag's sets in program order, with the WaitFlag that
        consumed each), not from the order in which the processes happened to run, which
        differs from the cycles when pipes run ahead of SimPy's clock."""
        # the run is over: its rows become one machine array, read here and by trace.py
        self.events = array("q", self.events)
        if self.events:
            self._find_double_sets()
        if self.blocked:
            pipe, what = min(self.blocked.items())
            if not isinstance(what, str):  # (text function, its arguments)
                what = what[0](*what[1:])
            raise DeadlockError(f"{core_name(self.core)}, pipe {Pipe(pipe).name} {what}, "
                                f"and nothing left running can release it")
        stuck = [Pipe(p).name for p in (V, MTE2, MTE3) if self.q[p]]
        if not self.issuer_done or stuck:
            raise DeadlockError(f"{core_name(self.core)}: replay ended with work left "
                                f"(issuer done: {self.issuer_done}, queues not empty: {stuck})")

    def _find_double_sets(self) -> None:
        """The double sets of :meth:`check_finished`, from the executed instructions."""
        ev = np.frombuffer(self.events, np.int64).reshape(-1, 4)
        kinds = np.frombuffer(array("b", self.kind).tobytes(), np.int8)
        # the SetFlags in the order they were executed (each appends its row as it sets its
        # flag), so each flag's sets in program order
        rows = ev[kinds[ev[:, 0]] == 2]
        if not rows.size:
            return
        idx = rows[:, 0]
        # the cycle each set makes its flag visible: the end of a pipe's SetFlag, the issue
        # cycle of the scalar unit's
        on_scalar = np.frombuffer(bytes(self.pipe_of), np.uint8)[idx] == S
        at = np.where(on_scalar, rows[:, 1], rows[:, 2])
        # per SetFlag, the end of the WaitFlag that consumed it (never: not consumed, or the
        # wait did not execute)
        never = np.iinfo(np.int64).max
        end_of = np.full(len(self.stream), never, np.int64)
        end_of[ev[:, 0]] = ev[:, 2]
        rel = np.frombuffer(array("q", self.releases), np.int64).reshape(-1, 2)
        cleared = np.full(len(self.stream), never, np.int64)
        cleared[rel[:, 1]] = end_of[rel[:, 0]]
        keys = np.frombuffer(array("q", self.fkey), np.int64)[idx]
        order = np.argsort(keys, kind="stable")
        idx, at, keys = idx[order], at[order], keys[order]
        # a set is suspect unless the previous set of its flag was consumed by a wait that
        # ended before it (the flag was clear); a suspect's pending set is the earliest of
        # the unbroken run of unconsumed sets before it
        same = keys[1:] == keys[:-1]
        suspects = np.flatnonzero(same & ~(cleared[idx[:-1]] < at[1:])) + 1
        if not suspects.size:
            return
        same, cleared_at = same.tolist(), cleared[idx].tolist()
        idx, at = idx.tolist(), at.tolist()
        for k in suspects.tolist():
            j = k - 1
            while j > 0 and same[j - 1] and not cleared_at[j - 1] < at[k]:
                j -= 1
            self.double_sets.append((idx[k], idx[j]))
        self.double_sets.sort()

"""One AIV core in the replay: a scalar issuer feeding three in-order pipes.

The scalar issuer walks the core's recorded stream in program order. It pays each
instruction's issue cost on the scalar unit and pushes it into its pipe's bounded queue; it
stalls only when a queue is full, when a scalar UB read must wait for its producer
(compiler auto-sync), on ``PipeBarrier<PIPE_ALL>``, and on flags aimed at the scalar unit.
It keeps a local clock ahead of SimPy's and synchronises only when it must look at another
process's state, so issuing costs no SimPy event.

Each of VECTOR, MTE2 and MTE3 executes its queue strictly in order, one instruction at a
time: one SimPy timeout per instruction (plus one more when a GM transfer outlasts its
single-core time because HBM is shared). Flags are counters; a SimPy event is created only
when a pipe really has to wait. On the timed image an instruction reads its sources when it starts and writes its result
when it completes, so a missing flag shows up as a wrong number, as on hardware.
"""

from __future__ import annotations

from array import array
from collections import deque

import simpy

from aicore_sim import semantics
from aicore_sim.engine.dcache import DCache
from aicore_sim.engine.gm import GmBandwidth
from aicore_sim.errors import DeadlockError
from aicore_sim.isa import Instr, Opcode, Pipe
from aicore_sim.memory import MemoryImage

S, V, MTE2, MTE3 = Pipe.SCALAR, Pipe.VECTOR, Pipe.MTE2, Pipe.MTE3
_SET, _WAIT, _BARRIER = Opcode.SET_FLAG, Opcode.WAIT_FLAG, Opcode.BARRIER
_GV_GM, _GV_UB, _SV_UB = Opcode.GET_VALUE_GM, Opcode.GET_VALUE_UB, Opcode.SET_VALUE_UB


def _fire_at(env: simpy.Environment, ev: simpy.Event, delay: int) -> None:
    """Trigger ``ev`` ``delay`` cycles from now without creating a second event."""
    ev._ok = True
    ev._value = None
    env.schedule(ev, delay=delay)


class CoreSim:
    """Replay state of one core: queues, flags, completion counters and trace buffers."""

    def __init__(self, env: simpy.Environment, core: int, stream: list[Instr],
                 occ: list[int], issue: list[int], gmb: list[int], platform,
                 gm: GmBandwidth, image: MemoryImage | None, start: int) -> None:
        self.env, self.core, self.stream = env, core, stream
        self.occ, self.issue, self.gmb = occ, issue, gmb
        self.depth = int(platform.queue_depth)
        self.miss_cycles = int(platform.dcache_miss_cycles)
        self.dcache = DCache(platform.dcache_size, platform.dcache_line)
        self.gm = gm
        self.image = image
        self.ub = image.ub[core] if image is not None else None
        self.start = start
        self.q: list[deque] = [deque(), deque(), deque(), deque()]
        self.wake: list[simpy.Event | None] = [None, None, None, None]
        self.space_waiter: tuple[int, simpy.Event] | None = None
        self.flags: dict[tuple, deque] = {}
        self.flag_waiters: dict[tuple, simpy.Event] = {}
        self.sets_left: dict[tuple, int] = {}
        for ins in stream:
            if ins.op is _SET:
                key = (ins.event, ins.event_id)
                self.sets_left[key] = self.sets_left.get(key, 0) + 1
        self.done = [0, 0, 0, 0]
        self.issued = [0, 0, 0, 0]
        self.watch: list[list[tuple[int, simpy.Event]]] = [[], [], [], []]
        self.blocked: dict[int, str] = {}
        self.issuer_done = False
        # trace buffers (see trace.py for their meaning)
        self.events = array("q")  # (stream index, start, end) per executed instruction
        self.spans = array("q")  # (start, end) of scalar-unit busy time, coalesced
        self.releases = array("q")  # (WaitFlag index, SetFlag index)
        self.stalls: list[tuple[int, int, int, str, str]] = []  # pipe, start, end, cause, what
        self.double_sets: list[tuple[int, int]] = []  # (SetFlag index, index still pending)

    # -- flags -------------------------------------------------------------------------------

    def _set_flag(self, key: tuple, index: int) -> None:
        self.sets_left[key] -= 1
        waiter = self.flag_waiters.pop(key, None)
        if waiter is not None:
            waiter.succeed(index)
            return
        pending = self.flags.get(key)
        if pending is None:
            self.flags[key] = deque((index,))
        else:
            if pending:
                self.double_sets.append((index, pending[0]))
            pending.append(index)

    def _wait_flag(self, pipe: int, ins: Instr):
        """Generator: consume the flag, waiting for it if needed; returns the SetFlag index."""
        key = (ins.event, ins.event_id)
        pending = self.flags.get(key)
        if pending:
            return pending.popleft()
        what = f"HardEvent {ins.event.name} id {ins.event_id}"
        if self.sets_left.get(key, 0) == 0:
            raise DeadlockError(
                f"core {self.core}, pipe {Pipe(pipe).name} waits {what}, "
                f"which no later SetFlag of this core sets"
            )
        ev = self.env.event()
        self.flag_waiters[key] = ev
        self.blocked[pipe] = f"waits {what}"
        t0 = self.env.now
        set_index = yield ev
        del self.blocked[pipe]
        self.stalls.append((pipe, t0, self.env.now, "flag", what))
        return set_index

    def _watch(self, pipe: int, count: int) -> simpy.Event:
        ev = self.env.event()
        self.watch[pipe].append((count, ev))
        return ev

    def _completed(self, pipe: int) -> None:
        n = self.done[pipe] = self.done[pipe] + 1
        watchers = self.watch[pipe]
        if watchers:
            keep = []
            for count, ev in watchers:
                if n >= count:
                    ev.succeed()
                else:
                    keep.append((count, ev))
            self.watch[pipe] = keep

    # -- pipes -------------------------------------------------------------------------------

    def pipe_process(self, pipe: int):
        env, q, stream, occ, gmb = self.env, self.q[pipe], self.stream, self.occ, self.gmb
        events, effect, ub = self.events, self.image is not None, self.ub
        gm_mem = self.image.gm if effect else None
        has_effect = semantics.HAS_EFFECT
        while True:
            if not q:
                ev = self.wake[pipe] = env.event()
                yield ev
                continue
            i, t_issue = q[0]
            if t_issue > env.now:
                yield env.timeout(t_issue - env.now)
            q.popleft()
            sw = self.space_waiter
            if sw is not None and sw[0] == pipe:
                self.space_waiter = None
                sw[1].succeed()
            ins = stream[i]
            op = ins.op
            start = env.now
            pending = semantics.read(ins, ub, gm_mem) if effect and op in has_effect else None
            if op is _WAIT:
                s = yield from self._wait_flag(pipe, ins)
                self.releases.extend((i, s))
                start = env.now
                if occ[i]:
                    yield env.timeout(occ[i])
            elif op is _SET:
                if occ[i]:
                    yield env.timeout(occ[i])
                self._set_flag((ins.event, ins.event_id), i)
            elif gmb[i]:
                drained = self.gm.transfer(gmb[i])
                yield env.timeout(occ[i])
                if not drained.triggered:
                    t0 = env.now
                    yield drained
                    self.stalls.append((pipe, t0, env.now, "gm_bandwidth", f"{gmb[i]} B"))
            elif occ[i]:
                yield env.timeout(occ[i])
            if pending:
                semantics.commit(pending)
            events.extend((i, start, env.now))
            self._completed(pipe)

    # -- scalar issuer -----------------------------------------------------------------------

    def issuer_process(self):
        env, stream, occ, issue, depth = self.env, self.stream, self.occ, self.issue, self.depth
        queues, wake, issued, events, spans = self.q, self.wake, self.issued, self.events, self.spans
        t = span = self.start
        if t > env.now:
            yield env.timeout(t - env.now)
        for i, ins in enumerate(stream):
            p = ins.pipe
            if p is not S:
                t += issue[i]
                q = queues[p]
                if len(q) >= depth:
                    if t > env.now:
                        yield env.timeout(t - env.now)
                    if len(q) >= depth:
                        spans.extend((span, t))
                        t0 = env.now
                        while len(q) >= depth:
                            ev = env.event()
                            self.space_waiter = (p, ev)
                            self.blocked[S] = f"queue of {Pipe(p).name} full"
                            yield ev
                        del self.blocked[S]
                        self.stalls.append((S, t0, env.now, "queue_full", Pipe(p).name))
                        t = span = env.now
                q.append((i, t))
                issued[p] += 1
                wk = wake[p]
                if wk is not None:
                    wake[p] = None
                    _fire_at(env, wk, t - env.now)
                continue
            op = ins.op
            if op is _GV_GM:
                src = ins.src[0]
                c = occ[i] + self.miss_cycles * self.dcache.access(src.buf, src.addr, src.nbytes)
                events.extend((i, t, t + c))
                t += c
                continue
            if op is _GV_UB or op is _SV_UB:
                dep = ins.dep
                if dep is not None and self.done[dep[0]] <= dep[1]:
                    if t > env.now:
                        yield env.timeout(t - env.now)
                    if self.done[dep[0]] <= dep[1]:
                        spans.extend((span, t))
                        t0 = env.now
                        what = f"{dep[0].name} instruction #{dep[1]}"
                        self.blocked[S] = f"auto-sync: waits {what}"
                        yield self._watch(dep[0], dep[1] + 1)
                        del self.blocked[S]
                        self.stalls.append((S, t0, env.now, "auto_sync", what))
                        t = span = env.now
                if op is _SV_UB and self.image is not None:
                    semantics.execute(ins, self.ub, self.image.gm)
                events.extend((i, t, t + occ[i]))
                t += occ[i]
                continue
            # flags and barriers on the scalar unit need the real time
            if t > env.now:
                yield env.timeout(t - env.now)
            spans.extend((span, t))
            t0 = env.now
            if op is _BARRIER:
                for pp in (V, MTE2, MTE3):
                    if self.done[pp] < issued[pp]:
                        self.blocked[S] = f"PipeBarrier<PIPE_ALL> waits {pp.name}"
                        yield self._watch(pp, issued[pp])
                        del self.blocked[S]
                if env.now > t0:
                    self.stalls.append((S, t0, env.now, "barrier", "PIPE_ALL"))
            elif op is _WAIT:
                s = yield from self._wait_flag(S, ins)
                self.releases.extend((i, s))
            elif op is _SET:
                self._set_flag((ins.event, ins.event_id), i)
            t = span = env.now
            events.extend((i, t, t + occ[i]))
            t += occ[i]
        spans.extend((span, t))
        if t > env.now:
            yield env.timeout(t - env.now)
        self.issuer_done = True

    def check_finished(self) -> None:
        """After the run: anything still queued or blocked is a deadlock; name it."""
        if self.blocked:
            pipe, what = next(iter(sorted(self.blocked.items())))
            raise DeadlockError(f"core {self.core}, pipe {Pipe(pipe).name} {what}, "
                                f"and nothing left running can release it")
        stuck = [Pipe(p).name for p in (V, MTE2, MTE3) if self.q[p]]
        if not self.issuer_done or stuck:
            raise DeadlockError(f"core {self.core}: replay ended with work left "
                                f"(issuer done: {self.issuer_done}, queues not empty: {stuck})")

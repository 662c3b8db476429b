"""The chip's HBM bandwidth, shared by every core's MTE transfers.

Models one processor-sharing server of ``bytes_per_cycle``: all transfers in flight split it
equally (virtual-time algorithm: the server's virtual clock advances by
``bytes_per_cycle / n`` per cycle while ``n`` transfers are active, and a transfer of ``b``
bytes that started at virtual time ``v`` is drained when the clock reaches ``v + b``).
Rates are recomputed only when a transfer starts or ends: one SimPy timeout per change,
never per cycle. The per-core ceiling lives in the single-core copy time (``cost/price.py``): a
transfer ends at ``max(start + single-core time, drained)``.

A transfer may stand for ``weight`` equal transfers started together (the replay runs one
core for each group of cores whose timelines are provably the same, ``engine/groups.py``);
it counts ``weight`` times in ``n``. The arithmetic is made independent of everything but
which transfers start at which cycle, so that grouping changes no result, not even by
floating-point rounding:

- the state (virtual clock, ``n``, the queue of drain points) changes only at cycles where a
  transfer starts or drains, once per cycle for the clock;
- the next drain cycle is predicted from that state alone (never from when a timer happens to
  fire: a timer that fires before the prediction only re-arms);
- at a cycle, the drains due then happen before any transfer starting at it is added,
  whatever order SimPy runs the processes of that cycle in.

The server also keeps the streaming reads in flight (their single-core rate -> weight) for the
chip fabric's writes (``fabric.py``), and tells the fabric before and after each change of its
population.
"""

from __future__ import annotations

import heapq
import math

import simpy

from aicore_sim.sim.engine.events import fire_at


class GmBandwidth:
    """Processor-sharing HBM server; :meth:`transfer` returns an event fired when drained."""

    def __init__(self, env: simpy.Environment, bytes_per_cycle: float) -> None:
        self.env = env
        self.rate = float(bytes_per_cycle)
        self.vtime = 0.0  # virtual clock at cycle `last`
        self.last = 0
        self.n = 0  # transfers in flight, weights counted
        # streaming reads in flight (fabric.py): their single-core rate -> weight
        self.streams: dict[float, int] = {}
        self.fabric = None  # the chip fabric the writes cross, when modelled (fabric.py)
        # (virtual drain point, sequence, event, not before, weight, streaming read's rate
        # or 0.0)
        self.active: list[tuple[float, int, simpy.Event, int, int, float]] = []
        self.seq = 0
        self.due: int | None = None  # predicted cycle of the next drain
        self.timer_at: int | None = None  # cycle of the pending timer

    def _advance(self) -> None:
        now = self.env.now
        if now > self.last:
            if self.n:
                self.vtime += (now - self.last) * self.rate / self.n
            self.last = now

    def transfer(self, nbytes: int, not_before: int, weight: int = 1,
                 stream: bool = False) -> simpy.Event:
        """Start draining ``nbytes`` now (``weight`` such transfers at once); the returned
        event fires at the later of the drain and cycle ``not_before`` (the transfer's
        single-core time), with value True when the drain was the later one (the transfer
        was limited by shared bandwidth). ``stream``: a read its MTE2 issued straight after
        its previous copy (``fabric.py``: writes yield the fabric to it)."""
        if self.due is not None and self.due <= self.env.now:
            self._drain()  # what drains at this cycle goes before what starts at it
        self._advance()
        ev = self.env.event()
        self.seq += 1
        fabric = self.fabric
        if fabric is not None:
            fabric.changed()
        cap = nbytes / max(not_before - self.env.now, 1) if stream else 0.0
        heapq.heappush(self.active, (self.vtime + nbytes, self.seq, ev, not_before, weight,
                                     cap))
        self.n += weight
        if stream:
            self.streams[cap] = self.streams.get(cap, 0) + weight
        if fabric is not None:
            fabric.settle()
        self._predict()
        return ev

    def streaming(self) -> float:
        """Bytes per cycle the streaming reads in flight draw now: each the HBM share of a
        transfer, at most its single-core rate (summed over distinct rates in order, so the
        figure does not depend on how cores are grouped)."""
        if not self.streams:
            return 0.0
        share = self.rate / self.n
        return sum(w * (cap if cap < share else share)
                   for cap, w in sorted(self.streams.items()))

    def _drain(self) -> None:
        """Drain, at the predicted cycle, the head of the queue and every transfer whose
        drain point the clock has reached with it (up to rounding)."""
        self._advance()
        now = self.env.now
        self.due = None
        active = self.active
        fabric = self.fabric
        if fabric is not None:
            fabric.changed()
        head = True
        while active and (head or active[0][0] <= self.vtime + 1e-6):
            head = False
            _, _, ev, not_before, weight, cap = heapq.heappop(active)
            self.n -= weight
            if cap:
                left = self.streams[cap] - weight
                if left:
                    self.streams[cap] = left
                else:
                    del self.streams[cap]
            fire_at(self.env, ev, not_before - now if not_before > now else 0, now > not_before)
        if fabric is not None:
            fabric.settle()

    def _predict(self) -> None:
        """The cycle of the next drain, from the state of this cycle (at least the next
        cycle); a timer fires no later than it. A pending timer that fires earlier is kept
        (it re-arms for the prediction), so starts, which only delay drains, rarely cost an
        event."""
        if not self.active:
            self.due = None
            return
        delay = max(1, math.ceil((self.active[0][0] - self.vtime) * self.n / self.rate - 1e-9))
        self.due = at = self.env.now + delay
        if self.timer_at is not None and self.timer_at <= at:
            return
        self._arm(at)

    def _arm(self, at: int) -> None:
        self.timer_at = at
        self.env.timeout(at - self.env.now).callbacks.append(self._on_timer)

    def _on_timer(self, timer: simpy.Event) -> None:
        now = self.env.now
        if now != self.timer_at:
            return  # superseded by an earlier timer
        self.timer_at = None
        if self.due is None:
            return
        if now < self.due:
            self._arm(self.due)  # the drain moved later since this timer was set
            return
        self._drain()
        self._predict()

"""The chip's HBM bandwidth, shared by every core's MTE transfers.

Models one processor-sharing server of ``bytes_per_cycle``: all transfers in flight split it
equally (virtual-time algorithm: the server's virtual clock advances by
``bytes_per_cycle / n`` per cycle while ``n`` transfers are active, and a transfer of ``b``
bytes that started at virtual time ``v`` is drained when the clock reaches ``v + b``).
Rates are recomputed only when a transfer starts or ends: one SimPy timeout per change,
never per cycle. The per-core ceiling lives in the single-core copy time (``cost.py``): a
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
"""

from __future__ import annotations

import heapq
import math

import simpy

from aicore_sim.engine.events import fire_at


class GmBandwidth:
    """Processor-sharing HBM server; :meth:`transfer` returns an event fired when drained."""

    def __init__(self, env: simpy.Environment, bytes_per_cycle: float) -> None:
        self.env = env
        self.rate = float(bytes_per_cycle)
        self.vtime = 0.0  # virtual clock at cycle `last`
        self.last = 0
        self.n = 0  # transfers in flight, weights counted
        # (virtual drain point, sequence, event, not before, weight)
        self.active: list[tuple[float, int, simpy.Event, int, int]] = []
        self.seq = 0
        self.due: int | None = None  # predicted cycle of the next drain
        self.timer_at: int | None = None  # cycle of the pending timer

    def _advance(self) -> None:
        now = self.env.now
        if now > self.last:
            if self.n:
                self.vtime += (now - self.last) * self.rate / self.n
            self.last = now

    def transfer(self, nbytes: int, not_before: int, weight: int = 1) -> simpy.Event:
        """Start draining ``nbytes`` now (``weight`` such transfers at once); the returned
        event fires at the later of the drain and cycle ``not_before`` (the transfer's
        single-core time), with value True when the drain was the later one (the transfer
        was limited by shared bandwidth)."""
        if self.due is not None and self.due <= self.env.now:
            self._drain()  # what drains at this cycle goes before what starts at it
        self._advance()
        ev = self.env.event()
        self.seq += 1
        heapq.heappush(self.active, (self.vtime + nbytes, self.seq, ev, not_before, weight))
        self.n += weight
        self._predict()
        return ev

    def _drain(self) -> None:
        """Drain, at the predicted cycle, the head of the queue and every transfer whose
        drain point the clock has reached with it (up to rounding)."""
        self._advance()
        now = self.env.now
        self.due = None
        active = self.active
        head = True
        while active and (head or active[0][0] <= self.vtime + 1e-6):
            head = False
            _, _, ev, not_before, weight = heapq.heappop(active)
            self.n -= weight
            fire_at(self.env, ev, not_before - now if not_before > now else 0, now > not_before)

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

"""The chip's HBM bandwidth, shared by every core's MTE transfers.

Models one processor-sharing server of ``bytes_per_cycle``: all transfers in flight split it
equally (virtual-time algorithm: the server's virtual clock advances by
``bytes_per_cycle / n`` per cycle while ``n`` transfers are active, and a transfer of ``b``
bytes that started at virtual time ``v`` is drained when the clock reaches ``v + b``).
Rates are recomputed only when a transfer starts or ends: one SimPy timeout per change,
never per cycle. The per-core ceiling lives in the single-core copy time (``cost.py``): a
transfer ends at ``max(start + single-core time, drained)``.
"""

from __future__ import annotations

import heapq
import math

import simpy


class GmBandwidth:
    """Processor-sharing HBM server; :meth:`transfer` returns an event fired when drained."""

    def __init__(self, env: simpy.Environment, bytes_per_cycle: float) -> None:
        self.env = env
        self.rate = float(bytes_per_cycle)
        self.vtime = 0.0
        self.last = 0
        self.active: list[tuple[float, int, simpy.Event, int]] = []
        self.seq = 0
        self.timer_at: int | None = None

    def _advance(self) -> None:
        now = self.env.now
        n = len(self.active)
        if n and now > self.last:
            self.vtime += (now - self.last) * self.rate / n
        self.last = now

    def transfer(self, nbytes: int, not_before: int) -> simpy.Event:
        """Start draining ``nbytes`` now; the returned event fires at the later of the drain
        and cycle ``not_before`` (the transfer's single-core time), with value True when
        the drain was the later one (the transfer was limited by shared bandwidth)."""
        self._advance()
        ev = self.env.event()
        self.seq += 1
        heapq.heappush(self.active, (self.vtime + nbytes, self.seq, ev, not_before))
        self._reschedule()
        return ev

    def _reschedule(self) -> None:
        """Make sure a timer fires no later than the next drain. A pending timer that fires
        earlier is kept (it reschedules when it finds nothing drained), so starts, which
        only delay drains, rarely cost an event."""
        if not self.active:
            return
        n = len(self.active)
        delay = max(0, math.ceil((self.active[0][0] - self.vtime) * n / self.rate - 1e-9))
        at = self.env.now + delay
        if self.timer_at is not None and self.timer_at <= at:
            return
        self.timer_at = at
        timer = self.env.timeout(delay)
        timer.callbacks.append(self._on_timer)

    def _on_timer(self, timer: simpy.Event) -> None:
        if self.env.now != self.timer_at:
            return  # superseded by an earlier timer
        self.timer_at = None
        self._advance()
        now = self.env.now
        while self.active and self.active[0][0] <= self.vtime + 1e-6:
            _, _, ev, not_before = heapq.heappop(self.active)
            ev._ok = True
            ev._value = now > not_before
            self.env.schedule(ev, delay=not_before - now if not_before > now else 0)
        self._reschedule()

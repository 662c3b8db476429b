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
        self.active: list[tuple[float, int, simpy.Event]] = []
        self.seq = 0
        self.generation = 0

    def _advance(self) -> None:
        now = self.env.now
        n = len(self.active)
        if n and now > self.last:
            self.vtime += (now - self.last) * self.rate / n
        self.last = now

    def transfer(self, nbytes: int) -> simpy.Event:
        self._advance()
        ev = self.env.event()
        self.seq += 1
        heapq.heappush(self.active, (self.vtime + nbytes, self.seq, ev))
        self._reschedule()
        return ev

    def _reschedule(self) -> None:
        self.generation += 1
        if not self.active:
            return
        gen = self.generation
        n = len(self.active)
        delay = max(0, math.ceil((self.active[0][0] - self.vtime) * n / self.rate - 1e-9))
        timer = self.env.timeout(delay)
        timer.callbacks.append(lambda _e, g=gen: self._on_timer(g))

    def _on_timer(self, gen: int) -> None:
        if gen != self.generation:
            return  # a start or end since then rescheduled the server
        self._advance()
        done = False
        while self.active and self.active[0][0] <= self.vtime + 1e-6:
            _, _, ev = heapq.heappop(self.active)
            ev.succeed()
            done = True
        if done or self.active:
            self._reschedule()

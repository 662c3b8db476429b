"""The chip's memory fabric between the cores and GM, as UB -> GM writes see it.

Every GM read and write of every core crosses one fabric of ``bytes_per_cycle`` (the cost
file's ``[gm] fabric_ai_core_bytes_per_cycle`` x the AI cores). Reads are HBM-bound (the HBM
server, ``gm.py``, is slower than the fabric), so the fabric never limits them; a write gets
what the fabric has left beside the reads that were already streaming when it came:

- a read **streams** when its MTE2 issued it straight after its previous GM copy (no flag
  wait, no wait for the issuer since then): a pipe that keeps its requests flowing keeps its
  share of the fabric. The first read after a wait opens a new stream and takes no
  precedence (a write and the reads released by the same flag start together: the write
  keeps its own rate, as on the board's single-buffered add cases);
- writes in flight share equally (processor sharing, weights counted) the capacity
  ``bytes_per_cycle - R``, where R is the HBM throughput of the streaming reads in flight
  (the HBM rate x their weight / the HBM server's transfers in flight);
- a write ends at the later of its drain and its single-core time (``not_before``), as an
  HBM transfer does; R counts each streaming read at its HBM share, at most its own
  single-core rate.

The virtual-time arithmetic follows ``gm.py`` (the clock advances by the capacity per write
in flight; state changes only at cycles where a write starts or drains or the HBM server's
population changes; drains due at a cycle go before starts at it), so grouping equal cores
changes no result.
"""

from __future__ import annotations

import heapq
import math

import simpy

from aicore_sim.sim.engine.events import fire_at


class Fabric:
    """Processor-sharing server for writes, of the capacity the streaming reads leave."""

    def __init__(self, env: simpy.Environment, bytes_per_cycle: float, gm) -> None:
        self.env = env
        self.rate = float(bytes_per_cycle)
        self.gm = gm
        gm.fabric = self
        self.vtime = 0.0
        self.last = 0
        self.share = 0.0  # bytes per cycle each unit of weight drains at, since `last`
        self.n = 0  # writes in flight, weights counted
        self.active: list[tuple[float, int, list, int, int]] = []
        self.seq = 0
        self.due: int | None = None
        self.timer_at: int | None = None

    def _advance(self) -> None:
        now = self.env.now
        if now > self.last:
            self.vtime += (now - self.last) * self.share
            self.last = now

    def _rate(self) -> None:
        """The share of a write from the state of this cycle."""
        if not self.n:
            self.share = 0.0
            return
        free = self.rate - self.gm.streaming()
        self.share = free / self.n if free > 0.0 else 0.0

    def changed(self) -> None:
        """The HBM server's population changes at this cycle: the clock runs up to it at the
        old share (the caller calls :meth:`settle` after the change)."""
        if self.n:
            if self.due is not None and self.due <= self.env.now:
                self._drain()
            self._advance()

    def settle(self) -> None:
        if self.n:
            self._rate()
            self._predict()

    def transfer(self, nbytes: int, not_before: int, weight: int = 1) -> list:
        """Start writing ``nbytes`` now (``weight`` such writes at once). Returns
        ``[event, drained early]``: the caller waits until ``not_before`` (its single-core
        time) as it would without the fabric, and then on the event only if the write has not
        drained by then (the event fires at the drain, value True when it came after
        ``not_before``). An unthrottled write thus costs no event and keeps its place among
        the events of its end cycle."""
        if self.due is not None and self.due <= self.env.now:
            self._drain()
        self._advance()
        handle = [self.env.event(), False]
        self.seq += 1
        heapq.heappush(self.active, (self.vtime + nbytes, self.seq, handle, not_before, weight))
        self.n += weight
        self._rate()
        self._predict()
        return handle

    def _drain(self) -> None:
        self._advance()
        now = self.env.now
        self.due = None
        active = self.active
        head = True
        while active and (head or active[0][0] <= self.vtime + 1e-6):
            head = False
            _, _, handle, not_before, weight = heapq.heappop(active)
            self.n -= weight
            if now < not_before:
                handle[1] = True
            else:
                fire_at(self.env, handle[0], 0, now > not_before)
        self._rate()

    def _predict(self) -> None:
        if not self.active or self.share <= 0.0:
            self.due = None
            return
        delay = max(1, math.ceil((self.active[0][0] - self.vtime) / self.share - 1e-9))
        self.due = at = self.env.now + delay
        if self.timer_at is not None and self.timer_at <= at:
            return
        self.timer_at = at
        self.env.timeout(at - self.env.now).callbacks.append(self._on_timer)

    def _on_timer(self, timer: simpy.Event) -> None:
        now = self.env.now
        if now != self.timer_at:
            return
        self.timer_at = None
        if self.due is None:
            return
        if now < self.due:
            self.timer_at = self.due
            self.env.timeout(self.due - now).callbacks.append(self._on_timer)
            return
        self._drain()
        self._predict()


__all__ = ["Fabric"]

"""Cores recorded phase by phase, so ``SyncAll`` works in the record pass.

Step of the flow: :func:`aicore_sim.sim.program.record` runs a kernel once per core. Without
cross-core synchronisation each core can run to its end before the next starts; with
``SyncAll`` a core must stop at the barrier until every other core has reached it, because
what it reads after the barrier may have been written by them before it (GM is shared).

Each core's kernel runs on a thread of its own, and exactly one thread runs at a time: the
caller's thread hands the turn to a core (:meth:`CoreRun.resume`) and waits until that core
either ends or arrives at a ``SyncAll`` (:meth:`CoreRun.arrive`). :func:`run_phases` gives
the cores their turns in core order, round after round: round k runs every core from its
(k-1)-th SyncAll to its k-th one or to its end. A kernel without SyncAll therefore runs each
core to its end in core order, exactly as a plain loop would.

A core that ends while others wait at a SyncAll it never reached would hang the device: that
is a :class:`~aicore_sim.sim.errors.DeadlockError` naming the core and the barrier. A SyncAll in
a record of only some of the launch's cores (one range of a parallel record) raises
:class:`SyncAllRangeError`, which makes the parallel record fall back to one process.
"""

from __future__ import annotations

import threading
import traceback
from collections.abc import Callable, Sequence
from typing import Any

from aicore_sim.sim.errors import DeadlockError, KernelError
from aicore_sim.sim.trace import core_name


class SyncAllRangeError(KernelError):
    """``SyncAll`` was reached in a record of part of the launch's cores."""


class _Aborted(BaseException):
    """Unwinds a core parked at a SyncAll when the record stops (another core failed)."""


def _as_kernel_error(e: BaseException, core: int) -> BaseException:
    """A bug in the kernel (a Python exception raised by its own code, e.g. a plug-in port's
    ``ZeroDivisionError``) as the :class:`KernelError` it is - naming the core and the kernel's
    line - rather than an internal error of the simulator. The simulator's own errors, stops
    (signals, ``SystemExit``) and ``MemoryError`` pass as they are."""
    from aicore_sim.sim.errors import SimError
    from aicore_sim.sim.sources import PACKAGE_DIR

    if not isinstance(e, Exception) or isinstance(e, (SimError, MemoryError)):
        return e
    frames = traceback.extract_tb(e.__traceback__)
    mine = [f for f in frames if not f.filename.startswith(PACKAGE_DIR)]
    at = f" at {mine[-1].filename}:{mine[-1].lineno} ({mine[-1].name})" if mine else ""
    err = KernelError(f"{core_name(core)}: the kernel raised {type(e).__name__}: {e}{at}")
    err.__cause__ = e
    return err


class CoreRun:
    """One core's kernel on its own thread, run in turns: it runs until it ends or arrives
    at a SyncAll, then gives the turn back."""

    def __init__(self, core: int, kernel: Callable[..., None], args: tuple) -> None:
        self.core = core
        self.state = "new"  # new, running, arrived, done, failed
        self.error: BaseException | None = None
        self.syncs = 0  # SyncAll calls reached
        self._abort = False
        self._go = threading.Semaphore(0)
        self._back = threading.Semaphore(0)
        self._thread = threading.Thread(target=self._main, args=(kernel, args),
                                        name=f"aiv-core-{core}", daemon=True)

    def _main(self, kernel: Callable[..., None], args: tuple) -> None:
        self._go.acquire()
        try:
            kernel(*args)
            self.state = "done"
        except _Aborted:
            self.state = "done"
        except BaseException as e:  # noqa: BLE001 - handed to the caller's thread
            self.error, self.state = _as_kernel_error(e, self.core), "failed"
        finally:
            self._back.release()

    def resume(self) -> str:
        """Run the core until it ends or arrives at its next SyncAll; its state then."""
        if self.state == "new":
            self._thread.start()
        self.state = "running"
        self._go.release()
        self._back.acquire()
        return self.state

    def arrive(self) -> None:
        """On the core's thread, inside SyncAll: hand the turn back, wait for the next."""
        self.syncs += 1
        self.state = "arrived"
        self._back.release()
        self._go.acquire()
        if self._abort:
            raise _Aborted

    def cancel(self) -> None:
        """Unwind a core parked at a SyncAll (its thread ends)."""
        if self.state == "arrived":
            self._abort = True
            self.resume()


def run_phases(runs: Sequence[CoreRun], all_cores: bool,
               enter: Callable[[CoreRun], Any], leave: Callable[[CoreRun], Any],
               finish: Callable[[CoreRun], Any]) -> None:
    """Give ``runs`` their turns round after round until every core has ended.

    ``enter`` / ``leave`` bracket each turn (they make the core's recorder the current one);
    ``finish`` runs, inside such a bracket, once a core's kernel has ended (its teardown).
    ``all_cores``: the runs are every core of the launch (else a SyncAll raises
    :class:`SyncAllRangeError`). The first failing core's error is raised as it is."""
    live = list(runs)
    barrier = 0
    try:
        while live:
            waiting = []
            for run in live:
                enter(run)
                try:
                    state = run.resume()
                    if state == "failed":
                        raise run.error
                    if state == "done":
                        finish(run)
                finally:
                    leave(run)
                if state == "arrived":
                    waiting.append(run)
            if not waiting:
                return
            barrier += 1
            if not all_cores:
                raise SyncAllRangeError("SyncAll needs every core of the launch in one record")
            absent = [r for r in runs if r.syncs < barrier]
            if absent:
                r = absent[0]
                raise DeadlockError(
                    f"SyncAll #{barrier}: {core_name(r.core)} ended after {r.syncs} SyncAll "
                    f"call(s), while {len(waiting)} core(s) (first: {core_name(waiting[0].core)}) "
                    "wait there for every core; a core that never arrives hangs them all")
            live = waiting
    finally:
        for run in runs:
            run.cancel()


__all__ = ["CoreRun", "SyncAllRangeError", "run_phases"]

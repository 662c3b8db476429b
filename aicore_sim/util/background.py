"""Work done in a forked child process while the parent goes on (the second CPU's share).

Step of the flow: the parallel record pass runs its ranges of cores in :class:`Background`
children (``parallel.py``), and the command line hands it the phases that only read what the
parent already has (writing the trace file, computing the golden) so they overlap the phases
after them. The child inherits the parent's memory copy-on-write (nothing is
pickled on the way in) and sends back only a small picklable result or the exception it
raised. Where ``fork`` is missing, or with ``enabled=False`` (``--jobs 1``), the function runs
in this process when :meth:`Background.result` is first called, so the results are the same.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import pickle
import sys
import threading
from collections.abc import Callable
from typing import Any

_UNSET = object()


def available() -> bool:
    """Whether this process may fork workers: on Linux only (macOS offers ``fork`` too, but
    its system libraries are not fork-safe once threads exist)."""
    return sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods()


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def die_with_parent() -> None:
    """Make this process end when its parent does (Linux ``PR_SET_PDEATHSIG`` with SIGKILL):
    a ``kill -9`` of the command leaves no worker behind. No-op elsewhere."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes
    import signal

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG = 1
    except (OSError, AttributeError):
        return
    if os.getppid() == 1:  # the parent died before the request took effect
        os._exit(1)


def quiet_child() -> None:
    """Signals in a worker process: the parent decides when to stop, so Ctrl-C (which the
    terminal sends to the whole process group) is ignored, SIGTERM ends the process quietly
    (the parent's handlers are not inherited), and the process dies with its parent."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    die_with_parent()


def _child(send, fn: Callable[[], Any]) -> None:
    quiet_child()
    try:
        payload = ("ok", fn())
    except BaseException as e:  # noqa: BLE001 - re-raised in the parent
        payload = ("error", e)
    try:
        data = pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as e:  # noqa: BLE001 - an unpicklable result or exception
        data = pickle.dumps(("error", RuntimeError(f"{type(e).__name__}: {e}")))
    send.send_bytes(data)
    send.close()


class Background:
    """``fn()`` started in a forked child now; :meth:`result` waits for its value."""

    def __init__(self, fn: Callable[[], Any], enabled: bool = True) -> None:
        self._fn = fn
        self._value: Any = _UNSET
        self._proc = self._recv = None
        if enabled and available():
            ctx = multiprocessing.get_context("fork")
            self._recv, send = ctx.Pipe(duplex=False)
            self._proc = ctx.Process(target=_child, args=(send, fn), daemon=True)
            self._proc.start()
            send.close()

    def result(self) -> Any:
        """The function's return value (its exception is raised here)."""
        if self._value is _UNSET:
            if self._proc is None:
                self._value = self._fn()
            else:
                try:
                    status, payload = pickle.loads(self._recv.recv_bytes())
                except EOFError:
                    status, payload = "error", RuntimeError(
                        f"background process died (exit code {self._proc.exitcode})")
                finally:
                    self.close()
                if status != "ok":
                    raise payload
                self._value = payload
        return self._value

    def close(self) -> None:
        """Stop the child if it is still running (on the parent's failure)."""
        if self._proc is not None:
            self._recv.close()
            if self._proc.is_alive():
                self._proc.terminate()
            self._proc.join()
            self._proc = None


__all__ = ["Background", "available", "die_with_parent", "end_pool", "quiet_child",
           "steady_resource_tracker", "usable_cpus"]


def end_pool(ex: Any) -> None:
    """Cancel what a ``ProcessPoolExecutor`` has queued and end its worker processes at once
    (the standard library offers no public way before Python 3.14's ``terminate_workers``)."""
    procs = list(getattr(ex, "_processes", {}).values())
    ex.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        if p.is_alive():
            p.kill()
    for p in procs:
        p.join(timeout=5)


def steady_resource_tracker() -> None:
    """Make multiprocessing's resource tracker in this process survive its own death.

    A process pool of the ``spawn`` start method (a sweep's) registers its semaphores with the
    resource tracker, a process of its own that unlinks them should this process die first. If
    the tracker is killed (``kill -9`` of the command's children, the OOM killer), the standard
    library starts a new one at the next use, with a warning that resources may leak, and
    never tells it the names registered with the old one: each unregistered when the pool
    closes is a ``KeyError`` traceback on stderr from the new tracker; and one dying between
    the standard library's check that it lives and its write fails the command with a broken
    pipe. Here the tracker, found dead, is replaced without the warning and told every name
    still registered, so the unregistrations match and a later ``kill -9`` of this process
    still leaks nothing; a write that meets a dead one is made again to its replacement."""
    from multiprocessing import resource_tracker as rt

    tracker = rt._resource_tracker
    if isinstance(tracker, _steady_tracker_class()):
        return
    tracker._steady = threading.RLock()  # one replacement at a time
    tracker._live = set()  # (name, resource type) registered and not yet unregistered
    tracker.__class__ = _steady_tracker_class()
    # the module's functions are the old methods, bound when it was imported
    rt.ensure_running, rt.register = tracker.ensure_running, tracker.register
    rt.unregister, rt.getfd = tracker.unregister, tracker.getfd


_STEADY: list[type] = []


def _steady_tracker_class() -> type:
    if _STEADY:
        return _STEADY[0]
    from multiprocessing.resource_tracker import ResourceTracker

    class SteadyTracker(ResourceTracker):
        """The resource tracker of :func:`steady_resource_tracker`."""

        def register(self, name, rtype):  # noqa: ANN001 - the standard library's signature
            self._live.add((name, rtype))
            super().register(name, rtype)

        def unregister(self, name, rtype):  # noqa: ANN001
            super().unregister(name, rtype)
            self._live.discard((name, rtype))

        def _send(self, cmd, name, rtype):  # noqa: ANN001
            try:
                super()._send(cmd, name, rtype)
            except BrokenPipeError:  # it died between the check and the write: once more
                super()._send(cmd, name, rtype)  # (replaced, told the names, then sent)

        def ensure_running(self):
            with self._steady:
                replaced = self._fd is not None and not self._check_alive()
                if replaced:  # dead: its pipe closed and its process reaped, as the
                    with self._lock:  # standard library does before a new one (no warning)
                        os.close(self._fd)
                        with contextlib.suppress(ChildProcessError, TypeError):
                            os.waitpid(self._pid, 0)
                        self._fd = self._pid = None
                        if hasattr(self, "_exitcode"):
                            self._exitcode = None
                super().ensure_running()
                if replaced:
                    for name, rtype in list(self._live):
                        os.write(self._fd, f"REGISTER:{name}:{rtype}\n".encode("ascii"))

    _STEADY.append(SteadyTracker)
    return SteadyTracker

"""launch(): one kernel launch, every step done - the short way to a
:class:`~aicore_sim.recording.Recording` (modes, arguments and results: see there).

Step of the flow: a convenience on top of the one run pipeline for kernels without an op
model (tests, validation scenarios, op models written before :class:`Recording`).
"""

from __future__ import annotations

from typing import Any

from aicore_sim.recording import FORCE_TIMED_REPLAY, MODES, Recording, RunResult


def launch(*args: Any, **kw: Any) -> Recording:
    """``Recording(kernel, args, tensors, outputs, platform, ...)`` with the replay, the checks
    and the outputs done (the arguments: see :class:`~aicore_sim.recording.Recording`)."""
    return Recording(*args, **kw).run()


__all__ = ["FORCE_TIMED_REPLAY", "MODES", "RunResult", "launch"]

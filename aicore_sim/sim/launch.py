"""``launch()``: a :class:`~aicore_sim.sim.recording.Recording` with every step done (defined in
``recording.py``; this module keeps the name it has always been imported by)."""

from aicore_sim.sim.recording import FORCE_TIMED_REPLAY, MODES, RunResult, launch

__all__ = ["FORCE_TIMED_REPLAY", "MODES", "RunResult", "launch"]

"""launch(): run one kernel launch on every core — record, replay, check — and return results.

Step of the flow: this is the front door for op models and the command line. It puts the
input tensors into GM, records the kernel once per core (functional image), replays all
cores together on SimPy (timed image, or timing only), runs the checks, and reads the
outputs back.

Modes:

- ``functional``: record only; outputs from the functional image; no timing.
- ``timed`` (default): outputs of the timed image (effects applied in simulated time: sources
  read at an instruction's start, results written at its completion), compared with the
  functional one. The replay runs without effects first; when the race analysis proves every
  access ordered after the same writer as in program order, the timed image *is* the
  functional image and is not recomputed; otherwise a second replay applies the effects.
- ``timing-only``: timing only. The record pass runs the kernel's control flow with the data
  movement that control flow can depend on (GM->UB copies, scalar stores, ``GetValue``) but
  no vector arithmetic and no UB->GM copies (``program.CONTROL_EFFECTS``); the replay has no
  effects; there are no outputs. The instruction streams are those of the other modes up to
  the values of scalar operands, which arithmetic may have produced (see
  :func:`stream_difference` and docs/model.md).

``jobs`` records the cores in that many processes (results identical to one).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from aicore_sim import checks, engine, program
from aicore_sim.ascendc.tensors import GM_ADDR
from aicore_sim.errors import PlatformError
from aicore_sim.memory import MemoryImage
from aicore_sim.platform import Platform, launch_problem
from aicore_sim.program import Hazard, Program
from aicore_sim.resources import check_launch
from aicore_sim.trace import Trace

MODES = ("functional", "timed", "timing-only")
# Set this environment variable to "1" to always compute the timed image by a replay with
# effects, even when the race analysis proves it equal to the functional one (tests use it
# to check the proof against the real thing).
FORCE_TIMED_REPLAY = "AICORE_SIM_TIMED_REPLAY"


@dataclass
class RunResult:
    """Outputs, trace and findings of one launch."""

    mode: str
    platform: Platform
    program: Program
    trace: Trace | None
    outputs: dict[str, np.ndarray]
    hazards: list[Hazard]
    wall: dict[str, float] = field(default_factory=dict)

    @property
    def cycles(self) -> int:
        """Makespan in cycles (0 in functional mode, which has no timing)."""
        return self.trace.makespan if self.trace is not None else 0

    @property
    def us(self) -> float:
        return self.cycles / self.platform.clock_mhz

    def hazards_of(self, kind: str) -> list[Hazard]:
        return [h for h in self.hazards if h.kind == kind]


def _stream_hazards(prog: Program, alt: Program) -> list[Hazard]:
    """A ``stream_differs`` hazard when the two recordings of a launch differ."""
    d = program.stream_difference(prog.streams, alt.streams)
    if d is None:
        return []
    core, i, x, y = d
    by_mode = {prog.numerics: x, alt.numerics: y}

    def say(ins):
        return ins.describe() if ins is not None else "(stream ended)"

    return [Hazard("stream_differs", core,
                   f"instruction #{i} differs between the record with numerics "
                   f"({say(by_mode[True])}) and the timing-only record "
                   f"({say(by_mode[False])}): the kernel's control flow depends on a value "
                   f"that only vector arithmetic produces, so timing-only results are not "
                   f"valid for it", ((core, i),))]


def launch(kernel: Callable[..., None], args: Sequence, tensors: dict[str, np.ndarray],
           outputs: dict[str, tuple[np.dtype, tuple[int, ...]]], platform: Platform,
           block_dim: int | None = None, mode: str = "timed", races: bool = True,
           jobs: int = 1, check_streams: bool = False,
           after_record: Callable[[Program], None] | None = None,
           after_replay: Callable[[Trace], None] | None = None,
           prepared: dict | None = None, auto_sync: bool = True,
           instructions: int | None = None) -> RunResult:
    """Run ``kernel(*args)`` on ``block_dim`` cores.

    ``args`` lists the kernel's parameters in order: a ``str`` names a GM tensor of
    ``tensors`` (passed as its ``GM_ADDR``), ``None`` is a null pointer, anything else (the
    tiling data) is passed as it is. ``outputs`` names the tensors to read back with their
    dtype and shape; they are the only tensors the kernel may write (the others are read-only
    inputs, and a write to one is a ``KernelError``). Returned outputs are views of the
    launch's own memory image, never of the caller's arrays. ``races`` turns the race
    analysis off. ``jobs`` is the number of processes of the record pass. In timing-only
    mode ``outputs`` of the result is empty (nothing was computed). ``check_streams``
    records the kernel a second time the other way (with numerics when the mode has none, and
    without otherwise) and adds a ``stream_differs`` hazard naming the first instruction
    where the two differ: the check that a port's control flow never depends on a value that
    only vector arithmetic produces (docs/model.md). ``after_record`` is called with the
    program once the record pass is done, ``after_replay`` with the replay's trace as soon as
    it exists, before the checks (the command line starts background work then).
    ``prepared`` is passed to :func:`aicore_sim.engine.replay` (a caller that will replay the
    same streams again keeps it with them). ``auto_sync=False`` records the kernel as built
    without the compiler's auto-sync: scalar UB reads are ordered by explicit flags only.
    ``instructions`` is the op's upper estimate of the instructions the record pass will make,
    from its tiling: with the memory images and output copies it must fit in the memory
    available (:func:`aicore_sim.resources.check_launch`; ``ResourceError`` otherwise, before
    any work).
    """
    if mode not in MODES:
        raise ValueError(f"mode {mode!r}: expected one of {', '.join(MODES)}")
    block_dim = platform.aiv_core_num if block_dim is None else int(block_dim)
    problem = launch_problem(platform)
    if problem is not None:
        raise PlatformError(problem)
    numerics = mode != "timing-only"
    check_launch(sum(int(t.nbytes) for n, t in tensors.items() if n in outputs) if numerics
                 else 0, block_dim, platform.ub_image_size, 1 + numerics + check_streams,
                 instructions)
    wall: dict[str, float] = {}
    t0 = time.perf_counter()
    numerics = mode != "timing-only"
    # Inputs are read-only views (a kernel writing one is an error); with numerics the
    # outputs are private copies, in timing-only mode nothing is written and nothing copied.
    image = MemoryImage.from_tensors(tensors, platform.ub_image_size, block_dim, set(outputs),
                                     copy=numerics)
    gm_args = tuple(GM_ADDR(a) if isinstance(a, str) else a for a in args)
    # the memory before the launch: read-only views of the caller's arrays, for a replay with
    # effects and to reset the outputs if a parallel record must be redone serially
    initial = (MemoryImage.from_tensors(tensors, platform.ub_image_size, block_dim, set(outputs),
                                        copy=False) if numerics else None)
    prog = program.record(kernel, gm_args, block_dim, image, platform, initial,
                          numerics=numerics, jobs=jobs, auto_sync=auto_sync)
    if mode != "timed":
        prog.initial = prog.functional  # keep no pre-launch image nobody will replay
    wall["record"] = time.perf_counter() - t0
    hazards = list(prog.hazards)
    if after_record is not None:
        after_record(prog)
    if check_streams:
        t1 = time.perf_counter()
        other = MemoryImage.from_tensors(tensors, platform.ub_image_size, block_dim, set(outputs),
                                         copy=not numerics)
        alt = program.record(kernel, gm_args, block_dim, other, platform, None,
                             numerics=not numerics, jobs=jobs, auto_sync=auto_sync)
        hazards.extend(_stream_hazards(prog, alt))
        del other, alt
        wall["check_streams"] = time.perf_counter() - t1
    trace = None
    final = prog.functional
    if mode != "functional":
        t1 = time.perf_counter()
        trace = engine.replay(prog.streams, platform, None, prog.allocations, prepared)
        trace.sources = prog.sources
        wall["replay"] = time.perf_counter() - t1
        if after_replay is not None:
            after_replay(trace)
        t2 = time.perf_counter()
        found = checks.check_trace(trace, platform.ub_image_size, races=races)
        wall["checks"] = time.perf_counter() - t2
        hazards.extend(found)
        if mode == "timed":
            # When the race analysis ran and found every access ordered after the same writer
            # as in program order, the timed image equals the functional one: reuse it.
            # Otherwise re-run the replay with effects to get the timed image itself.
            ordered = races and not any(h.kind in ("race", "double_set") for h in found)
            if not ordered or os.environ.get(FORCE_TIMED_REPLAY) == "1":
                t3 = time.perf_counter()
                timed = prog.initial.copy()
                engine.replay(prog.streams, platform, timed, prog.allocations)
                hazards.extend(checks.compare_images(prog.functional, timed, list(outputs)))
                final = timed
                wall["timed_replay"] = time.perf_counter() - t3
    outs = ({name: final.gm_array(name, dt, shape) for name, (dt, shape) in outputs.items()}
            if numerics else {})
    wall["total"] = time.perf_counter() - t0
    return RunResult(mode, platform, prog, trace, outs, hazards, wall)

"""Recording: one kernel launch, recorded once, then replayed, checked, read and compared.

Step of the flow: the one run pipeline; every front end builds a :class:`Recording`, and
nothing else calls the record pass (``program.record``) or the replay (``engine.replay``).
Building one records the kernel once per core (functional image); the later steps run when
first asked for, each once - :attr:`~Recording.trace` (the SimPy replay),
:attr:`~Recording.hazards` (the checks, the timed image), :attr:`~Recording.outputs`,
:meth:`~Recording.compare` - so a caller may start work of its own between them.
:meth:`~Recording.replay` replays the same streams on a what-if platform (sweeps, ``--slack``,
``calibrate``) when the record pass reads nothing different of it (:func:`record_fields`),
the per-instruction costs prepared once per costs and clock and kept on the recording.

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
  :func:`~aicore_sim.sim.program.stream_difference` and docs/model.md).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from aicore_sim.ascendc.tensors import GM_ADDR
from aicore_sim.sim import checks, engine, program
from aicore_sim.sim.errors import PlatformError
from aicore_sim.sim.memory import MemoryImage
from aicore_sim.sim.platform import Platform, launch_problem
from aicore_sim.sim.program import Hazard, Program
from aicore_sim.sim.trace import Trace
from aicore_sim.util.resources import check_launch

MODES = ("functional", "timed", "timing-only")
# Set this environment variable to "1" to always compute the timed image by a replay with
# effects, even when the race analysis proves it equal to the functional one (tests use it
# to check the proof against the real thing).
FORCE_TIMED_REPLAY = "AICORE_SIM_TIMED_REPLAY"
_PREPARED_KEPT = 8  # prepared cost columns kept per recording (one per engine.prepared_key)


def record_fields(platform: Platform) -> tuple:
    """What the record pass reads of a platform (UB sizes, core count, SoC): a platform that
    differs only elsewhere (costs, clock, HBM, L2, data cache) replays the same streams."""
    return (platform.core_mem_size_ub, platform.ub_image_size, platform.aiv_core_num,
            platform.short_soc)


def _stream_hazards(prog: Program, alt: Program) -> list[Hazard]:
    """A ``stream_differs`` hazard when the two recordings of a launch differ."""
    d = program.stream_difference(prog.streams, alt.streams)
    if d is None:
        return []
    core, i, x, y = d
    say = {numerics: "(stream ended)" if ins is None else ins.describe()
           for numerics, ins in ((prog.numerics, x), (alt.numerics, y))}
    return [Hazard("stream_differs", core,
                   f"instruction #{i} differs between the record with numerics "
                   f"({say[True]}) and the timing-only record "
                   f"({say[False]}): the kernel's control flow depends on a value "
                   f"that only vector arithmetic produces, so timing-only results are not "
                   f"valid for it", ((core, i),))]


class Recording:
    """``kernel(*args)`` recorded on ``block_dim`` cores (see the module docstring).

    ``args`` lists the kernel's parameters in order: a ``str`` names a GM tensor of
    ``tensors`` (passed as its ``GM_ADDR``), ``None`` is a null pointer, anything else (the
    tiling data) is passed as it is. ``outputs`` names the tensors to read back with their
    dtype and shape; they are the only tensors the kernel may write (the others are read-only
    inputs, and a write to one is a ``KernelError``). Outputs are views of the launch's own
    memory image, except those of ``into`` (name -> the caller's array, filled in where
    computed, delivered in any case); ``scratch`` names are written but not delivered (a
    workspace). ``races=False`` turns the race analysis off. ``jobs`` is the number of
    processes of the record pass. ``check_streams`` records the kernel a second time
    the other way (with numerics when the mode has none, and without otherwise) and adds a
    ``stream_differs`` hazard naming the first instruction where the two differ: the check
    that a port's control flow never depends on a value that only vector arithmetic produces
    (docs/model.md). ``auto_sync=False`` records the kernel as built without the compiler's
    auto-sync: scalar UB reads are ordered by explicit flags only. ``instructions`` is the
    op's upper estimate of the instructions the record pass will make, from its tiling: with
    the memory images and output copies it must fit in the memory available
    (:func:`aicore_sim.util.resources.check_launch`; ``ResourceError`` otherwise, before any work).

    ``expected`` (set by :func:`aicore_sim.ops.opmodel.call`) gives the golden :meth:`compare`
    uses by default; ``wall`` the wall seconds of each step done.

    ``kernel_source`` (a :class:`aicore_sim.cfront.KernelSource`) runs the kernel's own C++
    sources in place of the Python port ``kernel``: the port's signature names the C++ entry
    and maps ``args`` onto it (compiled before the record, so a compile error refuses the
    launch before any work)."""

    def __init__(self, kernel: Callable[..., None], args: Sequence,
                 tensors: dict[str, np.ndarray], outputs: dict[str, tuple[np.dtype, tuple]],
                 platform: Platform, block_dim: int | None = None, mode: str = "timed",
                 races: bool = True, jobs: int = 1, check_streams: bool = False,
                 auto_sync: bool = True, instructions: int | None = None,
                 scratch: Sequence[str] = (), into: dict[str, np.ndarray] | None = None,
                 kernel_source: Any = None) -> None:
        if mode not in MODES:
            raise ValueError(f"mode {mode!r}: expected one of {', '.join(MODES)}")
        block_dim = platform.aiv_core_num if block_dim is None else int(block_dim)
        problem = launch_problem(platform)
        if problem is not None:
            raise PlatformError(problem)
        numerics = mode != "timing-only"
        check_launch(sum(int(t.nbytes) for n, t in tensors.items() if n in outputs)
                     if numerics else 0, block_dim, platform.ub_image_size,
                     1 + numerics + check_streams, instructions)
        self.mode, self.platform, self.races = mode, platform, races
        if kernel_source is not None:
            kernel = kernel_source.kernel_for(kernel, args, platform)
        self.expected: Callable[[], dict[str, np.ndarray | None]] | None = None
        self.wall: dict[str, float] = {}
        self._read_back = {k: v for k, v in outputs.items() if k not in scratch}
        self._into, self._prepared = dict(into or {}), {}  # engine.replay's cost columns
        self._trace, self._final = None, None  # the replay; the timed image if replayed
        self._found: list[Hazard] | None = None  # the checks' findings
        self._outputs: dict[str, np.ndarray] | None = None
        self._t0 = time.perf_counter()
        # Inputs are read-only views (a kernel writing one is an error); with numerics the
        # outputs are private copies, in timing-only mode nothing is written or copied.
        image = MemoryImage.from_tensors(tensors, platform.ub_image_size, block_dim,
                                         set(outputs), copy=numerics)
        gm_args = tuple(GM_ADDR(a) if isinstance(a, str) else a for a in args)
        # the memory before the launch: read-only views of the caller's arrays, for a replay
        # with effects and to reset the outputs if a parallel record must be redone serially
        initial = (MemoryImage.from_tensors(tensors, platform.ub_image_size, block_dim,
                                            set(outputs), copy=False) if numerics else None)
        prog = program.record(kernel, gm_args, block_dim, image, platform, initial,
                              numerics=numerics, jobs=jobs, auto_sync=auto_sync)
        if mode != "timed":
            prog.initial = prog.functional  # keep no pre-launch image nobody will replay
        self.program = prog
        self._step("record")
        self.record_hazards = list(prog.hazards)
        if check_streams:
            t1 = time.perf_counter()
            other = MemoryImage.from_tensors(tensors, platform.ub_image_size, block_dim,
                                             set(outputs), copy=not numerics)
            alt = program.record(kernel, gm_args, block_dim, other, platform, None,
                                 numerics=not numerics, jobs=jobs, auto_sync=auto_sync)
            self.record_hazards.extend(_stream_hazards(prog, alt))
            del other, alt
            self._step("check_streams", t1)

    @classmethod
    def nothing(cls, mode: str, platform: Platform, outputs: dict[str, np.ndarray]
                ) -> Recording:
        """A call that launches no kernel (e.g. empty tensors): no core, trace or hazard."""
        rec = cls.__new__(cls)
        rec.mode, rec.platform, rec.races, rec.expected = mode, platform, True, None
        rec.wall, rec._prepared, rec.record_hazards, rec._found = {}, {}, [], []
        rec.program = Program([], [], MemoryImage({}, 0, 0), MemoryImage({}, 0, 0))
        rec._trace, rec._outputs = None, dict(outputs)
        return rec

    def _step(self, name: str, since: float | None = None) -> None:
        now = time.perf_counter()
        self.wall[name] = now - (self._t0 if since is None else since)
        self.wall["total"] = now - self._t0

    @property
    def trace(self) -> Trace | None:
        """The replay on the recorded platform, timing only (``None`` in functional mode)."""
        if self._trace is None and self.mode != "functional" and self.program.streams:
            t1 = time.perf_counter()
            self._trace = self._engine(self.platform, self._prepared)
            self._trace.sources = self.program.sources
            self._step("replay", t1)
        return self._trace

    @property
    def hazards(self) -> list[Hazard]:
        """The record's hazards and the replay's checks: flags, races (``races``), and in timed
        mode outputs of the timed image that differ from the functional one."""
        if self._found is None:
            self._found = [] if self.trace is None else self._check(self.trace)
        return self.record_hazards + self._found

    def _check(self, trace: Trace) -> list[Hazard]:
        t2 = time.perf_counter()
        found = checks.check_trace(trace, self.platform.ub_image_size, races=self.races)
        self._step("checks", t2)
        if self.mode == "timed":
            # When the race analysis ran and found every access ordered after the same writer
            # as in program order, the timed image equals the functional one: reuse it.
            # Otherwise re-run the replay with effects to get the timed image itself.
            ordered = self.races and not any(h.kind in ("race", "double_set") for h in found)
            if not ordered or os.environ.get(FORCE_TIMED_REPLAY) == "1":
                t3 = time.perf_counter()
                timed = self.program.initial.copy()
                self._engine(self.platform, None, timed)
                found += checks.compare_images(self.program.functional, timed,
                                               list(self._read_back))
                self._final = timed  # the image the outputs are read from
                self._step("timed_replay", t3)
        return found

    @property
    def outputs(self) -> dict[str, np.ndarray]:
        """The outputs by name (none computed in timing-only mode; see ``into``)."""
        if self._outputs is None:
            self.hazards  # noqa: B018 - in timed mode the image read is known after the checks
            final = self.program.functional if self._final is None else self._final
            outs = ({n: final.gm_array(n, dt, shape) for n, (dt, shape) in
                     self._read_back.items()} if self.program.numerics else {})
            for name, user in self._into.items():
                if name in outs:
                    np.copyto(user, outs[name])
                outs[name] = user
            self._outputs = outs
            self.wall["total"] = time.perf_counter() - self._t0
        return self._outputs

    def run(self) -> Recording:
        """Every step done (replay, checks, outputs): what :func:`launch` returns."""
        self.outputs  # noqa: B018
        return self

    def compare(self, expected: dict[str, np.ndarray | None] | None = None,
                standard: Any = None, specs: dict[str, Any] | None = None) -> Any:
        """The outputs against ``expected`` (default: :attr:`expected`, the op's golden): value
        for value (:func:`aicore_sim.views.summary.compare_golden`'s dict), or with a verify
        ``standard`` one ``OutputCompare`` per output of ``specs`` (name -> ``(shape, dtype)``
        or ``None``; default the expected arrays'), ``output missing`` where a side has none."""
        from aicore_sim.sim import dtypes
        from aicore_sim.verify.compare import OutputCompare, compare
        from aicore_sim.views.summary import compare_golden

        expected = self.expected() if expected is None else expected
        if standard is None:
            return compare_golden(self.outputs, expected)
        if specs is None:
            specs = {k: (v.shape, v.dtype) for k, v in expected.items() if v is not None}
        out = []
        for name, (shape, dt) in ((k, v) for k, v in specs.items() if v is not None):
            got, want, rule = self.outputs.get(name), expected.get(name), standard.rule(dt)
            out.append(compare(name, got, want, rule) if got is not None and want is not None
                       else OutputCompare(name, rule.describe(), dtypes.dtype_name(dt), shape,
                                          False, error="output missing"))
        return out

    def replay(self, platform: Platform | None = None, *, columns: list | None = None,
               check: bool = True) -> tuple[Trace | None, list[Hazard]]:
        """The trace and hazards on ``platform``: the recorded one's :attr:`trace` and
        :attr:`hazards` by default; another's from a timing-only replay of the same streams
        (``ValueError`` if the record pass reads it differently, :func:`record_fields`), the
        record's hazards and its checks' (none with ``check=False``). ``columns``: cost columns
        to replay instead of the platform's (:meth:`columns` changed: slack scenarios)."""
        if columns is None and (platform is None or platform is self.platform
                                or platform == self.platform):
            return self.trace, self.hazards
        platform = self.platform if platform is None else platform
        if record_fields(platform) != record_fields(self.platform):
            raise ValueError(f"platform {platform.name}: the record pass reads other values "
                             f"of it ({record_fields(platform)}, recorded on "
                             f"{record_fields(self.platform)}): record the launch again")
        if columns is not None:
            trace = self._engine(platform, {engine.prepared_key(platform):
                                            (platform.costs, columns)})
        else:
            trace = self._engine(platform, self._prepared)
        found = (checks.check_trace(trace, platform.ub_image_size, races=self.races)
                 if check else [])
        return trace, self.record_hazards + found

    def drop_trace(self) -> None:
        """Free the trace (a cache of recordings keeps records, not traces); it replays again."""
        self._trace = None

    def l2_reuse_columns(self) -> tuple[list, Any]:
        """The prepared columns as if every GM re-read hit L2 (writes written back as they
        are), and the L2 result of that pricing (``hit_bytes``: the re-read bytes)."""
        return engine.prepare_all(self.program.streams, self.platform, True)

    def columns(self, l2_reuse_hits: bool = False) -> list:
        """The recorded platform's prepared per-instruction cost columns (``engine.core``; with
        ``l2_reuse_hits`` as if every GM re-read hit L2)."""
        if l2_reuse_hits:
            return engine.prepare_all(self.program.streams, self.platform, True)[0]
        held = self._prepared.get(engine.prepared_key(self.platform))
        if held is not None and held[0] is self.platform.costs:
            return held[1]
        return engine.prepare_all(self.program.streams, self.platform)[0]

    def _engine(self, platform: Platform, prepared: dict | None,
                image: MemoryImage | None = None) -> Trace:
        trace = engine.replay(self.program.streams, platform, image, self.program.allocations,
                              prepared)
        while len(self._prepared) > _PREPARED_KEPT:  # oldest first: memory stays bounded
            del self._prepared[next(iter(self._prepared))]
        return trace

    @property
    def cycles(self) -> int:
        """Makespan in cycles (0 in functional mode, which has no timing)."""
        return self.trace.makespan if self.trace is not None else 0

    @property
    def us(self) -> float:
        return self.cycles / self.platform.clock_mhz

    def hazards_of(self, kind: str) -> list[Hazard]:
        return [h for h in self.hazards if h.kind == kind]


def launch(*args: Any, **kw: Any) -> Recording:
    """``Recording(kernel, args, tensors, outputs, platform, ...)`` with every step done: the
    short way for kernels without an op model (tests, validation scenarios)."""
    return Recording(*args, **kw).run()


RunResult = Recording  # the name results had before there was a Recording

__all__ = ["FORCE_TIMED_REPLAY", "MODES", "Recording", "RunResult", "launch", "record_fields"]

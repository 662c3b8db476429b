"""Sweep points: expansion of a spec into hashed points, and batching (step: sweep set-up).

A point is one launch: a value for every axis of the spec. Its key is a hash of the op, the
mode, the seed, the axis values and the simulator build (:func:`model_fingerprint`), so the
same point in a later run (``--resume``) or in another spec has the same key, and a result is
never reused by a simulator whose sources, costs or operator port differ. Points that differ
only in timing-only platform axes (HBM bandwidth, clock) share a *record group*: a worker
records the kernel once and replays it for each of them.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from aicore_sim.sweep.spec import AUTO, TIMING_ONLY_AXES, SweepSpec
from aicore_sim.util import textinput


@dataclass(frozen=True)
class Point:
    """One launch of a sweep."""

    key: str
    op: str
    mode: str
    seed: int | None
    axes: dict[str, Any] = field(default_factory=dict)

    def record_group(self) -> str:
        """Points with the same group can reuse one recorded program."""
        fixed = {k: v for k, v in self.axes.items() if k not in TIMING_ONLY_AXES}
        return _digest({"op": self.op, "mode": self.mode, "seed": self.seed, "axes": fixed})


def _digest(obj: Any) -> str:
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


_OWN_PACKAGE = Path(__file__).resolve().parents[1]  # aicore_sim


@functools.cache
def model_fingerprint(op: str) -> str:
    """Hash of the files every result of operator ``op`` depends on besides its point: the
    simulator's Python sources and data files (costs, platforms) and those of the top-level
    package holding the op's tiling space (its port, tiling and shared helpers), less any
    ``tests`` folder in them (an op's tests decide no row; a wheel ships none). A few ms,
    once per process and op."""
    dirs = [_OWN_PACKAGE]
    try:
        from aicore_sim.sweep.ops import get_op

        top = sys.modules[type(get_op(op)).__module__.partition(".")[0]]
        dirs += [Path(d).resolve() for d in getattr(top, "__path__", ())]
    except (ValueError, KeyError, ImportError):
        pass  # an op that cannot be found: its points fail to run, keyed on the simulator
    h = hashlib.sha256()
    for d in dict.fromkeys(dirs):
        files = sorted(f for pattern in ("*.py", "*.toml") for f in d.rglob(pattern)
                       if not {"__pycache__", "tests"} & set(f.relative_to(d).parts))
        for f in files:
            h.update(f.relative_to(d).as_posix().encode() + b"\0" + f.read_bytes())
    return h.hexdigest()[:16]


def point_key(op: str, mode: str, seed: int | None, axes: dict[str, Any]) -> str:
    """Stable hash of a point and the simulator build (auto-valued tiling axes are dropped:
    same as not given)."""
    clean = {k: v for k, v in axes.items() if v != AUTO}
    return _digest({"op": op, "mode": mode, "seed": seed, "axes": clean,
                    "model": model_fingerprint(op)})


def spec_hash(spec: SweepSpec) -> str:
    """Hash of what a sweep's rows depend on: the spec less its name and report options, the
    bytes of every case file it names and the simulator build (``--resume`` continues only
    the same sweep run by the same simulator)."""
    d = {k: v for k, v in asdict(spec).items() if k not in ("name", "heatmap")}
    files = {}
    for c in spec.axes.get("case", []):
        try:
            files[str(c)] = hashlib.sha256(Path(str(c)).read_bytes()).hexdigest()
        except OSError:
            pass  # a bundled case name
    return _digest({"spec": d, "case_files": files, "model": model_fingerprint(spec.op)})


def make_point(op: str, mode: str, seed: int | None, axes: dict[str, Any]) -> Point:
    return Point(point_key(op, mode, seed, axes), op, mode, seed, dict(axes))


def case_file_platform(case: Any) -> str | None:
    """The ``platform`` a case file names (a preset name, or its dict as JSON text), or None
    for a bundled case name or a file without one."""
    text = str(case)
    if not (text.endswith(".json") or "/" in text):
        return None
    try:
        doc = textinput.loads_json(textinput.read_document(text))
    except (OSError, ValueError):
        return None  # the case axis reports the file's problem itself
    p = doc.get("platform") if isinstance(doc, dict) else None
    if p is None or isinstance(p, str):
        return p
    return json.dumps(p, sort_keys=True)


def _distinct(values: list[Any]) -> list[Any]:
    """``values`` without repeats (the first kept), compared as a point's key compares them
    (their JSON text)."""
    seen: set[str] = set()
    out = []
    for v in values:
        text = json.dumps(v, sort_keys=True, separators=(",", ":"), default=str)
        if text not in seen:
            seen.add(text)
            out.append(v)
    return out


def count_points(spec: SweepSpec) -> int:
    """How many points :func:`iter_points` yields (counted, not built)."""
    n = 1
    for values in spec.axes.values():
        n *= len(_distinct(values))
    return n


def iter_points(spec: SweepSpec) -> Iterator[Point]:
    """The points of ``spec`` (cartesian product), one at a time, duplicates removed, in spec
    order. Without a ``platform`` axis a point of a case file runs on the platform that file
    names.

    Two points have one key exactly when their axes are equal (the key hashes the axes as
    JSON, ``auto`` values dropped: every point has the same axis names, so none is dropped
    from one point only), so repeats are removed from each axis's values: the product of
    the rest yields each point once, at its first place in the full product."""
    names = list(spec.axes)
    plats: dict[str, str | None] = {}  # case -> the platform its file names
    for values in itertools.product(*(_distinct(spec.axes[n]) for n in names)):
        axes = dict(zip(names, values))
        if "platform" not in axes and "case" in axes:
            case = str(axes["case"])
            if case not in plats:
                plats[case] = case_file_platform(axes["case"])
            if plats[case] is not None:
                axes["platform"] = plats[case]
        yield make_point(spec.op, spec.mode, spec.seed, axes)


def expand(spec: SweepSpec) -> list[Point]:
    """All points of ``spec`` as a list (:func:`iter_points`)."""
    return list(iter_points(spec))


def batches(points: list[Point], max_batch: int = 32,
            group_of: Callable[[Point], str] = Point.record_group) -> list[list[Point]]:
    """Points grouped by ``group_of`` (default: the axes-only record group), groups split into
    batches of at most ``max_batch``.

    A batch is the unit handed to an executor (the chunking): one task records once and
    replays the rest. Batches are ordered largest first so the slowest start first.
    """
    groups: dict[str, list[Point]] = {}
    for p in points:
        groups.setdefault(group_of(p), []).append(p)
    out: list[list[Point]] = []
    for g in groups.values():
        for i in range(0, len(g), max(1, max_batch)):
            out.append(g[i:i + max_batch])
    out.sort(key=len, reverse=True)
    return out


WINDOW = 16384
"""Points :func:`iter_batches` plans at a time: a sweep of at most this many points is
batched exactly as :func:`batches` batches the whole list."""


def iter_batches(points: Iterable[Point], max_batch: int = 32,
                 group_of: Callable[[Point], str] = Point.record_group,
                 window: int | None = None) -> Iterator[list[Point]]:
    """:func:`batches` of the stream ``points``, ``window`` (default :data:`WINDOW`) points at
    a time: the points of a record group further apart than that are recorded once per
    window; none is drawn from ``points`` before the batches of the window before it are
    taken."""
    it = iter(points)
    while chunk := list(itertools.islice(it, max(1, window or WINDOW))):
        yield from batches(chunk, max_batch, group_of)

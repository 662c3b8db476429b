"""Sweep points: expansion of a spec into hashed points, and batching (step: sweep set-up).

A point is one launch: a value for every axis of the spec. Its key is a hash of the op, the
mode, the seed and the axis values, so the same point in a later run (``--resume``) or in
another spec has the same key. Points that differ only in timing-only platform axes (HBM
bandwidth, clock) share a *record group*: a worker records the kernel once and replays it for
each of them.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from aicore_sim import textinput
from aicore_sim.sweep.spec import AUTO, TIMING_ONLY_AXES, SweepSpec


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


def point_key(op: str, mode: str, seed: int | None, axes: dict[str, Any]) -> str:
    """Stable hash of a point (auto-valued tiling axes are dropped: same as not given)."""
    clean = {k: v for k, v in axes.items() if v != AUTO}
    return _digest({"op": op, "mode": mode, "seed": seed, "axes": clean})


def spec_hash(spec: SweepSpec) -> str:
    """Hash of what a sweep's rows depend on: the spec less its name and report options, and
    the bytes of every case file it names (``--resume`` continues only the same sweep)."""
    d = {k: v for k, v in asdict(spec).items() if k not in ("name", "heatmap")}
    files = {}
    for c in spec.axes.get("case", []):
        try:
            files[str(c)] = hashlib.sha256(Path(str(c)).read_bytes()).hexdigest()
        except OSError:
            pass  # a bundled case name
    return _digest({"spec": d, "case_files": files})


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


def expand(spec: SweepSpec) -> list[Point]:
    """All points of ``spec`` (cartesian product), duplicates removed, in spec order. Without
    a ``platform`` axis a point of a case file runs on the platform that file names."""
    names = list(spec.axes)
    seen: set[str] = set()
    out: list[Point] = []
    for values in itertools.product(*(spec.axes[n] for n in names)):
        axes = dict(zip(names, values))
        if "platform" not in axes and "case" in axes:
            plat = case_file_platform(axes["case"])
            if plat is not None:
                axes["platform"] = plat
        p = make_point(spec.op, spec.mode, spec.seed, axes)
        if p.key not in seen:
            seen.add(p.key)
            out.append(p)
    return out


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

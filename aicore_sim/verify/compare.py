"""Error metrics of one output against its golden, under a :class:`~.standards.Rule`.

Step of the flow: after a launch - one output array and its expected array in, one
:class:`OutputCompare` out (pass/fail, max abs / max and mean relative error, share of bad
elements, the first bad element). Big arrays are processed in flat chunks so the float64
scratch stays bounded; identical bits short-cut to all-zero metrics.

Definitions (float64 after the output dtype):
``abs = |got - want|`` (0 where both are NaN or the same infinity, inf where only one is NaN
or the infinities differ); ``rel = abs / (|want| + 1e-7)`` - CANN's relative error with its
guard against a zero golden. ``bad`` is per standard (bit-exact: bits differ; threshold:
``rel >= t``; custom: ``abs > atol + rtol |want|``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from aicore_sim.dtypes import dtype_name
from aicore_sim.verify.standards import REL_EPS, Rule

__all__ = ["OutputCompare", "compare"]

_CHUNK = 1 << 22


@dataclass
class OutputCompare:
    """The verdict on one output."""

    name: str
    standard: str
    dtype: str
    shape: tuple[int, ...]
    passed: bool
    elements: int = 0
    bad: int = 0
    max_abs: float = 0.0
    max_rel: float = 0.0
    mean_rel: float = 0.0
    first_bad: dict[str, Any] | None = None  # {"index": [...], "got": x, "want": y}
    error: str | None = None  # the comparison could not be made (shape/dtype differ)

    @property
    def bad_share(self) -> float:
        return self.bad / self.elements if self.elements else 0.0

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["shape"] = list(self.shape)
        d["bad_share"] = self.bad_share
        return d


def _bits(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a).reshape(-1)
    if a.dtype.itemsize in (1, 2, 4, 8):
        return a.view(f"u{a.dtype.itemsize}")
    return a.view(np.uint8)


def _scalar(x: Any) -> float | int:
    """A JSON-ready Python number of one element (floats via float64, exact for all dtypes)."""
    return int(x) if np.asarray(x).dtype.kind in "iub" else float(np.float64(x))


def compare(name: str, got: np.ndarray, want: np.ndarray, rule: Rule) -> OutputCompare:
    """Compare ``got`` with ``want`` element by element under ``rule``."""
    got = np.asarray(got)
    want = np.asarray(want)
    res = OutputCompare(name, rule.describe(), dtype_name(want.dtype), tuple(want.shape), False)
    if got.shape != want.shape:
        res.error = f"shape {list(got.shape)} != expected {list(want.shape)}"
        return res
    if got.dtype != want.dtype:
        res.error = f"dtype {dtype_name(got.dtype)} != expected {dtype_name(want.dtype)}"
        return res
    n = int(want.size)
    res.elements = n
    gb, wb = _bits(got), _bits(want)
    if np.array_equal(gb, wb):
        res.passed = True
        return res
    g = np.ascontiguousarray(got).reshape(-1)
    w = np.ascontiguousarray(want).reshape(-1)
    is_float = want.dtype.kind in "fV"
    max_abs = max_rel = 0.0
    sum_rel = 0.0
    bad = 0
    first: int | None = None
    for lo in range(0, n, _CHUNK):
        hi = min(n, lo + _CHUNK)
        a = g[lo:hi].astype(np.float64)
        b = w[lo:hi].astype(np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            same = (a == b) | (np.isnan(a) & np.isnan(b))
            d = np.where(same, 0.0, np.abs(a - b))
        d = np.where(np.isnan(d), np.inf, d)
        with np.errstate(invalid="ignore", divide="ignore"):
            r = np.where(d == 0, 0.0, d / (np.abs(b) + REL_EPS))
        r = np.where(np.isnan(r), np.inf, r)
        if rule.kind == "bit-exact" or not is_float:
            badm = gb[lo:hi] != wb[lo:hi]
        elif rule.kind == "threshold":
            badm = r >= rule.threshold
        else:
            with np.errstate(invalid="ignore"):
                badm = d > rule.atol + rule.rtol * np.abs(b)
            badm |= np.isinf(d)
        max_abs = max(max_abs, float(d.max(initial=0.0)))
        max_rel = max(max_rel, float(r.max(initial=0.0)))
        sum_rel += float(r.sum())
        c = int(np.count_nonzero(badm))
        if c and first is None:
            first = lo + int(np.argmax(badm))
        bad += c
    res.bad, res.max_abs, res.max_rel = bad, max_abs, max_rel
    res.mean_rel = sum_rel / n if n else 0.0
    if rule.kind == "bit-exact" or not is_float:
        res.passed = bad == 0
    elif rule.kind == "threshold":
        res.passed = res.mean_rel < rule.threshold and res.max_rel < rule.max_rel
    else:
        res.passed = bad <= rule.ratio * n
    if first is not None:
        idx = [int(i) for i in np.unravel_index(first, want.shape)] if want.ndim else []
        res.first_bad = {"index": idx, "got": _scalar(g[first]), "want": _scalar(w[first])}
    return res

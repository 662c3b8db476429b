"""Output-vs-golden comparison: the one home of it, for ``verify`` and for ``run``'s summary.

Step of the flow: after a launch - one output array and its expected array in, one
:class:`OutputCompare` out (pass/fail under a :class:`~.standards.Rule`, max abs / max and mean
relative error, bad and bit-mismatching element counts, the first bad element).
``aicore-sim verify`` applies the standard it was given; the summary of ``aicore-sim run``
(:func:`aicore_sim.views.summary.compare_golden`) applies :data:`EXACT_VALUES`.

Exact first: the raw bytes are compared block by block (C order, at most ``chunk`` elements per
block, as wide machine words); a block whose bytes are equal costs one pass over memory and
no float work. Only in a block whose bytes differ are the differing elements picked out, and
the error metrics are computed on those elements alone, in float64. Scratch memory is therefore
O(chunk) for the byte test plus O(mismatches in one block) for the metrics; no whole-tensor
temporary is made (a non-contiguous input is copied one block at a time).

Definitions, per element, in float64 after the output dtype:

``abs = |got - want|``
    0 where the values are equal (NaN equals NaN whatever its payload or sign, ``-0`` equals
    ``+0``, an infinity equals the same infinity); ``inf`` where only one side is NaN or the
    infinities differ. Integers above 2^53 in magnitude are rounded to float64 for ``abs``.
``rel = abs / (|want| + 1e-7)``
    CANN's relative error with its guard against a zero golden (``0`` where ``abs`` is 0,
    ``inf`` where ``abs`` is inf). ``mean_rel`` is the sum of ``rel`` over all elements
    divided by their number; elements with equal bits add 0, so it is summed over the
    mismatching ones only.
bad, per rule
    bit-exact (and every integer output): the bits differ - a NaN with another payload and
    ``-0`` vs ``+0`` are bad here, as comparing md5 sums would say; threshold: ``rel >= t``;
    custom: ``abs > atol + rtol |want|`` or ``abs`` is inf.
``bit_mismatches``
    elements whose bits differ, under every rule (the candidates for bad).

:data:`EXACT_VALUES` is ``custom`` with ``rtol = atol = ratio = 0``: an element is bad iff its
value differs (NaN equals NaN, ``-0`` equals ``+0``), and it passes iff none is bad.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict, dataclass
from math import prod
from typing import Any

import numpy as np

from aicore_sim.sim.dtypes import dtype_name
from aicore_sim.verify.standards import REL_EPS, Rule

__all__ = ["CHUNK", "EXACT_VALUES", "OutputCompare", "compare"]

CHUNK = 1 << 20
"""Default block size in elements (2 MiB of a bfloat16 output per side)."""

EXACT_VALUES = Rule("custom")
"""Equal values (NaN equals NaN, -0 equals +0), no tolerance: the run summary's rule."""


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
    bit_mismatches: int = 0  # elements whose bits differ (bad or not under the rule)

    @property
    def bad_share(self) -> float:
        return self.bad / self.elements if self.elements else 0.0

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["shape"] = list(self.shape)
        d["bad_share"] = self.bad_share
        return d


def _blocks(shape: tuple[int, ...], chunk: int) -> Iterator[tuple[int | slice, ...]]:
    """Index tuples of consecutive C-order blocks of at most ``chunk`` elements.

    Each block is a run of whole rows of the leading axis, or, when one row is larger than
    ``chunk``, a block of that row (recursively); so every block is contiguous in a
    C-contiguous array and the blocks tile the array in flat order.
    """
    n0, row = shape[0], prod(shape[1:])
    if row <= chunk:
        step = max(1, chunk // max(row, 1))
        for i in range(0, n0, step):
            yield (slice(i, min(n0, i + step)),)
    else:
        for i in range(n0):
            for sub in _blocks(shape[1:], chunk):
                yield (i, *sub)


def _words(x: np.ndarray) -> np.ndarray:
    """The bytes of a contiguous 1-D block as the widest unsigned words that tile them."""
    u8 = x.view(np.uint8)
    for w in (8, 4, 2):
        if u8.size % w == 0:
            return u8.view(f"u{w}")
    return u8


def _bits_differ(g: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Per element of two contiguous 1-D blocks: do the bits differ?"""
    k = w.dtype.itemsize
    if k in (1, 2, 4, 8):
        return g.view(f"u{k}") != w.view(f"u{k}")
    return (g.view(np.uint8).reshape(-1, k) != w.view(np.uint8).reshape(-1, k)).any(axis=1)


def _scalar(x: Any) -> float | int:
    """A JSON-ready Python number of one element (floats via float64, exact for all dtypes)."""
    return int(x) if np.asarray(x).dtype.kind in "iub" else float(np.float64(x))


def compare(name: str, got: np.ndarray, want: np.ndarray, rule: Rule, *,
            chunk: int = CHUNK) -> OutputCompare:
    """Compare ``got`` with ``want`` element by element under ``rule`` (see module docstring).

    Shapes and dtypes must be equal, else the result carries ``error`` and fails. ``chunk``
    bounds the elements per block (any value >= 1 gives the same counts, maxima and first bad
    element; ``mean_rel`` may differ in the last bits through the summation order).
    """
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
    if want.ndim == 0:
        got, want = got.reshape(1), want.reshape(1)
    by_value = want.dtype.kind in "fV" and rule.kind != "bit-exact"  # else bad = bits differ
    max_abs = max_rel = sum_rel = 0.0
    bad = bits = offset = 0
    for idx in _blocks(want.shape, max(1, int(chunk))):
        g = np.ascontiguousarray(got[idx]).reshape(-1)
        w = np.ascontiguousarray(want[idx]).reshape(-1)
        lo, offset = offset, offset + w.size
        if np.array_equal(_words(g), _words(w)):
            continue
        pos = np.flatnonzero(_bits_differ(g, w))
        a = g[pos].astype(np.float64)
        b = w[pos].astype(np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            same = (a == b) | (np.isnan(a) & np.isnan(b))
            d = np.where(same, 0.0, np.abs(a - b))
        d[np.isnan(d)] = np.inf
        with np.errstate(invalid="ignore", divide="ignore"):
            r = np.where(d == 0, 0.0, d / (np.abs(b) + REL_EPS))
        r[np.isnan(r)] = np.inf
        if not by_value:
            badm = np.ones(pos.size, bool)
        elif rule.kind == "threshold":
            badm = r >= rule.threshold
        else:
            with np.errstate(invalid="ignore"):
                badm = d > rule.atol + rule.rtol * np.abs(b)
            badm |= np.isinf(d)
        bits += int(pos.size)
        max_abs = max(max_abs, float(d.max(initial=0.0)))
        max_rel = max(max_rel, float(r.max(initial=0.0)))
        sum_rel += float(r.sum())
        c = int(np.count_nonzero(badm))
        if c and res.first_bad is None:
            j = int(pos[np.argmax(badm)])
            flat = lo + j
            index = [int(i) for i in np.unravel_index(flat, res.shape)] if res.shape else []
            res.first_bad = {"index": index, "got": _scalar(g[j]), "want": _scalar(w[j])}
        bad += c
    res.bad, res.bit_mismatches, res.max_abs, res.max_rel = bad, bits, max_abs, max_rel
    res.mean_rel = sum_rel / n if n else 0.0
    if not by_value:
        res.passed = bad == 0
    elif rule.kind == "threshold":
        res.passed = res.mean_rel < rule.threshold and res.max_rel < rule.max_rel
    else:
        res.passed = bad <= rule.ratio * n
    return res

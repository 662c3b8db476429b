"""Numeric standards: when an output counts as equal to its golden.

Step of the flow: the rule that :mod:`.compare` applies to one output. A *standard* is chosen by
name for a whole run and resolved per output dtype into a :class:`Rule`:

``bit-exact`` (alias ``md5``)
    Every element must have the same bits as the golden - what comparing md5 sums of the two
    files means (CANN ATK ``"acc": "md5"``). An element is bad when its bits differ.

``threshold`` (aliases ``cann``, ``single-benchmark``)
    CANN's single-benchmark float threshold by output dtype ``t``: with the relative error
    ``r = |got - want| / (|want| + 1e-7)``, pass iff ``mean(r) < t`` and ``max(r) < 10 t``;
    ``t`` = 2^-10 for float16, 2^-7 for bfloat16, 2^-13 for float32. An element is *bad* (the
    share reported) when ``r >= t``. Integer outputs fall back to bit-exact.
    Sources: Ascend ATK, ``atk/configs/single_benchmark_config.py``
    (https://gitcode.com/Ascend/ATK/blob/master/atk/configs/single_benchmark_config.py:
    thresholds per dtype and ``mare_ratio = 10``); the community float standard text with the
    MERE/MARE definitions and the ``1e-7`` guard
    (https://gitcode.com/W4termy/cannbot/blob/master/ops/ops-precision-standard/reference/quantization_community.md,
    sections 4 and 5).

``custom:rtol=R,atol=A,ratio=F``
    An element is bad when ``|got - want| > A + R |want|`` (NaN matches NaN only, inf matches
    the same inf); pass iff the share of bad elements is ``<= F``. Missing keys default to
    ``rtol=0, atol=0, ratio=0``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from aicore_sim.sim.dtypes import bfloat16, dtype_name, float16, float32
from aicore_sim.verify import VerifyError

__all__ = [
    "CANN_THRESHOLDS",
    "MARE_RATIO",
    "REL_EPS",
    "Rule",
    "Standard",
    "parse_standard",
]

# CANN single-benchmark thresholds by output dtype, and the max/mean ratio (see module docstring)
CANN_THRESHOLDS: dict[np.dtype, float] = {
    float16: 2.0**-10,
    bfloat16: 2.0**-7,
    float32: 2.0**-13,
}
MARE_RATIO = 10.0
REL_EPS = 1e-7  # guard added to |golden| in the relative error of the threshold standard

_NAMES = {
    "bit-exact": "bit-exact", "bitexact": "bit-exact", "md5": "bit-exact", "exact": "bit-exact",
    "threshold": "threshold", "cann": "threshold", "single-benchmark": "threshold",
}
_CUSTOM_KEYS = ("rtol", "atol", "ratio")


@dataclass(frozen=True)
class Rule:
    """A standard resolved for one dtype: what :func:`~.compare.compare` applies."""

    kind: str  # "bit-exact" | "threshold" | "custom"
    threshold: float = 0.0  # threshold: mean relative error bound
    max_rel: float = 0.0  # threshold: max relative error bound
    rtol: float = 0.0
    atol: float = 0.0
    ratio: float = 0.0

    def describe(self) -> str:
        if self.kind == "bit-exact":
            return "bit-exact"
        if self.kind == "threshold":
            return (f"threshold (mean rel < 2^{np.log2(self.threshold):.0f}, "
                    f"max rel < {MARE_RATIO:g}x)")
        return f"custom (rtol={self.rtol:g}, atol={self.atol:g}, ratio={self.ratio:g})"


@dataclass(frozen=True)
class Standard:
    """A named standard for a whole run; :meth:`rule` resolves it per output dtype."""

    name: str  # canonical spelling, e.g. "bit-exact", "threshold", "custom:rtol=0.001,..."
    kind: str
    rtol: float = 0.0
    atol: float = 0.0
    ratio: float = 0.0

    def rule(self, dtype: np.dtype) -> Rule:
        dt = np.dtype(dtype)
        if self.kind == "bit-exact" or (self.kind == "threshold" and dt.kind not in "fV"):
            return Rule("bit-exact")
        if self.kind == "threshold":
            t = CANN_THRESHOLDS.get(dt)
            if t is None:
                raise VerifyError(f"--standard threshold: no CANN threshold for dtype "
                                  f"{dtype_name(dt)} (rule threshold_dtype)")
            return Rule("threshold", threshold=t, max_rel=MARE_RATIO * t)
        return Rule("custom", rtol=self.rtol, atol=self.atol, ratio=self.ratio)


def parse_standard(spec: str, where: str = "--standard") -> Standard:
    """Parse a standard name; unknown names raise :class:`VerifyError` naming the rule."""
    s = str(spec).strip()
    low = s.lower()
    if low in _NAMES:
        return Standard(_NAMES[low], _NAMES[low])
    if low.startswith("custom"):
        body = s[len("custom"):].lstrip(":")
        vals = {"rtol": 0.0, "atol": 0.0, "ratio": 0.0}
        for part in filter(None, (p.strip() for p in body.split(","))):
            key, eq, value = part.partition("=")
            key = key.strip().lower()
            if not eq or key not in _CUSTOM_KEYS:
                raise VerifyError(f"{where} {spec}: '{part}' is not one of rtol=R, atol=A, "
                                  f"ratio=F (rule custom_syntax)")
            try:
                v = float(value)
            except ValueError:
                raise VerifyError(f"{where} {spec}: {key}={value!r} is not a number "
                                  f"(rule custom_syntax)") from None
            if not (v >= 0 and np.isfinite(v)) or (key == "ratio" and v > 1):
                raise VerifyError(f"{where} {spec}: {key}={value} out of range (rtol, atol >= 0;"
                                  f" 0 <= ratio <= 1) (rule custom_range)")
            vals[key] = v
        name = "custom:" + ",".join(f"{k}={vals[k]:g}" for k in _CUSTOM_KEYS)
        return Standard(name, "custom", **vals)
    raise VerifyError(f"{where} {spec}: unknown standard; expected bit-exact (md5), threshold "
                      f"or custom:rtol=R,atol=A,ratio=F (rule standard_name)")

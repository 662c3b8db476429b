"""The case axes the EP-path MoE operators share: of their equivalence matrices
(``OpModel.matrix_axes``; matrix format: ``aicore_sim/verify/matrix.py``) and of their sweeps
(:class:`MoeTilingSpace`).

- ``dtype``: the tokens dtype (grad, permuted tokens), a float type in a case-file spelling
  (``bfloat16``, ``bf16``, ``DT_FLOAT`` ...);
- ``probs``: ``"none"`` = no probs (path A), ``"same"`` = the tokens dtype, or a dtype;
- ``shape``: ``{tokens = N, topk = K, hidden = H}``;
- ``range``: ``"none"`` = no range attribute, ``"middle_half"`` = ``[T/4, T/4 + T/2)`` of
  ``T = tokens * topk``, ``[start, end]`` = the raw attribute (negative values wrap, spec
  §3.8);
- ``indices``: how the indices are drawn: ``permutation``, ``identity``, ``outside_window``,
  ``duplicates``.

Each op declares the ones its cases have, in this order.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from aicore_sim import Plan, Platform, TilingSpace, dtypes, schema


def _float_dtype(v: str) -> str:
    dtypes.as_dtype(v)  # an unknown spelling is refused naming the known ones
    dt = dtypes.float_dtype(v)
    if dt is None:
        raise ValueError(f"{v!r} is not a float dtype (bfloat16, float16, float32)")
    return dtypes.dtype_name(dt)


def _probs(v: str) -> str:
    return v.lower() if v.lower() in ("none", "same") else _float_dtype(v)


_POS = schema.Int(minimum=1)

DTYPE = schema.Custom(_float_dtype, "a dtype name", (str,))
PROBS = schema.Custom(_probs, "a dtype name, 'none' or 'same'", (str,))
PAIRED_PROBS = schema.Choice(("none", "same"))  # an op whose IR pairs probs with the tokens
SHAPE = schema.Table({"tokens": _POS, "topk": _POS, "hidden": _POS},
                     required=("tokens", "topk", "hidden"),
                     what_text="a table {tokens = N, topk = K, hidden = H}")
RANGE = schema.AnyOf((schema.Choice(("none", "middle_half")),
                      schema.ListOf(schema.Int(), length=2)))
INDICES = schema.Choice(("permutation", "identity", "outside_window", "duplicates"))


def probs_dtype(axes: Mapping[str, Any]) -> str | None:
    """The probs dtype of a matrix combination (``None``: no probs)."""
    pr = axes["probs"]
    return None if pr == "none" else axes["dtype"] if pr == "same" else pr


def shape(axes: Mapping[str, Any]) -> tuple[int, int, int]:
    """``(tokens, topk, hidden)`` of a matrix combination."""
    s = axes["shape"]
    return s["tokens"], s["topk"], s["hidden"]


def window(axes: Mapping[str, Any]) -> tuple[int, int] | None:
    """The range attribute of a matrix combination (``None``: none given)."""
    rg = axes["range"]
    tokens, topk, _ = shape(axes)
    t = tokens * topk
    if rg == "none":
        return None
    if rg == "middle_half":
        return t // 4, t // 4 + t // 2
    return int(rg[0]), int(rg[1])


AXES = {"dtype": DTYPE, "probs": PROBS, "shape": SHAPE, "range": RANGE}  # the unpermute ops'
PAIRED_AXES = {**AXES, "probs": PAIRED_PROBS}  # the permute ops' (the IR pairs the probs)


def paired_case(case_type: Any, mc: Any) -> Any:
    """A matrix combination (``PAIRED_AXES``) as a case of an op whose IR pairs probs with the
    tokens: ``experts`` = 2 K, every one of the ``N * K`` rows when no range is given."""
    n, k, h = shape(mc.axes)
    return case_type(mc.name, n, k, h, mc.axes["dtype"], mc.axes["probs"] == "same",
                     experts=2 * k, range=window(mc.axes) or (0, n * k), seed=mc.seed)


def label(axes: Mapping[str, Any]) -> str:
    """The name (and seed) stem of a matrix combination, as these ops' matrices named their
    cases before the axes were the ops' own: ``bf16-noprobs-n4k2h16-norange-permutation``."""
    tokens, topk, hidden = shape(axes)
    probs = probs_dtype(axes)
    rg = axes.get("range", "none")
    rng = ("norange" if rg == "none" else "mid" if rg == "middle_half"
           else f"r{rg[0]}_{rg[1]}")
    return (f"{dtypes.SHORT[axes['dtype']]}-"
            f"{'noprobs' if probs is None else dtypes.SHORT[probs]}-"
            f"n{tokens}k{topk}h{hidden}-{rng}-{axes.get('indices', 'permutation')}")


def budgeted_plan(td: Any, key: int | None, cores: int, need: int,
                  broken: list[tuple[str, str]], platform: Platform) -> Plan:
    """The :class:`Plan` of tiling ``td`` whose buffers take ``need`` bytes of UB: the kernel
    rules it breaks (``broken``), then rule ``ub_budget`` when ``need`` exceeds the core's UB."""
    if need > platform.core_mem_size_ub:
        broken = [*broken, ("ub_budget", f"tiling needs {need} bytes of UB, the core has "
                                         f"{platform.core_mem_size_ub}")]
    return Plan(td, key, cores, need, tuple(broken))


class MoeTilingSpace(TilingSpace):
    """The sweep case axes of the MoE unpermute ops, on cases with ``tokens_num``, ``top_k``,
    ``hidden``, ``dtype``, ``probs_dtype`` and ``with_()``: a subclass gives its ``cases``
    module (``get_case``, ``np_dtype``) and ``case_from_file(path)``."""

    case_axes = MappingProxyType({
        "tokens_num": "number of tokens N (e.g. cut a case to 512 tokens)",
        "top_k": "topK K (a forward case's experts grow to fit)",
        "hidden": "hidden size H",
        "dtype": "tokens dtype: bfloat16, float16 or float32",
        "probs": "probs dtype (bfloat16, float16, float32) or 'none' for the path without probs",
    })
    case_axis_types = MappingProxyType({"tokens_num": int, "top_k": int, "hidden": int})
    cases: Any
    case_from_file: Any

    def resolve_case(self, value: str, axes: Mapping[str, Any]) -> Any:
        """The case named ``value`` (bundled name or case-file path) with case axes applied."""
        case = self.case_from_file(value) if value.endswith(".json") or "/" in value \
            else self.cases.get_case(value)
        changes: dict[str, Any] = {k: int(axes[k]) for k in ("tokens_num", "top_k", "hidden")
                                   if k in axes}
        experts = getattr(case, "experts", None)  # a forward case: its experts grow to fit
        if experts is not None and changes.get("top_k", 0) > experts:
            changes["experts"] = -(-changes["top_k"] // case.ep) * case.ep
        if "dtype" in axes:
            self.cases.np_dtype(str(axes["dtype"]))
            changes["dtype"] = str(axes["dtype"])
        if "probs" in axes:
            p = axes["probs"]
            none = p is None or str(p).lower() in ("none", "null", "false")
            if not none:
                self.cases.np_dtype(str(p))
            changes["probs_dtype"] = None if none else str(p)
        return case.with_(**changes) if changes else case

    def case_columns(self, case: Any) -> dict[str, Any]:
        return {"case": case.name, "tokens_num": case.tokens_num, "top_k": case.top_k,
                "hidden": case.hidden, "dtype": case.dtype, "probs": case.probs_dtype or "none"}

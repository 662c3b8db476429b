"""Tiling design space of ``MoeTokenUnpermuteWithEpGrad`` (step "op tiling", for sweeps).

:data:`TILING_SPACE` (the model's ``tiling_space``, a
:class:`~aicore_sim.ops.tilingspace.TilingSpace`) is what the generic sweep machinery
(``aicore_sim.sweep``) needs to know about this operator, and nothing else: which case axes
exist, which tiling fields a sweep may override ("knobs"), named tiling strategies, the
kernel's constraints on a tiling (each a named rule) and the UB budget (a point is launched and
verified against the golden through the op's one call path, the space's defaults).

Knobs (the tiling fields the kernel reads, spec §3.2, §5, §6):

* ``cores`` - cores used (block dim); the inter-core split fields (``formerCoreNum`` …
  ``rowIdMapTailCore``) are recomputed from it;
* ``indicesReserveNum`` (E) - flat positions per outer loop;
* ``inputReserveNum`` (R) - path B: permuted rows per group; path A: = E (data buffer rows·K);
* ``indicesReserveNumAlign`` (EA) - path B: E rounded up to 32 bytes of the probs dtype;
* ``hiddenSizeAlign`` (hA) - hidden chunk length; ``hiddenSizeLoopTimes`` / ``hiddenSizeTail``
  are recomputed from it.

A point's tiling is: the strategy's tiling for the chosen core count, then the overridden knobs,
then the dependent fields re-derived (an overridden E without R/EA refits R to the UB and rounds
EA up). :func:`violations` then checks the result against the kernel's rules (names below);
an infeasible point is reported with its rules, never launched.

Rules: ``cores_range``, ``indices_multiple_of_topk``, ``indices_max_512``, ``indices_16bit``,
``block_count``, ``align_indices``, ``r_divides_topk``, ``input_lt_indices``, ``hidden_align``,
``hidden_range``, ``ub_budget``.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
from pathlib import Path
from typing import Any

import numpy as np

from aicore_sim import Plan, Platform
from aicore_sim.ascendc import PlatformAscendC
from aicore_sim.ascendc.host import TensorDesc, host_tiling
from aicore_sim.ascendc.platform_ascendc import npu_arch
from op_models.moe_matrix import MoeTilingSpace, budgeted_plan
from op_models.moe_token_unpermute_with_ep_grad import cases as _cases
from op_models.moe_token_unpermute_with_ep_grad.tiling import (
    TilingContext,
    TilingData,
    tiling_func,
)

MAX_INDICES = 512  # the kernel's fixed scalar arrays in path B (spec §3.11)
MAX_BLOCK_COUNT = 4095  # DataCopyPad blockCount limit (path A grad rows per copy)
RESERVE_256 = 256


def _up(x: int, a: int) -> int:
    return 0 if a == 0 else -(-x // a) * a


def _down(x: int, a: int) -> int:
    return 0 if a == 0 else x // a * a


# --------------------------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------------------------


def _case_from_file(path: str) -> _cases.Case:
    """A case file's shapes, dtypes and range as a :class:`Case` (inputs drawn by make_inputs)."""
    from aicore_sim import load_case

    cf = load_case(path)
    _check_args(cf)
    grad = cf.inputs.get("unpermuted_tokens_grad")
    if grad is None or len(grad.shape) != 2:
        raise ValueError(f"case file {path}: unpermuted_tokens_grad must be a 2-D input")
    probs = cf.inputs.get("probs")
    attrs = cf.attrs if isinstance(cf.attrs, dict) else {}
    if probs is not None:
        top_k = int(probs.shape[1])
    else:
        idx = cf.inputs.get("sorted_indices")
        top_k = int(attrs.get("topk_num") or (idx.shape[0] // grad.shape[0] if idx else 1))
    rng = attrs.get("range")
    return _cases.Case(
        Path(path).stem, int(grad.shape[0]), top_k, int(grad.shape[1]),
        _dtype_name(grad.dtype), None if probs is None else _dtype_name(probs.dtype),
        None if rng is None else (int(rng[0]), int(rng[1])), cf.description, seed=cf.seed)


def _check_args(cf: Any) -> None:
    """The operator API's checks of the case file as written, on its own platform (dtypes,
    ranks, shape relations, ranges, the tiling's rules): what the :class:`Case` a sweep runs
    cannot carry (e.g. int64 indices) is refused here with the aclnn code, as ``run`` would.
    The arrays are zero-strided views: no memory whatever the shapes."""
    if cf.positional_attrs:
        raise ValueError(f"case file {cf.name}: positional attrs are for 'aicore-sim tiling' only")
    arrays = {k: None if v is None else np.broadcast_to(np.zeros((), v.dtype), v.shape)
              for k, v in cf.inputs.items()}
    cf.op.model.prepare(arrays, dict(cf.attrs), cf.platform)


def _dtype_name(dt: Any) -> str:
    for name, d in _cases.DTYPES.items():
        if np.dtype(dt) == d:
            return name
    raise ValueError(f"dtype {dt} is not a float dtype of this operator")


# --------------------------------------------------------------------------------------------
# Tiling
# --------------------------------------------------------------------------------------------


def _context(case: _cases.Case) -> TilingContext:
    T = case.flat_size
    tok = case.dtype
    probs = None
    if case.probs_dtype is not None:
        probs = TensorDesc((case.tokens_num, case.top_k), case.probs_dtype)
    return TilingContext.create(
        TensorDesc((case.tokens_num, case.hidden), tok), TensorDesc((T,), "int32"),
        TensorDesc((T, case.hidden), tok), probs, padded_mode=False, restore_shape=[1, 1],
        range=list(case.range) if case.range is not None else [-1, -1], topk_num=case.top_k)


def upstream_tiling(case: _cases.Case, platform: Platform, cores: int | None = None
                    ) -> tuple[TilingData, int, int]:
    """The ported host tiling for ``cores`` cores: ``(tiling data, tiling key, block dim)``."""
    cores = platform.aiv_core_num if cores is None else cores
    tr = host_tiling(tiling_func, _context(case), PlatformAscendC(platform, cores),
                     host_npu_arch=npu_arch(platform))
    tr.raise_for_status()
    assert tr.tiling_data is not None and tr.tiling_key is not None
    return tr.tiling_data, tr.tiling_key, int(tr.block_dim or cores)


def _sizes(case: _cases.Case) -> tuple[int, int, int]:
    t = _cases.np_dtype(case.dtype).itemsize
    p = _cases.np_dtype(case.probs_dtype).itemsize if case.probs_dtype else t
    return t, p, 4  # tokens, probs, int32 indices


def ub_bytes(case: _cases.Case, td: TilingData) -> int:
    """UB bytes the kernel allocates for tiling ``td`` (each buffer rounded to 32 bytes)."""
    t, p, r = _sizes(case)
    K = case.top_k
    hA, E, R, EA = td.hiddenSizeAlign, td.indicesReserveNum, td.inputReserveNum, \
        td.indicesReserveNumAlign
    if case.probs_dtype is None:
        return 2 * _up(E * r, 32) + 2 * _up((R // K) * hA * t, 32)
    u = functools.partial(_up, a=32)
    return (u(2 * hA * t) + u(2 * R * hA * t) + u(2 * EA * p) + u(2 * EA * p) + u(2 * hA * t)
            + 3 * u(hA * 4) + RESERVE_256 + 3 * u(EA * 4))


def instruction_bound(td: TilingData, block_dim: int) -> int:
    """An upper estimate of the instructions one launch records: 64 per core (set-up, queue
    flags) + 30 per row of the EP window and hidden chunk. Measured on ascend910b1 (48 cores),
    timing-only: tiny (30 rows, 1 chunk) 1,738 <= 3,972; 800 rows x 1 chunk 14,976 <= 27,072;
    800 rows x 2 chunks 37,424 <= 51,072; 128 rows x 3 chunks 11,344 <= 14,592; without probs
    (path A) 2,128 for 800 rows."""
    rows = max(0, int(td.end) - int(td.start))
    return 64 * int(block_dim) + 30 * rows * max(1, int(td.hiddenSizeLoopTimes))


def _fit_r(case: _cases.Case, td: TilingData, ub: int) -> int:
    """Largest divisor of K whose path-B budget fits ``ub`` (at least 1)."""
    best = 1
    for R in range(1, case.top_k + 1):
        if case.top_k % R == 0 and ub_bytes(case, dataclasses.replace(td, inputReserveNum=R)) <= ub:
            best = R
    return best


def _hidden_step(case: _cases.Case) -> int:
    t = _sizes(case)[0]
    return (512 if case.probs_dtype is not None else 32) // t


def _set_split(td: TilingData, cores: int, case: _cases.Case) -> None:
    N, K = case.tokens_num, case.top_k
    tail = N // cores
    former = N % cores
    each = tail + (1 if former else 0)
    td.formerCoreNum, td.tailCoreNum = former, cores - former
    td.tokenNumEachCore, td.tokenNumTailCore = each, tail
    td.rowIdMapEachCore, td.rowIdMapTailCore = each * K, tail * K


def _set_hidden(td: TilingData, hA: int, H: int) -> None:
    td.hiddenSizeAlign = hA
    loops = max(1, -(-H // hA)) if hA > 0 else 0
    td.hiddenSizeLoopTimes = loops
    td.hiddenSizeTail = H - (loops - 1) * hA if hA > 0 else 0


def _strategy_knobs(name: str, case: _cases.Case, platform: Platform, td: TilingData
                    ) -> dict[str, int]:
    """Knob values a named strategy picks on top of the upstream tiling ``td``."""
    K, H = case.top_k, case.hidden
    ub = platform.core_mem_size_ub
    rows = td.rowIdMapEachCore
    if name == "upstream":
        return {}
    if name == "wide_e":
        if case.probs_dtype is None:
            return {}
        E = min(rows, _down(MAX_INDICES, K)) if K <= MAX_INDICES // 2 else K
        return {"indicesReserveNum": max(E, K)}
    if name == "balanced":
        E0 = td.indicesReserveNum // K * K
        if E0 <= 0 or rows <= 0:
            return {}
        loops = -(-rows // E0)
        E = _up(-(-rows // loops), K)
        return {"indicesReserveNum": max(min(E, td.indicesReserveNum), K)}
    if name == "max_rows":
        if case.probs_dtype is None:
            return {}
        step = _hidden_step(case)
        for loops in range(1, H + 1):
            hA = _up(-(-H // loops), step)
            trial = dataclasses.replace(td, inputReserveNum=K)
            _set_hidden(trial, hA, H)
            if ub_bytes(case, trial) <= ub:
                return {"hiddenSizeAlign": hA, "inputReserveNum": K}
            if hA <= step:
                break
        return {}
    if name == "one_row":
        return {"inputReserveNum": 1} if case.probs_dtype is not None else {}
    raise ValueError(f"unknown tiling strategy {name!r}; valid: "
                     f"{', '.join(GradTilingSpace.strategies)}")


def violations(case: _cases.Case, platform: Platform, td: TilingData, cores: int
               ) -> list[tuple[str, str]]:
    """The kernel rules tiling ``td`` breaks, as ``(rule, message)`` (the UB budget is
    :func:`~op_models.moe_matrix.budgeted_plan`'s)."""
    out: list[tuple[str, str]] = []
    K, H = case.top_k, case.hidden
    t, p, r = _sizes(case)
    E, R, EA, hA = td.indicesReserveNum, td.inputReserveNum, td.indicesReserveNumAlign, \
        td.hiddenSizeAlign
    if not 1 <= cores <= platform.aiv_core_num:
        out.append(("cores_range", f"cores {cores} not in [1, {platform.aiv_core_num}]"))
    if case.probs_dtype is not None:
        if E < K or E % K:
            out.append(("indices_multiple_of_topk",
                        f"indicesReserveNum {E} must be a positive multiple of topK {K}"))
        if E > MAX_INDICES:
            out.append(("indices_max_512",
                        f"indicesReserveNum {E} exceeds the kernel's {MAX_INDICES}-entry arrays"))
        if EA < E or EA % (32 // p):
            out.append(("align_indices", f"indicesReserveNumAlign {EA} must be >= "
                        f"indicesReserveNum {E} and a multiple of {32 // p} (32 bytes of probs)"))
        if R < 1 or K % R:
            out.append(("r_divides_topk", f"inputReserveNum {R} must divide topK {K}"))
        step = 512 // t
    else:
        if E < K:
            out.append(("indices_multiple_of_topk",
                        f"indicesReserveNum {E} must hold at least one token (topK {K})"))
        if E > 0xFFFF:
            out.append(("indices_16bit", f"indicesReserveNum {E} exceeds the kernel's 16-bit "
                                         "loop counter"))
        if K and E // K > MAX_BLOCK_COUNT:
            out.append(("block_count", f"{E // K} grad rows per copy exceed blockCount "
                                       f"{MAX_BLOCK_COUNT}"))
        if K and R // K < E // K:
            out.append(("input_lt_indices", f"inputReserveNum {R} holds fewer token rows than "
                                            f"indicesReserveNum {E} reads"))
        step = 32 // t
    if hA < 1 or (hA < H and hA % step):
        out.append(("hidden_align", f"hiddenSizeAlign {hA} must be a positive multiple of "
                                    f"{step} elements when it splits hidden {H}"))
    elif hA > _up(H, step):
        out.append(("hidden_range", f"hiddenSizeAlign {hA} exceeds hidden {H} rounded up to "
                                    f"{step} ({_up(H, step)})"))
    return out


class GradTilingSpace(MoeTilingSpace):
    """The backward's knobs, strategies and rules."""

    op = "moe_token_unpermute_with_ep_grad"
    cases, case_from_file = _cases, staticmethod(_case_from_file)
    knobs = ("cores", "indicesReserveNum", "inputReserveNum", "indicesReserveNumAlign",
             "hiddenSizeAlign")
    strategies = {
        "upstream": "the ported host tiling, unchanged",
        "wide_e": "path B: E up to the kernel's 512-entry scalar arrays instead of upstream's "
                  "256 (R refitted); path A: as upstream",
        "balanced": "E chosen so every outer loop of a core has the same number of tokens "
                    "(no short last loop), never more loops than upstream",
        "max_rows": "path B: hidden dim split so that all K permuted rows of a token fit in one "
                    "group (R = K); path A: as upstream",
        "one_row": "path B: one permuted row per group (R = 1), so each row's copy overlaps the "
                   "vector work on the previous one; path A: as upstream",
    }
    tiling_short = (("indicesReserveNum", "E"), ("inputReserveNum", "R"),
                    ("indicesReserveNumAlign", "EA"),
                    ("hiddenSizeAlign", "hA", "hiddenSizeLoopTimes"))

    def check_resources(self, case: _cases.Case, platform: Platform) -> None:
        """``ResourceError`` (before any work) when one launch of ``case`` - inputs, outputs and a
        golden copy, one UB image per core, the instruction streams - cannot fit in memory."""
        from aicore_sim import ResourceError
        from aicore_sim.util.resources import BYTES_PER_INSTRUCTION, check_fits

        t, p, r = _sizes(case)
        N, K, H, T = case.tokens_num, case.top_k, case.hidden, case.flat_size
        items = {"inputs": N * H * t + T * r + T * H * t + (N * K * p if case.probs_dtype else 0),
                 "outputs and their golden": 2 * (T * H * t + N * K * p),
                 "UB images": 2 * platform.aiv_core_num * platform.ub_size}
        rows = max(0, case.window()[1] - case.window()[0])
        chunks = -(-H // max(1, _up(min(H, 8192), 16))) if H else 1
        items["instruction streams"] = (64 * platform.aiv_core_num + 30 * rows * chunks) \
            * BYTES_PER_INSTRUCTION
        try:
            check_fits(items)
        except MemoryError as e:
            raise ResourceError(f"case {case.name} (tokens {N}, topK {K}, hidden {H}): {e}"
                                ) from None

    def plan(self, case: _cases.Case, platform: Platform, strategy: str = "upstream",
             knobs: dict[str, int] | None = None) -> Plan:
        """The tiling of one point: strategy, then overridden knobs, then checks."""
        knobs = dict(knobs or {})
        self.check_knobs(knobs, strategy)
        cores = int(knobs.pop("cores", platform.aiv_core_num))
        if not 1 <= cores <= platform.aiv_core_num:
            return Plan(None, None, cores, 0, (("cores_range", f"cores {cores} must be in [1, "
                                                 f"{platform.aiv_core_num}] (the platform's AIV "
                                                 "cores)"),))
        td0, key, _ = upstream_tiling(case, platform, cores)
        td = TilingData.from_list(td0.as_list())
        chosen = _strategy_knobs(strategy, case, platform, td)
        chosen.update(knobs)
        H = case.hidden
        ub = platform.core_mem_size_ub
        path_b = case.probs_dtype is not None
        _set_split(td, cores, case)
        if "hiddenSizeAlign" in chosen:
            _set_hidden(td, int(chosen["hiddenSizeAlign"]), H)
        if "indicesReserveNum" in chosen:
            td.indicesReserveNum = int(chosen["indicesReserveNum"])
            if not path_b:
                td.inputReserveNum = td.indicesReserveNumAlign = td.indicesReserveNum
        if path_b:
            p = _sizes(case)[1]
            if "indicesReserveNumAlign" in chosen:
                td.indicesReserveNumAlign = int(chosen["indicesReserveNumAlign"])
            elif "indicesReserveNum" in chosen:
                td.indicesReserveNumAlign = _up(td.indicesReserveNum, 32 // p)
            if "inputReserveNum" in chosen:
                td.inputReserveNum = int(chosen["inputReserveNum"])
            elif chosen.keys() & {"indicesReserveNum", "indicesReserveNumAlign", "hiddenSizeAlign"}:
                td.inputReserveNum = _fit_r(case, td, ub)
        else:
            if "inputReserveNum" in chosen:
                td.inputReserveNum = int(chosen["inputReserveNum"])
            if "indicesReserveNumAlign" in chosen:
                td.indicesReserveNumAlign = int(chosen["indicesReserveNumAlign"])
        return budgeted_plan(td, key, cores, ub_bytes(case, td),
                             violations(case, platform, td, cores), platform)

    def search_space(self, case: _cases.Case, platform: Platform) -> list[dict[str, int]]:
        """Legal knob combinations for a search: E × R (path B) × 1-4 hidden chunks × cores.

        Only combinations that pass :func:`violations` are returned. Core counts tried: all cores
        and a few counts that split the tokens more evenly.
        """
        K, H, N = case.top_k, case.hidden, case.tokens_num
        P = platform.aiv_core_num
        step = _hidden_step(case)
        core_opts = sorted({P} | {c for c in range(max(1, P - 8), P) if N % c == 0 or
                                  -(-N // c) < -(-N // P)}, reverse=True)[:3]
        # at most 4 hidden chunks: every chunk multiplies the instruction count of a point
        hiddens = sorted({min(_up(-(-H // n), step), _up(H, step)) for n in range(1, 5)},
                         reverse=True)
        out: list[dict[str, int]] = []
        for cores in core_opts:
            rows = -(-N // cores) * K
            if case.probs_dtype is not None:
                emax = min(_down(MAX_INDICES, K), rows) if K <= MAX_INDICES // 2 else K
                es = sorted({K * m for m in range(1, max(1, emax // K) + 1)})
                if len(es) > 12:  # thin out: geometric-ish choice plus the ends
                    es = sorted({es[0], es[-1], *es[:: max(1, len(es) // 10)]})
                rs = [d for d in range(1, K + 1) if K % d == 0]
            else:
                td0, _, _ = upstream_tiling(case, platform, cores)
                e0 = max(K, td0.indicesReserveNum // K * K)
                es = sorted({max(K, _down(e0 * f // 8, K)) for f in range(1, 9)} | {e0})
                rs = [0]
            for E, R, hA in itertools.product(es, rs, hiddens):
                k = {"cores": cores, "indicesReserveNum": E, "hiddenSizeAlign": hA}
                if case.probs_dtype is not None:
                    k["inputReserveNum"] = R
                if self.plan(case, platform, "upstream", k).feasible:
                    out.append(k)
        return out


TILING_SPACE = GradTilingSpace()

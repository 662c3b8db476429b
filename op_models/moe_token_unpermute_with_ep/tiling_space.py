"""Tiling design space of ``MoeTokenUnpermuteWithEp`` (step "op tiling", for sweeps).

:data:`TILING_SPACE` (the model's ``tiling_space``, a
:class:`~aicore_sim.ops.tilingspace.TilingSpace`) is what the generic sweep machinery
(``aicore_sim.sweep``) needs to know about the forward: case axes, the tiling fields a sweep
may override ("knobs"), the kernel's constraints on a tiling (named rules) and the UB budget (a
point is launched and verified through the op's one call path, the space's defaults).

Knobs (tiling fields the kernel reads):

* ``cores`` - cores used (block dim); ``tokens_core_length`` / ``tokens_core_remain`` are
  recomputed from it (the first ``remain`` cores take one more token);
* ``tokens_splited_length`` - tokens per loop (one index / probs copy each);
  ``tokens_splited_num`` / ``tokens_splited_remain`` are recomputed;
* ``hidden_splited_length`` - hidden chunk; ``hidden_splited_num`` / ``_remain`` recomputed;
* ``buffer_num`` - depth of the token-row buffer ring (``tokens_inque``).

Rules: ``cores_range``, ``tokens_split_range``, ``hidden_range``, ``buffer_range``,
``indices_block_len`` (one DataCopyPad of a loop's row ids), ``ub_budget``.
"""

from __future__ import annotations

import itertools
from pathlib import Path

from aicore_sim import Plan, Platform
from aicore_sim.ascendc import PlatformAscendC
from aicore_sim.ascendc.host import TensorDesc, host_tiling
from op_models.moe_matrix import MoeTilingSpace, budgeted_plan
from op_models.moe_token_unpermute_with_ep import cases as _cases
from op_models.moe_token_unpermute_with_ep.tiling import (
    TilingContext,
    TilingData,
    tiling_func,
)

MAX_BLOCK_LEN = 2097151  # DataCopyPad blockLen (bytes)
MAX_BUFFER_NUM = 4


def _up(x: int, a: int) -> int:
    return -(-x // a) * a


# --------------------------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------------------------


def _case_from_file(path: str) -> _cases.Case:
    """A case file's shapes, dtypes and range as a :class:`Case` (inputs drawn by routing)."""
    from aicore_sim import dtype_name, load_case

    cf = load_case(path)
    tok, idx, probs = (cf.inputs.get(k) for k in ("permuted_tokens", "sorted_indices", "probs"))
    if tok is None or idx is None or len(tok.shape) != 2:
        raise ValueError(f"case file {path}: permuted_tokens (2-D) and sorted_indices needed")
    attrs = cf.attrs if isinstance(cf.attrs, dict) else {}
    k = int(probs.shape[1]) if probs is not None else int(attrs.get("num_topk") or 1)
    rng = attrs.get("range") or (0, 0)
    return _cases.Case(Path(path).stem, int(idx.shape[0]) // k, k, int(tok.shape[1]),
                       dtype_name(tok.dtype), None if probs is None else dtype_name(probs.dtype),
                       experts=2 * k, range=(int(rng[0]), int(rng[1])),
                       description=cf.description, seed=cf.seed)


# --------------------------------------------------------------------------------------------
# Tiling
# --------------------------------------------------------------------------------------------


def _context(case: _cases.Case) -> TilingContext:
    start, end = _cases.window(case)
    probs = None if case.probs_dtype is None else \
        TensorDesc((case.tokens_num, case.top_k), case.probs_dtype)
    return TilingContext.create(
        TensorDesc((max(end - start, 1), case.hidden), case.dtype),
        TensorDesc((case.flat_size,), "int32"), probs, num_topk=case.top_k,
        range=[start, end], padded_mode=False)


def upstream_tiling(case: _cases.Case, platform: Platform, cores: int | None = None
                    ) -> tuple[TilingData, int, int]:
    """The ported host tiling for ``cores`` cores: ``(tiling data, key, block dim)``."""
    cores = platform.aiv_core_num if cores is None else cores
    tr = host_tiling(tiling_func, _context(case),
                     PlatformAscendC(platform, cores)).raise_for_status()
    assert tr.tiling_data is not None and tr.tiling_key is not None
    return tr.tiling_data, tr.tiling_key, int(tr.block_dim or 0)


def _sizes(case: _cases.Case) -> tuple[int, int | None]:
    t = _cases.np_dtype(case.dtype).itemsize
    p = None if case.probs_dtype is None else _cases.np_dtype(case.probs_dtype).itemsize
    return t, p


def ub_bytes(case: _cases.Case, td: TilingData) -> int:
    """UB the kernel's InitBuffer calls take for ``td`` (each buffer rounded up to 32 B)."""
    t, p = _sizes(case)
    h512 = _up(max(td.hidden_splited_length, 0), 512)
    rows = td.tokens_splited_length * case.top_k
    bufs = [h512 * t] * td.buffer_num + [rows * 4, h512 * t]
    if t != 4:
        bufs += [h512 * 4 + 256, h512 * 4]
    if p is not None:
        bufs.append(rows * p)
        if p != 4:
            bufs.append(rows * 4)
    return sum(_up(b, 32) for b in bufs)


def violations(case: _cases.Case, platform: Platform, td: TilingData, cores: int
               ) -> list[tuple[str, str]]:
    """The kernel rules tiling ``td`` breaks, as ``(rule, message)`` (the UB budget is
    :func:`~op_models.moe_matrix.budgeted_plan`'s)."""
    out: list[tuple[str, str]] = []
    if not 1 <= cores <= min(platform.aiv_core_num, case.tokens_num):
        out.append(("cores_range", f"cores {cores} not in [1, "
                                   f"{min(platform.aiv_core_num, case.tokens_num)}]"))
    tsl, hsl = td.tokens_splited_length, td.hidden_splited_length
    if not 1 <= tsl <= td.tokens_core_length + (1 if td.tokens_core_remain else 0):
        out.append(("tokens_split_range", f"tokens_splited_length {tsl} must be in [1, "
                                          "tokens per core]"))
    if not 1 <= hsl <= case.hidden:
        out.append(("hidden_range", f"hidden_splited_length {hsl} must be in [1, "
                                    f"hidden {case.hidden}]"))
    if not 1 <= td.buffer_num <= MAX_BUFFER_NUM:
        out.append(("buffer_range", f"buffer_num {td.buffer_num} must be in [1, "
                                    f"{MAX_BUFFER_NUM}]"))
    if tsl * case.top_k * 4 > MAX_BLOCK_LEN:
        out.append(("indices_block_len", f"{tsl} tokens x K {case.top_k} row ids exceed one "
                                         f"DataCopyPad block ({MAX_BLOCK_LEN} B)"))
    return out


class ForwardTilingSpace(MoeTilingSpace):
    """The forward's knobs and rules (one strategy: ``upstream``)."""

    op = "moe_token_unpermute_with_ep"
    cases, case_from_file = _cases, staticmethod(_case_from_file)
    knobs = ("cores", "tokens_splited_length", "hidden_splited_length", "buffer_num")
    tiling_short = (("tokens_splited_length", "tok"),
                    ("hidden_splited_length", "h", "hidden_splited_num"), ("buffer_num", "buf"))

    def plan(self, case: _cases.Case, platform: Platform, strategy: str = "upstream",
             knobs: dict[str, int] | None = None) -> Plan:
        """The tiling of one point: the host tiling, the overridden knobs, derived fields,
        checks."""
        knobs = dict(knobs or {})
        self.check_knobs(knobs, strategy)
        cores = int(knobs.pop("cores", min(platform.aiv_core_num, case.tokens_num)))
        if not 1 <= cores <= min(platform.aiv_core_num, case.tokens_num):
            return Plan(None, None, cores, 0, (("cores_range", (
                f"cores {cores} must be in [1, {min(platform.aiv_core_num, case.tokens_num)}] "
                "(the platform's AIV cores, at most one per token)")),))
        td0, key, _ = upstream_tiling(case, platform, cores)
        td = TilingData.from_list(td0.as_list())
        N, H = case.tokens_num, case.hidden
        td.tokens_core_length, td.tokens_core_remain = divmod(N, cores)
        tsl = int(knobs.get("tokens_splited_length", min(td.tokens_splited_length,
                                                          td.tokens_core_length)))
        td.tokens_splited_length = tsl
        if tsl >= 1:
            td.tokens_splited_num, td.tokens_splited_remain = divmod(td.tokens_core_length, tsl)
        hsl = int(knobs.get("hidden_splited_length", td.hidden_splited_length))
        td.hidden_splited_length = hsl
        if hsl >= 1:
            td.hidden_splited_num, td.hidden_splited_remain = divmod(H, hsl)
        td.buffer_num = int(knobs.get("buffer_num", td.buffer_num))
        return budgeted_plan(td, key, cores, ub_bytes(case, td),
                             violations(case, platform, td, cores), platform)

    def search_space(self, case: _cases.Case, platform: Platform) -> list[dict[str, int]]:
        """Legal knob combinations: a few core counts x token loops x 1-4 hidden chunks x 2-4
        buffers (only combinations that pass :func:`violations`)."""
        N, H = case.tokens_num, case.hidden
        P = min(platform.aiv_core_num, N)
        cores_opts = sorted({P, max(1, P // 2)}, reverse=True)
        hiddens = sorted({_up(-(-H // n), 16) if n > 1 else H for n in range(1, 5)},
                         reverse=True)
        out: list[dict[str, int]] = []
        for cores in cores_opts:
            per = -(-N // cores)
            tokens = sorted({per, max(1, per // 2), max(1, per // 4), 1}, reverse=True)
            for tsl, hsl, bn in itertools.product(tokens, hiddens, (2, 3, 4)):
                k = {"cores": cores, "tokens_splited_length": tsl,
                     "hidden_splited_length": min(hsl, H), "buffer_num": bn}
                if self.plan(case, platform, "upstream", k).feasible:
                    out.append(k)
        return out


TILING_SPACE = ForwardTilingSpace()

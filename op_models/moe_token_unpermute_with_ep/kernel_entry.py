"""Kernel entry of ``MoeTokenUnpermuteWithEp``: dispatch on the tiling key and dtypes.

What ``launch`` runs once per AIV core: it copies the tiling data and runs
``KernelMoeTokenUnpermuteWithEp<T1, int32, T3, PROBS, true>`` with the template arguments of the
tiling key: 0 no probs (``T3`` = the probs dtype macro, unused), 1 / 2 / 3 probs in fp32 /
fp16 / bf16.

Provenance
----------
Upstream: github.com/hicann/ops-transformer (mirror github.com/libochao-huawei/ops-transformer),
commit ``5778144076def6311557939ab5cbfe8303f13e8f``,
``moe/moe_token_unpermute_with_ep/op_kernel/moe_token_unpermute_with_ep.cpp``. Our own Python;
comments are ours.

Deviations from upstream
------------------------
1. ``tiling`` is a :class:`~op_models.moe_token_unpermute_with_ep.tiling.TilingData` object,
   not a GM address of 120 serialised bytes; ``GET_TILING_DATA`` becomes a field copy.
2. The compile-time choices are arguments: ``tilingKey`` (``TILING_KEY_IS``) and
   ``DTYPE_PERMUTED_TOKENS`` (``T1``). ``DTYPE_PROBS`` defaults to the tokens dtype, as the
   upstream macro does. Key 3 is compiled out upstream for ``__NPU_ARCH__`` 3003 / 3113 (no
   bf16 there); those arches are not modelled, so key 3 always runs.
3. ``workspace`` is not used by the kernel and is not passed.
"""

from __future__ import annotations

from aicore_sim.ascendc import GM_ADDR, TPipe, bfloat16, float16, float32, int32
from op_models.moe_token_unpermute_with_ep.kernel_unpermute import KernelMoeTokenUnpermuteWithEp
from op_models.moe_token_unpermute_with_ep.tiling import TilingData

# tiling key -> (T3, PROBS); None: T3 is DTYPE_PROBS
_KEYS = {0: (None, False), 1: (float32, True), 2: (float16, True), 3: (bfloat16, True)}


def moe_token_unpermute_with_ep(
    permuted_tokens: GM_ADDR | None,
    sorted_indices: GM_ADDR | None,
    probs: GM_ADDR | None,
    unpermuted_tokens: GM_ADDR | None,
    workspace: GM_ADDR | None,
    tiling: TilingData,
    tilingKey: int = 0,
    DTYPE_PERMUTED_TOKENS=bfloat16,
    DTYPE_PROBS=None,
) -> None:
    """The ``__global__`` kernel: run one core's share of the operator."""
    tiling_data = TilingData.from_list(tiling.as_list())  # GET_TILING_DATA: a private copy
    del workspace
    t_pipe = TPipe()
    if tilingKey not in _KEYS:
        return  # no TILING_KEY_IS branch matches: the kernel does nothing
    T3, haveProbs = _KEYS[tilingKey]
    if T3 is None:
        T3 = DTYPE_PERMUTED_TOKENS if DTYPE_PROBS is None else DTYPE_PROBS
    op = KernelMoeTokenUnpermuteWithEp(DTYPE_PERMUTED_TOKENS, int32, T3, haveProbs, True)
    op.Init(permuted_tokens, sorted_indices, probs, unpermuted_tokens, tiling_data, t_pipe)
    op.Process()


__all__ = ["moe_token_unpermute_with_ep"]

"""aclnn-style API of ``MoeTokenUnpermuteWithEp`` (the front door of the forward op model).

Place in the flow: a caller's numpy tensors and attributes -> parameter checks (aclnn error
codes) -> host tiling -> one simulated launch of the kernel port -> output + Recording.

Two phases, as ``aclnnMoeTokenUnpermuteWithEpGetWorkspaceSize`` / ``aclnnMoeTokenUnpermuteWithEp``
(upstream ``docs/aclnnMoeTokenUnpermuteWithEp.md``):

* :func:`get_workspace_size` checks the arguments, runs the tiling and returns
  ``(workspace_size, executor)`` (the executor a :class:`~aicore_sim.ops.opmodel.PreparedCall`
  holding the kernel launch); on failure it raises :class:`AclnnError`:

  - ``161001`` (ACLNN_ERR_PARAM_NULLPTR): ``permuted_tokens`` or ``sorted_indices`` is ``None``;
  - ``161002`` (ACLNN_ERR_PARAM_INVALID): a tensor that is not a numpy array; a dtype outside
    the IR table (tokens and probs bfloat16 / float16 / float32 in any of the 9 combinations,
    ``sorted_indices`` int32, ``out`` in the tokens dtype); a rank other than 2 / 1 / 2; an
    empty tensor ("不支持空tensor"); ``padded_mode`` true ("目前仅支持false"); an ``out`` of the
    wrong shape. Three checks are ours, where the real stack would misbehave rather than
    refuse: ``range`` ``None`` (aclnn then falls back to ``aclnnMoeTokenUnpermute``, another
    operator, not modelled: rule ``range_none``), a ``range`` without exactly two values (the
    tiling would succeed with every shape field 0: rule ``range_size``), and a window
    ``range[1] - range[0]`` larger than the rows of ``permuted_tokens`` (the kernel would read
    past the tensor: rule ``range_rows``).
  - ``561002`` (ACLNN_ERR_INNER_TILING_ERROR): the tiling failed (num_topk < 1, probs dim1 !=
    num_topk, sorted_indices length != probs dim0 x dim1, topK > 512, ...); the message carries
    the tiling's rule. Also (ours) when the tiling "succeeds" with a hidden chunk or a token
    loop of 0 on a UB too small for the operator (rule ``ub_too_small``).

  ``restore_shape`` is accepted and ignored (it only matters with padded mode), as upstream's
  system test passes one.

* the second phase is the model's ``execute`` (:class:`~aicore_sim.ops.opmodel.OpModelBase`):
  it records the kernel launch (block dim from the tiling) and fills the caller's
  preallocated output, if any, only once the launch has succeeded.

Timing-only mode with bf16 / fp16 probs (tiling keys 2, 3, :data:`NUMERIC_KEYS`): the kernel
branches on the fp32 probs a vector Cast produces (``prob != 0``), which a timing-only record
does not compute (docs/model.md), so such launches are recorded with numerics (the result's
mode says ``timed``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from aicore_sim import KernelLaunch, Platform, PreparedCall, load_platform
from aicore_sim.ascendc.host import (
    AclnnError,
    aclnn_int,
    aclnn_int_list,
    aclnn_invalid,
    aclnn_out,
    specs_of,
)
from aicore_sim.sim.dtypes import int32
from op_models.moe_common import FLOAT_DTYPES, aclnn_inputs, aclnn_range, aclnn_tiling, check_ub
from op_models.moe_token_unpermute_with_ep import tiling
from op_models.moe_token_unpermute_with_ep.infershape import infer_outputs
from op_models.moe_token_unpermute_with_ep.kernel_entry import (
    moe_token_unpermute_with_ep as _kernel,
)

# the IR's nine (tokens, probs) dtype combinations, IR order
DTYPE_COMBINATIONS: tuple[tuple[np.dtype, np.dtype], ...] = tuple(
    (t, p) for t in FLOAT_DTYPES for p in FLOAT_DTYPES)
NUMERIC_KEYS = (2, 3)  # keys whose control flow reads vector results (see module docstring)


def _check(tokens: np.ndarray, idx: np.ndarray, probs: np.ndarray | None) -> None:
    if tokens.dtype not in FLOAT_DTYPES:
        raise aclnn_invalid(f"permuted_tokens dtype {tokens.dtype} is not supported: expected "
                       "bfloat16, float16 or float32", "dtype")
    if idx.dtype != int32:
        raise aclnn_invalid(f"sorted_indices dtype {idx.dtype} is not supported: only int32",
                       "indices_dtype")
    if probs is not None and probs.dtype not in FLOAT_DTYPES:
        raise aclnn_invalid(f"probs dtype {probs.dtype} is not supported: expected bfloat16, "
                       "float16 or float32", "dtype")
    for name, arr, rank in (("permuted_tokens", tokens, 2), ("sorted_indices", idx, 1),
                            ("probs", probs, 2)):
        if arr is None:
            continue
        if arr.ndim != rank:
            raise aclnn_invalid(f"{name} must be {rank}-D, got shape {list(arr.shape)}", "rank")
        if arr.size == 0:
            raise aclnn_invalid(f"{name} is empty (shape {list(arr.shape)}); empty tensors are "
                           "not supported", "empty")


def get_workspace_size(
    permuted_tokens: np.ndarray | None,
    sorted_indices: np.ndarray | None,
    probs: np.ndarray | None,
    num_topk: int,
    range: Sequence[int] | None,  # noqa: A002 - the operator's attribute name
    padded_mode: bool,
    restore_shape: Sequence[int] | None,
    out: np.ndarray | None = None,
    *,
    platform: str | Platform,
) -> tuple[int, PreparedCall]:
    """``aclnnMoeTokenUnpermuteWithEpGetWorkspaceSize``: check, tile, prepare.

    Parameters are the aclnn ones in order (tensors as numpy arrays, ``None`` for nullptr;
    ``out`` may be ``None``: the launch then allocates it). Returns
    ``(workspace_size, executor)``; raises :class:`AclnnError` (see the module docstring).
    """
    plat = load_platform(platform)
    inputs = aclnn_inputs(tiling, permuted_tokens, sorted_indices, probs)
    tokens, idx, prb = inputs.values()
    _check(tokens, idx, prb)
    aclnn_int("num_topk", num_topk)
    if bool(padded_mode):
        raise aclnn_invalid("padded_mode must be false (only false is supported)", "padded_mode")
    rng = aclnn_range(range, "aclnnMoeTokenUnpermute", "; pass range=[0, rows]")
    if rng[1] - rng[0] > tokens.shape[0]:
        raise aclnn_invalid(f"range {rng} spans {rng[1] - rng[0]} rows but permuted_tokens has "
                       f"{tokens.shape[0]}: the kernel would read past the tensor",
                       "range_rows")
    if restore_shape is not None:
        aclnn_int_list("restore_shape", restore_shape)  # type check only; ignored without padding

    tr = aclnn_tiling(tiling, inputs.values(), plat, num_topk=int(num_topk), range=rng,
                      padded_mode=False,
                      restore_shape=None if restore_shape is None else list(restore_shape))
    check_ub(tr.tiling_data, plat.core_mem_size_ub, "compute nothing")
    (shape, dtype), = infer_outputs(specs_of(inputs), {"num_topk": num_topk}).values()
    out_arr = aclnn_out("out", out, (shape, dtype))
    launch = KernelLaunch(_kernel, inputs, plat, (tokens.dtype, None if prb is None else prb.dtype),
                          tiling_key=True, workspace=False, outputs={"unpermuted_tokens": out_arr})
    pc = PreparedCall.of("moe_token_unpermute_with_ep", {"unpermuted_tokens": (shape, dtype)}, tr,
                         launch)
    return pc.workspace_size, pc


__all__ = ["AclnnError", "DTYPE_COMBINATIONS", "NUMERIC_KEYS", "get_workspace_size"]

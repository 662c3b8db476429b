"""aclnn-style API of ``MoeTokenUnpermuteWithEpGrad`` (the front door of the op model).

Place in the flow: a caller's numpy tensors and attributes -> parameter checks (aclnn error
codes) -> host tiling -> one simulated launch of the kernel port -> outputs + Recording.

Two phases, as ``aclnnMoeTokenUnpermuteWithEpGradGetWorkspaceSize`` /
``aclnnMoeTokenUnpermuteWithEpGrad`` (spec §2.3):

* :func:`get_workspace_size` checks the arguments, runs the tiling and returns
  ``(workspace_size, executor)`` (the executor a :class:`~aicore_sim.ops.opmodel.PreparedCall`
  holding the kernel launch); on failure it raises :class:`AclnnError` with the aclnn code:

  - ``161001`` (ACLNN_ERR_PARAM_NULLPTR): a required tensor (``unpermuted_tokens_grad``,
    ``sorted_indices``) is ``None``;
  - ``161002`` (ACLNN_ERR_PARAM_INVALID): a tensor that is not a numpy array, a dtype
    combination outside the nine of the IR (spec §2.1), ``sorted_indices`` not int32 (int64 is
    rejected here although the tiling would accept it, spec §8 #14), or a preallocated output
    of the wrong dtype or shape;
  - ``561002`` (ACLNN_ERR_INNER_TILING_ERROR): the tiling failed (topK outside [1, 512], shape
    mismatch, range end < start, padded mode, empty tensors on A2/A3 …); the message carries
    the tiling's rule and error. Also raised for two cases the real stack cannot run: an absent
    ``permuted_tokens`` (infershape and kernel need it, spec §8 #8) and a ``range`` of size
    other than 2 (the tiling then "succeeds" without a block dim, spec §9 #3).

* the second phase is the model's ``execute`` (:class:`~aicore_sim.ops.opmodel.OpModelBase`):
  it records the kernel launch (block dim from the tiling) and fills the caller's
  preallocated arrays, if any. Nothing is written to them before the launch has succeeded.

Outputs follow the operator's infershape (spec §2.2): ``permuted_tokens_grad`` is
``(sorted_indices.shape[0], hidden)`` in the tokens dtype; ``probs_grad`` has ``probs``' shape
and dtype. Without ``probs`` there is no ``probs_grad`` to compute: the result holds the
caller's array untouched if one was passed, else ``None`` (no dummy is allocated).
Rows of ``permuted_tokens_grad`` that no accepted index hits are never written: they keep the
content of a preallocated output, or are zero in a freshly allocated one.

Empty tensors: on Ascend950 presets (short SoC ``Ascend950``) the tiling's empty-tensor path is
taken (host arch 3510): workspace 0, no launch, outputs returned as given (or zeros). On A2/A3
the tiling rejects them (561002).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from aicore_sim import KernelLaunch, Platform, PreparedCall, load_platform
from aicore_sim.ascendc.host import (
    ACLNN_ERR_INNER_TILING_ERROR,
    ACLNN_ERR_PARAM_INVALID,
    AclnnError,
    aclnn_int_list,
    aclnn_out,
    specs_of,
)
from aicore_sim.ascendc.platform_ascendc import npu_arch
from aicore_sim.sim.dtypes import dtype_name, int32
from op_models.moe_common import FLOAT_DTYPES, aclnn_inputs, aclnn_tiling
from op_models.moe_token_unpermute_with_ep_grad import tiling
from op_models.moe_token_unpermute_with_ep_grad.infershape import infer_outputs
from op_models.moe_token_unpermute_with_ep_grad.kernel_entry import (
    moe_token_unpermute_with_ep_grad as _kernel,
)

# The nine (tokens dtype, probs dtype) combinations of the IR, in IR order (spec §2.1).
DTYPE_COMBINATIONS: tuple[tuple[np.dtype, np.dtype], ...] = tuple(
    (t, p) for t in FLOAT_DTYPES for p in FLOAT_DTYPES
)

# IR defaults substituted by aclnn for null optional int arrays (spec §2.3).
DEFAULT_RESTORE_SHAPE = (1, 1)
DEFAULT_RANGE = (-1, -1)

# --------------------------------------------------------------------------------------------
# Checks
# --------------------------------------------------------------------------------------------


def _check_float(name: str, arr: np.ndarray) -> None:
    if arr.dtype not in FLOAT_DTYPES:
        raise AclnnError(
            ACLNN_ERR_PARAM_INVALID,
            f"{name} dtype {arr.dtype} is not supported: expected bfloat16, float16 or float32",
            "dtype")


def _check_dtypes(grad: np.ndarray, idx: np.ndarray, perm: np.ndarray | None,
                  probs: np.ndarray | None) -> None:
    """The IR's dtype table: T for inputs 0/2 (and output 0), P for input 3 (and output 1)."""
    _check_float("unpermuted_tokens_grad", grad)
    tok = grad.dtype
    if idx.dtype != int32:
        raise AclnnError(
            ACLNN_ERR_PARAM_INVALID,
            f"sorted_indices dtype {idx.dtype} is not supported: only int32 (the kernel reads "
            "int32)", "indices_dtype")
    if perm is not None and perm.dtype != tok:
        raise AclnnError(
            ACLNN_ERR_PARAM_INVALID,
            f"permuted_tokens dtype {dtype_name(perm.dtype)} must equal "
            f"unpermuted_tokens_grad dtype {dtype_name(tok)} (no such dtype combination)",
            "dtype_combination")
    if probs is not None:
        _check_float("probs", probs)
        if (tok, probs.dtype) not in DTYPE_COMBINATIONS:  # pragma: no cover - all 9 listed
            raise AclnnError(ACLNN_ERR_PARAM_INVALID, "dtype combination not supported",
                             "dtype_combination")


# --------------------------------------------------------------------------------------------
# The two aclnn phases
# --------------------------------------------------------------------------------------------


def get_workspace_size(
    unpermuted_tokens_grad: np.ndarray | None,
    sorted_indices: np.ndarray | None,
    permuted_tokens: np.ndarray | None,
    probs: np.ndarray | None,
    padded_mode: bool,
    restore_shape: Sequence[int] | None,
    range: Sequence[int] | None,  # noqa: A002 - the operator's attribute name
    topk_num: int,
    permuted_tokens_grad_out: np.ndarray | None = None,
    probs_grad_out: np.ndarray | None = None,
    *,
    platform: str | Platform,
) -> tuple[int, PreparedCall]:
    """``aclnnMoeTokenUnpermuteWithEpGradGetWorkspaceSize``: check, tile, prepare.

    Parameters are the aclnn ones in order (tensors as numpy arrays, ``None`` for nullptr).
    ``restore_shape`` / ``range`` ``None`` become the IR defaults {1, 1} / {-1, -1}.
    ``permuted_tokens_grad_out`` / ``probs_grad_out`` may be ``None`` (allocated by
    the launch) or preallocated arrays whose untouched rows keep their content.
    Returns ``(workspace_size, executor)``; raises :class:`AclnnError` (see module docstring).
    """
    plat = load_platform(platform)
    inputs = aclnn_inputs(tiling, unpermuted_tokens_grad, sorted_indices, permuted_tokens, probs)
    grad, idx, perm, prb = inputs.values()
    _check_dtypes(grad, idx, perm, prb)
    restore = aclnn_int_list("restore_shape", restore_shape, DEFAULT_RESTORE_SHAPE)
    rng = aclnn_int_list("range", range, DEFAULT_RANGE)
    if isinstance(topk_num, bool) or not isinstance(topk_num, (int, np.integer)):
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"topk_num must be an int, got {topk_num!r}",
                         "attr_type")

    tr = aclnn_tiling(tiling, inputs.values(), plat, host_arch=True,
                      padded_mode=bool(padded_mode), restore_shape=restore, range=rng,
                      topk_num=int(topk_num))
    empty = npu_arch(plat) == 3510 and tr.workspace == [0]
    if perm is None:
        raise AclnnError(
            ACLNN_ERR_INNER_TILING_ERROR,
            "permuted_tokens is None: optional in the IR, but the infershape, the tiling's dtype "
            "source and the kernel all need it (rule permuted_tokens_required)",
            "permuted_tokens_required")
    if tr.block_dim is None and not empty:
        raise AclnnError(
            ACLNN_ERR_INNER_TILING_ERROR,
            f"range {rng} has {len(rng)} values, not 2: upstream's tiling then returns without "
            "setting the block dim, so no launch is possible (rule range_size)", "range_size")

    # output shapes and dtypes by the operator's infershape (spec §2.2)
    shapes = infer_outputs(specs_of(inputs))
    ptg_out = aclnn_out("permuted_tokens_grad_out", permuted_tokens_grad_out,
                        shapes["permuted_tokens_grad"])
    pg_out = aclnn_out("probs_grad_out", probs_grad_out, shapes["probs_grad"])
    launch = KernelLaunch(None if empty else _kernel, inputs, plat,
                          (grad.dtype, None if prb is None else prb.dtype), tiling_key=True,
                          workspace=False,
                          outputs={"permuted_tokens_grad": ptg_out, "probs_grad": pg_out})
    pc = PreparedCall.of("moe_token_unpermute_with_ep_grad", shapes, tr, launch,
                         _notes(idx, prb, restore_shape, int(topk_num), tr.tiling_data))
    return pc.workspace_size, pc


def _notes(idx: np.ndarray, prb: np.ndarray | None, restore_shape: Sequence[int] | None,
           topk_num: int, td: Any) -> tuple[str, ...]:
    """One line per legal but suspicious argument; the behaviour is upstream's, kept."""
    out = []
    if prb is not None and prb.ndim == 2 and prb.shape[1] != topk_num:
        out.append(f"topk_num {topk_num} is ignored: probs gives topK = {prb.shape[1]} (as "
                   "upstream's tiling takes it)")
    if restore_shape is not None and list(restore_shape) != list(DEFAULT_RESTORE_SHAPE):
        out.append(f"restore_shape {list(restore_shape)} is ignored (upstream's tiling and "
                   "kernel never read it)")
    T = int(idx.size)
    if T and td is not None:
        flat = np.asarray(idx).reshape(-1)
        outside = int(np.count_nonzero((flat < 0) | (flat >= T)))
        if outside:
            out.append(f"{outside} of {T} sorted_indices are outside [0, N*K) = [0, {T}): "
                       "those positions are skipped, as upstream's kernel skips them")
        start, end = int(td.start), int(td.end)
        if not np.any((flat >= start) & (flat < end)):
            out.append(f"the EP window [{start}, {end}) of range holds no sorted index: "
                       "permuted_tokens_grad stays all zeros")
    return tuple(out)


__all__ = ["AclnnError", "DTYPE_COMBINATIONS", "get_workspace_size"]

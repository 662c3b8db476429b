"""aclnn-style API of ``MoeTokenPermuteWithEpGrad`` (the front door of the op model).

Place in the flow: a caller's numpy tensors and attributes -> argument checks (aclnn error
codes) -> host tiling -> one simulated launch of the kernel port -> outputs + Recording.

Two phases, as ``aclnnMoeTokenPermuteWithEpGradGetWorkspaceSize`` /
``aclnnMoeTokenPermuteWithEpGrad`` (upstream ``docs/aclnnMoeTokenPermuteWithEpGrad.md``; the
aclnn layer is generated from the op definition, so its own checks are the generated ones:
required pointers and the IR's dtype table):

* :func:`get_workspace_size` checks the arguments, runs the tiling and returns
  ``(workspace_size, executor)`` (the executor a :class:`~aicore_sim.ops.opmodel.PreparedCall`
  holding the kernel launch); on failure it raises :class:`AclnnError`:

  - ``161001`` (ACLNN_ERR_PARAM_NULLPTR): ``permuted_tokens_output_grad`` or
    ``sorted_indices`` is ``None``;
  - ``161002`` (ACLNN_ERR_PARAM_INVALID): not a numpy array; a dtype outside the IR (the grad
    bf16 / fp16 / fp32, ``sorted_indices`` int32, the probs grad in the grad's dtype: the IR
    pairs them; outputs in those dtypes). And rules of the documentation the generated layer
    does not check, where the kernel would misbehave: ``sorted_indices`` not 1-D (rule
    ``indices_dim_num``) or not a multiple of ``num_topk`` (``indices_length``); an empty
    tensor ("不支持空tensor": ``empty``); ``num_topk`` above 512 (``topk_max``);
    ``padded_mode`` true ("目前仅支持false": ``padded_mode``); a window ``range[1] -
    range[0]`` larger than the rows of the grad or of the probs grad (the kernel would read
    past them: ``range_rows``); a preallocated output of the wrong shape (``out_shape``).
    Ours: ``range`` ``None`` (aclnn then falls back to ``aclnnMoeTokenPermuteGrad``, another
    operator, not modelled: ``range_none``); a ``range`` without exactly two values (the
    tiling would succeed with every field 0 and block dim 0: ``range_size``).
  - ``561002`` (ACLNN_ERR_INNER_TILING_ERROR): the tiling failed (``num_topk`` < 1, the grad
    not 2-D, the probs grad not 1-D); the message carries the tiling's rule. Also (ours) when
    the tiling "succeeds" with a hidden chunk or a token loop of 0 or less on a UB too small
    for the operator (rule ``ub_too_small``: the kernel would compute nothing or fail).

* the second phase is the model's ``execute`` (:class:`~aicore_sim.ops.opmodel.OpModelBase`):
  it records the kernel launch (block dim from the tiling; no workspace) and fills the
  caller's preallocated arrays, if any, once the launch has succeeded.
  Every element of ``token_grad`` and ``probs_grad`` is written by the kernel.

Without ``permuted_probs_output_grad`` no ``probs_grad`` is produced ("传入空则不输出"): it is
``None``, or the caller's array, untouched. Timing-only mode is supported for both keys: the
kernel's control flow reads only ``sorted_indices``, which MTE2 copies from GM.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from aicore_sim import KernelLaunch, Platform, PreparedCall, load_platform
from aicore_sim.ascendc.host import AclnnError, aclnn_int, aclnn_invalid, aclnn_out, specs_of
from aicore_sim.sim.dtypes import dtype_name, int32
from op_models.moe_common import FLOAT_DTYPES, aclnn_inputs, aclnn_range, aclnn_tiling, check_ub
from op_models.moe_token_permute_with_ep_grad import tiling
from op_models.moe_token_permute_with_ep_grad.infershape import infer_outputs
from op_models.moe_token_permute_with_ep_grad.kernel_entry import (
    moe_token_permute_with_ep_grad as _kernel,
)
from op_models.moe_token_permute_with_ep_grad.tiling import MAX_TOPK

# the IR's three (grad, sorted_indices, probs grad) combinations, IR order
DTYPE_COMBINATIONS: tuple[tuple[np.dtype, np.dtype, np.dtype], ...] = tuple(
    (t, int32, t) for t in FLOAT_DTYPES)
INPUT_NAMES = tuple(name for name, _ in tiling.TilingContext.INPUTS)  # IR order
OUTPUT_NAMES = ("token_grad", "probs_grad")


def _check(grad: np.ndarray, idx: np.ndarray, probs: np.ndarray | None) -> None:
    if grad.dtype not in FLOAT_DTYPES:
        raise aclnn_invalid(f"permuted_tokens_output_grad dtype {grad.dtype} is not supported: "
                            "expected bfloat16, float16 or float32", "dtype")
    if idx.dtype != int32:
        raise aclnn_invalid(f"sorted_indices dtype {idx.dtype} is not supported: only int32",
                            "indices_dtype")
    if probs is not None and probs.dtype != grad.dtype:
        raise aclnn_invalid(f"permuted_probs_output_grad dtype {dtype_name(probs.dtype)} must "
                            f"be the grad's dtype {dtype_name(grad.dtype)} (the IR pairs them)",
                            "probs_dtype")
    if idx.ndim != 1:
        raise aclnn_invalid(f"sorted_indices must be 1-D, got shape {list(idx.shape)}",
                            "indices_dim_num")
    for name, arr in zip(INPUT_NAMES, (grad, idx, probs)):
        if arr is not None and arr.size == 0:
            raise aclnn_invalid(f"{name} is empty (shape {list(arr.shape)}); empty tensors are "
                                "not supported", "empty")


def get_workspace_size(
    permuted_tokens_output_grad: np.ndarray | None,
    sorted_indices: np.ndarray | None,
    permuted_probs_output_grad: np.ndarray | None,
    num_topk: int,
    range: Sequence[int] | None,  # noqa: A002 - the operator's attribute name
    padded_mode: bool,
    token_grad_out: np.ndarray | None = None,
    probs_grad_out: np.ndarray | None = None,
    *,
    platform: str | Platform,
) -> tuple[int, PreparedCall]:
    """``aclnnMoeTokenPermuteWithEpGradGetWorkspaceSize``: check, tile, prepare.

    Parameters are the aclnn ones in order (tensors as numpy arrays, ``None`` for nullptr;
    the outputs may be ``None``: the launch then allocates them). Returns
    ``(workspace_size, executor)``; raises :class:`AclnnError` (see the module docstring).
    """
    plat = load_platform(platform)
    inputs = aclnn_inputs(tiling, permuted_tokens_output_grad, sorted_indices,
                          permuted_probs_output_grad)
    grad, idx, prb = inputs.values()
    _check(grad, idx, prb)
    aclnn_int("num_topk", num_topk)
    if num_topk > MAX_TOPK:
        raise aclnn_invalid(f"num_topk {num_topk} exceeds {MAX_TOPK} (documented limit)",
                            "topk_max")
    if num_topk >= 1 and idx.shape[0] % num_topk:
        raise aclnn_invalid(f"sorted_indices has {idx.shape[0]} values, not a multiple of "
                            f"num_topk {num_topk} (N * K slots)", "indices_length")
    if bool(padded_mode):
        raise aclnn_invalid("padded_mode must be false (only false is supported)", "padded_mode")
    rng = aclnn_range(range, "aclnnMoeTokenPermuteGrad", "; pass range=[start, end]")
    for name, arr in (("permuted_tokens_output_grad", grad),
                      ("permuted_probs_output_grad", prb)):
        if arr is not None and arr.ndim >= 1 and rng[1] - rng[0] > arr.shape[0]:
            raise aclnn_invalid(f"range {rng} spans {rng[1] - rng[0]} rows but {name} has "
                                f"{arr.shape[0]}: the kernel would read past it", "range_rows")

    tr = aclnn_tiling(tiling, inputs.values(), plat, num_topk=int(num_topk), range=rng,
                      padded_mode=False)
    check_ub(tr.tiling_data, plat.core_mem_size_ub, "compute nothing or fail")
    out_specs = infer_outputs(specs_of(inputs), {"num_topk": num_topk})
    tok_out = aclnn_out("token_grad_out", token_grad_out, out_specs["token_grad"])
    prb_out = aclnn_out("probs_grad_out", probs_grad_out, out_specs["probs_grad"])
    launch = KernelLaunch(_kernel, inputs, plat, (grad.dtype, None if prb is None else prb.dtype),
                          tiling_key=True, workspace=False,
                          outputs={"token_grad": tok_out, "probs_grad": prb_out})
    pc = PreparedCall.of("moe_token_permute_with_ep_grad", out_specs, tr, launch)
    return pc.workspace_size, pc


__all__ = ["AclnnError", "DTYPE_COMBINATIONS", "get_workspace_size"]

"""aclnn-style API of ``MoeTokenPermuteWithEp`` (the front door of the op model).

Two phases, as ``aclnnMoeTokenPermuteWithEpGetWorkspaceSize`` / ``aclnnMoeTokenPermuteWithEp``
(upstream ``docs/aclnnMoeTokenPermuteWithEp.md``):

* :func:`get_workspace_size` checks the arguments, infers the outputs, runs the tiling and
  returns ``(workspace_size, executor)`` (the executor a
  :class:`~aicore_sim.ops.opmodel.PreparedCall` holding the kernel launch); on failure it
  raises :class:`AclnnError`:

  - ``161001`` (ACLNN_ERR_PARAM_NULLPTR): ``tokens`` or ``indices`` is ``None``;
  - ``161002`` (ACLNN_ERR_PARAM_INVALID): not a numpy array; a dtype outside the IR table
    (tokens bf16 / fp16 / fp32, indices int32 / int64, probs in the tokens' dtype: the IR
    pairs them); and checks of ours where the real stack would misbehave or is not modelled:
    ``range`` ``None`` (aclnn falls back to ``aclnnMoeTokenPermute``, another operator: rule
    ``range_none``), ``range[0] > range[1]`` (the kernel would leave rows unwritten: rule
    ``range_order``), an empty tensor (supported upstream without a launch, not modelled: rule
    ``empty``), an expert id outside ``[0, 16777215)`` (documented limit: the sort's fp32 keys
    are exact only below it: rule ``indices_value``);
  - ``561002`` (ACLNN_ERR_INNER_TILING_ERROR): ``tokens`` not 2-D (the docs' rule, checked
    here as the tiling does not), or the tiling failed (indices rank, dim-0 mismatch, probs
    shape, topK outside (0, 512], ``N * K`` >= 16777215, ``range`` outside ``[0, N * K]`` or
    not two values, ``padded_mode`` true, ...); the message carries the tiling's rule.

* the second phase is the model's ``execute`` (:class:`~aicore_sim.ops.opmodel.OpModelBase`):
  it records the kernel launch (block dim from the tiling) with the workspace the tiling asked
  for; ``outputs`` are ``permute_tokens``, ``sorted_indices`` and, with probs,
  ``permute_probs``.

Timing-only mode: every phase of this kernel branches or addresses on values an earlier phase
computed with vector instructions (the merge counts of ``MrgSort``, the sorted row ids the
index copy reads back from GM), which a timing-only record does not compute (docs/model.md);
launches are therefore always recorded with numerics (:data:`NUMERIC_KEYS`; the result's
mode says ``timed``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from aicore_sim import KernelLaunch, Platform, PreparedCall, load_platform
from aicore_sim.ascendc.host import (
    ACLNN_ERR_INNER_TILING_ERROR,
    AclnnError,
    TensorDesc,
    aclnn_int,
    aclnn_invalid,
    specs_of,
)
from aicore_sim.sim.dtypes import dtype_name, int32, int64
from op_models.moe_common import FLOAT_DTYPES, aclnn_inputs, aclnn_range, aclnn_tiling
from op_models.moe_token_permute_with_ep import tiling
from op_models.moe_token_permute_with_ep.infershape import infer_outputs
from op_models.moe_token_permute_with_ep.kernel_entry import (
    moe_token_permute_with_ep as _kernel,
)
from op_models.moe_token_permute_with_ep.tiling import SORT_LIMIT_LENGTH

INDEX_DTYPES: tuple[np.dtype, ...] = (int64, int32)
# the IR's six (tokens, indices, probs) combinations, IR order
DTYPE_COMBINATIONS: tuple[tuple[np.dtype, np.dtype, np.dtype], ...] = tuple(
    (t, i, t) for t in FLOAT_DTYPES for i in INDEX_DTYPES)
NUMERIC_KEYS = (1, 2, 3, 4, 5, 6, 7, 8)  # every key reads vector results back (docstring)


def _check(tokens: np.ndarray, idx: np.ndarray, probs: np.ndarray | None) -> None:
    if tokens.dtype not in FLOAT_DTYPES:
        raise aclnn_invalid(f"tokens dtype {tokens.dtype} is not supported: expected bfloat16, "
                            "float16 or float32", "dtype")
    if idx.dtype not in INDEX_DTYPES:
        raise aclnn_invalid(f"indices dtype {idx.dtype} is not supported: int32 or int64",
                            "indices_dtype")
    if probs is not None and probs.dtype != tokens.dtype:
        raise aclnn_invalid(f"probs dtype {dtype_name(probs.dtype)} must be the tokens dtype "
                            f"{dtype_name(tokens.dtype)} (the IR pairs them)", "probs_dtype")
    for name, arr in (("tokens", tokens), ("indices", idx), ("probs", probs)):
        if arr is not None and arr.size == 0:
            raise aclnn_invalid(f"{name} is empty (shape {list(arr.shape)}): empty tensors are "
                                "supported upstream without a launch, which is not modelled",
                                "empty")
    if tokens.ndim != 2:
        raise AclnnError(ACLNN_ERR_INNER_TILING_ERROR, f"tokens must be 2-D, got shape "
                         f"{list(tokens.shape)} (rule tokens_dim_num)", "tokens_dim_num")
    if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= SORT_LIMIT_LENGTH):
        raise aclnn_invalid(f"indices values must be in [0, {SORT_LIMIT_LENGTH}), got "
                            f"[{int(idx.min())}, {int(idx.max())}]", "indices_value")


def get_workspace_size(
    tokens: np.ndarray | None,
    indices: np.ndarray | None,
    probs: np.ndarray | None,
    range: Sequence[int] | None,  # noqa: A002 - the operator's attribute name
    num_out_tokens: int,
    padded_mode: bool,
    *,
    platform: str | Platform,
) -> tuple[int, PreparedCall]:
    """``aclnnMoeTokenPermuteWithEpGetWorkspaceSize``: check, infer, tile, prepare.

    Parameters are the aclnn ones in order (tensors as numpy arrays, ``None`` for nullptr);
    the outputs are allocated by :func:`execute`. Returns ``(workspace_size, executor)``;
    raises :class:`AclnnError` (see the module docstring)."""
    plat = load_platform(platform)
    inputs = aclnn_inputs(tiling, tokens, indices, probs)
    tok, idx, prb = inputs.values()
    _check(tok, idx, prb)
    aclnn_int("num_out_tokens", num_out_tokens)
    rng = aclnn_range(range, "aclnnMoeTokenPermute", pairs=False)
    if len(rng) == 2 and rng[0] > rng[1]:
        raise aclnn_invalid(f"range {rng}: start after end would leave rows of the output "
                            "unwritten", "range_order")
    out_specs: dict[str, tuple | None]
    try:
        out_specs = infer_outputs(specs_of(inputs),
                                  {"range": rng if len(rng) == 2 else None,
                                   "num_out_tokens": num_out_tokens})
    except ValueError as e:
        raise AclnnError(ACLNN_ERR_INNER_TILING_ERROR, f"{e} (rule indices_dim_num)",
                         "indices_dim_num") from None
    outs = [None if s is None else TensorDesc(s[0], s[1]) for s in out_specs.values()]
    tr = aclnn_tiling(tiling, inputs.values(), plat, outputs=outs, range=rng,
                      num_out_tokens=int(num_out_tokens), padded_mode=bool(padded_mode))
    launch = KernelLaunch(_kernel, inputs, plat, (tok.dtype, idx.dtype, (prb if prb is not None
                                                                        else tok).dtype),
                          tiling_key=True)
    pc = PreparedCall.of("moe_token_permute_with_ep", out_specs, tr, launch)
    return pc.workspace_size, pc


__all__ = ["AclnnError", "DTYPE_COMBINATIONS", "NUMERIC_KEYS", "get_workspace_size"]

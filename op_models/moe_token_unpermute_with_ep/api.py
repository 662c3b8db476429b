"""aclnn-style API of ``MoeTokenUnpermuteWithEp`` (the front door of the forward op model).

Place in the flow: a caller's numpy tensors and attributes -> parameter checks (aclnn error
codes) -> host tiling -> one simulated launch of the kernel port -> output + Recording.

Two phases, as ``aclnnMoeTokenUnpermuteWithEpGetWorkspaceSize`` / ``aclnnMoeTokenUnpermuteWithEp``
(upstream ``docs/aclnnMoeTokenUnpermuteWithEp.md``):

* :func:`get_workspace_size` checks the arguments, runs the tiling and returns
  ``(workspace_size, executor)``; on failure it raises :class:`AclnnError`:

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

* :func:`execute` launches the kernel (block dim from the tiling) and copies the output into
  the caller's preallocated array, if any, only once the launch has succeeded.

Timing-only mode with bf16 / fp16 probs (tiling keys 2, 3): the kernel branches on the fp32
probs a vector Cast produces (``prob != 0``), which a timing-only record does not compute
(docs/model.md), so such launches are recorded with numerics (the result's mode says
``timed``).
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from aicore_sim import Platform, Recording, load_platform
from aicore_sim.ascendc import PlatformAscendC
from aicore_sim.ascendc.host import (
    ACLNN_ERR_INNER_TILING_ERROR,
    ACLNN_ERR_PARAM_INVALID,
    ACLNN_ERR_PARAM_NULLPTR,
    ACLNN_SUCCESS,
    AclnnError,
    aclnn_int,
    aclnn_int_list,
    aclnn_invalid,
    aclnn_tensor,
    aclnn_tiled,
    aclnn_workspace,
)
from aicore_sim.sim.dtypes import dtype_name, int32
from op_models.moe_common import FLOAT_DTYPES, aclnn_range, check_ub
from op_models.moe_token_unpermute_with_ep import cases as _cases
from op_models.moe_token_unpermute_with_ep.infershape import infer_outputs
from op_models.moe_token_unpermute_with_ep.kernel_entry import (
    moe_token_unpermute_with_ep as _kernel,
)
from op_models.moe_token_unpermute_with_ep.tiling import (
    TensorDesc,
    TilingContext,
    TilingResult,
    tiling_func,
)

# the IR's nine (tokens, probs) dtype combinations, IR order
DTYPE_COMBINATIONS: tuple[tuple[np.dtype, np.dtype], ...] = tuple(
    (t, p) for t in FLOAT_DTYPES for p in FLOAT_DTYPES)
NUMERIC_KEYS = (2, 3)  # keys whose control flow reads vector results (see module docstring)

GM_NAMES = ("permuted_tokens", "sorted_indices", "probs", "unpermuted_tokens")


@dataclass
class Executor:
    """What ``get_workspace_size`` prepared for ``execute`` (the aclOpExecutor)."""

    platform: Platform
    tiling: TilingResult
    inputs: dict[str, np.ndarray | None]
    out_shape: tuple[int, ...]
    out_dtype: np.dtype
    user_out: np.ndarray | None
    workspace_size: int
    warnings: tuple[str, ...] = field(default_factory=tuple)


def _check(tokens: np.ndarray, idx: np.ndarray, probs: np.ndarray | None,
           out: np.ndarray | None) -> None:
    if tokens.dtype not in FLOAT_DTYPES:
        raise aclnn_invalid(f"permuted_tokens dtype {tokens.dtype} is not supported: expected "
                       "bfloat16, float16 or float32", "dtype")
    if idx.dtype != int32:
        raise aclnn_invalid(f"sorted_indices dtype {idx.dtype} is not supported: only int32",
                       "indices_dtype")
    if probs is not None and probs.dtype not in FLOAT_DTYPES:
        raise aclnn_invalid(f"probs dtype {probs.dtype} is not supported: expected bfloat16, "
                       "float16 or float32", "dtype")
    if out is not None and out.dtype != tokens.dtype:
        raise aclnn_invalid(f"out dtype {dtype_name(out.dtype)} must equal the permuted_tokens "
                       f"dtype {dtype_name(tokens.dtype)}", "out_dtype")
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
    out: np.ndarray | None,
    *,
    platform: str | Platform,
) -> tuple[int, Executor]:
    """``aclnnMoeTokenUnpermuteWithEpGetWorkspaceSize``: check, tile, prepare.

    Parameters are the aclnn ones in order (tensors as numpy arrays, ``None`` for nullptr;
    ``out`` may be ``None``: :func:`execute` then allocates it). Returns
    ``(workspace_size, executor)``; raises :class:`AclnnError` (see the module docstring).
    """
    plat = load_platform(platform)
    tokens = aclnn_tensor("permuted_tokens", permuted_tokens, True)
    idx = aclnn_tensor("sorted_indices", sorted_indices, True)
    prb = aclnn_tensor("probs", probs, False)
    out_arr = aclnn_tensor("out", out, False)
    assert tokens is not None and idx is not None
    _check(tokens, idx, prb, out_arr)
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

    ctx = TilingContext.create(
        TensorDesc(tokens.shape, tokens.dtype), TensorDesc(idx.shape, idx.dtype),
        None if prb is None else TensorDesc(prb.shape, prb.dtype), num_topk=int(num_topk),
        range=rng, padded_mode=False,
        restore_shape=None if restore_shape is None else list(restore_shape))
    tr = aclnn_tiled(tiling_func(ctx, PlatformAscendC(plat)))
    check_ub(tr.tiling_data, plat.core_mem_size_ub, "compute nothing")
    (shape, dtype), = infer_outputs(tokens, idx, prb, int(num_topk)).values()
    if out_arr is not None and tuple(out_arr.shape) != shape:
        raise aclnn_invalid(f"out has shape {list(out_arr.shape)}, the operator's output shape is "
                       f"{list(shape)}", "out_shape")
    ws = int(tr.workspace[0]) if tr.workspace else 0
    inputs = {"permuted_tokens": tokens, "sorted_indices": idx, "probs": prb}
    return ws, Executor(plat, tr, inputs, shape, dtype, out_arr, ws, tuple(tr.warnings))


def launch_args(ex: Executor) -> list:
    """The kernel's argument list for :class:`aicore_sim.sim.recording.Recording`."""
    td = ex.tiling.tiling_data
    prb = ex.inputs["probs"]
    return ["permuted_tokens", "sorted_indices", None if prb is None else "probs",
            "unpermuted_tokens", None, td, ex.tiling.tiling_key,
            ex.inputs["permuted_tokens"].dtype, None if prb is None else prb.dtype]


def execute(workspace: Any, workspace_size: int, executor: Executor, *, mode: str = "timed",
            races: bool = True, jobs: int = 1, check_streams: bool = False,
            auto_sync: bool = True, kernel_source: Any = None) -> Recording:
    """``aclnnMoeTokenUnpermuteWithEp``: record the launch; its output is delivered when read.

    ``workspace`` is not touched; ``workspace_size`` must be at least what
    :func:`get_workspace_size` returned (161002). The result's ``outputs`` map
    ``unpermuted_tokens`` to the caller's ``out`` (filled in) or to a new array (timing-only:
    nothing computed, no output). Every output row is written by the kernel. The keyword
    arguments are those of :class:`aicore_sim.sim.recording.Recording`.
    """
    del workspace
    ex = executor
    aclnn_workspace(workspace_size, ex.workspace_size)
    if mode == "timing-only" and ex.tiling.tiling_key in NUMERIC_KEYS:
        mode = "timed"
    tensors = {k: np.ascontiguousarray(v) for k, v in ex.inputs.items() if v is not None}
    tensors["unpermuted_tokens"] = np.zeros(ex.out_shape, ex.out_dtype)
    into = ({"unpermuted_tokens": ex.user_out}
            if ex.user_out is not None and mode != "timing-only" else None)
    return Recording(_kernel, launch_args(ex), tensors,
                     {"unpermuted_tokens": (ex.out_dtype, ex.out_shape)}, ex.platform,
                     block_dim=ex.tiling.block_dim, mode=mode, races=races, jobs=jobs,
                     check_streams=check_streams, auto_sync=auto_sync, into=into,
                     kernel_source=kernel_source)


def moe_token_unpermute_with_ep(
    permuted_tokens: np.ndarray,
    sorted_indices: np.ndarray,
    probs: np.ndarray | None = None,
    *,
    num_topk: int | None = None,
    range: Sequence[int] | None = (0, 0),  # noqa: A002 - the operator's attribute name
    padded_mode: bool = False,
    restore_shape: Sequence[int] | None = None,
    out: np.ndarray | None = None,
    platform: str | Platform = "ascend910b1",
    mode: str = "timed",
    races: bool = True,
    jobs: int = 1,
    auto_sync: bool = True,
) -> tuple[np.ndarray | None, Recording]:
    """Both aclnn phases in one call; returns ``(unpermuted_tokens, result)``.

    ``num_topk`` defaults to ``probs.shape[1]`` with probs, else 1 (the IR default);
    ``range`` defaults to the IR default ``[0, 0]`` (an empty window: zeros out).
    """
    if num_topk is None:
        num_topk = int(probs.shape[1]) if isinstance(probs, np.ndarray) and probs.ndim == 2 \
            else 1
    size, ex = get_workspace_size(permuted_tokens, sorted_indices, probs, num_topk, range,
                                  padded_mode, restore_shape, out, platform=platform)
    result = execute(None, size, ex, mode=mode, races=races, jobs=jobs, auto_sync=auto_sync)
    return result.outputs.get("unpermuted_tokens"), result


def run_case(case_or_name: _cases.Case | str, platform: str | Platform = "ascend910b1",
             mode: str = "timed", seed: int | None = None, races: bool = True, jobs: int = 1,
             auto_sync: bool = True
             ) -> tuple[np.ndarray | None, Recording, dict[str, np.ndarray | None]]:
    """Run a named case (or a :class:`~.cases.Case`) on :func:`~.cases.make_inputs` inputs.

    Returns ``(unpermuted_tokens, result, inputs)``.
    """
    case = _cases.get_case(case_or_name) if isinstance(case_or_name, str) else case_or_name
    inputs = _cases.make_inputs(case, seed)
    out, result = moe_token_unpermute_with_ep(
        inputs["permuted_tokens"], inputs["sorted_indices"], inputs["probs"],
        num_topk=case.top_k, range=builtins.list(inputs["range"]), platform=platform, mode=mode,
        races=races, jobs=jobs, auto_sync=auto_sync)
    return out, result, inputs


__all__ = [
    "ACLNN_ERR_INNER_TILING_ERROR", "ACLNN_ERR_PARAM_INVALID", "ACLNN_ERR_PARAM_NULLPTR",
    "ACLNN_SUCCESS", "AclnnError", "DTYPE_COMBINATIONS", "Executor", "execute",
    "get_workspace_size", "launch_args", "moe_token_unpermute_with_ep", "run_case",
]

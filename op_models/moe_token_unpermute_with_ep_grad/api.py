"""aclnn-style API of ``MoeTokenUnpermuteWithEpGrad`` (the front door of the op model).

Place in the flow: a caller's numpy tensors and attributes -> parameter checks (aclnn error
codes) -> host tiling -> one simulated launch of the kernel port -> outputs + Recording.

Two phases, as ``aclnnMoeTokenUnpermuteWithEpGradGetWorkspaceSize`` /
``aclnnMoeTokenUnpermuteWithEpGrad`` (spec §2.3):

* :func:`get_workspace_size` checks the arguments, runs the tiling and returns
  ``(workspace_size, executor)``; on failure it raises :class:`AclnnError` with the aclnn code:

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

* :func:`execute` launches the kernel (block dim from the tiling) and copies the outputs into
  the caller's preallocated arrays, if any. Nothing is written to them before the launch has
  succeeded.

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
    aclnn_int_list,
    aclnn_tensor,
    aclnn_tiled,
)
from aicore_sim.sim.dtypes import dtype_name, int32
from op_models.moe_common import FLOAT_DTYPES
from op_models.moe_token_unpermute_with_ep_grad import cases as _cases
from op_models.moe_token_unpermute_with_ep_grad.infershape import infer_outputs
from op_models.moe_token_unpermute_with_ep_grad.kernel_entry import (
    moe_token_unpermute_with_ep_grad as _kernel,
)
from op_models.moe_token_unpermute_with_ep_grad.tiling import (
    TensorDesc,
    TilingContext,
    TilingResult,
    tiling_func,
)

# The nine (tokens dtype, probs dtype) combinations of the IR, in IR order (spec §2.1).
DTYPE_COMBINATIONS: tuple[tuple[np.dtype, np.dtype], ...] = tuple(
    (t, p) for t in FLOAT_DTYPES for p in FLOAT_DTYPES
)

# IR defaults substituted by aclnn for null optional int arrays (spec §2.3).
DEFAULT_RESTORE_SHAPE = (1, 1)
DEFAULT_RANGE = (-1, -1)

# GM tensor names of a launch (kernel argument order).
GM_NAMES = (
    "unpermuted_tokens_grad",
    "sorted_indices",
    "permuted_tokens",
    "probs",
    "permuted_tokens_grad",
    "probs_grad",
)


@dataclass
class Executor:
    """What ``get_workspace_size`` prepared for ``execute`` (the aclOpExecutor)."""

    platform: Platform
    tiling: TilingResult
    inputs: dict[str, np.ndarray | None]
    out_shapes: dict[str, tuple[tuple[int, ...], np.dtype] | None]
    user_outputs: dict[str, np.ndarray | None]
    workspace_size: int
    empty: bool = False
    warnings: tuple[str, ...] = field(default_factory=tuple)


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
                  probs: np.ndarray | None, ptg_out: np.ndarray | None,
                  pg_out: np.ndarray | None) -> None:
    """The IR's dtype table: T for inputs 0/2 and output 0, P for input 3 and output 1."""
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
    if ptg_out is not None and ptg_out.dtype != tok:
        raise AclnnError(
            ACLNN_ERR_PARAM_INVALID,
            f"permuted_tokens_grad_out dtype {dtype_name(ptg_out.dtype)} must equal the tokens "
            f"dtype {dtype_name(tok)}", "dtype_combination")
    if probs is not None:
        _check_float("probs", probs)
        if (tok, probs.dtype) not in DTYPE_COMBINATIONS:  # pragma: no cover - all 9 listed
            raise AclnnError(ACLNN_ERR_PARAM_INVALID, "dtype combination not supported",
                             "dtype_combination")
        if pg_out is not None and pg_out.dtype != probs.dtype:
            raise AclnnError(
                ACLNN_ERR_PARAM_INVALID,
                f"probs_grad_out dtype {dtype_name(pg_out.dtype)} must equal probs dtype "
                f"{dtype_name(probs.dtype)}", "dtype_combination")
    elif pg_out is not None:
        _check_float("probs_grad_out", pg_out)


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
    permuted_tokens_grad_out: np.ndarray | None,
    probs_grad_out: np.ndarray | None,
    *,
    platform: str | Platform,
) -> tuple[int, Executor]:
    """``aclnnMoeTokenUnpermuteWithEpGradGetWorkspaceSize``: check, tile, prepare.

    Parameters are the aclnn ones in order (tensors as numpy arrays, ``None`` for nullptr).
    ``restore_shape`` / ``range`` ``None`` become the IR defaults {1, 1} / {-1, -1}.
    ``permuted_tokens_grad_out`` / ``probs_grad_out`` may be ``None`` (allocated by
    :func:`execute`) or preallocated arrays whose untouched rows keep their content.
    Returns ``(workspace_size, executor)``; raises :class:`AclnnError` (see module docstring).
    """
    plat = load_platform(platform)
    grad = aclnn_tensor("unpermuted_tokens_grad", unpermuted_tokens_grad, True)
    idx = aclnn_tensor("sorted_indices", sorted_indices, True)
    perm = aclnn_tensor("permuted_tokens", permuted_tokens, False)
    prb = aclnn_tensor("probs", probs, False)
    ptg_out = aclnn_tensor("permuted_tokens_grad_out", permuted_tokens_grad_out, False)
    pg_out = aclnn_tensor("probs_grad_out", probs_grad_out, False)
    assert grad is not None and idx is not None
    _check_dtypes(grad, idx, perm, prb, ptg_out, pg_out)
    restore = aclnn_int_list("restore_shape", restore_shape, DEFAULT_RESTORE_SHAPE)
    rng = aclnn_int_list("range", range, DEFAULT_RANGE)
    if isinstance(topk_num, bool) or not isinstance(topk_num, (int, np.integer)):
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"topk_num must be an int, got {topk_num!r}",
                         "attr_type")

    def desc(a: np.ndarray | None) -> TensorDesc | None:
        return None if a is None else TensorDesc(a.shape, a.dtype)

    is_950 = plat.short_soc == "Ascend950"
    ctx = TilingContext.create(
        desc(grad), desc(idx), desc(perm), desc(prb), padded_mode=bool(padded_mode),
        restore_shape=restore, range=rng, topk_num=int(topk_num))
    tr = aclnn_tiled(tiling_func(ctx, PlatformAscendC(plat),
                                 host_npu_arch=3510 if is_950 else None))
    empty = is_950 and tr.workspace == [0]
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
    inferred = infer_outputs(grad, idx, perm, prb)
    shapes: dict[str, tuple[tuple[int, ...], np.dtype] | None] = {
        k: None if v is None else (tuple(v.shape), v.dtype) for k, v in inferred.items()}
    for name, arr in (("permuted_tokens_grad", ptg_out), ("probs_grad", pg_out)):
        spec = shapes[name]
        if arr is not None and spec is not None and tuple(arr.shape) != spec[0]:
            raise AclnnError(
                ACLNN_ERR_PARAM_INVALID,
                f"{name}_out has shape {tuple(arr.shape)}, the operator's output shape is "
                f"{spec[0]}", "out_shape")
    inputs = {"unpermuted_tokens_grad": grad, "sorted_indices": idx, "permuted_tokens": perm,
              "probs": prb}
    ws = int(tr.workspace[0]) if tr.workspace else 0
    notes = _notes(idx, prb, restore_shape, int(topk_num), tr.tiling_data)
    ex = Executor(plat, tr, inputs, shapes,
                  {"permuted_tokens_grad": ptg_out, "probs_grad": pg_out}, ws, empty,
                  tuple(tr.warnings) + notes)
    return ws, ex


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


def execute(workspace: Any, workspace_size: int, executor: Executor, *, mode: str = "timed",
            races: bool = True, jobs: int = 1, check_streams: bool = False,
            kernel_source: Any = None) -> Recording:
    """``aclnnMoeTokenUnpermuteWithEpGrad``: record the launch; its outputs are delivered
    when read.

    ``workspace`` is not touched (the kernel never uses it; ``None`` is fine), but
    ``workspace_size`` must be at least what :func:`get_workspace_size` returned (161002).
    Returns the launch's Recording; its ``outputs`` map ``permuted_tokens_grad`` (and
    ``probs_grad`` when there is one) to the caller's arrays, filled in, or to new arrays
    (in timing-only mode nothing is computed: only the caller's arrays, untouched, if any).
    ``races``, ``jobs`` and ``check_streams`` are passed to
    :class:`aicore_sim.sim.recording.Recording`.
    """
    del workspace
    ex = executor
    if int(workspace_size) < ex.workspace_size:
        raise AclnnError(
            ACLNN_ERR_PARAM_INVALID,
            f"workspace_size {workspace_size} is smaller than the {ex.workspace_size} bytes "
            "get_workspace_size asked for", "workspace")
    # initial GM content of the outputs: the caller's arrays, or zeros
    init: dict[str, np.ndarray | None] = {}
    for name, spec in ex.out_shapes.items():
        user = ex.user_outputs[name]
        if spec is None:
            init[name] = None if user is None else np.ascontiguousarray(user)
        else:
            init[name] = (np.zeros(spec[0], spec[1]) if user is None
                          else np.ascontiguousarray(user))
    if ex.empty:
        outs = {k: (ex.user_outputs[k] if ex.user_outputs[k] is not None else v)
                for k, v in init.items()}
        return Recording.nothing(mode, ex.platform,
                                 {k: v for k, v in outs.items() if v is not None})

    td = ex.tiling.tiling_data
    assert td is not None
    prb = ex.inputs["probs"]
    tensors: dict[str, np.ndarray] = {}
    for name in ("unpermuted_tokens_grad", "sorted_indices", "permuted_tokens", "probs"):
        a = ex.inputs[name]
        if a is not None:
            tensors[name] = np.ascontiguousarray(a)
    read_back: dict[str, tuple[np.dtype, tuple[int, ...]]] = {}
    for name in ("permuted_tokens_grad", "probs_grad"):
        a = init[name]
        if a is not None:
            tensors[name] = a
            if ex.out_shapes[name] is not None:
                read_back[name] = (a.dtype, tuple(a.shape))
    args = [name if name in tensors else None for name in GM_NAMES]
    args += [None, td, ex.tiling.tiling_key, ex.inputs["unpermuted_tokens_grad"].dtype,
             None if prb is None else prb.dtype]
    from op_models.moe_token_unpermute_with_ep_grad.tiling_space import instruction_bound

    into = {name: user for name in ("permuted_tokens_grad", "probs_grad")  # the caller's
            if (user := ex.user_outputs[name]) is not None}  # (untouched without probs)
    return Recording(_kernel, args, tensors, read_back, ex.platform,
                     block_dim=ex.tiling.block_dim, mode=mode, races=races, jobs=jobs,
                     check_streams=check_streams, into=into,
                     instructions=instruction_bound(td, ex.tiling.block_dim),
                     kernel_source=kernel_source)


# --------------------------------------------------------------------------------------------
# Convenience
# --------------------------------------------------------------------------------------------


def moe_token_unpermute_with_ep_grad(
    unpermuted_tokens_grad: np.ndarray,
    sorted_indices: np.ndarray,
    permuted_tokens: np.ndarray | None = None,
    probs: np.ndarray | None = None,
    *,
    padded_mode: bool = False,
    restore_shape: Sequence[int] | None = None,
    range: Sequence[int] | None = None,  # noqa: A002 - the operator's attribute name
    topk_num: int | None = None,
    platform: str | Platform = "ascend910b1",
    mode: str = "timed",
    permuted_tokens_grad: np.ndarray | None = None,
    probs_grad: np.ndarray | None = None,
    races: bool = True,
    jobs: int = 1,
) -> tuple[dict[str, np.ndarray | None], Recording]:
    """Both aclnn phases in one call; returns ``(outputs, result)``.

    ``outputs`` has the keys ``permuted_tokens_grad`` and ``probs_grad`` (``None`` without
    ``probs`` unless a ``probs_grad`` array was passed, which is returned untouched).

    ``topk_num`` defaults to ``probs.shape[1]`` when ``probs`` is given, else 1 (then
    ``sorted_indices`` must have ``N`` entries, spec §8 #5). ``permuted_tokens_grad`` /
    ``probs_grad`` are optional preallocated outputs.
    """
    if topk_num is None:
        topk_num = int(probs.shape[1]) if isinstance(probs, np.ndarray) and probs.ndim == 2 else 1
    size, ex = get_workspace_size(
        unpermuted_tokens_grad, sorted_indices, permuted_tokens, probs, padded_mode,
        restore_shape, range, topk_num, permuted_tokens_grad, probs_grad, platform=platform)
    result = execute(None, size, ex, mode=mode, races=races, jobs=jobs)
    outs = {name: result.outputs.get(name) for name in ("permuted_tokens_grad", "probs_grad")}
    return outs, result


def run_case(
    case_or_name: _cases.Case | str,
    platform: str | Platform = "ascend910b1",
    mode: str = "timed",
    seed: int | None = None,
    races: bool = True,
    jobs: int = 1,
) -> tuple[dict[str, np.ndarray | None], Recording, dict[str, np.ndarray | None]]:
    """Run a named case (or a :class:`~.cases.Case`) with :func:`~.cases.make_inputs` inputs.

    Returns ``(outputs, result, inputs)``.
    """
    from aicore_sim import call
    from op_models.moe_token_unpermute_with_ep_grad.model import MODEL

    case = _cases.get_case(case_or_name) if isinstance(case_or_name, str) else case_or_name
    inputs = MODEL.case_inputs(case, seed)
    _, result = call(MODEL, inputs, MODEL.case_specs(case)[1], load_platform(platform),
                     mode=mode, races=races, jobs=jobs)
    outs = {name: result.outputs.get(name) for name in ("permuted_tokens_grad", "probs_grad")}
    return outs, result, inputs


__all__ = [
    "ACLNN_ERR_INNER_TILING_ERROR",
    "ACLNN_ERR_PARAM_INVALID",
    "ACLNN_ERR_PARAM_NULLPTR",
    "ACLNN_SUCCESS",
    "AclnnError",
    "DTYPE_COMBINATIONS",
    "Executor",
    "execute",
    "get_workspace_size",
    "moe_token_unpermute_with_ep_grad",
    "run_case",
]

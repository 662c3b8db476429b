"""What the four MoE token (un)permute-with-EP operator models share, and only that.

Their packages are laid out alike (``model``, ``cases``, ``api``, ``golden``, ``infershape``,
``tiling``, kernels); :class:`MoeOpModel` is the part of their
:class:`~aicore_sim.ops.opmodel.OpModel` registrations that does not depend on the operator
(bundled cases, case inputs, equivalence matrix, aclnn's first phase through the op's
``api.get_workspace_size``); :class:`RoutedCase` the base of the routed-case records of the
EP ops (their fields but the probs and experts, the routing's rules and draw; the routing
itself is :mod:`op_models.moe_routing`); the rest are small helpers
of their case tables, model attributes and aclnn layers (the tensor arguments and the tiling
step by the IR the op's ``tiling.TilingContext`` declares). Each operator keeps its IR, checks,
messages, tiling and kernel.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from aicore_sim import OpModelBase, PreparedCall, dtypes
from aicore_sim.ascendc import PlatformAscendC
from aicore_sim.ascendc.host import (
    ACLNN_ERR_INNER_TILING_ERROR,
    GRAPH_SUCCESS,
    AclnnError,
    TensorDesc,
    TilingResult,
    aclnn_int_list,
    aclnn_invalid,
    aclnn_tensor,
    aclnn_tiled,
    host_tiling,
    tensor_descs,
)
from aicore_sim.ascendc.platform_ascendc import npu_arch
from aicore_sim.sim.dtypes import bfloat16, float16, float32
from op_models import moe_matrix, moe_routing

__all__ = ["DTYPES", "FLOAT_DTYPES", "FLOATS", "MoeOpModel", "RecordError", "RoutedCase",
           "TilingPrepare", "aclnn_inputs", "aclnn_range", "aclnn_tiling", "atk_float_dtype",
           "atk_tensors", "atk_topk", "check_ub", "ep_text", "lookup_case", "np_dtype",
           "topk_default"]

FLOATS = ("bfloat16", "float16", "float32")  # the tokens / probs dtypes of every IR
FLOAT_DTYPES: tuple[np.dtype, ...] = (bfloat16, float16, float32)
DTYPES: dict[str, np.dtype] = dtypes.table(*FLOATS)  # a case's float dtypes by name


def np_dtype(name: str) -> np.dtype:
    """The numpy dtype of a case's float dtype name (an unknown one names the known ones)."""
    return dtypes.choose(name, DTYPES)


class MoeOpModel(OpModelBase):
    """The members the four MoE operator models share: their package is ``op_models.<name>``
    with ``cases`` (``CASES``, ``make_inputs``), ``api`` (``get_workspace_size``: the aclnn
    first phase, its parameters the inputs, then the attributes, in IR order) and an
    ``equivalence_matrix.toml``."""

    name: str
    matrix_label = staticmethod(moe_matrix.label)  # the names and seeds of before

    def _module(self, leaf: str) -> Any:
        """The op's own module ``op_models.<name>.<leaf>`` (imported on first use)."""
        return importlib.import_module(f"op_models.{self.name}.{leaf}")

    @property
    def equivalence_matrix(self) -> Path:  # type: ignore[override]
        return Path(__file__).resolve().parent / self.name / "equivalence_matrix.toml"

    def cases(self) -> Mapping[str, Any]:
        return self._module("cases").CASES

    def case_inputs(self, case: Any, seed: int | None = None) -> dict[str, np.ndarray | None]:
        """The op's ``cases.make_inputs``, its inputs only, in IR order."""
        inp = self._module("cases").make_inputs(case, seed)
        return {t.name: inp[t.name] for t in self.inputs}  # type: ignore[attr-defined]

    def infer_outputs(self, input_specs: Mapping[str, Any], attrs: Mapping[str, Any]
                      ) -> dict[str, Any]:
        """The op's ``infershape.infer_outputs`` on the attributes with their defaults."""
        return self._module("infershape").infer_outputs(input_specs,
                                                        self.full_attrs(input_specs, attrs))

    tiling_arch = False  # the host tiling models the host build's __NPU_ARCH__

    def tiling_outputs(self, input_specs: Mapping[str, Any], attrs: dict[str, Any]
                       ) -> list[Any]:
        """The output descs the host tiling reads (none unless the op says)."""
        return []

    def tiling(self, input_specs: dict[str, Any], attrs: Mapping[str, Any] | list[Any],
               platform: Any) -> dict[str, Any]:
        """The op's host tiling alone (``tiling.tiling_func``) on a context of these inputs and
        attributes: by name, the declared defaults applied; a list, values on IR attribute
        indices and the rest absent, as upstream's tiling UTs build their contexts."""
        t = self._module("tiling")
        descs = tensor_descs(input_specs.values())
        named = self.full_attrs(input_specs, attrs if isinstance(attrs, Mapping) else
                                dict(zip((a.name for a in self.attrs), attrs)))  # type: ignore
        outs = self.tiling_outputs(input_specs, named)
        ctx = (t.TilingContext.create(*descs, outputs=outs, **named)
               if isinstance(attrs, Mapping) else
               t.TilingContext.positional(descs, *attrs, outputs=outs))
        arch = {"host_npu_arch": npu_arch(platform)} if self.tiling_arch else {}
        return host_tiling(t.tiling_func, ctx, PlatformAscendC(platform), **arch).answer()

    def get_workspace_size(self, inputs: dict[str, np.ndarray | None], attrs: dict[str, Any],
                           platform: Any) -> PreparedCall:
        return self._module("api").get_workspace_size(
            *(inputs.get(t.name) for t in self.inputs),  # type: ignore[attr-defined]
            *(attrs[a.name] for a in self.attrs), platform=platform)[1]  # type: ignore


# -- host tiling -------------------------------------------------------------------------------


def TilingPrepare(compile_info: object = None) -> int:
    """The tiling-parse hook of the EP ops' host tilings (upstream's ``TilingPrepareFor<Op>``,
    each port names it so): a no-op with an empty compile-info struct."""
    del compile_info
    return GRAPH_SUCCESS


# -- case tables -------------------------------------------------------------------------------


@dataclass(frozen=True)
class RoutedCase:
    """The fields the EP ops' case records share: name, N tokens, top-K, hidden H, the tokens'
    dtype and (keyword-only) the EP layout, description and seed; an op's record adds its probs
    and the ``experts`` (positional, after ``dtype``). Members: ``flat_size``, ``with_`` and the
    routing's rules and draw."""

    name: str
    tokens_num: int
    top_k: int
    hidden: int
    dtype: str
    _: KW_ONLY
    ep: int = 1
    rank: int = 0
    range: tuple[int, int] | None = None  # None: this rank's EP window
    description: str = ""
    seed: int = 0

    @property
    def flat_size(self) -> int:
        return self.tokens_num * self.top_k

    def with_(self, **changes: object) -> Any:
        return dataclasses.replace(self, **changes)  # type: ignore[type-var]

    def check_routing(self) -> None:
        """The routing's rules: sizes >= 1, top_k of experts, experts split over ep ranks."""
        if min(self.tokens_num, self.top_k, self.hidden, self.experts, self.ep) < 1:
            raise ValueError("tokens_num, top_k, hidden, experts and ep must be >= 1")
        if self.top_k > self.experts:
            raise ValueError(f"top_k {self.top_k} exceeds experts {self.experts}")
        if self.experts % self.ep or not 0 <= self.rank < self.ep:
            raise ValueError("experts must divide by ep and 0 <= rank < ep")

    def routing_window(self, ids: np.ndarray) -> tuple[int, int]:
        """The rows ``[start, end)`` of this case's EP rank for expert ids ``ids``."""
        return moe_routing.ep_window(ids, self.experts, self.ep, self.rank, self.range)

    def draw(self, seed: int | None) -> tuple[np.random.Generator, np.ndarray, np.ndarray]:
        """The generator of ``seed`` (default the case's) after the routing draw, the expert
        ids and the router logits."""
        rng = np.random.default_rng(self.seed if seed is None else seed)
        ids, logits = moe_routing.draw(self.tokens_num, self.top_k, self.experts, rng)
        return rng, ids, logits

    def window(self, seed: int | None = None) -> tuple[int, int]:
        """The ``range`` the case's inputs for ``seed`` have, without drawing the tensors."""
        return self.routing_window(self.draw(seed)[1])


class RecordError(ValueError):
    """An ATK record cannot be built; the message names the field and the rule."""


def atk_tensors(tensors: Mapping[str, Any], *names: str) -> list[Any]:
    """An ATK record's tensors ``names`` (rule ``atk_tensor`` for a missing one)."""
    for name in names:
        if name not in tensors:
            raise RecordError(f"tensor {name} missing (rule atk_tensor)")
    return [tensors[name] for name in names]


def atk_float_dtype(name: str, tensor: Any) -> Any:
    """The float dtype of the record's tensor ``name`` (rule ``atk_dtype`` when it is not bf16,
    fp16 or fp32)."""
    dt = dtypes.float_dtype(tensor.dtype)
    if dt is None:
        raise RecordError(f"{name}.dtype {tensor.dtype}: not bf16/fp16/fp32 (rule atk_dtype)")
    return dt


def atk_topk(name: str, value: Any) -> int:
    """The record's top-K attribute ``name`` (rule ``atk_attr`` unless an integer >= 1)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise RecordError(f"{name} {value!r}: expected an integer >= 1 (rule atk_attr)")
    return value


def lookup_case(cases: Mapping[str, Any], name: str) -> Any:
    """``cases[name]``; an unknown name raises ``KeyError`` listing the bundled ones."""
    try:
        return cases[name]
    except KeyError:
        raise KeyError(f"unknown case {name!r}; bundled: {', '.join(cases)}") from None


def ep_text(case: Any) -> str:
    """The ``range`` column of ``aicore-sim cases``: the EP rank, or the range a case fixes."""
    return f"ep {case.rank}/{case.ep}" if case.range is None else \
        f"[{case.range[0]}, {case.range[1]}]"


# -- attributes and aclnn checks ---------------------------------------------------------------


def topk_default(attrs: dict[str, Any], key: str, probs: Any) -> dict[str, Any]:
    """``attrs`` with the top-K attribute ``key`` ``None`` set to the second dimension of probs'
    ``(shape, dtype)`` spec when it has two, else 1 (the data-dependent default of the ops whose
    IR leaves K to the caller)."""
    if attrs.get(key) is None:
        shape = None if probs is None else probs[0]
        attrs[key] = int(shape[1]) if shape is not None and len(shape) == 2 else 1
    return attrs


def aclnn_inputs(tiling: Any, *values: Any) -> dict[str, np.ndarray | None]:
    """The op's tensor arguments by name, in IR order, as aclnn takes them (161001 a required one
    ``None``, 161002 one not a numpy array; ``None`` an absent optional one): names and which
    are required as the op's ``tiling.TilingContext`` declares its inputs."""
    return {name: aclnn_tensor(name, value, required)
            for (name, required), value in zip(tiling.TilingContext.INPUTS, values, strict=True)}


def aclnn_tiling(tiling: Any, arrays: Any, plat: Any, *, outputs: Any = (),
                 host_arch: bool = False, **attrs: Any) -> TilingResult:
    """aclnn's tiling step: the op's ``tiling.TilingContext`` on the descs of ``arrays`` (IR
    order, ``None`` an absent one), the ``outputs`` descs and the attributes by name, tiled by its
    ``tiling.tiling_func`` (or the op's own C++, :func:`~aicore_sim.ascendc.host.host_tiling`)
    on the platform ``plat`` (``host_arch``: the host build's ``__NPU_ARCH__`` passed); 561002
    when it fails."""
    ctx = tiling.TilingContext.create(
        *(None if a is None else TensorDesc(a.shape, a.dtype) for a in arrays), outputs=outputs,
        **attrs)
    arch = {"host_npu_arch": npu_arch(plat)} if host_arch else {}
    return aclnn_tiled(host_tiling(tiling.tiling_func, ctx, PlatformAscendC(plat), **arch))


def aclnn_range(range: Any, fallback: str, hint: str = "", pairs: bool = True  # noqa: A002
                ) -> list[int]:
    """The ``range`` attribute as ints, or 161002 (ours, where the real stack would misbehave):
    ``None`` (aclnn then calls ``fallback``, another operator: rule ``range_none``), not a
    list of ints, or (``pairs``) not two values (rule ``range_size``)."""
    if range is None:
        raise aclnn_invalid(f"range is None: aclnn then falls back to {fallback}, another "
                            f"operator, which is not modelled{hint}", "range_none")
    rng = aclnn_int_list("range", range)
    if pairs and len(rng) != 2:
        raise aclnn_invalid(f"range must have 2 values, got {rng}", "range_size")
    return rng


def check_ub(td: Any, ub_bytes: int, consequence: str) -> None:
    """561002 (rule ``ub_too_small``, ours) when the shared unpermute / permute-grad tiling
    "succeeds" with a hidden chunk or a token loop of 0 or less on too small a UB."""
    if td.hidden_splited_length <= 0 or td.tokens_splited_length <= 0:
        raise AclnnError(
            ACLNN_ERR_INNER_TILING_ERROR,
            f"the UB of {ub_bytes} bytes is too small: the tiling chose hidden "
            f"chunks of {td.hidden_splited_length} and token loops of "
            f"{td.tokens_splited_length}, so the kernel would {consequence} "
            "(rule ub_too_small)", "ub_too_small")

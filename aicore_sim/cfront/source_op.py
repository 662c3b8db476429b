"""An operator run from its own sources: host tiling, infershape and kernel C++, no Python port.

Step of the flow: the *op tiling* and the *kernel* of an operator model whose Python side is
only its contract - IR (inputs, outputs, attributes), bundled cases and a numpy golden. Its
``op_host/`` C++ tiles each call (:class:`aicore_sim.cfront.host.HostSource`), its infershape
C++ gives the output shapes and dtypes (unless the model gives its own), and its ``op_kernel/``
entry runs on the simulated cores (:class:`aicore_sim.cfront.kernel.KernelSource`), so
``run``, ``verify``, ``tiling``, ``diff`` and the traces apply as to any op.

The sources are never part of aicore-sim: a call takes them from ``--op-src DIR`` (the
operator's folder) or, without it, from ``$AICORE_SIM_OPS_TRANSFORMER/<family>/<op>`` (an
ops-transformer checkout); with neither it is exit 2 saying so.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from aicore_sim.ascendc.host import (
    ACLNN_ERR_INNER_TILING_ERROR,
    AclnnError,
    TensorDesc,
    TilingContext,
    current_host_source,
)
from aicore_sim.ops.opmodel import (
    AttrSpec,
    KernelLaunch,
    OpModelBase,
    PreparedCall,
    Spec,
    TensorSpec,
)
from aicore_sim.sim import dtypes
from aicore_sim.sim.errors import InputError

CHECKOUT_ENV = "AICORE_SIM_OPS_TRANSFORMER"
"""An ops-transformer checkout: where an operator run from its sources finds them by default."""


@dataclass(frozen=True)
class SourceCase:
    """One bundled case of a source operator: input ``(shape, dtype)`` by name (``None``:
    absent), attributes by name (a name the IR does not declare is a drawing parameter only
    ``make_inputs`` reads, e.g. an expert count; the operator never sees it), the seed of its
    inputs."""

    name: str
    description: str
    inputs: Mapping[str, tuple[tuple[int, ...], str] | None]
    attrs: Mapping[str, Any]
    seed: int = 0


class SourceOpModel(OpModelBase):
    """An operator model whose tiling, infershape and kernel are the operator's own C++.

    ``make_inputs(case, rng)`` draws a case's inputs (by name, ``None`` absent);
    ``golden_fn(inputs, attrs)`` is the numpy golden (outputs by name); ``infer`` (optional)
    gives the output specs from the input specs and attributes where the op's infershape C++
    does not say what its aclnn layer allocates."""

    def __init__(self, name: str, description: str, family: str,
                 inputs: tuple[TensorSpec, ...], outputs: tuple[TensorSpec, ...],
                 attrs: tuple[AttrSpec, ...], cases: Mapping[str, SourceCase],
                 make_inputs: Callable[[SourceCase, np.random.Generator],
                                       dict[str, np.ndarray | None]],
                 golden_fn: Callable[[dict[str, np.ndarray | None], dict[str, Any]],
                                     dict[str, np.ndarray | None]],
                 infer: Callable[[Mapping[str, Spec | None], dict[str, Any]],
                                 dict[str, Spec | None]] | None = None,
                 op_type: str | None = None) -> None:
        self.name, self.description, self.family = name, description, family
        self.inputs, self.outputs, self.attrs = inputs, outputs, attrs
        self._cases, self._make_inputs = dict(cases), make_inputs
        self._golden, self._infer = golden_fn, infer
        self.op_type = op_type or "".join(w.capitalize() for w in name.split("_"))

    # -- where the sources are ---------------------------------------------------------------

    def source(self) -> Any:
        """The call's sources: ``--op-src``'s, else the checkout's ``<family>/<op>``."""
        from aicore_sim.cfront.host import HostSource

        given = current_host_source()
        if given is not None:
            return given
        root = os.environ.get(CHECKOUT_ENV)
        if root and (Path(root) / self.family / self.name / "op_host").is_dir():
            return HostSource.of(Path(root) / self.family / self.name)
        raise InputError(f"{self.name} runs from its own sources (host tiling and kernel C++): "
                         f"give --op-src <ops-transformer>/{self.family}/{self.name}, or set "
                         f"{CHECKOUT_ENV} to an ops-transformer checkout")

    # -- the contract ----------------------------------------------------------------------------

    def cases(self) -> Mapping[str, Any]:
        return self._cases

    def case_specs(self, case: SourceCase) -> tuple[dict[str, Spec | None], dict[str, Any]]:
        specs = {t.name: None if case.inputs.get(t.name) is None else
                 (tuple(case.inputs[t.name][0]), dtypes.as_dtype(case.inputs[t.name][1]))
                 for t in self.inputs}
        declared = {a.name for a in self.attrs}
        return specs, {k: v for k, v in case.attrs.items() if k in declared}

    def case_inputs(self, case: SourceCase, seed: int | None = None
                    ) -> dict[str, np.ndarray | None]:
        rng = np.random.default_rng(case.seed if seed is None else seed)
        drawn = self._make_inputs(case, rng)
        return {t.name: drawn.get(t.name) for t in self.inputs}

    def context(self, specs: Mapping[str, Spec | None], attrs: Mapping[str, Any],
                outputs: Mapping[str, Spec | None] | None = None) -> TilingContext:
        """The ``gert`` context of a call: inputs (and, for a tiling, the outputs' shapes) in
        IR order, attributes at their IR indices (an absent one: not set)."""
        ir = type(f"{self.op_type}Context", (TilingContext,), {
            "OP_TYPE": self.op_type,
            "INPUTS": tuple((t.name, not t.optional) for t in self.inputs),
            "OUTPUTS": tuple(t.name for t in self.outputs),
            "ATTRS": tuple((a.name, a.kind) for a in self.attrs)})
        descs = tuple(None if specs.get(t.name) is None else
                      TensorDesc(specs[t.name][0], specs[t.name][1])  # type: ignore[index]
                      for t in self.inputs)
        values = {i: _attr_value(a, attrs.get(a.name)) for i, a in enumerate(self.attrs)
                  if attrs.get(a.name) is not None}
        outs = tuple(None if (outputs or {}).get(t.name) is None else
                     TensorDesc(outputs[t.name][0], outputs[t.name][1])  # type: ignore
                     for t in self.outputs)
        return ir(descs, values, outs)

    def infer_outputs(self, input_specs: Mapping[str, Spec | None], attrs: Mapping[str, Any]
                      ) -> dict[str, Spec | None]:
        full = self.full_attrs(input_specs, attrs)
        if self._infer is not None:
            return self._infer(input_specs, full)
        got = self.source().infer(self.context(input_specs, full), len(self.outputs))
        if got is None:
            raise InputError(f"{self.name}: its sources register no infershape and the model "
                             "gives no output shapes")
        shapes, ge_types = got
        out: dict[str, Spec | None] = {}
        for t, shape, ge in zip(self.outputs, shapes, ge_types):
            if ge is None:
                raise InputError(f"{self.name}: its sources infer no data type for output "
                                 f"{t.name} and the model gives none")
            out[t.name] = (tuple(shape), dtypes.as_dtype(ge))
        return out

    def get_workspace_size(self, inputs: dict[str, np.ndarray | None], attrs: dict[str, Any],
                           platform: Any) -> PreparedCall:
        """aclnn's first phase: the op's own tiling and output shapes; a tiling that fails
        is 561002 with the op's own error line."""
        from aicore_sim.sim.platform import load_platform

        plat = load_platform(platform)
        specs = {k: None if v is None else (v.shape, v.dtype) for k, v in inputs.items()}
        source = self.source()
        out = self.infer_outputs(specs, attrs)
        tr = source.tiling(self.context(specs, attrs, out), plat)
        if not tr.ok:
            raise AclnnError(ACLNN_ERR_INNER_TILING_ERROR, tr.error or "tiling failed",
                             tr.rule)
        launch = KernelLaunch(_Pending(source, self.name), inputs, plat, tiling_key=True)
        return PreparedCall.of(self.name, out, tr, launch)

    def execute(self, pc: PreparedCall, *, mode: str = "timed", **record_kw: Any) -> Any:
        """The kernel entry of the op's sources, built for this call's dtypes and platform
        (``--kernel-src`` may name another folder), then launched as any op's."""
        from aicore_sim.cfront.kernel import KernelSource

        kl: KernelLaunch = pc.state
        pending: _Pending = kl.kernel  # type: ignore[assignment]
        given = record_kw.pop("kernel_source", None)
        kdir = given.path if given is not None else pending.source.kernel_dir
        src = KernelSource(kdir, tuple(pending.source.include_dirs()))
        layout = pending.source.header.struct_for(self.op_type)
        specs = {**{k: None if v is None else v.dtype for k, v in kl.inputs.items()},
                 **{k: None if s is None else s[1] for k, s in pc.out_shapes.items()}}
        macros = {f"DTYPE_{k.upper()}": v for k, v in specs.items() if v is not None}
        macros.update(_absent_macros(pending.source, specs))
        names = [t.name for t in (*self.inputs, *self.outputs)] + ["workspace"]
        raw = b"" if pc.tiling is None else pc.tiling.to_bytes()
        kernel = src.kernel_for_entry(pending.entry, names, raw, pc.tiling_key or 0,
                                      kl.platform, layout_cpp=pending.source.header.cpp(),
                                      layout_name=layout.name, dtypes=macros)
        return super().execute(replace(pc, state=replace(kl, kernel=_Entry(kernel))),
                               mode=mode, **record_kw)

    def golden(self, inputs: dict[str, np.ndarray | None], attrs: dict[str, Any],
               pc: PreparedCall) -> dict[str, np.ndarray | None]:
        """The numpy golden; a ``golden_fn`` with a ``tiling`` parameter also gets the call's
        host tiling fields by name (``{}`` without tiling data): where the order of a float
        sum - and so its last bits - follows the tiling's split (a row in chunks of UB)."""
        full = self.full_attrs(
            {k: None if v is None else (v.shape, v.dtype) for k, v in inputs.items()}, attrs)
        if "tiling" in inspect.signature(self._golden).parameters:
            data = None if pc is None else pc.tiling
            fields = {} if data is None else dict(data.flat_dict())
            return self._golden(inputs, full, tiling=fields)  # type: ignore[call-arg]
        return self._golden(inputs, full)


@dataclass(frozen=True)
class _Pending:
    """The kernel of a prepared call before it is built (at the launch, for its tiling)."""

    source: Any
    entry: str


class _Entry:
    """The built C++ entry as a launch calls it: the GM tensors and the workspace, then the
    tiling (its bytes are the kernel's own) and the tiling key, which the runner takes."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel
        self.__name__ = kernel.__name__

    def __call__(self, *args: Any) -> None:
        self.kernel(*args[:len(self.kernel.params)])


def _absent_macros(source: Any, specs: Mapping[str, Any]) -> dict[str, Any]:
    """``DTYPE_<NAME>`` of the optional tensors a call leaves out, as the binary of the
    definition's dtype column the given tensors match defines them (a kernel may name an
    absent input's type, e.g. as a template argument)."""
    from aicore_sim.cfront.family import absent_dtype_macros

    defs = sorted(Path(source.host_dir).glob("*_def.cpp"))
    if not defs:
        return {}
    return absent_dtype_macros(defs[0].read_text(errors="replace"), dict(specs))


def _attr_value(spec: AttrSpec, value: Any) -> Any:
    if spec.kind == "int_list":
        return [int(x) for x in value]
    return {"bool": bool, "int": int, "float": float, "str": str}[spec.kind](value)


__all__ = ["CHECKOUT_ENV", "SourceCase", "SourceOpModel"]

"""The ``OpModel`` protocol: everything the simulator's commands need to know about one operator.

Step of the flow: the seam between the generic pipeline (case files, ``run``, ``verify``,
``sweep``, ``search``, ``tiling``, ``cases``) and one operator's port (host tiling, kernel,
aclnn checks, golden). An operator model is an object with the members below; it is found by
name through the ``aicore_sim.ops`` entry-point group (:mod:`aicore_sim.ops.registry`), so a
pip-installable package adds an operator without changing this package. ``docs/porting.md``
walks through writing one; ``examples/op_template/`` is a package to copy.

Generic code only ever sees these members. The operator's own objects (its ``Case`` type, its
tiling record, its aclnn executor) pass through it untouched: a *case* needs the attributes
``name``, ``description`` and ``seed``; a *tiling record* needs ``as_dict()`` (fields in
upstream order).

The one call -> golden -> compare path (:func:`call`) is built from the members: ``prepare``
(checks, error codes, tiling) -> ``execute`` (the kernel launch's
:class:`~aicore_sim.sim.recording.Recording`) -> ``golden`` -> ``Recording.compare`` (value for
value, or by a verify standard).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Protocol, runtime_checkable

import numpy as np

__all__ = [
    "ATTR_KINDS",
    "AttrSpec",
    "KernelLaunch",
    "OpModel",
    "OpModelBase",
    "PreparedCall",
    "REQUIRED_MEMBERS",
    "Spec",
    "TensorSpec",
    "call",
    "draw_inputs",
    "launch_tensors",
    "retiled_state",
]

Spec = tuple[tuple[int, ...], np.dtype]  # (shape, dtype) of one tensor
ATTR_KINDS = ("bool", "int", "float", "str", "int_list")


@dataclass(frozen=True)
class TensorSpec:
    """One input or output tensor of an operator, as its IR declares it.

    ``dtypes`` lists the accepted element types (canonical names, see
    :func:`aicore_sim.sim.dtypes.dtype_name`; empty = any); ``rank`` the number of dimensions
    (``None`` = any). Case files check names and presence only; the operator's own checks
    (``prepare``) answer rank, dtype and shape rules with its aclnn codes. ``value_range`` is
    where seeded random float values of an input are drawn (``[low, high)``, then cast);
    integer inputs are drawn as a random permutation of ``[0, size)``.
    """

    name: str
    dtypes: tuple[str, ...] = ()
    rank: int | None = None
    optional: bool = False
    value_range: tuple[float, float] = (-2.0, 2.0)
    doc: str = ""


@dataclass(frozen=True)
class AttrSpec:
    """One attribute: its name, kind (``bool``, ``int``, ``float``, ``str``, ``int_list``) and
    the IR default used when a case leaves it out (``None`` = the op decides, see its doc)."""

    name: str
    kind: str
    default: Any = None
    doc: str = ""

    def __post_init__(self) -> None:
        if self.kind not in ATTR_KINDS:
            raise ValueError(f"attribute {self.name}: kind {self.kind!r} not one of {ATTR_KINDS}")


@dataclass
class PreparedCall:
    """What an operator's first aclnn phase (``GetWorkspaceSize``) hands to its second.

    ``out_shapes``: every output (infershape) as ``(shape, dtype)``, ``None`` for an output the
    call does not produce. ``tiling`` / ``tiling_key`` / ``block_dim``: the host tiling (the
    record has ``as_dict()``; ``None`` when the call launches nothing, e.g. empty tensors).
    ``workspace_size``: bytes the op asked for. ``state``: the op's own executor object, opaque
    to generic code. A sweep replaces ``tiling`` / ``tiling_key`` / ``block_dim`` (see
    :meth:`with_tiling`) and the op's ``execute`` launches with the replacement.
    """

    op: str
    out_shapes: dict[str, Spec | None]
    tiling: Any
    tiling_key: int | None
    block_dim: int | None
    workspace_size: int = 0
    state: Any = None
    warnings: tuple[str, ...] = field(default_factory=tuple)

    @classmethod
    def of(cls, op: str, out_shapes: Mapping[str, Spec | None], workspace_size: int, ex: Any
           ) -> PreparedCall:
        """The call an aclnn executor ``ex`` holds: its ``tiling`` (the host tiling's result:
        ``tiling_data``, ``tiling_key``, ``block_dim``) and ``warnings``; ``ex`` is the state."""
        tr = ex.tiling
        return cls(op, dict(out_shapes), tr.tiling_data, tr.tiling_key, tr.block_dim,
                   workspace_size, ex, tuple(ex.warnings))

    def with_tiling(self, tiling: Any, tiling_key: int | None, block_dim: int | None
                    ) -> PreparedCall:
        """The same call launched with another tiling (a sweep point's)."""
        return replace(self, tiling=tiling, tiling_key=tiling_key, block_dim=block_dim)


@runtime_checkable
class OpModel(Protocol):
    """An operator the simulator can run, verify, sweep and search (see the module docstring).

    Attributes (plain values):
    """

    name: str
    """Case-file name of the operator (``"op"`` field), also its entry-point name."""

    description: str
    """One line: the upstream operator this models (shown by ``aicore-sim cases``)."""

    inputs: tuple[TensorSpec, ...]
    """Inputs in IR order; required ones are those with ``optional=False``."""

    attrs: tuple[AttrSpec, ...]
    """Attributes by name, in IR order (case files give them by name)."""

    outputs: tuple[TensorSpec, ...]
    """Outputs in IR order (names of ``outputs/<name>.npy`` and of the compared outputs)."""

    aclnn_name: str | None
    """The ``aclnn_name`` of its ATK system-test records (``None``: no ATK support)."""

    equivalence_matrix: Path | None
    """Its bundled equivalence matrix (``verify --matrix NAME``), or ``None``. An op with a
    matrix also has the optional member ``matrix_axes``: its case axes, axis name -> the
    :class:`aicore_sim.util.schema.Rule` one value follows (:class:`OpModelBase`: none, i.e. no
    matrix); a matrix file's ``[axes]`` table lists values for exactly these axes.

    An op that ``sweep`` and ``search`` can explore also has the optional member
    ``tiling_space``: a :class:`aicore_sim.ops.tilingspace.TilingSpace` (case axes, knobs,
    strategies, plan, search space; none or ``None``: no sweep)."""

    def cases(self) -> Mapping[str, Any]:
        """The bundled cases by name (each with ``name``, ``description``, ``seed``)."""
        ...

    def case_specs(self, case: Any) -> tuple[dict[str, Spec | None], dict[str, Any]]:
        """A case's input ``(shape, dtype)`` (``None`` = absent) and its attributes by name."""
        ...

    def case_inputs(self, case: Any, seed: int | None = None) -> dict[str, np.ndarray | None]:
        """A case's input tensors for ``seed`` (``None`` = the case's own), reproducibly."""
        ...

    def case_row(self, case: Any) -> dict[str, str]:
        """A case as columns of the ``aicore-sim cases`` table (header -> cell text)."""
        ...

    def matrix_case(self, mc: Any) -> Any:
        """One expanded equivalence-matrix combination
        (:class:`aicore_sim.verify.matrix.MatrixCase`: ``mc.axes`` = one value of each of
        ``matrix_axes``, ``mc.name``, ``mc.seed``) as a case of this op."""
        ...

    def atk_call(self, tensors: dict[str, Any], attrs: dict[str, Any], seed: int
                 ) -> dict[str, Any]:
        """One ATK record as a call: ``label`` (short text for the case name),
        ``input_specs``, ``attrs``, ``make_inputs()`` and ``expected(inputs)`` (the executor's
        expected outputs). Raises ``ValueError`` naming the field and rule."""
        ...

    def infer_outputs(self, input_specs: dict[str, Spec | None], attrs: dict[str, Any]
                      ) -> dict[str, Spec | None]:
        """Infershape: each output's ``(shape, dtype)`` (``None`` = not produced); raises
        ``ValueError`` when the inputs admit none."""
        ...

    def tiling(self, input_specs: dict[str, Spec | None], attrs: dict[str, Any] | list[Any],
               platform: Any) -> dict[str, Any]:
        """The host tiling alone (``aicore-sim tiling``): ``status`` (``success`` /
        ``failed``), ``tiling_key``, ``tiling_data`` (field -> value, upstream order),
        ``workspace``, ``block_dim``, ``error``. ``attrs`` may be a list: values on IR attribute
        indices 0, 1, 2 ... as upstream's tiling unit tests build their contexts."""
        ...

    def prepare(self, inputs: dict[str, np.ndarray | None], attrs: dict[str, Any],
                platform: Any) -> PreparedCall:
        """The first aclnn phase: argument checks, infershape, host tiling. Raises a
        :class:`~aicore_sim.sim.errors.SimError` with ``code`` (the aclnn status) on a rejected
        argument; missing attributes take their IR defaults."""
        ...

    def execute(self, pc: PreparedCall, *, mode: str = "timed", **launch_kw: Any) -> Any:
        """The second aclnn phase: record the kernel with ``pc``'s tiling and return the
        :class:`~aicore_sim.sim.recording.Recording` (``outputs`` by output name; one that
        :func:`aicore_sim.sim.launch.launch` ran to its end does too). ``launch_kw`` go to it
        (``races``, ``jobs``, ``check_streams``)."""
        ...

    def golden(self, inputs: dict[str, np.ndarray | None], attrs: dict[str, Any],
               pc: PreparedCall) -> dict[str, np.ndarray | None]:
        """The independent reference outputs of this call (it may follow ``pc.tiling``
        where the kernel's arithmetic order depends on it, e.g. a hidden-size chunking)."""
        ...


REQUIRED_MEMBERS: tuple[str, ...] = (
    "name", "description", "inputs", "attrs", "outputs", "aclnn_name", "equivalence_matrix",
    "cases", "case_specs", "case_inputs", "case_row", "matrix_case", "atk_call", "infer_outputs",
    "tiling", "prepare", "execute", "golden",
)


@dataclass(frozen=True)
class KernelLaunch:
    """The ``PreparedCall.state`` :meth:`OpModelBase.execute` launches: the kernel entry, the
    call's inputs by name, the platform, and the kernel's arguments after the tiling."""

    kernel: Callable[..., None]
    inputs: Mapping[str, np.ndarray | None]
    platform: Any
    args: tuple[Any, ...] = ()


class OpModelBase:
    """Defaults for the :class:`OpModel` members most operators do not need, so that a new
    operator writes only its own: ``name``, ``description``, ``inputs``, ``attrs``,
    ``outputs``, ``cases``, ``case_specs``, ``infer_outputs``, ``prepare`` and ``golden``. By
    default a case's inputs are drawn as a case file's are (:func:`draw_inputs`), ``tiling`` is
    ``prepare`` on the shapes alone, ``execute`` launches the kernel of a :class:`KernelLaunch`
    as aclnn does, there are no ATK records, no tiling space (no ``sweep`` / ``search``), no
    equivalence matrix, and ``aicore-sim cases`` shows each input's shape and dtype and each
    attribute."""

    aclnn_name: str | None = None
    tiling_space: Any = None  # a TilingSpace
    equivalence_matrix: Path | None = None
    matrix_axes: Mapping[str, Any] = MappingProxyType({})

    def case_row(self, case: Any) -> dict[str, str]:
        """Each input as ``shape dtype`` (``-`` when absent), then each attribute."""
        specs, attrs = self.case_specs(case)  # type: ignore[attr-defined]
        row = {k: "-" if s is None else "x".join(map(str, s[0])) + f" {np.dtype(s[1])}"
               for k, s in specs.items()}
        row.update((k, "-" if v is None else str(v)) for k, v in attrs.items())
        return row

    def case_inputs(self, case: Any, seed: int | None = None) -> dict[str, np.ndarray | None]:
        """Seeded draws in each input's ``value_range`` (:func:`draw_inputs`)."""
        return draw_inputs(self.case_specs(case)[0],  # type: ignore[attr-defined]
                           {t.name: t.value_range for t in self.inputs},  # type: ignore
                           case.seed if seed is None else seed)

    def tiling(self, input_specs: dict[str, Spec | None], attrs: Any, platform: Any
               ) -> dict[str, Any]:
        """``prepare`` on inputs of these shapes and dtypes (zero-strided: no memory) and
        ``attrs`` (a list: the values of IR attributes 0, 1, ...); an argument or a tiling
        ``prepare`` refuses with an aclnn code is ``failed`` with its message."""
        if not isinstance(attrs, Mapping):
            attrs = {a.name: v for a, v in zip(self.attrs, attrs)}  # type: ignore
        arrays = {k: None if s is None else np.broadcast_to(np.zeros((), s[1]), s[0])
                  for k, s in input_specs.items()}
        try:
            pc = self.prepare(arrays, attrs, platform)  # type: ignore[attr-defined]
        except Exception as e:
            if getattr(e, "code", None) is None:
                raise
            return {"status": "failed", "tiling_key": None, "tiling_data": None,
                    "workspace": [], "block_dim": None, "error": str(e)}
        return {"status": "success", "tiling_key": pc.tiling_key, "tiling_data":
                None if pc.tiling is None else pc.tiling.as_dict(),
                "workspace": [pc.workspace_size], "block_dim": pc.block_dim, "error": None}

    def execute(self, pc: PreparedCall, *, mode: str = "timed", **launch_kw: Any) -> Any:
        """The launch aclnn makes of ``pc.state``, a :class:`KernelLaunch`: the kernel gets
        the GM addresses of every input and output in IR order (``None`` for an absent one)
        and of the workspace (``None`` when ``pc.workspace_size`` is 0), then ``pc.tiling``
        and the launch's ``args``. Outputs start as zeros; the workspace is not delivered."""
        from aicore_sim.sim.recording import Recording

        kl: KernelLaunch = pc.state
        tensors, outputs = launch_tensors(kl.inputs, pc.out_shapes)
        if pc.workspace_size:
            tensors["workspace"] = np.zeros(pc.workspace_size, np.uint8)
            outputs["workspace"] = (np.dtype(np.uint8), (pc.workspace_size,))
        names = [t.name for t in (*self.inputs, *self.outputs)]  # type: ignore[attr-defined]
        gm = [n if n in tensors else None for n in (*names, "workspace")]
        return Recording(kl.kernel, [*gm, pc.tiling, *kl.args], tensors, outputs, kl.platform,
                         block_dim=pc.block_dim, mode=mode, scratch=("workspace",), **launch_kw)

    def matrix_case(self, mc: Any) -> Any:
        raise ValueError(f"op {self.name} has no equivalence matrix "  # type: ignore[attr-defined]
                         "(rule matrix_op)")

    def atk_call(self, tensors: dict[str, Any], attrs: dict[str, Any], seed: int
                 ) -> dict[str, Any]:
        raise ValueError(f"op {self.name} reads no ATK records "  # type: ignore[attr-defined]
                         "(rule atk_op)")


# --------------------------------------------------------------------------------------------
# The one call -> golden -> compare path
# --------------------------------------------------------------------------------------------


def call(model: OpModel, inputs: dict[str, np.ndarray | None], attrs: dict[str, Any],
         platform: Any, *, mode: str = "timed", tiling: tuple[Any, int | None, int | None]
         | None = None, **launch_kw: Any) -> tuple[PreparedCall, Any]:
    """Both aclnn phases of one call: ``(prepared call, Recording)``; the recording's
    ``compare()`` compares with the op's golden for this call.

    ``tiling`` ``(record, key, block dim)`` replaces the host tiling (a sweep point's); the
    operator's checks still run on the arguments first.
    """
    pc = model.prepare(inputs, attrs, platform)
    if tiling is not None:
        pc = pc.with_tiling(*tiling)
    rec = model.execute(pc, mode=mode, **launch_kw)
    rec.expected = lambda: model.golden(inputs, attrs, pc)
    return pc, rec


def launch_tensors(inputs: Mapping[str, np.ndarray | None],
                   out_shapes: Mapping[str, Spec | None]) -> tuple[dict[str, np.ndarray],
                                                                   dict[str, Any]]:
    """The GM tensors of a launch (each present input, contiguous, and a zeroed array of each
    produced output; an output not asked for is a null ``GM_ADDR``) and the outputs a
    :class:`~aicore_sim.sim.recording.Recording` reads back, as ``(dtype, shape)``."""
    tensors = {k: np.ascontiguousarray(v) for k, v in inputs.items() if v is not None}
    outputs: dict[str, Any] = {}
    for name, spec in out_shapes.items():
        if spec is not None:
            tensors[name] = np.zeros(spec[0], spec[1])
            outputs[name] = (np.dtype(spec[1]), tuple(spec[0]))
    return tensors, outputs


def draw_inputs(specs: Mapping[str, Spec | None], ranges: Mapping[str, tuple[float, float]],
                seed: int) -> dict[str, np.ndarray | None]:
    """Seeded random inputs of these ``(shape, dtype)`` (``None`` = absent): floats uniform in
    the input's range (default ``[-2, 2)``), integers a random permutation of ``[0, size)``."""
    rng = np.random.default_rng(seed)
    out: dict[str, np.ndarray | None] = {}
    for name, spec in specs.items():
        if spec is None:
            out[name] = None
            continue
        shape, dtype = spec[0], np.dtype(spec[1])
        size = int(np.prod(shape, dtype=np.int64))
        if dtype.kind in "iu":
            out[name] = rng.permutation(size).astype(dtype).reshape(shape)
            continue
        lo, hi = ranges.get(name, (-2.0, 2.0))
        v = rng.random(size, dtype=np.float32) * np.float32(hi - lo) + np.float32(lo)
        out[name] = v.astype(dtype).reshape(shape)
    return out


def retiled_state(pc: PreparedCall) -> Any:
    """The executor in ``pc.state`` with the tiling ``pc`` carries (a sweep may have overridden
    tiling data, key or block dim after ``prepare``); unchanged when they still agree.

    The executor needs a dataclass field ``tiling`` holding a dataclass with ``tiling_data``,
    ``tiling_key`` and ``block_dim`` (the host tiling result)."""
    ex = pc.state
    tr = ex.tiling
    if (pc.tiling, pc.tiling_key, pc.block_dim) == (tr.tiling_data, tr.tiling_key, tr.block_dim):
        return ex
    return replace(ex, tiling=replace(tr, tiling_data=pc.tiling, tiling_key=pc.tiling_key,
                                      block_dim=pc.block_dim))

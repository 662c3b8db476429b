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
(the attributes' declared defaults, then checks, error codes, tiling) -> ``execute`` (the
kernel launch's :class:`~aicore_sim.sim.recording.Recording`) -> ``golden`` ->
``Recording.compare`` (value for value, or by a verify standard). *Launch* means one thing
here and everywhere in the package: one kernel launch on the simulated chip (a
:class:`KernelLaunch`, recorded by :meth:`OpModelBase.execute`).
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
    "call_attrs",
    "draw_inputs",
    "launch_tensors",
    "op_function",
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
    ``workspace_size``: bytes the op asked for. ``state``: what ``execute`` launches (a
    :class:`KernelLaunch` for :meth:`OpModelBase.execute`), opaque to generic code. A sweep
    replaces ``tiling`` / ``tiling_key`` / ``block_dim`` (see :meth:`with_tiling`) and the
    op's ``execute`` launches with the replacement.
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
    def of(cls, op: str, out_shapes: Mapping[str, Spec | None], tr: Any, launch: KernelLaunch,
           warnings: tuple[str, ...] = ()) -> PreparedCall:
        """The call a host tiling's result ``tr`` (``tiling_data``, ``tiling_key``,
        ``block_dim``, ``workspace``, ``warnings``) prepares for ``launch``; the workspace is
        the tiling's first (0 when it asks for none)."""
        return cls(op, dict(out_shapes), tr.tiling_data, tr.tiling_key, tr.block_dim,
                   int(tr.workspace[0]) if tr.workspace else 0, launch,
                   tuple(tr.warnings) + tuple(warnings))

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

    def execute(self, pc: PreparedCall, *, mode: str = "timed", **record_kw: Any) -> Any:
        """The second aclnn phase: record the kernel with ``pc``'s tiling and return the
        :class:`~aicore_sim.sim.recording.Recording` (``outputs`` by output name; one that
        :func:`aicore_sim.sim.launch.launch` ran to its end does too). ``record_kw`` go to it
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
    """One kernel launch on the simulated chip, as aclnn's second phase makes it: the
    ``PreparedCall.state`` :meth:`OpModelBase.execute` records.

    ``kernel``: the ``__global__`` entry (``None``: the call launches nothing, e.g. empty
    tensors; the outputs are delivered as they are). ``inputs``: the call's inputs by name.
    ``args``: the kernel's arguments after the tiling (and after the tiling key when
    ``tiling_key``: a port whose entry branches on ``TILING_KEY_IS`` takes it as an argument).
    ``workspace``: the kernel gets the workspace's GM address (``False``: a null one, for a
    kernel that never reads it). ``outputs``: the caller's preallocated output arrays by name:
    the GM content they start with, filled in where the kernel writes."""

    kernel: Callable[..., None] | None
    inputs: Mapping[str, np.ndarray | None]
    platform: Any
    args: tuple[Any, ...] = ()
    tiling_key: bool = False
    workspace: bool = True
    outputs: Mapping[str, np.ndarray | None] = field(default_factory=dict)


class OpModelBase:
    """Defaults for the :class:`OpModel` members most operators do not need, so that a new
    operator writes only its own: ``name``, ``description``, ``inputs``, ``attrs``,
    ``outputs``, ``cases``, ``case_specs``, ``infer_outputs``, ``get_workspace_size`` (aclnn's
    first phase on attributes with their defaults applied) and ``golden``. By default
    ``prepare`` applies the attributes' declared defaults (and :meth:`default_attrs`) once,
    then calls ``get_workspace_size``; a case's inputs are drawn as a case file's are
    (:func:`draw_inputs`), ``tiling`` is ``prepare`` on the shapes alone, ``execute`` records
    the :class:`KernelLaunch` ``prepare`` put in the call as aclnn launches it (no op needs
    numerics in timing-only mode, no instruction bound), there are no ATK records, no tiling
    space (no ``sweep`` / ``search``), no equivalence matrix, and ``aicore-sim cases`` shows
    each input's shape and dtype and each attribute."""

    aclnn_name: str | None = None
    tiling_space: Any = None  # a TilingSpace
    equivalence_matrix: Path | None = None
    matrix_axes: Mapping[str, Any] = MappingProxyType({})

    # -- attributes ------------------------------------------------------------------------------

    def default_attrs(self, input_specs: Mapping[str, Spec | None], attrs: dict[str, Any]
                      ) -> dict[str, Any]:
        """The hook for defaults that depend on the inputs (e.g. a top-K from probs' shape):
        ``attrs`` with the declared defaults already applied; unchanged by default."""
        return attrs

    def full_attrs(self, input_specs: Mapping[str, Spec | None], attrs: Mapping[str, Any]
                   ) -> dict[str, Any]:
        """``attrs`` with every declared attribute a case left out at its ``AttrSpec``
        default, then :meth:`default_attrs`; attributes not declared pass through."""
        full = {a.name: attrs[a.name] if a.name in attrs else a.default
                for a in self.attrs}  # type: ignore[attr-defined]
        full.update((k, v) for k, v in attrs.items() if k not in full)
        return self.default_attrs(input_specs, full)

    def prepare(self, inputs: dict[str, np.ndarray | None], attrs: Mapping[str, Any],
                platform: Any) -> PreparedCall:
        """aclnn's first phase: :meth:`full_attrs`, then the op's ``get_workspace_size``."""
        return self.get_workspace_size(  # type: ignore[attr-defined]
            inputs, self.full_attrs(_specs(inputs), attrs), platform)

    # -- the launch ------------------------------------------------------------------------------

    def needs_numerics(self, pc: PreparedCall) -> bool:
        """Whether the kernel's control flow reads values only vector arithmetic produces for
        this call (then a timing-only launch is recorded with numerics: docs/model.md)."""
        return False

    def instruction_bound(self, pc: PreparedCall) -> int | None:
        """An upper estimate of the instructions the launch records, from its tiling (checked
        against the memory available before any work; ``None``: no estimate)."""
        return None

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

    def execute(self, pc: PreparedCall, *, mode: str = "timed", workspace_size: int | None = None,
                **record_kw: Any) -> Any:
        """aclnn's second phase: the kernel launch of ``pc.state``, a :class:`KernelLaunch`,
        recorded (``workspace_size``, when given, is the caller's: less than the first phase
        asked for is aclnn's 161002). The kernel gets the GM addresses of every input and
        output in IR order (``None`` for an absent one) and of the workspace (``None`` when
        ``pc.workspace_size`` is 0 or the launch takes none), then ``pc.tiling`` (and
        ``pc.tiling_key``) and the launch's ``args``. Outputs start as the caller's arrays or
        zeros; the workspace is not delivered. A timing-only launch of a call that
        :meth:`needs_numerics` is recorded with them; :meth:`instruction_bound` bounds it.
        ``record_kw`` go to :class:`~aicore_sim.sim.recording.Recording`."""
        from aicore_sim.sim.recording import Recording

        if workspace_size is not None:
            from aicore_sim.ascendc.host import aclnn_workspace

            aclnn_workspace(workspace_size, pc.workspace_size)
        kl: KernelLaunch = pc.state
        given = {k: v for k, v in kl.outputs.items() if v is not None}
        tensors, outputs = launch_tensors(kl.inputs, pc.out_shapes, given)
        if kl.kernel is None:  # nothing launched: the outputs as they are
            return Recording.nothing(mode, kl.platform,
                                     {k: tensors[k] for k in pc.out_shapes if k in tensors})
        if mode == "timing-only" and self.needs_numerics(pc):
            mode = "timed"
        if pc.workspace_size and kl.workspace:
            tensors["workspace"] = np.zeros(pc.workspace_size, np.uint8)
            outputs["workspace"] = (np.dtype(np.uint8), (pc.workspace_size,))
        names = [t.name for t in (*self.inputs, *self.outputs)]  # type: ignore[attr-defined]
        gm = [n if n in tensors else None for n in (*names, "workspace")]
        args = [*gm, pc.tiling, *((pc.tiling_key,) if kl.tiling_key else ()), *kl.args]
        return Recording(kl.kernel, args, tensors, outputs, kl.platform, block_dim=pc.block_dim,
                         mode=mode, scratch=("workspace",), into=given or None,
                         instructions=self.instruction_bound(pc), **record_kw)

    def run_case(self, case: Any, platform: Any = "ascend910b1", mode: str = "timed",
                 seed: int | None = None, **record_kw: Any
                 ) -> tuple[dict[str, np.ndarray | None], Any, dict[str, np.ndarray | None]]:
        """A bundled case (by name, or a case) on its seeded inputs: ``(outputs by name,
        Recording, inputs)``."""
        from aicore_sim.sim.platform import load_platform

        if isinstance(case, str):
            case = _lookup(self.cases(), case)  # type: ignore[attr-defined]
        inputs = self.case_inputs(case, seed)
        _, rec = call(self, inputs, self.case_specs(case)[1],  # type: ignore[arg-type]
                      load_platform(platform), mode=mode, **record_kw)
        return {t.name: rec.outputs.get(t.name) for t in self.outputs}, rec, inputs  # type: ignore

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
         | None = None, prepared: PreparedCall | None = None, **record_kw: Any
         ) -> tuple[PreparedCall, Any]:
    """Both aclnn phases of one call: ``(prepared call, Recording)``; the recording's
    ``compare()`` compares with the op's golden for this call. ``prepared``: the first phase
    already made (its result, for these inputs and attributes).

    ``tiling`` ``(record, key, block dim)`` replaces the host tiling (a sweep point's); the
    operator's checks still run on the arguments first.
    """
    attrs = call_attrs(model, inputs, attrs)  # the defaults the golden reads too
    pc = model.prepare(inputs, attrs, platform) if prepared is None else prepared
    if tiling is not None:
        pc = pc.with_tiling(*tiling)
    rec = model.execute(pc, mode=mode, **record_kw)
    rec.expected = lambda: model.golden(inputs, attrs, pc)
    return pc, rec


def call_attrs(model: Any, inputs: Mapping[str, Any], attrs: Mapping[str, Any]
               ) -> dict[str, Any]:
    """The attributes of a call as the op sees them: ``attrs`` with the declared defaults
    applied (:meth:`OpModelBase.full_attrs`; a model not derived from it gets them as given)."""
    if isinstance(model, OpModelBase):
        return model.full_attrs(_specs(inputs), attrs)
    return dict(attrs)


def _specs(inputs: Mapping[str, Any]) -> dict[str, Spec | None]:
    """``(shape, dtype)`` of each input (``None`` when absent; of anything else, what it has:
    the op's checks refuse what is not an array)."""
    return {k: None if v is None else (getattr(v, "shape", None), getattr(v, "dtype", None))
            for k, v in inputs.items()}


def _lookup(cases: Mapping[str, Any], name: str) -> Any:
    try:
        return cases[name]
    except KeyError:
        raise KeyError(f"unknown case {name!r}; bundled: {', '.join(cases)}") from None


def op_function(model: OpModelBase) -> Callable[..., Any]:
    """The Python convenience call of ``model``, generated from its contract: the inputs
    positionally in IR order (or by name; an optional one defaults to ``None``), attributes by
    name (left out: their declared defaults), the caller's preallocated outputs by output name,
    then ``platform`` (name or :class:`~aicore_sim.sim.platform.Platform`), ``mode`` and the
    launch's keywords (``races``, ``jobs``, ``auto_sync``, ``check_streams``). Both aclnn
    phases in one call; returns ``(outputs by name, Recording)``; a refused argument raises
    the op's :class:`~aicore_sim.ascendc.host.AclnnError`."""
    in_names = [t.name for t in model.inputs]  # type: ignore[attr-defined]
    attr_names = {a.name for a in model.attrs}  # type: ignore[attr-defined]
    out_names = [t.name for t in model.outputs]  # type: ignore[attr-defined]

    def function(*tensors: Any, platform: Any = "ascend910b1", mode: str = "timed",
                 **kw: Any) -> tuple[dict[str, np.ndarray | None], Any]:
        from aicore_sim.sim.platform import load_platform

        if len(tensors) > len(in_names):
            raise TypeError(f"{model.name}() takes {len(in_names)} inputs "  # type: ignore
                            f"({', '.join(in_names)}), got {len(tensors)}")
        inputs = dict(zip(in_names, tensors))
        inputs.update((n, kw.pop(n, None)) for n in in_names[len(tensors):])
        attrs = {n: kw.pop(n) for n in list(kw) if n in attr_names}
        given = {n: kw.pop(n) for n in list(kw) if n in out_names}
        plat = load_platform(platform)
        pc = model.prepare(inputs, attrs, plat)
        if given:
            pc = replace(pc, state=replace(pc.state, outputs=_checked_outputs(pc, given)))
        _, rec = call(model, inputs, attrs, plat, mode=mode,  # type: ignore[arg-type]
                      prepared=pc, **kw)
        return {n: rec.outputs.get(n) for n in out_names}, rec

    function.__name__ = function.__qualname__ = model.name  # type: ignore[attr-defined]
    function.__doc__ = (f"{model.description}: {op_function.__doc__.split(': ', 1)[1]}"
                        f"\n\nInputs: {', '.join(in_names)}; attributes: "
                        f"{', '.join(sorted(attr_names))}; outputs: {', '.join(out_names)}.")
    return function


def _checked_outputs(pc: PreparedCall, given: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """The caller's preallocated outputs, each checked against its output's shape and dtype
    (:func:`aicore_sim.ascendc.host.aclnn_out`)."""
    from aicore_sim.ascendc.host import aclnn_out

    checked = {n: aclnn_out(f"{n}_out", a, pc.out_shapes.get(n)) for n, a in given.items()}
    return {n: a for n, a in checked.items() if a is not None}


def launch_tensors(inputs: Mapping[str, np.ndarray | None],
                   out_shapes: Mapping[str, Spec | None],
                   given: Mapping[str, np.ndarray] | None = None
                   ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """The GM tensors of a launch (each present input, contiguous; each output the caller
    ``given`` as it is, else a zeroed array of each produced output; an output neither given
    nor produced is a null ``GM_ADDR``) and the outputs a
    :class:`~aicore_sim.sim.recording.Recording` reads back, as ``(dtype, shape)``."""
    given = given or {}
    tensors = {k: np.ascontiguousarray(v) for k, v in inputs.items() if v is not None}
    outputs: dict[str, Any] = {}
    for name, spec in out_shapes.items():
        if name in given:
            tensors[name] = np.ascontiguousarray(given[name])
        elif spec is not None:
            tensors[name] = np.zeros(spec[0], spec[1])
        if spec is not None:
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

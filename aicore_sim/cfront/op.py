"""``cpp_kernel``: the user's own Ascend C kernel as an operator, described by its case file.

Step of the flow: the *case* and the *launch* of a kernel no bundled operator models. The case
file names the C++ source, its ``extern "C"`` entry, its GM tensors and tiling; this model
compiles the source against the shim (:mod:`aicore_sim.cfront.build`) and launches it through
the same :class:`~aicore_sim.sim.recording.Recording` as every op, so ``run``, ``verify``,
``diff``, ``--slack`` and the msprof CSVs apply unchanged.

Case file (JSON; relative paths are relative to the case file)::

    {
      "op": "cpp_kernel",
      "name": "add_fp16",                         (optional; default: file stem)
      "kernel_source": "add_custom.cpp",          (a .cpp file)
      "entry": "add_custom",                      (extern "C" function; default: file stem)
      "include_dirs": ["inc"], "defines": {"N": "4"},
      "tensors": [                                (the entry's GM_ADDR parameters, in order)
        {"name": "x", "shape": [4096], "dtype": "float16", "role": "input",
         "data": {"range": [-2, 2], "seed": 1}},  (or {"npy": "x.npy"}; default: seeded)
        {"name": "z", "shape": [4096], "dtype": "float16", "role": "output"},
        {"name": "ws", "shape": [64], "dtype": "uint8", "role": "workspace"}
      ],
      "tiling": {"header": "add_custom_tiling.h", "struct": "AddCustomTilingData",
                 "values": {"totalLength": 4096, "tileNum": 8}},
        or   {"callable": "tiling.py:make_tiling", "header": "..."},
      "block_dim": 8, "tiling_key": 0,
      "golden": "golden.py:golden",               (inputs dict -> outputs dict; numpy)
        or "expected": {"z": "z.npy"},
      "platform": "ascend910b1", "mode": "timed", "data": {"seed": 0}
    }

The entry receives the tensors' ``GM_ADDR`` in the listed order, then the tiling pointer when
the case has a ``tiling``. Each tensor ``t`` also gives the macro ``DTYPE_<T>`` (its C++
element type). A tiling ``callable`` is called as ``fn(specs, platform)`` (``specs``: tensor
name -> ``(shape, numpy dtype)``) and returns ``(values, block_dim, tiling_key)``: ``values``
a dict of the header's fields (then ``header`` is required) or ``bytes`` (given as they are);
the case's ``block_dim`` / ``tiling_key``, when given, win. A seeded tensor without its own
``seed`` draws from ``numpy.random.default_rng([case seed, its index])``; float values are
uniform in ``range`` (default ``[-2, 2)``) then cast, integers a permutation of ``[0, size)``.
A ``module:function`` is a ``.py`` file path (relative to the case file) or a module
importable with the case file's folder on the path.

A sweep varies the header struct's integer fields (``[tiling] <field> = [...]``, nested ones
as ``"struct.field"``), ``block_dim`` and ``tiling_key``, besides platforms and what-if
platform fields (:mod:`aicore_sim.cfront.tiling_space`).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from aicore_sim.cfront.tiling_space import TILING_SPACE, TilingValues
from aicore_sim.ops.opmodel import OpModelBase, PreparedCall
from aicore_sim.sim import dtypes
from aicore_sim.sim.errors import InputError
from aicore_sim.util import schema

ROLES = ("input", "output", "workspace")
NAME = "cpp_kernel"


@dataclass(frozen=True)
class TensorDecl:
    name: str
    shape: tuple[int, ...]
    dtype: np.dtype
    role: str
    npy: Path | None = None
    seed: int | None = None
    range: tuple[float, float] = (-2.0, 2.0)


@dataclass(frozen=True)
class CppCase:
    """The validated C++ fields of a case (``attrs["cpp"]`` of its :class:`CaseFile`)."""

    base: Path
    source: Path
    entry: str
    include_dirs: tuple[Path, ...]
    defines: tuple[tuple[str, str], ...]
    tensors: tuple[TensorDecl, ...]
    header: Path | None = None
    struct: str | None = None
    values: Mapping[str, Any] = field(default_factory=dict)
    tiling_callable: str | None = None
    has_tiling: bool = False
    block_dim: int | None = None
    tiling_key: int | None = None
    golden: str | None = None
    expected: Mapping[str, Path] = field(default_factory=dict)

    def of_role(self, role: str) -> list[TensorDecl]:
        return [t for t in self.tensors if t.role == role]

    def layout(self) -> tuple[Any, str]:
        """The tiling struct (``TilingLayout``) and the C++ of every struct of the header."""
        from aicore_sim.cfront import tiling_header

        assert self.header is not None
        h = tiling_header.read([self.header])
        if self.struct is not None:
            if self.struct not in h.structs:
                raise schema.FieldError("tiling.struct", f"{self.struct!r} is not declared in "
                                        f"{self.header.name} (it declares "
                                        f"{list(h.structs)})")
            return h.structs[self.struct], h.cpp()
        if not h.structs:
            raise schema.FieldError("tiling.header", f"{self.header.name} declares no "
                                    "BEGIN_TILING_DATA_DEF struct")
        return h.struct_for(None), h.cpp()


# --------------------------------------------------------------------------------------------
# The case file
# --------------------------------------------------------------------------------------------


def _path_rule(base: Path, what: str, folder: bool = False) -> schema.Rule:
    def convert(v: str) -> Path:
        p = (base / v).resolve()
        if not (p.is_dir() if folder else p.is_file()):
            raise ValueError(f"{v}: no such {'folder' if folder else 'file'} "
                             f"({what}; relative to the case file)")
        return p
    return schema.Custom(convert, "a path (a string)", (str,))


def _func_rule(base: Path) -> schema.Rule:
    def convert(v: str) -> str:
        mod, sep, fn = v.rpartition(":")
        if not sep or not mod or not fn.isidentifier():
            raise ValueError(f"{v!r}: expected \"module:function\" or \"file.py:function\"")
        if mod.endswith(".py") and not (base / mod).is_file():
            raise ValueError(f"{mod}: no such file (relative to the case file)")
        return v
    return schema.Custom(convert, 'a "module:function" string', (str,))


def _range(v: list[float]) -> tuple[float, float]:
    if not v[0] < v[1]:
        raise ValueError(f"{v}: expected [low, high] with low < high")
    return (v[0], v[1])


def _rules(base: Path) -> schema.Table:
    data = schema.Table({
        "seed": schema.Int(minimum=0),
        "range": schema.Custom(lambda v: _range(schema.ListOf(schema.Number(), length=2)
                                                .check(v, "")), "[low, high]", (list,)),
        "npy": _path_rule(base, "the tensor's values"),
    }, what_text='an object {"seed": n, "range": [lo, hi]} or {"npy": "file.npy"}')
    tensor = schema.Table({
        "name": schema.Custom(_identifier, "a C identifier", (str,)),
        "shape": schema.ListOf(schema.Int(minimum=0), nonempty=False),
        "dtype": schema.Custom(dtypes.as_dtype, "a dtype name", (str,)),
        "role": schema.Choice(ROLES),
        "data": data,
    }, required=("name", "shape", "dtype", "role"),
        what_text='an object {"name", "shape", "dtype", "role"}')
    tiling = schema.Table({
        "header": _path_rule(base, "a tiling header with BEGIN_TILING_DATA_DEF"),
        "struct": schema.Custom(_identifier, "a C identifier", (str,)),
        "values": schema.Table({}, open=True, what_text="an object field -> value"),
        "callable": _func_rule(base),
    }, what_text='{"header": ..., "values": {...}} or {"callable": "module:function"}')
    from aicore_sim.ops.casefile import _CASE

    fields = {k: v for k, v in _CASE.fields.items() if k not in ("inputs", "attrs")}
    fields.update({
        "kernel_source": _path_rule(base, "the kernel's .cpp"),
        "entry": schema.Custom(_identifier, "a C identifier", (str,)),
        "include_dirs": schema.ListOf(_path_rule(base, "an include folder", folder=True),
                                      nonempty=False),
        "defines": schema.Table({}, open=True, what_text="an object NAME -> value"),
        "tensors": schema.ListOf(tensor),
        "tiling": tiling,
        "block_dim": schema.Int(minimum=1),
        "tiling_key": schema.Int(minimum=0),
        "golden": _func_rule(base),
        "expected": schema.Table({}, open=True, what_text="an object output -> .npy path"),
    })
    return schema.Table(fields, required=("kernel_source", "tensors"), null_is_absent=True,
                        what_text="one JSON object (a case file holds one)")


def _identifier(v: str) -> str:
    if not v.isidentifier() or not v.isascii():
        raise ValueError(f"{v!r}: not a C identifier")
    return v


def _define(k: str, v: Any) -> str:
    _identifier(k)
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, (int, float, str)):
        return str(v)
    raise schema.FieldError(f"defines.{k}", f"expected a string or a number, got "
                            f"{schema.shown(v)}")


def parse_document(doc: Mapping[str, Any], name: str, base: Path | None) -> Any:
    """A ``cpp_kernel`` case document as a :class:`~aicore_sim.ops.casefile.CaseFile`."""
    from aicore_sim.ops.casefile import DEFAULT_PLATFORM, CaseFile, InputSpec, OpSpec
    from aicore_sim.sim.platform import load_platform

    base = (base or Path.cwd()).resolve()
    top = _rules(base).check(doc, "")
    tensors: list[TensorDecl] = []
    seen: set[str] = set()
    for i, t in enumerate(top["tensors"]):
        where = f"tensors[{i}]"
        if t["name"] in seen:
            raise schema.FieldError(f"{where}.name", f"{t['name']!r} is given twice")
        seen.add(t["name"])
        d = t.get("data", {})
        if d and t["role"] != "input":
            raise schema.FieldError(f"{where}.data", f"only an input has data (this one is "
                                    f"an {t['role']})")
        if "npy" in d and len(d) > 1:
            raise schema.FieldError(f"{where}.data", "npy takes no seed or range")
        tensors.append(TensorDecl(t["name"], tuple(t["shape"]), t["dtype"], t["role"],
                                  d.get("npy"), d.get("seed"), d.get("range", (-2.0, 2.0))))
    if not any(t.role == "output" for t in tensors):
        raise schema.FieldError("tensors", "no tensor has role output (nothing to compare)")
    entry = top.get("entry") or _identifier_of(top["kernel_source"].stem)
    defines = tuple((k, _define(k, v)) for k, v in top.get("defines", {}).items())
    tiling = top.get("tiling")
    extra: dict[str, Any] = {}
    if tiling is not None:
        if "callable" not in tiling and "header" not in tiling:
            raise schema.FieldError("tiling", "give a header (with values) or a callable")
        if "callable" in tiling and "values" in tiling:
            raise schema.FieldError("tiling.values", "the callable gives the values; not both")
        extra = {"header": tiling.get("header"), "struct": tiling.get("struct"),
                 "values": dict(tiling.get("values", {})),
                 "tiling_callable": tiling.get("callable"), "has_tiling": True}
    outputs = {t.name for t in tensors if t.role == "output"}
    expected = {}
    for k, v in top.get("expected", {}).items():
        if k not in outputs:
            raise schema.FieldError(f"expected.{k}", f"not an output (outputs: "
                                    f"{sorted(outputs)})")
        expected[k] = _path_rule(base, "the expected output").check(v, f"expected.{k}")
    if "golden" in top and expected:
        raise schema.FieldError("expected", "give golden or expected, not both")
    spec = CppCase(base, top["kernel_source"], entry, tuple(top.get("include_dirs", ())),
                   defines, tuple(tensors), block_dim=top.get("block_dim"),
                   tiling_key=top.get("tiling_key"), golden=top.get("golden"),
                   expected=expected, **extra)
    if spec.header is not None:
        layout, _ = spec.layout()
        known = layout.names()
        for k in spec.values:
            if k not in known:
                raise schema.FieldError(f"tiling.values.{k}", f"not a field of {layout.name} "
                                        f"(fields: {known})")
            v = spec.values[k]
            if isinstance(v, bool) or not isinstance(v, (int, float, list)):
                raise schema.FieldError(f"tiling.values.{k}", f"expected a number (or a "
                                        f"list for an array), got {schema.shown(v)}")
    inputs = [t for t in tensors if t.role == "input"]
    op = OpSpec(NAME, tuple(t.name for t in inputs), tuple(t.name for t in inputs), ("cpp",),
                tuple(sorted(outputs, key=[t.name for t in tensors].index)), ("str",),
                tuple(t.range for t in inputs))
    platform = top.get("platform") or load_platform(DEFAULT_PLATFORM)
    return CaseFile(top.get("name", name), op,
                    {t.name: InputSpec(t.shape, t.dtype) for t in inputs}, {"cpp": spec},
                    platform, top.get("mode"), top.get("data", {}).get("seed", 0),
                    top.get("description", ""), dict(doc))


def _identifier_of(stem: str) -> str:
    try:
        return _identifier(stem)
    except ValueError:
        raise schema.FieldError("entry", f"missing, and the file stem {stem!r} is not a C "
                                "identifier; name the extern \"C\" function") from None


def load_function(spec: str, base: Path) -> Any:
    """``module:function`` or ``file.py:function`` (relative to ``base``)."""
    mod, _, fn = spec.rpartition(":")
    try:
        if mod.endswith(".py"):
            path = (base / mod).resolve()
            name = f"aicore_sim_user_{abs(hash(str(path)))}"
            module = sys.modules.get(name)
            if module is None:
                s = importlib.util.spec_from_file_location(name, path)
                module = importlib.util.module_from_spec(s)  # type: ignore[arg-type]
                s.loader.exec_module(module)  # type: ignore[union-attr]
                sys.modules[name] = module
        else:
            sys.path.insert(0, str(base))
            try:
                module = importlib.import_module(mod)
            finally:
                sys.path.remove(str(base))
    except Exception as e:  # the user's module failed to import
        raise InputError(f"{spec}: cannot import {mod} ({type(e).__name__}: {e})") from None
    f = getattr(module, fn, None)
    if not callable(f):
        raise InputError(f"{spec}: {mod} has no function {fn}")
    return f


# --------------------------------------------------------------------------------------------
# The model
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CppLaunch:
    spec: CppCase
    inputs: Mapping[str, np.ndarray | None]
    platform: Any


class CppKernelModel(OpModelBase):
    """The operator of a case file's own C++ kernel (see the module docstring)."""

    name = NAME
    description = "the case file's own Ascend C kernel, compiled against aicore-sim's shim"
    inputs = ()
    attrs = ()
    outputs = ()

    # -- the case file ----------------------------------------------------------------------
    def parse_case_document(self, doc: Mapping[str, Any], name: str, base: Path | None
                            ) -> Any:
        return parse_document(doc, name, base)

    def case_file_data(self, cf: Any, seed: int | None = None
                       ) -> dict[str, np.ndarray | None]:
        from aicore_sim.ops.opmodel import draw_inputs

        spec: CppCase = cf.attrs["cpp"]
        case_seed = cf.seed if seed is None else seed
        out: dict[str, np.ndarray | None] = {}
        for i, t in enumerate(spec.tensors):
            if t.role != "input":
                continue
            if t.npy is not None:
                try:
                    out[t.name] = dtypes.read_npy(t.npy, t.shape, t.dtype)
                except (OSError, ValueError) as e:
                    raise InputError(f"tensors[{i}].data.npy: {t.npy.name}: {e}") from None
                continue
            s = t.seed if t.seed is not None else [case_seed, i]
            rng_seed = int(np.random.SeedSequence(s).generate_state(1)[0])
            out[t.name] = draw_inputs({t.name: (t.shape, t.dtype)}, {t.name: t.range},
                                      rng_seed)[t.name]
        return out

    # -- OpModel members --------------------------------------------------------------------
    @property
    def tiling_space(self) -> Any:
        return TILING_SPACE

    def cases(self) -> dict[str, Any]:
        return {}

    def case_specs(self, case: Any) -> tuple[dict, dict]:
        return {}, {}

    def infer_outputs(self, input_specs: dict, attrs: dict) -> dict:
        spec: CppCase = attrs["cpp"]
        return {t.name: (t.shape, t.dtype) for t in spec.of_role("output")}

    def prepare(self, inputs: dict[str, np.ndarray | None], attrs: dict[str, Any],
                platform: Any) -> PreparedCall:
        spec: CppCase = attrs["cpp"]
        tiling: TilingValues | None = None
        block_dim, key = spec.block_dim, spec.tiling_key
        if spec.tiling_callable is not None:
            fn = load_function(spec.tiling_callable, spec.base)
            specs = {t.name: (t.shape, t.dtype) for t in spec.tensors}
            try:
                values, bd, k = fn(specs, platform)
            except (TypeError, ValueError) as e:
                raise InputError(f"tiling.callable {spec.tiling_callable}: {e} (it returns "
                                 "(values, block_dim, tiling_key))") from None
            if isinstance(values, (bytes, bytearray)):
                tiling = TilingValues(None, bytes(values))
            elif isinstance(values, Mapping):
                if spec.header is None:
                    raise InputError(f"tiling.callable {spec.tiling_callable} returned field "
                                     "values: tiling.header must name the struct's header")
                tiling = TilingValues(dict(values))
            else:
                raise InputError(f"tiling.callable {spec.tiling_callable}: values must be a "
                                 f"dict or bytes, got {type(values).__name__}")
            block_dim = int(bd) if block_dim is None else block_dim
            key = int(k) if key is None else key
        else:  # no tiling: an empty record (a launch's tiling is never None: the golden runs)
            tiling = TilingValues(dict(spec.values))
        return PreparedCall(NAME, self.infer_outputs({}, attrs), tiling,
                            0 if key is None else key, 1 if block_dim is None else block_dim,
                            0, CppLaunch(spec, dict(inputs), platform))

    def execute(self, pc: PreparedCall, *, mode: str = "timed", **record_kw: Any) -> Any:
        from aicore_sim.cfront.kernel import KernelSource
        from aicore_sim.ops.opmodel import launch_tensors
        from aicore_sim.sim.recording import Recording

        st: CppLaunch = pc.state
        spec = st.spec
        tensors, outputs = launch_tensors(st.inputs, pc.out_shapes)
        for t in spec.of_role("workspace"):
            tensors[t.name] = np.zeros(t.shape, t.dtype)
            outputs[t.name] = (np.dtype(t.dtype), tuple(t.shape))
        layout_cpp, layout_name, raw = "", None, None
        tv: TilingValues | None = pc.tiling
        if spec.header is not None:
            layout, layout_cpp = spec.layout()
            layout_name = layout.name
        if tv is not None and spec.has_tiling:
            if tv.values is not None:
                if spec.header is None:
                    raise InputError("tiling: field values need tiling.header")
                values = _nest(tv.values)
                raw = layout.pack(values)
            else:
                raw = tv.raw or b""
        given = record_kw.pop("kernel_source", None)  # run --kernel-src: another .cpp
        src = KernelSource(spec.source if given is None else given.path, spec.include_dirs,
                           spec.defines)
        dts = {f"DTYPE_{t.name.upper()}": t.dtype for t in spec.tensors}
        kernel = src.kernel_for_entry(spec.entry, [t.name for t in spec.tensors], raw,
                                      pc.tiling_key or 0, st.platform, layout_cpp=layout_cpp,
                                      layout_name=layout_name, dtypes=dts)
        args = [t.name for t in spec.tensors] + ([None] if raw is not None else [])
        return Recording(kernel, args, tensors, outputs, st.platform, block_dim=pc.block_dim,
                         mode=mode, scratch=tuple(t.name for t in spec.of_role("workspace")),
                         **record_kw)

    def golden(self, inputs: dict[str, np.ndarray | None], attrs: dict[str, Any],
               pc: PreparedCall) -> dict[str, np.ndarray | None]:
        spec: CppCase = attrs["cpp"]
        outs = spec.of_role("output")
        if spec.golden is not None:
            got = load_function(spec.golden, spec.base)(dict(inputs))
            if not isinstance(got, Mapping):
                raise InputError(f"golden {spec.golden}: returned {type(got).__name__}, not a "
                                 "dict output name -> array")
            return {t.name: None if got.get(t.name) is None else np.asarray(got[t.name])
                    for t in outs}
        if spec.expected:
            return {t.name: (dtypes.read_npy(spec.expected[t.name], t.shape, t.dtype)
                             if t.name in spec.expected else None) for t in outs}
        return {}


def _nest(values: Mapping[str, Any]) -> dict[str, Any]:
    """``a.b`` names (nested struct fields) as nested dicts, for ``TilingLayout.pack``."""
    out: dict[str, Any] = {}
    for k, v in values.items():
        parts = k.split(".")
        d = out
        for p in parts[:-1]:
            d = d.setdefault(p, {})
        d[parts[-1]] = v
    return out


MODEL = CppKernelModel()

__all__ = ["MODEL", "CppCase", "CppKernelModel", "TensorDecl", "TilingValues", "load_function",
           "parse_document"]

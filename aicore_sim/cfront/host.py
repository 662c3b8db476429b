"""An operator's host tiling C++, compiled against the CANN host shim and called per launch.

Step of the flow: where a Python port's tiling would run (``op_host`` of the flow), an
operator's own ``op_host/*tiling*.cpp`` runs instead. :class:`HostSource` names an operator's
source folder (``<op>/op_host/...``, ``<op>/op_kernel/...``, the ops-transformer layout); its
tiling sources are compiled, each to one object, against the clean-room shim of the CANN host
API (``include/cann/``: ``gert::TilingContext``, ``platform_ascendc::PlatformAscendC``, the
TilingData macros, ``OP_LOGE`` / ``OP_CHECK_IF``, the registration macros) and the tree's own
``common/include``, linked into one shared library kept in the compile cache, and called
through the C entry of ``include/cann/aicore_sim_host/runner.h``.

Every value the tiling reads comes from the case (shapes, dtypes, attributes by IR index, as
:class:`aicore_sim.ascendc.host.TilingContext` holds them) and the platform preset (core
counts, UB, L2, SoC, arch), so a platform what-if re-runs the real tiling. The answer is a
:class:`~aicore_sim.ascendc.host.TilingResult` as a port's: status, key, block dim, workspace,
and the tiling bytes read back by field name through the op's own header
(:mod:`aicore_sim.cfront.tiling_header`, the layout the kernel copies). A tiling that fails
gives the op's own error line; a crash or an exception in it is named.
"""

from __future__ import annotations

import concurrent.futures
import ctypes
import hashlib
import os
import re
import subprocess
from dataclasses import dataclass
from functools import cache, cached_property
from pathlib import Path
from typing import Any

from aicore_sim.ascendc.host import GRAPH_SUCCESS, TilingResult, canonical_dtype
from aicore_sim.cfront import tiling_header
from aicore_sim.cfront.abi import INCLUDE
from aicore_sim.cfront.build import CompileError, cache_dir, compiler, first_error
from aicore_sim.sim.errors import InputError
from aicore_sim.util.atomic import atomic_path

HOST_INCLUDE = INCLUDE / "cann"
"""The clean-room CANN host headers (package data)."""
FLAGS = ("-std=c++17", "-O1", "-g0", "-fPIC", "-w")
TILING_CAPACITY = 64 * 1024
"""Bytes of the raw tiling buffer a tiling writes into."""
_SOURCE_EXT = (".h", ".hpp", ".cpp", ".cc")
_SKIP = re.compile(r"_(def|proto)\.cpp$")


class HostTilingError(InputError):
    """The host tiling could not answer: its library lacks the op, or it crashed."""


@dataclass(frozen=True)
class HostSource:
    """An operator's source folder whose ``op_host`` tiling C++ runs in place of a port."""

    op_dir: Path

    @classmethod
    def of(cls, path: str | Path) -> HostSource:
        p = Path(path).expanduser().resolve()
        if not p.is_dir():
            raise InputError(f"--op-src: {path} is not a folder (an operator's source folder "
                             "holding op_host/ and op_kernel/)")
        if not (p / "op_host").is_dir():
            raise InputError(f"--op-src: {path} holds no op_host/ folder (the operator's host "
                             "sources: its *_tiling.cpp)")
        return cls(p)

    @property
    def host_dir(self) -> Path:
        return self.op_dir / "op_host"

    @property
    def kernel_dir(self) -> Path:
        return self.op_dir / "op_kernel"

    def sources(self) -> list[Path]:
        """The host sources: ``op_host/*tiling*.cpp`` and ``*infershape*.cpp`` (the
        definition apart), then the tree's shared host sources (``common/src/op_host``)."""
        found = sorted(p for p in self.host_dir.rglob("*.cpp")
                       if ("tiling" in p.name or "infershape" in p.name)
                       and not _SKIP.search(p.name) and p.is_file())
        if not any("tiling" in p.name for p in found):
            raise InputError(f"--op-src: {self.host_dir} holds no *tiling*.cpp (the host "
                             "tiling to compile)")
        common = self._common()
        shared = [] if common is None else sorted((common / "src" / "op_host").glob("*.cpp"))
        return found + shared

    def _common(self) -> Path | None:
        """The tree's ``common/`` folder (ops-transformer's), found upward."""
        for parent in self.op_dir.parents:
            if (parent / "common" / "include" / "op_host").is_dir():
                return parent / "common"
        return None

    def include_dirs(self) -> list[Path]:
        """The op's own folders, then the tree's ``common/include``."""
        common = self._common()
        return [self.host_dir, self.op_dir, *([] if common is None else [common / "include"])]

    def serves(self, op_type: str) -> bool:
        """Whether the compiled host tiling registers ``op_type``."""
        return op_type in self.built.op_types()

    @cached_property
    def built(self) -> HostLibrary:
        """The compiled host library (from the cache, or compiled now)."""
        return HostLibrary(build(self.sources(), self.include_dirs()))

    @cached_property
    def header(self) -> tiling_header.TilingHeader:
        """The op's tiling structs, read from its ``op_host/*tiling*.h``."""
        return tiling_header.read(tiling_header.headers_near(self.kernel_dir))

    def tiling(self, ctx: Any, platform: Any, cores: int | None = None,
               debug: bool = False) -> TilingResult:
        """The C++ tiling of ``ctx`` (a :class:`~aicore_sim.ascendc.host.TilingContext`) on
        ``platform`` (``cores``: another AIV count), as a port's :class:`TilingResult` whose
        ``tiling_data`` is read by field name through the op's header."""
        reply, raw = self.built.call(request(ctx, platform, cores, debug))
        return self.result(ctx, reply, raw)

    def infer(self, ctx: Any, outputs: int) -> tuple[list[tuple[int, ...]],
                                                    list[str | None]] | None:
        """The op's own infershape (and infer-datatype) on ``ctx``'s inputs and attributes for
        its ``outputs`` IR outputs: each output's shape and GE dtype name (``None``: no
        infer-datatype registered), or ``None`` when the sources register no infershape; a
        failure is a :class:`HostTilingError` with the op's line."""
        text = request(ctx, None)
        text += "output 0 DT_UNDEFINED 2 0\n" * max(0, outputs - len(ctx.outputs))
        reply = self.built.infer(text)
        node = ctx.node_name or ctx.OP_TYPE
        if "missing" in reply:
            return None
        errors = [text for lvl, text in reply["log"] if lvl == "E"]
        for what in ("crash", "exception"):
            if what in reply:
                raise HostTilingError(f"{node} infershape ({self.host_dir}): {what} "
                                      f"{reply[what]}")
        if reply["status"] != GRAPH_SUCCESS or reply.get("dtype_status", 0) != GRAPH_SUCCESS:
            first = errors[0] if errors else "infershape returned failure without a message"
            raise HostTilingError(f"{first} (the infershape of {self.op_dir.name}/op_host)")
        shapes = [reply["shapes"].get(i, ()) for i in range(outputs)]
        return shapes, [reply["dtypes"].get(i) for i in range(outputs)]

    def result(self, ctx: Any, reply: dict[str, Any], raw: bytes) -> TilingResult:
        node = ctx.node_name or ctx.OP_TYPE
        log = tuple(f"[{lvl}] {text}" for lvl, text in reply["log"])
        errors = [text for lvl, text in reply["log"] if lvl == "E"]
        if "missing" in reply:
            known = ", ".join(self.built.op_types()) or "none"
            raise HostTilingError(f"--op-src {self.op_dir}: its host tiling registers no "
                                  f"IMPL_OP_OPTILING({ctx.OP_TYPE}) (registered: {known})")
        if "crash" in reply:
            raise HostTilingError(f"{node} host tiling ({self.host_dir}) crashed with signal "
                                  f"{reply['crash']}" + (f" after: {errors[-1]}" if errors else ""))
        if "exception" in reply:
            raise HostTilingError(f"{node} host tiling ({self.host_dir}) threw a C++ exception: "
                                  f"{reply['exception'] or 'not a std::exception'}")
        warnings = tuple(text for lvl, text in reply["log"] if lvl == "W")
        if reply["status"] != GRAPH_SUCCESS:
            first = errors[0] if errors else "the tiling returned failure without a message"
            where = f"the host tiling of {self.op_dir.name}/op_host"
            return TilingResult("failed", error=f"{first} ({where}, status "
                                f"{reply['status']:#x})", rule="host_tiling",
                                warnings=warnings, log=log)
        data = None
        if reply["tiling_size"]:
            layout = self.header.struct_for(ctx.OP_TYPE)
            data = CxxTilingData(layout, raw[:reply["tiling_size"]])
        return TilingResult("success", reply.get("key"), data, list(reply["workspace"]),
                            reply.get("block_dim"), warnings=warnings, log=log)


class CxxTilingData:
    """Tiling bytes a C++ host tiling saved, read by field name through the op's header:
    the members a kernel port reads as attributes (nested structs as objects), ``as_dict``,
    ``flat_dict``, ``to_bytes`` (the bytes the kernel is given)."""

    def __init__(self, layout: tiling_header.TilingLayout, raw: bytes) -> None:
        self._layout = layout
        self._raw = bytes(raw[:layout.size]).ljust(layout.size, b"\0")
        self._values = layout.unpack(self._raw)
        for name, v in self._values.items():
            if isinstance(v, dict):
                field = next(f for f in layout.fields if f.name == name)
                assert field.struct is not None
                off = field.offset
                v = CxxTilingData(field.struct, self._raw[off:off + field.struct.size])
            setattr(self, name, v)

    def as_dict(self) -> dict[str, Any]:
        return dict(self._values)

    def flat_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, v in self._values.items():
            if isinstance(v, dict):
                out.update((f"{name}.{k}", x) for k, x in _flatten(v).items())
            else:
                out[name] = v
        return out

    def as_list(self) -> list[Any]:
        return list(self.flat_dict().values())

    def to_bytes(self) -> bytes:
        return self._raw


def _flatten(d: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update((f"{k}.{kk}", x) for kk, x in _flatten(v).items())
        else:
            out[k] = v
    return out


# -- the request ---------------------------------------------------------------------------------


def _hex(text: str) -> str:
    return text.encode().hex() or "-"


def _dtype_token(dtype: object) -> str:
    name = canonical_dtype(dtype)
    if isinstance(dtype, int) and not isinstance(dtype, bool):
        return f"#{dtype}"
    return name if name and name.startswith("DT_") else "DT_UNDEFINED"


def _port(desc: Any) -> str:
    shape = [] if desc is None else list(desc.shape)
    dtype = "DT_UNDEFINED" if desc is None else _dtype_token(desc.dtype)
    return f"{dtype} 2 {len(shape)} " + " ".join(str(int(d)) for d in shape)


def _attr(value: Any) -> str:
    """One attribute as the runner reads it, typed by the value held (as gert stores what the
    graph gave, whatever the IR declares at that index)."""
    if value is None:
        return "attr 0 i 0"
    if isinstance(value, bool):
        return f"attr 1 b {int(value)}"
    if isinstance(value, (list, tuple)):
        items = list(value)
        if items and all(isinstance(x, float) for x in items):
            return f"attr 1 F {len(items)} " + " ".join(float(x).hex() for x in items)
        return f"attr 1 I {len(items)} " + " ".join(str(int(x)) for x in items)
    if isinstance(value, float):
        return f"attr 1 f {value.hex()}"
    if isinstance(value, str):
        return f"attr 1 s {_hex(value)}"
    return f"attr 1 i {int(value)}"


def request(ctx: Any, platform: Any, cores: int | None = None, debug: bool = False) -> str:
    """The text request of one tiling call: the op, its node, the platform, each IR input and
    output, each attribute by IR index (the runner's format, ``runner.h``)."""
    from aicore_sim.ascendc.platform_ascendc import npu_arch
    from aicore_sim.ascendc.utils import SYSTEM_WORKSPACE_BYTES

    lines = [f"op {ctx.OP_TYPE}", f"node {_hex(ctx.node_name or ctx.OP_TYPE)}"]
    if platform is not None:
        aiv = platform.aiv_core_num if cores is None else cores
        lines.append(f"platform {platform.short_soc} {npu_arch(platform)} {aiv} "
                     f"{platform.aic_core_num} {platform.core_mem_size_ub} 0 "
                     f"{platform.l2_size} 0 0 0 {platform.hbm_size} {SYSTEM_WORKSPACE_BYTES}")
    required = [req for _, req in ctx.INPUTS] or [True] * len(ctx.inputs)
    for desc, req in zip(ctx.inputs, required):
        lines.append(f"input {int(desc is not None)} {int(req)} {_port(desc)}")
    for desc in ctx.outputs:
        lines.append(f"output {int(desc is not None)} {_port(desc)}")
    if ctx.attrs is None:
        lines.append("attrs_null")
    attrs = ctx.attrs or {}
    for i in range(max(attrs, default=-1) + 1):  # the attributes given, by IR index
        lines.append(_attr(attrs.get(i)))
    if debug:
        lines.append("debug 1")
    return "\n".join(lines) + "\n"


# -- the library -----------------------------------------------------------------------------------


class HostLibrary:
    """One compiled host library: its tiling entry, its registered tiling-data layouts."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lib = _load(str(path))

    def call(self, text: str) -> tuple[dict[str, Any], bytes]:
        reply = ctypes.create_string_buffer(1 << 20)
        tiling = ctypes.create_string_buffer(TILING_CAPACITY)
        rc = self._lib.aicore_sim_host_tiling(text.encode(), reply, len(reply), tiling,
                                              TILING_CAPACITY)
        if rc != 0:
            raise HostTilingError("host tiling: its reply (log lines) exceeded 1 MiB")
        return parse_reply(reply.value.decode(errors="replace")), tiling.raw

    def infer(self, text: str) -> dict[str, Any]:
        reply = ctypes.create_string_buffer(1 << 20)
        if self._lib.aicore_sim_host_infer(text.encode(), reply, len(reply)) != 0:
            raise HostTilingError("host infershape: its reply (log lines) exceeded 1 MiB")
        return parse_reply(reply.value.decode(errors="replace"))

    def op_types(self) -> list[str]:
        buf = ctypes.create_string_buffer(1 << 16)
        self._lib.aicore_sim_host_ops(buf, len(buf))
        return buf.value.decode().split()

    def fields(self, op_type: str) -> list[tuple[str, str, int, int, int]]:
        """The registered tiling-data class of ``op_type`` as the shim lays it out: ``(name,
        type letter, offset, element size, count)``; the first row is ``("size", ...)``."""
        buf = ctypes.create_string_buffer(1 << 16)
        self._lib.aicore_sim_host_fields(op_type.encode(), buf, len(buf))
        rows = []
        for line in buf.value.decode().splitlines():
            parts = line.split()
            if parts[0] == "size":
                rows.append(("size", "", 0, int(parts[1]), 0))
            else:
                rows.append((parts[0], parts[1], int(parts[2]), int(parts[3]), int(parts[4])))
        return rows


@cache
def _load(path: str) -> ctypes.CDLL:
    lib = ctypes.CDLL(path)
    lib.aicore_sim_host_tiling.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t,
                                           ctypes.c_char_p, ctypes.c_size_t]
    lib.aicore_sim_host_tiling.restype = ctypes.c_int
    lib.aicore_sim_host_fields.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
    lib.aicore_sim_host_ops.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    lib.aicore_sim_host_infer.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
    return lib


def parse_reply(text: str) -> dict[str, Any]:
    """The runner's text answer as a dict (``status``, ``key``, ``block_dim``,
    ``schedule_mode``, ``workspace``, ``tiling_size``, ``log``; or ``missing`` / ``crash`` /
    ``exception``)."""
    out: dict[str, Any] = {"log": [], "workspace": [], "tiling_size": 0, "shapes": {},
                           "dtypes": {}}
    for line in text.splitlines():
        what, _, rest = line.partition(" ")
        if what == "shape":
            i, _n, *dims = rest.split()
            out["shapes"][int(i)] = tuple(int(d) for d in dims)
        elif what == "dtype":
            i, name = rest.split()
            out["dtypes"][int(i)] = None if name == "UNDEFINED" else name
        elif what == "log":
            level, _, h = rest.partition(" ")
            out["log"].append((level, bytes.fromhex("" if h == "-" else h).decode(
                errors="replace")))
        elif what == "workspace":
            n, *sizes = rest.split()
            out["workspace"] = [int(s) for s in sizes[:int(n)]]
        elif what in ("missing", "exception"):
            out[what] = "" if rest == "-" else bytes.fromhex(rest).decode(errors="replace")
        elif what in ("status", "key", "block_dim", "schedule_mode", "tiling_size", "crash",
                      "dtype_status"):
            out[what] = int(rest)
    return out


# -- the build -------------------------------------------------------------------------------------


def _files(sources: list[Path], include_dirs: list[Path]) -> list[Path]:
    files: set[Path] = set(sources)
    for d in [*include_dirs, *(s.parent for s in sources)]:
        if d.is_dir():
            files.update(p for p in d.rglob("*") if p.suffix in _SOURCE_EXT and p.is_file())
    return sorted(files)


def _key(sources: list[Path], include_dirs: list[Path]) -> str:
    h = hashlib.sha256()
    cxx = compiler()
    for part in (cxx.ident, " ".join(FLAGS), repr([str(s) for s in sources]),
                 repr([str(d) for d in include_dirs])):
        h.update(part.encode() + b"\0")
    h.update(shim_key().encode())
    for p in _files(sources, include_dirs):
        h.update(str(p).encode() + b"\0" + p.read_bytes())
    return h.hexdigest()[:24]


_UNDEFINED = re.compile(r"undefined reference to [`'\u2018]([^'\u2019]+)['\u2019]")
_LACKS = (
    re.compile(r"['\u2018](?:class |struct )?([\w:]+)['\u2019] has no member named "
               r"['\u2018](\w+)['\u2019]"),
    re.compile(r"['\u2018](\w+)['\u2019] is not a member of ['\u2018]([\w:]+)['\u2019]"),
    re.compile(r"fatal error: ([\w./+-]+\.h(?:pp)?): No such file"),
)


def host_error(stderr: str) -> str:
    """The compiler's (or linker's) first error, with the host API item the shim lacks
    named."""
    m = _UNDEFINED.search(stderr)
    if m:
        return (f"{m.group(1)} is declared but defined nowhere - aicore-sim's CANN host shim "
                f"does not provide {m.group(1).split('(')[0]} yet")
    msg = first_error(stderr).split(" (docs/cpp_kernels.md")[0].replace(
        " - aicore-sim does not provide", " - aicore-sim's CANN host shim does not provide")
    for pat in _LACKS:
        m = pat.search(msg)
        if m and "std" not in m.groups():  # the C++ library is the compiler's, not the shim's
            item = (f"the CANN header {m.group(1)}" if len(m.groups()) == 1 else
                    f"{m.group(1)}::{m.group(2)}" if "has no member" in msg else
                    f"{m.group(2)}::{m.group(1)}")
            return (msg.split(" - aicore-sim does not provide")[0] +
                    f" - aicore-sim's CANN host shim does not provide {item} yet")
    return msg


@cache
def shim_key() -> str:
    """The host shim's headers and the compiler, hashed (a changed shim rebuilds)."""
    h = hashlib.sha256((compiler().ident + " ".join(FLAGS)).encode())
    for p in sorted(HOST_INCLUDE.rglob("*.h")):
        h.update(p.relative_to(HOST_INCLUDE).as_posix().encode() + b"\0" + p.read_bytes())
    return h.hexdigest()[:24]


def _runner_object() -> Path:
    """The runner's object (the C entry), compiled once per shim and compiler."""
    obj = cache_dir() / "host" / f"runner-{shim_key()}.o"
    if obj.is_file():
        return obj
    obj.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(obj, suffix=".o", mode=None) as tmp:
        src = tmp.with_suffix(".cpp")
        src.write_text('#include "aicore_sim_host/runner.h"\n')
        p = subprocess.run([compiler().path, *FLAGS, f"-I{HOST_INCLUDE}", "-c", str(src), "-o",
                            str(tmp)], capture_output=True, text=True)
        src.unlink()
        if p.returncode != 0:
            raise CompileError(f"host tiling: the shim's runner: {first_error(p.stderr)}")
    return obj


def build(sources: list[Path], include_dirs: list[Path]) -> Path:
    """The host library of ``sources``: from the compile cache, or each source compiled to an
    object (in parallel) and linked with the runner now."""
    folder = cache_dir() / "host" / _key(sources, include_dirs)
    lib = folder / "host.so"
    if lib.is_file():
        return lib
    folder.mkdir(parents=True, exist_ok=True)
    cxx = compiler()
    incs = [f"-I{HOST_INCLUDE}", *(f"-I{d}" for d in include_dirs)]
    units = list(sources)
    objs = [folder / f"{i}_{u.stem}.o" for i, u in enumerate(units)]

    def compile_one(pair: tuple[Path, Path]) -> tuple[Path, subprocess.CompletedProcess[str]]:
        src, obj = pair
        cmd = [cxx.path, *FLAGS, *incs, "-c", str(src), "-o", str(obj)]
        return src, subprocess.run(cmd, capture_output=True, text=True)

    workers = max(1, min(len(units), len(os.sched_getaffinity(0))))
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        done = list(pool.map(compile_one, zip(units, objs)))
    log = folder / "build.log"
    log.write_text("".join(f"$ {src}\n{p.stdout}{p.stderr}" for src, p in done))
    for _, p in done:
        if p.returncode != 0:
            raise CompileError(f"host tiling: {host_error(p.stderr)} (full log: {log})")
    runner = _runner_object()
    with atomic_path(lib, suffix=".so", mode=None) as tmp:
        cmd = [cxx.path, "-shared", "-fPIC", "-Wl,-z,defs", str(runner), *map(str, objs), "-o",
               str(tmp)]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            log.write_text(log.read_text() + "$ link\n" + p.stdout + p.stderr)
            raise CompileError(f"host tiling: linking failed: {host_error(p.stderr)} "
                               f"(full log: {log})")
    return lib


__all__ = ["CxxTilingData", "HostLibrary", "HostSource", "HostTilingError", "build",
           "parse_reply", "request", "shim_key"]

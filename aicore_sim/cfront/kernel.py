"""A compiled C++ kernel as a Recording's kernel: one core's copy run per call, on its thread.

Step of the flow: a :class:`KernelSource` (the user's sources: a folder such as
``ops-transformer/moe/<op>/op_kernel``, or one ``.cpp``) turns into a :class:`CxxKernel`
for one launch: the variant's library compiled (``cfront.build``), its ``GM_ADDR`` arguments,
tiling bytes and tiling key fixed. The record pass then calls it once per core as it calls a
Python port; it points the kernel at the functional image's real arrays, lends the shim the
core's state (``abi.CoreState``) and runs the ``extern "C"`` entry through the library's
runner, which reports a refused call, an escaped C++ exception or a crash.

A bundled op's Python port names the C++ entry and its parameters: the port's function name
is the entry's, its parameters in order are the entry's ``GM_ADDR``s, with the tiling data
(packed by the tiling header's layout), ``tilingKey`` (``TILING_KEY_IS``) and the
``DTYPE_<NAME>`` dtypes (``-D`` macros: one build per dtype combination) as the port takes
them.
"""

from __future__ import annotations

import ctypes
import inspect
import os
import signal
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

import aicore_sim.cfront.abi as abi
import aicore_sim.cfront.build as build
import aicore_sim.cfront.tiling_header as tiling_header
from aicore_sim.sim import program
from aicore_sim.sim.errors import InputError, KernelError
from aicore_sim.sim.trace import core_name

ARCH: dict[str, tuple[int, int]] = {
    "Ascend910B": (2201, 220),
    "Ascend910_93": (2201, 220),
    "Ascend950": (3510, 310),
}
"""short SoC -> (``__NPU_ARCH__``, ``__CCE_AICORE__``). A2/A3: 2201 / 220 (the values the
kernels test). 950: 3510 (the host tilings' ``npu_arch``); its ``__CCE_AICORE__`` 310 is an
ASSUMPTION (no kernel of the four ops tests it)."""

_C_TYPE = {"bfloat16": "bfloat16_t", "float16": "half", "float32": "float", "int8": "int8_t",
           "uint8": "uint8_t", "int16": "int16_t", "uint16": "uint16_t", "int32": "int32_t",
           "uint32": "uint32_t", "int64": "int64_t", "uint64": "uint64_t", "bool": "bool"}


TIMEOUT_ENV = "AICORE_SIM_KERNEL_TIMEOUT"
"""Seconds a core's C++ code may run without an Ascend C call before it counts as never
returning (default :data:`DEFAULT_TIMEOUT`; waiting at a SyncAll does not count)."""
DEFAULT_TIMEOUT = 60.0


class KernelCrashError(KernelError):
    """The C++ kernel crashed (a signal), let a C++ exception out or never returned."""


def _timeout() -> float:
    raw = os.environ.get(TIMEOUT_ENV, "")
    try:
        value = float(raw) if raw else DEFAULT_TIMEOUT
    except ValueError:
        raise InputError(f"${TIMEOUT_ENV}: {raw!r} is not a number of seconds") from None
    if not value > 0:
        raise InputError(f"${TIMEOUT_ENV}: {raw!r} must be > 0 seconds")
    return value


class _Watchdog:
    """Stops a core whose C++ code makes no Ascend C call (no instruction recorded) for
    ``limit`` seconds while not waiting at a SyncAll: SIGXCPU to its thread, which the
    library's runner turns into an early return."""

    def __init__(self, rec: program.CoreRecorder, limit: float) -> None:
        self.rec, self.limit = rec, limit
        self.waiting = False
        self.fired = False
        self._done = threading.Event()
        self._target = threading.get_ident()
        self._thread = threading.Thread(target=self._watch, daemon=True,
                                        name=f"aiv-core-{rec.core}-watchdog")

    def __enter__(self) -> _Watchdog:
        hook = self.rec.sync_hook
        if hook is not None:
            def waiting_hook() -> None:
                self.waiting = True
                try:
                    hook()
                finally:
                    self.waiting = False
            self.rec.sync_hook = waiting_hook
        self._hook = hook
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()
        self.rec.sync_hook = self._hook

    def _watch(self) -> None:
        step = min(0.25, self.limit / 4)
        last, idle = -1, 0.0
        while not self._done.wait(step):
            n = len(self.rec.sites)
            if n != last or self.waiting:
                last, idle = n, 0.0
                continue
            idle += step
            if idle >= self.limit:
                self.fired = True
                signal.pthread_kill(self._target, signal.SIGXCPU)
                idle = 0.0  # asked again after another limit if it found a call running


def c_type(dtype: Any) -> str:
    """The C++ name of a numpy dtype (``DTYPE_*`` macros)."""
    return _C_TYPE[np.dtype(dtype).name]


def arch_defines(platform: Any) -> tuple[tuple[str, str], ...]:
    from aicore_sim.ascendc.platform_ascendc import npu_arch

    return (("__NPU_ARCH__", str(npu_arch(platform))),
            ("__CCE_AICORE__", str(ARCH[platform.short_soc][1])))


@cache
def _load(path: Path) -> ctypes.CDLL:
    lib = ctypes.CDLL(str(path), mode=ctypes.RTLD_LOCAL)
    lib.aicore_sim_init.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    lib.aicore_sim_init.restype = None
    lib.aicore_sim_enter.argtypes = [ctypes.c_void_p, ctypes.c_int32,
                                     ctypes.POINTER(ctypes.c_void_p), ctypes.c_int64,
                                     ctypes.c_int64, ctypes.c_int64, ctypes.c_uint64]
    lib.aicore_sim_enter.restype = ctypes.c_int
    lib.aicore_sim_init(abi.CALLBACK_ADDRESS, abi.ARG_BLOCK_ADDRESS)
    return lib


@dataclass(frozen=True)
class KernelSource:
    """Where a kernel's C++ sources are: ``path`` a folder (the entry is ``<entry>.cpp`` in
    it) or a ``.cpp`` file; extra include folders and macros; ``op_type`` picks the tiling
    struct registered for it (default: the entry name in CamelCase)."""

    path: Path
    include_dirs: tuple[Path, ...] = ()
    defines: tuple[tuple[str, str], ...] = ()
    op_type: str | None = None

    @classmethod
    def of(cls, path: str | Path, **kw: Any) -> KernelSource:
        p = Path(path).expanduser().resolve()
        if not p.exists():
            raise InputError(f"--kernel-src: {path} does not exist")
        return cls(p, **kw)

    def source_for(self, entry: str) -> Path:
        if self.path.is_file():
            return self.path
        src = self.path / f"{entry}.cpp"
        if not src.is_file():
            raise InputError(f"--kernel-src: {self.path} holds no {entry}.cpp (the kernel "
                             f"entry of this operator)")
        return src

    def tiling(self, entry: str
               ) -> tuple[tiling_header.TilingHeader, tiling_header.TilingLayout] | None:
        """The op's tiling header (``op_host/*tiling*.h`` beside the kernel folder, or in it)
        and the struct ``GET_TILING_DATA`` reads (registered for ``op_type``, by default the
        entry's name in CamelCase); None when there is no header."""
        folder = self.path if self.path.is_dir() else self.path.parent
        paths = tiling_header.headers_near(folder)
        if not paths:
            return None
        op_type = self.op_type or "".join(w.capitalize() for w in entry.split("_"))
        header = tiling_header.read(paths)
        return header, header.struct_for(op_type)

    def variant(self, entry: str, platform: Any, dtypes: dict[str, Any]
                ) -> tuple[build.Variant, tiling_header.TilingLayout | None]:
        """The build of ``entry`` on ``platform`` with ``dtypes`` (``DTYPE_*`` -> dtype or
        None), and the tiling struct it reads (from the op's tiling header)."""
        found = self.tiling(entry)
        if found is None:
            return self._variant(entry, platform, dtypes, ""), None
        header, layout = found
        return self._variant(entry, platform, dtypes, header.cpp(), layout.name), layout

    def _variant(self, entry: str, platform: Any, dtypes: dict[str, Any], structs: str,
                 tiling_type: str | None = None) -> build.Variant:
        """``entry``'s build: the arch and ``DTYPE_*`` macros (a ``None`` dtype: no macro),
        the tiling structs' C++ and the one ``GET_TILING_DATA`` reads."""
        prelude = structs
        if tiling_type:
            prelude += f"\n#define AICORE_SIM_TILING_TYPE {tiling_type}\n"
        defines = arch_defines(platform) + tuple(
            (k, c_type(v)) for k, v in sorted(dtypes.items()) if v is not None) + self.defines
        return build.Variant((self.source_for(entry),), self.include_dirs, defines, prelude)

    def kernel_for(self, port: Callable[..., None], args: Sequence, platform: Any
                   ) -> CxxKernel:
        """The C++ entry that ``port`` (a Python port's ``__global__`` function) stands for,
        built for ``args`` (the launch's arguments to the port) on ``platform``."""
        entry = port.__name__
        bound = inspect.signature(port).bind(*args)
        bound.apply_defaults()
        dtypes = {k: v for k, v in bound.arguments.items() if k.startswith("DTYPE_")}
        key = int(bound.arguments.get("tilingKey", 0) or 0)
        variant, layout = self.variant(entry, platform, dtypes)
        lib = build.shared_object(variant)
        pointers: list[Any] = []
        tiling = b""
        for name, v in bound.arguments.items():
            if name.startswith("DTYPE_") or name == "tilingKey":
                continue
            if hasattr(v, "as_list"):  # the tiling data: packed by the header's layout
                tiling = layout.pack(v.as_dict()) if layout is not None else v.to_bytes()
                pointers.append(_TILING)
            else:
                pointers.append(name)
        return CxxKernel(lib, entry, tuple(pointers), tiling, key)

    def kernel_for_entry(self, entry: str, gm_names: Sequence[str | None], tiling: bytes | None,
                         tiling_key: int, platform: Any, *, layout_cpp: str = "",
                         layout_name: str | None = None, dtypes: dict[str, Any] | None = None
                         ) -> CxxKernel:
        """The ``extern "C"`` ``entry`` of this source built for ``platform`` as a generic
        kernel: its parameters are the GM tensors ``gm_names`` in order (``None``: a null
        ``GM_ADDR``), then, when ``tiling`` is not ``None``, the tiling pointer. The tiling
        struct (``layout_cpp``, its C++ definitions, and ``layout_name``, what
        ``GET_TILING_DATA`` reads) is given by the caller, not looked up beside the source;
        ``dtypes`` adds ``-D NAME=<C++ type>`` macros (``DTYPE_X``)."""
        variant = self._variant(entry, platform, dtypes or {}, layout_cpp, layout_name)
        lib = build.shared_object(variant)
        params: tuple = tuple(gm_names) + ((_TILING,) if tiling is not None else ())
        return CxxKernel(lib, entry, params, tiling or b"", int(tiling_key))


_TILING = object()


class CxxKernel:
    """One variant of a compiled kernel entry, called once per core by the record pass with
    the launch's arguments (``GM_ADDR`` objects, ``None``, the tiling data, ...)."""

    def __init__(self, shared_object: Path, entry: str, params: tuple, tiling: bytes,
                 tiling_key: int) -> None:
        self.shared_object, self.entry, self.params = shared_object, entry, params
        self.tiling_key = tiling_key
        # the tiling bytes live outside the memory image (the kernel only copies them)
        self._tiling = ctypes.create_string_buffer(bytes(tiling) + bytes(64), len(tiling) + 64)
        self.__name__ = entry

    def __call__(self, *args: Any) -> None:
        lib = _load(self.shared_object)
        try:
            fn = ctypes.cast(getattr(lib, self.entry), ctypes.c_void_p).value
        except AttributeError:
            raise InputError(f"C++ kernel: {self.shared_object.parent} has no extern \"C\" entry "
                             f"{self.entry}") from None
        rec = program.current()
        gm = abi.GmMap(rec.image.gm, rec.image.writable)
        ub = rec.image.ub[rec.core]
        st = abi.CoreState(rec, gm, ub.ctypes.data)
        values = []
        for p, a in zip(self.params, args):
            if p is _TILING:
                values.append(ctypes.addressof(self._tiling))
            elif a is None:
                values.append(None)
            else:
                values.append(st.address(a))
        ptrs = (ctypes.c_void_p * max(1, len(values)))(*values)
        rec.front = st
        limit = _timeout()
        try:
            with _Watchdog(rec, limit) as dog:
                rc = lib.aicore_sim_enter(fn, len(values), ptrs, self.tiling_key, rec.core,
                                          rec.block_num, ub.ctypes.data)
        finally:
            rec.front = None
        if rc == 0:
            return
        if rc == 1 and st.error is not None:
            raise st.error
        where = _last_site(rec)
        core = core_name(rec.core)
        if rc == 2:
            raise KernelCrashError(f"{core}: a C++ exception left the kernel {self.entry}"
                                   f"{where}")
        if rc == 100 + signal.SIGXCPU and dog.fired:
            raise KernelCrashError(f"{core}: the kernel {self.entry} never returned: "
                                   f"no Ascend C call for {limit:g} s (${TIMEOUT_ENV} sets the "
                                   f"limit){where}")
        if rc >= 100:
            try:
                name = signal.Signals(rc - 100).name
            except ValueError:
                name = f"signal {rc - 100}"
            raise KernelCrashError(f"{core}: the kernel {self.entry} crashed ({name})"
                                   f"{where}")
        raise KernelCrashError(f"{core}: the kernel runner failed (code {rc})")


def _last_site(rec: program.CoreRecorder) -> str:
    """`` after <last instruction> at file:line`` of the core's last recorded call."""
    if not rec.stream:
        return " before its first Ascend C call"
    sid = rec.sites[-1]
    site = abi.SITES.sites[sid] if 0 <= sid < len(abi.SITES.sites) else None
    at = f" at {site.path}:{site.line}" if site else ""
    return f" after its last recorded instruction ({rec.stream[-1].describe()}{at})"


__all__ = ["ARCH", "CxxKernel", "KernelCrashError", "KernelSource", "arch_defines", "c_type"]

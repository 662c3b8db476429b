"""Upstream's kernel unit tests as a drop-in: a gtest file of the CPU-debug interface
(``tikicpulib.h``: ``GmAlloc``, ``ICPU_SET_TILING_KEY``, ``ICPU_RUN_KF``) built with the
kernel's own sources and googletest into one shared library, and run with every launch
simulated.

Step of the flow: ``aicore-sim ut`` (:mod:`aicore_sim.cli.ut`) -> :func:`build_library`
(three translation units - the kernel against the shim and its generated tiling struct, the
test file, gtest's runner - plus ``gtest-all.cc`` compiled once with ``-fPIC``, each object
cached like :mod:`aicore_sim.cfront.build`, linked into ``ut.so``) -> :class:`Session` loads
it, lends the shim its two callbacks (the kernel-side one of ``abi.h`` the cores use, and the
host-side one of ``aicore_sim/host.h`` the test's thread uses) and runs gtest. Each
``GmAlloc`` is a zeroed numpy buffer named ``gm<N>``; each ``ICPU_RUN_KF`` is one
:class:`~aicore_sim.sim.recording.Recording` of a :class:`~aicore_sim.cfront.kernel.CxxKernel`
whose GM tensors are the buffers the launch was given (every one writable: the results are
copied back into the test's buffers) and writes a run folder
``<out>/<Suite.Test>-<k>/`` (summary.json, trace.json, the buffers it wrote, msprof op's
CSVs).

Upstream's layout is followed where the test folder says so: ``<entry>_tiling.h`` beside the
test is included first in both units (its ``GET_TILING_DATA`` is then the kernel's), else the
tiling struct is generated from ``op_host/*tiling*.h`` (``kernel_tiling/kernel_tiling.h`` for
the test, the prelude for the kernel); the ``-D`` options of the folder's
``AddOpTestCase(...)`` in ``CMakeLists.txt`` apply to both units.
"""

from __future__ import annotations

import bisect
import ctypes
import hashlib
import os
import re
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from aicore_sim.ascendc.tensors import GM_ADDR
from aicore_sim.cfront import build, tiling_header
from aicore_sim.cfront.abi import INCLUDE
from aicore_sim.cfront.kernel import CxxKernel, _load, arch_defines
from aicore_sim.sim.errors import InputError, SimError
from aicore_sim.util.atomic import atomic_path

GTEST_SRC_ENV = "AICORE_SIM_GTEST_SRC"
"""Set it to googletest's ``googletest`` source folder (holding ``src/gtest-all.cc`` and
``include/``) when it is not Debian's ``/usr/src/googletest/googletest``."""
GTEST_SRC = Path("/usr/src/googletest/googletest")
OBJ_FLAGS = tuple(f for f in build.FLAGS if f != "-shared")

_OP_ALLOC, _OP_FREE, _OP_LAUNCH = 1, 2, 3
HOST_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64, ctypes.POINTER(ctypes.c_int64),
                                 ctypes.c_int32)
_RUN_KF = re.compile(r"ICPU_RUN_KF\s*\(\s*(\w+)")
_ADD_CASE = re.compile(r"^\s*AddOpTestCase\s*\(\s*(\w+)\s+\"[^\"]*\"\s+\"([^\"]*)\"", re.M)


class NoGtestError(InputError):
    """googletest's sources are not on this machine."""


def gtest_source() -> Path:
    """googletest's source folder (``src/gtest-all.cc``, ``include/``)."""
    root = Path(os.environ.get(GTEST_SRC_ENV) or GTEST_SRC)
    if not (root / "src" / "gtest-all.cc").is_file():
        raise NoGtestError(f"aicore-sim ut: googletest's sources are not at {root} (no "
                           "src/gtest-all.cc): install them (Debian/Ubuntu: apt-get install "
                           f"libgtest-dev) or name the googletest folder in ${GTEST_SRC_ENV}")
    return root


def _strip_comments(text: str) -> str:
    return re.sub(r"//[^\n]*|/\*.*?\*/", "", text, flags=re.S)


def entries_of(test: Path) -> list[str]:
    """The kernel entries the test launches (``ICPU_RUN_KF``'s first argument), in order."""
    names = _RUN_KF.findall(_strip_comments(test.read_text(errors="replace")))
    return list(dict.fromkeys(names))


def cmake_defines(test_dir: Path, entries: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """The ``-D`` options of ``AddOpTestCase(<entry> "<soc>" "<options>" ...)`` in the test
    folder's CMakeLists.txt (upstream compiles the kernel and the test with them)."""
    cm = test_dir / "CMakeLists.txt"
    if not cm.is_file():
        return ()
    out = []
    for name, options in _ADD_CASE.findall(_strip_comments(
            re.sub(r"#[^\n]*", "", cm.read_text(errors="replace")))):
        if name not in entries:
            continue
        for opt in options.split():
            if opt.startswith("-D") and len(opt) > 2:
                k, _, v = opt[2:].partition("=")
                out.append((k, v))
    return tuple(out)


@dataclass(frozen=True)
class UtBuild:
    """What one unit test library is built from."""

    test: Path
    kernel_src: Path
    entries: tuple[str, ...]
    platform: Any
    extra_defines: tuple[tuple[str, str], ...] = ()

    @property
    def test_dir(self) -> Path:
        return self.test.parent

    def custom_tiling(self) -> Path | None:
        """``<entry>_tiling.h`` beside the test: upstream includes it in place of the
        generated tiling header."""
        for e in self.entries:
            p = self.test_dir / f"{e}_tiling.h"
            if p.is_file():
                return p
        return None

    def kernel_dir(self) -> Path:
        return self.kernel_src if self.kernel_src.is_dir() else self.kernel_src.parent

    def kernel_files(self) -> list[Path]:
        if self.kernel_src.is_file():
            return [self.kernel_src]
        out = []
        for e in self.entries:
            p = self.kernel_src / f"{e}.cpp"
            if not p.is_file():
                raise InputError(f"--kernel-src: {self.kernel_src} holds no {e}.cpp (the kernel "
                                 f"entry {self.test.name} launches)")
            out.append(p)
        return out

    def defines(self) -> tuple[tuple[str, str], ...]:
        # __CCE_KT_TEST__: the CPU-debug build (upstream's tests include tikicpulib.h under it)
        return (arch_defines(self.platform) + (("__CCE_KT_TEST__", "1"),)
                + cmake_defines(self.test_dir, self.entries) + self.extra_defines)

    def tiling(self) -> tuple[str, str | None, list[Path]]:
        """(C++ of the generated tiling structs, the struct GET_TILING_DATA reads, the headers
        read); empty when the test folder's own tiling header takes their place."""
        if self.custom_tiling() is not None:
            return "", None, []
        paths = tiling_header.headers_near(self.kernel_dir())
        if not paths:
            return "", None, []
        header = tiling_header.read(paths)
        entry = self.entries[0]
        op_type = "".join(w.capitalize() for w in entry.split("_"))
        try:
            name = header.struct_for(op_type).name
        except tiling_header.TilingHeaderError:
            name = None
        return header.cpp(), name, paths


def _digest(*parts: str | bytes, files: Sequence[Path] = ()) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode() if isinstance(part, str) else part)
        h.update(b"\0")
    for p in sorted(set(files)):
        h.update(str(p).encode())
        h.update(p.read_bytes())
    return h.hexdigest()[:24]


def _folder_files(folder: Path, recursive: bool = False) -> list[Path]:
    it = folder.rglob("*") if recursive else folder.iterdir()
    return [p for p in it if p.is_file() and p.suffix in build._SOURCE_EXT]


def _compile(cxx: build.Compiler, unit: str, name: str, include_dirs: Sequence[Path],
             defines: Sequence[tuple[str, str]], inputs: Sequence[Path],
             flags: Sequence[str] = OBJ_FLAGS) -> Path:
    """One translation unit (``unit``'s text) as a cached object file."""
    folder = build.cache_dir() / "ut" / "obj" / _digest(
        cxx.ident, " ".join(flags), build.shim_digest(), unit, repr(list(defines)),
        repr([str(d) for d in include_dirs]), files=inputs)
    obj = folder / f"{name}.o"
    if obj.is_file():
        return obj
    folder.mkdir(parents=True, exist_ok=True)
    src = folder / f"{name}.cpp"
    src.write_text(unit)
    with atomic_path(obj, suffix=".o", mode=None) as tmp:
        cmd = [cxx.path, *flags, "-c", *(f"-I{d}" for d in include_dirs),
               *(f"-D{k}={v}" if v != "" else f"-D{k}" for k, v in defines), "-o", str(tmp),
               str(src)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        log = folder / "build.log"
        log.write_text("$ " + " ".join(cmd) + "\n" + proc.stdout + proc.stderr)
        if proc.returncode != 0:
            raise build.CompileError(f"aicore-sim ut: {build.first_error(proc.stderr)} (full "
                                     f"log: {log})")
    return obj


# gtest's own code is not what a run measures: built without optimisation (3.8 s here
# instead of 5.7 s at -O1, once per cache)
_GTEST_FLAGS = tuple("-O0" if f.startswith("-O") else f for f in OBJ_FLAGS)


def _gtest_object(cxx: build.Compiler) -> Path:
    """gtest-all.cc compiled once with -fPIC (Debian's libgtest.a may not be PIC)."""
    root = gtest_source()
    src = root / "src" / "gtest-all.cc"
    inc = [root, root / "include"]
    return _compile(cxx, f'#include "{src}"\n', "gtest-all", inc, (),
                    _folder_files(root / "src") + _folder_files(root / "include", True),
                    flags=_GTEST_FLAGS)


def build_library(b: UtBuild) -> Path:
    """The unit test's shared library: from the cache, or compiled and linked now."""
    cxx = build.compiler()
    root = gtest_source()
    gen_text, struct_name, tiling_paths = b.tiling()
    custom = b.custom_tiling()
    defines = b.defines()
    # kernel_tiling/kernel_tiling.h, which upstream's test headers include: the shim and the
    # tiling structs (none when the test folder's own tiling header declares them)
    gen = build.cache_dir() / "ut" / "gen" / _digest(gen_text)
    (gen / "kernel_tiling").mkdir(parents=True, exist_ok=True)
    header = gen / "kernel_tiling" / "kernel_tiling.h"
    body = ("// generated by aicore-sim: the shim and the op's tiling structs\n#pragma once\n"
            '#include "kernel_operator.h"\n' + gen_text + "\n")
    if not header.is_file() or header.read_text() != body:
        header.write_text(body)
    first = [f'#include "{custom}"'] if custom else []
    kernel_unit = "\n".join([
        "// generated by aicore-sim: the shim, the tiling struct, the kernel",
        '#include "kernel_operator.h"', '#include "aicore_sim_ut_compat.h"',
        '#include "kernel_tiling/kernel_tiling.h"', *first,
        *([f"#define AICORE_SIM_TILING_TYPE {struct_name}"] if struct_name else []),
        *(f'#include "{p}"' for p in b.kernel_files())]) + "\n"
    test_unit = "\n".join([
        "// generated by aicore-sim: the test file, upstream's tiling header first",
        '#include "kernel_tiling/kernel_tiling.h"', *first, f'#include "{b.test}"']) + "\n"
    runner_unit = ('// generated by aicore-sim: the gtest runner\n'
                   '#include "aicore_sim/ut_runner.h"\n')
    kdir = b.kernel_dir()
    kernel_inputs = (_folder_files(kdir) + tiling_paths + ([custom] if custom else [])
                     + [header])
    test_inputs = _folder_files(b.test_dir) + [header]
    objs = [
        _compile(cxx, kernel_unit, "kernel", [INCLUDE, gen, kdir, b.test_dir], defines,
                 kernel_inputs),
        _compile(cxx, test_unit, "test", [INCLUDE, gen, b.test_dir, root / "include"],
                 defines, test_inputs),
        _compile(cxx, runner_unit, "runner", [INCLUDE, root / "include"], (), []),
        _gtest_object(cxx),
    ]
    folder = build.cache_dir() / "ut" / "lib" / _digest(
        cxx.ident, *(str(o) for o in objs), *(o.stat().st_mtime_ns.to_bytes(8, "little")
                                              for o in objs))
    lib = folder / "ut.so"
    if lib.is_file():
        return lib
    folder.mkdir(parents=True, exist_ok=True)
    with atomic_path(lib, suffix=".so", mode=None) as tmp:
        cmd = [cxx.path, "-shared", "-fPIC", "-Wl,--no-undefined", "-o", str(tmp),
               *map(str, objs), "-lpthread"]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        log = folder / "build.log"
        log.write_text("$ " + " ".join(cmd) + "\n" + proc.stdout + proc.stderr)
        if proc.returncode != 0:
            msg = next((ln.strip() for ln in proc.stderr.splitlines()
                        if "undefined reference" in ln or "error" in ln),
                       proc.stderr.strip()[-300:])
            raise build.CompileError(f"aicore-sim ut: link failed: {msg} (full log: {log})")
    return lib


@dataclass
class Launch:
    """What one ``ICPU_RUN_KF`` did (the command's report)."""

    test: str
    index: int
    entry: str
    block_dim: int
    tiling_key: int
    folder: Path | None
    cycles: int = 0
    hazards: int = 0
    error: str | None = None
    seconds: float = 0.0


@dataclass
class Session:
    """One run of a unit test library: its GM buffers, its launches, their run folders."""

    shared_object: Path
    platform: Any
    out: Path
    mode: str = "timed"
    trace: str = "full"
    strict: bool = False
    buffers: dict[int, tuple[str, np.ndarray]] = field(default_factory=dict)
    launches: list[Launch] = field(default_factory=list)
    _count: int = 0
    _per_test: dict[str, int] = field(default_factory=dict)

    def run(self, gtest_args: Sequence[str] = ()) -> int:
        """Every TEST (gtest's own output on stdout); gtest's exit code (0: all passed)."""
        lib = _load(self.shared_object)
        lib.aicore_sim_host_init.argtypes = [HOST_CALLBACK]
        lib.aicore_sim_host_init.restype = None
        lib.aicore_sim_ut_main.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
        lib.aicore_sim_ut_main.restype = ctypes.c_int
        lib.aicore_sim_ut_current_test.restype = ctypes.c_char_p
        self._lib = lib
        self._callback = HOST_CALLBACK(self._host)  # kept alive while the library runs
        lib.aicore_sim_host_init(self._callback)
        argv = [b"aicore-sim-ut", *(a.encode() for a in gtest_args)]
        arr = (ctypes.c_char_p * (len(argv) + 1))(*argv, None)
        sys.stdout.flush()
        try:
            return int(lib.aicore_sim_ut_main(len(argv), arr))
        finally:
            sys.stdout.flush()
            self.buffers.clear()

    # -- the host callback -----------------------------------------------------------------

    def _host(self, op: int, slots: Any, n: int) -> int:
        try:
            if op == _OP_ALLOC:
                return self._alloc(int(slots[0]))
            if op == _OP_FREE:
                self.buffers.pop(int(slots[0]), None)
                return 0
            if op == _OP_LAUNCH:
                return self._launch([int(slots[i]) for i in range(n)])
            print(f"aicore-sim: unknown host call {op}", file=sys.stderr)
            return -1
        except BaseException as e:  # noqa: BLE001 - nothing may unwind into C++
            print(f"aicore-sim: host call failed: {type(e).__name__}: {e}", file=sys.stderr)
            return -1
        finally:
            sys.stdout.flush()
            sys.stderr.flush()

    def _alloc(self, size: int) -> int:
        try:
            arr = np.zeros(max(size, 1), np.uint8)  # calloc: pages appear when touched
        except MemoryError:
            return 0
        name = f"gm{self._count}"
        self._count += 1
        self.buffers[arr.ctypes.data] = (name, arr)
        return arr.ctypes.data

    def _where(self, address: int) -> tuple[str, np.ndarray, int] | None:
        starts = sorted(self.buffers)
        k = bisect.bisect_right(starts, address) - 1
        if k < 0:
            return None
        name, arr = self.buffers[starts[k]]
        off = address - starts[k]
        return (name, arr, off) if off <= arr.nbytes else None

    def _launch(self, s: list[int]) -> int:
        entry = ctypes.string_at(s[0]).decode()
        block_dim, key = s[2], s[3]
        file, line = ctypes.string_at(s[4]).decode(errors="replace"), s[5]
        msg_at, msg_size, nargs = s[6], s[7], s[8]
        test = (self._lib.aicore_sim_ut_current_test() or b"no-test").decode(errors="replace")
        index = self._per_test[test] = self._per_test.get(test, 0) + 1
        launch = Launch(test, index, entry, block_dim, key, None)
        self.launches.append(launch)
        t0 = time.perf_counter()
        try:
            self._simulate(launch, s[9:9 + nargs], f"{Path(file).name}:{line}")
        except Exception as e:  # noqa: BLE001 - the TEST fails, the next ones run
            launch.error = (str(e) if isinstance(e, SimError) else f"{type(e).__name__}: {e}")
        launch.seconds = time.perf_counter() - t0
        if launch.error is None and self.strict and launch.hazards:
            launch.error = (f"{launch.hazards} hazard(s) (--strict); see "
                            f"{launch.folder}/summary.json")
        print(_describe(launch), flush=True)
        if launch.error is not None:
            raw = launch.error.encode("utf-8", "replace")[:max(0, msg_size - 1)] + b"\0"
            ctypes.memmove(msg_at, raw, len(raw))
            return 1
        return 0

    def _simulate(self, launch: Launch, pointers: list[int], site: str) -> None:
        from aicore_sim.cfront import run_folder
        from aicore_sim.sim.recording import Recording
        from aicore_sim.util.staging import safe_name

        args: list[Any] = []
        tensors: dict[str, np.ndarray] = {}
        described = []
        for i, p in enumerate(pointers):
            if p == 0:
                args.append(None)
                described.append({"index": i, "buffer": None})
                continue
            hit = self._where(p)
            if hit is None:
                raise InputError(f"argument {i} of {launch.entry} ({p:#x}) points into no "
                                 "buffer AscendC::GmAlloc gave (or one freed)")
            name, arr, off = hit
            tensors[name] = arr
            args.append(GM_ADDR(name, off))
            described.append({"index": i, "buffer": name, "offset": off,
                              "bytes": int(arr.nbytes)})
        if launch.block_dim < 1:
            raise InputError(f"{launch.entry}: blockDim {launch.block_dim} (at least 1)")
        kernel = CxxKernel(self.shared_object, launch.entry, tuple(f"arg{i}" for i in
                                                             range(len(pointers))),
                           b"", launch.tiling_key)
        outputs = {k: (np.dtype(np.uint8), (v.nbytes,)) for k, v in tensors.items()}
        rec = Recording(kernel, args, tensors, outputs, self.platform,
                        block_dim=launch.block_dim, mode=self.mode)
        rec.run()
        launch.cycles = rec.cycles
        launch.hazards = len(rec.hazards)
        written = []
        for name, out in rec.outputs.items():  # back into the test's buffers
            user = tensors[name]
            if not _equal(user, out):
                written.append(name)
                np.copyto(user, out)
        folder = self.out / safe_name(f"{launch.test}-{launch.index}")
        run_folder.write(rec, folder, f"{launch.test} launch {launch.index}", self.platform,
                         self.mode, self.trace, ("ut", {
                             "test": launch.test, "launch": launch.index, "at": site,
                             "kernel": launch.entry, "block_dim": launch.block_dim,
                             "tiling_key": launch.tiling_key, "arguments": described,
                             "written": written}), {name: tensors[name] for name in written})
        launch.folder = folder


def _equal(a: np.ndarray, b: np.ndarray, chunk: int = 1 << 26) -> bool:
    """Byte arrays equal, compared a chunk at a time (no temporary as large as a buffer)."""
    for i in range(0, a.nbytes, chunk):
        if not np.array_equal(a[i:i + chunk], b[i:i + chunk]):
            return False
    return True


def _describe(launch: Launch) -> str:
    head = (f"[aicore-sim] {launch.test} launch {launch.index}: {launch.entry} on "
            f"{launch.block_dim} cores, tiling key {launch.tiling_key}")
    if launch.error is not None:
        return f"{head}: FAILED: {launch.error}"
    return (f"{head}: {launch.cycles} cycles, {launch.hazards} hazard(s), "
            f"{launch.seconds:.1f} s -> {launch.folder}")


__all__ = ["GTEST_SRC_ENV", "Launch", "NoGtestError", "Session", "UtBuild", "build_library",
           "cmake_defines", "entries_of", "gtest_source"]

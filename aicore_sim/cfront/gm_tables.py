"""GM tables of the kernel's own binary: a ``__gm__`` constant array a kernel declares at
namespace scope (an index ramp, a lookup table) and points a ``GlobalTensor`` at.

On device such a table is part of the kernel image, loaded into GM with it. In the simulator
the kernel is a host shared object, so the table's address is one of that object's data: a
pointer into none of the launch's tensors. :func:`find` names the table a pointer lies in -
the data symbol of the loaded kernel object that holds it (its ``.symtab``, read here, gives
the table's extent) - so the front end can bind the ``GlobalTensor`` to it as one more
read-only GM tensor of the launch.
"""

from __future__ import annotations

import bisect
import ctypes
import functools
import re
import struct
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Table:
    """A data object of a loaded shared object: its readable name, its address and size."""

    name: str
    address: int
    nbytes: int


class _DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]


@functools.cache
def _dladdr() -> object | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        fn = ctypes.CDLL(None).dladdr
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_void_p, ctypes.POINTER(_DlInfo)]
    fn.restype = ctypes.c_int
    return fn


def find(address: int) -> Table | None:
    """The data object of a loaded shared object that holds ``address`` (``None``: the
    address lies in no object's data symbol, or the system cannot say)."""
    dladdr = _dladdr()
    if dladdr is None or not address:
        return None
    info = _DlInfo()
    if not dladdr(ctypes.c_void_p(address), ctypes.byref(info)) or not info.dli_fname:
        return None  # type: ignore[operator]
    base = info.dli_fbase or 0
    objects = _objects(info.dli_fname.decode())
    starts = [o[0] for o in objects]
    k = bisect.bisect_right(starts, address - base) - 1
    if k < 0:
        return None
    value, size, name = objects[k]
    if not value <= address - base < value + size:
        return None
    return Table(demangle(name), base + value, size)


@functools.cache
def _objects(path: str) -> list[tuple[int, int, str]]:
    """``(value, size, name)`` of every sized data object (``STT_OBJECT``) of the ELF64
    little-endian file ``path``'s symbol table, by value (none if it is not one)."""
    try:
        data = Path(path).read_bytes()
    except OSError:
        return []
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return []
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
                for i in range(shnum)]
    out = []
    for _, kind, _, _, off, size, link, _, _, entsize in sections:
        if kind != 2 or not entsize:  # SHT_SYMTAB
            continue
        strtab = sections[link]
        soff = strtab[4]
        for j in range(size // entsize):
            st_name, st_info, _, shndx, value, nbytes = struct.unpack_from(
                "<IBBHQQ", data, off + j * entsize)
            if st_info & 0xF != 1 or not nbytes or shndx == 0:  # STT_OBJECT, defined
                continue
            end = data.index(b"\0", soff + st_name)
            out.append((value, nbytes, data[soff + st_name:end].decode("ascii", "replace")))
    return sorted(out)


def demangle(name: str) -> str:
    """A C++ data symbol's qualified name (``_ZN3Foo3barE`` -> ``Foo::bar``; a local one's
    ``L`` marker skipped); other names as they are."""
    if name.startswith("_Z") and not name.startswith("_ZN"):
        m = re.fullmatch(r"_ZL?(\d+)(\w+)", name)
        if m and len(m.group(2)) == int(m.group(1)):
            return m.group(2)
        return name
    if not name.startswith("_ZN") or not name.endswith("E"):
        return name
    rest, parts = name[3:-1], []
    while rest:
        if rest[0] == "L":
            rest = rest[1:]
        m = re.match(r"\d+", rest)
        if m is None:
            return name
        n = int(m.group())
        parts.append(rest[m.end():m.end() + n])
        rest = rest[m.end() + n:]
    return "::".join(parts)


__all__ = ["Table", "demangle", "find"]

"""The C ABI of the Ascend C shim: every call a compiled kernel makes lands here, once.

Step of the flow: the record pass runs a C++ kernel (``cfront.kernel``) on each core's thread;
each Ascend C call the kernel makes fills the shared argument block (tagged 64-bit slots, see
``include/aicore_sim/abi.h``) and calls :func:`_call`, which decodes the arguments into the
objects of :mod:`aicore_sim.ascendc` (``LocalTensor``, ``GlobalTensor``, parameter structs,
enums, the core's ``TPipe`` / ``TQue`` / ``TBuf``), calls the API item of that name and
answers. So the Python API stays the one home of behaviour, numerics, recording and checks:
a C++ kernel and its Python port record the same instructions.

The instructions a call records are attributed to the kernel's own C++ line (the call's
``__builtin_FILE()`` / ``__builtin_LINE()``): :data:`SITES` is a foreign site table of
:mod:`aicore_sim.sim.sources`, and :func:`_call` writes its index over the positions the call
appended.

The enums and tags are read from the shim's headers, so the two sides never disagree.
"""

from __future__ import annotations

import bisect
import ctypes
import functools
import re
import struct
from pathlib import Path
from typing import Any

import numpy as np

from aicore_sim import ascendc
from aicore_sim.ascendc import datacopy, utils
from aicore_sim.ascendc.tensors import GM_ADDR, GlobalTensor, LocalTensor, TPosition
from aicore_sim.ascendc.tpipe import TBuf, TPipe, TQueBind
from aicore_sim.cfront.gm_tables import find as find_gm_table
from aicore_sim.sim import program, sources
from aicore_sim.sim.dtypes import as_dtype
from aicore_sim.sim.errors import KernelError

INCLUDE = Path(__file__).resolve().parent / "include"
"""The shim's headers (package data): ``kernel_operator.h`` and ``aicore_sim/*.h``."""

_ENUM = re.compile(r"enum\s+(?:class\s+)?(\w+)\s*(?::\s*\w+)?\s*\{([^}]*)\}", re.S)


_DTYPE_LIST = re.compile(r"#define AICORE_SIM_DTYPES\(X\)((?:[^\n]*\\\n)*[^\n]*)")
_DTYPE_CODES = re.compile(r"AICORE_SIM_DTYPES\(\w+\)")


@functools.cache
def header_enums() -> dict[str, list[str]]:
    """Every enum the shim declares: its name -> member names in value order (the headers
    give no explicit values, so a member's value is its index). ``DTypeCode`` lists its
    members through the element-type list ``AICORE_SIM_DTYPES`` (``DT_<type>`` each)."""
    out: dict[str, list[str]] = {}
    for h in sorted((INCLUDE / "aicore_sim").glob("*.h")):
        text = re.sub(r"//[^\n]*", "", h.read_text())
        listed = _DTYPE_LIST.search(text)
        if listed:
            codes = ", ".join(f"DT_{t}" for t in re.findall(r"X\((\w+)\)", listed.group(1)))
            text = text[:listed.start()] + _DTYPE_CODES.sub(codes, text[listed.end():])
        for name, body in _ENUM.findall(text):
            out[name] = [m.split("=")[0].strip() for m in body.split(",") if m.strip()]
    return out


def _np_dtype(name: str) -> np.dtype:
    """The dtype of a shim element type: the simulator's own (bfloat16 through ml_dtypes) or,
    for the types tensors cannot hold (uint64, bool, double), numpy's."""
    try:
        return as_dtype(name)
    except (KeyError, ValueError, TypeError):
        return np.dtype(name)


_E = header_enums()
(INT, FLT, BOOL, NUL, LOC, LOCS, GLB, ENUM, STRUCT, DTYPE, HANDLE, STR, LIST) = (
    _E["Tag"].index(t) for t in ("INT", "FLT", "BOOL", "NUL", "LOC", "LOCS", "GLB", "ENUM",
                                 "STRUCT", "DTYPE", "HANDLE", "STR", "LIST"))
_C_TYPES = {"half": "float16", "float": "float32", "bfloat16_t": "bfloat16", "int8_t": "int8",
            "uint8_t": "uint8", "int16_t": "int16", "uint16_t": "uint16", "int32_t": "int32",
            "uint32_t": "uint32", "int64_t": "int64", "uint64_t": "uint64", "bool": "bool",
            "double": "float64"}
DTYPES: list[np.dtype | None] = [None if n == "DT_NONE" else _np_dtype(_C_TYPES[n[3:]])
                                  for n in _E["DTypeCode"]]
"""Shim dtype code -> numpy dtype."""
_CODE = {d: i for i, d in enumerate(DTYPES) if d is not None}

_SIZES = dict(re.findall(r"constexpr int (\w+_SLOTS?) = ([^;]+);",
                         (INCLUDE / "aicore_sim" / "abi.h").read_text()))
ARG_SLOTS = int(_SIZES["ARG_SLOTS"])  # the block's size, as the shim declares it
ERR_SLOT = ARG_SLOTS - 1  # the shim's ERR_SLOT: set when a call was refused
ID_SLOT = ARG_SLOTS - 2  # the shim's ID_SLOT: the id of a call seen first
_BLOCK = (ctypes.c_int64 * ARG_SLOTS)()
_I = memoryview(_BLOCK).cast("B").cast("q")
_D = memoryview(_BLOCK).cast("B").cast("d")
ARG_BLOCK_ADDRESS = ctypes.addressof(_BLOCK)

CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int32)

# C++ call sites, a foreign site table of the record's source attribution
SITES = sources.ForeignSites()


def _enum_value(enum: str, member: str) -> Any:
    """The Python object of a shim enum member: ``ascendc.<enum>[member]`` (HardEvent,
    TPosition, RoundMode, ...) or, for ``pipe_t``, the module constant of that name."""
    if enum == "pipe_t":
        return getattr(ascendc, member)
    cls = getattr(ascendc, enum, None)
    if cls is None:
        raise KernelError(f"the shim's enum {enum} has no counterpart in the simulator")
    try:
        return cls[member]
    except KeyError:
        raise KernelError(f"{enum}::{member} is not modelled by the simulator") from None


@functools.cache
def _string(address: int) -> str:
    """A C string literal of the kernel library (names of API items, enums, structs, sites)."""
    return ctypes.string_at(address).decode("utf-8", "replace")


class CoreState:
    """The front end's per-core state while one core's C++ kernel runs: its GM address map,
    its UB buffers by id, its TPipe / TQue / TBuf objects by handle, and the error a refused
    call left for the kernel's caller."""

    __slots__ = ("rec", "starts", "ends", "names", "bufs", "buf_ids", "objs", "obj_ids",
                 "locals", "globals", "structs", "error", "ub_base", "calls")

    def __init__(self, rec: program.CoreRecorder, gm_map: GmMap, ub_base: int) -> None:
        self.rec = rec
        self.starts, self.ends, self.names = list(gm_map.starts), list(gm_map.ends), \
            list(gm_map.names)
        self.bufs: list[tuple[str, int]] = [("", 0)]  # id 0: bound to no buffer
        self.buf_ids: dict[str, int] = {"": 0}
        self.objs: list[Any] = []
        self.obj_ids: dict[int, int] = {}
        self.locals: dict[tuple[int, int], LocalTensor] = {}
        self.globals: dict[tuple[int, int, int], GlobalTensor] = {}
        self.structs: dict[tuple, Any] = {}
        self.error: BaseException | None = None
        self.ub_base = ub_base
        self.calls: list[tuple[Any, tuple, int]] = []  # by call id: see _prepare

    # -- objects crossing to C++ -------------------------------------------------------------

    def handle(self, obj: Any) -> int:
        h = self.obj_ids.get(id(obj))
        if h is None:
            h = self.obj_ids[id(obj)] = len(self.objs)
            self.objs.append(obj)
        return h

    def buf_id(self, name: str) -> int:
        i = self.buf_ids.get(name)
        if i is None:
            i = self.buf_ids[name] = len(self.bufs)
            self.bufs.append((name, 0))
        return i

    def answer_local(self, t: LocalTensor) -> int:
        _I[0] = (self.buf_id(t.buf) << 8) | _CODE[t.dtype]
        _I[1] = (int(t.addr) << 32) | int(t.limit)
        return 0

    # -- objects from C++ --------------------------------------------------------------------

    def local(self, a: int, b: int) -> LocalTensor:
        t = self.locals.get((a, b))
        if t is None:
            t = self.locals[(a, b)] = LocalTensor(DTYPES[a & 0xFF], self.bufs[a >> 8][0],
                                                  b >> 32, b & 0xFFFFFFFF)
        return t

    def global_(self, addr: int, meta: int, size: int) -> GlobalTensor:
        key = (addr, meta, size)
        g = self.globals.get(key)
        if g is None:
            g = GlobalTensor(DTYPES[meta & 0xFF])
            if meta >> 8:  # set by SetL2CacheHint (the simulator's code + 1)
                g.cache = (meta >> 8) - 1
            k = self._tensor(addr)
            if addr and k >= 0:
                g.name, g.base, g.size = self.names[k], addr - self.starts[k], size
            else:  # nullptr (or below every tensor): bound to nothing, as on device
                g.name, g.base, g.size = "", 0, size
            self.globals[key] = g
        return g

    def gm_addr(self, addr: int) -> GM_ADDR | None:
        if not addr:
            return None
        k = self._tensor(addr)
        if k < 0:
            raise KernelError(f"GM address {addr:#x} lies in no tensor of the launch")
        return GM_ADDR(self.names[k], addr - self.starts[k])

    def _tensor(self, addr: int) -> int:
        """The index of the GM tensor ``addr`` lies in: the last starting at or below it, or,
        when it lies past that one's end, a table of the kernel's own binary that holds it
        (then one more read-only tensor of the launch, see :mod:`gm_tables`)."""
        k = bisect.bisect_right(self.starts, addr) - 1
        if addr and (k < 0 or addr >= self.ends[k]):
            table = find_gm_table(addr)
            if table is not None:
                name = f"{table.name} (a table of the kernel binary)"
                raw = np.ctypeslib.as_array(
                    (ctypes.c_uint8 * table.nbytes).from_address(table.address))
                self.rec.image.add_constant(name, raw)
                k = bisect.bisect_right(self.starts, table.address)
                self.starts.insert(k, table.address)
                self.ends.insert(k, table.address + table.nbytes)
                self.names.insert(k, name)
        return k

    def address(self, g: GM_ADDR) -> int:
        k = self.names.index(g.name)
        return self.starts[k] + int(g.offset)


class GmMap:
    """The launch's GM tensors by real address (the functional image's arrays), for mapping
    the kernel's pointers back to (tensor, byte offset)."""

    __slots__ = ("starts", "ends", "names")

    def __init__(self, gm: dict[str, np.ndarray], writable: frozenset[str] = frozenset()
                 ) -> None:
        spans = sorted((a.ctypes.data, name, a.ctypes.data + a.nbytes)
                       for name, a in gm.items() if a is not None and a.nbytes)
        shared = set()
        for (_, a, end), (start, b, _) in zip(spans, spans[1:]):
            if start < end:
                shared.update((a, b))
        if shared - writable:  # one array passed as two inputs: each read-only input gets
            for name in shared - writable:  # its own bytes, so a pointer names one tensor
                gm[name] = gm[name].copy()
                gm[name].flags.writeable = False
            spans = sorted((a.ctypes.data, name, a.ctypes.data + a.nbytes)
                           for name, a in gm.items() if a is not None and a.nbytes)
        self.starts = [s for s, _, _ in spans]
        self.ends = [e for _, _, e in spans]
        self.names = [n for _, n, _ in spans]


def _decode(st: CoreState, a: list[int], i: int, n: int, out: list[Any]) -> int:
    """Decode the tagged values ``a[i:n]`` into ``out``; the index after them."""
    while i < n:
        i = _decode_one(st, a, i, out)
    return i


def _decode_one(st: CoreState, a: list[int], i: int, out: list[Any]) -> int:
    """Decode the one tagged value at ``a[i]`` into ``out``; the index after it. (A value's
    slots are those of the block, so a double is read where it lies, in ``_D``.)"""
    tag = a[i]
    if tag == LOC:
        out.append(st.local(a[i + 1], a[i + 2]))
        return i + 3
    if tag == INT:
        out.append(a[i + 1])
        return i + 2
    if tag == ENUM:
        out.append(_enum(a[i + 1], a[i + 2]))
        return i + 3
    if tag == GLB:
        out.append(st.global_(a[i + 1], a[i + 2], a[i + 3]))
        return i + 4
    if tag == FLT:
        out.append(_D[i + 1])
        return i + 2
    if tag == HANDLE:
        h = a[i + 1]
        out.append(st.objs[h] if h >= 0 else _unbound(h))
        return i + 2
    if tag == BOOL:
        out.append(bool(a[i + 1]))
        return i + 2
    if tag == NUL:
        out.append(None)
        return i + 1
    if tag == DTYPE:
        out.append(DTYPES[a[i + 1]])
        return i + 2
    if tag == STR:
        out.append(_string(a[i + 1]))
        return i + 2
    if tag == LOCS:
        t = st.local(a[i + 1], a[i + 2])
        t = LocalTensor(t.dtype, t.buf, t.addr, t.limit)
        t.size = a[i + 3]
        out.append(t)
        return i + 4
    if tag in (STRUCT, LIST):  # a count of tagged values follows (a struct: after its name)
        head = 3 if tag == STRUCT else 2
        items: list[Any] = []
        j = i + head
        for _ in range(a[i + head - 1]):
            j = _decode_one(st, a, j, items)
        if tag == LIST:
            out.append(items)
            return j
        key = tuple(a[i:j])  # a struct holds scalars and tensors: its slots name it
        obj = st.structs.get(key)
        if obj is None:
            obj = st.structs[key] = _struct(_string(a[i + 1]), items)
        out.append(obj)
        return j
    raise KernelError(f"the shim passed an argument of unknown tag {tag}")


@functools.cache
def _enum(name_address: int, value: int) -> Any:
    name = _string(name_address)
    members = _E.get(name)
    if members is None or not 0 <= value < len(members):
        raise KernelError(f"the shim passed {name} value {value}, which it does not declare")
    return _enum_value(name, members[value])


def _struct(name: str, fields: list[Any]) -> Any:
    if name == "MrgSortSrcList":
        return ascendc.MrgSortSrcList(*fields)
    cls = getattr(ascendc, name, None)
    if cls is None:
        raise KernelError(f"the shim's {name} has no counterpart in the simulator")
    return cls(*fields)


# -- API items the shim names that are not plain ``ascendc.<name>(*args)`` calls ---------------


def _unbound(h: int) -> Any:
    """A queue (-1) or buffer (-2) the kernel uses before ``TPipe::InitBuffer`` placed it:
    the simulator's own object in that state, whose every use is refused by the API."""
    return TQueBind(TPosition.GM, TPosition.VECIN, 1) if h == -1 else TBuf()


def _init_buffer(pipe: TPipe, obj: Any, name: str, *rest: Any) -> Any:
    """``TPipe::InitBuffer``: the queue or buffer (made on first use, named as the kernel's
    member) placed in UB; answers its handle."""
    label = re.sub(r"^(this\s*->\s*|&|\*)+", "", name.strip()).replace(" ", "")
    if len(rest) == 5:  # a queue: (src, dst, depth, num, len)
        src, dst, depth, num, length = rest
        if not isinstance(obj, TQueBind) or not obj.name:
            obj = TQueBind(src, dst, depth, name=label)
        pipe.InitBuffer(obj, num, length)
    else:  # a TBuf: (pos, len)
        pos, length = rest
        if not isinstance(obj, TBuf) or not obj.name:
            obj = TBuf(pos, name=label)
        pipe.InitBuffer(obj, length)
    return obj


def _mrg_sort_suspended(dst, lists, counts, valid, repeat, flag) -> list[int]:
    """``MrgSort<T, isExhaustedSuspension>(..., sortedNum, ...)``: the counts taken from each
    list come back in the block."""
    taken = [0, 0, 0, 0]
    ascendc.MrgSort(dst, lists, counts, taken, valid, repeat, isExhaustedSuspension=flag)
    return taken


def _assert_failed(cond: str) -> None:
    raise KernelError(f"the kernel's ASSERT({cond}) failed")


# The API items whose Python callable is not ``ascendc.<name>``: methods are called unbound
# (``TQueBind.AllocTensor(queue, dtype)``) so that _call's frame is the one that calls the
# API, as a kernel line is for a Python port (the source attribution finds it at once).
HANDLERS: dict[str, Any] = {
    "ASSERT": _assert_failed,
    "TPipe": TPipe,
    "TPipe.InitBuffer": _init_buffer,
    "TPipe.Init": TPipe.Init,
    "TPipe.Destroy": TPipe.Destroy,
    "TPipe.Release": TPipe.Destroy,
    "TPipe.FetchEventID": TPipe.FetchEventID,
    "TPipe.AllocEventID": TPipe.AllocEventID,
    "TPipe.ReleaseEventID": TPipe.ReleaseEventID,
    "GetTPipePtr": ascendc.GetTPipePtr,
    "TQue.AllocTensor": TQueBind.AllocTensor,
    "TQue.EnQue": TQueBind.EnQue,
    "TQue.DeQue": TQueBind.DeQue,
    "TQue.FreeTensor": TQueBind.FreeTensor,
    "TBuf.Get": TBuf.Get,
    "TBuf.GetWithOffset": TBuf.GetWithOffset,
    "LocalTensor.Fixed": LocalTensor,
    "LocalTensor.GetValue": LocalTensor.GetValue,
    "LocalTensor.SetValue": LocalTensor.SetValue,
    "LocalTensor.SetSize": lambda t, n: LocalTensor(t.dtype, t.buf, t.addr, t.limit).SetSize(n),
    "GlobalTensor.GetValue": GlobalTensor.GetValue,
    "GlobalTensor.SetL2CacheHint": lambda g, mode: _cache_hint(g, mode),
    "MrgSort<isExhaustedSuspension>": _mrg_sort_suspended,
    "DataCopyPadGm2UBImpl": lambda ub, g, p, pad: datacopy.DataCopyPadGm2UBImpl(
        ub, GM_ADDR(g.name, g.base) if g.name else None, p, pad),
    "DataCopyPadUB2GMImpl": lambda g, ub, p: datacopy.DataCopyPadUB2GMImpl(
        GM_ADDR(g.name, g.base) if g.name else None, ub, p),
}


def _cache_hint(g: GlobalTensor, mode: Any) -> int:
    t = GlobalTensor(g.dtype)
    t.SetL2CacheHint(mode)
    return t.cache + 1


@functools.cache
def _handler(name: str) -> Any:
    """The Python callable of an API item: a handler above, ``ascendc.<name>``, or for
    ``Name<flag>`` ``ascendc.Name`` with its last argument as the keyword ``flag``."""
    h = HANDLERS.get(name)
    if h is not None:
        return h
    m = re.fullmatch(r"(\w+)<(\w+)>", name)
    if m and getattr(ascendc, m.group(1), None) is not None:
        return getattr(ascendc, m.group(1)), m.group(2)  # the flag is a keyword argument
    fn = getattr(ascendc, name, None)
    if fn is None and name in ("GetUserWorkspace", "GetSysWorkSpacePtr"):
        fn = getattr(utils, name, None)
    if fn is None:
        raise KernelError(f"the shim called {name}, which aicore-sim does not provide yet")
    return fn


_site_ids: dict[int, int] = {}  # a call site's key (file address ^ line << 48) -> SITES index
_UNPACK = [struct.Struct(f"{n}q").unpack_from for n in range(ARG_SLOTS + 1)]
_ACTIVE = program._ACTIVE  # the recorder of the running core is the last one


def _prepare(st: CoreState, a: tuple[int, ...]) -> tuple[Any, tuple, int]:
    """(callable, arguments, site id) of a call's slots ``a``: what :func:`_call` keeps per
    distinct call of a core (a call repeated with the same arguments is decoded once)."""
    name = _string(a[0])
    args: list[Any] = []
    _decode(st, list(a), 5, len(a), args)
    sid = _site_ids.get(a[1])
    if sid is None:
        sid = _site_ids[a[1]] = SITES.add(sources.Site(_string(a[2]), a[4], _string(a[3])))
    if name == "GetUserWorkspace":  # a pointer into the launch's workspace, not a tensor
        return functools.partial(_user_workspace, st), tuple(args), sid
    fn = _handler(name)
    if isinstance(fn, tuple):  # Name<flag>: the last argument is the keyword ``flag``
        fn, kw = fn
        return functools.partial(fn, **{kw: args.pop()}), tuple(args), sid
    return fn, tuple(args), sid


def _user_workspace(st: CoreState, address: int) -> int:
    """``GetUserWorkspace(workspace)`` on a GM address: the user part's address."""
    if not address:
        # on device this is address arithmetic on the null pointer the launch passed when
        # the host asked for no workspace: harmless until used, and a use of the result
        # fails then (a GlobalTensor bound to nullptr), so it answers nullptr here
        return 0
    return st.address(utils.GetUserWorkspace(st.gm_addr(address)))


def _call(n: int) -> int:
    """The callback: a call seen first (``n`` slots) is decoded and given the next id, which
    the shim keeps; a call seen before arrives as its id (``n`` = -1 - id). Call the API item,
    give its instructions the C++ site, answer."""
    st = None
    try:
        rec = _ACTIVE[-1]
        st = rec.front
        new = -1
        if n < 0:
            fn, args, sid = st.calls[-1 - n]
        else:
            fn, args, sid = hit = _prepare(st, _UNPACK[n](_BLOCK))
            new = len(st.calls)
            st.calls.append(hit)
        sites = rec.sites
        n0 = len(sites)
        r = fn(*args)
        rec._frame = None  # let this call's frame go as it returns (no copy of it is kept)
        n1 = len(sites)
        if n1 > n0:
            if n1 == n0 + 1:
                sites[n0] = sid
            else:
                sites[n0:n1] = [sid] * (n1 - n0)
        # the block is this core's again only now (a SyncAll let the other cores use it)
        if new >= 0:
            _I[ID_SLOT] = new
        return 0 if r is None else _answer(st, r)
    except BaseException as e:  # noqa: BLE001 - handed to the kernel's caller
        if st is None and _ACTIVE:
            st = _ACTIVE[-1].front
        if st is not None and st.error is None:
            st.error = e
        _I[ID_SLOT] = -1
        _I[ERR_SLOT] = 1
        return 0


def _answer(st: CoreState, r: Any) -> int:
    """``r`` into the callback's answer: ints and bools returned, floats and tensors in the
    block, simulator objects as handles."""
    if r is None:
        return 0
    if isinstance(r, (bool, int)):
        return int(r)
    if isinstance(r, LocalTensor):
        return st.answer_local(r)
    if isinstance(r, np.generic):
        if r.dtype.kind in "iub":
            return int(r)
        _D[0] = float(r)  # floats, bfloat16 included, come back as a double
        return 0
    if isinstance(r, float):
        _D[0] = r
        return 0
    if isinstance(r, list):  # counts (MrgSort's sortedNum)
        for k, v in enumerate(r):
            _I[k] = int(v)
        return 0
    if isinstance(r, (TPipe, TQueBind, TBuf)):
        return st.handle(r)
    raise KernelError(f"the simulator answered a {type(r).__name__}, which the shim cannot "
                      "take back")


_CALLBACK = CALLBACK(_call)
CALLBACK_ADDRESS = ctypes.cast(_CALLBACK, ctypes.c_void_p).value

# the callback's frame is where the C++ kernel's calls enter: the record's source attribution
# stops there (not walking on into the record pass's own frames), and _call writes the C++
# site over the offsets it noted
for _f in (_call, *(h for h in HANDLERS.values()
                   if h.__class__ is _call.__class__ and h.__module__ == __name__)):
    sources.CODE_TAGS[id(_f.__code__)] = SITES.tag

__all__ = ["ARG_BLOCK_ADDRESS", "CALLBACK_ADDRESS", "DTYPES", "INCLUDE", "SITES", "CoreState",
           "GmMap", "header_enums"]

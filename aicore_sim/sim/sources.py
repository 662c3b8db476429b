"""Source attribution: which line of the kernel port issued each recorded instruction.

Step of the flow: the record pass (``program.CoreRecorder.emit``) finds, once per Ascend C
call, the first frame outside the simulator's own package (the kernel port's line calling
the API) and stores a small int per instruction; a :class:`Sources` (the site table plus one
int32 array per core, by stream index) goes with the program into the Trace, where the
summary's hot spots and the trace's ``source`` args read it.

A *site* is ``(path, line, function)``: the path relative to the folder holding the
``aicore_sim`` package (the checkout, or site-packages), e.g.
``op_models/moe_token_unpermute_with_ep_grad/kernel_prob_not_none.py``; a file elsewhere keeps
its absolute path. Instructions the simulator issues on the kernel's behalf at its end (the
``TPipe`` teardown: pending free-event waits and the final ``PipeBarrier<PIPE_ALL>``) are
attributed to the record pass's line that runs the teardown.

Cost, per call: the kernel's frame (two above ``emit``, or three for an API function that
goes through a helper of its own or a ``TQue`` method's flag), an identity test against the
last call's frame, and its bytecode offset appended to a list. A call from another frame
compares its code with the last call's; a call from another kernel function looks its tag up
by code id (:data:`CODE_TAGS`) and notes where the run of that function's calls starts; a
frame of the simulator's own code costs a walk up. Offsets become sites once per range of
cores recorded together, with numpy (:func:`site_ids`). Measured in
``reports/source_attribution.md``.
"""

from __future__ import annotations

import bisect
import functools
import os
from dataclasses import dataclass
from operator import itemgetter
from pathlib import Path
from typing import NamedTuple

import numpy as np

PACKAGE_DIR = str(Path(__file__).resolve().parents[1])
"""The simulator's package: frames here are the API, not the kernel."""
ROOT = Path(PACKAGE_DIR).parent
"""Paths of sites are relative to this folder (the checkout, or site-packages)."""

NO_SITE = -1


class Site(NamedTuple):
    """A line of a kernel port that called an Ascend C API."""

    path: str
    line: int
    func: str

    def __str__(self) -> str:
        if not self.line:  # a place of the simulator's own, named (KERNEL_END)
            return f"{self.path} {self.func}"
        return f"{self.path}:{self.line} {self.func}"


KERNEL_END = Site("(kernel end)", 0, "TPipe teardown")
"""The site of what the simulator issues when a kernel returns (the TPipes it left alive are
destroyed: their final barrier): named, not a line of the simulator's own files, so it stays
the same from one version to the next."""


API = -1
""":data:`CODE_TAGS` value of a code object of the simulator's own: the kernel line is above."""
CODE_TAGS: dict[int, int] = {}
"""id of a code object -> its tag (the kernel function's number, >= 0), or :data:`API`. The
record pass notes a call as its function's tag and the call's bytecode offset (offsets, not
lines: a frame's line is computed by scanning its code's line table, its offset is at hand);
:func:`site_ids` makes them sites."""
SITES: list[Site] = []
"""This process's site table (ids are indices; a forked record inherits it and extends it)."""
_codes: dict[int, object] = {}  # id -> code object: kept alive, so no id is ever reused
_tagged: list[object] = []  # kernel code objects by tag
_by_site: dict[Site, int] = {}
_api_files: dict[str, bool] = {}
_stop: list[object] = [None]  # the code object that counts as a kernel line (see stop_at)
_line_tables: dict[int, list] = {}  # id of a code object -> its co_lines()
_UNKNOWN = -2
_lut = np.full((0, 0), _UNKNOWN, np.int32)  # site id by (tag, offset)


class ForeignSites:
    """The sites of a kernel not written in Python (the C++ front end): the record notes each
    of its calls under this table's :attr:`tag` with the call's index here in place of a
    bytecode offset, and :func:`site_ids` reads the site from the table."""

    def __init__(self) -> None:
        self.tag = len(_tagged)
        _tagged.append(self)
        self.sites: list[Site] = []

    def add(self, site: Site) -> int:
        """The index of a new site."""
        self.sites.append(site)
        return len(self.sites) - 1


def stop_at(func) -> None:
    """Attribute instructions issued under ``func`` (simulator code: the kernel end) to
    :data:`KERNEL_END`."""
    _stop[0] = func.__code__
    if CODE_TAGS.get(id(func.__code__)) == API:
        del CODE_TAGS[id(func.__code__)]


@functools.cache
def _relative(filename: str) -> str:
    try:
        return Path(filename).resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return os.path.abspath(filename)


def _site_id(site: Site) -> int:
    sid = _by_site.get(site)
    if sid is None:
        sid = _by_site[site] = len(SITES)
        SITES.append(site)
    return sid


def code_tag(code) -> int:
    """The :data:`CODE_TAGS` entry of ``code`` (made on first use)."""
    key = id(code)
    tag = CODE_TAGS.get(key)
    if tag is not None:
        return tag
    name = code.co_filename
    api = _api_files.get(name)
    if api is None:
        api = _api_files[name] = os.path.abspath(name).startswith(PACKAGE_DIR + os.sep)
    _codes[key] = code
    if api and code is not _stop[0]:
        tag = API
    else:
        tag = len(_tagged)
        _tagged.append(code)
    CODE_TAGS[key] = tag
    return tag


def kernel_frame(f) -> tuple[object, int]:
    """The first frame from ``f`` up that is not the simulator's own code, and its code's
    tag."""
    while True:
        tag = code_tag(f.f_code)
        if tag != API:
            return f, tag
        f = f.f_back


def _line_of(code, offset: int) -> int:
    """The source line of bytecode ``offset`` of ``code`` (0 where it has none)."""
    table = _line_tables.get(id(code))
    if table is None:  # (first offset, end offset, line) ranges, in offset order
        table = _line_tables[id(code)] = list(code.co_lines())
    k = bisect.bisect_right(table, offset, key=itemgetter(0)) - 1
    return (table[k][2] or 0) if k >= 0 and offset < table[k][1] else 0


def site_ids(tags: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Site ids (int32) of calls given by their function's :func:`code_tag` and bytecode
    offset (a negative tag or offset: no site); each line is entered in the site table on
    first use."""
    global _lut
    if not tags.size:
        return np.zeros(0, np.int32)
    # the usual case: every position is a call, looked up as it is
    ok = None if min(int(tags.min()), int(offsets.min())) >= 0 else \
        np.flatnonzero((tags >= 0) & (offsets >= 0))
    tag, offset = (tags, offsets) if ok is None else (tags[ok], offsets[ok])
    if not tag.size:
        return np.full(tags.size, NO_SITE, np.int32)
    rows, cols = int(tag.max()) + 1, int(offset.max()) + 1
    if rows > _lut.shape[0] or cols > _lut.shape[1]:
        grown = np.full((max(rows, _lut.shape[0]), max(cols, _lut.shape[1])), _UNKNOWN,
                        np.int32)
        grown[:_lut.shape[0], :_lut.shape[1]] = _lut
        _lut = grown
    at = tag * _lut.shape[1] + offset  # into the flat table
    got = _lut.reshape(-1).take(at)
    new = got == _UNKNOWN
    if new.any():  # calls not seen yet: their lines, once per distinct call (no sort)
        seen = np.zeros(_lut.size, bool)
        seen[at[new]] = True
        for t, off in (divmod(k, _lut.shape[1]) for k in np.flatnonzero(seen).tolist()):
            code = _tagged[t]
            _lut[t, off] = _site_id(
                code.sites[off] if isinstance(code, ForeignSites) else
                KERNEL_END if code is _stop[0] else
                Site(_relative(code.co_filename), _line_of(code, off), code.co_name))
        got = _lut.reshape(-1).take(at)
    if ok is None:
        return got
    out = np.full(tags.size, NO_SITE, np.int32)
    out[ok] = got
    return out


def remap(sites: np.ndarray, table: list[Site]) -> np.ndarray:
    """Site ids of another process's ``table`` as ids of this process's :data:`SITES`."""
    lut = np.array([_site_id(s) for s in table] + [NO_SITE], np.int32)
    return lut[sites]  # NO_SITE (-1) maps to the last entry: NO_SITE


@dataclass
class Sources:
    """The sites of a launch's instructions: ``table`` of sites and, per core, the site id of
    each stream position (int32; :data:`NO_SITE` when unknown)."""

    table: list[Site]
    per_core: list[np.ndarray]

    def site(self, core: int, index: int) -> Site | None:
        sid = int(self.per_core[core][index])
        return self.table[sid] if sid != NO_SITE else None

    def labels(self) -> list[str]:
        """``"path:line func"`` of every site id."""
        return [str(s) for s in self.table]


__all__ = ["API", "CODE_TAGS", "ForeignSites", "NO_SITE", "ROOT", "SITES", "Site", "Sources",
           "KERNEL_END", "code_tag", "kernel_frame", "remap", "site_ids", "stop_at"]

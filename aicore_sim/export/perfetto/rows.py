"""Rendering rows of events as a byte matrix (step: the Perfetto export): one NUL-padded row
per event, numbers written as digits by table look-ups on whole columns, static text gathered
by row; :func:`compact` drops the padding. Also JSON string bodies and compact JSON."""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np


def _digit_tables() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Three-digit groups as 4-byte little-endian words (the 4th byte is NUL scratch).

    ``_LOW4`` / ``_HIGH4`` are indexed by ``group + 1000 * (a higher group is non-zero)``:
    the first half has no leading zeros (``"  7"``; the lowest group keeps one ``"  0"``, a
    higher one is blank), the second half is zero-filled (``"007"``). ``_FRAC4`` is ``".007"``.
    Padding is NUL, removed once the rows are rendered (a JSON text never holds a raw NUL).
    """
    def words(texts: list[bytes]) -> np.ndarray:
        raw = b"".join(t.ljust(4, b"\0") for t in texts).replace(b" ", b"\0")
        return np.frombuffer(raw, "<u4").copy()

    full = [b"%03d" % i for i in range(1000)]
    lead = [b"%3d" % i for i in range(1000)]
    blank = [b""] + lead[1:]
    return (words(lead + full), words(blank + full), words([b".%03d" % i for i in range(1000)]))


_LOW4, _HIGH4, _FRAC4 = _digit_tables()


def _groups(v: np.ndarray) -> int:
    """Three-digit groups needed for the largest of ``v`` (>= 1)."""
    if not v.size:
        return 1
    if int(v.min()) < 0:
        raise ValueError("negative value in a trace column")
    return max(1, (len(str(int(v.max()))) + 2) // 3)


def _words(m: np.ndarray, col: int) -> np.ndarray:
    """Column ``col`` of the byte matrix ``m`` seen as (unaligned) 4-byte words, one per row."""
    return np.ndarray((m.shape[0],), "<u4", m, col, (m.shape[1],))


def _put_int(m: np.ndarray, col: int, v: np.ndarray, ng: int) -> None:
    """Write non-negative ints ``v`` right-aligned into ``m[:, col:col + 3 * ng]``.

    One 4-byte store per three-digit group, most significant first: each store's NUL scratch
    byte lands where the next one writes, the last one's on ``m[:, col + 3 * ng]``.
    """
    q = [v]
    for _ in range(ng - 1):
        q.append(q[-1] // 1000)
    q.append(None)
    for g in range(ng - 1, -1, -1):
        above = q[g + 1]
        if above is None:
            idx = q[g]
        else:
            idx = q[g] - above * 1000
            idx += 1000 * (above > 0)
        _words(m, col + 3 * (ng - 1 - g))[:] = (_LOW4 if g == 0 else _HIGH4)[idx]


class Int:
    """A column of non-negative integers (one NUL scratch byte after the digits)."""

    def __init__(self, v: np.ndarray) -> None:
        self.v = np.asarray(v, dtype=np.int64)
        self.ng = _groups(self.v)
        self.width = 3 * self.ng + 1

    def put(self, m: np.ndarray, col: int) -> None:
        _put_int(m, col, self.v, self.ng)


class Us:
    """A column of whole ns written as µs with three decimals (``12.345``)."""

    def __init__(self, ns: np.ndarray) -> None:
        ns = np.asarray(ns, dtype=np.int64)
        self.q = ns // 1000
        self.r = ns - self.q * 1000
        self.ng = _groups(self.q)
        self.width = 3 * self.ng + 4

    def put(self, m: np.ndarray, col: int) -> None:
        _put_int(m, col, self.q, self.ng)  # its scratch byte is where the "." goes
        _words(m, col + 3 * self.ng)[:] = _FRAC4[self.r]


class Text:
    """A column of byte strings, NUL-padded: a (k, width) uint8 matrix."""

    def __init__(self, mat: np.ndarray) -> None:
        self.mat = mat
        self.width = mat.shape[1]

    def put(self, m: np.ndarray, col: int) -> None:
        m[:, col:col + self.width] = self.mat


def text_table(items: list[bytes]) -> np.ndarray:
    """Byte strings as a NUL-padded (n, width) uint8 matrix."""
    arr = np.array(items, dtype=bytes)
    return arr.view(np.uint8).reshape(len(items), arr.dtype.itemsize)


def render(k: int, parts: list) -> np.ndarray:
    """``k`` rows, each the concatenation of ``parts`` (bytes or columns): a NUL-padded matrix.

    :func:`compact` turns it into the text (done by the writer thread: NumPy releases the GIL
    there, so the rendering of the next chunk goes on meanwhile).
    """
    widths = [len(p) if isinstance(p, bytes) else p.width for p in parts]
    row = np.zeros(sum(widths), np.uint8)
    col = 0
    for p, w in zip(parts, widths):
        if isinstance(p, bytes):
            row[col:col + w] = np.frombuffer(p, np.uint8)
        col += w
    m = np.empty((k, row.size), np.uint8)
    if not k:
        return m
    m[:] = row
    col = 0
    for p, w in zip(parts, widths):
        if not isinstance(p, bytes):
            p.put(m, col)
        col += w
    return m


def compact(piece: bytes | np.ndarray) -> bytes | np.ndarray:
    """The text of a chunk: a rendered matrix without its NUL padding (bytes pass through)."""
    if isinstance(piece, np.ndarray):
        flat = piece.reshape(-1)
        return flat[flat != 0]
    return piece


_NEEDS_ESCAPE = re.compile(r'[\x00-\x1f"\\]')


def str_table(strings: list[str]) -> np.ndarray:
    """JSON string bodies (escaped, no quotes) of ``strings`` as a UTF-8 :func:`text_table`."""
    if _NEEDS_ESCAPE.search("".join(strings)):
        strings = [json.dumps(s, ensure_ascii=False)[1:-1] for s in strings]
    try:
        arr = np.array(strings, dtype=bytes)  # ASCII: encoded in C
    except UnicodeEncodeError:
        arr = np.array([s.encode() for s in strings], dtype=bytes)
    return arr.view(np.uint8).reshape(len(strings), arr.dtype.itemsize)


def dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"))

"""JSON and TOML a user hands the simulator, read exactly (step: the inputs).

Every JSON input surface - case files, sweep specs, case matrices, ATK records, platform
objects on the command line or in sweep axes, a run's ``summary.json`` given to ``diff`` - is
decoded by :func:`loads_json`, and every TOML one - sweep specs, case matrices, platform preset
files and overlays - by :func:`loads_toml`. Both keep their format's syntax and add the rules a
parser alone does not check:

* **each key once per object**: ``{"platform": "a", "platform": "b"}`` is refused (Python's
  ``json`` keeps the last value silently: which one did the author mean?); :mod:`tomllib`
  already refuses a key given twice, and so a table given twice;
* **at most** :data:`MAX_DEPTH` **levels of nesting**: no input of ours nests deeper than a
  handful; deeper text would only exhaust the parser's stack (both parsers recurse);
* **at most** :data:`MAX_BYTES` **bytes**: our documents describe cases, specs and platforms
  (arrays come as ``.npy``), so the largest real one is tens of KiB; a file is refused from its
  size before it is read (:func:`read_document`), so a wrong path to a huge file costs nothing.

Errors are :class:`TextInputError` (a ``ValueError``) whose message is the rule only; the
caller prefixes the file or option it read.
"""

from __future__ import annotations

import json
import os
import tomllib
from typing import Any

MAX_DEPTH = 64
MAX_BYTES = 16 * 1024 * 1024  # 16 MiB: several hundred times the largest bundled document


class TextInputError(ValueError):
    """Text that is not JSON / TOML, or that breaks one of this module's rules."""


class NotUtf8Error(TextInputError):
    """A document whose bytes are not UTF-8: the first bad byte and its offset."""

    def __init__(self, byte: int, offset: int) -> None:
        super().__init__(f"not UTF-8 text (offset {offset})")
        self.byte, self.offset = byte, offset


class _DuplicateKeyError(Exception):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _DuplicateKeyError(k)
        out[k] = v
    return out


_TOO_DEEP = f"nested deeper than {MAX_DEPTH} levels; no aicore-sim input nests that deep"


def _depth_ok(doc: Any) -> None:
    """Refuse a decoded document nested deeper than :data:`MAX_DEPTH` (walked without
    recursion, so the check itself cannot exhaust the stack)."""
    stack = [(doc, 1)]
    while stack:
        v, d = stack.pop()
        if d > MAX_DEPTH:
            raise TextInputError(_TOO_DEEP)
        if isinstance(v, dict):
            stack.extend((x, d + 1) for x in v.values() if isinstance(x, (dict, list)))
        elif isinstance(v, list):
            stack.extend((x, d + 1) for x in v if isinstance(x, (dict, list)))


_TOO_BIG = (f"larger than {MAX_BYTES // (1024 * 1024)} MiB; no aicore-sim document is that "
            "large (input arrays go in .npy files)")


def _size_ok(text: str | bytes) -> None:
    if len(text) > MAX_BYTES:
        raise TextInputError(_TOO_BIG)


def read_document(path: str | os.PathLike) -> bytes:
    """The bytes of a JSON / TOML file, refused (:class:`TextInputError`) when it holds more
    than :data:`MAX_BYTES`: a regular file from its size, before a byte is read; a pipe or a
    device (no size) after at most one byte past the cap. ``OSError`` as ``open`` raises it."""
    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size > MAX_BYTES:
            raise TextInputError(_TOO_BIG)
        data = f.read(MAX_BYTES + 1)
    _size_ok(data)
    return data


def read_text(path: str | os.PathLike) -> str:
    """The text of a UTF-8 JSON / TOML file (:func:`read_document`): a file that cannot be read
    is a :class:`TextInputError` giving the system's reason, one that is not UTF-8 a
    :class:`NotUtf8Error`."""
    try:
        return read_document(path).decode("utf-8")
    except OSError as e:
        raise TextInputError(f"cannot read ({e.strerror})") from None
    except UnicodeDecodeError as e:
        raise NotUtf8Error(e.object[e.start], e.start) from None


def loads_json(text: str | bytes) -> Any:
    """``json.loads(text)`` refusing duplicate keys, deep nesting and size (module docstring)."""
    _size_ok(text)
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    try:
        doc = json.loads(text, object_pairs_hook=_pairs)
    except _DuplicateKeyError as e:
        raise TextInputError(f"duplicate key {json.dumps(e.key)}: a key may appear once per "
                             "object (which value was meant?)") from None
    except json.JSONDecodeError as e:
        raise TextInputError(f"not valid JSON (line {e.lineno}, column {e.colno}: {e.msg})"
                             ) from None
    except RecursionError:  # the parser's own guard, far deeper than MAX_DEPTH
        raise TextInputError(_TOO_DEEP) from None
    _depth_ok(doc)
    return doc


def loads_toml(text: str | bytes) -> dict[str, Any]:
    """``tomllib.loads(text)`` (which refuses a key given twice) refusing deep nesting and
    size."""
    _size_ok(text)
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as e:
            raise TextInputError(f"not UTF-8 text (offset {e.start}); TOML is UTF-8") from None
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise TextInputError(f"not valid TOML ({e})") from None
    except RecursionError:
        raise TextInputError(_TOO_DEEP) from None
    _depth_ok(doc)
    return doc


__all__ = ["MAX_BYTES", "MAX_DEPTH", "NotUtf8Error", "TextInputError", "loads_json", "loads_toml",
           "read_document", "read_text"]

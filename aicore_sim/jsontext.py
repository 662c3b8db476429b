"""JSON a user hands the simulator, read exactly (step: the inputs).

Every JSON input surface - case files, sweep specs, case matrices, ATK records, platform
objects on the command line or in sweep axes - is decoded by :func:`loads`, which keeps the
syntax of :func:`json.loads` and adds two rules a JSON parser does not check:

* **each key once per object**: ``{"platform": "a", "platform": "b"}`` is refused (Python
  keeps the last value silently: which one did the author mean?);
* **at most** :data:`MAX_DEPTH` **levels of nesting**: no input of ours nests deeper than a
  handful; deeper text would only exhaust the parser's stack.

TOML needs nothing extra: :mod:`tomllib` already refuses a key given twice.

Errors are :class:`JSONTextError` (a ``ValueError``) whose message is the rule only; the
caller prefixes the file or option it read.
"""

from __future__ import annotations

import json
from typing import Any

MAX_DEPTH = 64


class JSONTextError(ValueError):
    """Text that is not JSON, or JSON that breaks one of this module's rules."""


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


def _depth_ok(doc: Any) -> None:
    """Refuse a decoded document nested deeper than :data:`MAX_DEPTH` (walked without
    recursion, so the check itself cannot exhaust the stack)."""
    stack = [(doc, 1)]
    while stack:
        v, d = stack.pop()
        if d > MAX_DEPTH:
            raise JSONTextError(f"nested deeper than {MAX_DEPTH} levels; no aicore-sim input "
                                "nests that deep")
        if isinstance(v, dict):
            stack.extend((x, d + 1) for x in v.values() if isinstance(x, (dict, list)))
        elif isinstance(v, list):
            stack.extend((x, d + 1) for x in v if isinstance(x, (dict, list)))


def loads(text: str | bytes) -> Any:
    """``json.loads(text)`` refusing duplicate keys and deep nesting (module docstring)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    try:
        doc = json.loads(text, object_pairs_hook=_pairs)
    except _DuplicateKeyError as e:
        raise JSONTextError(f"duplicate key {json.dumps(e.key)}: a key may appear once per "
                            "object (which value was meant?)") from None
    except json.JSONDecodeError as e:
        raise JSONTextError(f"not valid JSON (line {e.lineno}, column {e.colno}: {e.msg})"
                            ) from None
    except RecursionError:  # the parser's own guard, far deeper than MAX_DEPTH
        raise JSONTextError(f"nested deeper than {MAX_DEPTH} levels; no aicore-sim input "
                            "nests that deep") from None
    _depth_ok(doc)
    return doc


__all__ = ["MAX_DEPTH", "JSONTextError", "loads"]

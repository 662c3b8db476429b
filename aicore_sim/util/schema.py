"""Field rules of the documents a user hands the simulator, declared once per surface.

Step of the flow: the inputs, right after :mod:`aicore_sim.util.textinput` has decoded the text
(syntax, duplicate keys, nesting, size). Each surface - case files (``casefile.py``), sweep
specs (``sweep/spec.py``), case matrices (``verify/matrix.py``), ATK records
(``verify/atk.py``), platform fields (``platform.py``), figure cells of a board profile
(``correlate/opprof.py``), the figures of a run's ``summary.json`` given to ``diff``
(``rundiff.py``) - declares its fields as a tree of rules
(:class:`Table` of :class:`Int`, :class:`Number`, :class:`Text`, :class:`Choice`,
:class:`ListOf`, ...) and :meth:`Rule.check` walks the document once, returning the values in
their canonical form. Every refusal is an :class:`FieldError` in one form, whatever the surface:

- ``<path>: expected <what the rule accepts>, got <the value>`` for a wrong type or range;
- ``<path>: unknown field; expected some of [...]`` for a key the table does not declare;
- ``<path>: missing; this field is required`` for a required key that is absent.

``<path>`` is the field's place in the document (``inputs.probs.shape[1]``); the surface puts
its file name (and its error class) in front.
"""

from __future__ import annotations

import json
import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any


class FieldError(ValueError):
    """A value that breaks its field's rule; ``path`` is the field, ``rule`` what is wrong."""

    def __init__(self, path: str, rule: str) -> None:
        super().__init__(f"{path}: {rule}" if path else rule)
        self.path = path
        self.rule = rule


def shown(value: Any, limit: int = 80) -> str:
    """A value as a message quotes it: JSON, cut to ``limit`` characters."""
    try:
        text = json.dumps(value, default=str, ensure_ascii=False)
    except ValueError:  # a nested structure too deep or circular: its type will do
        text = type(value).__name__
    return text if len(text) <= limit else text[:limit - 3] + "..."


def key_path(path: str, key: str) -> str:
    """The path of field ``key`` inside the table at ``path``."""
    return f"{path}.{key}" if path else key


def item_path(path: str, index: int) -> str:
    """The path of item ``index`` of the list at ``path``."""
    return f"{path}[{index}]"


class Rule(ABC):
    """What one field accepts. ``what`` completes "expected ..." in messages."""

    what = "a value"

    @abstractmethod
    def check(self, value: Any, path: str) -> Any:
        """The value in canonical form, or :class:`FieldError` naming ``path`` and the rule."""

    def fail(self, value: Any, path: str) -> FieldError:
        return FieldError(path, f"expected {self.what}, got {shown(value)}")


def _bounds(lo: float | None, hi: float | None, above: float | None = None) -> str:
    parts = []
    if above is not None:
        parts.append(f"> {above:g}")
    if lo is not None:
        parts.append(f">= {lo:g}")
    if hi is not None:
        parts.append(f"<= {hi:g}")
    return (" " + " and ".join(parts)) if parts else ""


@dataclass(frozen=True)
class Int(Rule):
    """An integer within ``[minimum, maximum]``; ``whole_floats`` also takes ``4.0`` (TOML and
    JSON writers may print integers so). Booleans are never integers."""

    minimum: int | None = None
    maximum: int | None = None
    whole_floats: bool = False

    @property
    def what(self) -> str:  # type: ignore[override]
        return "an integer" + _bounds(self.minimum, self.maximum)

    def check(self, value: Any, path: str) -> int:
        if self.whole_floats and isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(value, path)
        if (self.minimum is not None and value < self.minimum) or (
                self.maximum is not None and value > self.maximum):
            raise self.fail(value, path)
        return value


@dataclass(frozen=True)
class Number(Rule):
    """A finite number (int or float, returned as float) ``> above`` and within
    ``[minimum, maximum]``."""

    minimum: float | None = None
    maximum: float | None = None
    above: float | None = None

    @property
    def what(self) -> str:  # type: ignore[override]
        return "a finite number" + _bounds(self.minimum, self.maximum, self.above)

    def check(self, value: Any, path: str) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.fail(value, path)
        try:
            v = float(value)
        except OverflowError:  # an integer beyond any float
            raise self.fail(value, path) from None
        if not math.isfinite(v) or (self.above is not None and v <= self.above) or (
                self.minimum is not None and v < self.minimum) or (
                self.maximum is not None and v > self.maximum):
            raise self.fail(value, path)
        return v


@dataclass(frozen=True)
class Text(Rule):
    """A string, non-empty unless ``empty`` is allowed."""

    empty: bool = False

    @property
    def what(self) -> str:  # type: ignore[override]
        return "a string" if self.empty else "a non-empty string"

    def check(self, value: Any, path: str) -> str:
        if not isinstance(value, str) or (not value and not self.empty):
            raise self.fail(value, path)
        return value


@dataclass(frozen=True)
class Flag(Rule):
    """``true`` or ``false``."""

    what = "true or false"

    def check(self, value: Any, path: str) -> bool:
        if not isinstance(value, bool):
            raise self.fail(value, path)
        return value


@dataclass(frozen=True)
class Choice(Rule):
    """One of a fixed set of values (compared by type and value: ``1`` is not ``true``)."""

    values: tuple[Any, ...]

    @property
    def what(self) -> str:  # type: ignore[override]
        return f"one of {list(self.values)}"

    def check(self, value: Any, path: str) -> Any:
        for v in self.values:
            if type(v) is type(value) and v == value:
                return value
        raise self.fail(value, path)


@dataclass(frozen=True)
class Null(Rule):
    """JSON ``null`` (with :class:`AnyOf`: a field that may be left empty)."""

    what = "null"

    def check(self, value: Any, path: str) -> None:
        if value is not None:
            raise self.fail(value, path)


@dataclass(frozen=True)
class Anything(Rule):
    """Any value (a field whose rules depend on another field, checked in a second step)."""

    what = "any value"

    def check(self, value: Any, path: str) -> Any:
        return value


@dataclass(frozen=True)
class ListOf(Rule):
    """A list whose items each follow ``item``; ``nonempty``, an exact ``length`` and
    ``unique`` items are further rules."""

    item: Rule = field(default_factory=Anything)
    nonempty: bool = True
    length: int | None = None
    unique: bool = False

    @property
    def what(self) -> str:  # type: ignore[override]
        size = (f"a list of {self.length} items" if self.length is not None
                else "a non-empty list" if self.nonempty else "a list")
        return size if isinstance(self.item, Anything) else f"{size}, each {self.item.what}"

    def check(self, value: Any, path: str) -> list[Any]:
        if not isinstance(value, list) or (self.nonempty and not value) or (
                self.length is not None and len(value) != self.length):
            raise self.fail(value, path)
        out = [self.item.check(v, item_path(path, i)) for i, v in enumerate(value)]
        if self.unique and len(set(map(repr, out))) != len(out):
            raise FieldError(path, f"values repeat: {shown(value)}")
        return out


@dataclass(frozen=True)
class AnyOf(Rule):
    """The first of ``rules`` the value follows; none: the error inside the value of the first
    rule that took its kind (a table with a bad field), else "expected A or B"."""

    rules: tuple[Rule, ...]

    @property
    def what(self) -> str:  # type: ignore[override]
        return " or ".join(r.what for r in self.rules)

    def check(self, value: Any, path: str) -> Any:
        inner = None
        for r in self.rules:
            try:
                return r.check(value, path)
            except FieldError as e:
                if inner is None and e.path != path:
                    inner = e  # this rule took the value's kind; a part of it is wrong
        raise inner if inner is not None else self.fail(value, path)


@dataclass(frozen=True)
class Custom(Rule):
    """A rule only code can state (a dtype name, a platform preset): ``convert(value)`` returns
    the canonical value or raises ``ValueError`` whose text is the rule; ``what`` is what a
    wrong type is told it should have been, ``kinds`` the types it takes."""

    convert: Callable[[Any], Any]
    what_text: str
    kinds: tuple[type, ...] = (object,)

    @property
    def what(self) -> str:  # type: ignore[override]
        return self.what_text

    def check(self, value: Any, path: str) -> Any:
        if isinstance(value, bool) and bool not in self.kinds or not isinstance(value,
                                                                                 self.kinds):
            raise self.fail(value, path)
        try:
            return self.convert(value)
        except FieldError as e:  # a rule checked inside convert, at this field
            raise FieldError(e.path or path, e.rule) from None
        except (ValueError, KeyError, TypeError) as e:
            raise FieldError(path, str(e.args[0]) if e.args else str(e)) from None


@dataclass(frozen=True)
class Table(Rule):
    """An object / TOML table of declared ``fields``: unknown keys are refused (unless
    ``open``: records of a foreign format keep fields we do not read), ``required`` keys must
    be present; a present key whose value is ``null`` counts as absent when
    ``null_is_absent``. Returns the checked fields present, in declaration order (then, when
    ``open``, the undeclared ones as given)."""

    fields: Mapping[str, Rule]
    required: tuple[str, ...] = ()
    open: bool = False
    null_is_absent: bool = False
    what_text: str = "an object"

    @property
    def what(self) -> str:  # type: ignore[override]
        return self.what_text

    def check(self, value: Any, path: str) -> dict[str, Any]:
        if not isinstance(value, Mapping):
            raise self.fail(value, path)
        if not self.open:
            for k in value:
                if k not in self.fields:
                    raise FieldError(key_path(path, str(k)),
                                  f"unknown field; expected some of {list(self.fields)}")
        present = {k: v for k, v in value.items()
                   if k in self.fields and not (self.null_is_absent and v is None)}
        for k in self.required:
            if k not in present:
                raise FieldError(key_path(path, k), "missing; this field is required")
        out = {k: self.fields[k].check(present[k], key_path(path, k))
               for k in self.fields if k in present}
        if self.open:  # the fields not declared, as they are
            out.update((k, v) for k, v in value.items() if k not in self.fields)
        return out


__all__ = [
    "AnyOf", "Anything", "Choice", "Custom", "FieldError", "Flag", "Int", "ListOf", "Null",
    "Number", "Rule", "Table", "Text", "item_path", "key_path", "shown",
]

"""The field rules every input surface declares (aicore_sim/util/schema.py): one message form for a
wrong type or range, an unknown key and a missing one, whatever the surface."""

from __future__ import annotations

import math

import pytest

from aicore_sim.util import schema
from aicore_sim.util.schema import (
    AnyOf,
    Choice,
    Custom,
    FieldError,
    Flag,
    Int,
    ListOf,
    Number,
    Table,
    Text,
)


def refusal(rule: schema.Rule, value, path: str = "f") -> str:
    with pytest.raises(FieldError) as e:
        rule.check(value, path)
    return str(e.value)


@pytest.mark.parametrize("rule, value, message", [
    (Int(minimum=1), 0, "f: expected an integer >= 1, got 0"),
    (Int(minimum=1), True, "f: expected an integer >= 1, got true"),  # a bool is no integer
    (Int(minimum=1), 2.0, "f: expected an integer >= 1, got 2.0"),  # unless whole_floats
    (Int(minimum=0, maximum=8), 9, "f: expected an integer >= 0 and <= 8, got 9"),
    (Number(above=0), 0, "f: expected a finite number > 0, got 0"),
    (Number(), math.inf, "f: expected a finite number, got Infinity"),
    (Number(), "1", 'f: expected a finite number, got "1"'),
    (Number(), 10 ** 400, "f: expected a finite number, got 1" + "0" * 76 + "..."),
    (Text(), "", 'f: expected a non-empty string, got ""'),
    (Flag(), 1, "f: expected true or false, got 1"),
    (Choice(("a", 1)), True, 'f: expected one of [\'a\', 1], got true'),  # true is not 1
    (ListOf(Int()), [], "f: expected a non-empty list, each an integer, got []"),
    (ListOf(Int()), [1, "x"], 'f[1]: expected an integer, got "x"'),
    (ListOf(Text(), length=2), ["a"],
     'f: expected a list of 2 items, each a non-empty string, got ["a"]'),
    (ListOf(Int(), unique=True), [1, 1], "f: values repeat: [1, 1]"),
    (Custom(int, "a number as text", (str,)), "x",
     "f: invalid literal for int() with base 10: 'x'"),
    (Custom(int, "a number as text", (str,)), 3, "f: expected a number as text, got 3"),
])
def test_one_message_form(rule, value, message) -> None:
    assert refusal(rule, value) == message


def test_values_come_back_canonical() -> None:
    assert Int(whole_floats=True).check(4.0, "f") == 4
    assert type(Int(whole_floats=True).check(4.0, "f")) is int
    assert Number().check(3, "f") == 3.0
    assert type(Number().check(3, "f")) is float


TABLE = Table({"a": Int(), "b": Table({"c": Text()}, required=("c",))}, required=("a",))


def test_a_table_names_unknown_missing_and_nested_fields() -> None:
    assert refusal(TABLE, {"a": 1, "z": 2}, "") == "z: unknown field; expected some of ['a', 'b']"
    assert refusal(TABLE, {}, "") == "a: missing; this field is required"
    assert refusal(TABLE, {"a": 1, "b": {}}, "") == "b.c: missing; this field is required"
    assert refusal(TABLE, {"a": 1, "b": {"c": 5}}, "top") == (
        "top.b.c: expected a non-empty string, got 5")
    assert refusal(TABLE, [1], "") == "expected an object, got [1]"
    assert TABLE.check({"b": {"c": "x"}, "a": 1}, "") == {"a": 1, "b": {"c": "x"}}


def test_open_tables_keep_what_they_do_not_declare_and_null_can_mean_absent() -> None:
    open_table = Table({"a": Int()}, open=True)
    assert open_table.check({"a": 1, "x": [2]}, "") == {"a": 1, "x": [2]}
    nullable = Table({"a": Int()}, required=("a",), null_is_absent=True)
    assert refusal(nullable, {"a": None}, "") == "a: missing; this field is required"


def test_any_of_reports_the_inner_error_of_the_alternative_that_took_the_kind() -> None:
    rule = AnyOf((Choice(("none",)), ListOf(Int(), length=2)))
    assert rule.check("none", "r") == "none"
    assert rule.check([1, 2], "r") == [1, 2]
    # a list of two: the list rule took it, its second item is wrong
    assert refusal(rule, [1, "a"], "r") == 'r[1]: expected an integer, got "a"'
    # neither took it: both rules named
    assert refusal(rule, 5, "r") == (
        "r: expected one of ['none'] or a list of 2 items, each an integer, got 5")


def test_a_long_value_is_cut_in_the_message() -> None:
    # the JSON text '"xxx...x"' (502 characters) is cut to its first 77 and "..." (80)
    assert refusal(Int(), "x" * 500) == 'f: expected an integer, got "' + "x" * 76 + "..."

"""The input contract, fuzzed in-process: every option of every command gets generated
malformed values; each must be refused while parsing - exit 2, one ``aicore-sim: error:``
line naming what was wrong, no traceback, nothing written (the documents' half:
``test_document_fuzz.py``).

"Malformed" is decided by the option's own declared domain, not by a list kept here: an
option's value is malformed when the option's argparse ``type`` refuses it (or it is not one
of its ``choices``). So a new option is fuzzed as soon as it is declared, and a value its type
accepts is never asserted to fail.

The default suite runs ``OPTION_EXAMPLES`` generated cases here (about 7 s of one CPU);
``-m slow`` runs ``SLOW_EXAMPLES`` (reports/fuzz_contract.md).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aicore_sim import cli
from tests.conftest import run_cli

OPTION_EXAMPLES = 3000  # with test_document_fuzz.py's 2,000: 5,000 in the default suite
SLOW_EXAMPLES = 50_000

_PARSER = cli.build_parser()
_SUB = next(a for a in _PARSER._actions if isinstance(a, argparse._SubParsersAction))


def _options() -> list[tuple[str, argparse.Action, list[str]]]:
    """(command, option action, placeholder positionals) of every option that takes a value
    checked by a type or limited to choices."""
    out = []
    for name, sub in sorted(_SUB.choices.items()):
        positionals = []
        for a in sub._actions:
            if not a.option_strings and a.nargs in (None, "+"):
                positionals.append("placeholder.json")
        for a in sub._actions:
            if a.option_strings and a.nargs != 0 and (a.type is not None or a.choices):
                out.append((name, a, positionals))
    return out


OPTIONS = _options()

# Values that break common rules (empty, zero, negative, non-finite, huge, unicode, control
# characters, path-like), mixed with arbitrary short text.
_NASTY = ["", " ", "0", "-0", "-1", "-7", "nan", "NaN", "inf", "-inf", "1e999", "1e-400",
          "18446744073709551616", "9" * 40, "0x10", "1.5", "abc", "é", "²", "\x00", "\t",
          "../..", "/dev/null", "a" * 300, "local:", "local:0", "1:2:3", ":", "5:3", "-1:4"]
VALUES = st.one_of(st.sampled_from(_NASTY), st.text(max_size=12))


def _refused_by_type(action: argparse.Action, value: str) -> bool:
    """Whether ``value`` breaks the option's declared domain."""
    if action.type is not None:
        try:
            converted = action.type(value)
        except (argparse.ArgumentTypeError, ValueError, TypeError, OverflowError):
            return True
    else:
        converted = value
    return bool(action.choices) and converted not in action.choices


def _nothing_written(folder: Path) -> bool:
    return not any(folder.iterdir())


@settings(max_examples=OPTION_EXAMPLES, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(option=st.sampled_from(OPTIONS), value=VALUES)
def test_every_option_refuses_values_outside_its_domain(option, value):
    command, action, positionals = option
    if not _refused_by_type(action, value):
        return  # inside the option's domain: nothing to assert here
    with tempfile.TemporaryDirectory(prefix="opt") as tmp:  # one per example, removed
        work = Path(tmp)
        flag = action.option_strings[-1]
        r = run_cli(command, f"{flag}={value}", *positionals, cwd=work)
        lines = r.stderr.splitlines()
        assert r.returncode == 2, (r.args, r.stderr)
        assert len(lines) == 1 and lines[0].startswith("aicore-sim: error:"), (r.args, r.stderr)
        assert "Traceback" not in r.stderr and "internal error" not in r.stderr
        assert r.stdout == ""
        assert _nothing_written(work)


@pytest.mark.slow
@settings(max_examples=SLOW_EXAMPLES, deadline=None, derandomize=False, database=None,
          suppress_health_check=list(HealthCheck))
@given(option=st.sampled_from(OPTIONS), value=VALUES)
def test_every_option_long_run(option, value):
    test_every_option_refuses_values_outside_its_domain.hypothesis.inner_test(
        option, value)


def test_every_command_has_fuzzed_options():
    # the fuzz reaches every command that takes a checked option (a command without one has
    # nothing to refuse at parse time)
    assert {c for c, _, _ in OPTIONS} >= {"run", "verify", "sweep", "search", "validate"}
    assert len(OPTIONS) >= 40

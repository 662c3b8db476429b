"""How ``aicore-sim run`` ends: the notes of options that did nothing, and the exit code after
the summary was printed - a golden mismatch, or a hazard under ``--strict``, fails the run
(step: the command line)."""

from __future__ import annotations

import sys
from typing import Any

from aicore_sim.cli.common import err


def say_idle(notes: list[str], on_stderr: bool) -> None:
    """The options that did nothing, as one ``note:`` line: on stderr, or on stdout when
    stderr carries the command's failure line (stderr holds one line at most)."""
    if notes:
        text = f"note: {'; '.join(notes)}"
        if on_stderr:
            err(text)
        else:
            print(text)


def printable(lines: list[str]) -> None:
    """UnicodeEncodeError (an environment failure) when standard output's encoding cannot
    show ``lines`` (e.g. a non-ASCII case name under ``PYTHONIOENCODING=ascii``)."""
    enc = getattr(sys.stdout, "encoding", None)
    errors = getattr(sys.stdout, "errors", None) or "strict"
    if enc and errors == "strict":
        "\n".join(lines).encode(enc)


def run_verdict(summary: dict[str, Any], hazards: list[Any], strict: bool,
                 idle: list[str] = ()) -> int:
    """Exit code of ``run`` after its summary was printed: 1 when an output differs from the
    golden (the first bad element on stderr) or, under ``--strict``, when a hazard was found;
    a hazard otherwise is a warning on stdout. ``idle``: the notes of options that did nothing
    (:func:`say_idle`)."""
    for name, g in summary.get("golden", {}).items():
        if g.get("error") or not g.get("exact", True):
            fm = g.get("first_mismatch") or {}
            where = (f"{g.get('mismatches')} of {g.get('elements')} elements differ, first at "
                     f"{fm.get('index')}: got {fm.get('got')}, want {fm.get('want')}"
                     if fm else g.get("error"))
            say_idle(list(idle), on_stderr=False)
            err(f"check failed: {name}: differs from the golden: {where}")
            return 1
    if hazards:
        kinds = sorted({h.kind for h in hazards})
        if strict:
            say_idle(list(idle), on_stderr=False)
            err(f"check failed: --strict: {len(hazards)} hazards ({', '.join(kinds)}); see "
                 "summary.json")
            return 1
        print(f"warning: {len(hazards)} hazards ({', '.join(kinds)}): the outputs can depend "
              "on the order of unsynchronised accesses; --strict makes hazards exit 1")
    say_idle(list(idle), on_stderr=True)
    return 0


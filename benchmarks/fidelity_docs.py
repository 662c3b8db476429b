"""Copy the tables of ``reports/fidelity.md`` into ``docs/fidelity.md``'s "Result" section.

``aicore-sim validate --report reports/fidelity.md`` writes the report; this script puts its
headline, run facts, "Sources", "Error per column" and "Optimisation steps" between the
``<!-- validate report: begin -->`` and ``<!-- validate report: end -->`` markers of
``docs/fidelity.md``, so the documented figures are the generated ones, never retyped::

    aicore-sim validate --write-confidence aicore_sim/data/validation.json \
        --report reports/fidelity.md
    python benchmarks/fidelity_docs.py

``tests/test_fidelity_docs.py`` fails when the two disagree.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REPORT = ROOT / "reports" / "fidelity.md"
DOCS = ROOT / "docs" / "fidelity.md"
BEGIN, END = "<!-- validate report: begin -->", "<!-- validate report: end -->"
SECTIONS = ("Sources", "Error per column", "Optimisation steps")


def _sections(report: str) -> dict[str, str]:
    """The report's ``## `` sections by title, each its text up to the next one."""
    out: dict[str, str] = {}
    parts = report.split("\n## ")
    for part in parts[1:]:
        title, _, body = part.partition("\n")
        out[title.strip()] = body.strip("\n")
    return out


def block(report: str) -> str:
    """The text the docs hold between the markers, made from the report's text."""
    head = report.split("\n## ", 1)[0].splitlines()
    headline = next(line for line in head if line.startswith("**"))
    facts = [line for line in head if line.startswith("- ")]
    sections = _sections(report)
    missing = [s for s in SECTIONS if s not in sections]
    if missing:
        raise SystemExit(f"{REPORT.name}: no section {missing} (regenerate it with "
                         "aicore-sim validate --report)")
    lines = [BEGIN, "", headline, "", *facts, "", "![board vs simulated](../reports/fidelity.png)"]
    for title in SECTIONS:
        body = sections[title].replace("![board vs simulated](fidelity.png)", "").strip("\n")
        lines += ["", f"### {title}", "", body]
    return "\n".join(lines + ["", END])


def splice(docs: str, report: str) -> str:
    """``docs`` with its marked block replaced by :func:`block` of ``report``."""
    if BEGIN not in docs or END not in docs:
        raise SystemExit(f"{DOCS.name}: the markers {BEGIN} / {END} are missing")
    before, rest = docs.split(BEGIN, 1)
    _, after = rest.split(END, 1)
    return before + block(report) + after


def main() -> int:
    text = splice(DOCS.read_text(), REPORT.read_text())
    DOCS.write_text(text)
    print(f"{DOCS.relative_to(ROOT)}: result section from {REPORT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

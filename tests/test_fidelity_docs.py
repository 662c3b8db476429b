"""docs/fidelity.md's result tables are the generated report's (benchmarks/fidelity_docs.py)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("fidelity_docs",
                                               ROOT / "benchmarks" / "fidelity_docs.py")
fidelity_docs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fidelity_docs)


def test_the_docs_hold_the_reports_tables():
    docs = (ROOT / "docs" / "fidelity.md").read_text()
    report = (ROOT / "reports" / "fidelity.md").read_text()
    assert fidelity_docs.splice(docs, report) == docs


def test_a_changed_report_figure_is_caught():
    docs = (ROOT / "docs" / "fidelity.md").read_text()
    report = (ROOT / "reports" / "fidelity.md").read_text()
    row = next(line for line in report.splitlines() if line.startswith("| task_us |"))
    changed = report.replace(row, row.replace("| task_us |", "| task_us (changed) |"))
    assert fidelity_docs.splice(docs, changed) != docs


def test_a_report_without_its_sections_is_refused():
    with pytest.raises(SystemExit, match="no section"):
        fidelity_docs.block("# report\n\n**headline**\n\n## Sources\n\nx\n")

"""Text lines, JSON and markdown reports of a ``verify`` run.

Step of the flow: the end - :class:`CaseResult` records in, a PASS/FAIL line per case and
output on the terminal, ``<stem>.json`` (everything, machine-readable) and ``<stem>.md`` (a
summary table, the standards applied per dtype, and every failing output) on disk.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aicore_sim.util.staging import write_staged
from aicore_sim.verify.compare import OutputCompare

__all__ = ["CaseResult", "format_case", "summary_of", "write_reports"]


@dataclass
class CaseResult:
    """The verdict on one case: its outputs' comparisons, or the error that stopped it."""

    case: str
    source: str
    platform: str
    mode: str
    outputs: list[OutputCompare] = field(default_factory=list)
    error: str | None = None
    wall_s: dict[str, float] = field(default_factory=dict)
    hazards: int = 0
    expected_from: str = "golden"

    @property
    def passed(self) -> bool:
        return self.error is None and bool(self.outputs) and all(o.passed for o in self.outputs)

    def as_dict(self) -> dict[str, Any]:
        return {"case": self.case, "source": self.source, "platform": self.platform,
                "mode": self.mode, "passed": self.passed, "error": self.error,
                "expected_from": self.expected_from, "hazards": self.hazards,
                "wall_s": {k: round(v, 4) for k, v in self.wall_s.items()},
                "outputs": [o.as_dict() for o in self.outputs]}


def _g(x: float) -> str:
    return f"{x:.4g}"


def format_output(case: str, o: OutputCompare) -> str:
    """One PASS/FAIL line of one output."""
    head = f"{'PASS' if o.passed else 'FAIL'}  {case}  {o.name}"
    if o.error:
        return f"{head}  [{o.standard}]  cannot compare: {o.error}"
    line = (f"{head}  {o.dtype}{list(o.shape)}  [{o.standard}]  max_abs {_g(o.max_abs)}  "
            f"max_rel {_g(o.max_rel)}  mean_rel {_g(o.mean_rel)}  "
            f"bad {o.bad}/{o.elements} ({100 * o.bad_share:.4g}%)")
    if o.first_bad is not None:
        fb = o.first_bad
        line += f"  first bad {fb['index']}: got {fb['got']!r} want {fb['want']!r}"
    return line


def format_case(r: CaseResult) -> list[str]:
    """The lines printed for one case."""
    if r.error is not None:
        return [f"FAIL  {r.case}  (not run) {r.error}"]
    if not r.outputs:
        return [f"FAIL  {r.case}  no output to compare"]
    return [format_output(r.case, o) for o in r.outputs]


def summary_of(results: list[CaseResult], meta: dict[str, Any]) -> dict[str, Any]:
    """Counts, wall time and the standard applied per output dtype."""
    per_dtype: dict[str, set[str]] = {}
    for r in results:
        for o in r.outputs:
            per_dtype.setdefault(o.dtype, set()).add(o.standard)
    outs = [o for r in results for o in r.outputs]
    return {
        **meta,
        "cases": len(results),
        "cases_passed": sum(r.passed for r in results),
        "cases_failed": sum(not r.passed for r in results),
        "outputs_compared": len(outs),
        "outputs_failed": sum(not o.passed for o in outs),
        "errors": sum(r.error is not None for r in results),
        "standards_by_dtype": {k: sorted(v) for k, v in sorted(per_dtype.items())},
        "wall_s_cases": round(sum(r.wall_s.get("total", 0.0) for r in results), 3),
    }


def _md(results: list[CaseResult], summary: dict[str, Any]) -> str:
    s = summary
    lines = [f"# verify: {s['cases_passed']} / {s['cases']} cases passed", ""]
    lines += [f"- command: `{s.get('command', '')}`",
              f"- mode: {s.get('mode')}; expected outputs from: {s.get('expected_from')}",
              f"- outputs compared: {s['outputs_compared']}, failed: {s['outputs_failed']}; "
              f"cases not run (errors): {s['errors']}",
              f"- wall time: {s.get('wall_s', 0):.1f} s in total "
              f"({s['wall_s_cases']:.1f} s in cases)", "",
              "## Standards applied per output dtype", "", "| dtype | standard |", "|---|---|"]
    for dt, stds in s["standards_by_dtype"].items():
        lines.append(f"| {dt} | {'; '.join(stds)} |")
    bad = [r for r in results if not r.passed]
    lines += ["", "## Failures", ""]
    if not bad:
        lines.append("None.")
    for r in bad:
        for line in format_case(r):
            if line.startswith("FAIL"):
                lines.append(f"- `{line}`")
    lines += ["", "## Cases", "",
              "| case | platform | output | dtype | standard | result | max abs | max rel | "
              "mean rel | bad share | wall s |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        wall = f"{r.wall_s.get('total', 0.0):.3f}"
        if r.error is not None or not r.outputs:
            lines.append(f"| {r.case} | {r.platform} | - | - | - | ERROR | - | - | - | - | "
                         f"{wall} |")
            continue
        for o in r.outputs:
            lines.append(f"| {r.case} | {r.platform} | {o.name} | {o.dtype} | {o.standard} | "
                         f"{'PASS' if o.passed else 'FAIL'} | {_g(o.max_abs)} | "
                         f"{_g(o.max_rel)} | {_g(o.mean_rel)} | {o.bad_share:.3g} | {wall} |")
    return "\n".join(lines) + "\n"


def write_reports(results: list[CaseResult], stem: str | Path, meta: dict[str, Any]
                  ) -> tuple[Path, Path]:
    """Write ``<stem>.json`` and ``<stem>.md``; returns both paths."""
    stem = Path(stem)
    if stem.suffix.lower() in (".json", ".md"):
        stem = stem.with_suffix("")
    stem.parent.mkdir(parents=True, exist_ok=True)
    summary = summary_of(results, meta)
    jp, mp = stem.with_name(stem.name + ".json"), stem.with_name(stem.name + ".md")
    write_staged(jp, json.dumps({"summary": summary, "cases": [r.as_dict() for r in results]},
                                indent=1) + "\n")
    write_staged(mp, _md(results, summary))
    return jp, mp

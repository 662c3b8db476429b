"""A sweep's rows are counted and ranked from its results file without holding them: the same
answers as reading every row (``read_rows``: each point's last row, in the place of its first),
also after a ``--resume`` that ran failed points again."""

from __future__ import annotations

import json
from pathlib import Path

from aicore_sim.sweep.rows import RESULTS_JSONL, Tally, iter_rows, read_rows, tally_rows
from aicore_sim.sweep.run import best_rows, best_rows_in


def _row(key: str, status: str, group: str = "g", cycles: int | None = None, **kw) -> dict:
    return {"key": key, "status": status, "group": group, "makespan_cycles": cycles,
            "strategy": kw.pop("strategy", "x"), "overrides": {}, **kw}


def test_tally_and_best_rows_stream_what_read_rows_gives(tmp_path: Path) -> None:
    lines = [
        _row("a", "error", error="boom a"),  # run again by a --resume: ok at the end
        _row("b", "ok", "g1", 500),
        _row("c", "error", "g2", error="boom c"),  # failed twice: its last row is the error
        _row("d", "infeasible", "g1"),
        _row("e", "ok", "g2", 300),
        _row("f", "ok", "g1", 500, strategy="upstream"),  # ties b: upstream wins
        _row("a", "ok", "g2", 200),
        _row("c", "error", "g2", error="boom c again"),
        _row("g", "ok", "g1", 400),
    ]
    text = "".join(json.dumps(r) + "\n" for r in lines) + '{"key": "h", "sta'  # torn tail
    (tmp_path / RESULTS_JSONL).write_text(text)
    rows = read_rows(tmp_path)
    assert [r["key"] for r in rows] == list("abcdefg")  # 7 points, first places
    assert len(list(iter_rows(tmp_path))) == 9  # every whole line
    t = tally_rows(tmp_path)
    # last rows: a ok, b ok, c error, d infeasible, e ok, f ok, g ok
    assert (t.n, t.counts) == (7, {"ok": 5, "error": 1, "infeasible": 1})
    assert list(t.counts) == ["ok", "error", "infeasible"]  # as read_rows orders them
    assert t.first_error["error"] == "boom c again"  # c's last row
    for top in (1, 2, 5):
        # g2 (first seen with a): a 200, e 300; g1: g 400, then f (upstream) before b at 500
        assert best_rows_in(tmp_path, top) == best_rows(rows, top)
    assert [r["key"] for r in best_rows_in(tmp_path, 2)] == ["a", "e", "g", "f"]


def test_a_tally_counts_rows_as_they_pass() -> None:
    t = Tally()
    for r in (_row("a", "ok"), _row("b", "error", error="1"), _row("c", "error", error="2")):
        t.add(r)
    assert (t.n, t.counts, t.first_error["key"]) == (3, {"ok": 1, "error": 2}, "b")

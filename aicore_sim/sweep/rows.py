"""Sweep results on disk: ``results.jsonl`` / ``results.csv`` rows, appended and read back.

Step of the flow: between the sweep runner (:mod:`.run`, which writes rows as points finish)
and the report (:mod:`.report`, which reads them): one flush + fsync per row, a torn last line
(a write cut by a kill) dropped before appending or reading. Rows are read a line at a time
(:func:`iter_rows`); a sweep's outcome counts them (:class:`Tally`, :func:`tally_rows`)
rather than holding 100000 of them.
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aicore_sim.util.atomic import write_atomic

RESULTS_JSONL = "results.jsonl"
RESULTS_CSV = "results.csv"
VERIFY_JSONL = "verify.jsonl"
SPEC_JSON = "spec.json"




def _repair_tail(path: Path) -> None:
    """Drop a torn last line (a write cut by a kill) so appends start on a line boundary."""
    if not path.exists() or path.stat().st_size == 0:
        return
    with open(path, "rb+") as f:
        f.seek(0, os.SEEK_END)
        size = f.tell()
        f.seek(max(0, size - 1))
        if f.read(1) == b"\n":
            return
        data = path.read_bytes()
        cut = data.rfind(b"\n") + 1
        f.truncate(cut)


def iter_rows(path: str | Path) -> Iterator[dict[str, Any]]:
    """The rows of a ``results.jsonl`` (or verify.jsonl) as they are in the file, one line
    at a time (a point run again appears again); unparsable lines are skipped."""
    p = Path(path)
    if p.is_dir():
        p = p / RESULTS_JSONL
    try:
        f = open(p, encoding="utf-8")
    except FileNotFoundError:
        return
    with f:
        for line in f:
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(row, dict) and "key" in row:
                yield row


def read_rows(path: str | Path) -> list[dict[str, Any]]:
    """Rows of a ``results.jsonl`` (or verify.jsonl), one per key: a point run again (a
    ``--resume`` retrying an ``error`` row) is its last row, in the place of its first;
    unparsable lines are skipped."""
    rows: dict[str, dict[str, Any]] = {}
    for row in iter_rows(path):
        rows[row["key"]] = row
    return list(rows.values())


@dataclass
class Tally:
    """Rows counted as they pass (none kept): how many, how many of each status (in the order
    the statuses first appear) and the first ``error`` row."""

    n: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    first_error: dict[str, Any] | None = None

    def add(self, row: dict[str, Any]) -> None:
        self.n += 1
        status = row.get("status")
        self.counts[status] = self.counts.get(status, 0) + 1
        if status == "error" and self.first_error is None:
            self.first_error = row


def tally_rows(path: str | Path) -> Tally:
    """:class:`Tally` of :func:`read_rows` ``(path)`` - each key's last row, in the place of
    its first - without holding the rows: a pass for each key's last status, and one more
    for the first error's row when there is one."""
    last: dict[str, Any] = {}
    for row in iter_rows(path):
        last[row["key"]] = row.get("status")
    t = Tally(n=len(last))
    for status in last.values():
        t.counts[status] = t.counts.get(status, 0) + 1
    first = next((k for k, status in last.items() if status == "error"), None)
    if first is not None:
        for row in iter_rows(path):
            if row["key"] == first:
                t.first_error = row
    return t


def _csv_cell(v: Any) -> Any:
    if v is None:
        return ""
    if isinstance(v, dict | list | tuple):
        return json.dumps(v, separators=(",", ":"))
    return v


class ResultWriter:
    """Appends rows to ``results.jsonl`` and ``results.csv`` (``columns``, in order); flush +
    fsync per row."""

    def __init__(self, out: Path, columns: Sequence[str]) -> None:
        self.columns = tuple(columns)
        out.mkdir(parents=True, exist_ok=True)
        self.jsonl = out / RESULTS_JSONL
        self.csv = out / RESULTS_CSV
        for p in (self.jsonl, self.csv):
            _repair_tail(p)
        new_csv = not self.csv.exists() or self.csv.stat().st_size == 0
        self._j = open(self.jsonl, "a", encoding="utf-8")
        self._c = open(self.csv, "a", encoding="utf-8", newline="")
        if new_csv:
            self._c.write(self._csv_line(list(self.columns)))
            self._sync(self._c)

    @staticmethod
    def _csv_line(values: list[Any]) -> str:
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerow(values)
        return buf.getvalue()

    @staticmethod
    def _sync(f: Any) -> None:
        f.flush()
        os.fsync(f.fileno())

    def write(self, row: dict[str, Any]) -> None:
        self._j.write(json.dumps(row, default=str) + "\n")
        self._sync(self._j)
        self._c.write(self._csv_line([_csv_cell(row.get(c)) for c in self.columns]))
        self._sync(self._c)

    def close(self) -> None:
        self._j.close()
        self._c.close()

    def __enter__(self) -> ResultWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def append_jsonl(path: Path, row: dict[str, Any]) -> None:
    _repair_tail(path)
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(row, default=str) + "\n")
        f.flush()
        os.fsync(f.fileno())


atomic_write = write_atomic  # the spec file of a sweep folder

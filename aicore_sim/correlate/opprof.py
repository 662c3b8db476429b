"""Reader of ``msprof op`` output folders (a board's profile, or a simulated run's CSVs).

Step of the flow: input of ``correlate`` and ``calibrate``. It knows the file format only
(``data/formats/msprof_op.toml`` and docs/correlate.md), never the simulator.

Rules (each broken rule is an :class:`OpprofError` naming the file and the rule):

- a *launch* is a folder holding one ``PipeUtilization*.csv`` (``PipeUtilization.csv`` or
  ``PipeUtilization_<17-digit timestamp>.csv``) and one ``OpBasicInfo*.csv``; folders are searched
  recursively, so ``OPPROF_<ts>_<id>/``, ``OPPROF_<ts>_<id>/<OpName>/<index>/`` (several
  operators) and an extra ``deviceN/`` level all work; with several launches under the folder
  the caller chooses one by operator name and launch index (:func:`choose`);
- columns are found by name, never by position (older releases order them differently; extra
  columns are ignored); ``NA`` and blank cells are "no figure"; any other cell of a figure column
  must be a finite number >= 0;
- rows whose ``sub_block_id`` is ``cube0`` are the cube core's and are skipped; the vector rows
  (``vector0`` / ``vector1``), sorted by (``block_id``, ``sub_block_id``), are blocks 0..n-1;
  a (block, sub-block) pair appears once;
- OpBasicInfo has one data row; ``Task Duration(us)``, ``Block Dim`` and ``Current Freq`` are
  read (``NA`` allowed: then the check that needs it is skipped).
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass, field
from pathlib import Path

from aicore_sim.export.msprof import OP_BASIC_INFO, PIPE_COLUMNS, PIPE_UTILIZATION
from aicore_sim.util import schema

PIPES: tuple[str, ...] = tuple(PIPE_COLUMNS)
"""The pipes compared, in data-flow order (SCALAR, MTE2, VECTOR, MTE3)."""

TIME_COLUMNS: dict[str, str] = {p: f"aiv_{s}_time(us)" for p, s in PIPE_COLUMNS.items()}
"""msprof column of each pipe's busy time (µs)."""
CORE_COLUMN = "aiv_time(us)"
"""msprof column of a vector core's whole time (µs)."""

_PIPE_RE = re.compile(r"^PipeUtilization(_[0-9]{17})?\.csv$")
_INFO_RE = re.compile(r"^OpBasicInfo(_[0-9]{17})?\.csv$")
_EMPTY = ("", "NA")
_VECTOR = ("vector0", "vector1")
_CUBE = ("cube0",)
_MAX_CSV_BYTES = 64 << 20  # a PipeUtilization file has a row per core: KiB, never this


class OpprofError(ValueError):
    """A bad profile folder or file: ``str()`` is one line naming the file and the rule."""


@dataclass
class ProfiledLaunch:
    """One operator launch as ``msprof op`` describes it: per vector block, per pipe µs.

    ``times[pipe][k]`` / ``core_us[k]`` are block k's figures, ``None`` where the cell was NA or
    blank. ``blocks[k]`` is its (block_id, sub_block_id).
    """

    folder: Path
    pipe_file: Path
    info_file: Path
    blocks: list[tuple[int, str]]
    times: dict[str, list[float | None]]
    core_us: list[float | None]
    op_name: str | None = None
    task_duration_us: float | None = None
    block_dim: int | None = None
    freq_mhz: float | None = None
    skipped_cube_rows: int = 0
    label: str = field(default="")

    @property
    def n_blocks(self) -> int:
        return len(self.blocks)


def _read_csv(path: Path) -> tuple[list[str], list[list[str]]]:
    try:
        size = path.stat().st_size
        if size > _MAX_CSV_BYTES:
            raise OpprofError(f"{path}: {size} bytes is not an msprof op CSV (limit "
                              f"{_MAX_CSV_BYTES >> 20} MiB)")
        with path.open(newline="", encoding="utf-8-sig") as fh:
            rows = list(csv.reader(fh))
    except OSError as e:
        raise OpprofError(f"{path}: cannot be read ({e.strerror or e})") from None
    except UnicodeDecodeError:
        raise OpprofError(f"{path}: not a text (UTF-8) CSV file") from None
    except csv.Error as e:
        raise OpprofError(f"{path}: not a valid CSV file ({e})") from None
    rows = [r for r in rows if any(c.strip() for c in r)]
    if not rows:
        raise OpprofError(f"{path}: empty (an msprof op CSV starts with a header row)")
    return [h.strip() for h in rows[0]], rows[1:]


def _columns(path: Path, header: list[str], need: tuple[str, ...]) -> dict[str, int]:
    where: dict[str, int] = {}
    for i, h in enumerate(header):
        if h in where and h in need:  # which of the two columns holds the figure?
            raise OpprofError(f"{path}: column {h!r} appears twice (columns {where[h] + 1} "
                              f"and {i + 1}); a column the comparison reads must be unique")
        where.setdefault(h, i)
    for col in need:
        if col not in where:
            raise OpprofError(f"{path}: no column {col!r} (columns are matched by name; "
                              f"msprof op writes it for A2/A3 and 950)")
    return where


_FIGURE = schema.Number(minimum=0)  # a figure cell of a profile (schema.py: one rule form)


def _number(path: Path, line: int, col: str, text: str) -> float | None:
    t = text.strip()
    if t in _EMPTY:
        return None
    try:
        v = float(t)
    except ValueError:
        raise OpprofError(f"{path}: line {line}, column {col!r}: {t!r} is not a number "
                          f"(cells hold a number, NA or nothing)") from None
    try:
        return _FIGURE.check(v, f"line {line}, column {col!r}")
    except schema.FieldError as e:
        raise OpprofError(f"{path}: {e.path}: expected a finite number >= 0, got {t!r}"
                          ) from None


def read_pipe_utilization(path: Path) -> tuple[list[tuple[int, str]], dict[str, list],
                                                list[float | None], int]:
    """(blocks, per-pipe µs, core µs, cube rows skipped) of one PipeUtilization*.csv."""
    header, rows = _read_csv(path)
    need = ("block_id", "sub_block_id", CORE_COLUMN, *TIME_COLUMNS.values())
    where = _columns(path, header, need)
    found: dict[tuple[int, str], tuple[list[float | None], float | None]] = {}
    cube = 0
    for k, row in enumerate(rows):
        line = k + 2
        cells = row + [""] * (len(header) - len(row))

        def cell(col: str, cells: list[str] = cells) -> str:
            return cells[where[col]]

        sub = cell("sub_block_id").strip()
        if sub in _CUBE:
            cube += 1
            continue
        if sub not in _VECTOR:
            raise OpprofError(f"{path}: line {line}: sub_block_id {sub!r} is not one of "
                              f"{', '.join(_CUBE + _VECTOR)}")
        bid = cell("block_id").strip()
        if not (bid.isascii() and bid.isdigit()):  # '²'.isdigit(), but int() refuses it
            raise OpprofError(f"{path}: line {line}, column 'block_id': {bid!r} is not a "
                              f"block index (an integer >= 0)")
        key = (int(bid), sub)
        if key in found:
            raise OpprofError(f"{path}: line {line}: block {key[0]} {sub} appears twice "
                              f"(one row per block and sub-block)")
        found[key] = ([_number(path, line, TIME_COLUMNS[p], cell(TIME_COLUMNS[p]))
                       for p in PIPES],
                      _number(path, line, CORE_COLUMN, cell(CORE_COLUMN)))
    if not found:
        raise OpprofError(f"{path}: no vector-core rows (sub_block_id vector0/vector1): "
                          f"the profile holds no AIV figures")
    blocks = sorted(found)
    times = {p: [found[b][0][i] for b in blocks] for i, p in enumerate(PIPES)}
    return blocks, times, [found[b][1] for b in blocks], cube


def read_op_basic_info(path: Path) -> dict[str, object]:
    """``op_name``, ``task_duration_us``, ``block_dim``, ``freq_mhz`` of an OpBasicInfo*.csv."""
    header, rows = _read_csv(path)
    where = _columns(path, header, ("Task Duration(us)", "Block Dim", "Current Freq"))
    if len(rows) != 1:
        raise OpprofError(f"{path}: {len(rows)} data rows (OpBasicInfo describes one launch: "
                          f"one row)")
    row = rows[0] + [""] * len(header)

    def num(col: str) -> float | None:
        return _number(path, 2, col, row[where[col]])

    dim = num("Block Dim")
    if dim is not None and not dim.is_integer():
        raise OpprofError(f"{path}: line 2, column 'Block Dim': {dim!r} is not an integer")
    name = row[where["Op Name"]].strip() if "Op Name" in where else ""
    return {"op_name": name or None, "task_duration_us": num("Task Duration(us)"),
            "block_dim": None if dim is None else int(dim), "freq_mhz": num("Current Freq")}


def _one(folder: Path, pattern: re.Pattern, what: str) -> Path | None:
    hits = sorted(p for p in folder.iterdir() if p.is_file() and pattern.match(p.name))
    if len(hits) > 1:
        raise OpprofError(f"{folder}: {len(hits)} {what} files ({', '.join(p.name for p in hits)}"
                          f"); a launch folder holds one")
    return hits[0] if hits else None


def read_launch(folder: Path, label: str = "") -> ProfiledLaunch:
    """The launch whose PipeUtilization / OpBasicInfo files are directly in ``folder``."""
    pipe = _one(folder, _PIPE_RE, "PipeUtilization*.csv")
    if pipe is None:
        raise OpprofError(f"{folder / PIPE_UTILIZATION}: missing (a profiled launch folder "
                          f"holds PipeUtilization*.csv)")
    info = _one(folder, _INFO_RE, "OpBasicInfo*.csv")
    if info is None:
        raise OpprofError(f"{folder / OP_BASIC_INFO}: missing (msprof op writes it beside "
                          f"{pipe.name})")
    blocks, times, core, cube = read_pipe_utilization(pipe)
    meta = read_op_basic_info(info)
    return ProfiledLaunch(folder=folder, pipe_file=pipe, info_file=info, blocks=blocks,
                          times=times, core_us=core, skipped_cube_rows=cube,
                          label=label or folder.name, **meta)


def find_launches(root: Path) -> dict[str, Path]:
    """Launch folders under ``root`` (``root`` itself included), by path relative to it."""
    if not root.exists():
        raise OpprofError(f"{root}: does not exist")
    if not root.is_dir():
        raise OpprofError(f"{root}: not a folder (give the msprof op output folder)")
    out: dict[str, Path] = {}
    try:
        for p in sorted(root.rglob("PipeUtilization*.csv")):
            if p.is_file() and _PIPE_RE.match(p.name):
                rel = p.parent.relative_to(root).as_posix()
                out.setdefault(rel if rel != "." else ".", p.parent)
    except OSError as e:
        raise OpprofError(f"{root}: cannot be searched ({e.strerror or e})") from None
    if not out:
        raise OpprofError(f"{root}: no PipeUtilization*.csv in it or below it (not an msprof "
                          f"op output folder?)")
    return out


def choose(root: Path, op: str | None = None, launch: str | None = None) -> ProfiledLaunch:
    """The one launch under ``root`` selected by operator name and launch index.

    ``op`` keeps launches with a path component equal to it (or starting with ``op_``, the
    ``--replay-mode=range`` spelling) or whose OpBasicInfo ``Op Name`` equals it; ``launch``
    keeps those whose folder is named so (``0``, ``1`` …). Exactly one must remain.
    """
    found = find_launches(root)
    keep = {}
    for rel, folder in found.items():
        parts = [] if rel == "." else rel.split("/")
        if op is not None and not any(x == op or x.startswith(op + "_") for x in parts):
            info = _one(folder, _INFO_RE, "OpBasicInfo*.csv")
            if info is None or read_op_basic_info(info)["op_name"] != op:
                continue
        if launch is not None and (not parts or parts[-1] != launch):
            continue
        keep[rel] = folder
    if len(keep) == 1:
        rel, folder = next(iter(keep.items()))
        return read_launch(folder, label=folder.name if rel == "." else rel)
    listed = ", ".join(found)
    if not keep:
        raise OpprofError(f"{root}: no launch matches --op {op} --launch {launch} "
                          f"(launches found: {listed})")
    raise OpprofError(f"{root}: {len(keep)} launches ({', '.join(keep)}); choose one with "
                      f"--op NAME and --launch INDEX, or give its folder")


__all__ = ["CORE_COLUMN", "PIPES", "TIME_COLUMNS", "OpprofError", "ProfiledLaunch", "choose",
           "find_launches", "read_launch", "read_op_basic_info", "read_pipe_utilization"]

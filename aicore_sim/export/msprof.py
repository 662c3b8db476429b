"""msprof-style CSVs of a simulated launch: ``PipeUtilization.csv`` and ``OpBasicInfo.csv``.

Step of the flow: an exporter after the summary. It reads the summary dict
(:func:`aicore_sim.summary.summarize`) and the platform only, so every figure in the files is
one of summary.json's, converted: nothing is recomputed from the Trace.

The files have the exact columns, in order, that ``msprof op`` writes on a board for the
platform's chip family (``data/formats/msprof_op.toml``: A2/A3 48 columns, 950 34), so a user can
concatenate a simulated and a measured file (pandas ``concat``) and compare them column by
column. What each filled column holds:

- one row per simulated core: ``block_id`` = core index, ``sub_block_id`` = ``vector0``; every
  ``aic_*`` cell (the cube core) is ``NA``;
- ``aiv_total_cycles``: the core's cycles from its start (after the op head,
  ``platform.op_head_cycles``) to its last completion; ``aiv_time(us)`` = that / clock MHz;
- ``aiv_<pipe>_time(us)`` = the pipe's busy cycles plus its copies' hold by shared HBM
  (``gm_stretch_cycles``) plus a pipelined copy's data in flight after it: a board's pipe
  counter runs then too (``pipe_time_cycles`` of the summary) / clock MHz (``vec`` = VECTOR,
  ``scalar`` = the scalar unit's busy time, issue work included); ``aiv_<pipe>_ratio`` = that
  / total cycles;
- ``aiv_mte2_active_bw(GB/s)`` / ``aiv_mte3_active_bw(GB/s)``: payload bytes moved GM->UB /
  UB->GM over that pipe's busy time (10^9 bytes per second; 0 when the pipe never ran);
- everything else the model does not produce (icache miss rate, the scalar single/dual issue
  and stall breakdown, wait-ib time) is ``NA``.

``OpBasicInfo.csv``: ``Op Name`` (the case name), ``Op Type`` = ``vector``, ``Task
Duration(us)`` = the summary's ``task_cycles`` (makespan, op head included, plus the
platform's launch overhead) / clock, ``Block Dim`` = simulated cores,
``Current Freq`` = ``Rated Freq`` = the platform clock in MHz; ``Mix Block Dim``, ``Device
Id`` and ``Pid`` are ``NA`` (no mix launch, no device, no process).
"""

from __future__ import annotations

import csv
import io
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

PIPE_UTILIZATION = "PipeUtilization.csv"
OP_BASIC_INFO = "OpBasicInfo.csv"

_FORMAT_FILE = Path(__file__).resolve().parents[1] / "data" / "formats" / "msprof_op.toml"

# Summary pipe name -> the msprof column stem of its aiv_* columns.
PIPE_COLUMNS: dict[str, str] = {"SCALAR": "scalar", "MTE2": "mte2", "VECTOR": "vec",
                                "MTE3": "mte3"}


@dataclass(frozen=True)
class MsprofFormat:
    """The msprof op column lists of one chip family, and the file format's constants."""

    family: str
    pipe_utilization: tuple[str, ...]
    op_basic_info: tuple[str, ...]
    empty_cell: str
    vector_sub_blocks: tuple[str, ...]
    cube_sub_blocks: tuple[str, ...]


@cache
def _format_doc() -> dict[str, Any]:
    with _FORMAT_FILE.open("rb") as fh:
        return tomllib.load(fh)


def families() -> list[str]:
    """Family keys of the format file (``a2a3``, ``950``)."""
    return sorted(set(_format_doc()["families"].values()))


def msprof_format(short_soc_or_family: str) -> MsprofFormat:
    """The column lists for a short SoC version (``Ascend910B``) or a family key (``950``)."""
    doc = _format_doc()
    fam = doc["families"].get(short_soc_or_family, short_soc_or_family)
    if fam not in doc or not isinstance(doc[fam], Mapping):
        raise ValueError(f"no msprof op format for {short_soc_or_family!r}; known SoCs: "
                         f"{', '.join(doc['families'])}")
    f = doc[fam]
    return MsprofFormat(fam, tuple(f["pipe_utilization"]), tuple(f["op_basic_info"]),
                        str(doc["empty_cell"]), tuple(doc["vector_sub_blocks"]),
                        tuple(doc["cube_sub_blocks"]))


def _num(x: float) -> str:
    """A figure as msprof-style text: six decimals (sub-cycle at any clock in µs)."""
    return f"{x:.6f}"


def pipe_utilization_rows(summary: Mapping[str, Any], op_head_cycles: int
                          ) -> list[dict[str, str]]:
    """The aiv cells of one row per core (keys are msprof column names; the rest are NA)."""
    clock = float(summary["clock_mhz"])
    def _occupied(core: Mapping[str, Any], pipe: str) -> int:
        # a board's pipe counter runs while a copy waits for HBM or its data is in flight too
        return int(core["pipe_time_cycles"][pipe])

    rows = []
    for core in summary["cores"]:
        total = max(int(core["cycles"]) - int(op_head_cycles), 0)
        row = {"block_id": str(core["core"]), "sub_block_id": "vector0",
               "aiv_time(us)": _num(total / clock), "aiv_total_cycles": str(total)}
        for pipe, stem in PIPE_COLUMNS.items():
            busy = _occupied(core, pipe)
            row[f"aiv_{stem}_time(us)"] = _num(busy / clock)
            row[f"aiv_{stem}_ratio"] = _num(busy / total if total else 0.0)
        for stem, key in (("mte2", "bytes_gm_to_ub"), ("mte3", "bytes_ub_to_gm")):
            busy_us = _occupied(core, stem.upper()) / clock
            gbps = core[key] / busy_us / 1e3 if busy_us else 0.0  # B/µs / 1e3 = GB/s
            row[f"aiv_{stem}_active_bw(GB/s)"] = _num(gbps)
        rows.append(row)
    return rows


def op_basic_info_row(summary: Mapping[str, Any], op_name: str) -> dict[str, str]:
    """The one data row of OpBasicInfo.csv (keys are msprof column names)."""
    clock = float(summary["clock_mhz"])
    return {"Op Name": op_name, "Op Type": "vector",
            "Task Duration(us)": _num(int(summary.get("task_cycles", summary["makespan_cycles"]))
                                      / clock),
            "Block Dim": str(int(summary["block_dim"])),
            "Current Freq": f"{clock:g}", "Rated Freq": f"{clock:g}"}


def csv_text(header: tuple[str, ...], rows: list[Mapping[str, str]], empty: str) -> str:
    """CSV text with exactly ``header``'s columns; cells a row lacks are ``empty``."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    for row in rows:
        unknown = set(row) - set(header)
        if unknown:
            raise ValueError(f"cells {sorted(unknown)} are not msprof columns")
        w.writerow([row.get(col, empty) for col in header])
    return buf.getvalue()


def write_msprof(folder: str | Path, summary: Mapping[str, Any], platform: Any,
                 op_name: str | None = None) -> list[str]:
    """Write PipeUtilization.csv and OpBasicInfo.csv of a timed summary into ``folder``.

    ``platform`` gives the family (``short_soc``) and the op head; ``op_name`` defaults to the
    summary's case. Returns the file names written (none for a summary without timing).
    """
    if "cores" not in summary:
        return []
    fmt = msprof_format(platform.short_soc)
    folder = Path(folder)
    rows = pipe_utilization_rows(summary, platform.op_head_cycles)
    name = op_name or str(summary.get("case") or "kernel")
    (folder / PIPE_UTILIZATION).write_text(csv_text(fmt.pipe_utilization, rows,
                                                    fmt.empty_cell))
    (folder / OP_BASIC_INFO).write_text(csv_text(fmt.op_basic_info,
                                                 [op_basic_info_row(summary, name)],
                                                 fmt.empty_cell))
    return [PIPE_UTILIZATION, OP_BASIC_INFO]


__all__ = [
    "OP_BASIC_INFO",
    "PIPE_COLUMNS",
    "PIPE_UTILIZATION",
    "MsprofFormat",
    "families",
    "msprof_format",
    "op_basic_info_row",
    "pipe_utilization_rows",
    "write_msprof",
]

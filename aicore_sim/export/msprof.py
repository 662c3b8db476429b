"""msprof-style CSVs of a simulated launch: ``PipeUtilization.csv``, ``OpBasicInfo.csv``,
``L2Cache.csv`` and ``ResourceConflictRatio.csv``.

Step of the flow: an exporter after the summary. It reads the summary dict
(:func:`aicore_sim.views.summary.summarize`) and the platform only, so every figure in the files is
one of summary.json's, converted: nothing is recomputed from the Trace.

The files have the exact columns, in order, that ``msprof op`` writes on a board for the
platform's chip family (``data/formats/msprof_op.toml``: PipeUtilization A2/A3 48 columns, 950
34; L2Cache 24 / 34; ResourceConflictRatio 18 / 16), so a user can concatenate a simulated and a
measured file (pandas ``concat``) and compare them column by column. What each filled column of
``PipeUtilization.csv`` holds:

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

``L2Cache.csv`` and ``ResourceConflictRatio.csv``: one row per core as in PipeUtilization
(``block_id``, ``sub_block_id`` = ``vector0``, ``aic_*`` all ``NA``; ``aiv_time(us)`` and
``aiv_total_cycles`` the same figures as there). Both files are written for every family and
every platform, so a simulated folder holds the same files whatever the chip; a cell the model
does not produce is ``NA``:

- L2Cache (A2/A3 and 950): ``aiv_read_hit_rate(%)`` = 100 x ``l2_hit_bytes`` /
  ``l2_read_bytes`` of the core (the GM->UB bytes the L2 model served from L2, over all it saw),
  ``NA`` when the core read nothing or the platform has no L2 model (``l2_line_bytes`` = 0: the
  summary counts no bytes). The rest is ``NA``: the model has no read channels (A2/A3
  ``aiv_r0_*`` / ``aiv_r1_*`` counts) and no close/far L2 halves (950 ``*_close_*`` /
  ``*_far_*``), counts bytes rather than hit/miss/victim events, and does not count write hits
  (``aiv_write_hit_rate(%)``, and so ``aiv_total_hit_rate(%)``).
- ResourceConflictRatio, A2/A3: ``aiv_vec_total_cflt_ratio`` = the core's
  ``bank_conflict_cycles`` (VECTOR cycles lost to UB bank conflicts) / ``aiv_total_cycles``,
  ``NA`` on a platform without a UB bank model (``ub_bank_groups`` = 0 or no ``ub_bank_apis``).
  The model lumps bank-group and bank conflicts into one figure, so
  ``aiv_vec_bankgroup_cflt_ratio`` and ``aiv_vec_bank_cflt_ratio`` are ``NA``; so are the
  resource / MTE conflict and the wait ratios (no PMU event of the model matches them).
- ResourceConflictRatio, 950: the conflict columns are the store / load / SFU units'
  (``aiv_vec_stu_cflt_ratio``, ``aiv_vec_ldu_cflt_ratio``, ``aiv_vec_sfu_cflt_ratio``) and the
  model prices 950 vector calls without a UB bank model, so every ``aiv_*`` cell but the two
  time columns is ``NA``. The file is written all the same (a board's folder always holds it),
  so readers find the same files on both families.
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
L2_CACHE = "L2Cache.csv"
RESOURCE_CONFLICT = "ResourceConflictRatio.csv"

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
    l2_cache: tuple[str, ...]
    resource_conflict: tuple[str, ...]
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
                        tuple(f["l2_cache"]), tuple(f["resource_conflict"]),
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
        total, row = _core_cells(core, op_head_cycles, clock)
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


def _core_cells(core: Mapping[str, Any], op_head_cycles: int, clock: float
                ) -> tuple[int, dict[str, str]]:
    """(total cycles, the cells every per-core file starts with) of one core."""
    total = max(int(core["cycles"]) - int(op_head_cycles), 0)
    return total, {"block_id": str(core["core"]), "sub_block_id": "vector0",
                   "aiv_time(us)": _num(total / clock), "aiv_total_cycles": str(total)}


def l2_cache_rows(summary: Mapping[str, Any], op_head_cycles: int) -> list[dict[str, str]]:
    """The aiv cells of one L2Cache row per core (the rest are NA): time, cycles, read hit
    rate in percent (left out, so NA, when the core's L2 model saw no read)."""
    clock = float(summary["clock_mhz"])
    rows = []
    for core in summary["cores"]:
        _, row = _core_cells(core, op_head_cycles, clock)
        read = int(core.get("l2_read_bytes") or 0)
        if read:
            row["aiv_read_hit_rate(%)"] = _num(100.0 * int(core["l2_hit_bytes"]) / read)
        rows.append(row)
    return rows


def resource_conflict_rows(summary: Mapping[str, Any], op_head_cycles: int,
                           bank_model: bool, column: str | None = "aiv_vec_total_cflt_ratio"
                           ) -> list[dict[str, str]]:
    """The aiv cells of one ResourceConflictRatio row per core (the rest are NA): time,
    cycles and, with a UB bank model and a ``column`` of the family's to hold it, the bank
    conflict cycles / total cycles."""
    clock = float(summary["clock_mhz"])
    rows = []
    for core in summary["cores"]:
        total, row = _core_cells(core, op_head_cycles, clock)
        if bank_model and column is not None:
            conflict = int(core.get("bank_conflict_cycles") or 0)
            row[column] = _num(conflict / total if total else 0.0)
        rows.append(row)
    return rows


def _has_bank_model(platform: Any) -> bool:
    costs = getattr(platform, "costs", None)
    return bool(getattr(costs, "ub_bank_groups", 0)) and bool(getattr(costs, "ub_bank_apis", ()))


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
    """Write PipeUtilization.csv, OpBasicInfo.csv, L2Cache.csv and ResourceConflictRatio.csv
    of a timed summary into ``folder``.

    ``platform`` gives the family (``short_soc``), the op head and whether it has a UB bank
    model (``costs.ub_bank_groups``, ``costs.ub_bank_apis``); ``op_name`` defaults to the
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
    (folder / L2_CACHE).write_text(csv_text(
        fmt.l2_cache, l2_cache_rows(summary, platform.op_head_cycles), fmt.empty_cell))
    # 950's conflict columns (stu / ldu / sfu) have no counterpart in the model: only times
    total_cflt = "aiv_vec_total_cflt_ratio"
    column = total_cflt if total_cflt in fmt.resource_conflict else None
    (folder / RESOURCE_CONFLICT).write_text(csv_text(
        fmt.resource_conflict,
        resource_conflict_rows(summary, platform.op_head_cycles, _has_bank_model(platform),
                               column),
        fmt.empty_cell))
    return [PIPE_UTILIZATION, OP_BASIC_INFO, L2_CACHE, RESOURCE_CONFLICT]


__all__ = [
    "L2_CACHE",
    "OP_BASIC_INFO",
    "PIPE_COLUMNS",
    "PIPE_UTILIZATION",
    "RESOURCE_CONFLICT",
    "MsprofFormat",
    "families",
    "l2_cache_rows",
    "msprof_format",
    "op_basic_info_row",
    "pipe_utilization_rows",
    "resource_conflict_rows",
    "write_msprof",
]

"""Build ``msprof op``-layout folders from a simulated run with known perturbations (tests).

The files are written with the csv module from the run's own CSV rows, the figures of each
pipe multiplied by a known factor, so a correlation must report exactly those factors. The
layout is the multi-operator one, ``OPPROF_<ts>_<id>/<OpName>/<index>/<Metric>_<17 digits>.csv``.
"""

from __future__ import annotations

import csv
from pathlib import Path

STEMS = {"SCALAR": "scalar", "MTE2": "mte2", "VECTOR": "vec", "MTE3": "mte3"}


def _read(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with path.open(newline="") as fh:
        r = csv.DictReader(fh)
        return list(r.fieldnames or []), list(r)


def _scaled(text: str, f: float) -> str:
    return text if text == "NA" else repr(float(text) * f)


def write_launch(folder: Path, run_dir: Path, factors: dict[str, float], *, core: float = 1.0,
                 task: float = 1.0, na_block: int | None = None, cube_row: bool = False,
                 reverse_columns: bool = False, stamp: str = "20260628073932123",
                 op_name: str = "MoeTokenUnpermuteWithEpGrad", freq: str | None = None) -> Path:
    """One launch folder: the run's rows, busy times x ``factors[pipe]`` (default 1), core time
    x ``core``, Task Duration x ``task``; block ``na_block``'s aiv cells all NA; a cube0 row
    first when ``cube_row``; columns in reverse order when ``reverse_columns``."""
    folder.mkdir(parents=True, exist_ok=True)
    header, rows = _read(run_dir / "PipeUtilization.csv")
    out = []
    for row in rows:
        row = dict(row)
        for pipe, stem in STEMS.items():
            col = f"aiv_{stem}_time(us)"
            row[col] = _scaled(row[col], factors.get(pipe, 1.0))
        row["aiv_time(us)"] = _scaled(row["aiv_time(us)"], core)
        if na_block is not None and row["block_id"] == str(na_block):
            row.update({k: "NA" for k in row if k.startswith("aiv_")})
        out.append(row)
    if cube_row:
        cube = dict.fromkeys(header, "NA")
        cube.update({"block_id": "0", "sub_block_id": "cube0", "aic_time(us)": "1.5"})
        out.insert(0, cube)
    cols = header[::-1] if reverse_columns else header
    with (folder / f"PipeUtilization_{stamp}.csv").open("w", newline="") as fh:
        w = csv.DictWriter(fh, cols, lineterminator="\n")
        w.writeheader()
        w.writerows(out)
    info_header, info = _read(run_dir / "OpBasicInfo.csv")
    info[0]["Op Name"] = op_name
    info[0]["Task Duration(us)"] = repr(float(info[0]["Task Duration(us)"]) * task)
    if freq is not None:
        info[0]["Current Freq"] = freq
    with (folder / f"OpBasicInfo_{stamp}.csv").open("w", newline="") as fh:
        w = csv.DictWriter(fh, info_header, lineterminator="\n")
        w.writeheader()
        w.writerows(info)
    return folder

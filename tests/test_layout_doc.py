"""docs/layout.md's table names the tree: every ``aicore_sim/**.py`` file appears (itself or a
folder holding it), and no row names a path that does not exist."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "layout.md"


def _row_paths(text: str) -> list[str]:
    """The paths of the table's first column: a cell's first path sets the folder its further
    bare names (``a/b/x.py``, ``y.py``) are relative to."""
    out = []
    for line in text.splitlines():
        if not line.startswith("| `"):
            continue
        cell = line.split("|")[1]
        folder = ""
        for name in re.findall(r"`([^`]+)`", cell):
            if "/" in name.rstrip("/"):
                folder = name.rsplit("/", 1)[0] + "/" if not name.endswith("/") else ""
                out.append(name)
            else:
                out.append(folder + name)
    return out


def test_row_paths_reads_a_cell_of_several_names() -> None:
    text = "| `aicore_sim/cli/tiling.py`, `cases.py` | x |\n| `aicore_sim/verify/` | y |"
    assert _row_paths(text) == ["aicore_sim/cli/tiling.py", "aicore_sim/cli/cases.py",
                                "aicore_sim/verify/"]


def test_layout_doc_names_exactly_the_tree() -> None:
    rows = _row_paths(DOC.read_text())
    missing_paths = [r for r in rows if not list(ROOT.glob(r.rstrip("/")))]
    assert missing_paths == []
    named = {r.rstrip("/") for r in rows}
    unnamed = []
    for f in sorted((ROOT / "aicore_sim").rglob("*.py")):
        rel = f.relative_to(ROOT)
        if not any(p.as_posix() in named for p in [rel, *rel.parents]):
            unnamed.append(rel.as_posix())
    assert unnamed == []

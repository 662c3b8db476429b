"""The wheel carries every file the package reads at run time: each C++ header of the shims
(``aicore_sim/cfront/include/``, read by the compiler when a user's kernel, host tiling or
program is built) and each data file (``aicore_sim/data/``) is matched by a package-data glob
of ``pyproject.toml``. (A header left out once made ``exec`` and ``--op-src`` fail from the
wheel while every test, run from the source tree, passed.)"""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_runtime_file_is_package_data() -> None:
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"]["aicore_sim"]
    package = ROOT / "aicore_sim"
    shipped = {p for g in globs for p in package.glob(g)}
    needed = {p for p in (package / "cfront" / "include").rglob("*") if p.is_file()}
    needed |= {p for p in (package / "data").rglob("*") if p.is_file()}
    missing = sorted(str(p.relative_to(package)) for p in needed - shipped)
    assert missing == []
    assert len(needed) > 60  # the shims' headers and the presets, costs and formats

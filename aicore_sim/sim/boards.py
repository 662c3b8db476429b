"""Which boards a platform preset stands for, and where its HBM roofline comes from.

Step of the flow: beside the platform loader (``platform.py``), read by ``aicore-sim
platforms``, the summary's roofline line and the loader's error for a product name given as a
preset. The data, with its sources, is ``data/products.toml``: per SoC family the products
(Atlas 800T A2, Atlas 900 A3 SuperPoD, ...), how a board tells which chip it carries
(``npu-smi``), and the vendor's HBM bandwidth figure where one is published.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aicore_sim.util import textinput

_FILE = Path(__file__).resolve().parent.parent / "data" / "products.toml"


@dataclass(frozen=True)
class Family:
    """One product family (a SoC family as boards carry it) of ``data/products.toml``."""

    name: str
    soc_prefix: str
    products: tuple[str, ...]
    products_source: str
    identify: str
    identify_source: str
    hbm_vendor_tbps: float
    hbm_vendor_source: str


@functools.cache
def _doc() -> dict[str, Any]:
    return textinput.loads_toml(textinput.read_document(_FILE))


def test_presets() -> tuple[str, ...]:
    """The presets that model no board (``[test] presets``)."""
    return tuple(_doc()["test"]["presets"])


@functools.cache
def families() -> tuple[Family, ...]:
    """Every family of ``data/products.toml``, longest SoC prefix first."""
    doc = _doc()
    out = [Family(name=f["name"], soc_prefix=f["soc_prefix"], products=tuple(f["products"]),
                  products_source=f["products_source"], identify=f["identify"],
                  identify_source=f["identify_source"],
                  hbm_vendor_tbps=float(f["hbm_vendor_tbps"]),
                  hbm_vendor_source=f["hbm_vendor_source"]) for f in doc["family"]]
    return tuple(sorted(out, key=lambda f: -len(f.soc_prefix)))


def family_of(platform: Any) -> Family | None:
    """The family a platform stands for (``ascend910b3`` -> Atlas A2, by its SoC name); None
    for a test preset or a SoC of no family."""
    if platform.name in test_presets():
        return None
    return next((f for f in families() if platform.soc.startswith(f.soc_prefix)), None)


def _key(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def product_family(name: str) -> Family | None:
    """The family whose product (or family) name ``name`` is, spaces and case aside
    (``"atlas 800t a2"`` -> Atlas A2); None when it names none."""
    k = _key(name)
    if not k:
        return None
    for f in families():
        if k in (_key(f.name), *(_key(p) for p in f.products)):
            return f
    return None


def roofline_source(platform: Any) -> str:
    """Where a platform's HBM roofline comes from, its efficiency assumption and the vendor's
    figure beside it (when one is published)."""
    gbps = platform.hbm_bytes_per_cycle * platform.clock_mhz / 1000
    terms = (f"{platform.aic_core_num} AI cores x {platform.ddr_rate:g} B/cycle x "
             f"{platform.clock_mhz:g} MHz x efficiency {platform.hbm_efficiency:g}")
    if platform.name in test_presets():
        return f"a test platform's round numbers: {terms} (all assumed)"
    text = f"ini-derived: {terms}"
    if platform.hbm_efficiency == 1.0:
        text += " (assumed: no sustained-bandwidth table is published)"
    fam = family_of(platform)
    if fam is not None and fam.hbm_vendor_tbps > 0:
        text += (f"; vendor figure {fam.hbm_vendor_tbps:g} TB/s, {fam.hbm_vendor_source}: "
                 f"the roofline is {gbps / (fam.hbm_vendor_tbps * 1000):.0%} of it")
    elif fam is not None:
        text += f"; vendor figure: {fam.hbm_vendor_source}"
    return text


__all__ = ["Family", "families", "family_of", "product_family", "roofline_source",
           "test_presets"]

"""Which boards a preset stands for (``aicore_sim/sim/boards.py``, ``data/products.toml``): a
board's name given as a platform names its presets and how to tell its chip; every preset's
HBM roofline says where it comes from and which efficiency it assumes."""

from __future__ import annotations

import json

import pytest

from aicore_sim.sim import boards
from aicore_sim.sim.platform import list_presets, load_platform


@pytest.mark.parametrize("name, family", [("Atlas 800T A2", "Atlas A2"),
                                          ("atlas 900 a3 superpod", "Atlas A3"),
                                          ("Ascend 950DT", "Ascend 950DT")])
def test_a_board_name_names_its_presets(name, family) -> None:
    with pytest.raises(ValueError) as e:
        load_platform(name)
    assert f"is a board of the {family} family, not a preset" in str(e.value)


def test_an_a2_board_lists_the_four_910b_presets_and_npu_smi() -> None:
    with pytest.raises(ValueError) as e:
        load_platform("Atlas 800T A2")
    # the test presets (tiny, ut-fake-910b) borrow an Ascend910B1 SoC name but model no board
    assert ("its chip is one of ascend910b1, ascend910b2, ascend910b3, ascend910b4; to tell "
            "which, npu-smi info: the Name column (910B3 -> preset ascend910b3)") in str(e.value)


def test_every_board_preset_has_a_family_and_test_presets_none() -> None:
    for name in list_presets():
        fam = boards.family_of(load_platform(name))
        assert (fam is None) == (name in ("tiny", "ut-fake-910b")), name


def test_roofline_sources() -> None:
    # 950PR: 32 AIC x 31 B/cycle x 1650 MHz = 1636.8 GB/s, 102 % of the 1.6 TB/s vendor figure
    text = boards.roofline_source(load_platform("ascend950pr_9589"))
    assert text.startswith("ini-derived: 32 AI cores x 31 B/cycle x 1650 MHz x efficiency 1 "
                           "(assumed")
    assert "vendor figure 1.6 TB/s" in text and "the roofline is 102% of it" in text
    # 910B3: 20 AIC x 32 B/cycle x 1800 MHz = 1152 GB/s, 64 % of the A2/A3 sample README's
    # 1.8 TB/s
    text = boards.roofline_source(load_platform("ascend910b3"))
    assert "vendor figure 1.8 TB/s, source P3" in text and "the roofline is 64% of it" in text
    assert boards.roofline_source(load_platform("tiny")).startswith("a test platform's")


def test_platforms_command_lists_families_and_sources(cli, tmp_path) -> None:
    p = cli("platforms", "--json", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    rows = {r["name"]: r for r in map(json.loads, p.stdout.splitlines())}
    assert rows["ascend910b3"]["family"] == "Atlas A2"
    assert "Atlas 800T A2" in rows["ascend910b3"]["products"]
    assert rows["ascend910b3"]["hbm_roofline_source"].startswith("ini-derived: 20 AI cores")
    q = cli("run", "--platform", "Atlas 800T A2", "--out", tmp_path / "x", cwd=tmp_path)
    assert q.returncode == 2 and len(q.stderr.splitlines()) == 1
    assert not (tmp_path / "x").exists()

"""``aicore-sim calibrate`` and platform overlays: known perturbations are recovered, the
overlay it writes reproduces the fit through ``--platform``, bad inputs exit 2."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

from aicore_sim.cli import main
from aicore_sim.sim.launch import launch
from aicore_sim.sim.platform import load_platform
from aicore_sim.views.summary import summarize
from tests import kernels
from tests.opprof_fixture import write_launch

B1_4 = {"preset": "ascend910b1", "aiv_core_num": 4}
CASES = ("few_tokens", "hidden_100")  # 5 x 4 x 256 bf16 and 12 x 2 x 100 fp16, probs


def _run(out: Path, case: str, platform: dict, capsys) -> Path:
    assert main(["run", "--case", case, "--platform", json.dumps(platform), "--mode",
                 "timing-only", "--no-plot", "--trace", "none", "--jobs", "1", "--out",
                 str(out)]) == 0
    capsys.readouterr()
    return out


def _calibrate(capsys, *args: str) -> dict:
    assert main(["calibrate", *args, "--json"]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def test_two_perturbed_launches_are_recovered(tmp_path, capsys) -> None:
    # The "board" is the simulator with MTE2 1.25x and VECTOR 0.9x slower/faster per block.
    pairs = []
    for case in CASES:
        run = _run(tmp_path / f"run_{case}", case, B1_4, capsys)
        prof = write_launch(tmp_path / f"OPPROF_{case}", run, {"MTE2": 1.25, "VECTOR": 0.9})
        pairs.append(f"{prof}:{case}")
    out = tmp_path / "b1.toml"
    d = _calibrate(capsys, *pairs, "--platform", json.dumps(B1_4), "--out", str(out))
    k = d["knobs"]
    assert k["mte2_scale"] == pytest.approx(1.25, rel=0.03)
    assert k["vector_scale"] == pytest.approx(0.9, rel=0.03)
    assert k["mte3_scale"] == pytest.approx(1.0, rel=0.03)
    # no launch is HBM-bound on 4 cores: the HBM rate does not move any busy time
    assert d["not_identifiable"] == ["hbm_efficiency"] and k["hbm_efficiency"] == 1.0
    assert d["flags"] == []  # the board's Current Freq is the platform's 1850 MHz
    # before: simulated / measured = 1 / 1.25 and 1 / 0.9, |ln r| = ln 1.25 = 0.2231 and
    # ln(1 / 0.9) = 0.1054 (to the run CSV's 6 decimals: 1e-6 us of ~0.1-1 us figures)
    assert d["errors_before"]["MTE2"]["error"] == pytest.approx(math.log(1.25), rel=1e-4)
    assert d["errors_before"]["VECTOR"]["error"] == pytest.approx(-math.log(0.9), rel=1e-4)
    for pipe in ("SCALAR", "MTE2", "VECTOR", "MTE3"):
        assert d["errors_after"][pipe]["error"] < 0.03, pipe
        assert d["errors_overlay"][pipe]["error"] < 0.03, pipe  # re-simulated through the file
    assert [h["launch"] for h in d["held_out"]] == pairs
    for h in d["held_out"]:
        assert h["knobs"]["mte2_scale"] == pytest.approx(1.25, rel=0.03)
        assert all(h["errors"][p]["error"] < 0.03 for p in ("MTE2", "VECTOR", "MTE3"))
    # the overlay: every value with its source; --platform loads it
    text = out.read_text()
    values = re.findall(r"^(\w+) = ([0-9.]+)  # source: calibrated from (.+) on "
                        r"(\d{4}-\d\d-\d\d)$", text, re.M)
    assert [v[0] for v in values] == ["mte2_scale", "mte3_scale", "vector_scale"]
    for _, _, files, _ in values:
        assert all(f"OPPROF_{c}/PipeUtilization_20260628073932123.csv" in files for c in CASES)
    assert "hbm_efficiency" not in text.split("[costs]")[0].split("\n# Load it")[1]
    p = load_platform({**B1_4, "overlay": str(out)})
    assert p.costs.mte2_scale == float(values[0][1]) and p.aiv_core_num == 4
    assert d["load_with"] == json.dumps({**B1_4, "overlay": str(out)})


def test_hbm_efficiency_is_recovered_when_launches_are_bandwidth_bound(tmp_path,
                                                                       capsys) -> None:
    # On the tiny chip two cores share 1 B/cycle of HBM: copies wait for bandwidth. The board
    # is the simulator with half the HBM rate and 1.1x vector costs (an overlay of its own).
    truth = tmp_path / "truth.toml"
    truth.write_text("hbm_efficiency_ratio = 0.5\n[costs]\nvector_scale = 1.1\n")
    pairs = [f"{_run(tmp_path / c, c, {'preset': 'tiny', 'overlay': str(truth)}, capsys)}:{c}"
             for c in CASES]
    d = _calibrate(capsys, *pairs, "--platform", "tiny", "--out", str(tmp_path / "t.toml"))
    assert d["knobs"]["hbm_efficiency"] == pytest.approx(0.5, rel=0.03)
    assert d["knobs"]["vector_scale"] == pytest.approx(1.1, rel=0.03)
    assert d["errors_before"]["MTE2"]["error"] > 0.5
    assert all(d["errors_after"][p]["error"] < 0.03 for p in ("MTE2", "VECTOR", "MTE3"))


def test_bad_inputs_exit_2_and_write_nothing(tmp_path, capsys) -> None:
    run = _run(tmp_path / "run", "few_tokens", B1_4, capsys)
    prof = write_launch(tmp_path / "OPPROF_a", run, {})
    out = tmp_path / "o.toml"
    plat = json.dumps(B1_4)
    bad = {
        (str(prof),): "expected OPPROF_DIR:CASE",
        (f"{prof}:no_such_case",): "case 'no_such_case'",
        (f"{tmp_path / 'none'}:few_tokens",): "none: does not exist",
    }
    for args, want in bad.items():
        assert main(["calibrate", *args, "--platform", plat, "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert want in err and len(err.strip().splitlines()) == 1, err
    # the board has 4 blocks; on 8 cores the case launches 8
    assert main(["calibrate", f"{prof}:few_tokens", "--platform",
                 json.dumps({**B1_4, "aiv_core_num": 8}), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "4 vector blocks" in err and "launches 8 cores" in err
    assert main(["calibrate", f"{prof}:few_tokens", "--platform", plat, "--out",
                 str(tmp_path / "o.txt")]) == 2
    assert "must end with .toml" in capsys.readouterr().err
    assert main(["calibrate", f"{prof}:few_tokens", "--platform", "nope", "--out",
                 str(out)]) == 2
    assert "--platform nope: unknown platform preset" in capsys.readouterr().err
    assert not out.exists() and not (tmp_path / "o.txt").exists()


# --------------------------------------------------------------------------------------------
# The knobs and the overlay file (platform.py / cost/params.py)
# --------------------------------------------------------------------------------------------


def _copy_in(platform) -> dict:
    n = 64  # 256 bytes of fp32
    x = np.arange(n, dtype=np.float32)
    r = launch(kernels.copy_in, ["x", "y", {"n": n}], {"x": x, "y": np.zeros_like(x)},
               {"y": (np.float32, (n,))}, platform, block_dim=1)
    c = summarize(r)["cores"][0]
    # a pipe's time as a board counts it: executing + its copies' hold by shared HBM
    return {p: v + c["gm_stretch_cycles"][p] for p, v in c["busy_cycles"].items()}


def _copy_cast(platform) -> dict:
    n = 64
    x = np.arange(n, dtype=np.float16)
    r = launch(kernels.copy_cast, ["x", "y", {"n": n}], {"x": x, "y": np.zeros(n, np.float32)},
               {"y": (np.float32, (n,))}, platform, block_dim=1)
    return summarize(r)["cores"][0]["busy_cycles"]


def test_scales_multiply_the_curves_and_vector_costs(tmp_path) -> None:
    tiny = load_platform("tiny")
    # tiny copy = 100 + bytes cycles: 356 for 256 bytes, + SetFlag 1 on MTE2
    assert _copy_in(tiny) == {"SCALAR": 5, "MTE2": 357, "VECTOR": 0, "MTE3": 357}
    ov = tmp_path / "ov.toml"
    ov.write_text("[costs]\nmte2_scale = 2.0\nmte3_scale = 0.5\n")
    p = load_platform({"preset": "tiny", "overlay": str(ov)})
    assert p.overridden == ("costs",) and p.costs.mte2_scale == 2.0
    # MTE2: 2 x 356 = 712 + SetFlag 1. MTE3: 0.5 x 356 = 178, but the chip's HBM drains 1
    # B/cycle: max(178, 256) = 256, + WaitFlag 1
    assert _copy_in(p) == {"SCALAR": 5, "MTE2": 713, "VECTOR": 0, "MTE3": 257}
    # Cast of 64 elements: 10 + 64/8 = 18 cycles, + SetFlag 1 on V; x1.5 -> 27 + 1 + WaitFlag 1
    base = _copy_cast(tiny)["VECTOR"]
    assert base == 18 + 1 + 1
    assert _copy_cast(tiny.with_overrides(costs={"vector_scale": 1.5}))["VECTOR"] == 27 + 1 + 1


def test_overlay_errors_name_the_file(tmp_path) -> None:
    ov = tmp_path / "ov.toml"
    ov.write_text("[costs]\nmte9_scale = 2.0\n")
    with pytest.raises(ValueError, match=r"overlay .*ov.toml: unknown costs field 'mte9_scale'"):
        load_platform({"preset": "tiny", "overlay": str(ov)})
    ov.write_text("hbm_efficiency_ratio = -1\n")
    with pytest.raises(ValueError, match=r"ov.toml: platform field 'hbm_efficiency': expected "
                                         r"a finite number >= 1e-09"):
        load_platform({"preset": "tiny", "overlay": str(ov)})
    ov.write_text("[costs]\nvector_scale = 0\n")
    with pytest.raises(ValueError, match=r"ov.toml: costs field 'vector_scale' must be > 0"):
        load_platform({"preset": "tiny", "overlay": str(ov)})
    ov.write_text("[weird]\nx = 1\n")
    with pytest.raises(ValueError, match=r"unknown table \[weird\]"):
        load_platform({"preset": "tiny", "overlay": str(ov)})
    with pytest.raises(ValueError, match="does not exist"):
        load_platform({"preset": "tiny", "overlay": str(tmp_path / "none.toml")})
    ov.write_text("x = [")
    with pytest.raises(ValueError, match="not valid TOML"):
        load_platform({"preset": "tiny", "overlay": str(ov)})

"""``aicore-sim correlate``: a simulated run against an msprof op folder built from it with known
perturbations (MTE2 1.25x, VECTOR 0.9x, MTE3 1.1x, core time 1.2x, task 1.3x, a NA row, a cube
row, reversed columns, the timestamped multi-operator layout); malformed inputs exit 2."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from aicore_sim.cli import main
from tests.opprof_fixture import write_launch

REPO = Path(__file__).resolve().parents[1]
OP = "MoeTokenUnpermuteWithEpGrad"
FACTORS = {"MTE2": 1.25, "VECTOR": 0.9, "MTE3": 1.1}
# few_tokens (5 tokens, topK 4, hidden 256) on a 4-core ascend910b1: every core has work
PLATFORM = '{"preset": "ascend910b1", "aiv_core_num": 4}'


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, cli) -> Path:
    tmp = tmp_path_factory.mktemp("corr")
    out = tmp / "run"
    r = cli("run", "--case", "few_tokens", "--platform", PLATFORM, "--mode", "timing-only",
            "--no-plot", "--trace", "none", "--out", out, cwd=tmp)
    assert r.returncode == 0, r.stderr
    return out


@pytest.fixture(scope="module")
def opprof(run_dir, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("prof") / "OPPROF_20260628073932_HAMRWXWPXODRZODT"
    write_launch(root / OP / "0", run_dir, {"MTE2": 2.0}, stamp="20260628073932001")
    write_launch(root / OP / "1", run_dir, FACTORS, core=1.2, task=1.3, na_block=2,
                 cube_row=True, reverse_columns=True, stamp="20260628073932002")
    write_launch(root / "OtherOp" / "0", run_dir, {}, op_name="OtherOp",
                 stamp="20260628073932003")
    return root


def _sim_csv(run_dir: Path) -> list[dict[str, str]]:
    with (run_dir / "PipeUtilization.csv").open(newline="") as fh:
        return list(csv.DictReader(fh))


def test_run_folder_csv_agrees_with_its_summary(run_dir) -> None:
    s = json.loads((run_dir / "summary.json").read_text())
    rows = _sim_csv(run_dir)
    assert [int(r["block_id"]) for r in rows] == [c["core"] for c in s["cores"]]
    for r, c in zip(rows, s["cores"]):
        # pipe time (vector work, flags left out) / 1850 MHz, to the CSV's 6 decimals
        assert float(r["aiv_vec_time(us)"]) == pytest.approx(
            c["pipe_time_cycles"]["VECTOR"] / 1850, abs=5e-7)
        assert int(r["aiv_total_cycles"]) == c["cycles"] - 300  # ascend910b1 op head
    with (run_dir / "OpBasicInfo.csv").open(newline="") as fh:
        info = next(csv.DictReader(fh))
    assert info["Op Name"] == "few_tokens" and info["Block Dim"] == "4"
    # Task Duration = makespan + the launch overhead (ascend910b1: 460 + 3 x 139.1 ns)
    assert float(info["Task Duration(us)"]) == pytest.approx(s["task_us"], abs=5e-7)
    assert s["task_cycles"] == s["makespan_cycles"] + round((460 + 3 * 139.1) * 1.85)


def test_correlate_reports_exactly_the_perturbations(run_dir, opprof, tmp_path, cli) -> None:
    report = tmp_path / "rep" / "corr.md"
    r = cli("correlate", run_dir, opprof, "--op", OP, "--launch", "1", "--json", "--report",
            report, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 1
    d = json.loads(lines[0])
    sim = _sim_csv(run_dir)
    assert len(sim) == 4
    pp = d["per_pipe"]
    assert set(pp) == {"SCALAR", "MTE2", "VECTOR", "MTE3"}
    for pipe, f in {**FACTORS, "SCALAR": 1.0}.items():
        # block 2's cells are NA: 3 of the 4 blocks give a ratio, each exactly 1 / the
        # factor (simulated / measured, the board measured factor x the simulated time)
        assert pp[pipe]["cores"] == 3, pipe
        for k in ("ratio_median", "ratio_min", "ratio_max"):
            assert pp[pipe][k] == pytest.approx(1 / f, rel=1e-12), (pipe, k)
        assert pp[pipe]["cores_without_ratio"] == 1
    assert d["core_time"]["ratio_median"] == pytest.approx(1 / 1.2, rel=1e-12)
    td = d["task_duration"]
    assert td["ratio"] == pytest.approx(1 / 1.3, rel=1e-12)
    s = json.loads((run_dir / "summary.json").read_text())
    assert td["simulated_us"] == pytest.approx(s["task_us"], abs=1e-6)
    assert td["measured_us"] == pytest.approx(1.3 * td["simulated_us"], rel=1e-12)
    # per core: measured/simulated figures of the CSVs; the NA block has none
    assert [c["block_id"] for c in d["per_core"]] == [0, 1, 2, 3]
    assert d["per_core"][2]["MTE2"] == {"measured_us": None,
                                        "simulated_us": float(sim[2]["aiv_mte2_time(us)"]),
                                        "ratio": None}
    assert d["per_core"][0]["MTE2"]["simulated_us"] == float(sim[0]["aiv_mte2_time(us)"])
    assert d["measured"]["cube_rows_skipped"] == 1 and d["measured"]["blocks"] == 4
    assert d["measured"]["launch"] == f"{OP}/1"
    assert any("1 of 4 blocks have no ratio" in f for f in d["flags"])
    assert not any(f.startswith(("frequency", "block dim")) for f in d["flags"])
    # markdown + JSON + scatter plot beside it
    assert sorted(p.name for p in report.parent.iterdir()) == [
        "corr.json", "corr.md", "corr.png"]
    assert json.loads((report.parent / "corr.json").read_text()) == d
    md = report.read_text()
    assert "| MTE2 | 3 | 0.8000 | 0.8000 | 0.8000 |" in md and "![" in md  # 1 / 1.25
    assert (report.parent / "corr.png").read_bytes()[:4] == b"\x89PNG"


def test_text_table_and_default_report(run_dir, opprof, tmp_path, capsys) -> None:
    run = tmp_path / "run"
    run.mkdir()
    for name in ("PipeUtilization.csv", "OpBasicInfo.csv"):
        (run / name).write_bytes((run_dir / name).read_bytes())
    code = main(["correlate", str(run), str(opprof / OP / "0")])
    out = capsys.readouterr().out
    assert code == 0
    assert "MTE2           4   0.5000   0.5000   0.5000" in out  # 1 / 2
    assert "VECTOR         4   1.0000" in out
    assert sorted(p.name for p in run.iterdir()) == [
        "OpBasicInfo.csv", "PipeUtilization.csv", "correlate.json", "correlate.md",
        "correlate.png"]


def test_flags_a_clock_and_block_dim_mismatch(run_dir, tmp_path, capsys) -> None:
    launch = write_launch(tmp_path / "OPPROF_x", run_dir, {}, freq="1650")
    info = launch / "OpBasicInfo_20260628073932123.csv"
    info.write_text(info.read_text().replace(",4,NA,", ",8,NA,"))
    assert main(["correlate", str(run_dir), str(tmp_path / "OPPROF_x"), "--json",
                 "--report", str(tmp_path / "r.md")]) == 0
    d = json.loads(capsys.readouterr().out)
    flags = " | ".join(d["flags"])
    assert "frequency: the board ran at 1650 MHz" in flags and "at 1850 MHz" in flags
    assert "Block Dim 8" in flags and "the simulation 4" in flags


def _bad(run_dir: Path, prof: Path, capsys, *extra: str) -> str:
    before = sorted(p.name for p in run_dir.iterdir())
    code = main(["correlate", str(run_dir), str(prof), *extra])
    err = capsys.readouterr().err
    assert code == 2
    assert len(err.strip().splitlines()) == 1, err
    assert sorted(p.name for p in run_dir.iterdir()) == before  # nothing written
    return err


def test_malformed_inputs_exit_2_naming_file_and_rule(run_dir, opprof, tmp_path,
                                                      capsys) -> None:
    # several launches and no choice
    err = _bad(run_dir, opprof, capsys)
    assert "3 launches" in err and "--op NAME and --launch INDEX" in err
    # missing PipeUtilization / OpBasicInfo
    empty = tmp_path / "empty"
    empty.mkdir()
    err = _bad(run_dir, empty, capsys)
    assert str(empty) in err and "no PipeUtilization*.csv" in err
    src = write_launch(tmp_path / "a", run_dir, {})
    (src / "OpBasicInfo_20260628073932123.csv").unlink()
    err = _bad(run_dir, src, capsys)
    assert f"{src}/OpBasicInfo.csv: missing" in err
    err = _bad(run_dir, tmp_path / "nope", capsys)
    assert "nope: does not exist" in err
    # missing column
    bad = write_launch(tmp_path / "b", run_dir, {})
    pu = bad / "PipeUtilization_20260628073932123.csv"
    pu.write_text(pu.read_text().replace("aiv_mte2_time(us)", "aiv_mte2_tim"))
    err = _bad(run_dir, bad, capsys)
    assert str(pu) in err and "no column 'aiv_mte2_time(us)'" in err
    # non-numeric cell
    bad = write_launch(tmp_path / "c", run_dir, {})
    pu = bad / "PipeUtilization_20260628073932123.csv"
    rows = pu.read_text().splitlines()
    header = rows[0].split(",")
    cells = rows[2].split(",")
    cells[header.index("aiv_vec_time(us)")] = "fast"
    rows[2] = ",".join(cells)
    pu.write_text("\n".join(rows) + "\n")
    err = _bad(run_dir, bad, capsys)
    assert str(pu) in err and "line 3, column 'aiv_vec_time(us)': 'fast' is not a number" in err
    # block count mismatch: the board has 3 blocks, the run 4 cores
    bad = write_launch(tmp_path / "d", run_dir, {})
    pu = bad / "PipeUtilization_20260628073932123.csv"
    pu.write_text("\n".join(pu.read_text().splitlines()[:-1]) + "\n")
    err = _bad(run_dir, bad, capsys)
    assert str(pu) in err and "3 vector blocks" in err and "4 cores" in err \
        and "block counts must match" in err
    # a run folder without the CSVs
    norun = tmp_path / "norun"
    norun.mkdir()
    err = _bad(norun, opprof / OP / "0", capsys)
    assert f"{norun}/PipeUtilization.csv: missing" in err

"""What a run is given, from the command line: a changed tiling (``run --tiling FIELD=VALUE``
and a case file's ``"tiling"``, checked by the op's tiling space, recorded in the run folder,
named first by ``diff``), a near-miss platform name, names with control characters."""

from __future__ import annotations

import json

import pytest

# the bundled case tiny (MoeTokenUnpermuteWithEpGrad, 10 tokens, topK 3, hidden 64, bf16
# tokens, fp32 probs): upstream's tiling copies in inputReserveNum 3 permuted tokens a loop
# (one group of topK); with 1 each group takes three loops, and the run 94 cycles more


def test_one_changed_field_runs_verified_and_recorded(cli, tmp_path):
    r = cli("run", "--case", "tiny", "--tiling", "inputReserveNum=1", "--out", tmp_path / "b",
            "--no-plot", "--jobs", "1")
    assert r.returncode == 0, r.stderr
    assert "makespan 5448 cycles" in r.stdout  # 5,354 with upstream's 3
    assert "golden permuted_tokens_grad: exact (1920 elements)" in r.stdout
    s = json.loads((tmp_path / "b" / "summary.json").read_text())
    assert s["tiling"]["set"] == {"inputReserveNum": 1}
    assert s["tiling"]["fields"]["inputReserveNum"] == 1
    assert s["tiling"]["fields"]["indicesReserveNum"] == 3  # planned around it, as upstream's
    assert (s["tiling"]["tiling_key"], s["tiling"]["block_dim"]) == (1, 48)
    assert s["kernel_source"] == "port"


def test_diff_names_the_tiling_change_first(cli, tmp_path):
    for out, extra in (("a", ()), ("b", ("--tiling", "inputReserveNum=1"))):
        assert cli("run", "--case", "tiny", *extra, "--out", tmp_path / out, "--no-plot",
                   "--trace", "none", "--jobs", "1").returncode == 0
    r = cli("diff", tmp_path / "a", tmp_path / "b")
    assert r.returncode == 1, r.stderr  # the runs differ
    lines = r.stdout.splitlines()
    assert lines[2] == "inputs changed: tiling.inputReserveNum 3 -> 1"
    # then the verdict of each run (the same here), then the figures
    assert lines[3] == "bound by: latency (phases in series); HBM-bound: no"
    assert lines[5].split() == ["makespan_cycles", "5,354", "5,448", "+94", "(+1.8", "%)"]


def test_a_value_the_kernel_refuses_is_exit_2_naming_the_rule(cli, tmp_path):
    r = cli("run", "--case", "tiny", "--tiling", "inputReserveNum=7", "--out", tmp_path / "c")
    assert r.returncode == 2
    assert r.stderr.strip() == ("aicore-sim: error: --tiling: inputReserveNum 7 must divide "
                                "topK 3 (rule r_divides_topk)")
    assert not (tmp_path / "c").exists()
    r = cli("run", "--case", "tiny", "--tiling", "nosuch=1", "--out", tmp_path / "c")
    assert r.returncode == 2 and "unknown tiling knob(s) ['nosuch']; valid: cores" in r.stderr
    r = cli("run", "--case", "tiny", "--tiling", "inputReserveNum=two", "--out", tmp_path / "c")
    assert r.returncode == 2 and "inputReserveNum: 'two' is not an integer" in r.stderr


def test_a_case_files_tiling(cli, tmp_path):
    doc = json.loads(cli("cases", "--json").stdout.splitlines()[0])
    assert doc["name"] == "seed_example"
    doc["tiling"] = {"inputReserveNum": 1}
    case = tmp_path / "c.json"
    case.write_text(json.dumps(doc))
    r = cli("run", case, "--out", tmp_path / "r", "--no-plot", "--jobs", "1")
    assert r.returncode == 0, r.stderr
    s = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert s["tiling"]["set"] == {"inputReserveNum": 1}
    doc["tiling"] = {"inputReserveNum": "1"}
    case.write_text(json.dumps(doc))
    r = cli("run", case, "--out", tmp_path / "r2")
    assert r.returncode == 2 and "tiling.inputReserveNum: must be an integer, got '1'" in r.stderr


def test_verify_with_a_changed_tiling(cli, tmp_path):
    r = cli("verify", "tiny", "--tiling", "inputReserveNum=1", "--report", tmp_path / "v",
            "--no-progress")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "1 / 1 cases passed, 0 of 2 outputs failed, 0 not run" in r.stdout
    r = cli("verify", "tiny", "--tiling", "inputReserveNum=7", "--report", tmp_path / "w",
            "--no-progress")
    assert r.returncode == 1  # a case that could not run fails the check
    assert ("FAIL  tiny  (not run) InputError: --tiling: inputReserveNum 7 must divide topK 3 "
            "(rule r_divides_topk)") in r.stdout


def test_a_near_miss_platform_name_gets_a_suggestion(cli, tmp_path):
    r = cli("run", "--case", "tiny", "--platform", "910b3", "--out", tmp_path / "o")
    assert r.returncode == 2
    assert r.stderr.startswith("aicore-sim: error: --platform 910b3: unknown platform preset "
                               "'910b3' (did you mean ascend910b3?); presets: ")


def test_control_characters_of_a_case_name_reach_the_terminal_escaped(cli, tmp_path):
    doc = json.loads(cli("cases", "--json").stdout.splitlines()[0])
    doc["name"] = "x\x1b[32m all good"
    case = tmp_path / "c.json"
    case.write_text(json.dumps(doc))
    r = cli("run", case, "--out", tmp_path / "r", "--no-plot", "--jobs", "1")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0] == "case x\\x1b[32m all good"
    assert "\x1b" not in r.stdout + r.stderr


@pytest.mark.parametrize("window", ["0:1e308us", "1e308us:"])
def test_a_window_past_any_time_runs_to_the_end(cli, tmp_path, window):
    """An end past any time a run reaches (infinite once turned into cycles) is the run's
    end, not an overflow inside the command."""
    r = cli("run", "--case", "tiny", "--window", window, "--out", tmp_path / "o", "--jobs", "1")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "o" / "timeline.png").is_file()
    assert "internal error" not in r.stderr


def test_a_300_character_case_name_gets_a_run_folder(cli, tmp_path):
    """The default run folder's name is cut to fit a file system (a digest keeps two long
    names apart), instead of a refused folder and an empty traces/ left behind."""
    doc = json.loads(cli("cases", "--json").stdout.splitlines()[0])
    doc["name"] = "n" * 300
    case = tmp_path / "c.json"
    case.write_text(json.dumps(doc))
    r = cli("run", case, "--no-plot", "--trace", "none", "--jobs", "1", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    (folder,) = (tmp_path / "traces").iterdir()
    assert folder.name.endswith("n" * 85 + "-" + folder.name[-10:])
    assert len(folder.name) < 255 and (folder / "summary.json").is_file()


@pytest.mark.parametrize("name", ["tiny", "permute_grad_tiny_fp32_probs"])
def test_a_cases_json_line_runs_exactly_as_the_bundled_case(cli, tmp_path, name):
    """``cases --json`` names the bundled draw (``data.case``), so its document gives the
    outputs of ``run --case NAME`` bit for bit (was: generic seeded draws, every case's
    outputs different)."""
    doc = next(d for d in map(json.loads, cli("cases", "--json").stdout.splitlines())
               if d["name"] == name)
    assert doc["data"]["case"] == name
    (tmp_path / "c.json").write_text(json.dumps(doc))
    opts = ("--mode", "functional", "--no-plot", "--trace", "none", "--jobs", "1")
    assert cli("run", "--case", name, "--out", tmp_path / "a", *opts).returncode == 0
    assert cli("run", tmp_path / "c.json", "--out", tmp_path / "b", *opts).returncode == 0
    a = sorted((tmp_path / "a" / "outputs").glob("*.npy"))
    assert [p.name for p in a] == [p.name for p in sorted((tmp_path / "b" / "outputs").glob(
        "*.npy"))] and a
    for p in a:
        assert p.read_bytes() == (tmp_path / "b" / "outputs" / p.name).read_bytes(), p.name


def test_a_data_case_of_other_shapes_is_refused(cli, tmp_path):
    doc = next(d for d in map(json.loads, cli("cases", "--json").stdout.splitlines())
               if d["name"] == "tiny")
    doc["inputs"]["probs"]["shape"] = [10, 4]
    (tmp_path / "c.json").write_text(json.dumps(doc))
    r = cli("run", tmp_path / "c.json", "--out", tmp_path / "o")
    assert r.returncode == 2 and not (tmp_path / "o").exists()
    assert r.stderr == ("aicore-sim: error: c.json: data.case: the bundled case tiny's input "
                        "probs is [10, 3] float32, this file's [10, 4] float32; its draw makes "
                        "only its own shapes and dtypes\n")
    doc["data"]["case"] = "nope"
    (tmp_path / "c.json").write_text(json.dumps(doc))
    r = cli("run", tmp_path / "c.json", "--out", tmp_path / "o")
    assert r.returncode == 2 and r.stderr.startswith(
        'aicore-sim: error: c.json: data.case: "nope" is not a bundled case of op ')


def test_an_input_cut_short_after_it_was_read_cannot_kill_the_run(tmp_path):
    """``read_npy`` reads the file into memory: cut short afterwards, the array is whole (a
    memory-mapped one killed the process with SIGBUS, exit -7, when touched)."""
    import subprocess
    import sys

    import numpy as np

    np.save(tmp_path / "x.npy", np.arange(1 << 16, dtype=np.float32))
    code = ("import os, sys; from aicore_sim.sim.dtypes import read_npy; import numpy as np\n"
            "a = read_npy(sys.argv[1], (65536,), np.dtype('float32'))\n"
            "os.truncate(sys.argv[1], 200)\n"
            "print(float(a.sum()))\n")
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path / "x.npy")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "2147450880.0\n"  # 0 + 1 + ... + 65535 = 65535 * 65536 / 2

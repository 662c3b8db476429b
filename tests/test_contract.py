"""One test per class of bad input found by trying the command line as an adversarial user.

Each runs the real command (``aicore_sim.cli.main`` in a forked child under ``RLIMIT_AS``, the
harness of ``tests/test_fuzz_contract.py``) and asserts the contract's answer: exit 2 with one
line naming the field and the rule and nothing written; exit 1 only when a check the user
relies on fails; exit 0 only when every result can be trusted - plus a note for inputs that are
legal but suspicious. The classes are those of the robustness issue, in its order.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from aicore_sim import cli
from aicore_sim.ascendc.host import TilingError
from aicore_sim.cli import cases, console, verdict
from aicore_sim.sim.errors import DeadlockError, InputError, UsageError
from aicore_sim.sim.program import Hazard
from tests.test_fuzz_contract import leftovers, run_limited

ROOT = Path(__file__).resolve().parent.parent
TINY: dict[str, Any] = json.loads((ROOT / "examples/cases/tiny.json").read_text())


def case(tmp: Path, fname: str = "case.json", **changes: Any) -> Path:
    doc = copy.deepcopy(TINY)
    for k, v in changes.items():
        doc[k] = v
    p = tmp / fname
    p.write_text(json.dumps(doc))
    return p


def go(tmp: Path, *argv: str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of ``aicore-sim ARGV`` run in ``tmp``."""
    out: list[str] = []
    code, err, _ = run_limited(list(argv), tmp, out)
    return code, out[0] if out else "", err


def refused(tmp: Path, *argv: str, says: str, nothing_at: str | None = "out") -> str:
    code, _, err = go(tmp, *argv)
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith("aicore-sim: error: "), err
    assert says in err
    if nothing_at is not None:
        assert not (tmp / nothing_at).exists()
    assert leftovers(tmp) == []
    return err


def tiny_inputs(folder: Path, seed: int = 0) -> dict[str, np.ndarray]:
    """The tiny case's inputs (N 10, K 3, H 64, bf16 tokens, fp32 probs) as .npy files."""
    rng = np.random.default_rng(seed)
    arrays = {
        "unpermuted_tokens_grad": rng.uniform(-2, 2, (10, 64)).astype(ml_dtypes.bfloat16),
        "sorted_indices": rng.permutation(30).astype(np.int32),
        "permuted_tokens": rng.uniform(-2, 2, (30, 64)).astype(ml_dtypes.bfloat16),
        "probs": rng.uniform(0.01, 0.99, (10, 3)).astype(np.float32),
    }
    folder.mkdir()
    for k, v in arrays.items():
        np.save(folder / f"{k}.npy", v)
    return arrays


# -- tracebacks that became one-line errors ---------------------------------------------------


def test_non_utf8_case_file(tmp_path: Path) -> None:
    (tmp_path / "case.json").write_bytes(b'{"op": "\xff\xfe"}')
    refused(tmp_path, "run", "case.json", "--out", "out",
            says="case.json: not UTF-8 text (byte 0xff at offset 8)")


@pytest.mark.parametrize("field", ["hbm_efficiency", "hbm_bytes_per_cycle", "ddr_rate"])
def test_zero_rates(tmp_path: Path, field: str) -> None:
    case(tmp_path, platform={"preset": "ascend910b1", field: 0})
    refused(tmp_path, "run", "case.json", "--out", "out",
            says=f"platform field '{field}'" + (
                ": expected a finite number >= 1e-09 and <= 1e+15, got 0"
                if field != "hbm_bytes_per_cycle" else " must be > 0, got 0.0"))


@pytest.mark.parametrize("field", ["ub_block_bytes", "ub_bank_bytes", "ub_banks_per_group",
                                   "ub_group_read_ports"])
def test_zero_ub_bank_geometry(tmp_path: Path, field: str) -> None:
    # an address or a count is divided by these: 0 was a ZeroDivisionError in the pricing
    case(tmp_path, platform={"preset": "ascend910b1", "costs": {field: 0}})
    refused(tmp_path, "run", "case.json", "--out", "out",
            says=f"costs field '{field}': expected an integer >= 1, got 0")


@pytest.mark.parametrize("field, value, rule", [
    ("l2_warm_start", "yes", 'expected true or false, got "yes"'),
    ("kernel_setup_cycles", -1, "expected an integer >= 0, got -1"),
])
def test_bad_entry_and_l2_start_fields(tmp_path: Path, field: str, value, rule: str) -> None:
    case(tmp_path, platform={"preset": "ascend910b1", "costs": {field: value}})
    refused(tmp_path, "run", "case.json", "--out", "out", says=f"costs field '{field}': {rule}")


def test_npz_under_an_npy_name(tmp_path: Path) -> None:
    case(tmp_path)
    tiny_inputs(tmp_path / "in")
    with open(tmp_path / "in" / "probs.npy", "wb") as f:
        np.savez(f, a=np.zeros((10, 3), np.float32))
    refused(tmp_path, "run", "case.json", "--inputs", "in", "--out", "out",
            says="probs.npy: an .npz archive, not one .npy array")


def test_negative_seed(tmp_path: Path) -> None:
    case(tmp_path)
    refused(tmp_path, "run", "case.json", "--seed", "-1", "--out", "out",
            says="argument --seed: must be >= 0, got -1")


def test_shape_of_1e12(tmp_path: Path) -> None:
    inputs = copy.deepcopy(TINY["inputs"])
    inputs["unpermuted_tokens_grad"]["shape"] = [10**12, 64]
    case(tmp_path, inputs=inputs)
    # 1e12 x 64 bf16 = 1.28e14 bytes = 119209.3 GiB alone
    refused(tmp_path, "run", "case.json", "--out", "out",
            says="inputs.unpermuted_tokens_grad alone 119209.3 GiB")


def test_unwritable_out(tmp_path: Path) -> None:
    case(tmp_path)
    # a file where a folder must go: refused before the simulation (as root, permissions do
    # not stop a write, a non-folder parent does)
    refused(tmp_path, "run", "case.json", "--out", "case.json/x", nothing_at=None,
            says="case.json is not a folder (rule output_folder)")
    assert json.loads((tmp_path / "case.json").read_text()) == TINY


def test_verify_empty_tensor_case_on_950(tmp_path: Path) -> None:
    inputs = {"unpermuted_tokens_grad": {"shape": [0, 64], "dtype": "bfloat16"},
              "sorted_indices": {"shape": [0], "dtype": "int32"},
              "permuted_tokens": {"shape": [0, 64], "dtype": "bfloat16"},
              "probs": {"shape": [0, 3], "dtype": "float32"}}
    case(tmp_path, inputs=inputs, platform="ascend950pr_9589")
    code, out, err = go(tmp_path, "verify", "case.json", "--report", "rep/v", "--no-progress")
    assert (code, err) == (0, "")
    assert "PASS  tiny  permuted_tokens_grad  bfloat16[0, 64]" in out
    report = json.loads((tmp_path / "rep" / "v.json").read_text())
    assert report["summary"]["cases_passed"] == 1


# -- resource guards --------------------------------------------------------------------------


def test_core_count_bound(tmp_path: Path) -> None:
    case(tmp_path, platform={"preset": "ascend910b1", "aiv_core_num": 100000})
    refused(tmp_path, "run", "case.json", "--out", "out",
            says="platform field 'aiv_core_num': expected an integer >= 1 and <= 1024, "
                 "got 100000")


def test_search_of_1e8_tokens_refused_up_front(tmp_path: Path) -> None:
    t0 = time.perf_counter()
    refused(tmp_path, "search", "p1_deepseek_v3", "--tokens", "100000000", "--out", "se",
            "--workers", "0", nothing_at="se", says="case p1_deepseek_v3 (tokens 100000000")
    assert time.perf_counter() - t0 < 30  # refused before any point runs


def test_max_memory(tmp_path: Path) -> None:
    case(tmp_path)
    err = refused(tmp_path, "run", "case.json", "--out", "out", "--max-memory", "1M",
                  says="of memory is available (the --max-memory limit)")
    assert "0.0 GiB of memory" in err  # 1 MiB


# -- silent or wrong answers ------------------------------------------------------------------


def test_inf_and_nan_inputs_compare_equal_to_the_golden(tmp_path: Path) -> None:
    case(tmp_path)
    arrays = tiny_inputs(tmp_path / "in")
    g = arrays["unpermuted_tokens_grad"]
    g[0, 0], g[1, 1], g[2, 2] = np.inf, np.nan, -np.inf
    np.save(tmp_path / "in" / "unpermuted_tokens_grad.npy", g)
    code, out, err = go(tmp_path, "run", "case.json", "--inputs", "in", "--out", "out",
                        "--no-plot", "--trace", "none")
    assert (code, err) == (0, "")
    # 10 x 3 x 64 = 1920 elements; the rows of tokens 0-2 hold inf/NaN products
    assert "golden permuted_tokens_grad: exact (1920 elements)" in out
    saved = np.load(tmp_path / "out/outputs/permuted_tokens_grad.npy").view(ml_dtypes.bfloat16)
    assert np.isnan(saved.astype(np.float32)).any() and np.isinf(saved.astype(np.float32)).any()


def test_run_exits_1_on_a_golden_mismatch(tmp_path: Path) -> None:
    # indices_duplicates: 25% of positions share an index; in timed mode the racing writes land
    # in simulated-time order, the golden keeps the last in program order
    code, out, err = go(tmp_path, "run", "--case", "indices_duplicates", "--out", "out",
                        "--no-plot", "--trace", "none")
    assert code == 1
    assert err == ("aicore-sim: check failed: permuted_tokens_grad: differs from the golden: "
                   "128 of 4096 elements differ, first at [31, 0]: got 0.302734375, want "
                   "0.11279296875\n")
    assert "hazards: 15 race, 1 timed_differs" in out


def test_hazards_warn_or_fail_under_strict(capsys: pytest.CaptureFixture[str]) -> None:
    exact = {"golden": {"permuted_tokens_grad": {"exact": True}}}
    race = [Hazard("race", 3, "two writes not ordered")]
    assert verdict.run_verdict(exact, [], strict=True) == 0
    assert verdict.run_verdict(exact, race, strict=False) == 0
    assert capsys.readouterr().out.startswith("warning: 1 hazards (race)")
    assert verdict.run_verdict(exact, race, strict=True) == 1
    assert "check failed: --strict: 1 hazards (race)" in capsys.readouterr().err


def test_verify_explains_functional_versus_timed(tmp_path: Path) -> None:
    code, out, _ = go(tmp_path, "verify", "indices_duplicates", "--mode", "functional",
                      "--report", "f", "--no-progress")
    assert code == 0 and "note:" not in out
    code, out, _ = go(tmp_path, "verify", "indices_duplicates", "--mode", "timed",
                      "--report", "t", "--no-progress")
    assert code == 1
    assert "note: indices_duplicates: 16 hazards" in out
    assert "functional mode checks the arithmetic, timed mode the synchronisation" in out


def _spec(tmp: Path, name: str, axes: dict[str, Any]) -> None:
    (tmp / name).write_text(json.dumps({"sweep": {"name": name, "mode": "timing-only"},
                                        "axes": axes}))


def _rows(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (folder / "results.jsonl").read_text().splitlines()]


def test_sweep_honours_the_case_platform_and_validity(tmp_path: Path) -> None:
    case(tmp_path, "on950.json", platform="ascend950pr_9589")
    inputs = copy.deepcopy(TINY["inputs"])
    inputs["sorted_indices"]["dtype"] = "int64"
    case(tmp_path, "idx64.json", inputs=inputs)
    _spec(tmp_path, "s.json", {"case": ["on950.json", "idx64.json"], "strategy": ["upstream"]})
    code, _, err = go(tmp_path, "sweep", "s.json", "--out", "sw", "--workers", "0",
                      "--no-progress", "--no-report")
    assert code == 0 and err.count("\n") == 1  # the one "sweep s: 2 points" line
    rows = {r["case"]: r for r in _rows(tmp_path / "sw")}
    assert (rows["on950"]["status"], rows["on950"]["platform"]) == ("ok", "ascend950pr_9589")
    bad = [r for r in rows.values() if r["status"] != "ok"]
    assert [(r["status"], r["rule"]) for r in bad] == [("invalid", "aclnn:161002")]
    assert "sorted_indices dtype int64 is not supported" in bad[0]["error"]


def test_sweep_resume_refuses_another_spec(tmp_path: Path) -> None:
    _spec(tmp_path, "a.json", {"case": ["tiny"], "strategy": ["upstream"]})
    _spec(tmp_path, "b.json", {"case": ["tiny"], "strategy": ["wide_e"]})
    assert go(tmp_path, "sweep", "a.json", "--out", "sw", "--workers", "0", "--no-progress",
              "--no-report")[0] == 0
    before = (tmp_path / "sw" / "results.jsonl").read_text()
    refused(tmp_path, "sweep", "b.json", "--out", "sw", "--workers", "0", "--resume",
            nothing_at=None, says="holds the results of another sweep spec")
    assert (tmp_path / "sw" / "results.jsonl").read_text() == before
    assert go(tmp_path, "sweep", "a.json", "--out", "sw", "--workers", "0", "--resume",
              "--no-progress", "--no-report")[0] == 0  # the same spec resumes


def test_sweep_refuses_a_folder_with_foreign_files(tmp_path: Path) -> None:
    _spec(tmp_path, "a.json", {"case": ["tiny"], "strategy": ["upstream"]})
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "report.md").write_text("my notes\n")
    refused(tmp_path, "sweep", "a.json", "--out", "mine", "--workers", "0", nothing_at=None,
            says="holds files a sweep did not write (report.md)")
    assert os.listdir(tmp_path / "mine") == ["report.md"]
    assert (tmp_path / "mine" / "report.md").read_text() == "my notes\n"


def test_case_name_cannot_leave_the_output_folder(tmp_path: Path) -> None:
    case(tmp_path, name="../../../x")
    refused(tmp_path, "run", "case.json", nothing_at="traces",
            says="a case name names output folders and must not contain '/'")
    assert sorted(os.listdir(tmp_path)) == ["case.json"]


def test_default_names_do_not_collide(tmp_path: Path) -> None:
    for _ in range(2):  # twice within one second
        assert go(tmp_path, "verify", "tiny", "--no-progress")[0] == 0
        assert go(tmp_path, "run", "--case", "tiny", "--no-plot", "--trace", "none")[0] == 0
    assert len(list((tmp_path / "reports").glob("verify-*-tiny.json"))) == 2
    assert len(list((tmp_path / "traces").glob("*-tiny*"))) == 2


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_stopped_run_leaves_nothing(tmp_path: Path, sig: signal.Signals) -> None:
    # a real process: 8192 tokens x topK 8 of hidden 256 (bf16, no probs), timed: 33 MiB of
    # inputs made in a moment, then about four seconds of record, replay and writing; the
    # signal arrives while the run folder is being built
    n, k, h = 8192, 8, 256
    inputs = {"unpermuted_tokens_grad": {"shape": [n, h], "dtype": "bfloat16"},
              "sorted_indices": {"shape": [n * k], "dtype": "int32"},
              "permuted_tokens": {"shape": [n * k, h], "dtype": "bfloat16"}, "probs": None}
    big = case(tmp_path, "big.json", name="big", inputs=inputs,
               attrs={**TINY["attrs"], "topk_num": k})
    work = tmp_path / "work"
    work.mkdir()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.Popen([sys.executable, "-m", "aicore_sim", "run", str(big), "--out", "out",
                          "--no-plot"], cwd=work, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while not any(work.glob(".out.*.tmp")) and time.time() < deadline and p.poll() is None:
        time.sleep(0.02)
    assert any(work.glob(".out.*.tmp")), "the run did not start its folder"
    time.sleep(0.2)
    p.send_signal(sig)
    _, err = p.communicate(timeout=120)
    assert p.returncode == 128 + sig, err
    assert err.count("\n") == 1 and "nothing was written" in err
    assert os.listdir(work) == []


def test_out_of_range_window_gets_a_note(tmp_path: Path) -> None:
    case(tmp_path, attrs={**TINY["attrs"], "range": [1000000, 2000000]})
    code, out, _ = go(tmp_path, "run", "case.json", "--out", "out", "--no-plot", "--trace",
                      "none")
    # [1e6, 2e6) clamps to [30, 30) of T = 30: no index in the window, all-zero output
    assert code == 0
    assert ("note: the EP window [30, 30) of range holds no sorted index: permuted_tokens_grad "
            "stays all zeros") in out


def test_wrapped_unsigned_ub_request_is_named(tmp_path: Path) -> None:
    case(tmp_path, platform={"preset": "ascend910b1", "ub_size": 512})
    code, _, err = go(tmp_path, "run", "case.json", "--out", "out", "--no-plot")
    # usable UB 512 - 256 = 256 bytes: the tiling's unsigned (ub - 64) / ... wraps
    assert code == 1 and err.count("\n") == 1
    assert "InitBuffer 'inQueueUnpermuted': asks 3074457345618257920 bytes" in err
    assert "a size computed in unsigned arithmetic that wrapped below 0" in err
    assert not (tmp_path / "out").exists() and leftovers(tmp_path) == []


def test_verify_refuses_npy_and_bin_for_one_output(tmp_path: Path) -> None:
    (tmp_path / "exp" / "tiny").mkdir(parents=True)
    np.save(tmp_path / "exp/tiny/permuted_tokens_grad.npy", np.zeros((30, 64), np.float32))
    (tmp_path / "exp/tiny/permuted_tokens_grad.bin").write_bytes(b"\0" * 30 * 64 * 2)
    refused(tmp_path, "verify", "tiny", "--expected", "exp", "--report", "rep/v",
            nothing_at="rep", says="(rule expected_ambiguous)")


def test_report_refuses_a_corrupt_results_file(tmp_path: Path) -> None:
    (tmp_path / "res").mkdir()
    (tmp_path / "res" / "results.jsonl").write_text("{not json\n\x00\n")
    refused(tmp_path, "report", "res", "--out", "rep", nothing_at="rep",
            says="no line is a result row")


def test_platform_spellings_agree_with_sweep_axes(tmp_path: Path) -> None:
    case(tmp_path)
    code, out, err = go(tmp_path, "run", "case.json", "--out", "out", "--no-plot", "--trace",
                        "none", "--platform", '{"preset": "ascend910b1", "hbm_gbps": 800}')
    assert (code, err) == (0, "")
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    # 800 GB/s at 1850 MHz = 432.43 bytes per cycle
    assert summary["hbm_peak_gbps"] == pytest.approx(800.0)
    code, out, err = go(tmp_path, "search", "tiny", "--platform",
                        '{"preset": "ascend910b1", "hbm_gbps": 800}', "--budget", "2",
                        "--workers", "0", "--no-progress", "--no-verify", "--out", "se")
    assert (code, err) == (0, "")


def test_notes_for_suspicious_but_legal_inputs(tmp_path: Path) -> None:
    case(tmp_path, attrs={**TINY["attrs"], "topk_num": 2, "restore_shape": [5, 5]})
    arrays = tiny_inputs(tmp_path / "in")
    idx = arrays["sorted_indices"]
    idx[idx == 29] = 1000  # one index outside [0, 30)
    np.save(tmp_path / "in" / "sorted_indices.npy", idx)
    code, out, _ = go(tmp_path, "run", "case.json", "--inputs", "in", "--out", "out",
                      "--no-plot", "--trace", "none")
    assert code == 0
    notes = [x for x in out.splitlines() if x.startswith("note: ")]
    assert notes == [
        "note: topk_num 2 is ignored: probs gives topK = 3 (as upstream's tiling takes it)",
        "note: restore_shape [5, 5] is ignored (upstream's tiling and kernel never read it)",
        "note: 1 of 30 sorted_indices are outside [0, N*K) = [0, 30): those positions are "
        "skipped, as upstream's kernel skips them",
    ]
    assert len(json.loads((tmp_path / "out/summary.json").read_text())["notes"]) == 3


def test_internal_error_is_one_line_and_debug_shows_it(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    def broken() -> list[str]:
        raise RuntimeError("boom")

    monkeypatch.setattr(cases, "list_presets", broken)
    assert cli.main(["platforms"]) == 1
    err = capsys.readouterr().err
    assert err == ("aicore-sim: internal error: RuntimeError: boom - this is a bug in "
                   "aicore-sim, please report it with the command line; run again with --debug "
                   "for the traceback\n")
    with pytest.raises(RuntimeError, match="boom"):
        cli.main(["platforms", "--debug"])


@pytest.mark.parametrize("error, code, line", [
    # a refusal of the input: exit 2, its message after "error: " and the class's tag
    (TilingError("tile 0"), 2, "aicore-sim: error: [561002] tile 0"),
    (UsageError("--x 0"), 2, "aicore-sim: error: --x 0"),
    # a failure of the kernel: exit 1, named as a failed simulation
    (DeadlockError("core 0"), 1, "aicore-sim: simulation failed: DeadlockError: core 0"),
])
def test_the_exit_code_is_the_error_class_s(error, code, line, capsys) -> None:
    def fail(args):
        raise error

    assert console._dispatch(argparse.Namespace(func=fail), debug=False) == code
    assert capsys.readouterr().err.strip() == line


def test_an_operator_s_own_input_error_class_exits_2(capsys) -> None:
    class MyOpError(InputError):  # what a plug-in operator may define
        tag = "[161002] "

    def fail(args):
        raise MyOpError("x has 0 elements (rule empty)")

    assert console._dispatch(argparse.Namespace(func=fail), debug=False) == 2
    assert capsys.readouterr().err.strip() == (
        "aicore-sim: error: [161002] x has 0 elements (rule empty)")

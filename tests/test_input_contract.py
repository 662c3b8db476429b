"""The input contract, systematically: every input surface refuses what it cannot read exactly.

One test (or one parametrised row) per rule: the exit code, the one line naming the field and
the rule, and that nothing was written. Most run ``aicore_sim.cli.main`` in this process on
small inputs; those probing a limit (nesting 100,000 deep) run it in a forked child under
``RLIMIT_AS`` (``refused`` of ``tests/test_contract.py``), and those of a failing machine (a
full or closed standard output, a file-size limit, an ASCII-only encoding) run the command in
a subprocess under ``RLIMIT_AS`` (and ``RLIMIT_FSIZE``).
"""

from __future__ import annotations

import csv
import io
import json
import os
import resource
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from aicore_sim import cli
from tests.opprof_fixture import write_launch
from tests.test_contract import refused, tiny_inputs
from tests.test_fuzz_contract import MEMORY_LIMIT, leftovers

ROOT = Path(__file__).resolve().parent.parent

# -- the command line: every value checked by its type while the line is parsed ---------------


def _parse_refusal(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    code = cli.main(argv)
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("aicore-sim: error: "), err
    return err


@pytest.mark.parametrize("argv, says", [
    (["run", "--inputs", ""], "argument --inputs: must not be empty"),
    (["run", "--out", ""], "argument --out: must not be empty"),
    (["run", "--platform", ""], "argument --platform: must not be empty"),
    (["run", ""], "argument CASE.json: must not be empty"),
    (["run", "--case", " "], "argument --case: must not be empty"),
    (["run", "--hotspots", "0"], "argument --hotspots 0: must be >= 1"),
    (["run", "--window", "inf:"], "argument --window inf:: times must be finite"),
    (["run", "--window", "nan:100"], "argument --window nan:100: times must be finite"),
    (["run", "--window", "1e400:"], "argument --window 1e400:: times must be finite"),
    (["run", "--window", "9:3"], "argument --window 9:3: the end must be after the start"),
    (["run", "--window=-1:3"], "argument --window -1:3: times must be >= 0"),
    (["tiling", ""], "argument CASE: must not be empty"),
    (["search", "tiny", "--tokens", "0"], "argument --tokens 0: must be >= 1"),
    (["search", "tiny", "--budget", "0"], "argument --budget 0: must be >= 1"),
    (["search", "tiny", "--workers", "-3"], "argument --workers: must be >= 0, got -3"),
    (["sweep", "s.toml", "--batch", "0"], "argument --batch 0: must be >= 1"),
    (["sweep", "s.toml", "--batch", "-1"], "argument --batch -1: must be >= 1"),
    (["sweep", "s.toml", "--workers", "-3"], "argument --workers: must be >= 0, got -3"),
    (["sweep", "s.toml", "--out", ""], "argument --out: must not be empty"),
    (["sweep", ""], "argument SPEC: must not be empty"),
    (["report", ""], "argument RESULTS: must not be empty"),
    (["diff", "a", "b", "--lines", "-1"], "argument --lines: must be >= 0, got -1"),
    (["verify", "tiny", "--limit", "0"], "argument --limit 0: must be >= 1"),
    (["verify", "tiny", "--dump-golden", ""], "argument --dump-golden: must not be empty"),
    (["verify", "tiny", "--report", ""], "argument --report: must not be empty"),
    (["correlate", "", "x"], "argument RUN_DIR: must not be empty"),
    (["calibrate", "a:tiny", "--platform", "", "--out", "x.toml"],
     "argument --platform: must not be empty"),
    (["validate", "--max-median", "nan"], "argument --max-median: must be a finite number"),
    (["run", "--cores", "0-100000000000"], "argument --cores: '0-100000000000': cores are "
                                           "below 1024"),  # was expanded: out of memory
    (["run", "--cores", "5-3"], "argument --cores: '5-3': a range goes up"),
    (["run", "--cores", "\u00b2"], "is not a core number or range"),
    (["run", "--max-memory", "0"], "argument --max-memory: must be at least 1 byte"),
    (["run", "--max-memory", "1e999"], "argument --max-memory: expected a size like 512M"),
    (["sweep", "s.toml", "--scheduler", "local:abc"],
     "argument --scheduler local:abc: expected local or local:N with N >= 1 workers"),
    (["sweep", "s.toml", "--scheduler", "local:0"], "argument --scheduler local:0: expected"),
    # more workers than the CPUs this process may use: refused (each would hold its records)
    (["sweep", "s.toml", "--workers", "100000"], "argument --workers 100000: must be <= "),
    (["run", "--jobs", "100000"], "argument --jobs 100000: must be <= "),
    (["search", "tiny", "--workers", "100000"], "argument --workers 100000: must be <= "),
    (["sweep", "s.toml", "--scheduler", "local:100000"],
     "argument --scheduler local:100000: must be <= "),
])
def test_bad_option_values_are_refused_while_parsing(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        argv: list[str], says: str) -> None:
    monkeypatch.chdir(tmp_path)
    err = _parse_refusal(capsys, argv)
    assert says in err
    assert list(tmp_path.iterdir()) == []  # nothing written, not even a default folder


# -- JSON and TOML: a key given twice is refused, never resolved last-wins ---------------------

TINY_TEXT = (ROOT / "examples/cases/tiny.json").read_text()


def _inproc(capsys: pytest.CaptureFixture[str], tmp: Path, argv: list[str],
            stdout: list[str] | None = None) -> tuple[int, str]:
    """``aicore-sim ARGV`` in this process with ``tmp`` as the working folder: (exit, stderr);
    asserts that no file or folder appeared in ``tmp`` when the exit is 2."""
    before = sorted(p.name for p in tmp.iterdir())
    cwd = os.getcwd()
    os.chdir(tmp)
    try:
        code = cli.main(argv)
    finally:
        os.chdir(cwd)
    out, err = capsys.readouterr()
    if stdout is not None:
        stdout.append(out)
    if code == 2:
        assert sorted(p.name for p in tmp.iterdir()) == before
    return code, err


def _one_line_refusal(code: int, err: str, *says: str) -> None:
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith("aicore-sim: error: "), err
    for s in says:
        assert s in err, err


def _twice(text: str, key: str, value: str) -> str:
    """``text`` with ``"key": value,`` inserted before the first ``"key"``."""
    i = text.index(f'"{key}"')
    return f"{text[:i]}\"{key}\": {value}, {text[i:]}"


@pytest.mark.parametrize("key, value", [
    ("platform", '"ascend910b4"'),
    ("probs", '{"shape": [10, 3], "dtype": "float16"}'),
    ("seed", "7"),
])
def test_case_file_key_given_twice(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                   key: str, value: str) -> None:
    (tmp_path / "twice.json").write_text(_twice(TINY_TEXT, key, value))
    for argv in (["run", "twice.json", "--out", "o"], ["verify", "twice.json"]):
        code, err = _inproc(capsys, tmp_path, argv)
        _one_line_refusal(code, err, "twice.json", f'duplicate key "{key}"')
    out: list[str] = []
    code, _ = _inproc(capsys, tmp_path, ["tiling", "twice.json"], out)
    assert code == 2 and f'duplicate key "{key}"' in out[0]


def test_platform_object_key_given_twice(capsys: pytest.CaptureFixture[str],
                                         tmp_path: Path) -> None:
    spec = '{"preset": "ascend910b1", "ub_size": 65536, "ub_size": 196608}'
    code, err = _inproc(capsys, tmp_path, ["run", "--platform", spec, "--out", "o"])
    _one_line_refusal(code, err, "--platform", 'duplicate key "ub_size"')


SWEEP_JSON = ('{"sweep": {"name": "s", "mode": "timing-only"}, '
              '"axes": {"case": ["tiny"], "platform": ["ascend910b1"]}}')


@pytest.mark.parametrize("fname, text, says", [
    ("s.json", _twice(SWEEP_JSON, "axes", '{"case": ["p1_deepseek_v3"]}'), 'duplicate key "axes"'),
    ("s.toml", '[sweep]\nname = "s"\nname = "t"\n[axes]\ncase = ["tiny"]\n', "not valid TOML"),
    ("s.toml", '[sweep]\nname = "s"\n[axes]\ncase = ["tiny"]\n[axes]\ncase = ["tiny"]\n',
     "not valid TOML"),
])
def test_sweep_spec_key_given_twice(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                    fname: str, text: str, says: str) -> None:
    (tmp_path / fname).write_text(text)
    code, err = _inproc(capsys, tmp_path, ["sweep", fname, "--out", "o", "--workers", "0"])
    _one_line_refusal(code, err, fname, says)


MATRIX = (ROOT / "op_models/moe_token_unpermute_with_ep_grad/equivalence_matrix.toml")


@pytest.mark.parametrize("fname", ["m.toml", "m.json"])
def test_matrix_key_given_twice(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                fname: str) -> None:
    if fname.endswith(".toml"):
        text = MATRIX.read_text().replace('seed = 0\n', 'seed = 0\nseed = 1\n', 1)
        says = "not valid TOML"
    else:
        import tomllib

        text = _twice(json.dumps(tomllib.loads(MATRIX.read_text())), "seed", "1")
        says = 'duplicate key "seed"'
    (tmp_path / fname).write_text(text)
    code, err = _inproc(capsys, tmp_path, ["verify", "--matrix", fname, "--report", "r"])
    _one_line_refusal(code, err, "m.", says)


ATK_RECORD = {
    "id": 0, "name": "r", "aclnn_name": "MoeTokenUnpermuteWithEpGrad",
    "standard": {"acc": "md5"},
    "inputs": [
        {"name": "unpermutedTokensGrad", "type": "tensor", "dtype": "bf16", "shape": [8, 64],
         "range_values": [-1, 1]},
        {"name": "sorted_indices", "type": "tensor", "dtype": "int32", "shape": [8],
         "range_values": [0, 8]},
        {"name": "permutedTokens", "type": "tensor", "dtype": "bf16", "shape": [8, 64],
         "range_values": [-1, 1]},
        {"name": "padded_mode", "type": "attr", "dtype": "bool", "range_values": False},
    ],
}


def test_atk_file_key_given_twice_and_negative_shape(capsys: pytest.CaptureFixture[str],
                                                     tmp_path: Path) -> None:
    (tmp_path / "atk_twice.json").write_text(_twice(json.dumps([ATK_RECORD]), "aclnn_name",
                                                    '"Other"'))
    code, err = _inproc(capsys, tmp_path, ["verify", "atk_twice.json", "--report", "r"])
    _one_line_refusal(code, err, "atk_twice.json", 'duplicate key "aclnn_name"')
    rec = json.loads(json.dumps(ATK_RECORD))
    rec["inputs"][0]["shape"] = [-8, 64]  # was: "internal error: ValueError: high <= 0"
    (tmp_path / "atk_neg.json").write_text(json.dumps([rec]))
    code, err = _inproc(capsys, tmp_path, ["verify", "atk_neg.json", "--report", "r"])
    _one_line_refusal(code, err, "atk_neg.json: record 0: inputs[0] (unpermutedTokensGrad)"
                      ".shape[0]: expected an integer >= 0, got -8")


def test_platform_toml_key_given_twice(capsys: pytest.CaptureFixture[str],
                                       tmp_path: Path) -> None:
    (tmp_path / "ov.toml").write_text("hbm_efficiency_ratio = 0.9\nhbm_efficiency_ratio = 0.5\n")
    spec = '{"preset": "ascend910b1", "overlay": "ov.toml"}'
    code, err = _inproc(capsys, tmp_path, ["run", "--platform", spec, "--out", "o"])
    _one_line_refusal(code, err, "ov.toml", "not valid TOML")
    preset = (ROOT / "aicore_sim/data/platforms/tiny.toml").read_text()
    (tmp_path / "my.toml").write_text(preset + "\n" + preset)
    code, err = _inproc(capsys, tmp_path, ["run", "--platform", "my.toml", "--out", "o"])
    _one_line_refusal(code, err, "my.toml")


def test_deeply_nested_case_file(tmp_path: Path) -> None:
    """200,000 nested ``[``: refused naming the rule (was: internal error, RecursionError);
    run in a child under RLIMIT_AS."""
    (tmp_path / "deep.json").write_text("[" * 200_000)
    refused(tmp_path, "run", "deep.json", "--out", "out",
            says="deep.json: nested deeper than 64 levels")
    (tmp_path / "deep.json").write_text('{"op": ' + "[" * 70 + "]" * 70 + "}")
    refused(tmp_path, "run", "deep.json", "--out", "out",
            says="deep.json: nested deeper than 64 levels")


def test_deeply_nested_toml(tmp_path: Path) -> None:
    """tomllib recursed into 100,000 nested arrays until RecursionError (an internal error);
    each TOML surface refuses it naming the file, in a child under RLIMIT_AS."""
    deep = "[" * 100_000 + "]" * 100_000
    (tmp_path / "s.toml").write_text(f'[sweep]\nname = {deep}\n')
    (tmp_path / "m.toml").write_text(f"seed = {deep}\n")
    (tmp_path / "ov.toml").write_text(f"hbm_efficiency_ratio = {deep}\n")
    rule = "nested deeper than 64 levels"
    refused(tmp_path, "sweep", "s.toml", "--out", "out", says=f"s.toml: {rule}")
    refused(tmp_path, "verify", "--matrix", "m.toml", "--report", "out",
            says=f"m.toml: {rule}", nothing_at=None)
    refused(tmp_path, "run", "--platform", '{"preset": "ascend910b1", "overlay": "ov.toml"}',
            "--out", "out", says=f"platform overlay ov.toml: {rule}")
    refused(tmp_path, "run", "--platform", "ov.toml", "--out", "out",
            says=f"platform file ov.toml: {rule}")


def test_documents_over_the_size_cap(tmp_path: Path) -> None:
    """A JSON / TOML input over 16 MiB is refused from its size, naming the file and the rule,
    on each surface (sparse 17 MiB files: nothing is written to disk); children under
    RLIMIT_AS."""
    for name in ("big.json", "s.json", "m.toml", "ov.toml"):
        with open(tmp_path / name, "wb") as f:
            f.truncate(17 * 1024 * 1024)  # 17 MiB > the 16 MiB cap
    rule = "larger than 16 MiB; no aicore-sim document is that large"
    refused(tmp_path, "run", "big.json", "--out", "out", says=f"big.json: {rule}")
    refused(tmp_path, "sweep", "s.json", "--out", "out", says=f"s.json: {rule}")
    refused(tmp_path, "verify", "--matrix", "m.toml", "--report", "out",
            says=f"m.toml: {rule}", nothing_at=None)
    refused(tmp_path, "run", "--platform", "ov.toml", "--out", "out",
            says=f"platform file ov.toml: {rule}")


def test_size_cap_reads_no_further_than_the_cap(tmp_path: Path) -> None:
    """read_document stops one byte past the cap, so a device that never ends is refused too."""
    from aicore_sim.util import textinput

    with pytest.raises(textinput.TextInputError, match="larger than 16 MiB"):
        textinput.read_document("/dev/zero")
    (tmp_path / "ok.json").write_text('{"a": 1}')
    assert textinput.loads_json(textinput.read_document(tmp_path / "ok.json")) == {"a": 1}


def test_every_option_help_states_its_domain() -> None:
    """Each value-taking option and positional of every command is declared with a domain
    type (its help then ends with that domain, from cli.options.DOMAINS) or with choices
    (argparse lists them); and the rendered --help carries the domain."""
    import argparse

    from aicore_sim.cli.options import DOMAINS

    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    checked = 0
    for name, sp in sub.choices.items():
        rendered = "".join(sp.format_help().split())  # blind to where the help wraps
        for a in sp._actions:
            if a.nargs == 0 or a.help == argparse.SUPPRESS:  # flags take no value
                continue
            where = f"{name} {'/'.join(a.option_strings) or a.dest}"
            assert (where, a.type in DOMAINS or bool(a.choices)) == (where, True)
            if a.type in DOMAINS:
                assert (where, "".join(DOMAINS[a.type].split()) in rendered) == (where, True)
                checked += 1
    assert checked == 90  # typed options and positionals over all commands today (70, and
    # coverage DIR / --only / --platform / --report, validate --hold-out / --write-confidence,
    # plot RUN_DIR / --cores / --window / --out, sweep --max-points, verify --max-cases,
    # run / tiling / verify / search --op-src, exec PROGRAM / --op-src / --out / --platform)


# -- board CSV folders (correlate) -------------------------------------------------------------

PIPE_HEADER = ["block_id", "sub_block_id", "aiv_time(us)", "aiv_scalar_time(us)",
               "aiv_mte2_time(us)", "aiv_vec_time(us)", "aiv_mte3_time(us)"]


@pytest.mark.parametrize("header, row, says", [
    (PIPE_HEADER, ["\u00b2", "vector0", "1", "1", "1", "1", "1"],
     "line 2, column 'block_id': '\u00b2' is not a block index"),
    ([*PIPE_HEADER, "aiv_vec_time(us)"], ["0", "vector0", "1", "1", "1", "1", "1", "9"],
     "column 'aiv_vec_time(us)' appears twice"),
])
def test_correlate_csv_refusals(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                header: list[str], row: list[str], says: str) -> None:
    run = tmp_path / "run"
    run.mkdir()
    with (run / "PipeUtilization.csv").open("w", newline="") as fh:
        csv.writer(fh).writerows([header, row])
    (run / "OpBasicInfo.csv").write_text("Op Name,Op Type,Task Duration(us),Block Dim,"
                                         "Current Freq\ntiny,vector,8.4,1,1850\n")
    code, err = _inproc(capsys, tmp_path, ["correlate", "run", "prof"])
    _one_line_refusal(code, err, "PipeUtilization.csv", says)
    assert sorted(p.name for p in run.iterdir()) == ["OpBasicInfo.csv", "PipeUtilization.csv"]


# -- --inputs and --expected arrays: read exactly, or refused naming the rule ----------------


def _f16_case(tmp: Path) -> None:
    """tiny with float16 tokens, and its inputs in tmp/in (tokens as float16)."""
    doc = json.loads(TINY_TEXT)
    for k in ("unpermuted_tokens_grad", "permuted_tokens"):
        doc["inputs"][k]["dtype"] = "float16"
    (tmp / "f16.json").write_text(json.dumps(doc))
    rng = np.random.default_rng(0)
    (tmp / "in").mkdir()
    for k, v in {"unpermuted_tokens_grad": rng.uniform(-2, 2, (10, 64)).astype(np.float16),
                 "sorted_indices": rng.permutation(30).astype(np.int32),
                 "permuted_tokens": rng.uniform(-2, 2, (30, 64)).astype(np.float16),
                 "probs": rng.uniform(0.01, 0.99, (10, 3)).astype(np.float32)}.items():
        np.save(tmp / "in" / f"{k}.npy", v)


def _truncated(f: Path) -> None:
    f.write_bytes(f.read_bytes()[:-7])


def _padded(f: Path) -> None:
    f.write_bytes(f.read_bytes() + b"\0" * 64)


@pytest.mark.parametrize("name, damage, says", [
    ("unpermuted_tokens_grad",  # ml_dtypes bfloat16 saved by numpy: |V2, not float16
     lambda f: np.save(f, np.zeros((10, 64), ml_dtypes.bfloat16)),
     "dtype |V2 (raw 2-byte items) is read only as bfloat16"),
    ("probs", lambda f: np.save(f, np.zeros((10, 3), "V4")),
     "dtype |V4 (raw 4-byte items) is read only as bfloat16"),
    ("probs", lambda f: np.save(f, np.zeros((10, 3), ">f4")),
     "dtype >f4: big-endian items"),
    ("probs", lambda f: np.save(f, np.zeros((10, 3), np.int32)), "dtype int32 is not float32"),
    ("probs", lambda f: np.save(f, np.zeros((3, 10), np.float32)), "shape [3, 10] is not [10, 3]"),
    ("probs", _truncated, "truncated or padded"),
    ("probs", _padded, "truncated or padded"),
    ("probs", lambda f: f.write_bytes(b"not numpy"), "not an .npy file"),
])
def test_inputs_are_read_exactly(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                 name: str, damage: Any, says: str) -> None:
    _f16_case(tmp_path)
    damage(tmp_path / "in" / f"{name}.npy")
    code, err = _inproc(capsys, tmp_path, ["run", "f16.json", "--inputs", "in", "--out", "o"])
    _one_line_refusal(code, err, f"--inputs: {name}.npy: ", says)


def test_bfloat16_void_items_are_read_as_bfloat16(capsys: pytest.CaptureFixture[str],
                                                  tmp_path: Path) -> None:
    tiny_inputs(tmp_path / "in")  # bf16 tokens saved from ml_dtypes arrays: |V2 in the file
    assert np.load(tmp_path / "in" / "permuted_tokens.npy").dtype == np.dtype("V2")
    (tmp_path / "tiny.json").write_text(TINY_TEXT)
    code, err = _inproc(capsys, tmp_path, ["run", "tiny.json", "--inputs", "in", "--out", "o",
                                           "--mode", "functional", "--jobs", "1", "--no-plot"])
    assert code == 0, err
    assert (tmp_path / "o" / "summary.json").is_file()


def test_verify_expected_npy_read_exactly(capsys: pytest.CaptureFixture[str],
                                          tmp_path: Path) -> None:
    """--expected files go through the same reader: a float16 file is not a bfloat16 output
    and a truncated one is refused (rules npy_dtype, npy_size)."""
    exp = tmp_path / "exp"
    exp.mkdir()
    np.save(exp / "permuted_tokens_grad.npy", np.zeros((30, 64), np.float16))
    np.save(exp / "probs_grad.npy", np.zeros((30,), np.float32))
    code, err = _inproc(capsys, tmp_path, ["verify", "tiny", "--expected", "exp",
                                           "--report", "r"])
    _one_line_refusal(code, err, "permuted_tokens_grad.npy: dtype float16 is not bfloat16",
                      "rule npy_dtype")
    np.save(exp / "permuted_tokens_grad.npy", np.zeros((30, 64), ml_dtypes.bfloat16))
    _truncated(exp / "probs_grad.npy")
    code, err = _inproc(capsys, tmp_path, ["verify", "tiny", "--expected", "exp",
                                           "--report", "r"])
    _one_line_refusal(code, err, "probs_grad.npy", "truncated or padded", "rule npy_size")


# -- calibrate: the overlay it writes loads, and a fit that explains nothing is not kept ------


def _timing_run(capsys: pytest.CaptureFixture[str], out: Path, platform: dict[str, Any]
                ) -> Path:
    assert cli.main(["run", "--case", "few_tokens", "--platform", json.dumps(platform),
                     "--mode", "timing-only", "--no-plot", "--trace", "none", "--jobs", "1",
                     "--out", str(out)]) == 0
    capsys.readouterr()
    return out


def test_calibrate_writes_every_digit_of_a_tiny_hbm_efficiency(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """hbm_efficiency 1e-9 (inside platform.py LIMITS) was written as 0.000000 and the
    overlay's own re-load then failed: "internal error ... must be > 0, got 0.0"."""
    # cold L2, so that the few tokens' reads reach HBM and its efficiency is fitted
    plat = {"preset": "ascend910b1", "aiv_core_num": 4, "hbm_efficiency": 1e-9,
            "costs": {"l2_warm_start": False}}
    run = _timing_run(capsys, tmp_path / "run", plat)
    prof = write_launch(tmp_path / "OPPROF_x", run, {"MTE2": 1.1})
    out = tmp_path / "slow.toml"
    code = cli.main(["calibrate", f"{prof}:few_tokens", "--platform", json.dumps(plat),
                     "--out", str(out), "--json"])
    res = capsys.readouterr()
    assert code == 0, res.err
    assert "hbm_efficiency" in json.loads(res.out)["fitted"]
    import tomllib

    eff = tomllib.loads(out.read_text())["hbm_efficiency_ratio"]
    assert 0 < eff < 1e-8 and eff == json.loads(res.out)["knobs"]["hbm_efficiency"]


def test_calibrate_refuses_to_keep_a_fit_that_explains_nothing(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    plat = {"preset": "ascend910b1", "aiv_core_num": 4}
    run = _timing_run(capsys, tmp_path / "run", plat)
    prof = write_launch(tmp_path / "OPPROF_x", run, {})
    pipe = next(prof.rglob("PipeUtilization*.csv"))
    rows = list(csv.reader(pipe.open(newline="")))
    col = rows[0].index("aiv_mte2_time(us)")
    for k, r in enumerate(rows[1:]):  # odd blocks 40x slower, even ones 5x faster: no scale fits
        if r[col] not in ("", "NA"):
            r[col] = repr(float(r[col]) * (40 if k % 2 else 0.2))
    with pipe.open("w", newline="") as fh:
        csv.writer(fh).writerows(rows)
    out = tmp_path / "o.toml"
    argv = ["calibrate", f"{prof}:few_tokens", "--platform", json.dumps(plat), "--out", str(out)]
    code = cli.main(argv)
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1, err
    assert "check failed: the fit leaves MTE2 off by a factor" in err
    assert "above ln 1.5 = 0.405" in err
    assert "not written (--keep-anyway writes it)" in err
    assert not out.exists() and leftovers(tmp_path) == []
    code = cli.main([*argv, "--keep-anyway"])
    err = capsys.readouterr().err
    assert code == 0 and "warning: the fit leaves MTE2 off by" in err and out.is_file()


# -- sweep and verify: exit 1 when the work asked for gave no trustworthy result -------------


def _sweep_of(tmp: Path, case: str) -> None:
    (tmp / "s.toml").write_text(f'[sweep]\nname = "s"\nmode = "timing-only"\n[axes]\n'
                                f'case = ["{case}"]\nplatform = ["ascend910b1"]\n'
                                f'hbm_gbps = [800, 1600]\n')


def test_sweep_of_only_invalid_points_exits_1(capsys: pytest.CaptureFixture[str],
                                              tmp_path: Path) -> None:
    doc = json.loads(TINY_TEXT)
    doc["inputs"]["probs"]["shape"] = [10, 4]  # the op API refuses it: every point invalid
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    _sweep_of(tmp_path, "bad.json")
    out: list[str] = []
    code, err = _inproc(capsys, tmp_path, ["sweep", "s.toml", "--out", "o", "--workers", "0",
                                           "--no-progress", "--no-report"], out)
    assert code == 1 and err.count("\n") == 1, err  # stderr: the sweep's header line only
    assert out[0].splitlines()[-1] == ("check failed: no point gave figures (2 invalid); see "
                                       "the rule and error columns of results.jsonl")


def test_sweep_with_failed_points_exits_1(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from aicore_sim.views import summary

    def broken(*_: Any) -> Any:
        raise RuntimeError("the replay fell over")

    monkeypatch.setattr(summary, "summarize_trace", broken)  # inside each point's try
    _sweep_of(tmp_path, "tiny")
    out: list[str] = []
    code, err = _inproc(capsys, tmp_path, ["sweep", "s.toml", "--out", "o", "--workers", "0",
                                           "--no-progress", "--no-report"], out)
    assert code == 1 and err.count("\n") == 1, err  # stderr: the sweep's header line only
    last = out[0].splitlines()[-1]
    assert last.startswith("check failed: 2 of 2 points failed (status error), first ")
    assert last.endswith("RuntimeError: the replay fell over")


def test_verify_dump_golden_never_replaces_a_file(capsys: pytest.CaptureFixture[str],
                                                  tmp_path: Path) -> None:
    mine = tmp_path / "gold" / "tiny" / "probs_grad.npy"
    mine.parent.mkdir(parents=True)
    mine.write_text("a file of the user's")
    code, err = _inproc(capsys, tmp_path, ["verify", "tiny", "--dump-golden", "gold",
                                           "--report", "r", "--no-progress"])
    _one_line_refusal(code, err, "--dump-golden gold: gold/tiny/probs_grad.npy exists; verify "
                      "never replaces a file", "rule dump_exists")
    assert mine.read_text() == "a file of the user's"
    assert sorted(p.name for p in mine.parent.iterdir()) == ["probs_grad.npy"]


# -- diff: a run folder's streams.npz is read whole and checked before the diff -------------


def _npy_bytes() -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.arange(3))
    return buf.getvalue()


@pytest.mark.parametrize("damage, says", [
    (lambda b: b[: len(b) // 2], "(BadZipFile: File is not a zip file)"),
    (lambda b: b"\x93NUMPY" + b[6:], "not a streams file of 'aicore-sim run'"),
    (lambda b: _npy_bytes(), "(one .npy array, not an .npz archive)"),  # a whole .npy file
])
def test_diff_of_a_damaged_streams_file(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                        damage: Any, says: str) -> None:
    a = _timing_run(capsys, tmp_path / "a", {"preset": "ascend910b1", "aiv_core_num": 4})
    b = tmp_path / "b"
    b.mkdir()
    for f in ("summary.json", "streams.npz"):
        (b / f).write_bytes((a / f).read_bytes())
    f = b / "streams.npz"
    f.write_bytes(damage(f.read_bytes()))
    code, err = _inproc(capsys, tmp_path, ["diff", "a", "b", "--report", "d.md"])
    _one_line_refusal(code, err, "b/streams.npz: not a streams file of 'aicore-sim run'", says)
    assert not (tmp_path / "d.md").exists()


# -- the machine fails, not the input nor the simulator: exit 1, one line, nothing published --


def _child(argv: list[str], cwd: Path, stdout: Any = subprocess.PIPE, fsize: int | None = None,
           env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    def limits() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
        if fsize is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))

    return subprocess.run([sys.executable, "-m", "aicore_sim", *argv], cwd=cwd, stdout=stdout,
                          stderr=subprocess.PIPE, text=True, preexec_fn=limits, timeout=120,
                          env={**os.environ, **(env or {})})


def _environment_failure(p: subprocess.CompletedProcess[str], says: str) -> None:
    assert p.returncode == 1, p.stderr
    assert p.stderr.count("\n") == 1 and p.stderr.startswith("aicore-sim: error: environment: ")
    assert says in p.stderr and "bug" not in p.stderr and "internal" not in p.stderr


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_full_standard_output(tmp_path: Path) -> None:
    with open("/dev/full", "w") as full:
        p = _child(["platforms"], tmp_path, stdout=full)
    _environment_failure(p, "cannot write standard output: No space left on device (ENOSPC)")


def test_closed_standard_output(tmp_path: Path) -> None:
    p = _child(["platforms"], tmp_path, stdout=subprocess.DEVNULL)
    assert p.returncode == 0
    p = subprocess.run(f"exec {shlex.quote(sys.executable)} -m aicore_sim platforms >&-",
                       shell=True, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    _environment_failure(p, "standard output is closed")


@pytest.mark.parametrize("case, fsize, says", [
    ("tiny", 64 << 10, "File too large (EFBIG)"),
    ("hidden_16384_bf16", 200 << 10, "a write was cut short (131072 requested and"),
])
def test_file_size_limit_while_writing_outputs(tmp_path: Path, case: str, fsize: int,
                                               says: str) -> None:
    p = _child(["run", "--case", case, "--out", "o", "--jobs", "1"], tmp_path, fsize=fsize)
    _environment_failure(p, says)
    assert list(tmp_path.iterdir()) == []  # nor the folder nor its hidden temporary


def test_output_encoding_cannot_show_the_case_name(tmp_path: Path) -> None:
    doc = json.loads(TINY_TEXT)
    doc["name"] = "t\u00efny"
    (tmp_path / "c.json").write_text(json.dumps(doc))
    p = _child(["run", "c.json", "--out", "o", "--mode", "functional", "--jobs", "1",
                "--no-plot"], tmp_path, env={"PYTHONIOENCODING": "ascii"})
    _environment_failure(p, "the output encoding ascii cannot show '\\xef'")
    assert sorted(x.name for x in tmp_path.iterdir()) == ["c.json"]


# -- options that do nothing in a combination: one note line, the run goes on ---------------


def test_an_inputs_file_the_case_does_not_read_gets_a_note(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    tiny_inputs(tmp_path / "in")  # probs.npy among them
    doc = json.loads(TINY_TEXT)
    doc["inputs"]["probs"] = None
    (tmp_path / "noprobs.json").write_text(json.dumps(doc))
    code, err = _inproc(capsys, tmp_path, ["run", "noprobs.json", "--inputs", "in", "--out",
                                           "o", "--jobs", "1", "--trace", "none", "--no-plot"])
    assert code == 0, err
    assert err == ("aicore-sim: note: --inputs: probs.npy is not read (input probs is absent in "
                   "the case)\n")


@pytest.mark.parametrize("argv, notes", [
    (["--seed", "3", "--inputs", "in"],
     ["--seed does nothing with --inputs (every input is read from the folder)"]),
    (["--window", "0:100", "--no-plot"],
     ["--window does nothing with --no-plot (it zooms timeline.png)"]),
    (["--cores", "0", "--no-plot"], ["--cores does nothing with --no-plot (it picks the cores "
                                     "of timeline.png and ub.png)"]),
    (["--mode", "functional", "--slack", "--window", "0:5"],
     ["--slack, --window do nothing in functional mode (no timing)"]),
    (["--cores", "0", "--no-plot", "--ub-plot"], []),
    (["--seed", "3", "--inputs", "in", "--window", "0:100", "--no-plot"],  # one line for both
     ["--seed does nothing with --inputs (every input is read from the folder)",
      "--window does nothing with --no-plot (it zooms timeline.png)"]),
])
def test_options_that_do_nothing_get_a_note(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                            argv: list[str], notes: list[str]) -> None:
    tiny_inputs(tmp_path / "in")
    code, err = _inproc(capsys, tmp_path, ["run", "--case", "tiny", "--out", "o", "--jobs", "1",
                                           "--trace", "none", *argv])
    assert code == 0, err
    assert err.splitlines() == ([f"aicore-sim: note: {'; '.join(notes)}"] if notes else [])


@pytest.mark.parametrize("line, says", [
    ("[1, 2]", "a line is not a JSON object (a sweep's row)"),
    ('{"key": "a", "key": "b"}', 'duplicate key "key"'),
])
def test_diff_of_sweep_points_refuses_a_foreign_row(capsys: pytest.CaptureFixture[str],
                                                    tmp_path: Path, line: str, says: str) -> None:
    (tmp_path / "sw").mkdir()
    (tmp_path / "sw" / "results.jsonl").write_text(line + "\n")
    code, err = _inproc(capsys, tmp_path, ["diff", "sw", "--points", "a", "b"])
    _one_line_refusal(code, err, "sw/results.jsonl: ", says)


def test_verify_of_only_failing_records_exits_1(capsys: pytest.CaptureFixture[str],
                                                tmp_path: Path) -> None:
    doc = json.loads(TINY_TEXT)
    doc["inputs"]["probs"]["shape"] = [10, 4]  # the op API refuses it: the case cannot run
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    code, err = _inproc(capsys, tmp_path, ["verify", "bad.json", "--report", "r",
                                           "--no-progress"])
    assert code == 1, err


@pytest.mark.parametrize("axis, says", [
    ("clock_mhz = [1850, 1e-300]", "axes.clock_mhz = 1e-300: platform field 'clock_mhz': "
                                   "expected a finite number >= 0.001"),
    ("hbm_efficiency = [1e300]", "axes.hbm_efficiency = 1e+300: platform field "
                                 "'hbm_efficiency': expected a finite number >= 1e-09 and <= "
                                 "1e+15, got 1e+300"),
    ("hbm_gbps = [1e-12]", "axes.hbm_gbps = 1e-12: platform field 'hbm_efficiency': expected "
                           "a finite number >= 1e-09"),
])
def test_sweep_platform_axes_inside_the_limits(capsys: pytest.CaptureFixture[str],
                                               tmp_path: Path, axis: str, says: str) -> None:
    """A what-if value outside platform.py's LIMITS was a failed point per combination; it is
    a bad spec, refused before a point runs."""
    (tmp_path / "s.toml").write_text(f'[sweep]\nname = "s"\n[axes]\ncase = ["tiny"]\n{axis}\n')
    code, err = _inproc(capsys, tmp_path, ["sweep", "s.toml", "--out", "o", "--workers", "0"])
    _one_line_refusal(code, err, f"s.toml: {says}")


def test_a_failed_run_keeps_its_note_off_stderr(capsys: pytest.CaptureFixture[str],
                                                tmp_path: Path) -> None:
    """indices_duplicates differs from the golden in timed mode (racing writes): stderr holds
    the one verdict line, the note of --window under --no-plot goes to stdout."""
    out: list[str] = []
    code, err = _inproc(capsys, tmp_path, ["run", "--case", "indices_duplicates", "--out", "o",
                                           "--no-plot", "--trace", "none", "--jobs", "1",
                                           "--window", "0:100"], out)
    assert code == 1 and err.count("\n") == 1, err
    assert err.startswith("aicore-sim: check failed: permuted_tokens_grad: differs")
    assert out[0].splitlines()[-1] == ("note: --window does nothing with --no-plot (it zooms "
                                       "timeline.png)")


def test_a_core_the_platform_lacks_is_refused_before_the_work(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
        ) -> None:
    """--cores 0,99 on a 48-core platform was refused after the simulation (the plot)."""
    from aicore_sim.ops.registry import get_op

    def no_work(*_: Any, **__: Any) -> Any:
        raise AssertionError("the simulation ran")

    monkeypatch.setattr(type(get_op("moe_token_unpermute_with_ep_grad")), "execute", no_work)
    code, err = _inproc(capsys, tmp_path, ["run", "--cores", "0,99", "--out", "o"])
    _one_line_refusal(code, err, "--cores 0,99: cores are 0..47, not 99")


def test_window_after_the_run_is_a_note_and_mixed_units_are_ordered_first(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """An open-ended --window starting after the makespan was refused when the plot was drawn,
    after the work: now the whole run is drawn and a note says why. Ends in different units
    are ordered at the platform's clock before the work (2us:100 is 3700:100 cycles)."""
    out: list[str] = []
    code, err = _inproc(capsys, tmp_path, ["run", "--window", "1e300:", "--out", "o",
                                           "--jobs", "1", "--trace", "none"], out)
    assert code == 0, err
    assert "note: --window 1e300:: starts after the run ends (makespan " in out[0]
    assert (tmp_path / "o" / "timeline.png").is_file()
    assert "starts after the run ends" in json.loads(
        (tmp_path / "o" / "summary.json").read_text())["notes"][-1]
    code, err = _inproc(capsys, tmp_path, ["run", "--window", "2us:100", "--out", "o2"])
    _one_line_refusal(code, err, "--window 2us:100: the end must be after the start")

"""aicore_sim.verify: standards, comparison metrics, matrix validation, ATK reading, CLI exits."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from aicore_sim.cli import main
from aicore_sim.sim.dtypes import bfloat16, float16, float32, int32
from aicore_sim.verify import VerifyError
from aicore_sim.verify.atk import load_atk, select_records
from aicore_sim.verify.compare import compare
from aicore_sim.verify.matrix import expand, label, parse_matrix
from aicore_sim.verify.standards import CANN_THRESHOLDS, parse_standard

# --------------------------------------------------------------------------------------------
# standards
# --------------------------------------------------------------------------------------------


def test_standard_names_and_thresholds():
    assert parse_standard("md5").kind == "bit-exact"
    assert parse_standard("bit-exact").rule(float32).kind == "bit-exact"
    th = parse_standard("threshold")
    assert th.rule(float16).threshold == 2.0**-10
    assert th.rule(bfloat16).threshold == 2.0**-7
    assert th.rule(float32).threshold == 2.0**-13
    assert th.rule(float32).max_rel == 10 * 2.0**-13
    assert th.rule(int32).kind == "bit-exact"  # integers: no float threshold
    assert set(CANN_THRESHOLDS) == {float16, bfloat16, float32}
    c = parse_standard("custom:rtol=1e-3,atol=1e-5,ratio=0.001")
    r = c.rule(float32)
    assert (r.kind, r.rtol, r.atol, r.ratio) == ("custom", 1e-3, 1e-5, 0.001)
    assert c.name == "custom:rtol=0.001,atol=1e-05,ratio=0.001"


@pytest.mark.parametrize("spec,rule", [
    ("fuzzy", "standard_name"),
    ("custom:rtol=x", "custom_syntax"),
    ("custom:tol=1", "custom_syntax"),
    ("custom:ratio=2", "custom_range"),
    ("custom:atol=-1", "custom_range"),
])
def test_bad_standards_name_the_rule(spec, rule):
    with pytest.raises(VerifyError, match=f"rule {rule}"):
        parse_standard(spec)


# --------------------------------------------------------------------------------------------
# compare
# --------------------------------------------------------------------------------------------


def test_bit_exact_one_ulp_named():
    want = np.arange(1, 13, dtype=np.float32).reshape(3, 4).astype(bfloat16)
    got = want.copy()
    got.view(np.uint16)[2, 1] += 1  # one ulp: 10 -> 10.0625 in bf16
    r = compare("x", got, want, parse_standard("bit-exact").rule(bfloat16))
    assert not r.passed and r.bad == 1 and r.elements == 12
    assert r.first_bad == {"index": [2, 1], "got": 10.0625, "want": 10.0}
    assert r.max_abs == 0.0625
    assert r.max_rel == pytest.approx(0.0625 / (10 + 1e-7))
    assert r.mean_rel == r.max_rel / 12  # the 11 equal elements add 0
    assert r.bit_mismatches == 1


def test_equal_bits_pass_every_standard():
    a = np.linspace(-3, 3, 50, dtype=np.float32)
    for s in ("bit-exact", "threshold", "custom"):
        r = compare("x", a, a.copy(), parse_standard(s).rule(float32))
        assert r.passed and r.bad == 0 and r.max_abs == 0 and r.first_bad is None


def test_threshold_mean_and_max():
    """fp16: mean rel < 2^-10 and max rel < 10 * 2^-10."""
    rule = parse_standard("threshold").rule(float16)
    want = np.ones(1000, np.float16)
    got = want.copy()
    got[0] = np.float16(1.0078125)  # rel 2^-7 >= 2^-10: bad, but max < 10 * 2^-10 and mean tiny
    r = compare("x", got, want, rule)
    assert r.passed and r.bad == 1 and r.bad_share == 0.001
    got[1] = np.float16(1.0234375)  # rel 0.0234 > 10 * 2^-10 = 0.00977: max fails
    assert not compare("x", got, want, rule).passed
    got = np.full(1000, 1.001953125, np.float16)  # every element rel 2^-9: max fine, mean not
    r = compare("x", got, want, rule)
    assert r.max_rel < rule.max_rel and not r.passed and r.bad == 1000


def test_custom_ratio_and_nan():
    rule = parse_standard("custom:rtol=0.01,atol=0,ratio=0.1").rule(float32)
    want = np.ones(10, np.float32)
    got = want.copy()
    got[4] = 1.5
    assert compare("x", got, want, rule).passed  # 1 of 10 bad <= ratio 0.1
    got[5] = np.nan
    r = compare("x", got, want, rule)
    assert not r.passed and r.bad == 2 and r.max_abs == np.inf
    both = np.array([np.nan, 1.0], np.float32)
    assert compare("x", both, both.copy(), rule).passed


def test_shape_and_dtype_mismatch_reported():
    rule = parse_standard("bit-exact").rule(float32)
    r = compare("x", np.zeros(3, np.float32), np.zeros(4, np.float32), rule)
    assert not r.passed and "shape" in r.error
    r = compare("x", np.zeros(3, np.float16), np.zeros(3, np.float32), rule)
    assert not r.passed and "dtype" in r.error


# --------------------------------------------------------------------------------------------
# matrix
# --------------------------------------------------------------------------------------------

MINI = {"op": "moe_token_unpermute_with_ep_grad",
        "axes": {"dtype": ["bf16", "DT_FLOAT"], "probs": ["none", "same", "float16"],
                 "shape": [{"tokens": 4, "topk": 2, "hidden": 40}],
                 "range": ["none", "middle_half", [-3, -1]], "indices": ["permutation"]},
        "platforms": ["tiny", {"preset": "ascend910b1", "aiv_cores": 2}]}


def _axes(**change):
    return {**MINI, "axes": {**MINI["axes"], **change}}


def test_matrix_expansion():
    m = parse_matrix(MINI, "mini.toml")
    cases = expand(m)
    assert len(cases) == len(m) == 2 * 3 * 1 * 3 * 1 * 2
    names = [c.name for c in cases]
    assert len(set(names)) == len(names)
    assert all(re.fullmatch(r"[A-Za-z0-9._=-]+", n) for n in names)
    c = cases[0]
    assert c.axes == {"dtype": "bfloat16", "probs": "none",
                      "shape": {"tokens": 4, "topk": 2, "hidden": 40}, "range": "none",
                      "indices": "permutation"}
    # the op's own label (moe_matrix.label) keeps the names, so the seeds, of before
    assert c.name == "bf16-noprobs-n4k2h40-norange-permutation-tiny"
    assert cases[2].axes["range"] == "middle_half"
    assert cases[4].axes["range"] == (-3, -1) and "-r-3_-1-" in cases[4].name
    assert cases[1].platform.aiv_core_num == 2
    assert cases[1].name.endswith("-ascend910b1_aiv_cores2")
    # the op reads its case from the axes: the middle half of T = 8 is [2, 6)
    from aicore_sim.ops.registry import get_op

    assert get_op(m.op).matrix_case(cases[2]).range == (2, 6)
    # seeds depend on the case, not on its position in the matrix
    again = expand(parse_matrix(_axes(dtype=["DT_FLOAT", "bf16"]), "mini.toml"))
    assert {c.name: c.seed for c in again} == {c.name: c.seed for c in cases}
    assert len({c.seed for c in cases}) == len(cases) // 2  # one per combination of the axes


def test_matrix_label_reduces_values_to_name_parts():
    assert [label(v) for v in ("bf16", 7, -10, (-3, 4), {"a": 1, "b": -2}, True, "x y/z")] == [
        "bf16", "7", "m10", "m3_4", "a1_bm2", "true", "x_y_z"]


@pytest.mark.parametrize("change,field", [
    (_axes(dtype=["bf17"]), "axes.dtype[0]"),
    (_axes(dtype=["int32"]), "axes.dtype[0]"),
    (_axes(dtype=["bf16", "bfloat16"]), "axes.dtype"),
    (_axes(probs=[]), "axes.probs"),
    (_axes(shape=[{"tokens": 4, "topk": 2}]), "axes.shape[0].hidden"),
    (_axes(shape=[{"tokens": 4, "topk": 2, "hidden": 0}]), "axes.shape[0].hidden"),
    (_axes(shape=[{"tokens": 4, "topk": 2, "hidden": 8, "k": 1}]), "axes.shape[0].k"),
    (_axes(range=[[1, 2, 3]]), "axes.range[0]"),
    (_axes(indices=["random"]), "axes.indices[0]"),
    (_axes(colour=["red"]), "axes.colour"),
    ({"platforms": ["ascend123"]}, "platforms[0]"),
    ({"mode": "fast"}, "mode"),
    ({"standard": "fuzzy"}, "standard"),
    ({"colour": 1}, "colour"),
    ({"dtypes": ["bf16"]}, "dtypes"),
    ({"op": "other_op"}, "op"),
    ({"axes": [1]}, "axes"),
])
def test_matrix_errors_name_the_field(change, field):
    with pytest.raises(VerifyError) as e:
        parse_matrix({**MINI, **change}, "mini.toml")
    assert str(e.value).startswith(f"mini.toml: {field}:")


def test_matrix_missing_required_field_and_axis():
    with pytest.raises(VerifyError, match="mini.toml: axes: missing"):
        parse_matrix({k: v for k, v in MINI.items() if k != "axes"}, "mini.toml")
    doc = {**MINI, "axes": {k: v for k, v in MINI["axes"].items() if k != "indices"}}
    with pytest.raises(VerifyError, match="mini.toml: axes.indices: missing"):
        parse_matrix(doc, "mini.toml")


def test_matrix_axis_values_with_one_name_part_are_refused():
    doc = _axes(range=[[-3, -1], "none"], dtype=["bf16"])
    parse_matrix(doc, "mini.toml")
    doc["axes"]["probs"] = ["float16", "float16 "]
    with pytest.raises(VerifyError) as e:
        parse_matrix(doc, "mini.toml")
    assert str(e.value).startswith("mini.toml: axes.probs:")


def test_matrix_of_an_op_without_axes_is_refused(monkeypatch):
    from aicore_sim.ops.registry import get_op

    monkeypatch.setattr(type(get_op("moe_token_permute_with_ep")), "matrix_axes", {})
    with pytest.raises(VerifyError, match=r"mini.toml: op: op moe_token_permute_with_ep "
                                          r"declares no matrix axes"):
        parse_matrix({"op": "moe_token_permute_with_ep", "axes": {}}, "mini.toml")


def test_generic_matrix_code_knows_no_operator_words():
    root = Path(__file__).resolve().parents[1] / "aicore_sim" / "verify"
    words = re.compile(r"tokens|topk|top_k|hidden|probs|permut|moe", re.IGNORECASE)
    hits = [f"{p.name}:{i}" for p in sorted(root.rglob("*.py"))
            for i, line in enumerate(p.read_text().splitlines(), 1) if words.search(line)]
    assert hits == []


# --------------------------------------------------------------------------------------------
# ATK reader
# --------------------------------------------------------------------------------------------


def _atk_doc(n: int = 24, hidden: int = 64, records: int = 3) -> list[dict]:
    def tensor(name, dtype, shape):
        return {"name": name, "type": "tensor", "required": True, "dtype": dtype,
                "shape": shape, "range_values": [-100, 100]}

    def attr_tuple(name, v):
        return {"name": name, "type": "attr_tuple", "dtype": "int", "range_values": v}

    return [{
        "id": i, "name": "probs_none", "aclnn_name": "MoeTokenUnpermuteWithEpGrad",
        "standard": {"acc": "md5", "perf": "not_key"},
        "inputs": [tensor("unpermutedTokensGrad", "bf16", [n + i, hidden]),
                   tensor("sorted_indices", "int32", [n + i]),
                   tensor("permutedTokens", "bf16", [n + i, hidden]),
                   tensor("probs", "bf16", [n + i, 1]),
                   {"name": "padded_mode", "type": "attr", "dtype": "bool",
                    "range_values": False},
                   [attr_tuple("restore_shape", 16), attr_tuple("restore_shape", 16)],
                   [attr_tuple("range", 0)],
                   {"name": "topk_num", "type": "attr", "dtype": "int", "range_values": 1}],
    } for i in range(records)]


def test_atk_reader(tmp_path):
    f = tmp_path / "atk_small.json"
    f.write_text(json.dumps(_atk_doc()))
    recs = load_atk(f)
    assert len(recs) == 3
    r = recs[1]
    assert r.acc == "md5" and r.aclnn_name == "MoeTokenUnpermuteWithEpGrad"
    assert r.tensors["unpermutedTokensGrad"].shape == (25, 64)
    assert r.attrs == {"padded_mode": False, "restore_shape": [16, 16], "range": [0],
                       "topk_num": 1}


def test_select_records():
    assert select_records(10, None) == list(range(10))
    assert select_records(10, "0,5,9") == [0, 5, 9]
    assert select_records(10, "2:8:3") == [2, 5]
    assert select_records(10, ":3") == [0, 1, 2]
    with pytest.raises(VerifyError, match="rule records_range"):
        select_records(10, "0,10")
    with pytest.raises(VerifyError, match="rule records_syntax"):
        select_records(10, "a-b")


def test_atk_records_verify_bit_exact(tmp_path, capsys):
    """A small ATK file through the CLI: upstream-executor construction, md5 standard."""
    f = tmp_path / "atk_small.json"
    f.write_text(json.dumps(_atk_doc()))
    rc = main(["verify", str(f), "--records", "0,2", "--no-progress",
               "--report", str(tmp_path / "rep")])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "PASS  atk000-n24h64  permuted_tokens_grad  bfloat16[24, 64]  [bit-exact]" in out
    assert "atk002-n26h64" in out and "atk001" not in out
    rep = json.loads((tmp_path / "rep.json").read_text())
    assert rep["summary"]["cases_passed"] == 2
    assert rep["cases"][0]["expected_from"] == "atk executor"
    assert rep["cases"][0]["source"] == "atk_small.json#0"


# --------------------------------------------------------------------------------------------
# CLI: cases, expected files, bad inputs (exit 2, one line naming file and rule)
# --------------------------------------------------------------------------------------------


def _verify(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(["verify", *argv])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def test_bundled_and_case_file_pass(tmp_path, capsys):
    case = Path(__file__).resolve().parents[1] / "examples" / "cases" / "tiny.json"
    args = ["few_tokens_noprobs", "hidden_40_mask", "--report", str(tmp_path / "r"),
            "--no-progress"]
    if case.is_file():
        args.insert(0, str(case))
    rc, out, _ = _verify(capsys, *args)
    assert rc == 0, out
    assert "PASS  hidden_40_mask  probs_grad  bfloat16[7, 2]  [bit-exact]  max_abs 0" in out
    md = (tmp_path / "r.md").read_text()
    assert "| bfloat16 | bit-exact |" in md and "passed" in md


def test_threshold_standard_shown_per_dtype(tmp_path, capsys):
    rc, out, _ = _verify(capsys, "hidden_40_mask", "--standard", "threshold", "--mode", "timed",
                         "--report", str(tmp_path / "r"))
    assert rc == 0, out
    rep = json.loads((tmp_path / "r.json").read_text())
    assert rep["summary"]["standards_by_dtype"] == {
        "bfloat16": ["threshold (mean rel < 2^-7, max rel < 10x)"],
        "float32": ["threshold (mean rel < 2^-13, max rel < 10x)"]}
    assert rep["summary"]["mode"] == "timed"


def _write_expected(tmp_path: Path, capsys, fmt: str) -> Path:
    gold = tmp_path / "gold"
    rc, _, _ = _verify(capsys, "tiny", "--dump-golden", str(gold), "--report",
                       str(tmp_path / "r0"))
    assert rc == 0
    if fmt == "bin":
        for f in (gold / "tiny").glob("*.npy"):
            np.load(f).tofile(f.with_suffix(".bin"))
            f.unlink()
    return gold


@pytest.mark.parametrize("fmt", ["npy", "bin"])
def test_expected_files_one_ulp_fails(tmp_path, capsys, fmt):
    gold = _write_expected(tmp_path, capsys, fmt)
    rc, out, _ = _verify(capsys, "tiny", "--expected", str(gold), "--report",
                         str(tmp_path / "r1"))
    assert rc == 0, out
    f = gold / "tiny" / f"probs_grad.{fmt}"
    a = np.load(f) if fmt == "npy" else np.fromfile(f, np.float32).reshape(10, 3)
    a.view(np.uint32)[4, 2] += 1
    np.save(f, a) if fmt == "npy" else a.tofile(f)
    rc, out, _ = _verify(capsys, "tiny", "--expected", str(gold), "--report",
                         str(tmp_path / "r2"))
    assert rc == 1
    line = [x for x in out.splitlines() if x.startswith("FAIL")]
    assert len(line) == 1 and "tiny  probs_grad" in line[0]
    assert "first bad [4, 2]" in line[0] and "bad 1/30" in line[0]


def test_single_case_flat_expected_folder(tmp_path, capsys):
    gold = _write_expected(tmp_path, capsys, "npy")
    for f in (gold / "tiny").iterdir():
        f.rename(gold / f.name)
    rc, out, _ = _verify(capsys, "tiny", "--expected", str(gold), "--report",
                         str(tmp_path / "r1"))
    assert rc == 0, out


@pytest.mark.parametrize("damage,rule", [
    ("missing", "expected_missing"),
    ("bin_short", "bin_size"),
    ("bin_dtype", "bin_size"),
    ("npy_shape", "npy_shape"),
    ("npy_dtype", "npy_dtype"),
])
def test_bad_expected_files_exit_2(tmp_path, capsys, damage, rule):
    gold = _write_expected(tmp_path, capsys, "npy")
    f = gold / "tiny" / "permuted_tokens_grad.npy"
    a = np.load(f).view(bfloat16)  # bf16 .npy files load as 2-byte void
    f.unlink()
    if damage == "bin_short":
        a.reshape(-1)[:-1].tofile(f.with_suffix(".bin"))
    elif damage == "bin_dtype":  # float32 data where bf16 is expected: twice the bytes
        a.astype(np.float32).tofile(f.with_suffix(".bin"))
    elif damage == "npy_shape":
        np.save(f, a[:-1])
    elif damage == "npy_dtype":
        np.save(f, a.astype(np.float32))
    rc, out, err = _verify(capsys, "tiny", "--expected", str(gold), "--report",
                           str(tmp_path / "r"))
    assert rc == 2 and out == ""
    assert len(err.strip().splitlines()) == 1
    assert f"rule {rule}" in err and "permuted_tokens_grad" in err


@pytest.mark.parametrize("argv,rule", [
    (["tiny", "--standard", "approx"], "standard_name"),
    (["no_such_case"], "case"),
    ([], "no_cases"),
    (["tiny", "--records", "0"], "records"),
    (["--matrix", "nope.toml"], "matrix_file"),
])
def test_bad_arguments_exit_2(tmp_path, capsys, argv, rule):
    rc, _, err = _verify(capsys, *argv, "--report", str(tmp_path / "r"))
    assert rc == 2
    assert len(err.strip().splitlines()) == 1 and f"rule {rule}" in err


def test_bad_matrix_file_exit_2(tmp_path, capsys):
    m = tmp_path / "m.toml"
    m.write_text('op = "moe_token_unpermute_with_ep_grad"\n[axes]\ndtype = ["bf16"]\n'
                 'probs = ["none"]\nshape = [{tokens = 2, topk = 1, hidden = -4}]\n'
                 'range = ["none"]\nindices = ["permutation"]\n')
    rc, _, err = _verify(capsys, "--matrix", str(m), "--report", str(tmp_path / "r"))
    assert rc == 2 and "m.toml: axes.shape[0].hidden: expected an integer >= 1" in err


def test_case_that_cannot_run_fails_with_exit_1(tmp_path, capsys):
    """A tiling rejection is a failed case (exit 1), reported, not a bad verify input."""
    m = tmp_path / "m.json"
    m.write_text(json.dumps({"op": "moe_token_unpermute_with_ep_grad", "axes": {
        "dtype": ["bf16"], "probs": ["none"], "shape": [{"tokens": 2, "topk": 600, "hidden": 8}],
        "range": ["none"], "indices": ["permutation"]}}))
    rc, out, _ = _verify(capsys, "--matrix", str(m), "--report", str(tmp_path / "r"))
    assert rc == 1 and "(not run)" in out and "561002" in out


def _timeless(x):
    """A verify report without what depends on the run's timing or its command line."""
    if isinstance(x, dict):
        return {k: _timeless(v) for k, v in x.items()
                if k not in ("wall_s", "wall_s_cases", "started", "command", "workers",
                             "scheduler")}
    if isinstance(x, list):
        return [_timeless(v) for v in x]
    return x


def test_workers_give_the_serial_report(tmp_path, capsys):
    """--workers 2 runs the cases in two forked processes: the same report, case for case and in
    the same order, as --workers 1 (12 cases: 2 dtypes x 2 probs x 3 shapes); the printed lines
    too."""
    m = tmp_path / "m.toml"
    m.write_text('op = "moe_token_unpermute_with_ep_grad"\n[axes]\ndtype = ["bf16", "fp32"]\n'
                 'probs = ["none", "same"]\nshape = [{tokens = 4, topk = 2, hidden = 16}, '
                 '{tokens = 7, topk = 3, hidden = 40}, {tokens = 2, topk = 1, hidden = 8}]\n'
                 'range = ["none"]\nindices = ["permutation"]\n')
    reports, printed = [], []
    for workers in ("1", "2"):
        rc, out, _ = _verify(capsys, "--matrix", str(m), "--workers", workers, "--no-progress",
                             "--report", str(tmp_path / f"w{workers}"))
        assert rc == 0
        reports.append(json.loads((tmp_path / f"w{workers}.json").read_text()))
        printed.append([line for line in out.splitlines() if "wall" not in line])
    assert reports[0]["summary"]["cases"] == 12
    assert reports[1]["summary"]["workers"] == 2
    assert _timeless(reports[0]) == _timeless(reports[1])
    assert printed[0] == printed[1]


def test_a_dask_cluster_gives_the_serial_report(tmp_path, capsys, monkeypatch):
    """--scheduler local:2 runs the cases on a new Dask LocalCluster of two worker processes,
    each rebuilding the cases from the command's options (a case's input maker cannot travel):
    the same report and printed lines as one process (4 cases: 2 dtypes x 2 probs), and a case
    the tiling rejects fails there as it does serially."""
    pytest.importorskip("distributed")
    monkeypatch.chdir(tmp_path)  # the workers resolve the relative matrix path from here too
    (tmp_path / "m.json").write_text(json.dumps({
        "op": "moe_token_unpermute_with_ep_grad", "axes": {
            "dtype": ["bf16", "fp32"], "probs": ["none", "same"],
            "shape": [{"tokens": 4, "topk": 2, "hidden": 16},
                      {"tokens": 2, "topk": 600, "hidden": 8}],
            "range": ["none"], "indices": ["permutation"]}}))
    reports, printed = [], []
    for how in (["--workers", "1"], ["--scheduler", "local:2"]):
        rc, out, _ = _verify(capsys, "--matrix", "m.json", *how, "--no-progress", "--report",
                             how[1].replace(":", "_"))
        assert rc == 1  # the topk 600 cases fail, with 561002, on both
        reports.append(json.loads((tmp_path / f"{how[1].replace(':', '_')}.json").read_text()))
        printed.append([line for line in out.splitlines() if "wall" not in line])
    assert reports[0]["summary"]["cases"] == 8 and reports[0]["summary"]["cases_failed"] == 4
    assert reports[1]["summary"]["scheduler"] == "local:2"
    assert _timeless(reports[0]) == _timeless(reports[1])
    assert printed[0] == printed[1]


def test_a_case_that_cannot_run_in_a_worker(tmp_path, capsys):
    """A case the tiling rejects (topk 600) is reported from its worker as it is serially:
    exit 1, the same lines."""
    m = tmp_path / "m.json"
    m.write_text(json.dumps({"op": "moe_token_unpermute_with_ep_grad", "axes": {
        "dtype": ["bf16"], "probs": ["none"],
        "shape": [{"tokens": 2, "topk": 600, "hidden": 8}, {"tokens": 2, "topk": 1, "hidden": 8}],
        "range": ["none"], "indices": ["permutation"]}}))
    got = [_verify(capsys, "--matrix", str(m), "--workers", w, "--report",
                   str(tmp_path / f"r{w}"))[:2] for w in ("1", "2")]
    assert got[0][0] == got[1][0] == 1
    assert [line for line in got[0][1].splitlines() if "wall" not in line] == \
        [line for line in got[1][1].splitlines() if "wall" not in line]


# --------------------------------------------------------------------------------------------
# cases built one at a time: checked once before the work, then built as they run
# --------------------------------------------------------------------------------------------


def test_a_matrix_is_checked_then_built_as_it_runs(tmp_path, monkeypatch):
    from aicore_sim.cli.parser import build_parser
    from aicore_sim.verify import runner

    (tmp_path / "m.json").write_text(json.dumps({**MINI, "name": "mini"}))
    built = []
    real = runner._from_matrix_case
    monkeypatch.setattr(runner, "_from_matrix_case",
                        lambda *a: built.append(a[1].name) or real(*a))
    args = build_parser().parse_args(["verify", "--matrix", str(tmp_path / "m.json"),
                                      "--limit", "10", "--tiling", "inputReserveNum=1"])
    cases, meta = runner.cases_from_args(args)
    # 2 dtypes x 3 probs x 3 ranges x 2 platforms = 36, cut to 10: each built once, to check
    assert len(cases) == len(built) == 10 and cases.names == built
    it = iter(cases)
    first = next(it)
    assert len(built) == 11  # built again as it is reached, not all ten at once
    assert (first.name, first.tiling) == (built[0], {"inputReserveNum": 1})
    assert [c.name for c in it] == built[1:10] and len(built) == 20


def test_forked_jobs_are_built_a_chunk_at_a_time(monkeypatch):
    from aicore_sim.verify import runner
    from aicore_sim.verify.report import CaseResult

    class Case:
        def __init__(self, name: str) -> None:
            self.name, self.source = name, "test"
            self.platform = type("P", (), {"name": "tiny"})()

    monkeypatch.setattr(runner, "run_case",
                        lambda vc, mode, *rest: CaseResult(vc.name, "test", "tiny", mode))
    monkeypatch.setattr(runner, "FORK_CHUNK", 3)
    drawn = []

    def jobs():
        for i in range(7):
            drawn.append(i)
            yield (Case(f"c{i}"), "functional", None, None, False, None)
    got = runner._forked(jobs(), 2)
    first = next(got)
    assert (first.case, drawn) == ("c0", [0, 1, 2])  # one chunk of 3 forked to the pool
    # chunks 0-2, 3-5, 6: every result, in order
    assert [r.case for r in got] == [f"c{i}" for i in range(1, 7)] and len(drawn) == 7

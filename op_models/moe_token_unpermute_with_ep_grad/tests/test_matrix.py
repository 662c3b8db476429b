"""The bundled equivalence matrix through ``aicore-sim verify`` (the table the suite relies on).

The whole matrix runs in functional mode (~2 s, twice) and in timed mode (~4 s).
"""

from __future__ import annotations

import json

import numpy as np

from aicore_sim.cli import main
from aicore_sim.verify.matrix import BUNDLED_MATRIX, expand, load_matrix


def test_bundled_matrix_covers_every_dtype_combination_and_path_a():
    cases = expand(load_matrix("default"))
    combos = {(c.axes["dtype"], c.axes["probs"]) for c in cases}
    floats = {"bfloat16", "float16", "float32"}
    assert combos == {(t, p) for t in floats for p in floats | {"none"}}  # 9 IR combos + path A
    assert {c.platform.name for c in cases} == {"ascend910b1", "tiny"}
    assert {c.axes["range"] == "none" for c in cases} == {True, False}
    assert load_matrix(BUNDLED_MATRIX).name == "equivalence"


def test_bundled_matrix_passes_then_one_ulp_fails(tmp_path, capsys):
    """verify --matrix passes; one element of one expected file off by one ulp: exit 1, named."""
    gold = tmp_path / "expected"
    rc = main(["verify", "--matrix", "--dump-golden", str(gold), "--report",
               str(tmp_path / "pass"), "--no-progress"])
    out = capsys.readouterr().out
    assert rc == 0, [x for x in out.splitlines() if not x.startswith("PASS")]
    summary = json.loads((tmp_path / "pass.json").read_text())["summary"]
    n = len(expand(load_matrix("default")))
    assert summary["cases"] == summary["cases_passed"] == n
    assert summary["standards_by_dtype"] == {d: ["bit-exact"]
                                             for d in ("bfloat16", "float16", "float32")}

    case = "bf16-fp16-n6k2h130-mid-outside_window-tiny"
    f = gold / case / "permuted_tokens_grad.npy"
    a = np.load(f)  # bf16 saved by numpy: 2-byte void; perturb the raw bits
    bits = a.view(np.uint16)
    row, col = (int(i) for i in np.argwhere(bits != 0)[0])
    bits[row, col] += 1
    np.save(f, a)
    rc = main(["verify", "--matrix", "--expected", str(gold), "--report", str(tmp_path / "fail"),
               "--no-progress"])
    out = capsys.readouterr().out
    assert rc == 1
    fails = [x for x in out.splitlines() if x.startswith("FAIL")]
    assert len(fails) == 1, fails
    assert f"FAIL  {case}  permuted_tokens_grad" in fails[0]
    assert "bad 1/1560" in fails[0] and f"first bad [{row}, {col}]" in fails[0]
    md = (tmp_path / "fail.md").read_text()
    assert f"{n - 1} / {n} cases passed" in md and case in md


TIMED_MATRIX = """\
op = "moe_token_unpermute_with_ep_grad"
name = "timed"
standard = "bit-exact"
seed = 0
platforms = ["ascend910b1"]

[axes]
dtype = ["bfloat16", "float16", "float32"]
probs = ["none", "bfloat16", "float16", "float32"]
shape = [{ tokens = 5, topk = 3, hidden = 40 }, { tokens = 6, topk = 2, hidden = 130 }]
range = ["none", "middle_half"]
indices = ["outside_window"]
"""


def test_matrix_timed_mode(tmp_path, capsys):
    # the bundled matrix's every dtype x probs pair, two shapes and two ranges on one platform
    # (3 x 4 x 2 x 2 = 48 cases; the functional tests above run all 216): timed outputs equal
    spec = tmp_path / "timed.toml"
    spec.write_text(TIMED_MATRIX)
    rc = main(["verify", "--matrix", str(spec), "--mode", "timed", "--report",
               str(tmp_path / "t"), "--no-progress"])
    out = capsys.readouterr().out
    assert rc == 0, [x for x in out.splitlines() if not x.startswith("PASS")]
    summary = json.loads((tmp_path / "t.json").read_text())["summary"]
    assert summary["cases"] == summary["cases_passed"] == 48

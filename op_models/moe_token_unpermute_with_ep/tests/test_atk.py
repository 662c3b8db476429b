"""The forward's 200 upstream ATK records through the verify machinery.

Reads ``../shared/reference/upstream_st/atk_aclnnMoeTokenUnpermuteWithEp.json`` when that folder
exists (test data, never copied into the repository) and skips otherwise. The default suite
runs a sample of records of small shapes; ``-m slow`` runs all 200 (``reports/
verify_atk_forward.md`` has the figure and the wall time).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from aicore_sim.verify.atk import load_atk
from op_models.moe_token_unpermute_with_ep.atk import (
    RecordError,
    executor_expected,
    record_call,
)

REPO = Path(__file__).resolve().parents[3]

ATK = REPO / ".." / "shared" / "reference" / "upstream_st" / "atk_aclnnMoeTokenUnpermuteWithEp.json"
needs_atk = pytest.mark.skipif(not ATK.is_file(), reason="upstream ATK file not present")

# record -> (N, H, topk): 256 x 41 (topk 8), 2048 x 41 (topk 1 and 8), 256 x 2048
SAMPLE = "0,4,12,30,100"


@needs_atk
def test_atk_file_has_200_forward_records():
    recs = load_atk(ATK)
    assert len(recs) == 200
    assert {r.aclnn_name for r in recs} == {"MoeTokenUnpermuteWithEp"}
    shapes = {(record_call(r.tensors, r.attrs, 0)["n"], record_call(r.tensors, r.attrs, 0)
               ["hidden"]) for r in recs}
    assert (16384, 7680) in shapes and (256, 41) in shapes


def verify(cli, tmp_path: Path, *records: str) -> dict:
    """``aicore-sim verify ATK [--records ...] --mode functional``; the JSON report."""
    sel = ["--records", records[0]] if records else []
    r = cli("verify", ATK, *sel, "--mode", "functional", "--report", tmp_path / "atk",
            cwd=tmp_path)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr
    return json.loads((tmp_path / "atk.json").read_text())


@needs_atk
def test_atk_sample_passes(tmp_path, cli):
    rep = verify(cli, tmp_path, SAMPLE)
    assert [c["case"] for c in rep["cases"]] == ["atk000-n256h41k8", "atk004-n256h41k8",
                                                 "atk012-n256h81k8", "atk030-n2048h41k1",
                                                 "atk100-n256h7619k8"]
    for c in rep["cases"]:
        assert c["passed"] and c["hazards"] == 0, c
        assert c["outputs"][0]["standard"].startswith("threshold")


@needs_atk
@pytest.mark.slow
def test_atk_all_200_pass(tmp_path, cli):
    rep = verify(cli, tmp_path)
    assert len(rep["cases"]) == 200
    assert all(c["passed"] for c in rep["cases"]), [c["case"] for c in rep["cases"]
                                                    if not c["passed"]]


def test_executor_expected_adds_in_bf16_in_window_order():
    """topk 3, window rows 0-3 -> tokens 0, 0, 0, 1. Token 0 in bf16, in order: 256 + 1 = 257
    ties to 256 (even), + 1 -> 256 again, where the kernel's fp32 sum 258 rounds to 258."""
    import ml_dtypes

    bf = np.dtype(ml_dtypes.bfloat16)
    permuted = np.array([[256.0], [1.0], [1.0], [5.0]], np.float32).astype(bf)
    out = executor_expected(permuted, np.arange(6), 2, 3, 0)
    assert out.astype(np.float32).tolist() == [[256.0], [5.0]]


def test_record_errors_name_the_rule():
    with pytest.raises(RecordError, match="atk_tensor"):
        record_call({}, {}, 0)

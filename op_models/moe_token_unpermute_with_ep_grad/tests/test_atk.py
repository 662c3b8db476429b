"""Upstream system-test (ATK) records through ``aicore-sim verify``, bit-exact on ascend910b1.

The ATK file is test data outside the repository: ``../shared/reference/upstream_st/`` beside
the repository root, or the folder named by ``AICORE_SIM_UPSTREAM_ST``; tests skip without it.
Two records of the default suite (N 9638 and 12411; H 5376; bf16; no probs) take ~5 s; the
whole 200-record file is marked slow.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from aicore_sim.cli import main
from aicore_sim.verify.atk import load_atk

ATK_NAME = "atk_aclnnMoeTokenUnpermuteWithEpGrad.json"


def _atk_file() -> Path:
    folder = os.environ.get("AICORE_SIM_UPSTREAM_ST")
    base = Path(folder) if folder else (
        Path(__file__).resolve().parents[3].parent / "shared" / "reference" / "upstream_st")
    f = base / ATK_NAME
    if not f.is_file():
        pytest.skip(f"upstream ST data not found ({ATK_NAME}; set AICORE_SIM_UPSTREAM_ST)")
    return f


def _record_of(records, n: int) -> int:
    return next(r.index for r in records if r.tensors["unpermutedTokensGrad"].shape[0] == n)


def test_atk_file_shape():
    recs = load_atk(_atk_file())
    assert len(recs) == 200
    assert {r.acc for r in recs} == {"md5"}
    assert {r.tensors["unpermutedTokensGrad"].shape[1] for r in recs} == {5376}
    assert {r.tensors["unpermutedTokensGrad"].dtype for r in recs} == {"bf16"}
    assert {r.attrs["topk_num"] for r in recs} == {1}


def test_two_upstream_records_bit_exact(tmp_path, capsys):
    f = _atk_file()
    recs = load_atk(f)
    idx = [_record_of(recs, n) for n in (9638, 12411)]
    rc = main(["verify", str(f), "--records", ",".join(map(str, idx)), "--mode", "functional",
               "--platform", "ascend910b1", "--report", str(tmp_path / "atk"), "--no-progress"])
    out = capsys.readouterr().out
    assert rc == 0, out
    rep = json.loads((tmp_path / "atk.json").read_text())
    cases = rep["cases"]
    assert [c["case"] for c in cases] == [f"atk{i:03d}-n{n}h5376"
                                          for i, n in zip(idx, (9638, 12411))]
    for c in cases:
        assert c["passed"] and c["platform"] == "ascend910b1" and c["mode"] == "functional"
        (o,) = c["outputs"]  # probs_grad is a dummy upstream: only permuted_tokens_grad
        assert o["name"] == "permuted_tokens_grad" and o["standard"] == "bit-exact"
        assert o["bad"] == 0 and o["elements"] == o["shape"][0] * 5376
        assert c["wall_s"]["total"] > 0


@pytest.mark.slow
def test_full_upstream_file(tmp_path, capsys):
    rc = main(["verify", str(_atk_file()), "--mode", "functional", "--report",
               str(tmp_path / "full"), "--no-progress"])
    capsys.readouterr()
    assert rc == 0

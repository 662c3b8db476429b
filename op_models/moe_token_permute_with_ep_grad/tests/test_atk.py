"""Upstream ATK records of ``aclnnMoeTokenPermuteWithEpGrad`` through the verify machinery.

The records below transcribe the fields this reader uses of records 2 and 3 of upstream's
``tests/st/aclnnMoeTokenPermuteWithEpGrad/atk_aclnnMoeTokenPermuteWithEpGrad.json`` (hicann/
ops-transformer ``5778144076def6311557939ab5cbfe8303f13e8f``; 200 bf16 records in all): forward
tokens [256, 114] / [256, 191], 2048 expert ids in [1, 64], topK 8, windows [1006, 1093) and
[299, 900).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from aicore_sim.verify.atk import load_atk
from op_models.moe_token_permute_with_ep_grad.atk import RecordError, record_call


def _record(rid, hidden, start, end, topk=8, tokens=256):
    t = tokens * topk
    return {"id": rid, "aclnn_name": "MoeTokenPermuteWithEpGrad",
            "standard": {"acc": {"single_bm": {"type": "vector_fused"}}, "perf": "not_key"},
            "inputs": [
                {"name": "tokens", "type": "tensor", "required": True, "dtype": "bf16",
                 "shape": [tokens, hidden], "range_values": [-5, 5]},
                {"name": "indices", "type": "tensor", "required": True, "dtype": "int32",
                 "shape": [t], "range_values": [1, 64]},
                {"name": "probs", "type": "tensor", "required": True, "dtype": "bf16",
                 "shape": [t], "range_values": [0, 1]},
                {"name": "topK", "type": "attr", "range_values": topk},
                [{"name": "rangeOptional", "type": "attr_tuple", "range_values": start},
                 {"name": "rangeOptional", "type": "attr_tuple", "range_values": end}],
                {"name": "padded_mode", "type": "attr", "range_values": False}]}


@pytest.fixture
def atk_file(tmp_path):
    f = tmp_path / "atk_aclnnMoeTokenPermuteWithEpGrad.json"
    f.write_text(json.dumps([_record(2, 114, 1006, 1093), _record(3, 191, 299, 900)]))
    return f


def test_record_call_builds_the_executor_case(atk_file):
    rec = load_atk(atk_file)[0]
    c = record_call(rec.tensors, rec.attrs, seed=2)
    assert (c["n"], c["hidden"], c["topk"], c["range"], c["probs"]) == \
        (256, 114, 8, (1006, 1093), True)
    inp = c["make_inputs"]()
    # the grads are ones: 1093 - 1006 = 87 window rows
    assert inp["permuted_tokens_output_grad"].shape == (87, 114)
    assert sorted(inp["sorted_indices"].tolist()) == list(range(2048))
    want = c["expected"](inp)
    # every window row adds 1 to its token and its slot: 87 in all
    assert float(want["token_grad"][:, 0].astype(np.float32).sum()) == 87
    assert float(want["probs_grad"].astype(np.float32).sum()) == 87


def test_records_verify(atk_file, tmp_path, cli):
    r = cli("verify", str(atk_file), cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "2 / 2 cases passed, 0 of 4 outputs failed" in r.stdout
    # under the records' tolerance standard, yet exact: integer counts, ones and zeros
    assert r.stdout.count("max_abs 0  max_rel 0") == 4


def test_bad_record_is_named():
    rec = _record(0, 8, 0, 10)
    rec["inputs"][3]["range_values"] = 0
    with pytest.raises(RecordError, match="topK 0"):
        record_call(*_parsed(rec))


def _parsed(rec):
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "a.json"
        f.write_text(json.dumps([rec]))
        r = load_atk(f)[0]
    return r.tensors, r.attrs, 0

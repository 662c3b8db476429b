"""The ``MoeTokenPermuteWithEpGrad`` aclnn layer (codes and rules), infershape, the op model's
registration and ``aicore-sim run`` on the bundled cases."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import op_models.moe_token_permute_with_ep_grad as op
from aicore_sim.ops.registry import get_op
from aicore_sim.sim.platform import load_platform
from op_models.moe_token_permute_with_ep_grad import api
from op_models.moe_token_permute_with_ep_grad.infershape import infer_outputs

BF16 = np.dtype(ml_dtypes.bfloat16)
GRAD = np.ones((6, 8), BF16)  # window [1, 7) of 4 tokens x top-2 = 8 rows
IDX = np.array([0, 2, 3, 4, 5, 6, 7, 1], np.int32)
PRB = np.ones(6, BF16)


def _raises(code, rule, *args, platform="ascend910b1"):
    with pytest.raises(api.AclnnError) as e:
        api.get_workspace_size(*args, platform=platform)
    assert (e.value.code, e.value.rule) == (code, rule)


def test_aclnn_codes():
    _raises(161001, "nullptr", None, IDX, PRB, 2, [1, 7], False)
    _raises(161001, "nullptr", GRAD, None, PRB, 2, [1, 7], False)
    _raises(161002, "not_a_tensor", GRAD.tolist(), IDX, PRB, 2, [1, 7], False)
    _raises(161002, "dtype", GRAD.astype(np.int32), IDX, None, 2, [1, 7], False)
    _raises(161002, "indices_dtype", GRAD, IDX.astype(np.int64), PRB, 2, [1, 7], False)
    _raises(161002, "probs_dtype", GRAD, IDX, PRB.astype(np.float32), 2, [1, 7], False)
    _raises(161002, "indices_dim_num", GRAD, IDX.reshape(4, 2), PRB, 2, [1, 7], False)
    _raises(161002, "empty", GRAD[:0], IDX, PRB, 2, [1, 7], False)
    _raises(161002, "attr_type", GRAD, IDX, PRB, 2.0, [1, 7], False)
    _raises(161002, "topk_max", GRAD, IDX, PRB, 513, [1, 7], False)
    _raises(161002, "indices_length", GRAD, IDX, PRB, 3, [1, 7], False)  # 8 % 3 = 2
    _raises(161002, "padded_mode", GRAD, IDX, PRB, 2, [1, 7], True)
    _raises(161002, "range_none", GRAD, IDX, PRB, 2, None, False)
    _raises(161002, "range_size", GRAD, IDX, PRB, 2, [1, 7, 1], False)
    _raises(161002, "range_rows", GRAD, IDX, PRB, 2, [0, 7], False)  # 7 rows > 6
    _raises(161002, "range_rows", GRAD, IDX, PRB[:5], 2, [1, 7], False)
    _raises(161002, "out_shape", GRAD, IDX, PRB, 2, [1, 7], False, np.zeros((4, 9), BF16))
    _raises(161002, "out_dtype", GRAD, IDX, PRB, 2, [1, 7], False, None,
            np.zeros((4, 2), np.float16))
    _raises(561002, "topk_min", GRAD, IDX, PRB, 0, [1, 7], False)
    _raises(561002, "tokens_dim_num", GRAD.reshape(6, 2, 4), IDX, PRB, 2, [1, 7], False)
    _raises(561002, "probs_dim_num", GRAD, IDX, PRB.reshape(6, 1), 2, [1, 7], False)
    # UB 8192 - 256 = 7936: the hidden chunk limit AlignN(2816 // 14 - 512, 512) is 0
    _raises(561002, "ub_too_small", GRAD, IDX, PRB, 2, [1, 7], False,
            platform=load_platform("ascend910b1").with_overrides(ub_size=8192))


def test_workspace_and_preallocated_outputs():
    size, ex = api.get_workspace_size(GRAD, IDX, PRB, 2, [1, 7], False, platform="ascend910b1")
    assert size == 0
    tok = np.full((4, 8), 9, BF16)
    prb = np.full((4, 2), 9, BF16)
    size, ex = api.get_workspace_size(GRAD, IDX, PRB, 2, [1, 7], False, tok, prb,
                                      platform="ascend910b1")
    r = op.MODEL.execute(ex, workspace_size=size, mode="functional")
    # slots 0..7 hold rows 0 2 3 4 5 6 7 1; window [1, 7) drops rows 0 and 7 (slots 0, 6):
    # tokens keep 1, 2, 2, 1 ones (every element written, the 9s gone)
    assert r.outputs["token_grad"] is tok
    assert tok[:, 0].astype(np.float32).tolist() == [1, 2, 2, 1]
    assert prb.astype(np.float32).tolist() == [[0, 1], [1, 1], [1, 1], [0, 1]]
    with pytest.raises(api.AclnnError) as e:
        op.MODEL.execute(ex, workspace_size=-1)
    assert (e.value.code, e.value.rule) == (161002, "workspace")


def test_without_probs_no_probs_grad():
    mine = np.full((4, 2), 7, BF16)
    outs, _ = op.moe_token_permute_with_ep_grad(GRAD, IDX, num_topk=2, range=[1, 7],
                                                 probs_grad=mine, mode="functional")
    assert outs["probs_grad"] is mine and (mine.astype(np.float32) == 7).all()
    outs, _ = op.moe_token_permute_with_ep_grad(GRAD, IDX, num_topk=2, range=[1, 7],
                                                 mode="functional")
    assert outs["probs_grad"] is None


def test_default_range_is_an_empty_window():
    """The IR default range [0, 0] counts no slot: zeros (the forward's [0, 0] keeps every
    row; README, deviations)."""
    outs, _ = op.moe_token_permute_with_ep_grad(GRAD, IDX, PRB, num_topk=2, mode="functional")
    assert not outs["token_grad"].astype(np.float32).any()
    assert not outs["probs_grad"].astype(np.float32).any()


def test_infer_outputs_follow_the_docs():
    """token_grad (N, H) with N = 8 slots / K 2 = 4, probs_grad (N, K); upstream's infershape
    would give (6 rows / 2, 8) = (3, 8) here (test_tiling.py)."""
    specs = {"permuted_tokens_output_grad": ((6, 8), BF16), "sorted_indices": ((8,), np.int32),
             "permuted_probs_output_grad": ((6,), BF16)}
    out = infer_outputs(specs, {"num_topk": 2})
    assert out == {"token_grad": ((4, 8), BF16), "probs_grad": ((4, 2), BF16)}
    specs["permuted_probs_output_grad"] = None
    assert infer_outputs(specs, {"num_topk": 2})["probs_grad"] is None


def test_registered():
    m = get_op("moe_token_permute_with_ep_grad")
    assert m.aclnn_name == "MoeTokenPermuteWithEpGrad"
    assert set(m.cases()) == {"permute_grad_tiny_bf16_probs", "permute_grad_tiny_fp16_noprobs",
                              "permute_grad_tiny_fp32_probs", "permute_grad_ep_path_tiny",
                              "permute_grad_deepseek_v3_layer"}
    ds = m.cases()["permute_grad_deepseek_v3_layer"]
    assert (ds.tokens_num, ds.top_k, ds.hidden, ds.experts, ds.ep) == (4096, 8, 7168, 256, 8)
    specs, attrs = m.case_specs(ds)
    # EP rank 0 of 8 keeps the 4099 rows of experts 0-31 (the forward case's window)
    assert specs["permuted_tokens_output_grad"][0] == (4099, 7168)
    assert attrs == {"num_topk": 8, "range": [0, 4099], "padded_mode": False}
    t = m.tiling(specs, attrs, load_platform("ascend910b1"))
    assert (t["status"], t["tiling_key"], t["block_dim"]) == ("success", 1, 48)


@pytest.mark.parametrize("case,elements", [
    # 12 x 48 = 576 and 12 x 2 = 24; 9 x 40 = 360; 9 x 40 = 360 and 9 x 3 = 27
    ("permute_grad_tiny_bf16_probs", (576, 24)),
    ("permute_grad_tiny_fp16_noprobs", (360, None)),
    ("permute_grad_tiny_fp32_probs", (360, 27)),
])
def test_run_bundled_case_is_exact(tmp_path, cli, case, elements):
    r = cli("run", "--case", case, "--no-plot", "--out", tmp_path / "o", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert f"golden token_grad: exact ({elements[0]} elements)" in r.stdout
    if elements[1] is None:
        assert "golden probs_grad" not in r.stdout
    else:
        assert f"golden probs_grad: exact ({elements[1]} elements)" in r.stdout
    assert "hazards: none" in r.stdout


def test_run_bad_attribute_exits_2(tmp_path, cli):
    case = tmp_path / "c.json"
    case.write_text('{"op": "moe_token_permute_with_ep_grad", "name": "bad", "inputs": {'
                    '"permuted_tokens_output_grad": {"shape": [4, 8], "dtype": "bfloat16"}, '
                    '"sorted_indices": {"shape": [8], "dtype": "int32"}}, '
                    '"attrs": {"num_topk": 2, "range": [0, 6]}}')
    r = cli("run", str(case), "--no-plot", "--out", tmp_path / "o", cwd=tmp_path)
    assert r.returncode == 2
    assert "range_rows" in r.stdout + r.stderr

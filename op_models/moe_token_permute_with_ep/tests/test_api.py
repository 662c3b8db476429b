"""The ``MoeTokenPermuteWithEp`` aclnn layer (codes and rules), infershape, the op model's
registration and ``aicore-sim run`` on the bundled case."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import op_models.moe_token_permute_with_ep as op
from aicore_sim.ops.registry import get_op
from op_models.moe_token_permute_with_ep import api
from op_models.moe_token_permute_with_ep.infershape import InferShape4MoeTokenPermuteWithEp

BF16 = np.dtype(ml_dtypes.bfloat16)
TOK = np.ones((4, 8), BF16)
IDX = np.array([[0, 1], [1, 2], [2, 3], [3, 0]], np.int32)


def _raises(code, rule, *args, **kw):
    with pytest.raises(api.AclnnError) as e:
        api.get_workspace_size(*args, platform="ascend910b1", **kw)
    assert (e.value.code, e.value.rule) == (code, rule)


def test_aclnn_codes():
    _raises(161001, "nullptr", None, IDX, None, [0, 8], 0, False)
    _raises(161002, "indices_dtype", TOK, IDX.astype(np.int16), None, [0, 8], 0, False)
    _raises(161002, "probs_dtype", TOK, IDX, np.ones((4, 2), np.float32), [0, 8], 0, False)
    _raises(161002, "range_none", TOK, IDX, None, None, 0, False)
    _raises(161002, "range_order", TOK, IDX, None, [5, 2], 0, False)
    _raises(161002, "empty", TOK[:0], IDX[:0], None, [0, 0], 0, False)
    _raises(161002, "indices_value", TOK, IDX + 16777215, None, [0, 8], 0, False)
    _raises(561002, "tokens_dim_num", TOK.reshape(4, 2, 4), IDX, None, [0, 8], 0, False)
    _raises(561002, "padded_mode", TOK, IDX, None, [0, 8], 0, True)
    _raises(561002, "range_bounds", TOK, IDX, None, [0, 9], 0, False)
    _raises(561002, "range_size", TOK, IDX, None, [0, 8, 1], 0, False)


def test_infershape():
    # range [2, 5]: 3 rows; [5, 5]: 8 + 0 = every row; no range: [0, num_out_tokens]
    assert InferShape4MoeTokenPermuteWithEp((4, 8), (4, 2), [2, 5]) == ((3, 8), (8,), (3,))
    assert InferShape4MoeTokenPermuteWithEp((4, 8), (4, 2), [5, 5]) == ((8, 8), (8,), (8,))
    assert InferShape4MoeTokenPermuteWithEp((4, 8), (4,), None, 3) == ((3, 8), (4,), (3,))


def test_whole_permutation_ignores_start():
    """range [3, 3] keeps all 8 rows (numOutTokens == N * K, key 1): rows in expert order."""
    outs, r = op.moe_token_permute_with_ep(np.arange(32, dtype=np.float32).reshape(4, 8)
                                            .astype(BF16), IDX, range=[3, 3],
                                            mode="functional")
    # expert order of the 8 slots: e0 (slots 0, 7), e1 (1, 2), e2 (3, 4), e3 (5, 6) -> tokens
    # 0 3 0 1 1 2 2 3 (slot // 2)
    assert outs["permute_tokens"][:, 0].astype(np.float32).tolist() == \
        [0, 24, 0, 8, 8, 16, 16, 24]
    assert outs["sorted_indices"].tolist() == [0, 2, 3, 4, 5, 6, 7, 1]
    assert outs["permute_probs"] is None


def test_registered():
    m = get_op("moe_token_permute_with_ep")
    assert m.aclnn_name == "MoeTokenPermuteWithEp"
    assert set(m.cases()) == {"permute_tiny_bf16_probs", "permute_tiny_fp32_int64_noprobs",
                              "permute_ep_path_tiny", "permute_deepseek_v3_layer"}
    ds = m.cases()["permute_deepseek_v3_layer"]
    assert (ds.tokens_num, ds.top_k, ds.hidden, ds.experts, ds.ep) == (4096, 8, 7168, 256, 8)


def test_run_bundled_case_is_exact(tmp_path, cli):
    r = cli("run", "--case", "permute_tiny_bf16_probs", "--no-plot", "--out", tmp_path / "o",
            cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    # 12 tokens x top-2 = 24 slots; EP 2 rank 0 keeps the 10 rows of experts 0-3, H 48
    assert "golden permute_tokens: exact (480 elements)" in r.stdout  # 10 x 48
    assert "golden sorted_indices: exact (24 elements)" in r.stdout
    assert "golden permute_probs: exact (10 elements)" in r.stdout
    assert "hazards: none" in r.stdout


def test_run_bad_attribute_exits_2(tmp_path, cli):
    case = tmp_path / "c.json"
    case.write_text('{"op": "moe_token_permute_with_ep", "name": "bad", "inputs": {'
                    '"tokens": {"shape": [4, 8], "dtype": "bfloat16"}, "indices": {"shape": '
                    '[4, 2], "dtype": "int32"}}, "attrs": {"range": [0, 9]}}')
    r = cli("run", str(case), "--no-plot", "--out", tmp_path / "o", cwd=tmp_path)
    assert r.returncode == 2
    assert "range_bounds" in r.stdout + r.stderr

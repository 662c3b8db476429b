"""Tests of the aclnn-style API of ``MoeTokenUnpermuteWithEpGrad``: error codes, workspace,
preallocated outputs."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from aicore_sim.ascendc import host
from aicore_sim.sim.platform import load_platform
from op_models.moe_token_unpermute_with_ep_grad import (
    MODEL,
    AclnnError,
    get_workspace_size,
    moe_token_unpermute_with_ep_grad,
)
from op_models.moe_token_unpermute_with_ep_grad.api import DTYPE_COMBINATIONS

BF16 = np.dtype(ml_dtypes.bfloat16)
P2 = load_platform("ascend910b1").with_overrides(aiv_core_num=2)
N, K, H = 4, 3, 32
T = N * K


def inputs(tok=BF16, prob=np.float32, idx_dtype=np.int32, n=N, k=K, h=H):
    rng = np.random.default_rng(0)
    return dict(
        unpermuted_tokens_grad=rng.uniform(-2, 2, (n, h)).astype(np.float32).astype(tok),
        sorted_indices=rng.permutation(n * k).astype(idx_dtype),
        permuted_tokens=rng.uniform(-2, 2, (n * k, h)).astype(np.float32).astype(tok),
        probs=None if prob is None
        else rng.uniform(0.1, 0.9, (n, k)).astype(np.float32).astype(prob),
    )


def gws(inp, *, padded_mode=False, restore_shape=None, range=None, topk_num=K,  # noqa: A002
        ptg=None, pg=None, platform=P2):
    return get_workspace_size(
        inp["unpermuted_tokens_grad"], inp["sorted_indices"], inp["permuted_tokens"],
        inp["probs"], padded_mode, restore_shape, range, topk_num, ptg, pg, platform=platform)


def code_of(fn) -> AclnnError:
    with pytest.raises(AclnnError) as ei:
        fn()
    return ei.value


# -- 161001 ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["unpermuted_tokens_grad", "sorted_indices"])
def test_null_required_tensor_161001(name):
    inp = inputs()
    inp[name] = None
    err = code_of(lambda: gws(inp))
    assert err.code == host.ACLNN_ERR_PARAM_NULLPTR == 161001
    assert name in str(err)


# -- 161002 ---------------------------------------------------------------------------------


def test_bad_dtype_combination_161002():
    inp = inputs()
    inp["permuted_tokens"] = inp["permuted_tokens"].astype(np.float16)  # bf16 grad, fp16 perm
    err = code_of(lambda: gws(inp))
    assert err.code == host.ACLNN_ERR_PARAM_INVALID == 161002
    assert "permuted_tokens" in str(err)


def test_int64_indices_161002():
    err = code_of(lambda: gws(inputs(idx_dtype=np.int64)))
    assert err.code == 161002 and "sorted_indices" in str(err)


@pytest.mark.parametrize("bad", ["float64", "int32", "list"])
def test_unsupported_tensor_161002(bad):
    inp = inputs()
    g = inp["unpermuted_tokens_grad"]
    inp["unpermuted_tokens_grad"] = g.tolist() if bad == "list" else g.astype(bad)
    assert code_of(lambda: gws(inp)).code == 161002


def test_wrong_output_dtype_161002():
    inp = inputs()
    pg = np.zeros((N, K), np.float16)  # probs are fp32
    assert code_of(lambda: gws(inp, pg=pg)).code == 161002


def test_all_nine_dtype_combinations_accepted():
    assert len(DTYPE_COMBINATIONS) == 9
    for tok, prob in DTYPE_COMBINATIONS:
        size, ex = gws(inputs(tok=tok, prob=prob))
        assert size == 16 * 1024 * 1024 and ex.tiling_key == 1


# -- 561002 ---------------------------------------------------------------------------------


def test_topk_600_561002():
    inp = inputs(prob=None, n=2, k=600, h=16)
    err = code_of(lambda: gws(inp, topk_num=600))
    assert err.code == host.ACLNN_ERR_INNER_TILING_ERROR == 561002
    assert err.rule and "512" in str(err)


def test_topk_zero_561002():
    assert code_of(lambda: gws(inputs(prob=None), topk_num=0)).code == 561002


def test_shape_mismatch_561002():
    inp = inputs()
    inp["permuted_tokens"] = inp["permuted_tokens"][:, :16].copy()  # hidden 16 != 32
    err = code_of(lambda: gws(inp))
    assert err.code == 561002 and "permuted_tokens" in str(err)


def test_indices_count_mismatch_561002():
    inp = inputs(prob=None)
    err = code_of(lambda: gws(inp, topk_num=2))  # T 12 != N 4 x 2
    assert err.code == 561002


def test_range_reversed_561002():
    err = code_of(lambda: gws(inputs(), range=[5, 2]))
    assert err.code == 561002 and err.rule == "range_order" and "range" in str(err)


def test_padded_mode_561002():
    assert code_of(lambda: gws(inputs(), padded_mode=True)).code == 561002


def test_range_size_3_561002():
    assert code_of(lambda: gws(inputs(), range=[0, 4, 8])).rule == "range_size"


def test_empty_tensors_a2_561002():
    inp = inputs(n=0)
    err = code_of(lambda: gws(inp))
    assert err.code == 561002 and err.rule == "zero_shape"


def test_empty_tensors_950_workspace_0():
    inp = inputs(n=0)
    pre = np.zeros((0, H), BF16)
    size, ex = gws(inp, platform="ascend950pr_9589", ptg=pre)
    assert size == 0 and ex.state.kernel is None  # no launch
    res = MODEL.execute(ex, workspace_size=size)
    assert res.outputs["permuted_tokens_grad"] is pre
    assert res.outputs["probs_grad"].shape == (0, K)
    assert res.trace is None and res.program.instruction_count == 0


# -- outputs ----------------------------------------------------------------------------------


def test_nothing_written_on_failure():
    inp = inputs()
    ptg = np.full((T, H), 7, BF16)
    pg = np.full((N, K), 7, np.float32)
    code_of(lambda: gws(inp, range=[5, 2], ptg=ptg, pg=pg))
    # with probs, K comes from probs.shape[1] (topk_num is overridden), so use a short index
    code_of(lambda: moe_token_unpermute_with_ep_grad(
        inp["unpermuted_tokens_grad"], inp["sorted_indices"][:-1].copy(), inp["permuted_tokens"],
        inp["probs"], platform=P2, permuted_tokens_grad=ptg, probs_grad=pg))
    assert (ptg == 7).all() and (pg == 7).all()


def test_workspace_too_small_161002_and_untouched():
    inp = inputs()
    ptg = np.full((T, H), 7, BF16)
    size, ex = gws(inp, ptg=ptg)
    assert code_of(lambda: MODEL.execute(ex, workspace_size=size - 1)).code == 161002
    assert (ptg == 7).all()


def test_preallocated_outputs_keep_untouched_rows():
    inp = inputs()
    ptg = np.full((T, H), 7, BF16)
    pg = np.full((N, K), 7, np.float32)
    outs, res = moe_token_unpermute_with_ep_grad(
        inp["unpermuted_tokens_grad"], inp["sorted_indices"], inp["permuted_tokens"],
        inp["probs"], range=[2, 8], platform=P2, permuted_tokens_grad=ptg, probs_grad=pg)
    assert outs["permuted_tokens_grad"] is ptg and outs["probs_grad"] is pg
    s = inp["sorted_indices"]
    accepted = (s >= 2) & (s < 8)
    rows = set((s[accepted] - 2).tolist())
    for r in range(T):
        assert ((ptg[r] == 7).all()) == (r not in rows)
    assert (pg.reshape(-1)[~accepted] == 0).all()  # not accepted -> probs_grad 0
    assert not res.hazards


def test_no_probs_outputs():
    inp = inputs(prob=None)
    outs, res = moe_token_unpermute_with_ep_grad(
        inp["unpermuted_tokens_grad"], inp["sorted_indices"], inp["permuted_tokens"],
        topk_num=K, platform=P2)
    assert outs["probs_grad"] is None
    g = inp["unpermuted_tokens_grad"]
    s = inp["sorted_indices"]
    exp = np.zeros((T, H), BF16)
    exp[s] = g[np.arange(T) // K]
    assert np.array_equal(outs["permuted_tokens_grad"].view(np.uint16), exp.view(np.uint16))
    dummy = np.full((N, K), 5, BF16)
    outs, _ = moe_token_unpermute_with_ep_grad(
        inp["unpermuted_tokens_grad"], inp["sorted_indices"], inp["permuted_tokens"],
        topk_num=K, platform=P2, probs_grad=dummy)
    assert outs["probs_grad"] is dummy and (dummy == 5).all()


def test_permuted_tokens_absent_561002():
    inp = inputs()
    inp["permuted_tokens"] = None
    assert code_of(lambda: gws(inp)).code == 561002

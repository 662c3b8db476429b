"""The ``MoeTokenPermuteWithEpGrad`` kernel port against the independent golden, bit for bit.

Small real cases reach every path: tiling key 0 (token pass) and 1 (token then probs pass on a
second TPipe) in bf16 / fp16 / fp32, rows of whole 32-byte blocks (DataCopy) and not
(DataCopyPad), an EP window that skips slots (zeros from ``Duplicate``), front cores with one
token more, hidden chunks with a remainder chunk, token loops with a remainder loop, and the
sign of zero the kernel's accumulation order gives. The meaning is checked too: chained after
the forward permute's golden, the backward gives each token its kept copies back.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import op_models.moe_token_permute_with_ep_grad as op
from aicore_sim.ascendc import HardEvent
from aicore_sim.sim.platform import load_platform
from op_models.moe_token_permute_with_ep import cases as fwd_cases
from op_models.moe_token_permute_with_ep.golden import golden as fwd_golden
from op_models.moe_token_permute_with_ep.golden import permutation
from op_models.moe_token_permute_with_ep_grad import api, cases
from op_models.moe_token_permute_with_ep_grad.golden import golden
from op_models.moe_token_unpermute_with_ep import kernel_unpermute

BF16, FP16, FP32 = np.dtype(ml_dtypes.bfloat16), np.dtype(np.float16), np.dtype(np.float32)
A2 = load_platform("ascend910b1")
# one core with a 16 KiB UB: GetCoreMemSize 16384 - 256 = 16128
SMALL_UB = A2.with_overrides(aiv_core_num=1, ub_size=16384)


def _inputs(N, K, H, dt, start, end, probs, seed=0):
    """A routing's ``sorted_indices`` (a permutation of the N * K rows) and random grads of the
    window's ``end - start`` rows."""
    rng = np.random.default_rng(seed)
    si = rng.permutation(N * K).astype(np.int32)
    grad = rng.standard_normal((end - start, H)).astype(np.float32).astype(dt)
    p = rng.standard_normal(end - start).astype(np.float32).astype(dt) if probs else None
    return grad, si, p


def _bits(a):
    return None if a is None else np.ascontiguousarray(a).view(np.uint8)


def _run(N, K, H, dt, rng, probs, plat=A2, mode="functional"):
    grad, si, p = _inputs(N, K, H, dt, *rng, probs)
    outs, r = op.moe_token_permute_with_ep_grad(grad, si, p, num_topk=K, range=rng,
                                                 platform=plat, mode=mode)
    g = golden(grad, si, p, K, *rng)
    assert r.hazards == [], [str(h) for h in r.hazards]
    for k in ("token_grad", "probs_grad"):
        assert np.array_equal(_bits(outs[k]), _bits(g[k])), k
    return outs, r, api.get_workspace_size(grad, si, p, K, rng, False, platform=plat)[1]


@pytest.mark.parametrize("probs", [False, True], ids=["key0", "key1"])
@pytest.mark.parametrize("H", [48, 40], ids=["rows_datacopy", "rows_datacopypad"])
@pytest.mark.parametrize("dt", [BF16, FP16, FP32], ids=["bf16", "fp16", "fp32"])
def test_every_dtype_and_key(dt, H, probs):
    """12 tokens x top-2, window [2, 16) of the 24 rows; 12 tokens < 48 cores -> 12 cores of
    one token. H 48 rows are 96 / 192 bytes (whole blocks), H 40 in bf16 / fp16 are 80 bytes
    (DataCopyPad; fp32 160 bytes, whole)."""
    outs, _, ex = _run(12, 2, H, dt, [2, 16], probs)
    assert (ex.tiling_key, ex.block_dim) == (int(probs), 12)
    assert (outs["probs_grad"] is None) == (not probs)
    # the window keeps 14 of the 24 slots: token 6 none (zeros), tokens 2, 8, 10 both
    si = _inputs(12, 2, H, dt, 2, 16, probs)[1].reshape(12, 2)
    kept = ((si >= 2) & (si < 16)).sum(axis=1)
    assert kept.tolist() == [1, 1, 2, 1, 1, 1, 0, 1, 2, 1, 2, 1]
    assert not outs["token_grad"][6].astype(np.float32).any()


def test_fp32_unaligned_rows():
    """fp32 H 36 = 144 bytes: DataCopyPad in, the first row copied UB->UB by DataCopy of
    160 bytes (144 rounded up to 32), DataCopyPad out."""
    _run(9, 3, 36, FP32, [4, 20], True)


def test_front_cores():
    """50 tokens on 48 cores: 50 // 48 = 1 a core, 50 % 48 = 2 -> cores 0 and 1 take 2 (their
    slots start at 0 and 4), core c >= 2 one, from slot (2 + 2) * 2 + 2 * (c - 2) = 2c + 4."""
    _, _, ex = _run(50, 2, 48, BF16, [10, 90], True)
    td = ex.tiling
    assert (td.tokens_core_length, td.tokens_core_remain, ex.block_dim) == (1, 2, 48)


@pytest.mark.parametrize("dt", [BF16, FP32], ids=["bf16", "fp32"])
def test_hidden_chunks(dt):
    """UB 16128: bf16 maxH(2) = AlignN((16128 - 5120) // 14 = 786 - 512, 512) = 512, fp32
    AlignN(11008 // 12 = 917 - 512, 512) = 512 < 520 -> chunks of 512, 520 // 512 = 1 and a
    remainder chunk of 8 (16 bytes in bf16: DataCopyPad; 32 in fp32: DataCopy)."""
    _, _, ex = _run(3, 2, 520, dt, [1, 6], True, plat=SMALL_UB)
    td = ex.tiling
    assert (td.hidden_splited_length, td.hidden_splited_num, td.hidden_splited_remain) == \
        (512, 1, 8)


def test_token_loops():
    """One core, UB 16128, fp16 H 48 (512 aligned): maxH(4) = AlignN(11008 // 18 = 611 - 512,
    512) = 512 -> 4 buffers; UB left 16128 - 512 * 18 - 256 = 6656 < 210 * 8 * 4 = 6720 ->
    6656 // 32 = 208 tokens a loop: one loop of 208 and a remainder loop of 2."""
    _, _, ex = _run(210, 8, 48, FP16, [100, 1500], True, plat=SMALL_UB)
    td = ex.tiling
    assert (td.tokens_splited_length, td.tokens_splited_num, td.tokens_splited_remain) == \
        (208, 1, 2)


@pytest.mark.parametrize("dt", [BF16, FP32], ids=["bf16", "fp32"])
def test_sign_of_zero_follows_the_kernel_order(dt):
    """Rows of -0.0; window [0, 2). Token 0: slot 0 (row id 0) counts and starts the sum at
    -0.0, slot 1 (row id 3) does not: -0.0. Token 1: slot 0 (row id 2) does not count, so the
    sum starts at +0.0 (Duplicate), then +0.0 + -0.0 = +0.0. probs_grad copies -0.0 where a slot
    counts and writes +0.0 elsewhere."""
    grad = np.full((2, 16), -0.0, np.float32).astype(dt)
    pgrad = np.full(2, -0.0, np.float32).astype(dt)
    si = np.array([0, 3, 2, 1], np.int32)
    outs, r = op.moe_token_permute_with_ep_grad(grad, si, pgrad, num_topk=2, range=[0, 2],
                                                 mode="functional")
    tg = outs["token_grad"].astype(np.float32)
    assert np.signbit(tg[0]).all() and not np.signbit(tg[1]).any()
    assert np.signbit(outs["probs_grad"].astype(np.float32)).tolist() == \
        [[True, False], [False, True]]
    g = golden(grad, si, pgrad, 2, 0, 2)
    assert all(np.array_equal(_bits(outs[k]), _bits(g[k])) for k in g)


def test_timed_and_timing_only_agree():
    """Both keys run in timing-only mode (the control flow reads only MTE2-copied row ids):
    the same cycles as the timed replay, whose outputs equal the functional ones; recording
    the other way round (``check_streams``) finds no difference either."""
    grad, si, p = _inputs(12, 2, 48, BF16, 3, 17, True)
    runs = {mode: op.moe_token_permute_with_ep_grad(grad, si, p, num_topk=2, range=[3, 17],
                                                     mode=mode, races=False)
            for mode in ("functional", "timed", "timing-only")}
    assert runs["timing-only"][1].mode == "timing-only"
    assert runs["timed"][1].cycles == runs["timing-only"][1].cycles > 0
    assert all(np.array_equal(_bits(runs["timed"][0][k]), _bits(runs["functional"][0][k]))
               for k in ("token_grad", "probs_grad"))
    size, ex = api.get_workspace_size(grad, si, p, 2, [3, 17], False, platform="ascend910b1")
    assert size == 0  # the tiling asks for no workspace
    r = op.MODEL.execute(ex, workspace_size=size, mode="functional", check_streams=True,
                         races=False)
    assert r.hazards == []


def test_chained_after_the_forward():
    """The forward tiny case (12 tokens x top-2 of 8, EP 2 rank 0: rows [0, 10)) through the
    forward's golden, then this kernel on its outputs: each token gets back its row times the
    number of its slots in the window (0, 1 or 2: exact in bf16; a token with none gets +0.0,
    hence the ``+ 0.0`` turning ``-x * 0`` into +0.0), each slot its prob or 0."""
    fc = fwd_cases.get_case("permute_tiny_bf16_probs")
    inp = fwd_cases.make_inputs(fc)
    start, end = inp["range"]
    fwd = fwd_golden(inp["tokens"], inp["indices"], inp["probs"], start, end)
    outs, _ = op.moe_token_permute_with_ep_grad(
        fwd["permute_tokens"], fwd["sorted_indices"], fwd["permute_probs"], num_topk=2,
        range=[start, end], mode="functional")
    kept = (fwd["sorted_indices"] >= start) & (fwd["sorted_indices"] < end)
    kept = kept.reshape(12, 2)
    want = (inp["tokens"].astype(np.float32) * kept.sum(axis=1)[:, None]
            + np.float32(0)).astype(BF16)
    assert np.array_equal(_bits(outs["token_grad"]), _bits(want))
    assert np.array_equal(_bits(outs["probs_grad"]),
                          _bits(np.where(kept, inp["probs"], np.zeros_like(inp["probs"]))))
    assert (start, end) == (0, 10)
    assert kept.sum(axis=1).tolist() == [0, 1, 0, 1, 1, 1, 2, 1, 1, 0, 2, 0]  # 10 rows kept


@pytest.mark.parametrize("probs", [False, True], ids=["key0", "key1"])
def test_probs_pass_zero_fill_fences_in_the_shared_port(monkeypatch, probs):
    """Both passes run the forward's port of the class (``kernel_unpermute``, which upstream's
    permute-grad header repeats). Without auto-sync and with the fences before the probs pass's
    ``Duplicate`` of 0 (MTE3->V, MTE2->V) dropped from that module, the zero fill overwrites a
    UB slot the previous MTE3 copy still reads; key 0 has no probs pass and stays clean."""
    dropped = {HardEvent.MTE3_V, HardEvent.MTE2_V}
    set_flag, wait_flag = kernel_unpermute.SetFlag, kernel_unpermute.WaitFlag
    monkeypatch.setattr(kernel_unpermute, "SetFlag",
                        lambda e, i, **kw: None if e in dropped else set_flag(e, i, **kw))
    monkeypatch.setattr(kernel_unpermute, "WaitFlag",
                        lambda e, i, **kw: None if e in dropped else wait_flag(e, i, **kw))
    grad, si, p = _inputs(12, 2, 48, BF16, 2, 16, probs)
    _, r = op.moe_token_permute_with_ep_grad(grad, si, p, num_topk=2, range=[2, 16],
                                              auto_sync=False)
    races = [h for h in r.hazards if h.kind == "race"]
    assert bool(races) == probs, [str(h) for h in r.hazards]
    if probs:
        assert "VECTOR Duplicate ->probs_inoutque" in races[0].message
        assert "MTE3 DataCopyPad.UB2GM probs_inoutque" in races[0].message


@pytest.mark.parametrize("fwd_name,grad_name", [
    ("permute_tiny_bf16_probs", "permute_grad_tiny_bf16_probs"),
    ("permute_deepseek_v3_layer", "permute_grad_deepseek_v3_layer")])
def test_cases_share_the_forward_routing(fwd_name, grad_name):
    """The grad case's ``sorted_indices`` and ``range`` are the forward case's outputs."""
    fc, gc = fwd_cases.get_case(fwd_name), cases.get_case(grad_name)
    ids, si, rng = cases.routing(gc)
    fwd_ids = fc.draw(fc.seed)[1]  # the forward case's routing draw
    assert np.array_equal(ids, fwd_ids)
    assert np.array_equal(si, permutation(fwd_ids)[1])
    assert rng == fwd_cases.window(fc)


@pytest.mark.slow
def test_deepseek_v3_layer_timing_only():
    """The DeepSeek-V3 layer case (4096 tokens x top-8, H 7168, EP rank 0 of 8) on A2,
    timing-only: 48 cores, both passes."""
    _, r, _ = op.run_case("permute_grad_deepseek_v3_layer", mode="timing-only", races=False)
    assert r.cycles > 0 and r.hazards == []

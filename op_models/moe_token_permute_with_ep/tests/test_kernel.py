"""The ``MoeTokenPermuteWithEp`` kernel port against the independent golden, bit for bit, on
small real cases that reach every tiling key's path: one-core sort (keys 1, 5), multi-core
sort with the sort-out merge of four lists (6), with a middle merge round of 8 lists (6), with
two loops per core merged in-core and int64 ids (2), split-D row copies with a one-core (7) and
a multi-core (8) sort. Inputs: distinct experts per token (top-k of E), random tokens."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import op_models.moe_token_permute_with_ep as op
from aicore_sim.sim.platform import load_platform
from op_models.moe_token_permute_with_ep import api
from op_models.moe_token_permute_with_ep.golden import golden

BF16, FP16, FP32 = np.dtype(ml_dtypes.bfloat16), np.dtype(np.float16), np.dtype(np.float32)
A2 = load_platform("ascend910b1")


def _inputs(N, K, H, E, dt, idt, probs, seed=0):
    rng = np.random.default_rng(seed)
    tokens = rng.standard_normal((N, H)).astype(np.float32).astype(dt)
    idx = np.stack([rng.permutation(E)[:K] for _ in range(N)]).astype(idt)
    p = rng.random((N, K)).astype(np.float32).astype(dt) if probs else None
    return tokens, idx, p


def _bits(a):
    return None if a is None else a.view(np.uint8)


# (id, N, K, H, E, tokens dtype, ids dtype, probs, range, platform overrides, key, block dim)
CASES = [
    # 6 slots on one core; 5 of 6 rows kept -> key 1 + 4; 6 tokens on 6 index-copy cores
    ("one_core_window", 6, 2, 16, 4, BF16, np.int32, True, [1, 6], {}, 5, 6),
    ("one_core_all_rows_int64", 12, 4, 40, 8, FP32, np.int64, False, [0, 0], {}, 1, 48),
    # 6400 slots > the A2 sort loop of 6080: 4 cores of 1600, one sort-out of 4 lists
    ("multi_core_sort_out", 800, 8, 64, 32, FP16, np.int32, True, [1000, 3000], {}, 6, 48),
    # 8 cores, UB 139744: loop 4352; 17504 slots -> 8 lists -> a middle round on 2 cores
    ("multi_core_middle_merge", 2188, 8, 16, 64, BF16, np.int32, True, [100, 300],
     {"aiv_core_num": 8, "ub_size": 140000}, 6, 8),
    # 2 cores: 9000 slots, 4512 a core in 2 loops merged in-core; every row kept
    ("multi_core_two_loops_int64", 1125, 8, 16, 64, BF16, np.int64, True, [0, 9000],
     {"aiv_core_num": 2, "ub_size": 140000}, 2, 2),
    # UB 16128: a row of 4000 fp16 (8000 B) does not fit twice -> split D, 2 chunks
    ("split_d_one_core", 16, 2, 4000, 8, FP16, np.int32, False, [3, 20],
     {"ub_size": 16384}, 7, 16),
    # 9 x 512 = 4608 slots > loop 4352 (multi-core) and rows of 68000 B (split D); 9 tokens
    # on 4 cores (9 % 4 = 1 front core of 3, 3 tail cores of 2) -> block dim 4
    ("split_d_multi_core", 9, 512, 34000, 1024, BF16, np.int32, False, [10, 30],
     {"aiv_core_num": 4, "ub_size": 140000}, 8, 4),
]


@pytest.mark.parametrize("name,N,K,H,E,dt,idt,probs,rng,over,key,bd", CASES,
                         ids=[c[0] for c in CASES])
def test_kernel_bit_exact(name, N, K, H, E, dt, idt, probs, rng, over, key, bd):
    tokens, idx, p = _inputs(N, K, H, E, dt, idt, probs)
    plat = A2.with_overrides(**over) if over else A2
    outs, r = op.moe_token_permute_with_ep(tokens, idx, p, range=rng, platform=plat,
                                            mode="functional")
    ws, ex = api.get_workspace_size(tokens, idx, p, rng, 0, False, platform=plat)
    assert (ex.tiling_key, ex.block_dim) == (key, bd)
    g = golden(tokens, idx, p, *rng)
    assert bool(g["written"].all())
    for k in ("permute_tokens", "sorted_indices", "permute_probs"):
        assert np.array_equal(_bits(outs[k]), _bits(g[k])), k
    # the only hazards: the merge's whole-block reads of a list end (up to 24 bytes of the next
    # core's list, never merged) racing with that core's write of it
    assert all(h.kind == "race" and "'workspace'" in h.message for h in r.hazards)


def test_multi_core_timed_equals_functional():
    tokens, idx, p = _inputs(800, 8, 64, 32, BF16, np.int32, True)
    f, _ = op.moe_token_permute_with_ep(tokens, idx, p, range=[0, 6400], platform=A2,
                                         mode="functional")
    t, r = op.moe_token_permute_with_ep(tokens, idx, p, range=[0, 6400], platform=A2,
                                         mode="timing-only")
    assert r.mode == "timed" and r.cycles > 0  # every key needs numerics (api.NUMERIC_KEYS)
    assert all(np.array_equal(_bits(f[k]), _bits(t[k])) for k in f)


def test_split_d_probs_quirk_of_upstream():
    """Split D with probs (upstream's CopyOutProbs reads slots ``j .. j + K - 1`` for token
    ``j`` of a loop): 2 cores, 6 tokens x K 3 -> 3 tokens (9 slots) a core in one loop; slots
    0..4 of each core are written (``3 + 3 - 1``), slots 5..8 never: their rows keep 0."""
    tokens, idx, p = _inputs(6, 3, 4000, 8, FP16, np.int32, True)
    plat = A2.with_overrides(aiv_core_num=2, ub_size=16384)
    outs, _ = op.moe_token_permute_with_ep(tokens, idx, p, range=[0, 18], platform=plat,
                                            mode="functional")
    g = golden(tokens, idx, p, 0, 18)
    assert np.array_equal(_bits(outs["permute_tokens"]), _bits(g["permute_tokens"]))
    order = np.argsort(idx.reshape(-1), kind="stable")  # slot of each row
    written = (order % 9) < 5
    assert written.sum() == 10  # 2 cores x 5 slots
    assert np.array_equal(outs["permute_probs"][written], g["permute_probs"][written])
    assert (outs["permute_probs"][~written] == 0).all()
    assert (g["permute_probs"][~written] != 0).all()  # so the 8 unwritten rows show

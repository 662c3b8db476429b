"""The forward's bundled equivalence matrix: timed = functional = golden, bit for bit.

The default suite runs every 8th case (a sample across dtypes, probs, shapes, ranges and both
platforms); ``-m slow`` runs all of them.
"""

from __future__ import annotations

import numpy as np
import pytest

from aicore_sim.sim.launch import FORCE_TIMED_REPLAY
from aicore_sim.verify import VerifyError
from aicore_sim.verify.matrix import expand, load_matrix, parse_matrix
from op_models.moe_token_unpermute_with_ep import moe_token_unpermute_with_ep
from op_models.moe_token_unpermute_with_ep.cases import make_inputs
from op_models.moe_token_unpermute_with_ep.golden import golden
from op_models.moe_token_unpermute_with_ep.model import MODEL

EXPANDED = expand(load_matrix(MODEL.equivalence_matrix))
CASES = [(mc.name, MODEL.matrix_case(mc), mc.platform) for mc in EXPANDED]
SAMPLE = CASES[::8]


def test_matrix_size_and_names():
    # 3 dtypes x 4 probs x 3 shapes x 2 ranges x 2 platforms
    assert len(CASES) == 144
    assert len({name for name, _, _ in CASES}) == 144
    name, case, _ = CASES[0]
    assert name == "bf16-noprobs-n12k2h48-norange-permutation-ascend910b1"
    # "none" = the whole permutation; experts 2 * topk; no zero probs without probs
    assert (case.range, case.experts, case.zero_probs) == ((0, 24), 4, 0.0)
    mid = next(c for n, c, _ in CASES if "-mid-" in n and c.probs_dtype)
    assert mid.range == (6, 18) and mid.zero_probs == 0.25  # [T/4, T/4 + T/2) of T = 24


def _check(item, monkeypatch):
    _, case, platform = item
    monkeypatch.setenv(FORCE_TIMED_REPLAY, "1")
    inp = make_inputs(case)
    k = case.top_k
    want = golden(inp["permuted_tokens"], inp["sorted_indices"], inp["probs"], k,
                  *inp["range"])
    outs = {}
    for mode in ("timed", "functional"):
        got, res = moe_token_unpermute_with_ep(
            inp["permuted_tokens"], inp["sorted_indices"], inp["probs"], num_topk=k,
            range=list(inp["range"]), platform=platform, mode=mode)
        assert res.hazards == [], [str(h) for h in res.hazards]
        outs[mode] = got["unpermuted_tokens"]
    for mode, out in outs.items():
        assert np.array_equal(np.ascontiguousarray(out).view(np.uint8),
                              np.ascontiguousarray(want).view(np.uint8)), mode


@pytest.mark.parametrize("item", SAMPLE, ids=[c[0] for c in SAMPLE])
def test_matrix_sample(item, monkeypatch):
    _check(item, monkeypatch)


@pytest.mark.slow
@pytest.mark.parametrize("item", CASES, ids=[c[0] for c in CASES])
def test_matrix_all(item, monkeypatch):
    _check(item, monkeypatch)


def test_matrix_errors_name_the_field():
    doc = {"op": "moe_token_unpermute_with_ep", "axes": {
        "dtype": ["bf17"], "probs": ["none"], "shape": [{"tokens": 1, "topk": 1, "hidden": 8}],
        "range": ["none"]}}
    with pytest.raises(VerifyError, match=r"m.toml: axes.dtype\[0\]"):
        parse_matrix(doc, "m.toml")

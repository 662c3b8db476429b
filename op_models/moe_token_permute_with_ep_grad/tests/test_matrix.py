"""The bundled equivalence matrix of ``MoeTokenPermuteWithEpGrad``: its expansion, and a sample
of its cases bit-exact against the golden (``aicore-sim verify --matrix
moe_token_permute_with_ep_grad`` runs all 72; ``-m slow`` runs them here too)."""

from __future__ import annotations

import numpy as np
import pytest

from aicore_sim.verify.matrix import expand, load_matrix
from op_models.moe_token_permute_with_ep_grad import moe_token_permute_with_ep_grad
from op_models.moe_token_permute_with_ep_grad.cases import make_inputs
from op_models.moe_token_permute_with_ep_grad.golden import golden
from op_models.moe_token_permute_with_ep_grad.model import MODEL

EXPANDED = expand(load_matrix(MODEL.equivalence_matrix))
CASES = [(mc.name, MODEL.matrix_case(mc), mc.platform) for mc in EXPANDED]
SAMPLE = CASES[::11]  # 11 is prime to the 2 x 3 x 2 x 2 inner sizes: every axis varies


def test_matrix_size_and_names():
    # 3 dtypes x 2 probs x 3 shapes x 2 ranges x 2 platforms
    assert len(CASES) == 72
    assert len({name for name, _, _ in CASES}) == 72
    name, case, _ = CASES[0]
    assert name == "bf16-noprobs-n12k2h48-norange-permutation-ascend910b1"
    assert (case.range, case.experts, case.probs) == ((0, 24), 4, False)
    mid = next(c for n, c, _ in CASES if "-mid-" in n and c.probs)
    assert mid.range == (6, 18)  # [T/4, T/4 + T/2) of T = 24


def _check(item):
    _, case, platform = item
    inp = make_inputs(case)
    want = golden(inp["permuted_tokens_output_grad"], inp["sorted_indices"],
                  inp["permuted_probs_output_grad"], case.top_k, *inp["range"])
    outs, res = moe_token_permute_with_ep_grad(
        inp["permuted_tokens_output_grad"], inp["sorted_indices"],
        inp["permuted_probs_output_grad"], num_topk=case.top_k, range=list(inp["range"]),
        platform=platform, mode="functional")
    assert res.hazards == [], [str(h) for h in res.hazards]
    for k, w in want.items():
        assert (outs[k] is None) == (w is None)
        if w is not None:
            assert np.array_equal(outs[k].view(np.uint8), w.view(np.uint8)), k


@pytest.mark.parametrize("item", SAMPLE, ids=[c[0] for c in SAMPLE])
def test_matrix_sample(item):
    _check(item)


@pytest.mark.slow
@pytest.mark.parametrize("item", CASES, ids=[c[0] for c in CASES])
def test_matrix_all(item):
    _check(item)

"""The forward's bundled equivalence matrix: timed = functional = golden, bit for bit.

The default suite runs every 8th case (a sample across dtypes, probs, shapes, ranges and both
platforms); ``-m slow`` runs all of them.
"""

from __future__ import annotations

import numpy as np
import pytest

from aicore_sim.launch import FORCE_TIMED_REPLAY
from op_models.moe_token_unpermute_with_ep.api import moe_token_unpermute_with_ep
from op_models.moe_token_unpermute_with_ep.cases import make_inputs
from op_models.moe_token_unpermute_with_ep.golden import golden
from op_models.moe_token_unpermute_with_ep.matrix import MatrixError, expand_matrix

CASES = expand_matrix()
SAMPLE = CASES[::8]


def test_matrix_size_and_names():
    # 3 dtypes x 4 probs x 3 shapes x 2 ranges x 2 platforms x 1 zero fraction
    assert len(CASES) == 144
    assert len({c.name for c in CASES}) == 144
    assert CASES[0].name == "bf16-noprobs-n12k2h48e8-ep_window-z0.25-ascend910b1"


def _check(mc, monkeypatch):
    monkeypatch.setenv(FORCE_TIMED_REPLAY, "1")
    inp = make_inputs(mc.case)
    k = mc.case.top_k
    want = golden(inp["permuted_tokens"], inp["sorted_indices"], inp["probs"], k,
                  *inp["range"])
    outs = {}
    for mode in ("timed", "functional"):
        out, res = moe_token_unpermute_with_ep(
            inp["permuted_tokens"], inp["sorted_indices"], inp["probs"], num_topk=k,
            range=list(inp["range"]), platform=mc.platform, mode=mode)
        assert res.hazards == [], [str(h) for h in res.hazards]
        outs[mode] = out
    for mode, out in outs.items():
        assert np.array_equal(np.ascontiguousarray(out).view(np.uint8),
                              np.ascontiguousarray(want).view(np.uint8)), mode


@pytest.mark.parametrize("mc", SAMPLE, ids=[c.name for c in SAMPLE])
def test_matrix_sample(mc, monkeypatch):
    _check(mc, monkeypatch)


@pytest.mark.slow
@pytest.mark.parametrize("mc", CASES, ids=[c.name for c in CASES])
def test_matrix_all(mc, monkeypatch):
    _check(mc, monkeypatch)


def test_matrix_errors_name_the_field(tmp_path):
    bad = tmp_path / "m.toml"
    bad.write_text('op = "moe_token_unpermute_with_ep"\ndtypes = ["bf17"]\n'
                   'shapes = [{tokens = 1, topk = 1, hidden = 8, experts = 2}]\n')
    with pytest.raises(MatrixError, match=r"m.toml: dtypes\[0\].*matrix_dtype"):
        expand_matrix(bad)
    bad.write_text('op = "other"\n')
    with pytest.raises(MatrixError, match="matrix_op"):
        expand_matrix(bad)
    with pytest.raises(MatrixError, match="matrix_file"):
        expand_matrix(tmp_path / "missing.toml")

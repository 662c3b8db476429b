"""The backward's tiling space (sweeps / search): the UB budget a plan claims is what the kernel's
InitBuffer calls take, on both paths, and every such point verifies bit-exact.

``ub_bytes`` decides which points a sweep or a search calls infeasible (rule ``ub_budget``), so
it is held against the kernel's real buffers here, as the forward's
``op_models/moe_token_unpermute_with_ep/tests/test_tiling_space.py`` does.
"""

from __future__ import annotations

import pytest

from aicore_sim.sim.platform import load_platform
from op_models.moe_token_unpermute_with_ep_grad.tiling_space import TILING_SPACE

A2 = load_platform("ascend910b1")
ts = TILING_SPACE  # the space under test

# (case, case axes, strategy, knobs, UB bytes). Path B (probs) allocates, each rounded up to 32
# bytes: 2 hA t (unpermuted, double buffer) + 2 R hA t (permuted rows) + 2 x 2 EA p (probs in,
# probs grad out) + 2 hA t (grad out) + 3 hA 4 (fp32 casts) + 256 (reserve) + 3 EA 4 (fp32
# probs scratch); path A (no probs): 2 E 4 (indices) + 2 (R / K) hA t (token rows).
POINTS = [
    # tiny: bf16 tokens (t 2), fp32 probs (p 4), hA 256, R 3, EA 8: 1024 + 3072 + 64 + 64
    # + 1024 + 3 x 1024 + 256 + 3 x 32 = 8672
    ("tiny", {}, "upstream", {}, 8672),
    ("tiny", {}, "one_row", {}, 6624),  # R 1: the permuted rows' buffer 3072 -> 1024
    ("tiny", {"probs": "bfloat16"}, "upstream",
     {"indicesReserveNum": 6, "inputReserveNum": 1, "cores": 5}, 6720),
    ("tiny", {"dtype": "float16", "probs": "float16"}, "upstream",
     {"indicesReserveNum": 9, "hiddenSizeAlign": 64}, 2624),
    ("tiny", {"hidden": 600}, "upstream",  # hidden in 3 chunks of 256
     {"hiddenSizeAlign": 256, "indicesReserveNum": 12, "indicesReserveNumAlign": 16}, 8896),
    ("hidden_split_fp32", {}, "upstream", {}, 194016),
    ("hidden_split_fp32", {}, "max_rows", {}, 146912),
    # path A, fp16 tokens, K 4, hA 256: upstream E = R = 736 -> 2 x 2944 + 2 x 184 x 512
    ("few_tokens_noprobs", {}, "upstream", {}, 194304),
    ("few_tokens_noprobs", {}, "upstream", {"indicesReserveNum": 8, "cores": 2}, 2112),
    ("few_tokens_noprobs", {"hidden": 1000}, "upstream", {"hiddenSizeAlign": 320, "cores": 3},
     62976),
]


@pytest.mark.parametrize("name, axes, strategy, knobs, ub", POINTS,
                         ids=[f"{p[0]}-{p[2]}-{i}" for i, p in enumerate(POINTS)])
def test_ub_budget_equals_the_kernels_buffers_and_points_verify(name, axes, strategy, knobs,
                                                                 ub):
    case = ts.resolve_case(name, axes)
    p = ts.plan(case, A2, strategy, knobs)
    assert p.feasible, p.violations
    assert p.ub_bytes == ub
    res = ts.launch(case, A2, p, mode="functional")
    used = {sum(a.nbytes for a in allocs) for allocs in res.program.allocations if allocs}
    assert used == {ub}  # every core that allocates takes exactly the budget
    assert ts.verify(case, A2, p)["status"] == "verified"


def test_a_budget_over_the_ub_is_refused_with_its_figure():
    """The same figure names the bytes when a plan does not fit: few_tokens_noprobs with
    E = R = 736 and hA 240 (upstream's on this UB): 2 x 2944 + 2 x 184 x 480 = 182528 bytes,
    on a UB of 128 KiB (130816 usable)."""
    case = ts.resolve_case("few_tokens_noprobs", {})
    small = A2.with_overrides(ub_size=131072)
    p = ts.plan(case, small, "upstream", {"indicesReserveNum": 736, "inputReserveNum": 736})
    assert not p.feasible and p.ub_bytes == 182528
    assert dict(p.violations)["ub_budget"] == ("tiling needs 182528 bytes of UB, the core has "
                                               "130816")

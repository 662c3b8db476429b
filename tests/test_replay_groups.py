"""Cores with equal timelines are replayed once (engine/groups.py): same results, to the bit.

The shared HBM server (engine/gm.py) must give a transfer of weight k exactly what k equal
transfers started together get, whatever order SimPy runs a cycle's processes in; the replay
of groups must give every core the trace the replay of every core gives.
"""

from __future__ import annotations

import numpy as np
import pytest
import simpy

from aicore_sim.ops import registry
from aicore_sim.ops.opmodel import call
from aicore_sim.sim import engine
from aicore_sim.sim.engine.core import prepare
from aicore_sim.sim.engine.gm import GmBandwidth
from aicore_sim.sim.engine.groups import groups
from aicore_sim.sim.launch import launch
from aicore_sim.sim.platform import load_platform
from aicore_sim.views.summary import summarize
from tests import kernels

TINY4 = load_platform("tiny").with_overrides(aiv_core_num=4)


def _serve(plan):
    """Drain cycle and bandwidth-limited flag of each transfer of ``plan`` on a 1 B/cycle
    server: (name, wait before start, then wait, bytes, single-core cycles, weight)."""
    env = simpy.Environment()
    gm = GmBandwidth(env, 1.0)
    out = {}

    def proc(name, first, then, nbytes, alone, weight):
        yield env.timeout(first)
        yield env.timeout(then)
        limited = yield gm.transfer(nbytes, env.now + alone, weight)
        out[name] = (env.now, limited)

    for args in plan:
        env.process(proc(*args))
    env.run()
    return out


# 0-500: a and b share 1 B/cycle (250 B each); at 500 c (200 B) makes n = 3 and drains after
# 600 more cycles, at 1100 (a, b at 450); at 1100 d (300 B) starts, n = 3 again: d drains
# after 900 cycles, at 2000 (a, b at 750); then a, b get 0.5 B/cycle for their last 250 B:
# 2500. Every drain is later than the single-core time, so every transfer is HBM-limited.
EXPECTED = {"c": (1100, True), "d": (2000, True), "a": (2500, True), "b": (2500, True)}


@pytest.mark.parametrize("d_first", [(1100, 0), (600, 500)])
def test_a_weighted_transfer_gets_what_its_members_get(d_first):
    # d's start at 1100 is scheduled before (1100 + 0) or after (600 + 500) the timer that
    # drains c at 1100: the drain goes first either way
    d = ("d", *d_first, 300, 10, 1)
    members = _serve([("a", 0, 0, 1000, 100, 1), ("b", 0, 0, 1000, 100, 1),
                      ("c", 500, 0, 200, 10, 1), d])
    reordered = _serve([d, ("c", 500, 0, 200, 10, 1), ("b", 0, 0, 1000, 100, 1),
                        ("a", 0, 0, 1000, 100, 1)])
    weighted = _serve([("ab", 0, 0, 1000, 100, 2), ("c", 500, 0, 200, 10, 1), d])
    assert members == reordered == EXPECTED
    assert weighted == {"ab": EXPECTED["a"], "c": EXPECTED["c"], "d": EXPECTED["d"]}


def _assert_same_traces(a, b):
    assert a.makespan == b.makespan
    for ca, cb in zip(a.cores, b.cores, strict=True):
        assert ca.core == cb.core and ca.stream is cb.stream
        for name in ("index", "start", "end", "pipe", "scalar_spans", "releases",
                     "stall_rows"):
            assert np.array_equal(getattr(ca, name), getattr(cb, name))
        assert ca.double_sets == cb.double_sets


def test_four_equal_cores_are_one_group_sharing_hbm_four_ways():
    x = np.arange(4 * 256, dtype=np.float32)
    r = launch(kernels.copy_in, ["x", "y", {"n": 256}], {"x": x, "y": np.zeros_like(x)},
               {"y": (np.float32, (4 * 256,))}, TINY4, block_dim=4, mode="timing-only")
    streams = r.program.streams
    assert groups(streams, [prepare(s, TINY4) for s in streams], TINY4) == [[0, 1, 2, 3]]
    # the one replayed core stands for four: each 1024 B copy gets 1/4 of 1 B/cycle, so it
    # drains 4096 cycles after its start at 1 (alone it would take 100 + 1024 = 1124)
    for ct in r.trace.cores:
        assert (int(ct.start[0]), int(ct.end[0])) == (1, 4097)
    assert r.cycles == 8196  # 4097, +1 SetFlag, +1 WaitFlag, 4096 for the UB->GM copy, +1
    assert summarize(r)["timeline_groups"] == [[0, 1, 2, 3]]
    _assert_same_traces(r.trace, engine.replay(streams, TINY4, None, r.program.allocations,
                                               group=False))


@pytest.mark.parametrize("op", ["moe_token_unpermute_with_ep_grad", "moe_token_unpermute_with_ep"])
def test_grouped_replay_of_a_layer_equals_the_replay_of_every_core(op):
    # DeepSeek-V3's shape cut to 100 tokens on 48 cores: the routing gives cores different
    # work, so there are several groups, and the HBM is shared by all of them
    model = registry.get_op(op)
    case = model.cases()["deepseek_v3_layer" if op.endswith("_ep") else "p1_deepseek_v3"]
    case = case.with_(name="cut", tokens_num=100)
    inputs = model.case_inputs(case, 7)
    _, r = call(model, inputs, model.case_specs(case)[1], load_platform("ascend910b1"),
                mode="timing-only")
    streams, platform = r.program.streams, r.platform
    parts = groups(streams, [prepare(s, platform) for s in streams], platform)
    assert 1 < len(parts) < len(streams)
    _assert_same_traces(r.trace, engine.replay(streams, platform, None, r.program.allocations,
                                               group=False))

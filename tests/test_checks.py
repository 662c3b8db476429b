"""The vectorised hazard checks against a straightforward reference implementation.

``reference_check_trace`` below is the obvious formulation (one Python pass over each
core's instructions in processing order, with per-32-byte-block shadow arrays for UB and an
active-list sweep for GM). The vectorised :mod:`aicore_sim.sim.checks` must give exactly the
same findings, in the same order, with the same knowledge vectors, on:

- randomised small kernels (copies, vector calls, scalar reads and writes, barriers, flags
  with some waits left out, one or two cores sharing GM), with a small report cap so that
  the "N more races" counts are exercised too, and again with their (start, end) cycles
  reshuffled (ties and sources processed after their targets);
- GM write/read pairs of one core with and without a flag or a PIPE_ALL barrier between;
- the test kernels of ``tests/kernels.py`` with their flags removed;
- the path-B operator kernel with each of its flag pairs removed in turn, on two cores.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aicore_sim.ascendc import (
    PIPE_ALL,
    PIPE_V,
    Add,
    DataCopyExtParams,
    DataCopyPad,
    DataCopyPadExtParams,
    GetBlockIdx,
    GlobalTensor,
    HardEvent,
    Muls,
    PipeBarrier,
    SetFlag,
    TBuf,
    TPipe,
    WaitFlag,
    float32,
)
from aicore_sim.sim import checks
from aicore_sim.sim.isa import Opcode, Pipe, Space
from aicore_sim.sim.launch import launch
from aicore_sim.sim.memory import UB_ALIGN
from aicore_sim.sim.program import Hazard
from aicore_sim.sim.trace import CoreTrace, Trace
from op_models.moe_token_unpermute_with_ep_grad import kernel_prob_not_none
from op_models.moe_token_unpermute_with_ep_grad.tests.test_kernel import BF16, P2, make, run
from tests import kernels
from tests.conftest import TINY

# --------------------------------------------------------------------------------------------
# the reference: slow but obvious
# --------------------------------------------------------------------------------------------

def reference_knowledge(ct: CoreTrace) -> dict[int, tuple[int, int, int, int]]:
    """Knowledge vector of each executed instruction, keyed by stream index: processed in
    (start, end) order, each takes the maximum of its pipe's previous one and of what its
    issuer, its releasing SetFlag, its auto-sync producer (and for PIPE_ALL every pipe's
    latest) knew, if processed before it; its own pipe counts through itself."""
    stream = ct.stream
    seq_of, counts = {}, [0, 0, 0, 0]
    for pos, ins in enumerate(stream):
        seq_of[pos] = counts[ins.pipe]
        counts[ins.pipe] += 1
    pos_of = {(int(stream[p].pipe), s): p for p, s in seq_of.items()}
    wait_src = {int(w): int(s) for w, s in ct.releases}
    scalar = [p for p, ins in enumerate(stream) if ins.pipe is Pipe.SCALAR]
    done: dict[int, tuple[int, int, int, int]] = {}
    last = [(0, 0, 0, 0)] * 4

    def merge(k: list[int], other) -> list[int]:
        return k if other is None else [max(a, b) for a, b in zip(k, other)]

    for row in np.lexsort((ct.end, ct.start)):
        i = int(ct.index[row])
        ins = stream[i]
        p = int(ins.pipe)
        k = list(last[p])
        if p != Pipe.SCALAR:
            before = [s for s in scalar if s < i]
            if before:
                k = merge(k, done.get(before[-1]))
        if ins.op is Opcode.WAIT_FLAG and i in wait_src:
            k = merge(k, done.get(wait_src[i]))
        if ins.dep is not None:
            dp = pos_of.get((int(ins.dep[0]), ins.dep[1]))
            k = merge(k, done.get(dp) if dp is not None else None)
        if ins.op is Opcode.BARRIER and ins.barrier is None:
            for q in range(4):
                k = merge(k, last[q])
        k[p] = seq_of[i] + 1
        done[i] = last[p] = tuple(k)
    return done


def _ub_accesses(ins):
    """(what, operand) of an instruction's UB accesses in checking order."""
    out = [("read", op) for op in ins.src if op.space is Space.UB and op.nbytes]
    if ins.dst is not None and ins.dst.space is Space.UB and ins.dst.nbytes:
        out.append(("write", ins.dst))
    return out


def reference_ub_races(ct: CoreTrace, known: dict, ub_bytes: int, cap: int) -> list[Hazard]:
    """Shadow state per 32-byte block and pipe: the pipe-order number + 1 and the stream index
    of the latest write and read. An access conflicts with another pipe's latest write (a
    write also with its latest read) of a touched block that its knowledge does not cover;
    the partner named is the latest such access of the lowest such pipe."""
    nblk = ub_bytes // UB_ALIGN + 1
    shadow = {kind: [[(0, -1)] * nblk for _ in range(4)] for kind in ("write", "read")}
    found, extra = [], 0
    stream = ct.stream
    for row in np.lexsort((ct.end, ct.start)):
        i = int(ct.index[row])
        ins = stream[i]
        p, k = int(ins.pipe), known[i]
        for what, op in _ub_accesses(ins):
            blocks = range(op.addr // UB_ALIGN, min(-(-op.end // UB_ALIGN), nblk))
            checks_ = [("read after write", "write")] if what == "read" else \
                [("write after write", "write"), ("write after read", "read")]
            for text, against in checks_:
                for q in range(4):
                    mark, j = max((shadow[against][q][b] for b in blocks), default=(0, -1))
                    if q != p and mark > k[q]:
                        if len(found) >= cap:
                            extra += 1
                        else:
                            found.append(Hazard(
                                "race", ct.core,
                                f"{text}: #{j} {stream[j].describe()} and #{i} "
                                f"{ins.describe()} are not ordered by any flag, barrier or "
                                f"auto-sync wait", ((ct.core, j), (ct.core, i))))
                        break
            for b in blocks:
                shadow[what][p][b] = (k[p], i)
    if extra:
        found.append(Hazard("race", ct.core, f"{extra} more UB races not listed"))
    return found


def reference_gm_races(trace: Trace, known: list[dict], cap: int) -> list[Hazard]:
    """Every pair of overlapping GM copy accesses (one a write) that are on different cores,
    or on different pipes of one core with neither known complete before the other starts,
    in (tensor, address) sweep order."""
    rows = []
    for ct in trace.cores:
        for i in ct.index:
            ins = ct.stream[int(i)]
            if ins.op is Opcode.COPY_UB_TO_GM and ins.dst.nbytes:
                o, w = ins.dst, True
            elif ins.op is Opcode.COPY_GM_TO_UB and ins.src[0].nbytes:
                o, w = ins.src[0], False
            else:
                continue
            rows.append((o.buf, o.addr, o.end, ct.core, int(ins.pipe), int(i), w))
    rows.sort(key=lambda r: (r[0], r[1]))
    found, extra = [], 0
    for n, r in enumerate(rows):
        for a in rows[:n]:
            if a[0] != r[0] or a[2] <= r[1] or not (a[6] or r[6]):
                continue
            if a[3] == r[3]:
                ka, kr = known[a[3]][a[5]], known[r[3]][r[5]]
                if a[4] == r[4] or kr[a[4]] >= ka[a[4]] or ka[r[4]] >= kr[r[4]]:
                    continue
            if len(found) >= cap:
                extra += 1
                continue
            ca, cr = trace.cores[a[3]], trace.cores[r[3]]
            found.append(Hazard(
                "race", r[3],
                f"GM '{r[0]}' bytes [{max(a[1], r[1])}, {min(a[2], r[2])}): core{a[3]}.veccore0 "
                f"#{a[5]} {ca.stream[a[5]].describe()} and core{r[3]}.veccore0 #{r[5]} "
                f"{cr.stream[r[5]].describe()} are not ordered; the later one in simulated "
                f"time wins", ((a[3], a[5]), (r[3], r[5]))))
    if extra:
        found.append(Hazard("race", -1, f"{extra} more GM races not listed"))
    return found


def reference_check_trace(trace: Trace, ub_bytes: int, cap: int = checks.MAX_REPORTS
                          ) -> list[Hazard]:
    out, known = [], []
    for ct in trace.cores:
        sets = {int(i) for i in ct.index if ct.stream[int(i)].op is Opcode.SET_FLAG}
        for i in sorted(sets - {int(s) for s in ct.releases[:, 1]})[:cap]:
            out.append(Hazard("pending_flag", ct.core,
                              f"#{i} {ct.stream[i].describe()} is still set at kernel end",
                              ((ct.core, i),)))
        for i, j in ct.double_sets[:cap]:
            out.append(Hazard("double_set", ct.core,
                              f"#{i} {ct.stream[i].describe()} sets a flag still set by #{j}",
                              ((ct.core, j), (ct.core, i))))
        k = reference_knowledge(ct)
        known.append(k)
        out.extend(reference_ub_races(ct, k, ub_bytes, cap))
    out.extend(reference_gm_races(trace, known, cap))
    return out


def assert_same(trace: Trace, ub_bytes: int, cap: int = checks.MAX_REPORTS) -> list[Hazard]:
    """The vectorised checks equal the reference (findings, order, knowledge vectors), with
    at most ``cap`` findings listed per kind and core."""
    for ct in trace.cores:
        ref = reference_knowledge(ct)
        got = checks.knowledge(ct)
        assert {i: tuple(int(v) for v in got[i]) for i in ref} == ref
    saved = checks.MAX_REPORTS
    checks.MAX_REPORTS = cap
    try:
        found = checks.check_trace(trace, ub_bytes)
    finally:
        checks.MAX_REPORTS = saved
    assert found == reference_check_trace(trace, ub_bytes, cap)
    return found


# --------------------------------------------------------------------------------------------
# randomised small kernels
# --------------------------------------------------------------------------------------------

UB_ELEMS = 256  # one 1 KiB fp32 buffer
GM_ELEMS = 512
EVENTS = [HardEvent.MTE2_V, HardEvent.V_MTE3, HardEvent.MTE3_MTE2, HardEvent.MTE2_MTE3,
          HardEvent.V_MTE2, HardEvent.MTE3_V, HardEvent.S_V, HardEvent.V_S, HardEvent.MTE2_S,
          HardEvent.S_MTE3]


def random_kernel(x, y, tiling) -> None:
    """Replays ``tiling['steps']`` on one UB buffer; GM windows move by ``shift`` per core."""
    core = GetBlockIdx()
    xg, yg = GlobalTensor(float32), GlobalTensor(float32)
    xg.SetGlobalBuffer(x)
    yg.SetGlobalBuffer(y)
    pipe = TPipe()
    buf = TBuf(name="u")
    pipe.InitBuffer(buf, UB_ELEMS * 4)
    t = buf.Get(float32)
    shift = tiling["shift"] * core
    for step in tiling["steps"]:
        kind = step[0]
        if kind in ("in", "in_y", "out"):
            _, u, g, n = step
            params = DataCopyExtParams(1, n * 4, 0, 0)
            if kind == "out":
                DataCopyPad(yg[g + shift], t[u], params)
            else:
                DataCopyPad(t[u], (xg if kind == "in" else yg)[g + shift], params,
                            DataCopyPadExtParams())
        elif kind == "muls":
            Muls(t[step[1]], t[step[2]], 2.0, step[3])
        elif kind == "add":
            Add(t[step[1]], t[step[2]], t[step[3]], step[4])
        elif kind == "get":
            t.GetValue(step[1])
        elif kind == "put":
            t.SetValue(step[1], 1.0)
        elif kind == "get_gm":
            xg.GetValue(step[1] + shift)
        elif kind == "barrier":
            PipeBarrier(PIPE_ALL if step[1] else PIPE_V)
        elif kind == "set":
            SetFlag(step[1], step[2])
        else:
            WaitFlag(step[1], step[2])


_ub = st.integers(0, UB_ELEMS // 8 - 8).map(lambda b: b * 8)  # 32-byte aligned, room for 64
_n = st.sampled_from([8, 16, 24, 32, 64])
_gm = st.one_of(st.integers(0, GM_ELEMS - 128), st.integers(0, 8).map(lambda k: k * 8))
_plain = st.one_of(
    st.tuples(st.sampled_from(["in", "in_y", "out"]), _ub, _gm, _n),
    st.tuples(st.just("muls"), _ub, _ub, _n),
    st.tuples(st.just("add"), _ub, _ub, _ub, _n),
    st.tuples(st.sampled_from(["get", "put"]), st.integers(0, UB_ELEMS - 1)),
    st.tuples(st.just("get_gm"), st.integers(0, GM_ELEMS - 128)),
    st.tuples(st.just("barrier"), st.booleans()),
)
# a flag pair: SetFlag now, its WaitFlag `later` steps on (or never): every wait has an
# earlier set of its own, so the replay cannot deadlock
_flag = st.tuples(st.just("flag"), st.sampled_from(EVENTS), st.integers(0, 1),
                  st.integers(0, 6), st.booleans())


@st.composite
def programs(draw):
    raw = draw(st.lists(st.one_of(_plain, _plain, _flag), min_size=1, max_size=40))
    steps: list[tuple] = []
    waits: dict[int, list[tuple]] = {}
    for n, item in enumerate(raw):
        steps.extend(waits.pop(n, []))
        if item[0] == "flag":
            _, event, eid, later, keep = item
            steps.append(("set", event, eid))
            if keep:
                waits.setdefault(n + later, []).append(("wait", event, eid))
        else:
            steps.append(item)
    for n in sorted(waits):
        steps.extend(waits[n])
    cores = draw(st.sampled_from([1, 2]))
    shift = draw(st.sampled_from([0, 64, 256]))
    return steps, cores, shift


def _run(steps, cores, shift):
    span = GM_ELEMS + shift * (cores - 1)
    tensors = {"x": np.arange(span, dtype=np.float32), "y": np.zeros(span, np.float32)}
    return launch(random_kernel, ["x", "y", {"steps": steps, "shift": shift}], tensors,
                  {"y": (np.float32, (span,))}, TINY, block_dim=cores, mode="timing-only")


@settings(max_examples=80, deadline=None)
@given(programs(), st.sampled_from([1, 2, 20]))
def test_random_kernels_match_the_reference(program, cap):
    steps, cores, shift = program
    result = _run(steps, cores, shift)
    assert_same(result.trace, TINY.ub_size, cap)


def _shuffled_times(trace: Trace, seed: int) -> Trace:
    """The same replay with other (start, end) cycles: random per pipe, coarse (many ties),
    still in each pipe's program order. The knowledge edges whose source is then processed
    after their target must be ignored alike by both implementations."""
    rng = np.random.default_rng(seed)
    cores = []
    for ct in trace.cores:
        start, end = np.zeros_like(ct.start), np.zeros_like(ct.end)
        for q in range(4):
            rows = np.flatnonzero(ct.pipe == q)
            s = np.sort(rng.integers(0, max(2, rows.size // 2), rows.size))
            e = s + rng.integers(0, 2, rows.size)
            o = np.lexsort((e, s))
            start[rows], end[rows] = s[o], e[o]
        cores.append(dataclasses.replace(ct, start=start, end=end))
    return Trace(cores, trace.clock_mhz)


@settings(max_examples=40, deadline=None)
@given(programs(), st.integers(0, 2**32 - 1))
def test_any_processing_order_matches_the_reference(program, seed):
    result = _run(*program)
    assert_same(_shuffled_times(result.trace, seed), TINY.ub_size, 3)


def test_random_kernels_find_every_kind_of_race():
    """The generator is not vacuous: a fixed program has UB races of each sort and GM races
    across cores and across the pipes of one core."""
    steps = [("in", 0, 0, 64), ("muls", 0, 0, 64), ("out", 0, 0, 64), ("in", 0, 64, 64),
             ("set", HardEvent.MTE2_V, 0), ("wait", HardEvent.MTE2_V, 0), ("get", 3),
             ("add", 64, 0, 0, 32), ("put", 70), ("out", 64, 0, 32), ("in_y", 128, 8, 8)]
    found = assert_same(_run(steps, 2, 0).trace, TINY.ub_size)
    text = " ".join(h.message for h in found)
    for what in ("read after write", "write after write", "write after read"):
        assert what in text, what
    gm = [h.instrs for h in found if h.message.startswith("GM 'y'")]
    assert any(a[0] != b[0] for a, b in gm) and any(a[0] == b[0] for a, b in gm)


@pytest.mark.parametrize("first, event, then", [("out", HardEvent.MTE3_MTE2, "in_y"),
                                                ("in_y", HardEvent.MTE2_MTE3, "out")])
@pytest.mark.parametrize("sync", ["flag", "barrier", None])
def test_gm_accesses_of_one_core_ordered_by_a_flag_or_barrier(first, event, then, sync):
    """A UB->GM write and a GM->UB read of overlapping bytes on one core are a race unless a
    flag or a PIPE_ALL barrier orders them, whichever of the two starts at the lower address
    (after a barrier, the second knows exactly the first complete)."""
    between = {"flag": [("set", event, 0), ("wait", event, 0)], "barrier": [("barrier", True)],
               None: []}[sync]
    for a, b in ((0, 8), (8, 0), (0, 0)):
        steps = [(first, 0, a, 16)] + between + [(then, 64, b, 16)]
        found = assert_same(_run(steps, 1, 0).trace, TINY.ub_size)
        assert any(h.message.startswith("GM 'y'") for h in found) == (sync is None)


# --------------------------------------------------------------------------------------------
# the test kernels and the operator kernel with flags removed
# --------------------------------------------------------------------------------------------


def _copy_in(cores, **kw):
    x = np.arange(cores * 256, dtype=np.float32)
    return launch(kernels.copy_in, ["x", "y", dict(n=256, **kw)], {"x": x, "y": np.zeros_like(x)},
                  {"y": (np.float32, (cores * 256,))}, TINY, block_dim=cores)


@pytest.mark.parametrize("run", [
    lambda: _copy_in(1, sync=False),
    lambda: _copy_in(2, sync=False),
    lambda: launch(kernels.copy_cast, ["x", "y", {"n": 64, "wait_mte2_v": False,
                                                 "wait_v_mte3": False}],
                   {"x": np.ones(64, np.float16), "y": np.zeros(64, np.float32)},
                   {"y": (np.float32, (64,))}, TINY, block_dim=1),
    lambda: launch(kernels.double_buffer, ["x", "y", {"n": 64, "loops": 8}],
                   {"x": np.ones(512, np.float32), "y": np.zeros(512, np.float32)},
                   {"y": (np.float32, (512,))}, TINY),
    lambda: launch(kernels.scalar_read, ["x", "y", {}], {"x": np.arange(8, dtype=np.int32),
                                                        "y": np.zeros(8, np.int32)},
                   {"y": (np.int32, (8,))}, TINY, block_dim=1),
    lambda: launch(kernels.set_without_wait, [None, None, {}], {}, {}, TINY, block_dim=1),
    lambda: launch(kernels.many_vector, [None, None, {"n": 64, "k": 12}], {}, {}, TINY,
                   block_dim=1),
], ids=["copy_in", "copy_in_2_cores", "copy_cast_no_flags", "double_buffer_2_cores",
        "scalar_read", "set_without_wait", "many_vector"])
def test_test_kernels_match_the_reference(run):
    result = run()
    assert_same(result.trace, TINY.ub_size)


def test_flag_pairs_of_path_b_removed_in_turn_match_the_reference(monkeypatch):
    """Path B on two cores (duplicate indices: the cores also share GM rows), each flag pair
    of the kernel dropped in turn, and one run with only the WaitFlags of a pair dropped
    (pending flags and double sets)."""
    set_flag, wait_flag = kernel_prob_not_none.SetFlag, kernel_prob_not_none.WaitFlag
    inp = make(48, 2, 16, BF16, BF16, seed=3)
    inp["idx"][10:20] = inp["idx"][40:50]  # some rows written twice, by both cores
    pairs = [(e, i) for e in (HardEvent.V_MTE2, HardEvent.MTE2_V) for i in range(2, 8)] + \
        [(e, i) for e in (HardEvent.MTE3_V, HardEvent.V_MTE3) for i in (0, 1)]
    seen = 0
    for pair, waits_only in [(p, False) for p in pairs] + [(pairs[0], True)]:
        def drop_set(event, eid, pair=pair, waits_only=waits_only, **kw):
            if waits_only or (event, eid) != pair:
                set_flag(event, eid, **kw)

        def drop_wait(event, eid, pair=pair, **kw):
            if (event, eid) != pair:
                wait_flag(event, eid, **kw)

        monkeypatch.setattr(kernel_prob_not_none, "SetFlag", drop_set)
        monkeypatch.setattr(kernel_prob_not_none, "WaitFlag", drop_wait)
        _, res = run(inp, P2, mode="timing-only")
        seen += len(assert_same(res.trace, P2.ub_size))
    assert seen


def test_flag_bookkeeping_without_races():
    """``races=False`` keeps only the flag findings, and computes no GM table."""
    r = launch(kernels.set_without_wait, [None, None, {}], {}, {}, TINY, block_dim=1)
    assert checks.check_trace(r.trace, TINY.ub_size, races=False) == \
        [h for h in reference_check_trace(r.trace, TINY.ub_size) if h.kind != "race"]
    assert checks.check_core(r.trace.cores[0], TINY.ub_size, races=False).gm is None

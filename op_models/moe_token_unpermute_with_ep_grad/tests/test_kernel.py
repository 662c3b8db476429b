"""Tests of the ``MoeTokenUnpermuteWithEpGrad`` kernel ports (path A and path B).

Equivalence functional = timed = golden (bit-exact) over a table of shapes x dtypes x probs x
range, a hypothesis sweep, the race on duplicate indices, untouched rows, the instruction
sequence of one path-B group, the event ids, and every path-B flag pair removed in turn.

Platforms: ``ascend910b1`` cut to 1 or 2 AIV cores (real UB, real costs) and the ``tiny``
preset (2 cores, 8192 usable UB bytes), on which path B must split the hidden dimension.
"""

from __future__ import annotations

from collections import Counter

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aicore_sim import ascendc
from aicore_sim.sim.isa import HardEvent, Opcode, Pipe
from aicore_sim.sim.launch import FORCE_TIMED_REPLAY
from aicore_sim.sim.platform import load_platform
from op_models.moe_token_unpermute_with_ep_grad import (
    kernel_prob_not_none,
    moe_token_unpermute_with_ep_grad,
    run_case,
)
from op_models.moe_token_unpermute_with_ep_grad.golden import (
    golden,
    golden_fp64,
    normalise_range,
    permuted_grad_rtol,
    probs_grad_bound,
)
from tests.conftest import TINY

BF16 = np.dtype(ml_dtypes.bfloat16)
FP16 = np.dtype(np.float16)
FP32 = np.dtype(np.float32)
DTYPES = {"bf16": BF16, "fp16": FP16, "fp32": FP32}

P2 = load_platform("ascend910b1").with_overrides(aiv_core_num=2)
P1 = load_platform("ascend910b1").with_overrides(aiv_core_num=1)
TINY1 = TINY.with_overrides(aiv_core_num=1)


# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------


def make(N: int, K: int, H: int, tok: np.dtype, prob: np.dtype | None, seed: int = 0,
         indices: np.ndarray | None = None) -> dict[str, np.ndarray | None]:
    """Inputs drawn in fp32 and narrowed (so exactly representable); indices a permutation."""
    rng = np.random.default_rng(seed)
    T = N * K
    return {
        "grad": rng.uniform(-2, 2, (N, H)).astype(np.float32).astype(tok),
        "idx": rng.permutation(T).astype(np.int32) if indices is None else indices,
        "perm": rng.uniform(-2, 2, (T, H)).astype(np.float32).astype(tok),
        "probs": None if prob is None
        else rng.uniform(0.01, 0.99, (N, K)).astype(np.float32).astype(prob),
    }


def run(inp: dict, platform, rng: tuple[int, int] | None = None, mode: str = "timed",
        init: np.ndarray | None = None, races: bool = True):
    K = inp["idx"].size // inp["grad"].shape[0]
    return moe_token_unpermute_with_ep_grad(
        inp["grad"], inp["idx"], inp["perm"], inp["probs"],
        range=None if rng is None else list(rng), topk_num=K, platform=platform, mode=mode,
        permuted_tokens_grad=None if init is None else init.copy(), races=races)


def expected(inp: dict, rng: tuple[int, int] | None, hidden_chunk: int,
             init: np.ndarray | None = None):
    T = inp["idx"].size
    start, end, num_out = normalise_range(rng, T)
    return golden(inp["grad"], inp["idx"], inp["perm"], inp["probs"], start=start, end=end,
                  num_out_tokens=num_out, hidden_chunk=hidden_chunk,
                  permuted_tokens_grad_init=init)


def bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.uint8)


def chunk_of(result) -> int:
    """``hiddenSizeAlign`` of the launch (the probs_grad reduction chunk)."""
    # the x32 buffer (tmpBufferPermutedTokensCast) is hA fp32 wide in path B
    allocs = {a.name: a for a in result.program.allocations[0]}
    if "tmpBufferPermutedTokensCast" in allocs:
        return allocs["tmpBufferPermutedTokensCast"].nbytes // 4
    return 1 << 30  # path A: no reduction


def hazard_kinds(result) -> Counter:
    return Counter(h.kind for h in result.hazards)


# --------------------------------------------------------------------------------------------
# equivalence table: functional = timed = golden, bit-exact; golden vs fp64 within tolerance
# --------------------------------------------------------------------------------------------

# (name, N, K, H, platform): masked 40-lane WholeReduceSum; 130 lanes (one halving step then
# the 64 fold); 600 lanes on real UB (fold onto 512, 2 block passes) and on ``tiny`` UB, where
# path B splits the hidden dim (bf16: chunks 256+256+88; fp32: 128 x 4 + 88).
SHAPES = [
    ("h40", 5, 3, 40, P2),
    ("h130", 6, 2, 130, P2),
    ("h600", 3, 2, 600, P2),
    ("h600_split", 3, 2, 600, TINY),
]
PROBS = [  # (tokens dtype, probs dtype or None)
    ("bf16", None), ("bf16", "bf16"), ("bf16", "fp32"),
    ("fp16", None), ("fp16", "fp16"),
    ("fp32", None), ("fp32", "fp32"),
]


@pytest.mark.parametrize("window", [False, True], ids=["norange", "window"])
@pytest.mark.parametrize("tok,prob", PROBS, ids=[f"{t}-{p or 'noprobs'}" for t, p in PROBS])
@pytest.mark.parametrize("shape", SHAPES, ids=[s[0] for s in SHAPES])
def test_equivalence_table(shape, tok, prob, window, monkeypatch):
    # the timed image is recomputed by a replay with effects, not taken from the proof that
    # it equals the functional one
    monkeypatch.setenv(FORCE_TIMED_REPLAY, "1")
    _, N, K, H, plat = shape
    inp = make(N, K, H, DTYPES[tok], None if prob is None else DTYPES[prob], seed=N * H + K)
    T = N * K
    rng = (T // 4, T // 4 + T // 2) if window else None
    out_f, res_f = run(inp, plat, rng, mode="functional")
    out_t, res_t = run(inp, plat, rng, mode="timed")
    assert not res_t.hazards, [str(h) for h in res_t.hazards]
    hA = chunk_of(res_t)
    if prob is not None and shape[0] == "h600_split":
        assert hA < H  # really split
    exp_ptg, exp_pg = expected(inp, rng, hA)
    assert np.array_equal(bits(out_t["permuted_tokens_grad"]), bits(out_f["permuted_tokens_grad"]))
    assert np.array_equal(bits(out_t["permuted_tokens_grad"]), bits(exp_ptg))
    if prob is None:
        assert out_t["probs_grad"] is None
    else:
        assert np.array_equal(bits(out_t["probs_grad"]), bits(out_f["probs_grad"]))
        assert np.array_equal(bits(out_t["probs_grad"]), bits(exp_pg))
    # golden vs float64 reference within the golden module's stated bounds
    start, end, num_out = normalise_range(rng, T)
    p64, pg64 = golden_fp64(inp["grad"], inp["idx"], inp["perm"], inp["probs"], start=start,
                            end=end, num_out_tokens=num_out)
    got = out_t["permuted_tokens_grad"].astype(np.float64)
    rtol = permuted_grad_rtol(DTYPES[tok], prob is not None)
    assert np.all(np.abs(got - p64) <= rtol * np.abs(p64))
    if prob is not None:
        bound = probs_grad_bound(inp["grad"], inp["idx"], inp["perm"], DTYPES[prob],
                                 start=start, end=end, num_out_tokens=num_out, hidden_chunk=hA,
                                 probs_grad_fp64=pg64)
        assert np.all(np.abs(out_t["probs_grad"].astype(np.float64) - pg64) <= bound)


def test_named_case_runs_bit_exact():
    """``run_case`` on a named case with indices outside the window (2 cores)."""
    outs, res, inp = run_case("indices_outside_window", platform=P2)
    case_T = inp["sorted_indices"].size
    start, end, num_out = normalise_range((32, 96), case_T)
    exp_ptg, exp_pg = golden(inp["unpermuted_tokens_grad"], inp["sorted_indices"],
                             inp["permuted_tokens"], inp["probs"], start=start, end=end,
                             num_out_tokens=num_out, hidden_chunk=chunk_of(res))
    assert not res.hazards
    assert np.array_equal(bits(outs["permuted_tokens_grad"]), bits(exp_ptg))
    assert np.array_equal(bits(outs["probs_grad"]), bits(exp_pg))


# --------------------------------------------------------------------------------------------
# hypothesis: random shapes, dtypes, ranges, permutations with indices outside the window
# --------------------------------------------------------------------------------------------


@st.composite
def problems(draw):
    N = draw(st.integers(1, 6))
    K = draw(st.integers(1, 4))
    H = draw(st.integers(1, 160))
    tok = draw(st.sampled_from(sorted(DTYPES)))
    prob = draw(st.sampled_from([None, *sorted(DTYPES)]))
    T = N * K
    kind = draw(st.sampled_from(["none", "minus1", "window", "negative"]))
    if kind == "none":
        rng = None
    elif kind == "minus1":
        rng = (-1, -1)
    elif kind == "window":
        a = draw(st.integers(0, T))
        rng = (a, draw(st.integers(a, T)))
    else:
        a = draw(st.integers(-T, -1))
        rng = (a, draw(st.integers(a, -1)))
    seed = draw(st.integers(0, 2**16))
    r = np.random.default_rng(seed)
    idx = r.permutation(T).astype(np.int64)
    start, end, _ = normalise_range(rng, T)
    # replace some positions by values outside the window (accepted values stay unique)
    n_out = draw(st.integers(0, T))
    pos = r.choice(T, size=n_out, replace=False)
    outside = np.concatenate([np.arange(-3, 0), np.arange(0, start), np.arange(end, T + 4)])
    idx[pos] = r.choice(outside, size=n_out)
    cores = draw(st.sampled_from([1, 2, 3]))
    return N, K, H, tok, prob, rng, idx.astype(np.int32), seed, cores


@settings(max_examples=25, deadline=None)
@given(problems())
def test_hypothesis_bit_exact(problem):
    N, K, H, tok, prob, rng, idx, seed, cores = problem
    inp = make(N, K, H, DTYPES[tok], None if prob is None else DTYPES[prob], seed, idx)
    plat = load_platform("ascend910b1").with_overrides(aiv_core_num=cores)
    sentinel = np.full((N * K, H), 3.5, dtype=DTYPES[tok])
    out, res = run(inp, plat, rng, init=sentinel)
    assert not res.hazards, [str(h) for h in res.hazards]
    exp_ptg, exp_pg = expected(inp, rng, chunk_of(res), init=sentinel)
    assert np.array_equal(bits(out["permuted_tokens_grad"]), bits(exp_ptg))
    if prob is not None:
        assert np.array_equal(bits(out["probs_grad"]), bits(exp_pg))


# --------------------------------------------------------------------------------------------
# duplicates and untouched rows
# --------------------------------------------------------------------------------------------


def test_duplicate_indices_race_and_last_writer_in_time_wins():
    """Duplicate accepted indices: several positions write one row.

    Observed (2 cores of ascend910b1, 16 tokens x K 4, bf16 tokens, fp32 probs, 25 % of the
    positions duplicated): the checker reports GM ``race`` hazards for the rows written by
    both cores (there is no inter-core ordering); writes of one core are ordered by its
    in-order MTE3 queue and are not reported. In the timed image each row holds the value of
    the MTE3 copy that *completed last in simulated time*. For rows 5 (q 13 on core 0, q 41 and
    43 on core 1) and 7 (q 12 / q 37) core 0's write lands last, so the timed result differs
    from the functional image (which, recording core 0 before core 1, applies "last q in flat
    order wins", the golden's rule) and a ``timed_differs`` hazard is reported as well.
    """
    outs, res, inp = run_case("indices_duplicates", platform=P2)
    assert hazard_kinds(res)["race"] > 0
    assert all("GM 'permuted_tokens_grad'" in h.message
               for h in res.hazards if h.kind == "race")
    grad, idx, probs = inp["unpermuted_tokens_grad"], inp["sorted_indices"], inp["probs"]
    N, H = grad.shape
    K = idx.size // N
    t = grad.dtype.itemsize
    # map each executed MTE3 row write to its flat position q (program order per core)
    trace = res.trace
    per_row: dict[int, list[tuple[int, int]]] = {}  # row -> [(end time, q)]
    for ct in trace.cores:
        first_q = ct.core * (N // 2) * K  # 16 tokens on 2 cores: 8 tokens each
        writes = [i for i, ins in enumerate(ct.stream) if ins.op is Opcode.COPY_UB_TO_GM
                  and ins.dst.buf == "permuted_tokens_grad"]
        qs = [q for q in range(first_q, first_q + (N // 2) * K)]  # all accepted (no window)
        assert len(writes) == len(qs)
        for i, q in zip(writes, qs):
            row = ct.stream[i].dst.addr // (H * t)
            assert row == idx[q]
            per_row.setdefault(row, []).append((trace.time_of(ct.core, i)[1], q))
    dup_rows = [r for r, w in per_row.items() if len(w) > 1]
    assert dup_rows
    out = outs["permuted_tokens_grad"]
    exp_ptg, _ = golden(grad, idx, inp["permuted_tokens"], probs, start=0, end=idx.size,
                        num_out_tokens=idx.size, hidden_chunk=chunk_of(res))
    flat_order_rule = np.array_equal(bits(out), bits(exp_ptg))
    assert (hazard_kinds(res)["timed_differs"] > 0) == (not flat_order_rule)
    for row in dup_rows:
        last_end = max(e for e, _ in per_row[row])
        winners = [q for e, q in per_row[row] if e == last_end]
        values = [(grad[q // K].astype(np.float32) * probs.reshape(-1)[q]).astype(grad.dtype)
                  for q in winners]
        assert any(np.array_equal(bits(out[row]), bits(v)) for v in values)


def test_untouched_rows_keep_preallocated_content():
    """Rows outside the window (and rows whose index was replaced) are never written."""
    N, K, H = 6, 2, 48
    T = N * K
    idx = np.random.default_rng(3).permutation(T).astype(np.int32)
    idx[[0, 5]] = [-2, 40]  # two positions outside any window
    for prob in (None, BF16):
        inp = make(N, K, H, BF16, prob, seed=4, indices=idx)
        init = np.random.default_rng(5).uniform(-9, 9, (T, H)).astype(np.float32).astype(BF16)
        out, res = run(inp, P2, (2, 9), init=init)
        exp_ptg, _ = expected(inp, (2, 9), chunk_of(res), init=init)
        assert np.array_equal(bits(out["permuted_tokens_grad"]), bits(exp_ptg))
        written = {int(v) - 2 for v in idx if 2 <= v < 9}
        for r in range(T):
            if r not in written:
                assert np.array_equal(bits(out["permuted_tokens_grad"][r]), bits(init[r]))


# --------------------------------------------------------------------------------------------
# instruction sequence of one path-B group, event ids
# --------------------------------------------------------------------------------------------


def group_slice(stream) -> list:
    """Instructions of the first permuted-row group: from the V->MTE2 wait on id 7 to the
    V->MTE2 set on id 7 that frees the slot (both inclusive)."""
    start = next(i for i, ins in enumerate(stream) if ins.op is Opcode.WAIT_FLAG
                 and ins.event is HardEvent.V_MTE2 and ins.event_id == 7)
    end = next(i for i in range(start + 1, len(stream)) if stream[i].op is Opcode.SET_FLAG
               and stream[i].event is HardEvent.V_MTE2 and stream[i].event_id == 7)
    return stream[start : end + 1]


def test_path_b_group_instruction_counts_bf16():
    """N 1, K 2, H 64, bf16 tokens and probs, 1 core: hA 256, R 2 (one group), both accepted.

    Per group: WaitFlag V_MTE2(7), PipeBarrier, 2 row copies, PipeBarrier, SetFlag/WaitFlag
    MTE2_V(7); per expert (x2): Muls, WaitFlag MTE3_V, Cast RINT, SetFlag V_MTE3,
    WaitFlag V_MTE3, UB->GM copy, SetFlag MTE3_V, Cast up, Mul, ReduceSumFunc(64) = fold Add
    (count 64 - 64 = 0) + BlockReduceSum(rep 1) + WholeReduceSum(mask 8); then SetFlag V_MTE2(7).
    Waits 1 + 1 + 2x2 = 6, sets 1 + 2x2 + 1 = 6, 32 instructions in all.
    """
    inp = make(1, 2, 64, BF16, BF16, indices=np.array([1, 0], np.int32))
    _, res = run(inp, P1, mode="functional")
    g = group_slice(res.program.streams[0])
    counts = Counter(ins.op for ins in g)
    assert counts == {
        Opcode.WAIT_FLAG: 6, Opcode.SET_FLAG: 6, Opcode.BARRIER: 2, Opcode.COPY_GM_TO_UB: 2,
        Opcode.COPY_UB_TO_GM: 2, Opcode.MULS: 2, Opcode.CAST: 4, Opcode.MUL: 2, Opcode.ADD: 2,
        Opcode.BLOCK_REDUCE_SUM: 2, Opcode.WHOLE_REDUCE_SUM: 2,
    }
    assert len(g) == 32
    assert [ins.barrier for ins in g if ins.op is Opcode.BARRIER] == [Pipe.VECTOR] * 2
    folds = [ins for ins in g if ins.op is Opcode.ADD]
    assert [ins.count for ins in folds] == [0, 0]
    assert [ins.mask for ins in g if ins.op is Opcode.WHOLE_REDUCE_SUM] == [8, 8]


def test_path_b_group_instruction_counts_fp32_with_rejected_row():
    """N 1, K 2, H 64, fp32 / fp32, indices [1, 7] (7 >= T: rejected), 1 core.

    hA = up(64, 128) = 128, so each fp32 Copy pair is (mask 64, repeat 2) + (mask 0, repeat 1).
    Accepted expert: row copy, Muls, 2 + 2 Copies, UB->GM copy. Rejected expert: Duplicate of
    its row (OriT, count hA), Duplicate of pg32, 2 + 2 Copies, no UB->GM copy. Both reduce:
    Mul, fold Add (count 0), BlockReduceSum, WholeReduceSum. Copies 8, of which 4 with mask 0.
    """
    inp = make(1, 2, 64, FP32, FP32, indices=np.array([1, 7], np.int32))
    _, res = run(inp, P1, mode="functional")
    g = group_slice(res.program.streams[0])
    counts = Counter(ins.op for ins in g)
    assert counts[Opcode.COPY_GM_TO_UB] == 1
    assert counts[Opcode.COPY_UB_TO_GM] == 1
    assert counts[Opcode.DUPLICATE] == 2
    assert counts[Opcode.MULS] == 1
    assert counts[Opcode.COPY] == 8
    assert sorted((c.mask, c.repeat) for c in g if c.op is Opcode.COPY) == \
        [(0, 1)] * 4 + [(64, 2)] * 4
    assert counts[Opcode.CAST] == 0
    assert counts[Opcode.WAIT_FLAG] == 6 and counts[Opcode.SET_FLAG] == 6


def flag_ids(stream, implicit: bool | None = None) -> dict[tuple[Opcode, HardEvent], set[int]]:
    out: dict[tuple[Opcode, HardEvent], set[int]] = {}
    for ins in stream:
        if ins.op in (Opcode.SET_FLAG, Opcode.WAIT_FLAG):
            if implicit is None or ins.implicit == implicit:
                out.setdefault((ins.op, ins.event), set()).add(ins.event_id)
    return out


def test_path_a_implicit_tque_event_ids():
    """Spec §5.3: MTE2->V id 0, MTE2->MTE3 id 0, MTE3->MTE2 ids 0/1, V->MTE2 ids 0/1.

    tiny UB (8192), bf16, K 1, H 512, 20 tokens on 1 core: hA 240 (3 chunks), E 8 (3 loops),
    so both buffers of each queue are reused.
    """
    inp = make(20, 1, 512, BF16, None)
    _, res = run(inp, TINY1, mode="functional")
    stream = res.program.streams[0]
    ids = flag_ids(stream)
    S, W = Opcode.SET_FLAG, Opcode.WAIT_FLAG
    assert ids == {
        (S, HardEvent.MTE2_V): {0}, (W, HardEvent.MTE2_V): {0},
        (S, HardEvent.MTE2_MTE3): {0}, (W, HardEvent.MTE2_MTE3): {0},
        (S, HardEvent.MTE3_MTE2): {0, 1}, (W, HardEvent.MTE3_MTE2): {0, 1},
        (S, HardEvent.V_MTE2): {0, 1}, (W, HardEvent.V_MTE2): {0, 1},
    }
    assert all(ins.implicit for ins in stream if ins.op in (S, W))
    # no vector instruction in path A; the V pipe only relays the row-id queue's flags
    assert not [ins for ins in stream if ins.pipe is Pipe.VECTOR
                and ins.op not in (S, W, Opcode.BARRIER)]
    names = [a.name for a in res.program.allocations[0]]
    assert names == ["inQueueRowIdMap[0]", "inQueueRowIdMap[1]", "inOutque[0]", "inOutque[1]"]


def test_path_b_hard_coded_event_ids():
    """Spec §6.2: probs 3/2, grad 5/4, rows 7/6, both outputs MTE3<->V 1/0, V->MTE2 0/1 only
    set at start and waited at end; slot 0 uses the odd id. 130 tokens x K 2 on 1 core:
    E 256, so 2 outer loops and every slot is used twice."""
    inp = make(130, 2, 16, BF16, BF16)
    _, res = run(inp, P1, mode="functional")
    stream = res.program.streams[0]
    assert not any(ins.implicit for ins in stream)
    S, W = Opcode.SET_FLAG, Opcode.WAIT_FLAG
    ids = flag_ids(stream)
    assert ids == {
        (S, HardEvent.V_MTE2): set(range(8)), (W, HardEvent.V_MTE2): set(range(8)),
        (S, HardEvent.MTE2_V): set(range(2, 8)), (W, HardEvent.MTE2_V): set(range(2, 8)),
        (S, HardEvent.MTE3_V): {0, 1}, (W, HardEvent.MTE3_V): {0, 1},
        (S, HardEvent.V_MTE3): {0, 1}, (W, HardEvent.V_MTE3): {0, 1},
    }
    v_mte2_waits = [ins.event_id for ins in stream if ins.op is W
                    and ins.event is HardEvent.V_MTE2]
    # first waits: probs slot 0 (3), grad slot 0 (5), rows slot 0 (7), grad slot 1 (4) ...
    assert v_mte2_waits[:4] == [3, 5, 7, 4]
    assert v_mte2_waits[-8:] == list(range(8))  # the final drain
    sets = [(ins.event, ins.event_id) for ins in stream if ins.op is S]
    assert sets[:10] == [(HardEvent.V_MTE2, i) for i in range(8)] + \
        [(HardEvent.MTE3_V, 0), (HardEvent.MTE3_V, 1)]
    # ids 0/1 of V->MTE2 appear only in the initial sets and the final waits
    uses = [i for i, ins in enumerate(stream) if ins.event is HardEvent.V_MTE2
            and ins.event_id in (0, 1)]
    assert len(uses) == 4
    # MTE3->V waits of the rows and of probs_grad share ids 1 / 0
    first_pg_wait = next(i for i, ins in enumerate(stream) if ins.op is Opcode.CAST
                         and ins.dst.buf == "outQueueProbGrad")
    prev_wait = [ins for ins in stream[:first_pg_wait] if ins.op is W
                 and ins.event is HardEvent.MTE3_V][-1]
    assert prev_wait.event_id == 1  # probs_grad slot 0 -> id 1


# --------------------------------------------------------------------------------------------
# removing flag pairs: the checker must notice
# --------------------------------------------------------------------------------------------

# Used pairs of path B. V->MTE2 ids 0/1 are never used (set at start, waited at end, spec
# §9 #13). V->MTE2 ids 2/3 (probs slots) are used but redundant in this model: the scalar unit
# reads prob32 right after the probs Cast (compiler auto-sync, spec §4.6), so everything V did
# in earlier outer loops has completed before the next probs copy is even issued; removing them
# is (correctly) reported as nothing - see test_redundant_or_unused_pairs.
USED_PAIRS = (
    [(HardEvent.V_MTE2, i) for i in (4, 5, 6, 7)]
    + [(HardEvent.MTE2_V, i) for i in (2, 3, 4, 5, 6, 7)]
    + [(HardEvent.MTE3_V, i) for i in (0, 1)]
    + [(HardEvent.V_MTE3, i) for i in (0, 1)]
)


def run_without(monkeypatch, pair: tuple[HardEvent, int]):
    """Path B with every SetFlag and WaitFlag of ``pair`` dropped (port left untouched).

    130 tokens x K 2 x H 16, bf16, 1 core: R = K = 2 (one group per token), E 256 (2 outer
    loops, 128 tokens each), so every slot of every buffer is reused within a loop."""
    def set_flag(event, eid, **kw):
        if (event, eid) != pair:
            ascendc.SetFlag(event, eid, **kw)

    def wait_flag(event, eid, **kw):
        if (event, eid) != pair:
            ascendc.WaitFlag(event, eid, **kw)

    monkeypatch.setattr(kernel_prob_not_none, "SetFlag", set_flag)
    monkeypatch.setattr(kernel_prob_not_none, "WaitFlag", wait_flag)
    inp = make(130, 2, 16, BF16, BF16, seed=1)
    _, res = run(inp, P1)
    return res


@pytest.mark.parametrize("pair", USED_PAIRS, ids=[f"{e.name}-{i}" for e, i in USED_PAIRS])
def test_removed_flag_pair_is_reported(monkeypatch, pair):
    res = run_without(monkeypatch, pair)
    kinds = hazard_kinds(res)
    assert kinds["race"] or kinds["timed_differs"], kinds


@pytest.mark.parametrize("pair", [(HardEvent.V_MTE2, i) for i in range(4)],
                         ids=[f"V_MTE2-{i}" for i in range(4)])
def test_redundant_or_unused_pairs(monkeypatch, pair):
    """Observed: dropping V->MTE2 0/1 (unused) or 2/3 (covered by the V->S auto-sync wait of
    the prob32 scalar reads) changes nothing and is reported as nothing."""
    res = run_without(monkeypatch, pair)
    assert not res.hazards, [str(h) for h in res.hazards]


def test_normal_run_has_no_hazards():
    """No ``pending_flag``, ``double_set`` or ``race`` on an ordinary run of either path."""
    for prob in (None, BF16):
        _, res = run(make(130, 2, 16, BF16, prob, seed=1), P1)
        assert not res.hazards, [str(h) for h in res.hazards]

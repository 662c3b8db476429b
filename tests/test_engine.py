"""Exact-cycle tests of the record pass + SimPy replay on the ``tiny`` platform.

``tiny`` (aicore_sim/data/platforms/tiny.toml): 1000 MHz, 2 cores, queue depth 4, shared
HBM 1 B/cycle for the whole chip, copies 100 + bytes cycles alone, vector calls
10 + n/8 cycles, issue cost 1 cycle per call, SetFlag / WaitFlag / PipeBarrier 1 cycle,
op head 0.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from aicore_sim.sim.errors import DeadlockError, OutOfBoundsError, UBOverflowError
from aicore_sim.sim.isa import Opcode, Pipe
from aicore_sim.sim.launch import FORCE_TIMED_REPLAY, launch
from tests import kernels
from tests.conftest import TINY


def _rows(result, core=0):
    """(description, start, end) of each executed instruction of a core, in stream order."""
    ct = result.trace.cores[core]
    order = np.argsort(ct.index, kind="stable")
    return [(ct.stream[int(ct.index[r])].describe(), int(ct.start[r]), int(ct.end[r]))
            for r in order]


def _copy_in(n=256, cores=1, **kw):
    x = np.arange(cores * n, dtype=np.float32)
    return launch(kernels.copy_in, ["x", "y", dict(n=n, **kw)], {"x": x, "y": np.zeros_like(x)},
                  {"y": (np.float32, (cores * n,))}, TINY, block_dim=cores), x


def test_one_copy_exact_cycles():
    r, x = _copy_in()
    assert _rows(r) == [
        # issued at 1 (1 cycle issue); 1024 B alone: max(100 + 1024, 1024 / 1 B/cycle) = 1124
        ("MTE2 DataCopyPad.GM2UB x@0->buf@0 1024B", 1, 1125),
        ("MTE2 SetFlag<MTE2_MTE3>(0)", 1125, 1126),  # fires after the copy, 1 cycle
        ("MTE3 WaitFlag<MTE2_MTE3>(0)", 1126, 1127),  # released at 1126, 1 cycle
        ("MTE3 DataCopyPad.UB2GM buf@0->y@0 1024B", 1127, 2251),  # 100 + 1024
        ("SCALAR PipeBarrier<PIPE_ALL>", 2251, 2252),  # TPipe teardown waits for MTE3
    ]
    assert r.cycles == 2252
    assert np.array_equal(r.outputs["y"], x)
    assert r.hazards == []


def test_copy_flag_cast_exact_cycles():
    x = (np.arange(64) / 3).astype(np.float16)
    r = launch(kernels.copy_cast, ["x", "y", {"n": 64}], {"x": x, "y": np.zeros(64, np.float32)},
               {"y": (np.float32, (64,))}, TINY, block_dim=1)
    assert [(d.split()[0], d.split()[1], s, e) for d, s, e in _rows(r)] == [
        ("MTE2", "DataCopyPad.GM2UB", 1, 229),  # 100 + 128 B
        ("MTE2", "SetFlag<MTE2_V>(0)", 229, 230),
        ("VECTOR", "WaitFlag<MTE2_V>(0)", 230, 231),
        ("VECTOR", "Cast", 231, 249),  # 10 + 64 / 8
        ("VECTOR", "SetFlag<V_MTE3>(0)", 249, 250),
        ("MTE3", "WaitFlag<V_MTE3>(0)", 250, 251),
        ("MTE3", "DataCopyPad.UB2GM", 251, 607),  # 100 + 256 B
        ("SCALAR", "PipeBarrier<PIPE_ALL>", 607, 608),
    ]
    assert np.array_equal(r.outputs["y"], x.astype(np.float32))


def test_double_buffering_overlaps_mte2_with_vector():
    x = np.arange(256, dtype=np.float32)
    r = launch(kernels.double_buffer, ["x", "y", {"n": 64, "loops": 4}],
               {"x": x, "y": np.zeros_like(x)}, {"y": (np.float32, (256,))}, TINY, block_dim=1)
    rows = _rows(r)
    copies_in = [(s, e) for d, s, e in rows if "GM2UB" in d]
    muls = [(s, e) for d, s, e in rows if "Muls" in d]
    # slot 0: copy [1, 357) = 100 + 256 B; its Muls runs [359, 377) (10 + 64/8) after the
    # implicit SetFlag/WaitFlag<MTE2_V>. The slot-1 copy starts at 358, right after the
    # slot-0 SetFlag, so it overlaps the slot-0 Muls.
    assert copies_in[0] == (1, 357)
    assert muls[0] == (359, 377)
    assert copies_in[1][0] == 358 < muls[0][1]
    assert copies_in[1][1] > muls[0][0]
    assert np.array_equal(r.outputs["y"], 2 * x)
    assert r.hazards == []
    # the TQue implicit flags use the lowest free id: MTE2->V always id 0 (released at DeQue)
    ct = r.trace.cores[0]
    ids = {(i.event.name, i.event_id) for i in ct.stream if i.op is Opcode.SET_FLAG}
    assert ids == {("MTE2_V", 0), ("V_MTE2", 0), ("V_MTE2", 1), ("V_MTE3", 0),
                   ("MTE3_V", 0), ("MTE3_V", 1)}


@pytest.mark.parametrize("mode", ["timed", "timing-only"])
def test_full_queue_stalls_the_issuer(mode):
    r = launch(kernels.many_vector, [None, None, {"n": 64, "k": 10}], {}, {}, TINY, block_dim=1,
               mode=mode)
    stalls = [(a, b, cause) for p, a, b, cause, _ in r.trace.cores[0].stalls if p == Pipe.SCALAR]
    # Muls are 18 cycles (10 + 64/8). Muls #0..#4 issue at 1..5; at 6 the queue holds #1..#4
    # (depth 4), so the issuer waits until VECTOR takes #1 at 19, then every 18 cycles.
    assert stalls[:5] == [(6, 19, "queue_full"), (20, 37, "queue_full"),
                          (38, 55, "queue_full"), (56, 73, "queue_full"),
                          (74, 91, "queue_full")]
    # ten Muls back to back: 1 + 10 * 18 = 181, then two PIPE_ALL barriers of 1 cycle
    assert r.cycles == 183


def test_two_cores_share_gm_bandwidth():
    r, x = _copy_in(cores=2)
    for core in (0, 1):
        rows = _rows(r, core)
        # both 1024 B copies start at 1 and share 1 B/cycle: 0.5 B/cycle each, so the drain
        # takes 2048 cycles, longer than the 1124-cycle single-core time
        assert rows[0][1:] == (1, 2049)
        assert rows[3][1:] == (2051, 4099)
    stalls = [s for s in r.trace.cores[0].stalls if s[3] == "gm_bandwidth"]
    assert [(a, b) for _, a, b, _, _ in stalls] == [(1125, 2049), (3175, 4099)]
    assert r.cycles == 4100
    assert np.array_equal(r.outputs["y"], x)


def test_auto_sync_scalar_read_waits_for_producer():
    x = np.arange(8, dtype=np.int32) + 10
    r = launch(kernels.scalar_read, ["x", "y", {}], {"x": x, "y": np.zeros_like(x)},
               {"y": (np.int32, (8,))}, TINY, block_dim=1)
    rows = _rows(r)
    assert rows[0][1:] == (1, 133)  # 100 + 32 B
    assert rows[1] == ("SCALAR GetValue.UB ids@12-> 4B", 133, 134)  # waits for the copy
    stall = [s for s in r.trace.cores[0].stalls if s[3] == "auto_sync"]
    assert [(a, b, what) for _, a, b, _, what in stall] == [(1, 133, "MTE2 instruction #0")]
    assert r.outputs["y"].tolist() == [13, 11, 12, 13, 14, 15, 16, 17]
    assert r.hazards == []


@pytest.mark.parametrize("removed", ["wait_mte2_v", "wait_v_mte3"])
def test_removed_waitflag_gives_wrong_timed_output_and_a_race(removed):
    x = (np.arange(64) / 3).astype(np.float16)
    r = launch(kernels.copy_cast, ["x", "y", {"n": 64, removed: False}],
               {"x": x, "y": np.zeros(64, np.float32)}, {"y": (np.float32, (64,))}, TINY,
               block_dim=1)
    kinds = [h.kind for h in r.hazards]
    assert "timed_differs" in kinds
    race = r.hazards_of("race")[0]
    producer, consumer = ("GM2UB", "Cast") if removed == "wait_mte2_v" else ("Cast", "UB2GM")
    assert producer in race.message and consumer in race.message
    assert len(race.instrs) == 2
    functional = x.astype(np.float32)
    assert not np.array_equal(r.outputs["y"], functional)
    f = launch(kernels.copy_cast, ["x", "y", {"n": 64, removed: False}],
               {"x": x, "y": np.zeros(64, np.float32)}, {"y": (np.float32, (64,))}, TINY,
               block_dim=1, mode="functional")
    assert np.array_equal(f.outputs["y"], functional)


def test_removed_sync_between_copies_is_a_race():
    r, _ = _copy_in(sync=False)
    assert [h.kind for h in r.hazards] == ["race", "timed_differs"]


def test_waitflag_without_setflag_is_named_at_once():
    t0 = time.perf_counter()
    with pytest.raises(DeadlockError,
                       match=r"core0.veccore0, pipe VECTOR waits HardEvent MTE2_V id 0"):
        launch(kernels.wait_without_set, [None, None, {}], {}, {}, TINY)
    assert time.perf_counter() - t0 < 1.0


def test_circular_wait_is_a_named_deadlock():
    with pytest.raises(DeadlockError, match=r"core0.veccore0, pipe (VECTOR|MTE2) waits HardEvent"):
        launch(kernels.circular_wait, [None, None, {}], {}, {}, TINY, block_dim=1)


def test_flag_pending_at_kernel_end_is_reported():
    r = launch(kernels.set_without_wait, [None, None, {}], {}, {}, TINY, block_dim=1)
    assert [str(h) for h in r.hazards] == [
        "[pending_flag] core0.veccore0: #0 VECTOR SetFlag<V_MTE2>(0) is still set at kernel end"]


def test_initbuffer_past_ub_names_buffer_bytes_asked_and_left():
    # tiny: 8448 B UB - 256 reserved = 8192 usable; 6000 rounds to 6016, 2176 left
    with pytest.raises(UBOverflowError, match=r"'bigger': asks 4000 bytes .* only 2176 bytes "
                                              r"left of 8192 \(used 6016\)"):
        launch(kernels.ub_overflow, [None, None, {}], {}, {}, TINY, block_dim=1)


def test_access_past_buffer_is_out_of_bounds():
    with pytest.raises(OutOfBoundsError, match=r"Muls dst: .*\[0, 128\) but buffer 'small' "
                                               r"ends at 64"):
        launch(kernels.past_buffer, [None, None, {}], {}, {}, TINY, block_dim=1)


def test_misaligned_ub_address_is_a_hazard():
    r = launch(kernels.misaligned_copy, ["x", None, {}], {"x": np.zeros(8, np.float32)}, {}, TINY,
               block_dim=1)
    assert [h.kind for h in r.hazards] == ["misaligned"]
    assert "UB address 4 is not 32-byte aligned" in r.hazards[0].message


def test_gm_out_of_bounds_copy_is_named():
    with pytest.raises(OutOfBoundsError, match=r"GM bytes \[0, 1024\) outside tensor 'x' of "
                                               r"512 bytes"):
        launch(kernels.copy_in, ["x", "y", {"n": 256}], {"x": np.zeros(128, np.float32),
                                                    "y": np.zeros(256, np.float32)}, {}, TINY,
               block_dim=1)


def test_timed_image_proof_matches_a_replay_with_effects(monkeypatch):
    # a correctly synchronised kernel on one core: the race analysis proves the timed image
    # equal to the functional one, and a forced replay with effects gives the same bytes
    x = np.arange(512, dtype=np.float32)
    args = (kernels.double_buffer, ["x", "y", {"n": 64, "loops": 8}],
            {"x": x, "y": np.zeros_like(x)}, {"y": (np.float32, (512,))}, TINY, 1)
    proved = launch(*args)
    assert "timed_replay" not in proved.wall
    monkeypatch.setenv(FORCE_TIMED_REPLAY, "1")
    replayed = launch(*args)
    assert "timed_replay" in replayed.wall
    assert np.array_equal(proved.outputs["y"], replayed.outputs["y"])
    assert replayed.hazards == []


def test_two_cores_writing_the_same_gm_rows_is_a_race():
    # double_buffer does not offset its GM windows by core: both cores write all of y
    x = np.arange(512, dtype=np.float32)
    r = launch(kernels.double_buffer, ["x", "y", {"n": 64, "loops": 8}],
               {"x": x, "y": np.zeros_like(x)}, {"y": (np.float32, (512,))}, TINY)
    race = r.hazards_of("race")[0]
    assert "core0.veccore0" in race.message and "core1.veccore0" in race.message
    assert "timed_replay" in r.wall  # not provably ordered: the timed image was recomputed


@pytest.mark.parametrize("mode", ["timed", "timing-only"])
def test_two_runs_give_identical_traces_and_outputs(mode):
    def run():
        x = np.arange(512, dtype=np.float32)
        return launch(kernels.double_buffer, ["x", "y", {"n": 64, "loops": 8}],
                      {"x": x, "y": np.zeros_like(x)}, {"y": (np.float32, (512,))}, TINY,
                      mode=mode)

    a, b = run(), run()
    for ca, cb in zip(a.trace.cores, b.trace.cores):
        for field in ("index", "start", "end", "scalar_spans", "releases"):
            assert np.array_equal(getattr(ca, field), getattr(cb, field))
        assert ca.stalls == cb.stalls
    if mode == "timed":
        assert np.array_equal(a.outputs["y"], b.outputs["y"])
    else:  # timing-only computes no numbers, so it has no outputs to return
        assert a.outputs == b.outputs == {}


def test_timing_only_and_timed_agree_on_time():
    x = np.arange(512, dtype=np.float32)
    args = (kernels.double_buffer, ["x", "y", {"n": 64, "loops": 8}],
            {"x": x, "y": np.zeros_like(x)}, {"y": (np.float32, (512,))}, TINY)
    timed, only = launch(*args, mode="timed"), launch(*args, mode="timing-only")
    assert timed.cycles == only.cycles
    for ca, cb in zip(timed.trace.cores, only.trace.cores):
        assert np.array_equal(ca.start, cb.start) and np.array_equal(ca.end, cb.end)


def test_events_of_one_pipe_never_overlap():
    x = np.arange(512, dtype=np.float32)
    r = launch(kernels.double_buffer, ["x", "y", {"n": 64, "loops": 8}],
               {"x": x, "y": np.zeros_like(x)}, {"y": (np.float32, (512,))}, TINY)
    for ct in r.trace.cores:
        for p in (Pipe.VECTOR, Pipe.MTE2, Pipe.MTE3):
            rows = ct.rows(p)
            s, e = ct.start[rows], ct.end[rows]
            assert np.all(s[1:] >= e[:-1])
            assert np.all(e >= s)


def test_prepared_costs_are_shared_only_where_they_are_equal():
    # a sweep replays one record on several platforms: the per-instruction costs depend on the
    # cost tables and the clock only, so an HBM what-if reuses them and a clock what-if not
    from aicore_sim.sim import engine

    x = np.arange(512, dtype=np.float32)
    r = launch(kernels.double_buffer, ["x", "y", {"n": 64, "loops": 8}],
               {"x": x, "y": np.zeros_like(x)}, {"y": (np.float32, (512,))}, TINY,
               mode="timing-only")
    streams, allocs = r.program.streams, r.program.allocations
    prepared: dict = {}
    for plat in (TINY.with_overrides(hbm_bytes_per_cycle=TINY.hbm_bytes_per_cycle / 4),
                 TINY, TINY.with_overrides(clock_mhz=TINY.clock_mhz * 2)):
        fresh = engine.replay(streams, plat, None, allocs)
        reused = engine.replay(streams, plat, None, allocs, prepared)
        for a, b in zip(fresh.cores, reused.cores):
            for name in ("index", "start", "end", "stall_rows", "releases", "scalar_spans"):
                assert np.array_equal(getattr(a, name), getattr(b, name))
    assert len(prepared) == 2  # (costs, 1x clock) shared by the two HBM variants; 2x clock

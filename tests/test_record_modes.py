"""The record pass two ways (with numerics / timing-only) and on several processes (jobs).

Timing-only records the kernel's control flow without vector arithmetic; for the bundled
operator its instruction streams, trace and makespan must be those of timed mode, and a port
that branches on a computed value must be caught by the stream check. ``jobs`` must never
change a result.
"""

from __future__ import annotations

import numpy as np
import pytest

from aicore_sim.export.perfetto import read_trace, write_trace
from aicore_sim.sim import parallel, program
from aicore_sim.sim.errors import UBOverflowError
from aicore_sim.sim.isa import Instr, Opcode, Operand, Pipe, Space
from aicore_sim.sim.launch import launch
from aicore_sim.views.summary import summarize
from op_models.moe_token_unpermute_with_ep_grad import run_case
from tests import kernels
from tests.conftest import TINY

TRACE_ARRAYS = ("index", "start", "end", "pipe", "scalar_spans", "releases", "stall_rows")

# cases covering both paths, the fp32 Copy and the 16-bit Cast of probs, a range window,
# a split hidden size and idle cores
BUNDLED = ["tiny", "hidden_100", "hidden_40_mask", "range_end", "range_end_noprobs",
           "few_tokens", "hidden_split_fp32"]


def _same_traces(a, b) -> None:
    assert len(a.cores) == len(b.cores)
    for ca, cb in zip(a.cores, b.cores):
        for name in TRACE_ARRAYS:
            assert np.array_equal(getattr(ca, name), getattr(cb, name))
        assert ca.stalls == cb.stalls
        assert ca.double_sets == cb.double_sets


@pytest.mark.parametrize("case", BUNDLED)
def test_timing_only_gives_the_timed_streams_trace_and_makespan(case, tmp_path) -> None:
    _, timed, _ = run_case(case, mode="timed")
    _, only, _ = run_case(case, mode="timing-only")
    assert program.stream_difference(timed.program.streams, only.program.streams) is None
    assert only.cycles == timed.cycles
    _same_traces(timed.trace, only.trace)
    ta = write_trace(timed.trace, tmp_path / "a.json")
    tb = write_trace(only.trace, tmp_path / "b.json")
    assert read_trace(ta.path) == read_trace(tb.path)
    assert only.outputs == {}  # nothing computed, nothing returned
    assert timed.outputs


def test_timing_only_skips_vector_arithmetic_but_moves_inputs() -> None:
    # x[0] = 3: the kernel issues int(x[0]) Muls; the count is an input brought in by MTE2,
    # so timing-only sees it too: copy, GetValue, 3 Muls, the kernel-end barrier.
    x = np.array([3, 0, 0, 0, 0, 0, 0, 0], np.float32)
    r = launch(kernels.branch_on_input, ["x", None, {}], {"x": x}, {}, TINY, block_dim=1,
               mode="timing-only", check_streams=True)
    ops = [i.op for i in r.program.streams[0]]
    assert ops == [Opcode.COPY_GM_TO_UB, Opcode.GET_VALUE_UB, *[Opcode.MULS] * 3,
                   Opcode.BARRIER]
    assert r.hazards_of("stream_differs") == []
    # the Muls were not executed: the functional UB still holds x (3.0), not 3 * 2**3 = 24
    ub = r.program.functional.ub[0]
    assert ub[:4].view(np.float32)[0] == 3.0


def test_stream_check_names_a_branch_on_a_computed_value() -> None:
    # branch_on_product: copy(#0) SetFlag(#1) WaitFlag(#2) Muls(#3) GetValue(#4), then with
    # numerics 2 * 1.5 > 0 issues one more Muls (#5); timing-only read 0 (the Muls was not
    # computed) and went straight to the kernel-end barrier: the streams part at #5.
    x = np.full(8, 1.5, np.float32)
    for mode in ("timing-only", "timed"):
        r = launch(kernels.branch_on_product, ["x", None, {}], {"x": x}, {}, TINY,
                   block_dim=1, mode=mode, check_streams=True)
        (h,) = r.hazards_of("stream_differs")
        assert h.instrs == ((0, 5),)
        assert "#5" in h.message
        assert "(VECTOR Muls twice@" in h.message and "(SCALAR PipeBarrier<PIPE_ALL>)" in h.message
    # without the check nothing is said (the check costs a second record)
    r = launch(kernels.branch_on_product, ["x", None, {}], {"x": x}, {}, TINY, block_dim=1,
               mode="timing-only")
    assert r.hazards == []


def test_stream_difference_ignores_scalar_operands_only() -> None:
    ub = Operand(Space.UB, "b", 0, 32, np.dtype(np.float32))
    a = Instr(Pipe.VECTOR, Opcode.MULS, dst=ub, src=(ub,), count=8, scalar=2.0)
    assert program.stream_difference([[a]], [[a._replace(scalar=0.0)]]) is None
    assert program.stream_difference([[a]], [[a._replace(count=16)]])[:2] == (0, 0)
    assert program.stream_difference([[a, a]], [[a]]) == (0, 1, a, None)


# --- jobs -------------------------------------------------------------------------------------


def _summary(r) -> dict:
    s = summarize(r)
    s.pop("wall_seconds")
    return s


@pytest.mark.skipif(not parallel.available(), reason="needs fork")
@pytest.mark.parametrize("case", ["tiny", "hidden_100", "indices_duplicates",
                                  "few_tokens_noprobs"])
@pytest.mark.parametrize("mode", ["timed", "timing-only"])
def test_jobs_do_not_change_outputs_traces_or_summaries(case, mode) -> None:
    # indices_duplicates has cores writing the same output rows (all inside the first range
    # of cores: the ranges themselves do not overlap)
    _, one, _ = run_case(case, mode=mode, jobs=1)
    _, two, _ = run_case(case, mode=mode, jobs=2)
    _, three, _ = run_case(case, mode=mode, jobs=3)
    assert (two.program.jobs, three.program.jobs) == (2, 3)
    for other in (two, three):
        assert other.program.streams == one.program.streams
        assert other.program.allocations == one.program.allocations
        assert sorted(one.outputs) == sorted(other.outputs)
        for k in one.outputs:
            assert one.outputs[k].tobytes() == other.outputs[k].tobytes()
        _same_traces(one.trace, other.trace)
        assert _summary(other) == _summary(one)
        assert [str(h) for h in other.hazards] == [str(h) for h in one.hazards]


@pytest.mark.skipif(not parallel.available(), reason="needs fork")
def test_two_ranges_writing_the_same_bytes_record_again_serially() -> None:
    # double_buffer does not offset its GM windows by core: cores 0 and 1 both write all of
    # y, in serial order core 1 last; with two jobs the ranges [0] and [1] overlap, so the
    # launch is recorded again in one process and core 1's bytes win as in serial
    x = np.arange(512, dtype=np.float32)

    def run(jobs):
        return launch(kernels.double_buffer, ["x", "y", {"n": 64, "loops": 8}],
                      {"x": x, "y": np.zeros_like(x)}, {"y": (np.float32, (512,))}, TINY,
                      block_dim=2, jobs=jobs)

    one, two = run(1), run(2)
    assert two.program.jobs == 1
    assert one.outputs["y"].tobytes() == two.outputs["y"].tobytes()
    assert [str(h) for h in two.hazards] == [str(h) for h in one.hazards]
    assert two.hazards_of("race")


def test_overlapping_output_writes_of_two_ranges_are_conflicts() -> None:
    def copy_out(addr: int, n: int) -> Instr:
        ub = Operand(Space.UB, "b", 0, n, np.dtype(np.uint8))
        gm = Operand(Space.GM, "y", addr, n, np.dtype(np.uint8))
        return Instr(Pipe.MTE3, Opcode.COPY_UB_TO_GM, dst=gm, src=(ub,), nbytes=n)

    def copy_in(name: str, addr: int, n: int) -> Instr:
        ub = Operand(Space.UB, "b", 0, n, np.dtype(np.uint8))
        gm = Operand(Space.GM, name, addr, n, np.dtype(np.uint8))
        return Instr(Pipe.MTE2, Opcode.COPY_GM_TO_UB, dst=ub, src=(gm,), nbytes=n)

    out = frozenset({"y"})
    # writes [0, 64) and [64, 128): adjacent, not overlapping
    assert not parallel.conflicts([[[copy_out(0, 64)]], [[copy_out(64, 64)]]], out)
    # [0, 64) and [63, 127) share byte 63
    assert parallel.conflicts([[[copy_out(0, 64)]], [[copy_out(63, 64)]]], out)
    # a read of bytes another range writes, and reads of an input that both share
    assert parallel.conflicts([[[copy_out(0, 64)]], [[copy_in("y", 32, 8)]]], out)
    assert not parallel.conflicts([[[copy_in("x", 0, 64)]], [[copy_in("x", 0, 64)]]], out)


def test_ranges_split_evenly() -> None:
    assert parallel.ranges(48, 2) == [range(0, 24), range(24, 48)]
    assert parallel.ranges(5, 3) == [range(0, 2), range(2, 4), range(4, 5)]
    # the parent's share: 1.1 * 48 / 2.1 = 25.1 cores; 3 of 2 cores: the rest keeps one
    assert parallel.ranges(48, 2, 1.1) == [range(0, 25), range(25, 48)]
    assert parallel.ranges(2, 2, 1.1) == [range(0, 1), range(1, 2)]
    assert parallel.ranges(3, 2, 1.1) == [range(0, 2), range(2, 3)]


@pytest.mark.skipif(not parallel.available(), reason="needs fork")
def test_a_failing_core_raises_the_serial_error_with_jobs() -> None:
    msgs = []
    for jobs in (1, 2):
        with pytest.raises(UBOverflowError) as e:
            launch(kernels.ub_overflow, [None, None, {}], {}, {}, TINY, block_dim=4,
                   mode="timed", jobs=jobs)
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1]

"""Tests of the Perfetto exporter (``aicore_sim/export/perfetto.py``) on real tiny-platform runs.

The validator must accept every trace we write, and the trace must keep the replay's
invariants: one pipe executes one instruction at a time, a WaitFlag never ends before the
SetFlag that released it, a vector instruction reading a copied buffer starts after the copy
ends, and each lane's slices add up to the summary's busy cycles.
"""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

from aicore_sim.export import perfetto
from aicore_sim.export.perfetto import (
    chrome_trace,
    pid_of,
    read_trace,
    tid_of,
    validate_chrome_trace,
    write_trace,
)
from aicore_sim.isa import Opcode, Pipe, Space
from aicore_sim.launch import launch
from aicore_sim.platform import load_platform
from aicore_sim.summary import summarize
from tests import kernels

TINY = load_platform("tiny")


def _run(name: str):
    """One launch of a test kernel (or of the operator's tiny case) on the tiny platform."""
    if name == "op_tiny":
        from op_models.moe_token_unpermute_with_ep_grad.api import run_case

        return run_case("tiny", platform="tiny")[1]
    n = 64
    if name == "copy_in":
        x = np.arange(2 * n, dtype=np.float32)
        return launch(kernels.copy_in, ["x", "y", {"n": n}], {"x": x, "y": np.zeros_like(x)},
                      {"y": (np.float32, (2 * n,))}, TINY, block_dim=2)
    if name == "copy_cast":
        x = np.arange(n, dtype=np.float16)
        return launch(kernels.copy_cast, ["x", "y", {"n": n}],
                      {"x": x, "y": np.zeros(n, np.float32)}, {"y": (np.float32, (n,))}, TINY,
                      block_dim=1)
    if name == "double_buffer":
        loops = 5
        x = np.arange(n * loops, dtype=np.float32)
        return launch(kernels.double_buffer, ["x", "y", {"n": n, "loops": loops}],
                      {"x": x, "y": np.zeros_like(x)}, {"y": (np.float32, (n * loops,))}, TINY,
                      block_dim=1)
    if name == "many_vector":
        x = np.zeros(n, np.float32)
        return launch(kernels.many_vector, ["x", "y", {"n": n, "k": 12}],
                      {"x": x, "y": x.copy()}, {}, TINY, block_dim=1)
    raise KeyError(name)


RUNS = ["copy_in", "copy_cast", "double_buffer", "many_vector", "op_tiny"]


@pytest.fixture(scope="module", params=RUNS)
def run(request):
    return _run(request.param)


def test_validator_accepts_real_traces(run) -> None:
    obj = chrome_trace(run.trace)
    assert validate_chrome_trace(obj) == []
    # and the file round-trips through JSON unchanged in meaning
    assert validate_chrome_trace(json.loads(json.dumps(obj))) == []


def test_processes_and_threads(run) -> None:
    obj = chrome_trace(run.trace)
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in obj["traceEvents"]
             if e["ph"] == "M" and e["name"] == "thread_name"}
    procs = {e["pid"]: e["args"]["name"] for e in obj["traceEvents"]
             if e["ph"] == "M" and e["name"] == "process_name"}
    for c in range(len(run.trace.cores)):
        assert procs[pid_of(c)] == f"AIV {c}"
        for p in (Pipe.SCALAR, Pipe.MTE2, Pipe.VECTOR, Pipe.MTE3):
            assert names[(pid_of(c), tid_of(c, p))] == p.name
    tids = [tid for _, tid in names]
    assert len(tids) == len(set(tids)) and 0 not in tids


def test_timestamps_whole_ns_and_cycles_in_args(run) -> None:
    clock = run.trace.clock_mhz
    for e in chrome_trace(run.trace)["traceEvents"]:
        if e["ph"] != "X":
            continue
        assert round(e["ts"] * 1000) == pytest.approx(e["ts"] * 1000, abs=1e-6)
        assert e["ts"] == round(e["args"]["start_cycle"] * 1000 / clock) / 1000
        assert e["args"]["cycles"] == e["args"]["end_cycle"] - e["args"]["start_cycle"]


def test_lanes_never_overlap(run) -> None:
    for ct in run.trace.cores:
        for p in (Pipe.VECTOR, Pipe.MTE2, Pipe.MTE3, Pipe.SCALAR):
            r = ct.rows(p)
            order = np.argsort(ct.start[r], kind="stable")
            s, e = ct.start[r][order], ct.end[r][order]
            assert np.all(s[1:] >= e[:-1]), (ct.core, p)


def test_wait_flag_ends_after_its_set_flag(run) -> None:
    for ct in run.trace.cores:
        for w, s in ct.releases.tolist():
            assert run.trace.time_of(ct.core, w)[1] >= run.trace.time_of(ct.core, s)[1]


def test_flow_arrows_go_from_set_to_wait_forward(run) -> None:
    obj = chrome_trace(run.trace)
    flows: dict[int, dict[str, dict]] = {}
    for e in obj["traceEvents"]:
        if e["ph"] in "sf":
            flows.setdefault(e["id"], {})[e["ph"]] = e
    n_releases = sum(ct.releases.shape[0] for ct in run.trace.cores)
    assert len(flows) == n_releases
    for f in flows.values():
        assert f["f"]["ts"] >= f["s"]["ts"]


def test_vector_reads_start_after_the_copy_that_filled_them(run) -> None:
    checked = 0
    for ct in run.trace.cores:
        when = {int(i): (int(s), int(e)) for i, s, e in zip(ct.index, ct.start, ct.end)}
        copies = []  # (stream index, dst start, dst end) of GM->UB copies in program order
        for i, ins in enumerate(ct.stream):
            if ins.op is Opcode.COPY_GM_TO_UB:
                copies.append((i, ins.dst.addr, ins.dst.end))
            elif ins.pipe is Pipe.VECTOR and ins.src:
                for o in ins.src:
                    if o.space is not Space.UB:
                        continue
                    last = [c for c in copies if c[1] < o.end and o.addr < c[2]]
                    if last:
                        assert when[i][0] >= when[last[-1][0]][1], (ct.core, i)
                        checked += 1
    if run.trace.cores[0].stream[0].op is Opcode.COPY_GM_TO_UB:
        assert checked > 0 or all(
            ins.pipe is not Pipe.VECTOR for c in run.trace.cores for ins in c.stream)


def test_busy_cycles_equal_the_sum_of_lane_slices(run) -> None:
    obj = chrome_trace(run.trace)
    d = summarize(run)
    lane: dict[tuple[int, int], int] = {}
    for e in obj["traceEvents"]:
        if e["ph"] == "X" and e["cat"] != "stall":
            lane[(e["pid"], e["tid"])] = lane.get((e["pid"], e["tid"]), 0) + e["args"]["cycles"]
    for c in d["cores"]:
        for p in (Pipe.SCALAR, Pipe.MTE2, Pipe.VECTOR, Pipe.MTE3):
            got = lane.get((pid_of(c["core"]), tid_of(c["core"], p)), 0)
            assert got == c["busy_cycles"][p.name], (c["core"], p)


def test_stalls_are_on_their_own_lanes(run) -> None:
    obj = chrome_trace(run.trace)
    stalls = [e for e in obj["traceEvents"] if e["ph"] == "X" and e["cat"] == "stall"]
    assert len(stalls) == sum(len(ct.stalls) for ct in run.trace.cores)
    pipe_tids = {tid_of(c, p) for c in range(len(run.trace.cores)) for p in Pipe}
    assert not any(e["tid"] in pipe_tids for e in stalls)


def test_ub_counter(run) -> None:
    obj = chrome_trace(run.trace)
    counters = [e for e in obj["traceEvents"] if e["ph"] == "C"]
    for ct in run.trace.cores:
        mine = [e for e in counters if e["pid"] == pid_of(ct.core)]
        if ct.allocations:
            reserved = sum(a.nbytes for a in ct.allocations)
            assert mine and all(e["args"]["reserved"] == reserved for e in mine)
            assert all(0 <= e["args"]["live"] <= reserved for e in mine)
            assert mine[-1]["args"]["live"] == 0


# --------------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------------


def test_write_plain_and_gzip(tmp_path) -> None:
    r = _run("copy_cast")
    p = write_trace(r.trace, tmp_path / "t.json")
    assert p == tmp_path / "t.json"
    assert p.read_bytes()[:1] == b"{"
    g = write_trace(r.trace, tmp_path / "t.json.gz")
    assert g.read_bytes()[:2] == b"\x1f\x8b"
    assert read_trace(p) == read_trace(g) == json.loads(gzip.decompress(g.read_bytes()))
    assert validate_chrome_trace(read_trace(g)) == []
    assert sorted(x.name for x in tmp_path.iterdir()) == ["t.json", "t.json.gz"]  # no temp


def test_large_traces_are_gzipped(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(perfetto, "LARGE_EVENTS", 10)
    p = write_trace(_run("copy_cast").trace, tmp_path / "t.json")
    assert p.name == "t.json.gz" and p.read_bytes()[:2] == b"\x1f\x8b"
    assert not (tmp_path / "t.json").exists()


def test_write_is_atomic_on_failure(tmp_path) -> None:
    with pytest.raises(TypeError):
        write_trace({"traceEvents": [{"ph": "X", "bad": object()}]}, tmp_path / "t.json",
                    gzip=False)
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------------------------
# The validator catches what Perfetto would drop
# --------------------------------------------------------------------------------------------


def _x(pid: int, tid: int, ts: float, dur: float) -> dict:
    return {"ph": "X", "name": "a", "pid": pid, "tid": tid, "ts": ts, "dur": dur}


@pytest.mark.parametrize("events, fragment", [
    ([_x(1, 0, 0.0, 1.0)], "tid 0"),
    ([_x(0, 1, 0.0, 1.0)], "pid 0"),
    ([_x(1, 1, 0.0, 1.0), _x(2, 1, 2.0, 1.0)], "unique"),
    ([_x(1, 1, 0.0005, 1.0)], "sub-nanosecond"),
    ([_x(1, 1, 0.0, -1.0)], "dur"),
    ([_x(1, 1, 0.0, 2.0), _x(1, 1, 1.0, 2.0)], "overlaps"),
    ([{"ph": "s", "id": 1, "cat": "f", "pid": 1, "tid": 1, "ts": 5.0},
      {"ph": "f", "id": 1, "cat": "f", "pid": 1, "tid": 2, "ts": 4.0}], "backward"),
    ([{"ph": "s", "id": 1, "cat": "f", "pid": 1, "tid": 1, "ts": 5.0}], "lacks"),
])
def test_validator_rejects(events, fragment) -> None:
    problems = validate_chrome_trace({"traceEvents": events})
    assert problems and any(fragment in p for p in problems), problems


def test_validator_allows_back_to_back_and_zero_length() -> None:
    ev = [_x(1, 1, 0.0, 1.0), _x(1, 1, 1.0, 0.0), _x(1, 1, 1.0, 2.5)]
    assert validate_chrome_trace({"traceEvents": ev}) == []

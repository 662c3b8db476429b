"""Tests of the Perfetto exporter (``aicore_sim/export/perfetto/``) on real tiny-platform runs.

The validator must accept every trace we write, and the trace must keep the replay's
invariants: one pipe executes one instruction at a time, a WaitFlag never ends before the
SetFlag that released it, a vector instruction reading a copied buffer starts after the copy
ends, and each lane's slices add up to the summary's busy cycles.
"""

from __future__ import annotations

import dataclasses
import gzip
import json

import numpy as np
import pytest

from aicore_sim.export.perfetto import (
    DETAILS,
    TraceFile,
    chrome_trace,
    pid_of,
    read_trace,
    tid_of,
    write_trace,
)
from aicore_sim.export.perfetto import events as pf_events
from aicore_sim.export.perfetto import rows as pf_rows
from aicore_sim.export.perfetto import sink as pf_sink
from aicore_sim.export.perfetto import writer as pf_writer
from aicore_sim.sim.isa import Opcode, Pipe, Space
from aicore_sim.sim.launch import launch
from aicore_sim.sim.trace import Trace
from aicore_sim.views.summary import summarize
from tests import kernels
from tests.conftest import TINY
from tests.perfetto_schema import validate_chrome_trace


def _run(name: str):
    """One launch of a test kernel (or of the operator's tiny case) on the tiny platform."""
    if name == "op_tiny":
        from op_models.moe_token_unpermute_with_ep_grad import run_case

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
        assert procs[pid_of(c)] == f"core{c}.veccore0"  # msprof simulator's core names
        for p in (Pipe.SCALAR, Pipe.MTE2, Pipe.VECTOR, Pipe.MTE3):
            assert names[(pid_of(c), tid_of(c, p))] == p.name
    tids = [tid for _, tid in names]
    assert len(tids) == len(set(tids)) and 0 not in tids


def test_timestamps_whole_ns_and_cycles_in_args(run) -> None:
    obj = chrome_trace(run.trace)
    clock = run.trace.clock_mhz
    assert obj["otherData"]["clock_mhz"] == clock
    seen = 0
    for e in obj["traceEvents"]:
        if e["ph"] != "X":
            continue
        assert round(e["ts"] * 1000) == pytest.approx(e["ts"] * 1000, abs=1e-6)
        if "index" not in e["args"]:
            continue  # issue and stall slices
        # the start and end cycles are not in the args any more: the stream index finds them
        core, index = e["pid"] - 1, e["args"]["index"]
        start, end = run.trace.time_of(core, index)
        ct = run.trace.cores[core]
        stretch = int(ct.gm_stretch[np.flatnonzero(ct.index == index)[0]])
        # the slice starts at its cycle rounded to the ns, or up to 3 ns later behind a run of
        # lengthened sub-ns slices (the most these runs show; see perfetto/schema.py lane_ns)
        late = round(e["ts"] * 1000) - round(start * 1000 / clock)
        assert 0 <= late <= 3
        assert e["dur"] >= 0.001  # every slice keeps a positive extent
        assert e["args"]["cycles"] == end - start - stretch  # execution, HBM hold excluded
        seen += 1
    assert seen == run.trace.instruction_count()


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
    assert isinstance(p, TraceFile) and p.path == tmp_path / "t.json" and p.name == "t.json"
    assert p.path.read_bytes()[:1] == b"{"
    g = write_trace(r.trace, tmp_path / "t.json.gz")
    assert g.path.read_bytes()[:2] == b"\x1f\x8b"
    assert read_trace(p) == read_trace(g.path) == json.loads(gzip.decompress(g.path.read_bytes()))
    assert validate_chrome_trace(read_trace(g)) == []
    assert sorted(x.name for x in tmp_path.iterdir()) == ["t.json", "t.json.gz"]  # no temp


@pytest.mark.parametrize("detail", DETAILS)
def test_insight_header_comes_before_the_events(tmp_path, detail) -> None:
    # MindStudio Insight imports a JSON as an operator trace when "profilingType" and "op" come
    # before the first "[" of the file; the keys and values are msprof op simulator's.
    r = _run("copy_in")
    for name in ("t.json", "t.json.gz"):
        w = write_trace(r.trace, tmp_path / f"{detail}-{name}", detail=detail)
        raw = w.path.read_bytes()
        raw = gzip.decompress(raw) if name.endswith(".gz") else raw
        head = raw[:raw.index(b"[")]
        assert head == b'{"schemaVersion":2,"displayTimeUnit":"ns","profilingType":"op",' \
                       b'"traceEvents":'
        obj = json.loads(raw)
        assert list(obj)[:4] == ["schemaVersion", "displayTimeUnit", "profilingType",
                                 "traceEvents"]
        assert raw.count(b'"displayTimeUnit"') == 1  # said once, first
        assert validate_chrome_trace(obj) == []


def test_returned_size_and_events_are_the_files(tmp_path) -> None:
    r = _run("copy_cast")
    for name in ("t.json", "t.json.gz"):
        w = write_trace(r.trace, tmp_path / name)
        assert w.bytes == w.path.stat().st_size
        assert w.events == len(read_trace(w)["traceEvents"])
        assert read_trace(w)["otherData"]["events"] == w.events
    # copy_cast, one core: 16 metadata events (process name and sort index, SCALAR / MTE2 /
    # VECTOR / MTE3 plus the SCALAR, VECTOR and MTE3 stall threads, name and sort index each)
    # + 8 instructions + 1 issue slice + 4 stalls + 2 flows x 2 + 5 UB counter points = 38
    assert w.events == 16 + 8 + 1 + 4 + 4 + 5 == 38


def test_large_traces_are_gzipped(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(pf_sink, "LARGE_EVENTS", 10)
    p = write_trace(_run("copy_cast").trace, tmp_path / "t.json")
    assert p.name == "t.json.gz" and p.path.read_bytes()[:2] == b"\x1f\x8b"
    assert not (tmp_path / "t.json").exists()
    # at exactly LARGE_EVENTS events it stays plain (38 events, see above)
    monkeypatch.setattr(pf_sink, "LARGE_EVENTS", 38)
    assert write_trace(_run("copy_cast").trace, tmp_path / "u.json").name == "u.json"


def test_write_is_atomic_on_failure(tmp_path) -> None:
    with pytest.raises(TypeError):
        write_trace({"traceEvents": [{"ph": "X", "bad": object()}]}, tmp_path / "t.json",
                    gzip=False)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("exc", [RuntimeError, KeyboardInterrupt])
@pytest.mark.parametrize("threaded", [True, False])
@pytest.mark.parametrize("name", ["t.json", "t.json.gz"])
def test_a_failure_mid_write_leaves_nothing(tmp_path, monkeypatch, exc, threaded, name) -> None:
    r = _run("op_tiny")
    real = pf_writer.render
    calls = []

    def failing(k, parts):
        calls.append(k)
        if len(calls) == 5:  # after some chunks went to the file
            raise exc("stop")
        return real(k, parts)

    monkeypatch.setattr(pf_writer, "render", failing)
    with pytest.raises(exc):
        write_trace(r.trace, tmp_path / name, chunk_events=7, threaded=threaded)
    assert len(calls) == 5
    assert list(tmp_path.iterdir()) == []


def test_a_failing_disk_leaves_nothing(tmp_path, monkeypatch) -> None:
    """An error in the writer thread (disk full …) reaches the caller; no file is left."""
    r = _run("op_tiny")

    def full(self, piece):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pf_sink.Sink, "_out", full)
    with pytest.raises(OSError, match="No space"):
        write_trace(r.trace, tmp_path / "t.json.gz", chunk_events=7)
    assert list(tmp_path.iterdir()) == []


def test_plain_zlib_gives_the_same_text(tmp_path, monkeypatch) -> None:
    """Without the isal package the stdlib zlib compresses: same gzip format, same text."""
    import zlib

    r = _run("copy_cast")
    a = write_trace(r.trace, tmp_path / "a.json.gz")
    monkeypatch.setattr(pf_sink, "_zlib", zlib)
    b = write_trace(r.trace, tmp_path / "b.json.gz")
    assert gzip.decompress(a.path.read_bytes()) == gzip.decompress(b.path.read_bytes())


@pytest.mark.parametrize("name", ["t.json", "t.json.gz"])
def test_chunking_and_threads_do_not_change_the_text(tmp_path, name) -> None:
    r = _run("op_tiny")  # 48 cores; every kind of event
    texts = []
    for chunk, threaded in ((1, True), (3, False), (1 << 20, True)):
        w = write_trace(r.trace, tmp_path / f"{chunk}{name}", chunk_events=chunk,
                        threaded=threaded)
        raw = w.path.read_bytes()
        texts.append(gzip.decompress(raw) if name.endswith(".gz") else raw)
    assert texts[0] == texts[1] == texts[2]
    assert json.loads(texts[0]) == chrome_trace(r.trace)


# --------------------------------------------------------------------------------------------
# Args, detail levels, text
# --------------------------------------------------------------------------------------------


def test_instruction_args_say_what_is_not_said_elsewhere() -> None:
    r = _run("copy_cast")  # n = 64: GM->UB fp16, flags, Cast to fp32, UB->GM (tiny: 1000 MHz)
    obj = chrome_trace(r.trace)
    x = {e["args"]["index"]: e for e in obj["traceEvents"]
         if e["ph"] == "X" and "index" in e["args"]}
    assert x[0]["name"] == "DataCopyPad.GM2UB" and x[0]["cat"] == "copy"
    # 64 fp16 = 128 bytes in one block, from GM tensor x into UB buffer in16
    assert x[0]["args"] == {"index": 0, "cycles": 228, "bytes": 128, "block_count": 1,
                            "buffer": "in16", "src": "x", "dtype": "float16",
                            "source": "tests/kernels.py:67 copy_cast"}
    assert x[0]["ts"] == 0.001 and x[0]["dur"] == 0.228  # cycles 1 -> 229 at 1000 MHz
    assert x[1]["name"] == "SetFlag<MTE2_V>(0)"
    assert x[1]["args"] == {"index": 1, "cycles": 1, "event": "MTE2_V", "event_id": 0,
                            "source": "tests/kernels.py:69 copy_cast"}
    assert x[3]["args"] == {"index": 3, "cycles": 18, "elements": 64, "buffer": "out32",
                            "src": "in16", "dtype": "float32",
                            "source": "tests/kernels.py:71 copy_cast"}
    # 64 fp32 = 256 bytes from UB buffer out32 to GM tensor y
    assert x[6]["args"] == {"index": 6, "cycles": 356, "bytes": 256, "block_count": 1,
                            "buffer": "out32", "dst": "y", "dtype": "float32",
                            "source": "tests/kernels.py:75 copy_cast"}
    # the kernel-end teardown's barrier: the record pass's line that runs TPipe.Destroy()
    assert x[7]["name"] == "PipeBarrier<PIPE_ALL>"
    assert x[7]["args"]["source"] == "(kernel end) TPipe teardown"
    assert {k: v for k, v in x[7]["args"].items() if k != "source"} == {"index": 7, "cycles": 1}
    assert "dtype" not in obj["otherData"]  # two dtypes: said per slice
    stalls = [e for e in obj["traceEvents"] if e.get("cat") == "stall"]
    assert stalls[0]["name"] == "stall: flag"
    assert stalls[0]["args"] == {"cycles": 227, "what": "HardEvent MTE2_V id 0"}
    issue = [e for e in obj["traceEvents"] if e.get("name") == "issue"]
    assert [e["args"] for e in issue] == [{"cycles": 7}]  # span [0, 7) holds no instruction


def test_a_single_dtype_is_said_once() -> None:
    obj = chrome_trace(_run("copy_in").trace)  # fp32 only
    assert obj["otherData"]["dtype"] == "float32"
    assert not any("dtype" in e.get("args", {}) for e in obj["traceEvents"])


def test_metadata_goes_to_other_data() -> None:
    obj = chrome_trace(_run("copy_cast").trace, metadata={"case": "c", "mode": "timed"})
    o = obj["otherData"]
    assert (o["case"], o["mode"], o["detail"], o["cores"]) == ("c", "timed", "full", 1)
    assert o["clock_mhz"] == 1000.0 and o["events"] == len(obj["traceEvents"])
    assert obj["displayTimeUnit"] == "ns"


def test_lanes_detail_keeps_the_instruction_slices_only(tmp_path, run) -> None:
    w = write_trace(run.trace, tmp_path / "t.json", detail="lanes")
    obj = read_trace(w)
    assert validate_chrome_trace(obj) == []
    ev = obj["traceEvents"]
    assert {e["ph"] for e in ev} == {"M", "X"}  # no flows, no counters
    assert not any(e.get("cat") == "stall" or e.get("name") == "issue" for e in ev)
    threads = [e["args"]["name"] for e in ev if e["name"] == "thread_name"]
    n = len(run.trace.cores)
    assert sorted(threads) == sorted(["SCALAR", "MTE2", "VECTOR", "MTE3"] * n)
    # per core 2 process + 4 threads x 2 metadata events, then one slice per instruction
    assert w.events == len(ev) == 10 * n + run.trace.instruction_count()
    assert obj["otherData"]["detail"] == "lanes"
    full = chrome_trace(run.trace)
    slices = [e for e in full["traceEvents"] if e["ph"] == "X" and "index" in e["args"]]
    assert [e for e in ev if e["ph"] == "X"] == slices


def test_unknown_detail_is_refused(tmp_path) -> None:
    with pytest.raises(ValueError, match="detail"):
        write_trace(_run("copy_cast").trace, tmp_path / "t.json", detail="none")
    assert list(tmp_path.iterdir()) == []


def test_names_and_labels_are_escaped() -> None:
    r = _run("copy_cast")
    ct = r.trace.cores[0]
    label = 'say "hi" \\ tab\t é'
    stream = [ins._replace(label=label) if ins.op is Opcode.CAST else ins for ins in ct.stream]
    tr = Trace([dataclasses.replace(ct, stream=stream)], r.trace.clock_mhz)
    # the label names the call the instruction was recorded by: the slice's name, escaped too
    cast = [e for e in chrome_trace(tr)["traceEvents"] if e.get("cat") == "vector"
            and e.get("args", {}).get("label") == label]
    assert len(cast) == 1 and cast[0]["name"] == label


def test_json_string_bodies() -> None:
    table = pf_rows.str_table(["a", 'q"\\', "é", "\x01"])
    rows = [bytes(r).rstrip(b"\0") for r in table]
    assert rows == [b"a", b'q\\"\\\\', "é".encode(), b"\\u0001"]


def test_numbers_are_written_like_python() -> None:
    v = np.array([0, 1, 9, 10, 99, 100, 999, 1000, 1001, 99999, 100000, 999999, 1000000,
                  123456789, 10**15 + 7], np.int64)
    m = pf_rows.render(v.size, [b"[", pf_rows.Int(v), b",", pf_rows.Us(v), b"]"])
    text = bytes(pf_rows.compact(m)).decode()
    assert text == "".join(f"[{x},{x // 1000}.{x % 1000:03d}]" for x in v.tolist())
    with pytest.raises(ValueError, match="negative"):
        pf_rows.Int(np.array([-1]))


def test_issue_pieces_match_the_plain_algorithm() -> None:
    rng = np.random.default_rng(7)
    for _ in range(200):
        cuts = np.sort(rng.choice(200, size=2 * int(rng.integers(0, 12)), replace=False))
        spans = cuts.reshape(-1, 2)
        cuts = np.sort(rng.choice(200, size=2 * int(rng.integers(0, 12)), replace=False))
        s, e = cuts[0::2], cuts[1::2]
        if rng.random() < 0.3 and s.size:
            e = s.copy()  # zero-length instructions split a span
        got = pf_events.issue_pieces(spans, s, e)
        want = pf_events.issue_pieces_py(spans, list(zip(s.tolist(), e.tolist())))
        assert got.tolist() == want.tolist()


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
    # Perfetto nests a slice in another starting at the same ns, and a 0-ns slice at the
    # start or at the end of another (what 1-cycle flags rounded to 0 ns used to give)
    ([_x(1, 1, 1.0, 2.0), _x(1, 1, 1.0, 1.0)], "nests"),
    ([_x(1, 1, 1.0, 0.0), _x(1, 1, 1.0, 2.5)], "nests"),
    ([_x(1, 1, 0.0, 1.0), _x(1, 1, 1.0, 0.0)], "nests"),
    ([{"ph": "s", "id": 1, "cat": "f", "pid": 1, "tid": 1, "ts": 5.0},
      {"ph": "f", "id": 1, "cat": "f", "pid": 1, "tid": 2, "ts": 4.0}], "backward"),
    ([{"ph": "s", "id": 1, "cat": "f", "pid": 1, "tid": 1, "ts": 5.0}], "lacks"),
])
def test_validator_rejects(events, fragment) -> None:
    problems = validate_chrome_trace({"traceEvents": events})
    assert problems and any(fragment in p for p in problems), problems


def test_validator_allows_back_to_back_and_lone_zero_length() -> None:
    ev = [_x(1, 1, 0.0, 1.0), _x(1, 1, 1.0, 1.5), _x(1, 1, 3.0, 0.0), _x(1, 1, 3.5, 1.0)]
    assert validate_chrome_trace({"traceEvents": ev}) == []


def test_slices_are_named_by_the_call_the_kernel_made() -> None:
    """A ``DataCopy(ub, gm, n)`` is the slice ``DataCopy.GM2UB`` (the API called, then its
    direction), a ``DataCopyPad`` ``DataCopyPad.GM2UB``; the opcode stays one for both."""
    n = 64
    x = np.arange(n, dtype=np.float32)
    r = launch(kernels.data_copy_round_trip, ["x", "y", {"n": n}],
               {"x": x, "y": np.zeros(n, np.float32)}, {"y": (np.float32, (n,))}, TINY,
               block_dim=1)
    names = [e["name"] for e in chrome_trace(r.trace)["traceEvents"]
             if e["ph"] == "X" and e.get("cat") in ("copy", "vector")]
    assert names == ["DataCopy.GM2UB", "DataCopy.UB2UB", "DataCopy.UB2GM"]
    pad = [e["name"] for e in chrome_trace(_run("copy_cast").trace)["traceEvents"]
           if e["ph"] == "X" and e.get("cat") == "copy"]
    assert pad == ["DataCopyPad.GM2UB", "DataCopyPad.UB2GM"]
    ops = {i.op for i in r.program.streams[0] if i.pipe in (Pipe.MTE2, Pipe.MTE3)}
    assert ops >= {Opcode.COPY_GM_TO_UB, Opcode.COPY_UB_TO_GM}

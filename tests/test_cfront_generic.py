"""``cpp_kernel``: the user's own Ascend C kernel run from its case file (aicore_sim/cfront/op.py).

Every test that compiles is skipped when the machine has no usable C++ compiler; each uses its
own compile cache (``AICORE_SIM_CACHE`` -> tmp_path).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.cxx import needs_cxx

REPO = Path(__file__).resolve().parents[1]
ADD = REPO / "examples" / "cpp" / "add"


@pytest.fixture
def cache(cxx_cache):
    return cxx_cache


_HEAD = '#include "kernel_operator.h"\nusing namespace AscendC;\n'
_SYNC = _HEAD + """extern "C" __global__ __aicore__ void abs_sync(GM_ADDR x, GM_ADDR z)
{
    TPipe pipe;
#ifdef USE_QUEUE
    TQue<TPosition::VECIN, 1> inQ;
    TQue<TPosition::VECOUT, 1> outQ;
    pipe.InitBuffer(inQ, 1, 1024);
    pipe.InitBuffer(outQ, 1, 1024);
    LocalTensor<float> a = inQ.AllocTensor<float>();
    LocalTensor<float> b = outQ.AllocTensor<float>();
#else
    TBuf<TPosition::VECCALC> ba, bb;
    pipe.InitBuffer(ba, 1024);
    pipe.InitBuffer(bb, 1024);
    LocalTensor<float> a = ba.Get<float>();
    LocalTensor<float> b = bb.Get<float>();
#endif
    GlobalTensor<float> xGm, zGm;
    xGm.SetGlobalBuffer((__gm__ float*)x + GetBlockIdx() * 256, 256);
    zGm.SetGlobalBuffer((__gm__ float*)z + GetBlockIdx() * 256, 256);
    DataCopy(a, xGm, 256);
#ifdef USE_QUEUE
#ifndef DROP_SYNC
    inQ.EnQue(a);
    a = inQ.DeQue<float>();
#endif
#else
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
#ifndef DROP_SYNC
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
#endif
#endif
    Abs(b, a, 256);
#ifdef USE_QUEUE
    outQ.EnQue(b);
    b = outQ.DeQue<float>();
#else
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
#endif
    DataCopy(zGm, b, 256);
}
"""
_CRASH = _HEAD + """extern "C" __global__ __aicore__ void crash(GM_ADDR x, GM_ADDR z)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 1024);
    LocalTensor<float> t = buf.Get<float>();
    GlobalTensor<float> xGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, 256);
    DataCopy(t, xGm, 256);
    volatile int* p = nullptr;
    if (GetBlockIdx() == 1) *p = 1;
}
"""


def _case(folder: Path, stem: str, source: str, **fields) -> Path:
    (folder / f"{stem}.cpp").write_text(source)
    (folder / "abs_golden.py").write_text(
        "import numpy as np\n\ndef golden(inputs):\n    return {'z': np.abs(inputs['x'])}\n")
    doc = {"op": "cpp_kernel", "kernel_source": f"{stem}.cpp",
           "tensors": [{"name": "x", "shape": [512], "dtype": "float32", "role": "input"},
                       {"name": "z", "shape": [512], "dtype": "float32", "role": "output"}],
           "block_dim": 2, "platform": "tiny", **fields}
    path = folder / f"{fields.get('name', stem)}.json"
    path.write_text(json.dumps(doc))
    return path


@needs_cxx
def test_add_case_file_runs_exact(cli, tmp_path, monkeypatch):
    cache = tmp_path / "cache"  # a cache of its own: the one build this run makes is in it
    monkeypatch.setenv("AICORE_SIM_CACHE", str(cache))
    case = tmp_path / "add"
    shutil.copytree(ADD, case)
    r = cli("run", case / "add.json", "--out", tmp_path / "run", "--jobs", "1")
    assert r.returncode == 0, r.stderr
    assert "golden z: exact (40960 elements)" in r.stdout
    assert "8 cores, 392 instructions" in r.stdout
    assert "makespan 2578 cycles" in r.stdout  # inputs read from a warm L2
    assert "hazards: none" in r.stdout
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["case_document"]["op"] == "cpp_kernel"
    z = np.load(tmp_path / "run" / "outputs" / "z.npy")
    assert z.shape == (40, 1024) and z.dtype == np.float16
    assert (tmp_path / "run" / "PipeUtilization.csv").is_file()
    assert len(list((cache / "kernels").iterdir())) == 1  # compiled once, in this cache


@needs_cxx
def test_add_matches_numpy_and_port_makespan(cache):
    """The C++ queue kernel against the Python port of the board sample's case 4 (explicit
    ping/pong flags at fixed UB addresses): the same outputs; the streams differ (the queues
    set one flag per EnQue/FreeTensor, the port one per event and pre-sets its V_MTE2 /
    MTE3_V flags), the makespans by one cycle."""
    from aicore_sim.ops.casefile import load_case, make_data
    from aicore_sim.sim.recording import Recording
    from op_models.board_samples.add import add_custom

    cf = load_case(ADD / "add.json")
    inputs = make_data(cf)
    pc = cf.op.model.prepare(inputs, dict(cf.attrs), cf.platform)
    rec = cf.op.model.execute(pc)
    want = (inputs["x"].astype(np.float32) + inputs["y"].astype(np.float32)).astype(np.float16)
    assert np.array_equal(rec.outputs["z"], want)
    tensors = {"x": inputs["x"], "y": inputs["y"], "z": np.zeros((40, 1024), np.float16)}
    port = Recording(add_custom, ["x", "y", "z", 40, 1024, 8, 1, 2048, 4, 2201], tensors,
                     {"z": (np.dtype(np.float16), (40, 1024))}, cf.platform, block_dim=8)
    assert np.array_equal(port.outputs["z"], want)
    assert (rec.program.instruction_count, port.program.instruction_count) == (392, 360)
    assert (rec.trace.makespan, port.trace.makespan) == (2578, 2579)


@needs_cxx
def test_compile_error_names_file_line_and_log(cli, cache, tmp_path):
    case = _case(tmp_path, "bad", _HEAD + 'extern "C" void bad(GM_ADDR x, GM_ADDR z)\n'
                 "{\n    int a = ;\n}\n")
    r = cli("run", case, "--out", tmp_path / "run")
    assert r.returncode == 2
    assert f"{tmp_path / 'bad.cpp'}:5:13: error:" in r.stderr
    log = r.stderr.split("(full log: ")[1].split(")")[0]
    assert Path(log).is_file() and Path(log).is_relative_to(cache)
    assert not (tmp_path / "run").exists()


@needs_cxx
def test_unknown_ascend_c_call_is_named(cli, cache, tmp_path):
    src = _HEAD + """extern "C" void unk(GM_ADDR x, GM_ADDR z)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 1024);
    LocalTensor<float> t = buf.Get<float>();
    FrobnicateTensor(t, t, 256);
}
"""
    r = cli("run", _case(tmp_path, "unk", src), "--out", tmp_path / "run")
    assert r.returncode == 2
    assert f"{tmp_path / 'unk.cpp'}:9:5: error:" in r.stderr
    assert "aicore-sim does not provide FrobnicateTensor yet" in r.stderr
    assert not (tmp_path / "run").exists()


@needs_cxx
def test_crash_names_core_and_last_source_line(cli, cache, tmp_path):
    r = cli("run", _case(tmp_path, "crash", _CRASH), "--out", tmp_path / "run", "--jobs", "1")
    assert r.returncode == 1
    assert (f"core1.veccore0: the kernel crash crashed (SIGSEGV) after its last recorded "
            f"instruction (MTE2 DataCopy.GM2UB x@0->buf@0 1024B at {tmp_path / 'crash.cpp'}:11)"
            ) in r.stderr
    assert not (tmp_path / "run").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".run")]


@needs_cxx
@pytest.mark.parametrize("defines, instructions, hazards", [
    ({}, 16, "hazards: none"),
    ({"DROP_SYNC": 1}, 14, "hazards: 2 pending_flag, 2 race, 1 timed_differs"),
    ({"USE_QUEUE": 1}, 16, "hazards: none"),
    ({"USE_QUEUE": 1, "DROP_SYNC": 1}, 12, "hazards: 2 race, 1 timed_differs"),
])
def test_removed_sync_is_reported(cli, cache, tmp_path, defines, instructions, hazards):
    # without the sync the timed outputs differ from the golden (exit 1); the checker's
    # report is the subject here, so those runs have no golden
    gold = {} if "DROP_SYNC" in defines else {"golden": "abs_golden.py:golden"}
    case = _case(tmp_path, "sync", _SYNC, entry="abs_sync", defines=defines, **gold)
    r = cli("run", case, "--out", tmp_path / "run", "--jobs", "1")
    assert r.returncode == 0, r.stderr
    assert f"2 cores, {instructions} instructions" in r.stdout
    assert hazards in r.stdout
    if "race" in hazards:
        assert ("[race] core0.veccore0: read after write: #0 MTE2 DataCopy.GM2UB x@0->"
                in r.stdout)
    else:
        assert "golden z: exact (512 elements)" in r.stdout


@pytest.mark.parametrize("change, message", [
    ({"kernel_source": "nope.cpp"},
     "kernel_source: nope.cpp: no such file (the kernel's .cpp; relative to the case file)"),
    ({"block_dim": 0}, "block_dim: expected an integer >= 1, got 0"),
    ({"tensors": [{"name": "x", "shape": [4], "dtype": "float32", "role": "sink"}]},
     "tensors[0].role: expected one of ['input', 'output', 'workspace'], got \"sink\""),
    ({"tiling": {"header": "t.h", "values": {"nope": 1}}},
     "tiling.values.nope: not a field of T (fields: ['n'])"),
    ({"golden": "golden"}, 'golden: \'golden\': expected "module:function"'),
    ({"colour": 1}, "colour: unknown field"),
])
def test_bad_fields_exit_2_naming_the_field(cli, tmp_path, change, message):
    (tmp_path / "k.cpp").write_text("")
    (tmp_path / "t.h").write_text("BEGIN_TILING_DATA_DEF(T)\nTILING_DATA_FIELD_DEF(uint32_t, n);\n"
                                  "END_TILING_DATA_DEF;\n")
    doc = {"op": "cpp_kernel", "kernel_source": "k.cpp",
           "tensors": [{"name": "z", "shape": [4], "dtype": "float32", "role": "output"}]}
    doc.update(change)
    (tmp_path / "c.json").write_text(json.dumps(doc))
    r = cli("run", tmp_path / "c.json", "--out", tmp_path / "run")
    assert r.returncode == 2
    assert f"c.json: {message}" in r.stderr
    assert not (tmp_path / "run").exists()

"""The C++ front end: a kernel of the project's own compiled against the shim and recorded like
its Python twin; the tiling header's layout; the generated API table of docs/cpp_kernels.md.

Compiling tests skip with the reason when this machine has no usable C++ compiler."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from aicore_sim.ascendc import (
    EVENT_ID0,
    EVENT_ID1,
    Add,
    DataCopy,
    GetBlockIdx,
    GlobalTensor,
    HardEvent,
    Muls,
    SetFlag,
    TBuf,
    TPipe,
    TPosition,
    TQue,
    WaitFlag,
    float32,
)
from aicore_sim.ascendc.host import TilingStruct
from aicore_sim.cfront import KernelCrashError, KernelSource, build, coverage, tiling_header
from aicore_sim.sim.platform import load_platform
from aicore_sim.sim.program import stream_difference
from aicore_sim.sim.recording import Recording
from tests.cxx import needs_cxx

HERE = Path(__file__).parent / "cfront_kernels"
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _cache(cxx_cache):
    return cxx_cache


@dataclass
class ScaleRowsTilingData(TilingStruct):
    rowsPerCore: int  # noqa: N815 - the C++ struct's field name
    cols: int


def scale_rows(x, y, tiling: ScaleRowsTilingData) -> None:
    """The Python twin of tests/cfront_kernels/scale_rows.cpp (same calls, same order)."""
    td = tiling
    pipe = TPipe()
    inQue = TQue(TPosition.VECIN, 2, name="inQue")
    outBuf = TBuf(TPosition.VECCALC, name="outBuf")
    pipe.InitBuffer(inQue, 2, td.cols * 4)
    pipe.InitBuffer(outBuf, td.cols * 4)
    xGm, yGm = GlobalTensor(float32), GlobalTensor(float32)
    xGm.SetGlobalBuffer(x + GetBlockIdx() * td.rowsPerCore * td.cols * 4)
    yGm.SetGlobalBuffer(y + GetBlockIdx() * td.rowsPerCore * td.cols * 4)
    out = outBuf.Get(float32)
    for r in range(td.rowsPerCore):
        t = inQue.AllocTensor(float32)
        DataCopy(t, xGm[r * td.cols], td.cols)
        inQue.EnQue(t)
        t = inQue.DeQue(float32)
        Muls(out, t, 2.0, td.cols)
        inQue.FreeTensor(t)
        SetFlag(HardEvent.V_MTE3, EVENT_ID0)
        WaitFlag(HardEvent.V_MTE3, EVENT_ID0)
        DataCopy(yGm[r * td.cols], out, td.cols)
        SetFlag(HardEvent.MTE3_V, EVENT_ID1)
        WaitFlag(HardEvent.MTE3_V, EVENT_ID1)


def _launch(source: KernelSource | None, mode: str = "timed") -> Recording:
    x = np.arange(4 * 3 * 64, dtype=np.float32).reshape(12, 64)
    td = ScaleRowsTilingData(rowsPerCore=3, cols=64)
    return Recording(scale_rows, ["x", "y", td], {"x": x, "y": np.zeros_like(x)},
                     {"y": (np.dtype(np.float32), (12, 64))}, load_platform("tiny"),
                     block_dim=4, mode=mode, kernel_source=source)


@needs_cxx
@pytest.mark.parametrize("mode", ["timed", "timing-only"])
def test_cxx_kernel_records_what_its_python_twin_records(mode):
    py = _launch(None, mode)
    cxx = _launch(KernelSource.of(HERE / "scale_rows.cpp"), mode)
    assert stream_difference(py.program.streams, cxx.program.streams) is None
    # 4 cores x 3 rows x 10 calls (copy-in 1, queue 4 incl. the implicit flags, Muls 1,
    # flags 4) + the copy-out, + per core the TPipe teardown at kernel end
    assert len(cxx.program.streams[0]) == len(py.program.streams[0])
    assert cxx.trace.makespan == py.trace.makespan
    if mode == "timed":
        x = np.arange(4 * 3 * 64, dtype=np.float32).reshape(12, 64)
        assert np.array_equal(cxx.outputs["y"], 2 * x)
        assert cxx.hazards == []
    # each instruction points at the C++ line that issued it: the Muls at line 23
    muls = next(i for i, ins in enumerate(cxx.program.streams[0]) if ins.op.name == "MULS")
    site = cxx.program.sources.site(0, muls)
    assert (Path(site.path).name, site.line, site.func) == ("scale_rows.cpp", 23, "scale_rows")


@needs_cxx
def test_removed_wait_flag_is_a_race_the_checker_names():
    src = KernelSource.of(HERE / "scale_rows.cpp", defines=(("SCALE_NO_WAIT", ""),))
    rec = _launch(src)
    kinds = {h.kind for h in rec.hazards}
    assert "race" in kinds or "pending_flag" in kinds, [str(h) for h in rec.hazards]


@needs_cxx
def test_crash_names_the_core_and_the_last_line(tmp_path):
    (tmp_path / "scale_rows.cpp").write_text(
        (HERE / "scale_rows.cpp").read_text().replace(
            "inQue.FreeTensor(in);", "inQue.FreeTensor(in); *(volatile int*)nullptr = 1;"))
    (tmp_path / "scale_rows_tiling.h").write_text((HERE / "scale_rows_tiling.h").read_text())
    with pytest.raises(KernelCrashError, match=r"core0.veccore0: the kernel scale_rows crashed "
                       r"\(SIGSEGV\) after its last recorded instruction .*scale_rows.cpp:24"):
        _launch(KernelSource.of(tmp_path / "scale_rows.cpp"))


@needs_cxx
def test_compile_error_names_the_users_line_and_the_log(tmp_path):
    (tmp_path / "scale_rows.cpp").write_text('#include "kernel_operator.h"\n'
                                             "extern \"C\" void scale_rows(GM_ADDR x) {\n"
                                             "  AscendC::NoSuchCall(x);\n}\n")
    with pytest.raises(build.CompileError, match=r"scale_rows.cpp:3:\d+: error: .*NoSuchCall.*"
                       r"aicore-sim does not provide NoSuchCall yet.*full log: .*build.log"):
        _launch(KernelSource.of(tmp_path / "scale_rows.cpp"))


def test_tiling_layout_aligns_scalars_arrays_and_nested_structs(tmp_path):
    h = tmp_path / "x_tiling.h"
    h.write_text("BEGIN_TILING_DATA_DEF(Inner)\nTILING_DATA_FIELD_DEF(uint32_t, a);\n"
                 "END_TILING_DATA_DEF;\n"
                 "BEGIN_TILING_DATA_DEF(Outer)\nTILING_DATA_FIELD_DEF(int8_t, b);\n"
                 "TILING_DATA_FIELD_DEF(float, f);\nTILING_DATA_FIELD_DEF_ARR(int16_t, 3, arr);\n"
                 "TILING_DATA_FIELD_DEF_STRUCT(Inner, in);\nTILING_DATA_FIELD_DEF(int64_t, n);\n"
                 "END_TILING_DATA_DEF;\nREGISTER_TILING_DATA_CLASS(X, Outer)\n")
    outer = tiling_header.read([h]).struct_for("X")
    # b@0 (1), f@4 (aligned 4), arr@8 (3 x 2 = 6), in@16 (struct: aligned 8, size 8), n@24
    assert [(f.name, f.offset) for f in outer.fields] == [
        ("b", 0), ("f", 4), ("arr", 8), ("in", 16), ("n", 24)]
    assert outer.size == 32
    raw = outer.pack({"b": -1, "f": 1.5, "arr": [1, 2, 3], "in": {"a": 7}, "n": 1 << 40})
    assert raw == (struct.pack("<b3xf3h2xI4xq", -1, 1.5, 1, 2, 3, 7, 1 << 40))


def test_int64_structs_pack_as_tiling_struct_bytes():
    layout = tiling_header.read([HERE / "scale_rows_tiling.h"]).struct_for("ScaleRows")
    td = ScaleRowsTilingData(rowsPerCore=3, cols=-64)
    assert layout.pack(td.as_dict()) == td.to_bytes()  # 2 x 8 bytes, little-endian


def test_docs_api_table_is_the_one_the_shim_gives():
    text = (ROOT / "docs" / "cpp_kernels.md").read_text()
    table = text.split("<!-- api-table:begin -->\n")[1].split("<!-- api-table:end -->")[0]
    assert table.strip() == coverage.api_table().strip()


@needs_cxx
def test_a_kernel_that_never_returns_is_stopped_and_named(tmp_path, monkeypatch):
    (tmp_path / "scale_rows.cpp").write_text(
        (HERE / "scale_rows.cpp").read_text().replace(
            "inQue.FreeTensor(in);",
            "inQue.FreeTensor(in); for (volatile int k = 0; ; k = k + 1) {}"))
    (tmp_path / "scale_rows_tiling.h").write_text((HERE / "scale_rows_tiling.h").read_text())
    monkeypatch.setenv("AICORE_SIM_KERNEL_TIMEOUT", "0.5")
    with pytest.raises(KernelCrashError, match=r"core0.veccore0: the kernel scale_rows never "
                       r"returned: no Ascend C call for 0.5 s .*scale_rows.cpp:24"):
        _launch(KernelSource.of(tmp_path / "scale_rows.cpp"))


def test_no_compiler_says_what_to_install(monkeypatch):
    monkeypatch.setenv("CXX", "no-such-compiler-anywhere")
    build.compiler.cache_clear()
    try:
        with pytest.raises(build.NoCompilerError, match=r"no usable C\+\+ compiler "
                           r"\(no-such-compiler-anywhere: not found\): install g\+\+ 11 or "
                           r"newer \(Debian/Ubuntu: apt-get install g\+\+\)"):
            build.compiler()
    finally:
        monkeypatch.delenv("CXX")
        build.compiler.cache_clear()
    assert build.NoCompilerError.exit_code == 2  # a bad input: nothing is written


_SUM_TWO = """#include "kernel_operator.h"
using namespace AscendC;
extern "C" __global__ __aicore__ void sum_two(GM_ADDR a, GM_ADDR b, GM_ADDR z)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 3 * 64 * sizeof(float));
    LocalTensor<float> t = buf.Get<float>();
    GlobalTensor<float> ag, bg, zg;
    ag.SetGlobalBuffer((__gm__ float*)a);
    bg.SetGlobalBuffer((__gm__ float*)b);
    zg.SetGlobalBuffer((__gm__ float*)z);
    DataCopy(t, ag, 64);
    DataCopy(t[64], bg, 64);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    Add(t[128], t, t[64], 64);
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(zg, t[128], 64);
}
"""


def sum_two(a, b, z) -> None:
    """The Python twin of _SUM_TWO."""
    pipe, buf = TPipe(), TBuf(TPosition.VECCALC, name="buf")
    pipe.InitBuffer(buf, 3 * 64 * 4)
    t = buf.Get(float32)
    ag, bg, zg = GlobalTensor(float32), GlobalTensor(float32), GlobalTensor(float32)
    ag.SetGlobalBuffer(a)
    bg.SetGlobalBuffer(b)
    zg.SetGlobalBuffer(z)
    DataCopy(t, ag, 64)
    DataCopy(t[64], bg, 64)
    SetFlag(HardEvent.MTE2_V, EVENT_ID0)
    WaitFlag(HardEvent.MTE2_V, EVENT_ID0)
    Add(t[128], t, t[64], 64)
    SetFlag(HardEvent.V_MTE3, EVENT_ID0)
    WaitFlag(HardEvent.V_MTE3, EVENT_ID0)
    DataCopy(zg, t[128], 64)


@needs_cxx
def test_one_array_passed_as_two_inputs_stays_two_gm_tensors(tmp_path):
    """The kernel's pointers name GM tensors by address: one array given as both inputs still
    gives copies from 'a' and from 'b', as the Python twin records them."""
    (tmp_path / "sum_two.cpp").write_text(_SUM_TWO)
    x = np.arange(64, dtype=np.float32)

    def launch(source):
        return Recording(sum_two, ["a", "b", "z"], {"a": x, "b": x, "z": np.zeros_like(x)},
                         {"z": (np.dtype(np.float32), (64,))}, load_platform("tiny"),
                         block_dim=1, kernel_source=source)

    port, cxx = launch(None), launch(KernelSource.of(tmp_path / "sum_two.cpp"))
    assert stream_difference(port.program.streams, cxx.program.streams) is None
    reads = [ins.src[0].buf for ins in cxx.program.streams[0] if ins.op.name == "COPY_GM_TO_UB"]
    assert reads == ["a", "b"]
    assert np.array_equal(cxx.outputs["z"], 2 * x)


_GM_TABLE = """#include "kernel_operator.h"
using namespace AscendC;
namespace tables {
const __gm__ int32_t ramp[64] = {
     0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11, 12, 13, 14, 15,
    16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31,
    32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47,
    48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63};
}
extern "C" __global__ __aicore__ void gm_table(GM_ADDR z)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 32 * sizeof(int32_t));
    LocalTensor<int32_t> t = buf.Get<int32_t>();
    GlobalTensor<int32_t> rampGm, zGm;
    rampGm.SetGlobalBuffer((__gm__ int32_t*)tables::ramp, 64);
    zGm.SetGlobalBuffer((__gm__ int32_t*)z + GetBlockIdx() * 32, 32);
    DataCopy(t, rampGm[GetBlockIdx() * 32], 32);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    Adds(t, t, (int32_t)100, 32);
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(zGm, t, 32);
}
"""


def gm_table(z) -> None:
    """The entry's signature (the C++ source runs in its place)."""


@needs_cxx
@pytest.mark.parametrize("jobs", [1, 2])
def test_a_gm_table_of_the_kernel_binary_is_a_read_only_gm_tensor(tmp_path, monkeypatch,
                                                                   jobs):
    """A ``__gm__`` constant array the kernel declares (on device: part of its image in GM)
    is read as one more GM tensor, named after its symbol, by every core - recorded serially
    or in two processes - and by the timed replay with effects."""
    monkeypatch.setenv("AICORE_SIM_TIMED_REPLAY", "1")
    (tmp_path / "gm_table.cpp").write_text(_GM_TABLE)
    z = np.zeros(64, np.int32)
    rec = Recording(gm_table, ["z"], {"z": z}, {"z": (np.dtype(np.int32), (64,))},
                    load_platform("tiny"), block_dim=2, jobs=jobs,
                    kernel_source=KernelSource.of(tmp_path / "gm_table.cpp"))
    assert np.array_equal(rec.outputs["z"], np.arange(64) + 100)
    reads = {ins.src[0].buf for s in rec.program.streams for ins in s
             if ins.op.name == "COPY_GM_TO_UB"}
    assert reads == {"tables::ramp (a table of the kernel binary)"}
    assert not rec.hazards and rec.trace.makespan > 0

"""The global vector mask (SetVectorMask / ResetMask with isSetMask=False calls),
DataCopy with DataCopyParams (32-byte units), the library's raw-address DataCopyPad impls
(GetPhyAddr pointers) and SetDeqScale, against hand-built expectations (platform ``tiny``)."""

from __future__ import annotations

import numpy as np
import pytest

from aicore_sim.ascendc import (
    CAST_RINT,
    MASK_PLACEHOLDER,
    PIPE_ALL,
    Adds,
    Cast,
    DataCopy,
    DataCopyExtParams,
    DataCopyPad,
    DataCopyPadExtParams,
    DataCopyPadGm2UBImpl,
    DataCopyPadUB2GMImpl,
    DataCopyParams,
    Duplicate,
    GlobalTensor,
    PipeBarrier,
    ResetMask,
    SetDeqScale,
    SetVectorMask,
    TBuf,
    TPipe,
    UnaryRepeatParams,
    float16,
    float32,
)
from aicore_sim.sim.errors import KernelError
from aicore_sim.sim.isa import Opcode
from aicore_sim.sim.launch import launch
from tests.conftest import TINY


def _run(body, x: np.ndarray, n_out: int, out_dtype=np.float32):
    def kernel(xa, za):
        pipe = TPipe()
        a, o = TBuf(name="a"), TBuf(name="o")
        pipe.InitBuffer(a, 2048)
        pipe.InitBuffer(o, 2048)
        xg, zg = GlobalTensor(x.dtype), GlobalTensor(out_dtype)
        xg.SetGlobalBuffer(xa)
        zg.SetGlobalBuffer(za)
        body(xg, zg, a.Get(x.dtype), o.Get(out_dtype))

    z = np.zeros(n_out, out_dtype)
    r = launch(kernel, ["x", "z"], {"x": x, "z": z}, {"z": (np.dtype(out_dtype), z.shape)},
               TINY, block_dim=1, mode="functional")
    return r.outputs["z"]


def test_global_mask_for_is_set_mask_false_calls():
    x = np.arange(64, dtype=np.float32)

    def body(xg, zg, a, o):
        DataCopy(a, xg, 64)
        PipeBarrier(PIPE_ALL)
        Duplicate(o, -1.0, 64)
        SetVectorMask(float32, 0, (1 << 8) - 1)  # the leading 8 lanes (one block)
        Adds(o, a, 100.0, MASK_PLACEHOLDER, 1, UnaryRepeatParams(), isSetMask=False)
        SetVectorMask(float32, 20)  # length form: 20 leading lanes, into o[32:]
        Adds(o[32], a, 1000.0, MASK_PLACEHOLDER, 1, UnaryRepeatParams(), isSetMask=False)
        ResetMask()
        PipeBarrier(PIPE_ALL)
        DataCopy(zg, o, 64)

    got = _run(body, x, 64)
    want = np.full(64, -1.0, np.float32)
    want[:8] = x[:8] + 100
    want[32:52] = x[:20] + 1000
    assert np.array_equal(got, want)


def test_reset_mask_means_every_lane():
    x = np.arange(64, dtype=np.float32)

    def body(xg, zg, a, o):
        DataCopy(a, xg, 64)
        PipeBarrier(PIPE_ALL)
        SetVectorMask(float32, 4)
        ResetMask()
        Adds(o, a, 1.0, MASK_PLACEHOLDER, 1, UnaryRepeatParams(), isSetMask=False)
        PipeBarrier(PIPE_ALL)
        DataCopy(zg, o, 64)

    assert np.array_equal(_run(body, x, 64), x + 1)


def test_mask_refusals():
    def kernel(x):
        with pytest.raises(KernelError, match="not a run of leading lanes"):
            SetVectorMask(float32, 0, 0b1010)
        with pytest.raises(KernelError, match=r"65 lanes outside \[1, 64\]"):
            SetVectorMask(float32, 65)

    launch(kernel, ["x"], {"x": np.zeros(8, np.float32)}, {}, TINY, block_dim=1)


def test_data_copy_with_data_copy_params():
    x = np.arange(256, dtype=np.float32)

    def body(xg, zg, a, o):
        # GM -> UB: 3 blocks of 1 x 32 bytes (8 fp32), 1 block (8 fp32) skipped in GM between
        # them, packed in UB (dstStride 0)
        DataCopy(a, xg, DataCopyParams(3, 1, 1, 0))
        PipeBarrier(PIPE_ALL)
        # UB -> UB: those 24 values into o with one empty block between the 8-value blocks
        Duplicate(o, 0.0, 64)
        PipeBarrier(PIPE_ALL)
        DataCopy(o, a, DataCopyParams(3, 1, 0, 1))
        PipeBarrier(PIPE_ALL)
        # UB -> GM: the 6 blocks of o straight out
        DataCopy(zg, o, DataCopyParams(1, 6, 0, 0))

    got = _run(body, x, 48)
    want = np.zeros(48, np.float32)
    for k in range(3):
        want[16 * k:16 * k + 8] = x[16 * k:16 * k + 8]
    assert np.array_equal(got, want)


def test_raw_address_datacopypad_impls():
    x = np.arange(16, dtype=np.int32)

    def body(xg, zg, a, o):
        ext = DataCopyExtParams(1, 40, 0, 0)  # 10 int32
        DataCopyPadGm2UBImpl(a.GetPhyAddr(), xg.GetPhyAddr(), ext, DataCopyPadExtParams())
        PipeBarrier(PIPE_ALL)
        DataCopyPadUB2GMImpl(zg.GetPhyAddr(), a.GetPhyAddr(), ext)

    got = _run(body, x, 16, np.int32)
    assert got.tolist() == list(range(10)) + [0] * 6


def test_set_deq_scale_scales_int32_to_half():
    x = np.array([3, -5, 7, 2049] * 4, np.int32)

    def body(xg, zg, a, o):
        DataCopy(a, xg, 16)
        PipeBarrier(PIPE_ALL)
        h = o.ReinterpretCast(float16)
        SetDeqScale(0.5)
        Cast(h, a, CAST_RINT, 16)
        PipeBarrier(PIPE_ALL)
        DataCopy(zg, o, 8)

    got = _run(body, x, 8).view(np.float16)[:4]
    # 3 x 0.5 = 1.5, -2.5, 3.5, 2049 x 0.5 = 1024.5 -> fp16 (step 1 above 1024): ties to 1024
    assert got.tolist() == [1.5, -2.5, 3.5, 1024.0]


def test_data_copy_with_params_is_named_as_called():
    # DataCopy(.., DataCopyParams) is recorded as DataCopyPad's block transfer: named after
    # the call the kernel made, in the trace and in messages (DataCopyPad keeps its own name)
    x = np.arange(64, dtype=np.float32)

    def kernel(xa, za):
        pipe = TPipe()
        a = TBuf(name="a")
        pipe.InitBuffer(a, 256)
        xg, zg = GlobalTensor(float32), GlobalTensor(float32)
        xg.SetGlobalBuffer(xa)
        zg.SetGlobalBuffer(za)
        t = a.Get(float32)
        DataCopy(t, xg, DataCopyParams(2, 1, 0, 0))
        PipeBarrier(PIPE_ALL)
        DataCopyPad(zg, t, DataCopyExtParams(1, 64, 0, 0))

    r = launch(kernel, ["x", "z"], {"x": x, "z": np.zeros(16, np.float32)},
               {"z": (np.dtype(np.float32), (16,))}, TINY, block_dim=1, mode="functional")
    names = [i.name for i in r.program.streams[0]
             if i.op in (Opcode.COPY_GM_TO_UB, Opcode.COPY_UB_TO_GM)]
    assert names == ["DataCopy.GM2UB", "DataCopyPad.UB2GM"]
    assert np.array_equal(r.outputs["z"], x[:16])

"""Small Ascend C kernels used by the engine tests, written with the real API subset.

Each takes GM_ADDR arguments and a plain-dict tiling, like a real kernel port.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from aicore_sim.ascendc import (
    CAST_NONE,
    EVENT_ID0,
    PIPE_ALL,
    Cast,
    DataCopy,
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
    TPosition,
    TQue,
    WaitFlag,
    float16,
    float32,
    int32,
)


def copy_in(x, y, tiling) -> None:
    """One GM->UB copy of ``tiling['n']`` fp32 per core, then UB->GM (flag in between)."""
    n = tiling["n"]
    core = GetBlockIdx()
    xg, yg = GlobalTensor(float32), GlobalTensor(float32)
    xg.SetGlobalBuffer(x + core * n * 4)
    yg.SetGlobalBuffer(y + core * n * 4)
    pipe = TPipe()
    buf = TBuf(TPosition.VECCALC, name="buf")
    pipe.InitBuffer(buf, n * 4)
    t = buf.Get(float32)
    DataCopyPad(t, xg, DataCopyExtParams(1, n * 4, 0, 0), DataCopyPadExtParams())
    if tiling.get("sync", True):
        SetFlag(HardEvent.MTE2_MTE3, EVENT_ID0)
        WaitFlag(HardEvent.MTE2_MTE3, EVENT_ID0)
    DataCopyPad(yg, t, DataCopyExtParams(1, n * 4, 0, 0))


def copy_cast(x, y, tiling) -> None:
    """GM->UB fp16, flag MTE2->V, Cast to fp32, flag V->MTE3, UB->GM."""
    n = tiling["n"]
    xg, yg = GlobalTensor(float16), GlobalTensor(float32)
    xg.SetGlobalBuffer(x)
    yg.SetGlobalBuffer(y)
    pipe = TPipe()
    a, b = TBuf(name="in16"), TBuf(name="out32")
    pipe.InitBuffer(a, n * 2)
    pipe.InitBuffer(b, n * 4)
    ta, tb = a.Get(float16), b.Get(float32)
    DataCopyPad(ta, xg, DataCopyExtParams(1, n * 2, 0, 0), DataCopyPadExtParams())
    if tiling.get("wait_mte2_v", True):
        SetFlag(HardEvent.MTE2_V, EVENT_ID0)
        WaitFlag(HardEvent.MTE2_V, EVENT_ID0)
    Cast(tb, ta, CAST_NONE, n)
    if tiling.get("wait_v_mte3", True):
        SetFlag(HardEvent.V_MTE3, EVENT_ID0)
        WaitFlag(HardEvent.V_MTE3, EVENT_ID0)
    DataCopyPad(yg, tb, DataCopyExtParams(1, n * 4, 0, 0))


def double_buffer(x, y, tiling) -> None:
    """``loops`` tiles of ``n`` fp32 through a 2-deep VECIN queue and a 2-deep VECOUT queue:
    MTE2 fills slot 1 while V scales slot 0 (TQue implicit flags only)."""
    n, loops = tiling["n"], tiling["loops"]
    xg, yg = GlobalTensor(float32), GlobalTensor(float32)
    xg.SetGlobalBuffer(x)
    yg.SetGlobalBuffer(y)
    pipe = TPipe()
    qin = TQue(TPosition.VECIN, 2, name="qin")
    qout = TQue(TPosition.VECOUT, 2, name="qout")
    pipe.InitBuffer(qin, 2, n * 4)
    pipe.InitBuffer(qout, 2, n * 4)
    for i in range(loops):
        t = qin.AllocTensor(float32)
        DataCopyPad(t, xg[i * n], DataCopyExtParams(1, n * 4, 0, 0), DataCopyPadExtParams())
        qin.EnQue(t)
        t = qin.DeQue(float32)
        o = qout.AllocTensor(float32)
        Muls(o, t, 2.0, n)
        qin.FreeTensor(t)
        qout.EnQue(o)
        o = qout.DeQue(float32)
        DataCopyPad(yg[i * n], o, DataCopyExtParams(1, n * 4, 0, 0))
        qout.FreeTensor(o)


def many_vector(x, y, tiling) -> None:
    """``k`` back-to-back Muls on one buffer: the issuer outruns V and fills its queue."""
    n, k = tiling["n"], tiling["k"]
    pipe = TPipe()
    b = TBuf(name="b")
    pipe.InitBuffer(b, n * 4)
    t = b.Get(float32)
    for _ in range(k):
        Muls(t, t, 1.0, n)
    PipeBarrier(PIPE_ALL)


def wait_without_set(x, y, tiling) -> None:
    """A WaitFlag nobody sets."""
    WaitFlag(HardEvent.MTE2_V, EVENT_ID0)


def scalar_read(x, y, tiling) -> None:
    """GM->UB copy of 8 int32, then the scalar unit reads element 3 with no explicit flag
    (the compiler's auto-sync makes it wait for MTE2), then writes it into UB and out."""
    xg, yg = GlobalTensor(int32), GlobalTensor(int32)
    xg.SetGlobalBuffer(x)
    yg.SetGlobalBuffer(y)
    pipe = TPipe()
    b = TBuf(name="ids")
    pipe.InitBuffer(b, 32)
    t = b.Get(int32)
    DataCopyPad(t, xg, DataCopyExtParams(1, 32, 0, 0), DataCopyPadExtParams())
    v = t.GetValue(3)
    t.SetValue(0, v)
    SetFlag(HardEvent.S_MTE3, EVENT_ID0)
    WaitFlag(HardEvent.S_MTE3, EVENT_ID0)
    DataCopyPad(yg, t, DataCopyExtParams(1, 32, 0, 0))


def fill_then_scalar_store(x, y, tiling) -> None:
    """A vector Duplicate of 8 int32, then a scalar store into the same block with no
    explicit flag (auto-sync orders it after the fill), then out on MTE3 after S_MTE3."""
    from aicore_sim.ascendc import Duplicate  # here: the line numbers above are asserted on

    yg = GlobalTensor(int32)
    yg.SetGlobalBuffer(y)
    pipe = TPipe()
    b = TBuf(name="row")
    pipe.InitBuffer(b, 32)
    t = b.Get(int32)
    Duplicate(t, 7, 8)
    t.SetValue(3, 42)
    SetFlag(HardEvent.S_MTE3, EVENT_ID0)
    WaitFlag(HardEvent.S_MTE3, EVENT_ID0)
    DataCopyPad(yg, t, DataCopyExtParams(1, 32, 0, 0))


def set_without_wait(x, y, tiling) -> None:
    """A SetFlag nobody waits for: left pending at kernel end."""
    SetFlag(HardEvent.V_MTE2, EVENT_ID0)


def circular_wait(x, y, tiling) -> None:
    """MTE2 waits for V, V waits for MTE2, each set only after the other's wait."""
    WaitFlag(HardEvent.V_MTE2, EVENT_ID0)
    SetFlag(HardEvent.MTE2_V, EVENT_ID0)
    WaitFlag(HardEvent.MTE2_V, EVENT_ID0)
    SetFlag(HardEvent.V_MTE2, EVENT_ID0)


def ub_overflow(x, y, tiling) -> None:
    """Asks for more UB than the platform has."""
    pipe = TPipe()
    pipe.InitBuffer(TBuf(name="big"), 6000)
    pipe.InitBuffer(TBuf(name="bigger"), 4000)


def misaligned_copy(x, y, tiling) -> None:
    """GM->UB into a UB address 4 bytes past a 32-byte boundary."""
    xg = GlobalTensor(float32)
    xg.SetGlobalBuffer(x)
    pipe = TPipe()
    b = TBuf(name="buf")
    pipe.InitBuffer(b, 256)
    DataCopyPad(b.Get(float32)[1], xg, DataCopyExtParams(1, 32, 0, 0), DataCopyPadExtParams())
    PipeBarrier(PIPE_ALL)


def past_buffer(x, y, tiling) -> None:
    """A Muls whose count runs past the end of its buffer."""
    pipe = TPipe()
    b = TBuf(name="small")
    pipe.InitBuffer(b, 64)
    t = b.Get(float32)
    Muls(t, t, 2.0, 32)


def branch_on_product(x, y, tiling) -> None:
    """Branches on a value only vector arithmetic produces (the rule timing-only relies on,
    broken on purpose): x[0] is copied in, doubled by a Muls, read back by the scalar unit,
    and one more Muls is issued when the double is positive (then TPipe's kernel-end
    PIPE_ALL barrier)."""
    xg = GlobalTensor(float32)
    xg.SetGlobalBuffer(x)
    pipe = TPipe()
    a, b = TBuf(name="in"), TBuf(name="twice")
    pipe.InitBuffer(a, 32)
    pipe.InitBuffer(b, 32)
    ta, tb = a.Get(float32), b.Get(float32)
    DataCopyPad(ta, xg, DataCopyExtParams(1, 32, 0, 0), DataCopyPadExtParams())
    SetFlag(HardEvent.MTE2_V, EVENT_ID0)
    WaitFlag(HardEvent.MTE2_V, EVENT_ID0)
    Muls(tb, ta, 2.0, 8)
    if tb.GetValue(0) > 0:
        Muls(tb, tb, 2.0, 8)


def branch_on_input(x, y, tiling) -> None:
    """Branches on an input value brought into UB by MTE2 (allowed in timing-only mode)."""
    xg = GlobalTensor(float32)
    xg.SetGlobalBuffer(x)
    pipe = TPipe()
    a = TBuf(name="in")
    pipe.InitBuffer(a, 32)
    ta = a.Get(float32)
    DataCopyPad(ta, xg, DataCopyExtParams(1, 32, 0, 0), DataCopyPadExtParams())
    for _ in range(int(ta.GetValue(0))):
        Muls(ta, ta, 2.0, 8)


def data_copy_round_trip(x, y, tiling) -> None:
    """DataCopy GM->UB, UB->UB (vector pipe), UB->GM of ``tiling['n']`` fp32, with the flags
    fetched from the TPipe; ``tiling['skip']`` names a HardEvent whose pair is left out."""
    from aicore_sim.ascendc import DataCopy, GetTPipePtr

    n = tiling["n"]
    skip = tiling.get("skip")
    xg, yg = GlobalTensor(float32), GlobalTensor(float32)
    xg.SetGlobalBuffer(x)
    yg.SetGlobalBuffer(y)
    pipe = TPipe()
    a, b = TBuf(name="a"), TBuf(name="b")
    pipe.InitBuffer(a, max(n, 8) * 4)
    pipe.InitBuffer(b, max(n, 8) * 4)
    ta, tb = a.Get(float32), b.Get(float32)
    DataCopy(ta, xg, n)
    for event in (HardEvent.MTE2_V, HardEvent.V_MTE3):
        if event is HardEvent.V_MTE3:
            DataCopy(tb, ta, n)
        if event != skip:
            eid = GetTPipePtr().FetchEventID(event)
            SetFlag(event, eid)
            WaitFlag(event, eid)
    DataCopy(yg, tb, n)


def run_vector_body(body, inputs: dict[str, np.ndarray], out_dtype, n_out: int, platform
                    ) -> tuple[np.ndarray, Any, Any]:
    """One core: copy each input GM->UB into its own 1 KiB TBuf (named for the input), call
    ``body(out, scratch_buf, *inputs)`` between two PIPE_ALL barriers, copy ``n_out`` of the
    1 KiB output back. Returns (output array, what ``body`` returned, the recorded program)."""
    from aicore_sim.sim.launch import launch

    names = list(inputs)
    seen: list = []

    def kernel(*gm):
        pipe = TPipe()
        ins = []
        for name, addr in zip(names, gm[:-1]):
            arr = inputs[name]
            b = TBuf(name=name)
            pipe.InitBuffer(b, 1024)
            g = GlobalTensor(arr.dtype)
            g.SetGlobalBuffer(addr)
            t = b.Get(arr.dtype)
            DataCopy(t, g, arr.size)
            ins.append(t)
        o, scratch = TBuf(name="o"), TBuf(name="scratch")
        pipe.InitBuffer(o, 1024)
        pipe.InitBuffer(scratch, 1024)
        PipeBarrier(PIPE_ALL)
        seen.append(body(o.Get(out_dtype), scratch, *ins))
        PipeBarrier(PIPE_ALL)
        z = GlobalTensor(out_dtype)
        z.SetGlobalBuffer(gm[-1])
        DataCopy(z, o.Get(out_dtype), n_out)

    tensors = dict(inputs)
    tensors["z"] = np.zeros(n_out, out_dtype)
    r = launch(kernel, [*names, "z"], tensors, {"z": (np.dtype(out_dtype), (n_out,))}, platform,
               block_dim=1, mode="functional")
    return r.outputs["z"], seen[0], r.program

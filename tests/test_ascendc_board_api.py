"""Tests of the Ascend C calls the best-practice sample ports need: ``LocalTensor`` at a fixed
UB address, ``DataCopyParams`` / ``DataCopyPadParams``, ``CacheMode`` and
``GlobalTensor.SetL2CacheHint``, ``InitSocState``, ``DivCeil`` and the mask + repeat form of
``Add`` with ``BinaryRepeatParams``.

Platform ``tiny``: UB image of 8448 bytes (8192 usable by InitBuffer), copies 100 cycles + 1 per
byte, Add 10 + n / 8 cycles, flags 1 cycle (``data/costs/tiny.toml``).
"""

from __future__ import annotations

import numpy as np
import pytest

from aicore_sim.ascendc import (
    PIPE_ALL,
    Add,
    BinaryRepeatParams,
    CacheMode,
    DataCopy,
    DataCopyPad,
    DataCopyPadParams,
    DataCopyParams,
    DivCeil,
    GlobalTensor,
    HardEvent,
    InitSocState,
    LocalTensor,
    PipeBarrier,
    SetFlag,
    TBuf,
    TPipe,
    TPosition,
    WaitFlag,
    float16,
    float32,
)
from aicore_sim.sim.errors import KernelError, OutOfBoundsError
from aicore_sim.sim.isa import CACHE_DISABLE, CACHE_NORMAL, Opcode
from aicore_sim.sim.launch import launch
from aicore_sim.sim.memory import Allocation
from tests.conftest import TINY


def _run(kernel, tensors=None, outputs=None, mode="timed"):
    tensors = tensors if tensors is not None else {"x": np.zeros(64, np.float32)}
    return launch(kernel, list(tensors), tensors, outputs or {}, TINY, block_dim=1, mode=mode)


def _ops(result, op):
    return [i for i in result.program.streams[0] if i.op is op]


# -- LocalTensor(dtype, TPosition, addr, tileSize) --------------------------------------------


def test_fixed_local_tensor_is_an_allocation_and_the_same_window_is_one():
    seen = {}

    def kernel(x):
        a = LocalTensor(float32, TPosition.VECCALC, 0x100, 64)  # 256 B at 256
        b = LocalTensor(float32, TPosition.VECCALC, 0x100, 64)  # the same window again
        c = LocalTensor(float16, TPosition.VECIN, 0x180, 64)  # 128 B overlapping a
        seen.update(a=(a.buf, a.addr, a.limit, a.GetSize()), b=b.buf, c=(c.buf, c.limit))

    r = _run(kernel)
    assert seen == {"a": ("VECCALC@0x100", 256, 512, 64), "b": "VECCALC@0x100",
                    "c": ("VECIN@0x180", 512)}
    assert r.program.allocations[0] == [Allocation("VECCALC@0x100", 256, 256),
                                        Allocation("VECIN@0x180", 384, 128)]


def test_fixed_local_tensor_same_address_other_length_gets_its_own_name():
    names = []

    def kernel(x):
        names.append(LocalTensor(float32, TPosition.VECCALC, 0, 8).buf)
        names.append(LocalTensor(float32, TPosition.VECCALC, 0, 16).buf)

    r = _run(kernel)
    assert names == ["VECCALC@0x0", "VECCALC@0x0+64"]
    assert [a.nbytes for a in r.program.allocations[0]] == [32, 64]


def test_fixed_local_tensor_keeps_initbuffer_placement():
    got = []

    def kernel(x):
        pipe = TPipe()
        LocalTensor(float32, TPosition.VECCALC, 4096, 64)
        buf = TBuf(TPosition.VECCALC, name="t")
        pipe.InitBuffer(buf, 64)
        got.append(buf.Get(float32).addr)  # InitBuffer still starts at 0

    _run(kernel)
    assert got == [0]


def test_fixed_local_tensor_past_the_ub_names_the_bytes():
    def kernel(x):
        LocalTensor(float32, TPosition.VECCALC, 8192, 256)  # [8192, 9216) of 8448

    with pytest.raises(OutOfBoundsError, match=r"\[8192, 9216\).*8448 bytes by 768 bytes"):
        _run(kernel)


def test_fixed_local_tensor_may_use_the_whole_ub_image():
    def kernel(x):  # [8192, 8448): past InitBuffer's 8192 usable bytes, inside the UB
        LocalTensor(float32, TPosition.VECCALC, 8192, 64)

    assert _run(kernel).program.allocations[0] == [Allocation("VECCALC@0x2000", 8192, 256)]


@pytest.mark.parametrize("args, rule", [
    ((TPosition.VECCALC, 16, 8), "multiple of 32 bytes"),  # address not 32-byte aligned
    ((TPosition.VECCALC, -32, 8), "non-negative"),
    ((TPosition.VECCALC, 0, 0), "tileSize must be > 0"),
    ((TPosition.VECCALC, 0, 3), "tensor length 12 bytes is not a multiple of 32"),
    ((TPosition.GM, 0, 8), "not GM"),
])
def test_fixed_local_tensor_rules(args, rule):
    def kernel(x):
        LocalTensor(float32, *args)

    with pytest.raises(KernelError, match=rule):
        _run(kernel)


def test_fixed_local_tensors_carry_a_round_trip():
    def kernel(x, y):
        gx, gy = GlobalTensor(float32), GlobalTensor(float32)
        gx.SetGlobalBuffer(x, 64)
        gy.SetGlobalBuffer(y, 64)
        a = LocalTensor(float32, TPosition.VECIN, 0, 64)
        DataCopy(a, gx, 64)
        SetFlag(HardEvent.MTE2_MTE3, 0)
        WaitFlag(HardEvent.MTE2_MTE3, 0)
        DataCopy(gy, a, 64)

    x = np.arange(64, dtype=np.float32)
    r = _run(kernel, {"x": x, "y": np.zeros(64, np.float32)}, {"y": (np.float32, (64,))})
    assert np.array_equal(r.outputs["y"], x)
    assert r.hazards == []
    copies = _ops(r, Opcode.COPY_GM_TO_UB)
    assert [(c.dst.buf, c.dst.addr, c.dst.nbytes) for c in copies] == [("VECIN@0x0", 0, 256)]


# -- DataCopyParams / DataCopyPadParams --------------------------------------------------------


def _pad_kernel(params, pad):
    def kernel(x):
        g = GlobalTensor(float16)
        g.SetGlobalBuffer(x, 64)
        u = LocalTensor(float16, TPosition.VECIN, 0, 128)
        DataCopyPad(u, g, params, pad)

    return kernel


def test_data_copy_params_are_the_ext_form():
    # 2 rows of 20 half (40 B), 24 B apart in GM; in UB each row starts on a 32-byte block
    # boundary (40 B rounded up to 64 B)
    x = np.arange(64, dtype=np.float16)
    r = _run(_pad_kernel(DataCopyParams(2, 40, 24, 0), DataCopyPadParams(False, 0, 0, 0)),
             {"x": x})
    (c,) = _ops(r, Opcode.COPY_GM_TO_UB)
    assert (c.params, c.nbytes, c.src[0].nbytes, c.dst.nbytes) == ((2, 40, 24, 0), 80, 104, 128)
    ub = r.program.functional.ub[0]
    assert np.array_equal(ub[0:40].view(np.float16), x[0:20])
    assert np.array_equal(ub[64:104].view(np.float16), x[32:52])  # row 2 starts 40 + 24 B on


@pytest.mark.parametrize("field, value", [("blockCount", 65536), ("blockLen", 65536),
                                          ("srcStride", 70000), ("dstStride", -1)])
def test_data_copy_params_uint16_range(field, value):
    p = DataCopyParams(1, 32, 0, 0)
    setattr(p, field, value)
    with pytest.raises(KernelError, match=rf"DataCopyParams.{field} .* uint16 range"):
        _run(_pad_kernel(p, None))


def test_data_copy_pad_params_uint8_range():
    with pytest.raises(KernelError, match=r"DataCopyPadParams.rightPadding 256 .* uint8"):
        _run(_pad_kernel(DataCopyParams(1, 32, 0, 0), DataCopyPadParams(True, 0, 256, 0)))


# -- CacheMode / SetL2CacheHint ---------------------------------------------------------------


def test_l2_cache_hint_is_carried_by_every_copy_and_by_indexed_tensors():
    def kernel(x, y):
        gx, gy = GlobalTensor(float32), GlobalTensor(float32)
        gx.SetGlobalBuffer(x, 64)
        gy.SetGlobalBuffer(y, 64)
        a = LocalTensor(float32, TPosition.VECIN, 0, 64)
        DataCopy(a, gx, 8)  # before the hint: normal
        gx.SetL2CacheHint(CacheMode.CACHE_MODE_DISABLE)
        DataCopy(a, gx[8], 8)  # a tensor made after the hint inherits it
        DataCopyPad(a, gx[16], DataCopyParams(1, 32, 0, 0), DataCopyPadParams())
        PipeBarrier(PIPE_ALL)
        DataCopy(gy, a, 8)  # gy keeps the default
        gy.SetL2CacheHint(CacheMode.CACHE_MODE_DISABLE)
        DataCopy(gy[8], a, 8)
        gy.SetL2CacheHint(CacheMode.CACHE_MODE_NORMAL)
        DataCopy(gy[16], a, 8)

    r = _run(kernel, {"x": np.zeros(64, np.float32), "y": np.zeros(64, np.float32)},
             {"y": (np.float32, (64,))})
    assert [c.cache for c in _ops(r, Opcode.COPY_GM_TO_UB)] == [CACHE_NORMAL, CACHE_DISABLE,
                                                               CACHE_DISABLE]
    assert [c.cache for c in _ops(r, Opcode.COPY_UB_TO_GM)] == [CACHE_NORMAL, CACHE_DISABLE,
                                                               CACHE_NORMAL]


def test_cache_mode_values_and_unmodelled_modes():
    assert [m.value for m in CacheMode] == [0, 1, 2, 4]  # as Ascend C numbers them
    g = GlobalTensor(float32)
    with pytest.raises(KernelError, match="CACHE_MODE_PERSISTENT is not modelled"):
        g.SetL2CacheHint(CacheMode.CACHE_MODE_PERSISTENT)
    with pytest.raises(KernelError, match="expected a CacheMode"):
        g.SetL2CacheHint(0)


# -- InitSocState / DivCeil -------------------------------------------------------------------


def test_init_soc_state_records_nothing():
    def kernel(x):
        InitSocState()

    assert _run(kernel).program.streams[0] == []


def test_div_ceil():
    assert (DivCeil(67108864, 4096), DivCeil(1398101, 16384), DivCeil(0, 5), DivCeil(7, 7)) \
        == (16384, 86, 0, 1)
    with pytest.raises(KernelError, match="division by zero"):
        DivCeil(1, 0)


# -- Add, mask + repeat form ------------------------------------------------------------------


def _add_kernel(dtype, n, addrs, mask, repeat, params, seen=None):
    def kernel(x, y, z):
        gx, gy, gz = GlobalTensor(dtype), GlobalTensor(dtype), GlobalTensor(dtype)
        gx.SetGlobalBuffer(x, n)
        gy.SetGlobalBuffer(y, n)
        gz.SetGlobalBuffer(z, n)
        xl = LocalTensor(dtype, TPosition.VECCALC, addrs[0], n)
        yl = LocalTensor(dtype, TPosition.VECCALC, addrs[1], n)
        zl = LocalTensor(dtype, TPosition.VECCALC, addrs[2], n)
        DataCopy(xl, gx, n)
        DataCopy(yl, gy, n)
        if addrs[2] not in addrs[:2]:
            DataCopy(zl, gz, n)  # z's old values show which lanes the Add leaves alone
        SetFlag(HardEvent.MTE2_V, 0)
        WaitFlag(HardEvent.MTE2_V, 0)
        Add(zl, xl, yl, mask, repeat, params)
        SetFlag(HardEvent.V_MTE3, 0)
        WaitFlag(HardEvent.V_MTE3, 0)
        DataCopy(gz, zl, n)

    return kernel


def _add_run(dtype, n, addrs, mask, repeat, params):
    rng = np.random.default_rng(7)
    x = rng.standard_normal(n).astype(dtype)
    y = rng.standard_normal(n).astype(dtype)
    z0 = np.full(n, -100, dtype)
    r = _run(_add_kernel(dtype, n, addrs, mask, repeat, params),
             {"x": x, "y": y, "z": z0.copy()}, {"z": (dtype, (n,))})
    return r, x, y, z0


def _expected(x, y, z0, mask, repeat, params, z_is_y=False):
    """The lanes the strides select, element by element, in the operand dtype."""
    per_block = 32 // x.dtype.itemsize
    d_blk, a_blk, b_blk, d_rep, a_rep, b_rep = params
    z = (y if z_is_y else z0).copy()
    for r in range(repeat):
        for lane in range(mask):
            blk, k = divmod(lane, per_block)

            def at(b, rep, r=r, blk=blk, k=k):
                return (r * rep + blk * b) * per_block + k

            z[at(d_blk, d_rep)] = x[at(a_blk, a_rep)] + y[at(b_blk, b_rep)]
    return z


def test_add_mask_repeat_contiguous_fp32_exact_and_recorded():
    p = BinaryRepeatParams()
    assert (p.dstBlkStride, p.src0BlkStride, p.src1BlkStride, p.dstRepStride,
            p.src0RepStride, p.src1RepStride) == (1, 1, 1, 8, 8, 8)
    r, x, y, z0 = _add_run(np.float32, 256, (0, 1024, 2048), 64, 4, p)
    assert np.array_equal(r.outputs["z"], x + y)
    (ins,) = _ops(r, Opcode.ADD)
    assert (ins.mask, ins.repeat, ins.count, ins.params) == (64, 4, 256, (1, 1, 1, 8, 8, 8))
    assert (ins.src[0].nbytes, ins.src[1].nbytes, ins.dst.nbytes) == (1024, 1024, 1024)
    ct = r.trace.cores[0]
    row = int(np.flatnonzero(np.array([ct.stream[int(i)].op is Opcode.ADD
                                       for i in ct.index]))[0])
    assert int(ct.end[row] - ct.start[row]) == 42  # 10 + 256 elements / 8
    assert r.hazards == []


def test_add_mask_repeat_block_stride_zero_and_aliased_dst_fp32():
    """bank_conflict_ub scenario 7's form: src0 reads one block 8 times per repeat, repeats
    one block apart; src1 and dst are the same window."""
    params = BinaryRepeatParams(1, 0, 1, 8, 1, 8)
    r, x, y, z0 = _add_run(np.float32, 256, (0, 1024, 1024), 64, 4, params)
    want = _expected(x, y, z0, 64, 4, (1, 0, 1, 8, 1, 8), z_is_y=True)
    assert np.array_equal(r.outputs["z"], want)
    # lane 9 of repeat 1: src0 block 1 (repeat stride 1, block stride 0), element 1
    assert r.outputs["z"][64 + 9] == np.float32(x[8 + 1] + y[64 + 9])
    (ins,) = _ops(r, Opcode.ADD)
    assert ins.src[0].nbytes == 4 * 32  # blocks 0..3: (4 - 1) x 1 block + one block
    assert ins.params == (1, 0, 1, 8, 1, 8)


def test_add_mask_repeat_partial_mask_fp16_leaves_other_lanes():
    params = BinaryRepeatParams(2, 1, 1, 16, 8, 8)  # dst every other block, 2 repeats apart
    r, x, y, z0 = _add_run(np.float16, 512, (0, 1024, 2048), 100, 2, params)
    want = _expected(x, y, z0, 100, 2, (2, 1, 1, 16, 8, 8))
    assert np.array_equal(r.outputs["z"].view(np.uint16), want.view(np.uint16))
    assert (r.outputs["z"] == -100).sum() == 512 - 200  # 100 lanes x 2 repeats written
    (ins,) = _ops(r, Opcode.ADD)
    assert (ins.mask, ins.repeat, ins.count) == (100, 2, 200)


@pytest.mark.parametrize("args, rule", [
    ((65, 1, BinaryRepeatParams()), r"mask 65 outside \[0, 64\]"),
    ((64, 256, BinaryRepeatParams()), r"repeatTime 256 outside \[0, 255\]"),
    ((64, 1, BinaryRepeatParams(1, 1, 1, 256, 8, 8)), r"dstRepStride 256 .* uint8"),
    ((64, 1, (1, 1, 1, 8, 8, 8)), "expected BinaryRepeatParams"),
    ((64, 1), "expected .* got 5 arguments"),
])
def test_add_mask_repeat_rules(args, rule):
    def kernel(x):
        a = LocalTensor(float32, TPosition.VECCALC, 0, 64)
        Add(a, a, a, *args)

    with pytest.raises(KernelError, match=rule):
        _run(kernel)


def test_add_mask_repeat_past_its_tensor_is_out_of_bounds():
    def kernel(x):
        a = LocalTensor(float32, TPosition.VECCALC, 0, 64)  # one repeat's worth
        Add(a, a, a, 64, 2, BinaryRepeatParams())

    with pytest.raises(OutOfBoundsError, match=r"Add dst: touches UB bytes \[0, 512\)"):
        _run(kernel)

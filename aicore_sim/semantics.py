"""The numpy effect of each opcode: the one home of numerics.

Step of the flow: the record pass calls :func:`execute` on the functional image as each
Ascend C call is made; the timed replay calls it again on the timed image when the
instruction completes. Nothing else in the package computes a kernel's numbers.

Conventions (see docs/model.md, "Numerics"):

- bfloat16 comes from ``ml_dtypes``; float16 / float32 are numpy's IEEE types.
- Widening casts are exact; narrowing casts (CAST_RINT) round to nearest, ties to even, from
  float32 (never from float64). fp16 overflow gives ±inf (IEEE); the device's optional
  saturation mode is not modelled.
- Element-wise vector ops compute in their operand dtype with one IEEE rounding each; the
  mask + repeat form of Add works on the lanes its block / repeat strides select, reading
  both sources before writing.
- Reductions use the documented adjacent-pair binary tree: inside one 32-byte block
  (BlockReduceSum) and across the 64 lanes of a repeat (WholeReduceSum), inactive lanes
  contributing +0.
- DataCopy UB->UB moves whole 32-byte blocks (its length is a multiple of 32 bytes).
- DataCopyPad GM->UB pads each block to 32 bytes in UB; the padding bytes are left as they
  were (their content is unspecified on device and never read by the supported kernels).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.lib.stride_tricks import as_strided

from aicore_sim.isa import Instr, Opcode, Operand, RoundMode, Space

Gm = dict[str, np.ndarray]  # GM tensor name -> its bytes
Out = list | None  # None: write now; a list: collect deferred writes (see _put)

BLOCK = 32  # bytes in one DataBlock
REPEAT_BYTES = 256  # bytes of one vector repeat (8 DataBlocks)


def _up32(x: int) -> int:
    return -(-x // BLOCK) * BLOCK


def _mem(op: Operand, ub: np.ndarray, gm: dict[str, np.ndarray]) -> np.ndarray:
    return ub if op.space is Space.UB else gm[op.buf]


def _typed(op: Operand, mem: np.ndarray, count: int, offset: int = 0) -> np.ndarray:
    start = op.addr + offset
    return mem[start : start + count * op.dtype.itemsize].view(op.dtype)


def _blocks(mem: np.ndarray, start: int, count: int, length: int, pitch: int) -> np.ndarray:
    """A (count, length) byte view of ``count`` blocks ``pitch`` bytes apart."""
    if count == 1:
        return mem[start : start + length].reshape(1, length)
    base = mem[start:]
    return as_strided(base, shape=(count, length), strides=(pitch, 1), writeable=True)


def _put(target: np.ndarray, index, values: np.ndarray, out: list | None) -> None:
    """Write ``values`` now (``out`` is None) or defer the write: ``out`` collects
    (target, index, private copy of values) for :func:`commit` at the instruction's end."""
    if out is None:
        target[index] = values
    else:
        out.append((target, index, np.array(values, copy=True)))


def pair_tree_sum(x: np.ndarray) -> np.ndarray:
    """Adjacent-pair binary tree over the last axis (a power of two), one rounding per add."""
    while x.shape[-1] > 1:
        x = x[..., 0::2] + x[..., 1::2]
    return x[..., 0]


# --- data movement ---------------------------------------------------------------------------


def _copy_gm_to_ub(ins: Instr, ub: np.ndarray, gm: Gm, out: Out) -> None:
    count, length, src_stride, dst_stride = ins.params
    if count == 0 or length == 0:
        return
    src, dst = ins.src[0], ins.dst
    s = _blocks(gm[src.buf], src.addr, count, length, length + src_stride)
    d = _blocks(ub, dst.addr, count, length, _up32(length) + dst_stride * BLOCK)
    _put(d, ..., s, out)


def _copy_ub_to_gm(ins: Instr, ub: np.ndarray, gm: Gm, out: Out) -> None:
    count, length, src_stride, dst_stride = ins.params
    if count == 0 or length == 0:
        return
    src, dst = ins.src[0], ins.dst
    s = _blocks(ub, src.addr, count, length, _up32(length) + src_stride * BLOCK)
    d = _blocks(gm[dst.buf], dst.addr, count, length, length + dst_stride)
    _put(d, ..., s, out)


def _data_copy_ub_to_ub(ins: Instr, ub: np.ndarray, gm: Gm, out: Out) -> None:
    count, length, src_stride, dst_stride = ins.params
    if count == 0 or length == 0:
        return
    src, dst = ins.src[0], ins.dst
    s = _blocks(ub, src.addr, count, length, length + src_stride * BLOCK)
    d = _blocks(ub, dst.addr, count, length, length + dst_stride * BLOCK)
    _put(d, ..., np.array(s, copy=True), out)  # read everything before writing


# --- vector, count mode ----------------------------------------------------------------------


def _cast(ins: Instr, ub: np.ndarray, gm: Gm, out: Out) -> None:
    src, dst = ins.src[0], ins.dst
    x = _typed(src, ub, ins.count)
    if dst.dtype.itemsize < src.dtype.itemsize and src.dtype != np.float32:
        x = x.astype(np.float32)  # narrowing always goes through one fp32 rounding step
    if dst.dtype.kind in "iu" and x.dtype.kind == "f":
        x = np.rint(x)  # float -> integer with CAST_RINT: nearest, ties to even
    _put(_typed(dst, ub, ins.count), ..., x.astype(dst.dtype), out)


def _scalar_as(value: float, dtype: np.dtype) -> np.ndarray:
    """A scalar operand in ``dtype``: integers exactly, floats rounded once through fp32."""
    if dtype.kind in "iu":
        return np.asarray(int(value)).astype(dtype)
    return np.asarray(value, dtype=np.float32).astype(dtype)


def _duplicate(ins: Instr, ub: np.ndarray, gm: Gm, out: Out) -> None:
    dst = ins.dst
    value = _scalar_as(ins.scalar, dst.dtype)
    _put(_typed(dst, ub, ins.count), ..., np.full(ins.count, value, dst.dtype), out)


def _muls(ins: Instr, ub: np.ndarray, gm: Gm, out: Out) -> None:
    src, dst = ins.src[0], ins.dst
    x = _typed(src, ub, ins.count)
    s = _scalar_as(ins.scalar, src.dtype)
    _put(_typed(dst, ub, ins.count), ..., x * s, out)


def _binary(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]):
    def run(ins: Instr, ub: np.ndarray, gm: Gm, out: Out) -> None:
        if ins.params:  # the mask + repeat form (Add); count mode records no params
            _binary_repeat(fn, ins, ub, out)
            return
        a = _typed(ins.src[0], ub, ins.count)
        b = _typed(ins.src[1], ub, ins.count)
        _put(_typed(ins.dst, ub, ins.count), ..., fn(a, b), out)

    return run


# --- vector, mask + repeat mode --------------------------------------------------------------


def _lane_offsets(dtype: np.dtype, mask: int, repeat: int, blk: int, rep: int) -> np.ndarray:
    """Byte offsets of the active lanes of every repeat (normal mask = leading ``mask`` lanes)."""
    per_block = BLOCK // dtype.itemsize
    lanes = np.arange(mask)
    within = (lanes // per_block) * blk * BLOCK + (lanes % per_block) * dtype.itemsize
    return (np.arange(repeat)[:, None] * rep * BLOCK + within[None, :]).reshape(-1)


def _copy(ins: Instr, ub: np.ndarray, gm: Gm, out: Out) -> None:
    if ins.mask == 0 or ins.repeat == 0:
        return  # documented no-op on A2/A3
    src, dst = ins.src[0], ins.dst
    dst_blk, src_blk, dst_rep, src_rep = ins.params
    lanes = REPEAT_BYTES // src.dtype.itemsize
    if (dst_blk, src_blk, dst_rep, src_rep) == (1, 1, 8, 8):
        n = ins.repeat * lanes
        s = _typed(src, ub, n).reshape(ins.repeat, lanes)
        d = _typed(dst, ub, n).reshape(ins.repeat, lanes)
        _put(d, (slice(None), slice(0, ins.mask)), s[:, : ins.mask], out)
        return
    so = _lane_offsets(src.dtype, ins.mask, ins.repeat, src_blk, src_rep) + src.addr
    do = _lane_offsets(dst.dtype, ins.mask, ins.repeat, dst_blk, dst_rep) + dst.addr
    size = src.dtype.itemsize
    for b in range(size):
        _put(ub, do + b, ub[so + b], out)


def _lane_bytes(op: Operand, mask: int, repeat: int, blk: int, rep: int) -> np.ndarray:
    """(active lanes, itemsize) UB byte indices of a mask + repeat operand, in lane order."""
    offs = _lane_offsets(op.dtype, mask, repeat, blk, rep) + op.addr
    return offs[:, None] + np.arange(op.dtype.itemsize)


def _binary_repeat(fn: Callable[[np.ndarray, np.ndarray], np.ndarray], ins: Instr,
                   ub: np.ndarray, out: Out) -> None:
    """Element-wise ``fn`` on the leading ``mask`` lanes of each repeat, every operand with
    its own block / repeat strides (``params = (dstBlk, src0Blk, src1Blk, dstRep, src0Rep,
    src1Rep)``). Both sources are read in full before any lane is written, so a destination
    that aliases a source (same address and strides) reads the old values."""
    if ins.mask == 0 or ins.repeat == 0:
        return  # no lane is active
    d_blk, a_blk, b_blk, d_rep, a_rep, b_rep = ins.params
    a_op, b_op, dst = ins.src[0], ins.src[1], ins.dst
    lanes = REPEAT_BYTES // dst.dtype.itemsize
    if ins.mask == lanes and ins.params == (1, 1, 1, 8, 8, 8):  # contiguous, every lane
        n = ins.repeat * lanes
        r = fn(_typed(a_op, ub, n), _typed(b_op, ub, n))
        _put(_typed(dst, ub, n), ..., r, out)
        return
    a = ub[_lane_bytes(a_op, ins.mask, ins.repeat, a_blk, a_rep)].reshape(-1).view(a_op.dtype)
    b = ub[_lane_bytes(b_op, ins.mask, ins.repeat, b_blk, b_rep)].reshape(-1).view(b_op.dtype)
    r = np.ascontiguousarray(fn(a, b), dtype=dst.dtype)
    idx = _lane_bytes(dst, ins.mask, ins.repeat, d_blk, d_rep)
    _put(ub, idx, r.view(np.uint8).reshape(idx.shape), out)


def _gather_lanes(src: Operand, ub: np.ndarray, ins: Instr, blk: int, rep: int) -> np.ndarray:
    """(repeat, 8 blocks, lanes per block) values of the source, inactive lanes as +0."""
    per_block = BLOCK // src.dtype.itemsize
    lanes = REPEAT_BYTES // src.dtype.itemsize
    mask = min(ins.mask, lanes)
    out = np.zeros((ins.repeat, lanes), dtype=src.dtype)
    if (blk, rep) == (1, 8):
        vals = _typed(src, ub, ins.repeat * lanes).reshape(ins.repeat, lanes)
        out[:, :mask] = vals[:, :mask]
    else:
        offs = _lane_offsets(src.dtype, mask, ins.repeat, blk, rep) + src.addr
        raw = np.stack([ub[offs + b] for b in range(src.dtype.itemsize)], axis=-1)
        out[:, :mask] = raw.reshape(-1).view(src.dtype).reshape(ins.repeat, mask)
    return out.reshape(ins.repeat, 8, per_block)


def _block_reduce_sum(ins: Instr, ub: np.ndarray, gm: Gm, out: Out) -> None:
    if ins.mask == 0 or ins.repeat == 0:
        return
    src, dst = ins.src[0], ins.dst
    dst_rep, src_blk, src_rep = ins.params
    vals = _gather_lanes(src, ub, ins, src_blk, src_rep)  # read everything before writing
    sums = pair_tree_sum(vals)  # (repeat, 8)
    if dst_rep == 1:
        _put(_typed(dst, ub, ins.repeat * 8), ..., sums.reshape(-1), out)
    else:
        for r in range(ins.repeat):
            _put(_typed(dst, ub, 8, r * dst_rep * 8 * dst.dtype.itemsize), ..., sums[r], out)


def _whole_reduce_sum(ins: Instr, ub: np.ndarray, gm: Gm, out: Out) -> None:
    if ins.mask == 0 or ins.repeat == 0:
        return
    src, dst = ins.src[0], ins.dst
    dst_rep, src_blk, src_rep = ins.params
    vals = _gather_lanes(src, ub, ins, src_blk, src_rep)
    sums = pair_tree_sum(vals.reshape(ins.repeat, -1))  # (repeat,)
    for r in range(ins.repeat):
        _put(_typed(dst, ub, 1, r * dst_rep * dst.dtype.itemsize), ..., sums[r], out)


# --- scalar ----------------------------------------------------------------------------------


def _set_value(ins: Instr, ub: np.ndarray, gm: Gm, out: Out) -> None:
    dst = ins.dst
    _put(_typed(dst, _mem(dst, ub, gm), 1), ..., np.asarray(ins.scalar).astype(dst.dtype), out)


def _none(ins: Instr, ub: np.ndarray, gm: Gm, out: Out) -> None:
    return None


EFFECTS: dict[Opcode, Callable[[Instr, np.ndarray, Gm, Out], None]] = {
    Opcode.COPY_GM_TO_UB: _copy_gm_to_ub,
    Opcode.COPY_UB_TO_GM: _copy_ub_to_gm,
    Opcode.DATA_COPY_UB_TO_UB: _data_copy_ub_to_ub,
    Opcode.CAST: _cast,
    Opcode.COPY: _copy,
    Opcode.DUPLICATE: _duplicate,
    Opcode.MULS: _muls,
    Opcode.MUL: _binary(np.multiply),
    Opcode.ADD: _binary(np.add),
    Opcode.BLOCK_REDUCE_SUM: _block_reduce_sum,
    Opcode.WHOLE_REDUCE_SUM: _whole_reduce_sum,
    Opcode.SET_VALUE_UB: _set_value,
    Opcode.SET_FLAG: _none,
    Opcode.WAIT_FLAG: _none,
    Opcode.BARRIER: _none,
    Opcode.SYNC_ALL: _none,
    Opcode.GET_VALUE_GM: _none,
    Opcode.GET_VALUE_UB: _none,
}

HAS_EFFECT = frozenset(op for op, fn in EFFECTS.items() if fn is not _none)


def execute(ins: Instr, ub: np.ndarray, gm: dict[str, np.ndarray]) -> None:
    """Apply the effect of ``ins`` to one core's UB bytes and the GM tensors, now."""
    EFFECTS[ins.op](ins, ub, gm, None)


def read(ins: Instr, ub: np.ndarray, gm: dict[str, np.ndarray]) -> list:
    """Read the sources of ``ins`` and compute its result without writing it (the timed
    replay calls this when the instruction starts and :func:`commit` when it ends)."""
    pending: list = []
    EFFECTS[ins.op](ins, ub, gm, pending)
    return pending


def commit(pending: list) -> None:
    """Write what :func:`read` computed."""
    for target, index, values in pending:
        target[index] = values


def validate_cast(src: np.dtype, dst: np.dtype, mode: RoundMode) -> str | None:
    """Why a Cast is not supported (None if it is): CAST_NONE only widens, CAST_RINT narrows."""
    widening = dst.itemsize > src.itemsize
    if mode is RoundMode.CAST_NONE and not widening and src != dst:
        return f"Cast {src}->{dst} with CAST_NONE: CAST_NONE is only defined for exact widening"
    if mode is RoundMode.CAST_RINT and widening:
        return f"Cast {src}->{dst} with CAST_RINT: use CAST_NONE for a widening cast"
    return None

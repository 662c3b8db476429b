"""The numpy effect of each opcode: the one home of numerics.

Step of the flow: the record pass calls :func:`execute` on the functional image as each
Ascend C call is made; the timed replay calls it again on the timed image when the
instruction completes. Nothing else in the package computes a kernel's numbers.

Conventions (see docs/model.md, "Numerics"):

- bfloat16 comes from ``ml_dtypes``; float16 / float32 are numpy's IEEE types.
- Casts round once, from the exact source value, by the call's ``RoundMode``: CAST_RINT to
  nearest, ties to even; CAST_ROUND to nearest, ties away from zero; CAST_FLOOR / CAST_CEIL /
  CAST_TRUNC towards -inf / +inf / zero; CAST_ODD (float to narrower float) to the neighbour
  with an odd last mantissa bit when inexact; CAST_NONE is exact where the target holds the
  value and CAST_RINT where it does not (the Ascend C definition). Float overflow gives ±inf
  under the nearest modes (IEEE) and the largest finite value where the mode rounds towards
  it; float -> integer saturates to the integer range and NaN becomes 0 (the device's
  saturating conversion; ASSUMPTION for NaN, docs/model.md).
- Element-wise vector ops compute in their operand dtype with one IEEE rounding each (Exp and
  Sqrt: numpy's function in the operand dtype, fp16 / bf16 through fp32 and rounded once; the
  device's transcendental units are not documented bit for bit, so Exp is exact to numpy's
  result here and within a stated tolerance of the device); the mask + repeat forms work on
  the lanes their block / repeat strides select, reading every source before writing.
- Reductions use the documented adjacent-pair binary tree: inside one 32-byte block
  (BlockReduceSum) and across the 64 lanes of a repeat (WholeReduceSum), inactive lanes
  contributing +0.
- DataCopy UB->UB moves whole 32-byte blocks (its length is a multiple of 32 bytes).
- A UB->GM copy after ``SetAtomicAdd<T>`` adds its elements to GM's in ``T`` (one rounding
  each), at the copy's end in the timed replay: adds of several cores land in the order their
  copies complete, and in core order in the functional image (record pass), so float sums
  may differ in the last bits between the two (reported as ``timed_differs``).
- DataCopyPad GM->UB pads each block to 32 bytes in UB; the padding bytes are left as they
  were (their content is unspecified on device and never read by the supported kernels).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import ml_dtypes
import numpy as np
from numpy.lib.stride_tricks import as_strided

from aicore_sim.sim.isa import Instr, Opcode, Operand, RoundMode, Space

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
    if not ins.src:  # InitGlobalMemory / InitOutput: fill with the scalar
        dst = ins.dst
        n = length // dst.dtype.itemsize
        _put(_typed(dst, gm[dst.buf], n), ..., np.full(n, _scalar_as(ins.scalar, dst.dtype),
                                                       dst.dtype), out)
        return
    src, dst = ins.src[0], ins.dst
    s = _blocks(ub, src.addr, count, length, _up32(length) + src_stride * BLOCK)
    d = _blocks(gm[dst.buf], dst.addr, count, length, length + dst_stride)
    if ins.atomic:  # SetAtomicAdd / Max: combine with what GM holds when the copy lands
        fn = np.maximum if ins.atomic.startswith("max:") else np.add
        dt = src.dtype
        if out is None:
            d[...] = _combined(d, s, dt, fn)
        else:
            out.append((d, _ATOMIC, np.array(s, copy=True), dt, fn))
        return
    _put(d, ..., s, out)


_ATOMIC = object()  # marks a deferred atomic add / max in a pending list (see commit)


def _combined(d: np.ndarray, s: np.ndarray, dt: np.dtype, fn) -> np.ndarray:
    """Bytes of ``fn(d, s)`` element-wise in ``dt`` (rows of whole elements)."""
    a = np.ascontiguousarray(d).view(dt)
    b = np.ascontiguousarray(s).view(dt)
    return fn(a, b).astype(dt).view(np.uint8).reshape(d.shape)


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
    if ins.scalar:  # int32 -> half after SetDeqScale: the exact product, rounded once
        x = x.astype(np.float64) * ins.scalar
    _put(_typed(dst, ub, ins.count), ..., cast_values(x, dst.dtype, ins.round_mode), out)


_BF16 = np.dtype(ml_dtypes.bfloat16)


def _is_float(dt: np.dtype) -> bool:
    return dt.kind == "f" or dt == _BF16


def _float_bits(dt: np.dtype) -> np.dtype:
    return {2: np.dtype(np.uint16), 4: np.dtype(np.uint32)}[dt.itemsize]


def _toward(y: np.ndarray, up: np.ndarray) -> np.ndarray:
    """The next representable value of ``y``'s float dtype above (``up``) or below it, by its
    bits (no numpy nextafter for bfloat16). ``y`` finite or infinite, not NaN."""
    bits = y.view(_float_bits(y.dtype)).astype(np.int64)
    width = 8 * y.dtype.itemsize
    sign = (bits >> (width - 1)) & 1
    mag = bits & ((1 << (width - 1)) - 1)
    # moving away from zero adds one to the magnitude, towards zero takes one off; from
    # +-0 the step goes to the smallest subnormal of the direction's sign
    away = np.where(sign == 1, ~up, up)
    new_mag = np.where(away, mag + 1, mag - 1)
    zero = mag == 0
    new_sign = np.where(zero, np.where(up, 0, 1), sign)
    new_mag = np.where(zero, 1, new_mag)
    out = (new_sign << (width - 1)) | new_mag
    return out.astype(_float_bits(y.dtype)).view(y.dtype)


def _round_float(x64: np.ndarray, dt: np.dtype, mode: RoundMode) -> np.ndarray:
    """Exact values ``x64`` (float64) rounded once into float dtype ``dt`` by ``mode``."""
    with np.errstate(over="ignore"):  # overflow to +-inf is the IEEE answer
        y = x64.astype(dt)  # round to nearest, ties to even (one rounding from the exact value)
    if mode in (RoundMode.CAST_RINT, RoundMode.CAST_NONE):
        return y
    yf = y.astype(np.float64)
    inexact = (yf != x64) & ~np.isnan(x64)
    if not inexact.any():
        return y
    above = yf > x64  # y is the upper neighbour
    other = _toward(y, ~above)  # the neighbour on the other side of x
    lo = np.where(above, other, y)
    hi = np.where(above, y, other)
    if mode is RoundMode.CAST_FLOOR:
        r = lo
    elif mode is RoundMode.CAST_CEIL:
        r = hi
    elif mode is RoundMode.CAST_TRUNC:
        r = np.where(x64 > 0, lo, hi)
    elif mode is RoundMode.CAST_ROUND:  # ties away from zero, else nearest (= y)
        d_lo = x64 - lo.astype(np.float64)
        d_hi = hi.astype(np.float64) - x64
        tie = d_lo == d_hi
        r = np.where(tie, np.where(x64 > 0, hi, lo), y)
    elif mode is RoundMode.CAST_ODD:
        odd_lo = (lo.view(_float_bits(dt)) & 1).astype(bool)
        r = np.where(odd_lo, lo, hi)
    else:
        raise ValueError(f"round mode {mode} has no float rule")
    return np.where(inexact, r, y).astype(dt)


def _round_int(x64: np.ndarray, dt: np.dtype, mode: RoundMode) -> np.ndarray:
    """Float values ``x64`` rounded by ``mode`` and saturated into integer dtype ``dt``."""
    if mode in (RoundMode.CAST_RINT, RoundMode.CAST_NONE):
        r = np.rint(x64)
    elif mode is RoundMode.CAST_ROUND:
        t = np.trunc(x64)
        r = t + np.sign(x64) * (np.abs(x64 - t) >= 0.5)
    elif mode is RoundMode.CAST_FLOOR:
        r = np.floor(x64)
    elif mode is RoundMode.CAST_CEIL:
        r = np.ceil(x64)
    elif mode is RoundMode.CAST_TRUNC:
        r = np.trunc(x64)
    else:
        raise ValueError(f"round mode {mode} has no integer rule")
    info = np.iinfo(dt)
    r = np.where(np.isnan(r), 0, np.clip(r, info.min, info.max))
    return r.astype(dt)


def cast_values(x: np.ndarray, dt: np.dtype, mode: RoundMode) -> np.ndarray:
    """``x`` converted to ``dt`` as a Cast with ``mode`` does (module docstring)."""
    if x.dtype == dt:
        return x.copy()
    x64 = x.astype(np.float64)  # exact for every supported source
    if _is_float(dt):
        return _round_float(x64, dt, mode)
    if _is_float(x.dtype):
        return _round_int(x64, dt, mode)
    return x.astype(dt)  # integer widening (validate_cast refuses the rest)


def _scalar_as(value: float, dtype: np.dtype) -> np.ndarray:
    """A scalar operand in ``dtype``: integers exactly, floats rounded once through fp32."""
    if dtype.kind in "iu":
        return np.asarray(int(value)).astype(dtype)
    return np.asarray(value, dtype=np.float32).astype(dtype)


def _duplicate(ins: Instr, ub: np.ndarray, gm: Gm, out: Out) -> None:
    dst = ins.dst
    value = _scalar_as(ins.scalar, dst.dtype)
    if ins.params:  # mask + repeat form: (dstBlkStride, dstRepStride)
        if ins.mask == 0 or ins.repeat == 0:
            return
        d_blk, d_rep = ins.params[:2]
        idx = _lane_bytes(dst, ins.mask, ins.repeat, d_blk, d_rep)
        if len(ins.params) > 2:  # a bit mask: lanes [params[2], mask) of each repeat
            lo = ins.params[2]
            idx = idx.reshape(ins.repeat, ins.mask, -1)[:, lo:].reshape(-1, idx.shape[1])
        vals = np.full(idx.shape[0], value, dst.dtype)
        _put(ub, idx, vals.view(np.uint8).reshape(idx.shape), out)
        return
    _put(_typed(dst, ub, ins.count), ..., np.full(ins.count, value, dst.dtype), out)


def _unary(fn: Callable[[np.ndarray], np.ndarray]):
    """An element-wise one-source op, count or mask + repeat form (``params`` = (dstBlk,
    srcBlk, dstRep, srcRep))."""
    def run(ins: Instr, ub: np.ndarray, gm: Gm, out: Out) -> None:
        src, dst = ins.src[0], ins.dst
        if ins.params:
            if ins.mask == 0 or ins.repeat == 0:
                return
            d_blk, s_blk, d_rep, s_rep = ins.params
            x = ub[_lane_bytes(src, ins.mask, ins.repeat, s_blk, s_rep)].reshape(-1).view(
                src.dtype)
            r = np.ascontiguousarray(fn(x), dtype=dst.dtype)
            idx = _lane_bytes(dst, ins.mask, ins.repeat, d_blk, d_rep)
            _put(ub, idx, r.view(np.uint8).reshape(idx.shape), out)
            return
        x = _typed(src, ub, ins.count)
        _put(_typed(dst, ub, ins.count), ..., np.asarray(fn(x), dtype=dst.dtype), out)

    return run


def _with_scalar(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]):
    """A vector-scalar op (Muls, Adds, Maxs, Mins): the scalar in the operand dtype."""
    def run(ins: Instr, ub: np.ndarray, gm: Gm, out: Out) -> None:
        s = _scalar_as(ins.scalar, ins.src[0].dtype)
        _unary(lambda x: fn(x, s))(ins, ub, gm, out)

    return run


def _via_fp32(fn: Callable[[np.ndarray], np.ndarray]) -> Callable[[np.ndarray], np.ndarray]:
    """``fn`` in the operand dtype; 16-bit floats through float32, rounded once back."""
    def run(x: np.ndarray) -> np.ndarray:
        if x.dtype.itemsize < 4:
            return fn(x.astype(np.float32)).astype(x.dtype)
        return fn(x)

    return run


def _arith_progression(ins: Instr, ub: np.ndarray, gm: Gm, out: Out) -> None:
    """dst[i] = first + i x difference, computed exactly and rounded once into the dtype
    (exact for the integer indices kernels build with it)."""
    dst = ins.dst
    exact = float(ins.scalar) + np.arange(ins.count, dtype=np.float64) * float(ins.params[0])
    if dst.dtype.kind in "iu":
        vals = np.rint(exact).astype(np.int64).astype(dst.dtype)
    else:
        vals = exact.astype(dst.dtype)
    _put(_typed(dst, ub, ins.count), ..., vals, out)


def _reduce_lanes(dtype: np.dtype) -> int:
    return REPEAT_BYTES // dtype.itemsize


def _reduce_sum(ins: Instr, ub: np.ndarray, gm: Gm, out: Out) -> None:
    """Level-2 ReduceSum of ``count`` elements into dst[0]: each repeat of 256 bytes summed by
    the adjacent-pair tree (missing lanes +0), then the repeats' sums the same way, pass after
    pass, until one value is left (the WholeReduceSum passes the library makes)."""
    src, dst = ins.src[0], ins.dst
    x = np.array(_typed(src, ub, ins.count), copy=True)
    lanes = _reduce_lanes(src.dtype)
    while True:
        pad = -x.size % lanes
        if pad or x.size == 0:
            x = np.concatenate((x, np.zeros(pad or lanes, x.dtype)))
        x = pair_tree_sum(x.reshape(-1, lanes))
        if x.size == 1:
            break
    _put(_typed(dst, ub, 1), ..., x, out)


def _reduce_max(ins: Instr, ub: np.ndarray, gm: Gm, out: Out) -> None:
    """Level-2 ReduceMax: dst[0] = the largest of ``count`` elements; with calIndex, dst[1]
    holds the index of its first occurrence as an unsigned integer of the element's width."""
    src, dst = ins.src[0], ins.dst
    x = np.array(_typed(src, ub, ins.count), copy=True)
    i = int(np.argmax(x)) if x.size else 0
    vals = [x[i:i + 1].astype(dst.dtype).view(np.uint8)]
    if ins.params and ins.params[0]:
        bits = {2: np.uint16, 4: np.uint32}[dst.dtype.itemsize]
        vals.append(np.array([i], bits).view(np.uint8))
    raw = np.concatenate(vals)
    _put(ub, slice(dst.addr, dst.addr + raw.size), raw, out)


# --- sort (A2/A3 layout: one 8-byte (score, index) structure per element) -------------------

SORT_BYTES = 8  # a sorted element: score in the low bytes, uint32 index in the high 4


def _pack_sorted(scores: np.ndarray, index: np.ndarray) -> np.ndarray:
    """(n, 8) bytes: the score's bytes first (fp16: 2 bytes and 2 reserved zero bytes), then
    the uint32 index."""
    out = np.zeros((scores.size, SORT_BYTES), np.uint8)
    width = scores.dtype.itemsize
    out[:, :width] = scores.view(np.uint8).reshape(-1, width)
    out[:, 4:] = index.astype(np.uint32).view(np.uint8).reshape(-1, 4)
    return out


def _unpack_sorted(raw: np.ndarray, dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    width = dtype.itemsize
    scores = np.ascontiguousarray(raw[:, :width]).view(dtype).reshape(-1)
    index = np.ascontiguousarray(raw[:, 4:]).view(np.uint32).reshape(-1)
    return scores, index


def _descending(scores: np.ndarray) -> np.ndarray:
    """Stable order by score, largest first: equal scores keep their input order (the
    documented tie rule: of score[i] == score[j] with j < i, j comes first)."""
    return np.argsort(-scores.astype(np.float64), kind="stable")


def _sort(ins: Instr, ub: np.ndarray, gm: Gm, out: Out) -> None:
    """Sort: ``count`` scores with their uint32 indices, descending, into (score, index)
    structures; ``isFullSort`` false sorts each group of 32 on its own."""
    s_op, i_op = ins.src
    n = ins.count
    scores = np.array(_typed(s_op, ub, n), copy=True)
    index = np.array(_typed(i_op, ub, n), copy=True)
    if ins.params[0]:
        order = _descending(scores)
    else:
        order = np.concatenate([g + _descending(scores[g:g + 32]) for g in range(0, n, 32)])
    raw = _pack_sorted(scores[order], index[order]).reshape(-1)
    _put(ub, slice(ins.dst.addr, ins.dst.addr + raw.size), raw, out)


def _mrg_lists(srcs, lengths, ub: np.ndarray, dtype: np.dtype
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(scores, indices, list of each element, merged order) of the lists to merge: the
    order is descending, equal scores from the earlier list first and, within a list, in
    their order."""
    scores, index, rank = [], [], []
    for k, (op, length) in enumerate(zip(srcs, lengths)):
        raw = ub[op.addr:op.addr + length * SORT_BYTES].reshape(-1, SORT_BYTES)
        s, i = _unpack_sorted(raw, dtype)
        scores.append(s)
        index.append(i)
        rank.append(np.full(length, k))
    s, i, r = np.concatenate(scores), np.concatenate(index), np.concatenate(rank)
    return s, i, r, _descending(s)  # stable: the lists' concatenation order breaks ties


def _exhausted_stop(rank: np.ndarray, order: np.ndarray, nlists: int) -> int:
    """Elements a merge with exhausted suspension writes: up to and including the last
    element of the first list to run out (0 when a list is empty)."""
    ranks = rank[order]
    stop = len(order)
    for k in range(nlists):
        where = np.flatnonzero(ranks == k)
        stop = min(stop, int(where[-1]) + 1 if where.size else 0)
    return stop


def mrg_sort_taken(srcs, lengths, ub: np.ndarray, dtype: np.dtype) -> list[int]:
    """Structures a merge with exhausted suspension takes from each list (what MrgSort's
    ``sortedNum`` reports)."""
    _, _, rank, order = _mrg_lists(srcs, lengths, ub, dtype)
    stop = _exhausted_stop(rank, order, len(lengths))
    return [int(np.count_nonzero(rank[order[:stop]] == k)) for k in range(len(lengths))]


def _mrg_sort(ins: Instr, ub: np.ndarray, gm: Gm, out: Out) -> None:
    """MrgSort: merge the valid sorted lists (their lengths in ``params``, then the
    exhausted-suspension flag) into one, descending; equal scores come from the earlier list
    first, and within a list keep their order. With exhausted suspension the merge stops
    once one list has been written out entirely."""
    k = len(ins.src)
    lengths = ins.params[:k]
    s, i, rank, order = _mrg_lists(ins.src, lengths, ub, ins.dst.dtype)
    if len(ins.params) > k and ins.params[k]:
        order = order[:_exhausted_stop(rank, order, k)]
    raw = _pack_sorted(s[order], i[order]).reshape(-1)
    _put(ub, slice(ins.dst.addr, ins.dst.addr + raw.size), raw, out)


def _extract(ins: Instr, ub: np.ndarray, gm: Gm, out: Out) -> None:
    """Extract, one of its two halves: ``count`` (score, index) structures (the source, typed
    by the score's dtype) into the scores (``params = (0,)``) or the uint32 indices
    (``params = (1,)``) at ``dst``."""
    src = ins.src[0]
    n = ins.count
    raw = ub[src.addr:src.addr + n * SORT_BYTES].reshape(-1, SORT_BYTES)
    s, i = _unpack_sorted(np.array(raw, copy=True), src.dtype)
    _put(_typed(ins.dst, ub, n), ..., i if ins.params[0] else s, out)


def _whole_reduce_max(ins: Instr, ub: np.ndarray, gm: Gm, out: Out) -> None:
    """WholeReduceMax: per repeat the largest active lane and its index inside the repeat
    (the first such lane), written by ``order``: 0 value then index, 1 index then value (each
    in a slot of the element's width, the index as an unsigned integer of that width),
    2 the value only, 3 the index only (as uint32). ``dstRepStride`` counts in what one
    repeat writes."""
    if ins.mask == 0 or ins.repeat == 0:
        return
    src, dst = ins.src[0], ins.dst
    dst_rep, src_blk, src_rep, order = ins.params
    vals = _gather_lanes(src, ub, ins, src_blk, src_rep).reshape(ins.repeat, -1)
    active = min(ins.mask, vals.shape[1])
    vals = vals[:, :active]
    idx = np.argmax(vals, axis=1)
    best = vals[np.arange(ins.repeat), idx]
    size = dst.dtype.itemsize
    ibits = {2: np.uint16, 4: np.uint32}[size]
    v_raw = best.astype(dst.dtype).view(np.uint8).reshape(-1, size)
    if order == 3:
        rows, unit = idx.astype(np.uint32).view(np.uint8).reshape(-1, 4), 4
    elif order == 2:
        rows, unit = v_raw, size
    else:
        i_raw = idx.astype(ibits).view(np.uint8).reshape(-1, size)
        pair = (v_raw, i_raw) if order == 0 else (i_raw, v_raw)
        rows, unit = np.concatenate(pair, axis=1), 2 * size
    for r in range(ins.repeat):
        at = dst.addr + r * dst_rep * unit
        _put(ub, slice(at, at + rows.shape[1]), rows[r], out)


def _brcb(ins: Instr, ub: np.ndarray, gm: Gm, out: Out) -> None:
    """Brcb: each repeat takes 8 consecutive source elements and fills 32-byte block j of the
    destination with element j (blocks ``dstBlkStride`` apart, repeats ``dstRepStride``)."""
    src, dst = ins.src[0], ins.dst
    d_blk, d_rep = ins.params
    per_block = BLOCK // dst.dtype.itemsize
    x = np.array(_typed(src, ub, ins.repeat * 8), copy=True)
    for r in range(ins.repeat):
        for j in range(8):
            at = dst.addr + (r * d_rep + j * d_blk) * BLOCK
            vals = np.full(per_block, x[r * 8 + j], dst.dtype).view(np.uint8)
            _put(ub, slice(at, at + BLOCK), vals, out)


# --- bit masks ---------------------------------------------------------------------------------

_CMP = (np.less, np.greater, np.equal, np.less_equal, np.greater_equal, np.not_equal)


def _bits_of(op: Operand, ub: np.ndarray, n: int) -> np.ndarray:
    """The first ``n`` bits of a mask operand, element ``i`` at bit ``i % 8`` of byte
    ``i // 8``."""
    return np.unpackbits(ub[op.addr:op.addr + -(-n // 8)], bitorder="little")[:n].astype(bool)


def _compare(ins: Instr, ub: np.ndarray, gm: Gm, out: Out) -> None:
    """Compare / CompareScalar: one bit per element, packed lowest bit first (the bits past
    ``count`` in the last byte are 0)."""
    a = _typed(ins.src[0], ub, ins.count)
    if len(ins.src) > 1:
        b = _typed(ins.src[1], ub, ins.count)
    else:
        b = _scalar_as(ins.scalar, a.dtype)
    bits = _CMP[ins.params[0]](a, b)
    raw = np.packbits(bits, bitorder="little")
    _put(ub, slice(ins.dst.addr, ins.dst.addr + raw.size), raw, out)


def _select(ins: Instr, ub: np.ndarray, gm: Gm, out: Out) -> None:
    """Select: src0 where the mask bit is set, else src1 (a tensor or the scalar)."""
    n, dst = ins.count, ins.dst
    a = _typed(ins.src[0], ub, n)
    keep = _bits_of(ins.src[1], ub, n)
    b = _typed(ins.src[2], ub, n) if len(ins.src) > 2 else _scalar_as(ins.scalar, dst.dtype)
    _put(_typed(dst, ub, n), ..., np.where(keep, a, b).astype(dst.dtype), out)


def _gather_mask(ins: Instr, ub: np.ndarray, gm: Gm, out: Out) -> None:
    """GatherMask (counter mode): the elements of src0 whose pattern bit is set, packed to
    the front of dst in their order; the rest of dst is left as it was."""
    src, pattern = ins.src
    x = np.array(_typed(src, ub, ins.count), copy=True)
    kept = x[_bits_of(pattern, ub, ins.count)]
    if kept.size:
        _put(_typed(ins.dst, ub, kept.size), ..., kept.view(ins.dst.dtype), out)


def _shift_left(x: np.ndarray, s: np.ndarray) -> np.ndarray:
    return np.left_shift(x, s.astype(x.dtype))


def _shift_right(x: np.ndarray, s: np.ndarray) -> np.ndarray:
    return np.right_shift(x, s.astype(x.dtype))


def _gather(ins: Instr, ub: np.ndarray, gm: Gm, out: Out) -> None:
    """Gather: ``dst[i]`` = the element at byte ``srcBaseAddr + offset[i]`` of src."""
    src, offsets = ins.src
    dt = ins.dst.dtype
    at = _typed(offsets, ub, ins.count).astype(np.int64) + int(ins.params[0]) + src.addr
    raw = ub[at[:, None] + np.arange(dt.itemsize)]
    _put(_typed(ins.dst, ub, ins.count), ..., raw.reshape(-1).view(dt), out)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    """1 / (1 + e^-x) in fp32 (16-bit floats through fp32, rounded once at the end)."""
    y = x.astype(np.float32)
    with np.errstate(over="ignore"):
        r = np.float32(1) / (np.float32(1) + np.exp(-y))
    return r.astype(x.dtype)


def _pair_reduce_sum(ins: Instr, ub: np.ndarray, gm: Gm, out: Out) -> None:
    """PairReduceSum: each adjacent pair of a repeat's lanes summed (inactive lanes +0), half
    the lanes' count of results per repeat, repeats ``dstRepStride`` x 128 bytes apart
    (ASSUMPTION for the stride's unit: one repeat's results)."""
    if ins.mask == 0 or ins.repeat == 0:
        return
    src, dst = ins.src[0], ins.dst
    dst_rep, src_blk, src_rep = ins.params
    vals = _gather_lanes(src, ub, ins, src_blk, src_rep).reshape(ins.repeat, -1)
    sums = vals[:, 0::2] + vals[:, 1::2]
    half = (min(ins.mask, vals.shape[1]) + 1) // 2
    for r in range(ins.repeat):
        at = dst.addr + r * dst_rep * (REPEAT_BYTES // 2)
        raw = sums[r, :half].astype(dst.dtype).view(np.uint8)
        _put(ub, slice(at, at + raw.size), raw, out)


def _relu(x: np.ndarray) -> np.ndarray:
    return np.where(x > 0, x, np.zeros((), x.dtype))


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
    Opcode.MULS: _with_scalar(np.multiply),
    Opcode.ADDS: _with_scalar(np.add),
    Opcode.MAXS: _with_scalar(np.maximum),
    Opcode.MINS: _with_scalar(np.minimum),
    Opcode.MUL: _binary(np.multiply),
    Opcode.ADD: _binary(np.add),
    Opcode.SUB: _binary(np.subtract),
    Opcode.DIV: _binary(np.divide),
    Opcode.MAX: _binary(np.maximum),
    Opcode.MIN: _binary(np.minimum),
    Opcode.EXP: _unary(_via_fp32(np.exp)),
    Opcode.SQRT: _unary(_via_fp32(np.sqrt)),
    Opcode.ABS: _unary(np.abs),
    Opcode.RELU: _unary(_relu),
    Opcode.ARITH_PROGRESSION: _arith_progression,
    Opcode.REDUCE_SUM: _reduce_sum,
    Opcode.REDUCE_MAX: _reduce_max,
    Opcode.WHOLE_REDUCE_MAX: _whole_reduce_max,
    Opcode.BRCB: _brcb,
    Opcode.COMPARE: _compare,
    Opcode.COMPARE_SCALAR: _compare,
    Opcode.SELECT: _select,
    Opcode.GATHER_MASK: _gather_mask,
    Opcode.AND: _binary(np.bitwise_and),
    Opcode.OR: _binary(np.bitwise_or),
    Opcode.SHIFT_LEFT: _with_scalar(_shift_left),
    Opcode.SHIFT_RIGHT: _with_scalar(_shift_right),
    Opcode.GATHER: _gather,
    Opcode.SIGMOID: _unary(_sigmoid),
    Opcode.PAIR_REDUCE_SUM: _pair_reduce_sum,
    Opcode.SORT: _sort,
    Opcode.MRG_SORT: _mrg_sort,
    Opcode.EXTRACT: _extract,
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
    """Write what :func:`read` computed (an atomic add reads GM now, at the copy's end)."""
    for entry in pending:
        target, index, values = entry[:3]
        if index is _ATOMIC:
            target[...] = _combined(target, values, entry[3], entry[4])
        else:
            target[index] = values


@functools.lru_cache(maxsize=256)
def validate_cast(src: np.dtype, dst: np.dtype, mode: RoundMode) -> str | None:
    """Why a Cast is not supported (None if it is): integer -> integer only widening (the
    narrowing conversions' overflow rule is not documented), CAST_ODD only float -> float."""
    if not isinstance(mode, RoundMode):
        return f"Cast {src}->{dst}: expected a RoundMode, got {mode!r}"
    if not _is_float(src) and not _is_float(dst):
        if dst.itemsize < src.itemsize or (src.kind == "i" and dst.kind == "u"):
            return (f"Cast {src}->{dst}: integer narrowing or sign change is not modelled "
                    "(its overflow rule is not documented)")
        return None
    if mode is RoundMode.CAST_ODD and not (_is_float(src) and _is_float(dst)):
        return f"Cast {src}->{dst} with CAST_ODD: CAST_ODD is for float -> float only"
    return None

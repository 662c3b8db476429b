"""Prices: the formulas of what one instruction costs on its own.

Step of the flow: the replay engine asks this module, once per recorded ``Instr``, how long
the instruction occupies its pipe when running alone (:func:`occupancy_cycles`), how long the
scalar unit spends issuing it (:func:`issue_cycles`), how many bytes it draws from the shared
HBM (:func:`gm_bytes`) and how long after its occupancy its results become visible
(:func:`tail_cycles`), as one :class:`Price` row (:func:`price`). The chip-wide figures that are
prices too live here as well: a copy's least time behind other cores on its GM granule
(:func:`granule_queue_cycles`), the kernel's entry (:func:`kernel_entry_cycles`), the L2
model's re-priced reads (:func:`copy_occupancy_many`). The engine adds only what needs the
whole timeline: GM bandwidth sharing between cores (``engine/gm.py``, ``engine/fabric.py``) and
the data-cache miss penalty of a GetValue that misses (``platform.dcache_miss_cycles``).

Formula shapes (parameters in ``data/costs/<family>.toml``, each with its source):

- DataCopyPad GM->UB (MTE2) and UB->GM (MTE3): linear interpolation in bytes of a measured
  single-core curve (msKPP), in ns converted at the platform clock; below the first point the
  curve's floor, above the last point the last bandwidth. The size used is the GM-side byte
  count of :func:`gm_bytes`; if the GM address is not 512-byte aligned the bytes are divided by
  ``unaligned_512_bandwidth_ratio``. Multi-row copies add ``k * rows * (gap_elements mod 256)``.
- Vector API calls, A2/A3 (``linear``): ``b + k * n`` (GE ATT V1 fits), n = elements covered
  (``count``, or ``min(mask, elements per repeat) * repeat``; a mask-0 / repeat-0 call costs b).
  DataCopy UB->UB (PIPE_V) is priced as a vector Copy of its elements (ASSUMPTION). A full
  ``Sort`` counts its elements once per pass (:func:`sort_passes`: the 32-element sort, then
  ceil(log4(groups)) rounds of 4-way merges; ASSUMPTION).
- Vector API calls, 950 (``vf``): ``head + sum(throughput) * ceil(n * wider_bytes / 256)
  + max(latency)`` over the API's micro-ops (GE ATT V2).
- Calibration scales (``Costs.mte2_scale``, ``mte3_scale``, ``vector_scale``; 1.0 unless a
  platform overlay from ``aicore-sim calibrate`` sets them) multiply the MTE2 / MTE3 curve
  (floor included; not the stride term) and the vector formula, before rounding.
- SetFlag / WaitFlag / PipeBarrier: fixed cycles; GetValue(GM): DCache hit cycles (the engine
  adds the miss penalty); GetValue / SetValue on UB: ``ub_read_cycles``.

Rounding: every result is rounded half up to an integer cycle count (``floor(x + 0.5)``) and is
at least 1 for any instruction that does work.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from aicore_sim.sim.cost.params import CopyCurve, Costs
from aicore_sim.sim.isa import Instr, Opcode

if TYPE_CHECKING:
    from aicore_sim.sim.platform import Platform

# GM traffic moves in 32-byte pieces (S4a); misaligned rows are rounded up (hardware.md 5.1).
GM_GRANULE_BYTES = 32
GM_ALIGN_BEST_BYTES = 512  # S4c: 512-byte-aligned GM addresses reach the best bandwidth
REPEAT_BYTES = 256  # one vector repeat = 8 blocks x 32 bytes (S4e)

_COPY_OPS = frozenset({Opcode.COPY_GM_TO_UB, Opcode.COPY_UB_TO_GM})
_VECTOR_OPS = frozenset(
    {
        Opcode.CAST,
        Opcode.COPY,
        Opcode.DUPLICATE,
        Opcode.MULS,
        Opcode.MUL,
        Opcode.ADD,
        Opcode.BLOCK_REDUCE_SUM,
        Opcode.WHOLE_REDUCE_SUM,
        Opcode.DATA_COPY_UB_TO_UB,
        Opcode.SUB,
        Opcode.DIV,
        Opcode.MAX,
        Opcode.MIN,
        Opcode.ADDS,
        Opcode.MAXS,
        Opcode.MINS,
        Opcode.EXP,
        Opcode.ABS,
        Opcode.RELU,
        Opcode.SQRT,
        Opcode.ARITH_PROGRESSION,
        Opcode.REDUCE_SUM,
        Opcode.REDUCE_MAX,
        Opcode.WHOLE_REDUCE_MAX,
        Opcode.BRCB,
        Opcode.GATHER,
        Opcode.SIGMOID,
        Opcode.PAIR_REDUCE_SUM,
        Opcode.COMPARE,
        Opcode.COMPARE_SCALAR,
        Opcode.SELECT,
        Opcode.GATHER_MASK,
        Opcode.AND,
        Opcode.OR,
        Opcode.SHIFT_LEFT,
        Opcode.SHIFT_RIGHT,
        Opcode.SORT,
        Opcode.MRG_SORT,
        Opcode.EXTRACT,
    }
)
# Vector-pipe calls priced with another API's fit. DataCopy UB->UB is the copy_ubuf_to_ubuf
# instruction, which runs on PIPE_V (CANN intrinsic reference, cceapi_0070:
# https://www.hiascend.com/document/detail/zh/CANNCommunityEdition/850/API/cceintrinsicapi/cceapi_0070.html);
# no measurement of it exists in our sources, so it is priced as a vector Copy of the same
# element count (ASSUMPTION, docs/model.md).
# ArithProgression / CreateVecIndex have no fit: priced as a Duplicate of the same count (the
# library fills the first elements on the scalar unit and doubles them with vector adds; no
# measurement of it exists in our sources - ASSUMPTION, docs/model.md). The level-2 ReduceSum /
# ReduceMax are priced as one WholeReduceSum / WholeReduceMax pass over their elements (the
# later passes over the partial results are left out - ASSUMPTION).
# Compare / CompareScalar: the EQ fits for every mode (the ATT fits of the six modes differ by
# at most 1.1 cycles); ShiftLeft / ShiftRight: as And (no fit of their own - ASSUMPTION).
_PRICED_AS = {Opcode.DATA_COPY_UB_TO_UB: "Copy", Opcode.ARITH_PROGRESSION: "Duplicate",
              Opcode.REDUCE_SUM: "WholeReduceSum", Opcode.REDUCE_MAX: "WholeReduceMax",
              Opcode.COMPARE: "CompareEQ", Opcode.COMPARE_SCALAR: "CompareScalarEQ",
              Opcode.SHIFT_LEFT: "And", Opcode.SHIFT_RIGHT: "And"}
_REDUCE_OPS = frozenset({Opcode.BLOCK_REDUCE_SUM, Opcode.WHOLE_REDUCE_SUM, Opcode.REDUCE_SUM,
                         Opcode.REDUCE_MAX, Opcode.WHOLE_REDUCE_MAX, Opcode.PAIR_REDUCE_SUM})
_SCALAR_OPS = frozenset({Opcode.GET_VALUE_GM, Opcode.GET_VALUE_UB, Opcode.SET_VALUE_UB})

_MEMO_LIMIT = 200_000  # entries per memo dict before it is cleared (bounded memory)


class Price(NamedTuple):
    """What one instruction costs on its own: the row :func:`price` gives the engine, whose
    prepared columns of the same names (``engine.core.Columns``) are built from it."""

    occ: int  # cycles it holds its pipe running alone (occupancy_cycles)
    issue: int  # cycles the scalar unit spends issuing it (issue_cycles)
    gmb: int  # bytes it draws from the shared GM (gm_bytes)
    lat: int  # cycles after its occupancy before its data is visible (latency_cycles)
    conf: int  # cycles of its occupancy lost to UB bank conflicts (bank_conflict_cycles)


def _round(x: float) -> int:
    """Round half up to an int, at least 1."""
    n = int(x + 0.5)
    return n if n > 1 else 1


# --------------------------------------------------------------------------------------------
# Per-platform lookup tables
# --------------------------------------------------------------------------------------------


class _Curve:
    """A copy curve in cycles at one clock: interpolation with floor and held end bandwidth."""

    __slots__ = ("sizes", "cycles", "floor", "last_cycles_per_byte", "first")

    def __init__(self, curve: CopyCurve, clock_mhz: float, scale: float = 1.0) -> None:
        per_ns = clock_mhz / 1000.0 * scale
        self.sizes = [float(s) for s in curve.size_bytes]
        self.cycles = [t * per_ns for t in curve.time_ns]
        self.floor = curve.floor_ns * per_ns
        self.first = self.sizes[0]
        self.last_cycles_per_byte = self.cycles[-1] / self.sizes[-1]

    def __call__(self, nbytes: float) -> float:
        sizes = self.sizes
        if nbytes <= self.first:
            return self.floor
        if nbytes >= sizes[-1]:
            return max(self.floor, nbytes * self.last_cycles_per_byte)
        i = bisect_right(sizes, nbytes)
        x0, x1 = sizes[i - 1], sizes[i]
        y0, y1 = self.cycles[i - 1], self.cycles[i]
        y = y0 + (y1 - y0) * (nbytes - x0) / (x1 - x0)
        return y if y > self.floor else self.floor


def _att_class(name: str) -> str:
    """GE ATT dtype fallback: 32/64-bit types -> float32, others (bf16, 8/16-bit) -> float16."""
    if name in ("float32", "int32", "uint32", "int64", "uint64", "float64"):
        return "float32"
    return "float16"


class _Tables:
    """Everything ``price.py`` precomputes for one platform (stored on ``Platform._cost_cache``)."""

    __slots__ = (
        "costs",
        "mte2",
        "mte3",
        "linear",
        "vf_ops",
        "vf_api",
        "vec_memo",
        "copy_memo",
        "occ_fixed",
        "fixed",
        "issue",
        "tail",
        "latency",
        "bank_span",
    )

    def __init__(self, platform: Platform) -> None:
        c: Costs = platform.costs
        self.costs = c
        # the copies' completion latencies, nanoseconds in the cost file, in this clock's cycles
        ghz = platform.clock_mhz / 1000.0
        self.latency = (c.mte2_latency_ns * ghz, c.mte3_latency_ns * ghz)
        # the period of a UB address's (bank group, bank): banked calls are memoised modulo it
        self.bank_span = (math.lcm(c.ub_block_bytes * c.ub_bank_groups,
                                   c.ub_bank_bytes * c.ub_banks_per_group)
                          if c.ub_bank_groups > 0 else 0)
        self.mte2 = _Curve(c.mte2_curve, platform.clock_mhz, c.mte2_scale)
        self.mte3 = _Curve(c.mte3_curve, platform.clock_mhz, c.mte3_scale)
        self.linear = {
            (e.api, e.src_dtype, e.dst_dtype): (e.b_cycles, e.k_cycles_per_element)
            for e in c.vector_linear
        }
        self.vf_ops = {
            (m.op, m.dtype): (m.latency_cycles, m.throughput_cycles_per_256_bytes)
            for m in c.vf_micro_ops
        }
        self.vf_api = dict(c.vf_api_micro_ops)
        self.vec_memo: dict[tuple, int] = {}
        self.copy_memo: dict[tuple, int] = {}
        self.occ_fixed = {
            Opcode.SET_FLAG: max(1, c.set_flag_cycles),
            Opcode.WAIT_FLAG: max(1, c.wait_flag_cycles),
            Opcode.BARRIER: max(1, c.barrier_cycles),
            Opcode.SYNC_ALL: max(1, c.sync_all_cycles),
            Opcode.GET_VALUE_GM: max(1, platform.dcache_hit_cycles),
            Opcode.GET_VALUE_UB: max(1, platform.ub_read_cycles),
            Opcode.SET_VALUE_UB: max(1, platform.ub_read_cycles),
        }
        issue = {op: c.copy_issue_cycles for op in _COPY_OPS}
        issue.update({op: c.vector_issue_cycles for op in _VECTOR_OPS})
        issue.update(
            {op: c.sync_issue_cycles for op in (Opcode.SET_FLAG, Opcode.WAIT_FLAG, Opcode.BARRIER,
                                                Opcode.SYNC_ALL)}
        )
        issue.update({op: 0 for op in _SCALAR_OPS})
        self.issue = issue
        self.fixed = {op: Price(occ, issue[op], 0, 0, 0) for op, occ in self.occ_fixed.items()}
        tail = {op: c.vector_tail_cycles for op in _VECTOR_OPS}
        tail.update({op: c.reduce_tail_cycles for op in _REDUCE_OPS})
        self.tail = tail

    # -- vector ----------------------------------------------------------------------------

    def linear_params(self, api: str, src: str, dst: str) -> tuple[float, float]:
        table = self.linear
        key = (api, _att_class(src), _att_class(dst))
        if key in table:
            return table[key]
        if api == "Cast":
            # Same-width casts (int32 <-> float32, fp16 <-> bf16) have no fit: priced as a Copy
            # of the wider class (ASSUMPTION, documented in docs/model.md).
            wide = "float32" if "float32" in key[1:] else "float16"
            if ("Copy", wide, wide) in table:
                return table[("Copy", wide, wide)]
        raise ValueError(
            f"no vector cost for {api} {src}->{dst} in cost family {self.costs.family!r}; "
            f"known: {sorted(f'{a} {s}->{d}' for a, s, d in table)}"
        )

    def vf_micro(self, op: str, dtype: str) -> tuple[float, float]:
        ops = self.vf_ops
        for name in (dtype, dtype.removeprefix("u"), _att_class(dtype)):
            if (op, name) in ops:
                return ops[(op, name)]
        raise ValueError(
            f"no 950 vector micro-op cost for {op} {dtype} in cost family {self.costs.family!r}"
        )


def _tables(platform: Platform) -> _Tables:
    t = platform._cost_cache
    if t is None:
        t = _Tables(platform)
        object.__setattr__(platform, "_cost_cache", t)
    return t


# --------------------------------------------------------------------------------------------
# GM bytes
# --------------------------------------------------------------------------------------------


def _copy_geometry(instr: Instr) -> tuple[int, int, int, int, int]:
    """(rows, row_bytes, gm_gap_bytes, gm_addr, gm itemsize) of a DataCopyPad instruction."""
    gm = instr.src[0] if instr.op is Opcode.COPY_GM_TO_UB else instr.dst
    addr = gm.addr if gm is not None else 0
    itemsize = gm.dtype.itemsize if gm is not None else 1
    p = instr.params
    if len(p) >= 4:
        rows, row_bytes, src_stride, dst_stride = p[0], p[1], p[2], p[3]
        gap = src_stride if instr.op is Opcode.COPY_GM_TO_UB else dst_stride
        return rows, row_bytes, gap, addr, itemsize
    return 1, instr.nbytes, 0, addr, itemsize


def _bus_bytes(rows: int, row_bytes: int, gap: int, addr: int) -> int:
    """Sum over rows of up(row_bytes + gm_addr mod 32, 32) (hardware.md 5.1)."""
    if rows <= 0 or row_bytes <= 0:
        return 0
    g = GM_GRANULE_BYTES
    pitch = row_bytes + gap
    step = pitch % g
    period = g // math.gcd(step, g) if step else 1  # misalignment pattern repeats this often
    one = [-(-(row_bytes + (addr + i * pitch) % g) // g) * g for i in range(min(rows, period))]
    full, rest = divmod(rows, len(one))
    return full * sum(one) + sum(one[:rest])


def gm_bytes(instr: Instr) -> int:
    """Bytes the instruction draws from the shared GM (HBM/L2); 0 for non-copies.

    For DataCopyPad this is the GM-side traffic ``sum_rows up(blockLen + gm_addr mod 32, 32)``
    with ``gm_addr`` the row's byte offset in its GM tensor (tensor bases are assumed to be
    512-byte aligned) and rows ``blockLen + gap`` apart (gap = srcStride for GM->UB,
    dstStride for UB->GM, in bytes).
    """
    if instr.op not in _COPY_OPS:
        return 0
    rows, row_bytes, gap, addr, _ = _copy_geometry(instr)
    return _bus_bytes(rows, row_bytes, gap, addr)


# --------------------------------------------------------------------------------------------
# Occupancy
# --------------------------------------------------------------------------------------------


def _copy_price(instr: Instr, t: _Tables) -> Price:
    """The :class:`Price` of a DataCopyPad (single-core cycles, issue, GM bus bytes,
    completion latency), memoised on its geometry."""
    rows, row_bytes, gap, addr, itemsize = _copy_geometry(instr)
    key = (instr.op, rows, row_bytes, gap, addr % GM_ALIGN_BEST_BYTES, itemsize)
    memo = t.copy_memo
    hit = memo.get(key)
    if hit is not None:
        return hit
    c = t.costs
    gm_to_ub = instr.op is Opcode.COPY_GM_TO_UB
    bus = _bus_bytes(rows, row_bytes, gap, addr)
    nbytes: float = bus
    ratio = c.unaligned_512_bandwidth_ratio
    if addr % GM_ALIGN_BEST_BYTES and 0.0 < ratio < 1.0:
        nbytes /= ratio
    if c.copy_model == "pipelined":
        issue, per_row, rate, scale, overlaps, holds = (
            (c.mte2_issue_cycles, c.mte2_row_cycles, c.mte2_core_bytes_per_cycle,
             c.mte2_scale, c.mte2_latency_overlaps_stream, c.mte2_latency_holds_pipe)
            if gm_to_ub
            else (c.mte3_issue_cycles, c.mte3_row_cycles, c.mte3_core_bytes_per_cycle,
                  c.mte3_scale, c.mte3_latency_overlaps_stream, c.mte3_latency_holds_pipe))
        latency = t.latency[0 if gm_to_ub else 1]
        cycles = max(issue + per_row * max(rows - 1, 0), nbytes / rate) * scale
        tail = latency * scale
        if holds:  # the MTE waits for the completion: a floor under every copy
            cycles, tail = cycles + tail, 0.0
        occupancy = _round(cycles)
        if overlaps:  # visible max(occupancy, latency) after the start
            tail = max(tail - occupancy, 0.0)
        result = Price(occupancy, t.issue[instr.op], bus, _round(tail) if tail > 0 else 0, 0)
    else:
        curve = t.mte2 if gm_to_ub else t.mte3
        cycles = curve(nbytes)
        if rows > 1 and gap > 0:
            if gm_to_ub:
                k = c.mte2_stride_cycles_per_row_element
            else:
                k = c.mte3_stride_cycles_per_row_element
            cycles += k * rows * ((gap // itemsize) % c.stride_modulo_elements)
        result = Price(_round(cycles), t.issue[instr.op], bus, 0, 0)
    if len(memo) >= _MEMO_LIMIT:
        memo.clear()
    memo[key] = result
    return result


def copy_occupancy_many(platform: Platform, gm_to_ub: bool, rows: np.ndarray,
                        hbm_bytes: np.ndarray, hit_bytes: np.ndarray) -> np.ndarray:
    """Occupancy of pipelined copies (one direction) whose bytes the L2 model split into
    ``hbm_bytes`` (L2 misses, drawn from HBM at the core's rate) and ``hit_bytes`` (L2 hits or
    writes absorbed by L2, at ``platform.l2_core_bytes_per_cycle``): max(issue + row x (rows -
    1), hbm_bytes / core rate + hit_bytes / L2 rate per core), scaled and rounded like
    :func:`occupancy_cycles`. Arrays in, an int64 array out."""
    c = platform.costs
    if gm_to_ub:
        issue, per_row, rate, scale = (c.mte2_issue_cycles, c.mte2_row_cycles,
                                       c.mte2_core_bytes_per_cycle, c.mte2_scale)
    else:
        issue, per_row, rate, scale = (c.mte3_issue_cycles, c.mte3_row_cycles,
                                       c.mte3_core_bytes_per_cycle, c.mte3_scale)
    stream = np.asarray(hbm_bytes) / rate + np.asarray(hit_bytes) / platform.l2_core_bytes_per_cycle
    floor = issue + per_row * np.maximum(np.asarray(rows) - 1, 0)
    return np.maximum(1, np.floor(np.maximum(floor, stream) * scale + 0.5)).astype(np.int64)


def _vector_elements(instr: Instr, wider_itemsize: int) -> int:
    """Elements covered by a vector call: count, or min(mask, per-repeat) x repeat, else 0."""
    if instr.count > 0:
        return instr.count
    if instr.mask > 0 and instr.repeat > 0:
        per_repeat = REPEAT_BYTES // wider_itemsize
        return min(instr.mask, per_repeat) * instr.repeat
    return 0


SORT_GROUP = 32  # scores the sort instruction (Sort32) orders per repeat
SORT_MERGE_WAYS = 4  # lists one merge instruction (MrgSort) takes


def sort_passes(instr: Instr) -> int:
    """How many times a ``Sort`` moves each of its elements: once through the 32-element sort
    instruction, plus, in full-sort mode, once per round of 4-way merges until one list is
    left (ceil(log4(groups)) rounds). ASSUMPTION (docs/model.md): the full sort is made of the
    two instructions the ISASI layer offers, Sort32 and the 4-list MrgSort, as its temporary
    buffer of the sort's own size (GetSortTmpSize) suggests; every other call moves its
    elements once."""
    if instr.op is not Opcode.SORT or not instr.params or not instr.params[0]:
        return 1
    groups, rounds = -(-instr.count // SORT_GROUP), 0
    while groups > 1:
        groups = -(-groups // SORT_MERGE_WAYS)
        rounds += 1
    return 1 + rounds


def _dtypes(instr: Instr) -> tuple[np.dtype, np.dtype]:
    if instr.src:
        src = instr.src[0].dtype
        dst = instr.dst.dtype if instr.dst is not None else src
    elif instr.dst is not None:
        src = dst = instr.dst.dtype
    else:
        raise ValueError(f"vector instruction without operands: {instr.describe()}")
    return src, dst


def _blocks(op, repeat: int, blocks: int, blk: int, rep: int) -> list[list[int]]:
    """Per repeat, the 32-byte block addresses an operand touches (strides in blocks)."""
    return [[op.addr + (r * rep + j * blk) * REPEAT_BLOCK_BYTES for j in range(blocks)]
            for r in range(repeat)]


REPEAT_BLOCK_BYTES = 32


def _operand_blocks(instr: Instr) -> tuple[int, int, list[tuple[object, int, int]],
                                               tuple[object, int, int]] | None:
    """(blocks per repeat, repeats evaluated, reads, write) of a banked vector call, each
    operand as (operand, block stride, repeat stride) in 32-byte blocks; None if it covers
    nothing. Forms: a binary call's ``BinaryRepeatParams`` (dst, src0, src1 block strides,
    then repeat strides), ``Copy``'s ``CopyRepeatParams`` (dst, src block strides, then repeat
    strides), or count mode (contiguous: block stride 1, repeat stride 8). Count mode repeats
    its pattern every two repeats, so two are evaluated; a strided call up to 16 (the period
    of the 16 bank groups for strides in whole blocks)."""
    d, srcs = instr.dst, instr.src
    p = instr.params
    if len(p) == 2 * (1 + len(srcs)):
        k = 1 + len(srcs)
        blk, rep = p[:k], p[k:]
        per_block = REPEAT_BLOCK_BYTES // d.dtype.itemsize
        blocks = -(-min(instr.mask, 256 // d.dtype.itemsize) // per_block)
        repeats = min(instr.repeat, 16)
    else:
        blk, rep = (1,) * (1 + len(srcs)), (8,) * (1 + len(srcs))
        nbytes = instr.count * d.dtype.itemsize
        blocks = min(8, -(-nbytes // REPEAT_BLOCK_BYTES))  # a single short repeat: its blocks
        repeats = min(2, max(1, -(-nbytes // 256)))
    if repeats <= 0 or blocks <= 0:
        return None
    reads = [(s, blk[1 + i], rep[1 + i]) for i, s in enumerate(srcs)]
    return blocks, repeats, reads, (d, blk[0], rep[0])


def _place(a: int, costs: Costs) -> tuple[int, int]:
    """(bank group, bank within the group) of UB byte address ``a``."""
    return ((a // costs.ub_block_bytes) % costs.ub_bank_groups,
            (a // costs.ub_bank_bytes) % costs.ub_banks_per_group)


def _read_beats(addrs: list[int], costs: Costs) -> int:
    """Beats to read these blocks: a group serves ``ub_group_read_ports`` distinct blocks a
    beat and a bank one, so max(ceil(distinct in a group / ports), distinct in a bank)."""
    per_group: dict[int, set[int]] = {}
    per_bank: dict[tuple[int, int], set[int]] = {}
    for a in addrs:
        g = _place(a, costs)
        per_group.setdefault(g[0], set()).add(a)
        per_bank.setdefault(g, set()).add(a)
    ports = costs.ub_group_read_ports
    return max(max(-(-len(v) // ports) for v in per_group.values()),
               max(len(v) for v in per_bank.values()))


def _write_beats(addrs: list[int], costs: Costs) -> int:
    """Beats to write these blocks: a group takes one distinct block a beat."""
    per_group: dict[int, set[int]] = {}
    for a in addrs:
        per_group.setdefault(_place(a, costs)[0], set()).add(a)
    return max(len(v) for v in per_group.values())


def bank_beats(instr: Instr, costs: Costs) -> float:
    """Mean beats per repeat of a banked vector call on the UB bank groups (>= 1), all its
    operands moved in one beat (the linear family: a repeat reads 8 blocks of 32 bytes from
    each source and writes 8 to the destination in one beat when no two collide; Ascend C
    guide, UB bank conflicts; the bank_conflict_ub and bank_conflict_nd2nz samples):
    - read-read: :func:`_read_beats` of all the repeat's reads;
    - write-write: :func:`_write_beats` of its writes (a block-strided ``Copy`` whose
      destination stride is a multiple of the groups writes all 8 blocks to one group);
    - read-write: a block written to the bank of a block read at another position of the
      repeat adds a beat; the same position (the operands in step, or the same address) does
      not.
    The repeat takes the larger of its read and write beats, plus the read-write beat.
    """
    shape = _operand_blocks(instr)
    if shape is None:
        return 1.0
    blocks, repeats, reads, (d, d_blk, d_rep) = shape
    read_blocks = [_blocks(s, repeats, blocks, b, r) for s, b, r in reads]
    writes = _blocks(d, repeats, blocks, d_blk, d_rep)
    total = 0
    for r in range(repeats):
        where: dict[tuple[int, int], list[tuple[int, int]]] = {}
        for blocks_of in read_blocks:
            for j, a in enumerate(blocks_of[r]):
                where.setdefault(_place(a, costs), []).append((j, a))
        beats = max(_read_beats([a for bo in read_blocks for a in bo[r]], costs),
                    _write_beats(writes[r], costs))
        for j, a in enumerate(writes[r]):
            if any(k != j and b != a for k, b in where.get(_place(a, costs), ())):
                beats += 1
                break
        total += beats
    return total / repeats


def register_extra_beats(instr: Instr, costs: Costs) -> float:
    """Mean beats beyond one per 256-byte register that a banked vector call's UB loads and
    stores take when each operand moves by its own micro-op (the VF family: a register is
    loaded by one ``vld`` and stored by one ``vst``, never in the same beat as another
    operand's): a load costs :func:`_read_beats` of its blocks, a store :func:`_write_beats`;
    the extra beats of the operands add up (they share the vector's load / store issue)."""
    shape = _operand_blocks(instr)
    if shape is None:
        return 0.0
    blocks, repeats, reads, (d, d_blk, d_rep) = shape
    extra = 0
    for s, b, r in reads:
        extra += sum(_read_beats(x, costs) - 1 for x in _blocks(s, repeats, blocks, b, r))
    extra += sum(_write_beats(x, costs) - 1 for x in _blocks(d, repeats, blocks, d_blk, d_rep))
    return extra / repeats


def _vector_price(instr: Instr, t: _Tables) -> Price:
    """The :class:`Price` of a vector call (cycles, issue, bank-conflict cycles among the
    cycles), memoised."""
    src, dst = _dtypes(instr)
    c = t.costs
    api = _PRICED_AS.get(instr.op, instr.op.value)
    banked = c.ub_bank_groups > 0 and api in c.ub_bank_apis and len(instr.src) in (1, 2)
    # params: a banked call's strides, a Sort's full-sort mode
    key = (instr.op, instr.count, instr.mask, instr.repeat, src, dst, *instr.params)
    if banked:
        span = t.bank_span
        key += tuple(o.addr % span for o in (instr.dst, *instr.src))
    memo = t.vec_memo
    hit = memo.get(key)
    if hit is not None:
        return hit
    wider = max(src.itemsize, dst.itemsize)
    n = _vector_elements(instr, wider) * sort_passes(instr)
    conflict = 0.0
    if c.vector_model == "linear" and banked:
        b, _k = t.linear_params(api, src.name, dst.name)
        repeats = instr.repeat if len(instr.params) == 6 else -(-n * wider // REPEAT_BYTES)
        beats = bank_beats(instr, c) if n else 1.0
        cycles = b + repeats * c.ub_beat_cycles * beats
        conflict = repeats * c.ub_beat_cycles * (beats - 1.0)
    elif c.vector_model == "linear":
        b, k = t.linear_params(api, src.name, dst.name)
        cycles = b + k * n
    else:
        cycles = c.vf_head_cycles
        if n > 0:
            nv = -(-(n * wider) // c.vf_bytes_per_register)
            ops = t.vf_api.get(api)
            if ops is None:
                raise ValueError(
                    f"cost family {c.family!r}: no micro-op list for vector API {api!r}"
                )
            lat_max = 0.0
            thr = 0.0
            for op in ops:
                lat, tp = t.vf_micro(op, src.name)
                thr += tp
                lat_max = max(lat_max, lat)
            cycles += thr * nv + lat_max
            if banked:
                # each register's loads and stores take their beats on the bank groups
                conflict = nv * c.ub_beat_cycles * register_extra_beats(instr, c)
                cycles += conflict
    result = Price(_round(cycles * c.vector_scale), t.issue[instr.op], 0, 0,
                   int(conflict * c.vector_scale + 0.5))
    if len(memo) >= _MEMO_LIMIT:
        memo.clear()
    memo[key] = result
    return result


def bank_conflict_cycles(instr: Instr, platform: Platform) -> int:
    """Cycles of a vector call's occupancy spent on UB bank conflicts (0 without them)."""
    if instr.op not in _VECTOR_OPS:
        return 0
    return _vector_price(instr, platform._cost_cache or _tables(platform)).conf


def occupancy_cycles(instr: Instr, platform: Platform) -> int:
    """Cycles ``instr`` occupies its pipe when it runs alone on one core (an int >= 1).

    For GM copies this is the single-core measured-curve time (fixed latency included); the
    engine stretches it when cores share HBM. GetValue(GM) returns the DCache *hit* cost; the
    engine adds ``platform.dcache_miss_cycles`` on a miss.
    """
    return price(instr, platform).occ


def price(instr: Instr, platform: Platform) -> Price:
    """The :class:`Price` of ``instr`` (:func:`occupancy_cycles`, :func:`issue_cycles`,
    :func:`gm_bytes`, :func:`latency_cycles`, :func:`bank_conflict_cycles`) in one call, the
    form the engine uses once per recorded instruction (equal prices are one object)."""
    t = platform._cost_cache or _tables(platform)
    op = instr.op
    fixed = t.fixed.get(op)
    if fixed is not None:
        return fixed
    if op in _COPY_OPS:
        return _copy_price(instr, t)
    if op in _VECTOR_OPS:
        return _vector_price(instr, t)
    raise ValueError(f"no cost formula for opcode {op!r} ({instr.describe()})")


def latency_cycles(instr: Instr, platform: Platform) -> int:
    """Cycles after a copy's occupancy before its data is visible to a flag, a barrier or a
    scalar read (pipelined copies only; 0 for everything else, and for curve copies, whose
    curve already holds the latency inside the occupancy)."""
    t = platform._cost_cache or _tables(platform)
    if instr.op in _COPY_OPS:
        return _copy_price(instr, t).lat
    return 0


def kernel_entry_cycles(platform: Platform, cores: int) -> tuple[int, int]:
    """(cycles, of which queued) each of ``cores`` cores launched together spends on entry
    before its first instruction: its set-up work (``costs.kernel_setup_cycles``), then
    reading the kernel's parameter block from GM.

    The block is ``platform.kernel_entry_reads`` granules, each a data-cache miss
    (``dcache_miss_cycles``) that every core of the launch requests at once, served one at a
    time as a copy's same-granule requests (``engine/l2.py``): the k-th core served has it
    after max(miss, k x ``gm_serial_cycles``). Every core is charged the mean over the
    launch's cores (SPMD cores keep equal timelines; msprof's per-core figures are that mean);
    the excess over the miss is the queued part (a ``same_granule`` stall). E.g. A2 (set-up
    729, miss 200, 47.6 per request), 48 cores: the read's mean is (4 x 200 + 47.6 x (5 + ...
    + 48)) / 48 = 56,301.6 / 48 = 1173 cycles, 973 of them queued, 729 + 1173 = 1902 in all;
    one core: 729 + 200 = 929.
    """
    setup = int(platform.costs.kernel_setup_cycles)
    reads = int(platform.kernel_entry_reads)
    n = max(int(cores), 1)
    if reads <= 0:
        return setup, 0
    miss = float(platform.dcache_miss_cycles)
    t = float(platform.costs.gm_serial_cycles)
    mean = sum(max(miss, k * t) for k in range(1, n + 1)) / n
    return setup + int(reads * mean + 0.5), int(reads * (mean - miss) + 0.5)


def granule_queue_cycles(platform: Platform, cores: np.ndarray, write: np.ndarray
                         ) -> np.ndarray:
    """Per GM copy, the least occupancy its granule's queue imposes: ``cores`` (int64 array)
    cores request the granule of its first row at the same step (``engine/l2.py`` counts
    them), served one at a time, so a copy lasts at least cores x ``gm_serial_cycles``,
    rounded half up, then scaled by its direction's calibration scale (part of the copy's
    time on its MTE) and rounded again; 0 where no other core shares it (cores <= 1)."""
    c = platform.costs
    t = float(c.gm_serial_cycles)
    serial = np.where(cores > 1, np.floor(cores * t + 0.5), 0).astype(np.int64)
    return np.floor(serial * np.where(write, c.mte3_scale, c.mte2_scale) + 0.5).astype(np.int64)


def issue_cycles(instr: Instr, platform: Platform) -> int:
    """Cycles the scalar unit spends issuing ``instr`` into its pipe queue.

    8 per DataCopyPad, 6 per vector API call, 1 per SetFlag / WaitFlag / PipeBarrier (all
    ASSUMPTION, hardware.md 4). GetValue / SetValue run on the scalar unit itself: their whole
    cost is :func:`occupancy_cycles`, so their issue cost is 0.
    """
    t = platform._cost_cache or _tables(platform)
    try:
        return t.issue[instr.op]
    except KeyError:
        raise ValueError(f"no issue cost for opcode {instr.op!r}") from None


def tail_cycles(instr: Instr, platform: Platform) -> int:
    """Cycles after the end of occupancy before a vector result is visible (0 for others).

    10 for simple vector ops, 20 for reductions (ASSUMPTION, hardware.md 4). Copies have no
    tail: their measured curve already contains the latency.
    """
    t = platform._cost_cache or _tables(platform)
    return t.tail.get(instr.op, 0)


__all__ = [
    "GM_GRANULE_BYTES",
    "gm_bytes",
    "bank_beats",
    "bank_conflict_cycles",
    "register_extra_beats",
    "copy_occupancy_many",
    "granule_queue_cycles",
    "issue_cycles",
    "kernel_entry_cycles",
    "latency_cycles",
    "occupancy_cycles",
    "price",
    "Price",
    "sort_passes",
    "tail_cycles",
]

"""Kernel port of ``KernelMoeTokenUnpermuteWithEp`` (step "kernel port" of the flow).

One AIV core's share of one pass over the permuted rows. Tokens are split over cores (the first
``tokens_core_remain`` cores take one more), over loops of ``tokens_splited_length`` tokens (one
copy of their ``K`` row ids, and probs, each) and the hidden dimension into chunks of
``hidden_splited_length``. For each token ``i`` and slot ``k`` the scalar unit reads the row id
``r = sorted_indices[i*K + k]``; only ``start <= r < end`` (the EP window of this rank) counts.

* ``ISTOKEN = true`` (``MoeTokenUnpermuteWithEp``, and the token pass of
  ``MoeTokenPermuteWithEpGrad``): copy each counted row ``r - start`` into UB, widen it to fp32,
  with ``PROBS`` scale it by its prob (a prob of exactly 0 does not count), add it to an fp32
  accumulator in ``k`` order (the first counted slot initialises it, none at all gives zeros),
  and write the accumulator, narrowed with round-to-nearest-even, to output row ``i``.
* ``ISTOKEN = false`` (the probs pass of ``MoeTokenPermuteWithEpGrad``, ``T1`` = the probs
  dtype, a "hidden size" of 1): for each slot copy element ``r - start`` (or a zero from
  ``Duplicate`` outside the window) through UB to output ``i*K + k``: pure copies.

Provenance
----------
Upstream: github.com/hicann/ops-transformer (mirror github.com/libochao-huawei/ops-transformer),
commit ``5778144076def6311557939ab5cbfe8303f13e8f``,
``moe/moe_token_unpermute_with_ep/op_kernel/moe_token_unpermute_with_ep.h``. The permute-grad
header at the same commit, ``moe/moe_token_permute_with_ep_grad/op_kernel/
moe_token_permute_with_ep_grad.h``, holds the same class; the two differ only in the name of
the tiling struct ``Init`` takes (the same 15 fields), so the class is ported once, here, and
``op_models.moe_token_permute_with_ep_grad`` imports it.

Our own Python from a side-by-side reading of the upstream header. Class, method, member and
local names, the statement order and every SetFlag / WaitFlag / PipeBarrier follow upstream so
the two can be compared by eye; comments are ours.

Deviations from upstream
------------------------
1. Template parameters ``<T1, T2, T3, PROBS, ISTOKEN>`` are constructor arguments (numpy /
   ml_dtypes dtypes and bools); ``sizeof(T)`` is ``dtype.itemsize``, ``IsSameType<T, float>``
   a dtype comparison, ``if constexpr`` a plain ``if``.
2. ``GetValue`` returns a numpy scalar of the functional image; row ids become Python ints and
   probs Python floats (exactly the fp32 value).
3. ``ASSERT(GetBlockNum() != 0)`` raises ``KernelError``.
4. ``SetFlag`` / ``WaitFlag`` / ``PipeBarrier`` are looked up as module attributes (of this
   module) at call time, so a test can drop one pair and show what the checker says; the port
   calls them exactly as upstream does.
5. ``#pragma bisheng auto_sync parallel`` and ``likely`` are compiler hints with no effect here
   (the simulator's auto-sync model applies to every scalar UB read, see docs/model.md).
"""

from __future__ import annotations

from aicore_sim.ascendc import (
    CAST_NONE,
    CAST_RINT,
    GM_ADDR,
    PIPE_V,
    Add,
    Cast,
    DataCopy,
    DataCopyExtParams,
    DataCopyPad,
    DataCopyPadExtParams,
    Duplicate,
    GetBlockIdx,
    GetBlockNum,
    GetTPipePtr,
    GlobalTensor,
    HardEvent,
    LocalTensor,
    Muls,
    PipeBarrier,
    SetFlag,
    TBuf,
    TPipe,
    TPosition,
    TQue,
    TQueBind,
    WaitFlag,
    float32,
)
from aicore_sim.sim.dtypes import as_dtype
from aicore_sim.sim.errors import KernelError
from op_models.moe_token_unpermute_with_ep.tiling import TilingData


class KernelMoeTokenUnpermuteWithEp:
    """``KernelMoeTokenUnpermuteWithEp<T1, T2, T3, PROBS, ISTOKEN>``."""

    BLOCK_SIZE = 32
    ALIGN_512 = 512

    def __init__(self, T1, T2, T3, PROBS: bool, ISTOKEN: bool) -> None:
        self.T1, self.T2, self.T3 = as_dtype(T1), as_dtype(T2), as_dtype(T3)
        self.PROBS, self.ISTOKEN = bool(PROBS), bool(ISTOKEN)
        self.pipe: TPipe | None = None
        self.tokens_inque = TQue(TPosition.VECIN, 1, name="tokens_inque")
        self.indices_inque = TQue(TPosition.VECIN, 1, name="indices_inque")
        self.probs_inque = TQue(TPosition.VECIN, 1, name="probs_inque")
        self.temp_buffer0 = TBuf(TPosition.VECCALC, name="temp_buffer0")
        self.temp_buffer1 = TBuf(TPosition.VECCALC, name="temp_buffer1")
        self.temp_buffer2 = TBuf(TPosition.VECCALC, name="temp_buffer2")
        self.outque = TQue(TPosition.VECOUT, 1, name="outque")
        self.probs_inoutque = TQueBind(TPosition.VECIN, TPosition.VECOUT, 1,
                                       name="probs_inoutque")
        self.tokensGM = GlobalTensor(self.T1)
        self.outGM = GlobalTensor(self.T1)
        self.indicesGM = GlobalTensor(self.T2)
        self.probsGM = GlobalTensor(self.T3)
        self.indicesLocal: LocalTensor | None = None
        self.token_tensor0: LocalTensor | None = None
        self.token_tensor1: LocalTensor | None = None
        self.probs_tensor: LocalTensor | None = None
        # no padding: GM->UB copies only round each block up to 32 bytes
        self.extParams1 = DataCopyPadExtParams(False, 0, 0, 0)
        self.extParams2 = DataCopyPadExtParams(False, 0, 0, 0)
        self.extParams3 = DataCopyPadExtParams(False, 0, 0, 0)
        self.copyParams = DataCopyExtParams(1, 0, 0, 0, 0)
        self.probsMte2ToS = self.probsSToMte2 = self.probsMte2ToV = self.probsVToMte2 = 0
        self.probsMte3ToV = self.probsVToMte3 = self.probsVToS = self.probsSToV = 0
        self.hidden_size = 0
        self.permuted_probs_grad_length = 0
        self.top_k = 0
        self.start = 0
        self.end = 0
        self.num_out_tokens = 0
        self.hidden_splited_length = 0
        self.hidden_splited_num = 0
        self.hidden_splited_remain = 0
        self.tokens_core_length = 0
        self.tokens_core_remain = 0
        self.tokens_splited_length = 0
        self.tokens_splited_num = 0
        self.tokens_splited_remain = 0

    def _t1_is_float(self) -> bool:
        return self.T1 == float32

    def _t3_is_float(self) -> bool:
        return self.T3 == float32

    # -- Init ------------------------------------------------------------------------------

    def Init(self, permuted_tokens: GM_ADDR | None, sorted_indices: GM_ADDR | None,
             probs: GM_ADDR | None, unpermuted_tokens: GM_ADDR | None,
             tiling_data: TilingData, t_pipe: TPipe) -> None:
        """Tiling fields, this core's share (first ``remain`` cores one token more), GM
        windows (the probs pass spaces its output by ``K`` per token), the UB buffers, and the
        eight event ids fetched from the pipe."""
        if GetBlockNum() == 0:
            raise KernelError("block dim can not be zero!")
        self.pipe = t_pipe
        self.hidden_size = tiling_data.hidden_size if self.ISTOKEN else 1
        self.top_k = tiling_data.top_k
        self.start = tiling_data.start
        self.end = tiling_data.end
        self.num_out_tokens = tiling_data.num_out_tokens
        self.permuted_probs_grad_length = tiling_data.permuted_probs_grad_length
        self.hidden_splited_length = tiling_data.hidden_splited_length
        self.hidden_splited_num = tiling_data.hidden_splited_num
        self.hidden_splited_remain = tiling_data.hidden_splited_remain
        self.tokens_core_length = tiling_data.tokens_core_length
        self.tokens_core_remain = tiling_data.tokens_core_remain
        self.tokens_splited_length = tiling_data.tokens_splited_length
        self.tokens_splited_num = tiling_data.tokens_splited_num
        self.tokens_splited_remain = tiling_data.tokens_splited_remain

        # the first tokens_core_remain cores take one more token, in their last loop
        if self.tokens_core_remain > 0 and GetBlockIdx() < self.tokens_core_remain:
            self.tokens_core_length += 1
            self.tokens_splited_remain += 1

        A = self.ALIGN_512
        hidden_splited_length_align512 = (self.hidden_splited_length + A - 1) & ~(A - 1)
        block_length = self.tokens_core_length * self.top_k
        block_splited_length = self.tokens_splited_length * self.top_k

        if self.tokens_core_remain > 0:
            if GetBlockIdx() < self.tokens_core_remain:
                block_offset = block_length * GetBlockIdx()
            else:
                block_offset = ((block_length + self.top_k) * self.tokens_core_remain
                                + block_length * (GetBlockIdx() - self.tokens_core_remain))
        else:
            block_offset = block_length * GetBlockIdx()

        self.tokensGM.SetGlobalBuffer(permuted_tokens)
        self.indicesGM.SetGlobalBuffer(
            None if sorted_indices is None else sorted_indices + block_offset * self.T2.itemsize,
            block_length)

        if self.tokens_core_remain > 0:
            if GetBlockIdx() < self.tokens_core_remain:
                out_block_offset = self.tokens_core_length * GetBlockIdx() * self.hidden_size
            else:
                out_block_offset = ((self.tokens_core_length + 1) * self.tokens_core_remain
                                    + self.tokens_core_length
                                    * (GetBlockIdx() - self.tokens_core_remain))
                out_block_offset *= self.hidden_size
        else:
            out_block_offset = self.tokens_core_length * GetBlockIdx() * self.hidden_size

        # the probs pass: K outputs per token
        if not self.ISTOKEN:
            out_block_offset = out_block_offset * self.top_k

        # (the declared size, tokens x hidden, is a debug bound only; the probs pass writes K
        # per token past it, as upstream)
        self.outGM.SetGlobalBuffer(
            None if unpermuted_tokens is None
            else unpermuted_tokens + out_block_offset * self.T1.itemsize,
            self.tokens_core_length * self.hidden_size)
        if self.ISTOKEN:
            self.pipe.InitBuffer(self.tokens_inque, tiling_data.buffer_num,
                                 hidden_splited_length_align512 * self.T1.itemsize)
        else:
            self.pipe.InitBuffer(self.probs_inoutque, 1,
                                 hidden_splited_length_align512 * self.T1.itemsize)
        self.pipe.InitBuffer(self.indices_inque, 1, block_splited_length * self.T2.itemsize)
        self.pipe.InitBuffer(self.outque, 1, hidden_splited_length_align512 * self.T1.itemsize)

        if not self._t1_is_float():
            self.pipe.InitBuffer(self.temp_buffer0,
                                 hidden_splited_length_align512 * float32.itemsize + 256)
            self.pipe.InitBuffer(self.temp_buffer1,
                                 hidden_splited_length_align512 * float32.itemsize)
            self.token_tensor0 = self.temp_buffer0.Get(float32)
            self.token_tensor1 = self.temp_buffer1.Get(float32)

        if self.PROBS:
            self.probsGM.SetGlobalBuffer(
                None if probs is None else probs + block_offset * self.T3.itemsize,
                block_length)
            self.pipe.InitBuffer(self.probs_inque, 1, block_splited_length * self.T3.itemsize)
            if not self._t3_is_float():
                self.pipe.InitBuffer(self.temp_buffer2, block_splited_length * float32.itemsize)
                self.probs_tensor = self.temp_buffer2.Get(float32)

        self.probsMte2ToS = GetTPipePtr().FetchEventID(HardEvent.MTE2_S)
        self.probsSToMte2 = GetTPipePtr().FetchEventID(HardEvent.S_MTE2)
        self.probsMte2ToV = GetTPipePtr().FetchEventID(HardEvent.MTE2_V)
        self.probsVToMte2 = GetTPipePtr().FetchEventID(HardEvent.V_MTE2)
        self.probsMte3ToV = GetTPipePtr().FetchEventID(HardEvent.MTE3_V)
        self.probsVToMte3 = GetTPipePtr().FetchEventID(HardEvent.V_MTE3)
        self.probsVToS = GetTPipePtr().FetchEventID(HardEvent.V_S)
        self.probsSToV = GetTPipePtr().FetchEventID(HardEvent.S_V)

    # -- Process ---------------------------------------------------------------------------

    def Process(self) -> None:
        """Whole loops of ``tokens_splited_length`` tokens, then the remainder loop."""
        for i in range(self.tokens_splited_num):
            self.CalMultiOutToken(i * self.tokens_splited_length, self.tokens_splited_length)
        if self.tokens_splited_remain > 0:
            self.CalMultiOutToken(self.tokens_splited_num * self.tokens_splited_length,
                                  self.tokens_splited_remain)

    def CalMultiOutToken(self, out_offset: int, out_tokens_number: int) -> None:
        """One loop: copy its row ids (and, with PROBS, the probs, widened to fp32 by V
        unless fp32), then every token of the loop."""
        self.indicesLocal = self.indices_inque.AllocTensor(self.T2)
        in_offset = out_offset * self.top_k
        self.copyParams.blockLen = out_tokens_number * self.top_k * self.T2.itemsize
        DataCopyPad(self.indicesLocal, self.indicesGM[in_offset], self.copyParams,
                    self.extParams2)
        self.indices_inque.EnQue(self.indicesLocal)

        if self.PROBS:
            temp_probs_tensor = self.probs_inque.AllocTensor(self.T3)
            self.copyParams.blockLen = out_tokens_number * self.top_k * self.T3.itemsize
            DataCopyPad(temp_probs_tensor, self.probsGM[in_offset], self.copyParams,
                        self.extParams3)
            self.probs_inque.EnQue(temp_probs_tensor)
            temp_probs_tensor = self.probs_inque.DeQue(self.T3)
            if not self._t3_is_float():
                Cast(self.probs_tensor, temp_probs_tensor, CAST_NONE,
                     out_tokens_number * self.top_k)
                self.probs_inque.FreeTensor(temp_probs_tensor)
                PipeBarrier(PIPE_V)
            else:
                self.probs_tensor = temp_probs_tensor
        self.indicesLocal = self.indices_inque.DeQue(self.T2)

        for out_token_idx in range(out_tokens_number):  # (auto_sync parallel: a hint)
            self.CalSingleOutToken(out_token_idx * self.top_k, out_offset + out_token_idx)
        self.indices_inque.FreeTensor(self.indicesLocal)
        if self.PROBS and self._t3_is_float():
            self.probs_inque.FreeTensor(self.probs_tensor)

    def CalSingleOutToken(self, start_token: int, out_token_idx: int) -> None:
        """Token pass: every hidden chunk, then the remainder chunk; probs pass: the token's
        K slots."""
        if self.ISTOKEN:
            for h_index in range(self.hidden_splited_num):
                self.CalPartOutToken(start_token, h_index, self.hidden_splited_length,
                                     out_token_idx)
            if self.hidden_splited_remain > 0:
                self.CalPartOutToken(start_token, self.hidden_splited_num,
                                     self.hidden_splited_remain, out_token_idx)
        else:
            self.CalPartOutProb(start_token, 0, self.permuted_probs_grad_length, out_token_idx)

    def _read_index(self, index: int) -> int:
        """One row id read by the scalar unit between the four flag pairs. (Upstream writes
        this block inline, twice in ``CalPartOutToken`` and once in ``CalPartOutProb``; it is
        one helper here, with the same calls in the same order.)"""
        SetFlag(HardEvent.MTE2_S, self.probsMte2ToS)
        WaitFlag(HardEvent.MTE2_S, self.probsMte2ToS)
        SetFlag(HardEvent.V_S, self.probsVToS)
        WaitFlag(HardEvent.V_S, self.probsVToS)
        acl_token_idx = int(self.indicesLocal.GetValue(index))
        SetFlag(HardEvent.S_MTE2, self.probsSToMte2)
        WaitFlag(HardEvent.S_MTE2, self.probsSToMte2)
        SetFlag(HardEvent.S_V, self.probsSToV)
        WaitFlag(HardEvent.S_V, self.probsSToV)
        return acl_token_idx

    # -- the token pass ----------------------------------------------------------------------

    def _read_token(self, token_index: int) -> tuple[int, float, bool]:
        """The row id, (with PROBS) its prob, and the window / zero-prob test."""
        acl_token_idx = self._read_index(token_index)
        prob_value = 0.0
        if self.PROBS:
            prob_value = float(self.probs_tensor.GetValue(token_index))
            needCopyIn = self.start <= acl_token_idx < self.end and prob_value != 0
        else:
            needCopyIn = self.start <= acl_token_idx < self.end
        return acl_token_idx, prob_value, needCopyIn

    def CalPartOutToken(self, start_token: int, h_index: int, h_length: int,
                        out_token_index: int) -> None:
        """One hidden chunk of one token: the first slot (or zeros), the other K - 1 slots in
        order, then the copy out."""
        if self._t1_is_float():
            self.token_tensor0 = self.outque.AllocTensor(self.T1)  # accumulate in place
        end_token = start_token + self.top_k

        acl_token_idx, prob_value, needCopyIn = self._read_token(start_token)
        if needCopyIn:  # the first counted slot initialises the accumulator
            self.CopyTokenIn(acl_token_idx, h_index, h_length)
            PipeBarrier(PIPE_V)
            self.CalFirstToken(prob_value, h_length)
        else:
            PipeBarrier(PIPE_V)
            Duplicate(self.token_tensor0, 0.0, h_length)
        for token_index in range(start_token + 1, end_token):
            acl_token_idx, prob_value, needCopyIn = self._read_token(token_index)
            if needCopyIn:
                self.CopyTokenIn(acl_token_idx, h_index, h_length)
                PipeBarrier(PIPE_V)
                self.CalToken(prob_value, h_length)
        self.CopyOut(out_token_index, h_index, h_length)

    def CopyTokenIn(self, in_token_index: int, h_index: int, h_length: int) -> None:
        """Permuted row ``in_token_index - start``, one chunk: DataCopy when the chunk is a
        whole number of 32-byte blocks, else DataCopyPad."""
        tokensLocal = self.tokens_inque.AllocTensor(self.T1)
        offset = ((in_token_index - self.start) * self.hidden_size
                  + h_index * self.hidden_splited_length)
        if (h_length * self.T1.itemsize) % self.BLOCK_SIZE == 0:
            DataCopy(tokensLocal, self.tokensGM[offset], h_length)
        else:
            self.copyParams.blockLen = h_length * self.T1.itemsize
            DataCopyPad(tokensLocal, self.tokensGM[offset], self.copyParams, self.extParams1)
        self.tokens_inque.EnQue(tokensLocal)

    def CalFirstToken(self, prob_value: float, h_length: int) -> None:
        """Accumulator = the row widened to fp32 (a UB->UB DataCopy of whole blocks for
        fp32), times prob with PROBS."""
        tokensLocal = self.tokens_inque.DeQue(self.T1)
        if not self._t1_is_float():
            Cast(self.token_tensor0, tokensLocal, CAST_NONE, h_length)
        else:
            B = self.BLOCK_SIZE
            byteAlign32 = (h_length * float32.itemsize + B - 1) & ~(B - 1)
            DataCopy(self.token_tensor0, tokensLocal, byteAlign32 // float32.itemsize)
        self.tokens_inque.FreeTensor(tokensLocal)
        if self.PROBS:
            PipeBarrier(PIPE_V)
            Muls(self.token_tensor0, self.token_tensor0, prob_value, h_length)

    def CalToken(self, prob_value: float, h_length: int) -> None:
        """Accumulator += the row in fp32 (times prob with PROBS)."""
        tokensLocal = self.tokens_inque.DeQue(self.T1)
        if not self._t1_is_float():
            Cast(self.token_tensor1, tokensLocal, CAST_NONE, h_length)
            self.tokens_inque.FreeTensor(tokensLocal)
            if self.PROBS:
                PipeBarrier(PIPE_V)
                Muls(self.token_tensor1, self.token_tensor1, prob_value, h_length)
            PipeBarrier(PIPE_V)
            Add(self.token_tensor0, self.token_tensor0, self.token_tensor1, h_length)
        else:
            if self.PROBS:
                Muls(tokensLocal, tokensLocal, prob_value, h_length)
                PipeBarrier(PIPE_V)
            Add(self.token_tensor0, self.token_tensor0, tokensLocal, h_length)
            self.tokens_inque.FreeTensor(tokensLocal)

    def CopyOut(self, out_token_index: int, h_index: int, h_length: int) -> None:
        """Narrow the accumulator (CAST_RINT) unless fp32, queue it, write the chunk."""
        if not self._t1_is_float():
            temp_out_tensors = self.outque.AllocTensor(self.T1)
            PipeBarrier(PIPE_V)
            Cast(temp_out_tensors, self.token_tensor0, CAST_RINT, h_length)
        else:
            temp_out_tensors = self.token_tensor0
        self.outque.EnQue(temp_out_tensors)
        temp_out_tensors = self.outque.DeQue(self.T1)
        offset = out_token_index * self.hidden_size + h_index * self.hidden_splited_length
        if (h_length * self.T1.itemsize) % self.BLOCK_SIZE == 0:
            DataCopy(self.outGM[offset], temp_out_tensors, h_length)
        else:
            self.copyParams.blockLen = h_length * self.T1.itemsize
            DataCopyPad(self.outGM[offset], temp_out_tensors, self.copyParams)
        self.outque.FreeTensor(temp_out_tensors)

    # -- the probs pass ----------------------------------------------------------------------

    def CalPartOutProb(self, start_prob: int, h_index: int, h_length: int,
                       out_prob_index: int) -> None:
        """The K slots of one token: read the row id, copy the element (or a zero) in, and
        out to slot ``out_prob_index * K + k``."""
        end_prob = start_prob + self.top_k
        for prob_index in range(start_prob, end_prob):
            acl_prob_idx = self._read_index(prob_index)
            self.CopyProbIn(acl_prob_idx, h_index, h_length)
            self.CopyProbOut(out_prob_index * self.top_k + prob_index - start_prob, h_index,
                             h_length)

    def CopyProbIn(self, in_prob_index: int, h_index: int, h_length: int) -> None:
        """Element ``in_prob_index - start`` by DataCopyPad inside the window; else a
        ``Duplicate`` of 0 fenced against both copy pipes."""
        probsTmpLocal = self.probs_inoutque.AllocTensor(self.T1)
        needCopyIn = self.start <= in_prob_index < self.end
        if needCopyIn:
            offset = ((in_prob_index - self.start) * self.hidden_size
                      + h_index * self.hidden_splited_length)
            self.copyParams.blockLen = h_length * self.T1.itemsize
            DataCopyPad(probsTmpLocal, self.tokensGM[offset], self.copyParams, self.extParams1)
        else:
            SetFlag(HardEvent.MTE3_V, self.probsMte3ToV)
            WaitFlag(HardEvent.MTE3_V, self.probsMte3ToV)
            SetFlag(HardEvent.MTE2_V, self.probsMte2ToV)
            WaitFlag(HardEvent.MTE2_V, self.probsMte2ToV)
            Duplicate(probsTmpLocal, 0.0, h_length)
            SetFlag(HardEvent.V_MTE3, self.probsVToMte3)
            WaitFlag(HardEvent.V_MTE3, self.probsVToMte3)
            SetFlag(HardEvent.V_MTE2, self.probsVToMte2)
            WaitFlag(HardEvent.V_MTE2, self.probsVToMte2)
        self.probs_inoutque.EnQue(probsTmpLocal)

    def CopyProbOut(self, out_prob_index: int, h_index: int, h_length: int) -> None:
        """The element (``h_length`` of them) from UB to its slot of ``probs_grad``."""
        probsTmpLocal = self.probs_inoutque.DeQue(self.T1)
        offset = out_prob_index * self.hidden_size + h_index * self.hidden_splited_length
        self.copyParams.blockLen = h_length * self.T1.itemsize
        DataCopyPad(self.outGM[offset], probsTmpLocal, self.copyParams)
        self.probs_inoutque.FreeTensor(probsTmpLocal)


__all__ = ["KernelMoeTokenUnpermuteWithEp"]

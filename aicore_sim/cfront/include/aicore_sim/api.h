// aicore-sim's Ascend C shim: the free functions (copies, vector, sort, sync, utilities).
//
// Written for aicore-sim from the public Ascend C API reference and the kernels' call sites;
// no vendor code. Each function forwards its arguments, under its Ascend C name, to the
// simulator; template arguments that name a type or a flag travel first / last as the
// Python API takes them.
#pragma once

#include "aicore_sim/tpipe.h"

namespace AscendC {

using aicore_sim::call;
using aicore_sim::DType;
using aicore_sim::Site;

// ---- synchronisation ----------------------------------------------------------------------

template <HardEvent evt> __aicore__ inline void SetFlag(int32_t eventID, Site s = {}) {
    call("SetFlag", s, evt, eventID);
}
template <HardEvent evt> __aicore__ inline void WaitFlag(int32_t eventID, Site s = {}) {
    call("WaitFlag", s, evt, eventID);
}
template <pipe_t pipe = PIPE_ALL> __aicore__ inline void PipeBarrier(Site s = {}) {
    call("PipeBarrier", s, pipe);
}
template <bool isAIVOnly = true> __aicore__ inline void SyncAll(Site s = {}) {
    call("SyncAll<isAIVOnly>", s, nullptr, nullptr, 0, isAIVOnly);
}
template <bool isAIVOnly = true>
__aicore__ inline void SyncAll(const GlobalTensor<int32_t>& gmWorkspace,
                               const LocalTensor<int32_t>& ubWorkspace, int32_t usedCores = 0,
                               Site s = {}) {
    call("SyncAll<isAIVOnly>", s, gmWorkspace, ubWorkspace, usedCores, isAIVOnly);
}
__aicore__ inline int64_t GetBlockIdx() { return aicore_sim::t_block_idx; }
__aicore__ inline int64_t GetBlockNum() { return aicore_sim::t_block_num; }

// ---- data movement -----------------------------------------------------------------------

// DataCopy GM -> UB, UB -> GM and UB -> UB, each by an element count or by DataCopyParams.
#define AICORE_SIM_DATA_COPY(DST, SRC)                                                          \
    template <typename T>                                                                      \
    __aicore__ inline void DataCopy(const DST<T>& dst, const SRC<T>& src, uint32_t calCount,   \
                                    Site s = {}) {                                             \
        call("DataCopy", s, dst, src, calCount);                                               \
    }                                                                                          \
    template <typename T>                                                                      \
    __aicore__ inline void DataCopy(const DST<T>& dst, const SRC<T>& src,                      \
                                    const DataCopyParams& params, Site s = {}) {               \
        call("DataCopy", s, dst, src, params);                                                 \
    }
AICORE_SIM_DATA_COPY(LocalTensor, GlobalTensor)
AICORE_SIM_DATA_COPY(GlobalTensor, LocalTensor)
AICORE_SIM_DATA_COPY(LocalTensor, LocalTensor)
#undef AICORE_SIM_DATA_COPY

// DataCopyPad with the Ext parameter structs or the older 16-bit ones: GM -> UB with its
// padding, UB -> GM without.
#define AICORE_SIM_DATA_COPY_PAD(PARAMS, PAD_PARAMS)                                            \
    template <typename T>                                                                      \
    __aicore__ inline void DataCopyPad(const LocalTensor<T>& dst, const GlobalTensor<T>& src,  \
                                       const PARAMS& params, const PAD_PARAMS& padParams,      \
                                       Site s = {}) {                                          \
        call("DataCopyPad", s, dst, src, params, padParams);                                   \
    }                                                                                          \
    template <typename T>                                                                      \
    __aicore__ inline void DataCopyPad(const GlobalTensor<T>& dst, const LocalTensor<T>& src,  \
                                       const PARAMS& params, Site s = {}) {                    \
        call("DataCopyPad", s, dst, src, params);                                              \
    }
AICORE_SIM_DATA_COPY_PAD(DataCopyExtParams, DataCopyPadExtParams<T>)
AICORE_SIM_DATA_COPY_PAD(DataCopyParams, DataCopyPadParams)
#undef AICORE_SIM_DATA_COPY_PAD

// The library's copies on raw addresses (a UB pointer from LocalTensor::GetPhyAddr, a GM
// pointer from GlobalTensor::GetPhyAddr).
template <typename T>
__aicore__ inline void DataCopyPadGm2UBImpl(__ubuf__ T* dst, __gm__ T* src,
                                            const DataCopyExtParams& params,
                                            const DataCopyPadExtParams<T>& padParams,
                                            Site s = {}) {
    GlobalTensor<T> g;
    g.SetGlobalBuffer(src);
    call("DataCopyPadGm2UBImpl", s,
         static_cast<int64_t>(reinterpret_cast<uintptr_t>(dst) - aicore_sim::t_ub_base), g,
         params, padParams);
}
template <typename T>
__aicore__ inline void DataCopyPadUB2GMImpl(__gm__ T* dst, __ubuf__ T* src,
                                            const DataCopyExtParams& params, Site s = {}) {
    GlobalTensor<T> g;
    g.SetGlobalBuffer(dst);
    call("DataCopyPadUB2GMImpl", s, g,
         static_cast<int64_t>(reinterpret_cast<uintptr_t>(src) - aicore_sim::t_ub_base),
         params);
}

template <typename T> __aicore__ inline void SetAtomicAdd(Site s = {}) {
    call("SetAtomicAdd", s, DType<T>{});
}
template <typename T> __aicore__ inline void SetAtomicMax(Site s = {}) {
    call("SetAtomicMax", s, DType<T>{});
}
__aicore__ inline void SetAtomicNone(Site s = {}) { call("SetAtomicNone", s); }

template <typename T>
__aicore__ inline void InitGlobalMemory(GlobalTensor<T>& gmWorkspaceAddr, uint64_t size,
                                        T value, Site s = {}) {
    call("InitGlobalMemory", s, gmWorkspaceAddr, size, value);
}
template <typename T>
__aicore__ inline void InitOutput(GlobalTensor<T> gmWorkspaceAddr, uint64_t size, T value = 0,
                                  Site s = {}) {
    call("InitOutput", s, gmWorkspaceAddr, size, value);
}

// ---- vector: casts, copies, fills -----------------------------------------------------------

template <typename T, typename U>
__aicore__ inline void Cast(const LocalTensor<T>& dst, const LocalTensor<U>& src,
                            RoundMode roundMode, uint32_t count, Site s = {}) {
    call("Cast", s, dst, src, roundMode, count);
}
template <typename T>
__aicore__ inline void Copy(const LocalTensor<T>& dst, const LocalTensor<T>& src, uint64_t mask,
                            uint8_t repeatTime, const CopyRepeatParams& repeatParams,
                            Site s = {}) {
    call("Copy", s, dst, src, mask, repeatTime, repeatParams);
}
template <typename T>
__aicore__ inline void Copy(const LocalTensor<T>& dst, const LocalTensor<T>& src,
                            const uint64_t mask[], uint8_t repeatTime,
                            const CopyRepeatParams& repeatParams, Site s = {}) {
    call("Copy", s, dst, src, Array<uint64_t, 2>{mask}, repeatTime, repeatParams);
}
template <typename T, typename S>
__aicore__ inline void Duplicate(const LocalTensor<T>& dst, const S& scalarValue, int32_t count,
                                 Site s = {}) {
    call("Duplicate", s, dst, static_cast<T>(scalarValue), count);
}
template <typename T, typename S>
__aicore__ inline void Duplicate(const LocalTensor<T>& dst, const S& scalarValue, uint64_t mask,
                                 uint8_t repeatTime, uint16_t dstBlockStride,
                                 uint8_t dstRepeatStride, Site s = {}) {
    call("Duplicate", s, dst, static_cast<T>(scalarValue), mask, repeatTime, dstBlockStride,
         dstRepeatStride);
}
template <typename T, typename S>
__aicore__ inline void Duplicate(const LocalTensor<T>& dst, const S& scalarValue,
                                 const uint64_t mask[], uint8_t repeatTime,
                                 uint16_t dstBlockStride, uint8_t dstRepeatStride, Site s = {}) {
    call("Duplicate", s, dst, static_cast<T>(scalarValue), Array<uint64_t, 2>{mask}, repeatTime,
         dstBlockStride, dstRepeatStride);
}

// ---- vector: element-wise ----------------------------------------------------------------

#define AICORE_SIM_SCALAR_OP(NAME)                                                              \
    template <typename T, bool isSetMask = true, typename S>                                  \
    __aicore__ inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src,          \
                                const S& scalarValue, int32_t count, Site s = {}) {            \
        call(#NAME, s, dst, src, static_cast<T>(scalarValue), count);                          \
    }                                                                                          \
    template <typename T, bool isSetMask = true, typename S>                                  \
    __aicore__ inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src,          \
                                const S& scalarValue, uint64_t mask, uint8_t repeatTime,       \
                                const UnaryRepeatParams& repeatParams, Site s = {}) {          \
        call(#NAME "<isSetMask>", s, dst, src, static_cast<T>(scalarValue), mask, repeatTime,  \
             repeatParams, isSetMask);                                                         \
    }
AICORE_SIM_SCALAR_OP(Muls)
AICORE_SIM_SCALAR_OP(Adds)
AICORE_SIM_SCALAR_OP(Maxs)
AICORE_SIM_SCALAR_OP(Mins)
#undef AICORE_SIM_SCALAR_OP

#define AICORE_SIM_UNARY_OP(NAME)                                                               \
    template <typename T>                                                                      \
    __aicore__ inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src,          \
                                int32_t count, Site s = {}) {                                  \
        call(#NAME, s, dst, src, count);                                                       \
    }                                                                                          \
    template <typename T, bool isSetMask = true>                                               \
    __aicore__ inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src,          \
                                uint64_t mask, uint8_t repeatTime,                             \
                                const UnaryRepeatParams& repeatParams, Site s = {}) {          \
        call(#NAME "<isSetMask>", s, dst, src, mask, repeatTime, repeatParams, isSetMask);     \
    }
AICORE_SIM_UNARY_OP(Exp)
AICORE_SIM_UNARY_OP(Abs)
AICORE_SIM_UNARY_OP(Relu)
AICORE_SIM_UNARY_OP(Sqrt)
#undef AICORE_SIM_UNARY_OP

#define AICORE_SIM_BINARY_OP(NAME)                                                              \
    template <typename T>                                                                      \
    __aicore__ inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0,         \
                                const LocalTensor<T>& src1, int32_t count, Site s = {}) {      \
        call(#NAME, s, dst, src0, src1, count);                                                \
    }                                                                                          \
    template <typename T, bool isSetMask = true>                                               \
    __aicore__ inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0,         \
                                const LocalTensor<T>& src1, uint64_t mask, uint8_t repeatTime, \
                                const BinaryRepeatParams& repeatParams, Site s = {}) {         \
        call(#NAME "<isSetMask>", s, dst, src0, src1, mask, repeatTime, repeatParams,          \
             isSetMask);                                                                       \
    }
AICORE_SIM_BINARY_OP(Add)
AICORE_SIM_BINARY_OP(Sub)
AICORE_SIM_BINARY_OP(Mul)
AICORE_SIM_BINARY_OP(Div)
AICORE_SIM_BINARY_OP(Max)
AICORE_SIM_BINARY_OP(Min)
#undef AICORE_SIM_BINARY_OP

template <typename T>
__aicore__ inline void Sigmoid(const LocalTensor<T>& dst, const LocalTensor<T>& src,
                               uint32_t count, Site s = {}) {
    call("Sigmoid", s, dst, src, count);
}
template <typename T>
__aicore__ inline void ArithProgression(const LocalTensor<T>& dstLocal, const T firstValue,
                                        const T diffValue, const int32_t count, Site s = {}) {
    call("ArithProgression", s, dstLocal, firstValue, diffValue, count);
}
template <typename T>
__aicore__ inline void CreateVecIndex(const LocalTensor<T>& dst, const T firstValue,
                                      uint32_t calCount, Site s = {}) {
    call("CreateVecIndex", s, dst, firstValue, calCount);
}
template <typename T>
__aicore__ inline void Gather(const LocalTensor<T>& dst, const LocalTensor<T>& src,
                              const LocalTensor<uint32_t>& srcOffset, uint32_t srcBaseAddr,
                              uint32_t count, Site s = {}) {
    call("Gather", s, dst, src, srcOffset, srcBaseAddr, count);
}
template <typename T>
__aicore__ inline void Brcb(const LocalTensor<T>& dst, const LocalTensor<T>& src,
                            uint8_t repeatTime, const BrcbRepeatParams& repeatParams,
                            Site s = {}) {
    call("Brcb", s, dst, src, repeatTime, repeatParams);
}

// ---- vector: reductions ------------------------------------------------------------------

// BlockReduceSum and WholeReduceSum: the repeat count and the mask (in each one's order), then
// the strides.
#define AICORE_SIM_REDUCE_SUM_OP(NAME, FIRST, SECOND)                                           \
    template <typename T, bool isSetMask = true>                                               \
    __aicore__ inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src,          \
                                int32_t FIRST, int32_t SECOND, int32_t dstRepStride,           \
                                int32_t srcBlkStride, int32_t srcRepStride, Site s = {}) {     \
        call(#NAME, s, dst, src, FIRST, SECOND, dstRepStride, srcBlkStride, srcRepStride);     \
    }
AICORE_SIM_REDUCE_SUM_OP(BlockReduceSum, repeatTime, mask)
AICORE_SIM_REDUCE_SUM_OP(WholeReduceSum, mask, repeatTime)
#undef AICORE_SIM_REDUCE_SUM_OP
template <typename T, bool isSetMask = true>
__aicore__ inline void WholeReduceMax(const LocalTensor<T>& dst, const LocalTensor<T>& src,
                                      int32_t mask, int32_t repeatTime, int32_t dstRepStride,
                                      int32_t srcBlkStride, int32_t srcRepStride,
                                      ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX,
                                      Site s = {}) {
    call("WholeReduceMax", s, dst, src, mask, repeatTime, dstRepStride, srcBlkStride,
         srcRepStride, order);
}
template <typename T, bool isSetMask = true>
__aicore__ inline void PairReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src,
                                     int32_t repeatTime, int32_t mask, int32_t dstRepStride,
                                     int32_t srcBlkStride, int32_t srcRepStride, Site s = {}) {
    call("PairReduceSum<isSetMask>", s, dst, src, repeatTime, mask, dstRepStride, srcBlkStride,
         srcRepStride, isSetMask);
}
template <typename T>
__aicore__ inline void ReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src,
                                 const LocalTensor<T>& sharedTmpBuffer, int32_t count,
                                 Site s = {}) {
    call("ReduceSum", s, dst, src, sharedTmpBuffer, count);
}
template <typename T>
__aicore__ inline void ReduceMax(const LocalTensor<T>& dst, const LocalTensor<T>& src,
                                 const LocalTensor<T>& sharedTmpBuffer, int32_t count,
                                 bool calIndex = false, Site s = {}) {
    call("ReduceMax", s, dst, src, sharedTmpBuffer, count, calIndex);
}

// ---- vector: masks -------------------------------------------------------------------------

template <typename T> __aicore__ inline void SetVectorMask(int32_t len, Site s = {}) {
    call("SetVectorMask", s, DType<T>{}, len);
}
template <typename T>
__aicore__ inline void SetVectorMask(uint64_t maskHigh, uint64_t maskLow, Site s = {}) {
    call("SetVectorMask", s, DType<T>{}, maskHigh, maskLow);
}
__aicore__ inline void ResetMask(Site s = {}) { call("ResetMask", s); }
__aicore__ inline void SetDeqScale(half scale, Site s = {}) { call("SetDeqScale", s, scale); }

// ---- compare, select, gather, bit operations ---------------------------------------------

template <typename T, typename U>
__aicore__ inline void Compare(const LocalTensor<U>& dst, const LocalTensor<T>& src0,
                               const LocalTensor<T>& src1, CMPMODE cmpMode, uint32_t count,
                               Site s = {}) {
    call("Compare", s, dst, src0, src1, cmpMode, count);
}
template <typename T, typename U, typename S>
__aicore__ inline void CompareScalar(const LocalTensor<U>& dst, const LocalTensor<T>& src0,
                                     const S src1Scalar, CMPMODE cmpMode, uint32_t count,
                                     Site s = {}) {
    call("CompareScalar", s, dst, src0, static_cast<T>(src1Scalar), cmpMode, count);
}
template <typename T, typename U>
__aicore__ inline void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask,
                              const LocalTensor<T>& src0, const LocalTensor<T>& src1,
                              SELMODE selMode, uint32_t count, Site s = {}) {
    call("Select", s, dst, selMask, src0, src1, selMode, count);
}
template <typename T, typename U>
__aicore__ inline void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask,
                              const LocalTensor<T>& src0, T src1, SELMODE selMode,
                              uint32_t count, Site s = {}) {
    call("Select", s, dst, selMask, src0, src1, selMode, count);
}
template <typename T, typename U>
__aicore__ inline void GatherMask(const LocalTensor<T>& dst, const LocalTensor<T>& src0,
                                  const LocalTensor<U>& src1Pattern, const bool reduceMode,
                                  const uint32_t mask, const GatherMaskParams& params,
                                  uint64_t& rsvdCnt, Site s = {}) {
    rsvdCnt = static_cast<uint64_t>(
        call("GatherMask", s, dst, src0, src1Pattern, reduceMode, mask, params));
}
#define AICORE_SIM_BITWISE_OP(NAME)                                                             \
    template <typename T>                                                                      \
    __aicore__ inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0,         \
                                const LocalTensor<T>& src1, int32_t count, Site s = {}) {      \
        call(#NAME, s, dst, src0, src1, count);                                                \
    }
AICORE_SIM_BITWISE_OP(And)
AICORE_SIM_BITWISE_OP(Or)
#undef AICORE_SIM_BITWISE_OP
template <typename T, typename S>
__aicore__ inline void ShiftLeft(const LocalTensor<T>& dst, const LocalTensor<T>& src,
                                 const S scalarValue, int32_t count, Site s = {}) {
    call("ShiftLeft", s, dst, src, static_cast<T>(scalarValue), count);
}
template <typename T, typename S>
__aicore__ inline void ShiftRight(const LocalTensor<T>& dst, const LocalTensor<T>& src,
                                  const S scalarValue, int32_t count, Site s = {}) {
    call("ShiftRight", s, dst, src, static_cast<T>(scalarValue), count);
}

// ---- sort ----------------------------------------------------------------------------------

template <typename T> __aicore__ inline uint32_t GetSortLen(const uint32_t elemCount,
                                                          Site s = {}) {
    return static_cast<uint32_t>(call("GetSortLen", s, DType<T>{}, elemCount));
}
template <typename T> __aicore__ inline uint32_t GetSortOffset(const uint32_t elemOffset,
                                                             Site s = {}) {
    return static_cast<uint32_t>(call("GetSortOffset", s, DType<T>{}, elemOffset));
}
template <typename T>
__aicore__ inline void Concat(LocalTensor<T>& concatLocal, const LocalTensor<T>& srcLocal,
                              const LocalTensor<T>& tmpLocal, const int32_t repeatTimes,
                              Site s = {}) {
    concatLocal = local_call<T>("Concat", s, concatLocal, srcLocal, tmpLocal, repeatTimes);
}
template <typename T, bool isFullSort>
__aicore__ inline void Sort(const LocalTensor<T>& dstLocal, const LocalTensor<T>& concatLocal,
                            const LocalTensor<uint32_t>& indexLocal, LocalTensor<T>& tmpLocal,
                            const int32_t repeatTimes, Site s = {}) {
    call("Sort", s, dstLocal, concatLocal, indexLocal, tmpLocal, repeatTimes, isFullSort);
}
template <typename T>
__aicore__ inline void Sort32(const LocalTensor<T>& dst, const LocalTensor<T>& src0,
                              const LocalTensor<uint32_t>& src1, const int32_t repeatTime,
                              Site s = {}) {
    call("Sort32", s, dst, src0, src1, repeatTime);
}
template <typename T>
__aicore__ inline void Extract(const LocalTensor<T>& dstValueLocal,
                               const LocalTensor<uint32_t>& dstIndexLocal,
                               const LocalTensor<T>& sortedLocal, const int32_t repeatTimes,
                               Site s = {}) {
    call("Extract", s, dstValueLocal, dstIndexLocal, sortedLocal, repeatTimes);
}
template <typename T, bool isExhaustedSuspension = false>
__aicore__ inline void MrgSort(const LocalTensor<T>& dstLocal, const MrgSortSrcList<T>& sortList,
                               const uint16_t elementCountList[4], uint32_t sortedNum[4],
                               uint16_t validBit, const int32_t repeatTime, Site s = {}) {
    call("MrgSort<isExhaustedSuspension>", s, dstLocal, sortList,
         Array<uint16_t, 4>{elementCountList}, validBit, repeatTime, isExhaustedSuspension);
    for (int i = 0; i < 4; ++i) sortedNum[i] = static_cast<uint32_t>(aicore_sim::g_args[i]);
}
template <typename T>
__aicore__ inline void MrgSort(const LocalTensor<T>& dstLocal, const MrgSortSrcList<T>& sortList,
                               const MrgSort4Info& params, Site s = {}) {
    call("MrgSort", s, dstLocal, sortList, params);
}

// ---- workspace, cache and core state -----------------------------------------------------

__aicore__ inline GM_ADDR GetUserWorkspace(GM_ADDR workspace, Site s = {}) {
    return reinterpret_cast<GM_ADDR>(
        call("GetUserWorkspace", s, static_cast<int64_t>(reinterpret_cast<uintptr_t>(workspace))));
}
__aicore__ inline GM_ADDR GetSysWorkSpacePtr(Site s = {}) {
    return reinterpret_cast<GM_ADDR>(call("GetSysWorkSpacePtr", s));
}
__aicore__ inline void InitSocState(Site s = {}) { call("InitSocState", s); }
template <typename T, int mode = 0, int entire = 0>
__aicore__ inline void DataCacheCleanAndInvalid(const GlobalTensor<T>& dst, Site s = {}) {
    call("DataCacheCleanAndInvalid", s, dst);
}
template <typename T> __aicore__ inline T DivCeil(T a, T b, Site s = {}) {
    return static_cast<T>(call("DivCeil", s, a, b));
}
__aicore__ inline float ToFloat(const bfloat16_t& v) { return static_cast<float>(v); }
__aicore__ inline void SetKernelMode(KernelMode) {}

}  // namespace AscendC

// The kernel's own debug check (Ascend C's ASSERT): a false condition is refused by the
// simulator, naming the condition and its line.
#define ASSERT(...)                                                                             \
    do {                                                                                       \
        if (!(__VA_ARGS__)) aicore_sim::call("ASSERT", aicore_sim::Site{}, #__VA_ARGS__);       \
    } while (0)

// The kernel entry's annotations: compile-time only.
#define KERNEL_TASK_TYPE_DEFAULT(type)
#define KERNEL_TASK_TYPE(key, type)
#define KERNEL_TYPE_AIV_ONLY 0
#define KERNEL_TYPE_AIC_ONLY 1
#define KERNEL_TYPE_MIX_AIV_1_0 2
#define KERNEL_TYPE_MIX_AIC_1_2 3
#define TILING_KEY_IS(k) (aicore_sim::t_tiling_key == static_cast<int64_t>(k))

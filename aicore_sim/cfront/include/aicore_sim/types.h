// aicore-sim's Ascend C shim: qualifiers, enums, parameter structs and the tensor classes.
//
// Written for aicore-sim from the public Ascend C API reference and the kernels' call sites;
// no vendor code. Names are Ascend C's; behaviour is the simulator's (aicore_sim.ascendc).
#pragma once

#include "aicore_sim/abi.h"

#define __aicore__
#define __global__
#define __gm__
#define __ubuf__
#define __inout_pipe__(p)
#define __in_pipe__(p)
#define __out_pipe__(p)
#ifndef likely
#define likely(x) __builtin_expect(!!(x), 1)
#endif
#ifndef unlikely
#define unlikely(x) __builtin_expect(!!(x), 0)
#endif

typedef uint8_t* GM_ADDR;

// The kind of core a kernel runs on: the simulator runs vector cores only.
enum KernelCoreType { AIC = 1, AIV = 2, MIX = 3 };
constexpr KernelCoreType g_coreType = AIV;

// Pipes (PipeBarrier<pipe>) and event ids (SetFlag / WaitFlag).
enum pipe_t : int { PIPE_S, PIPE_V, PIPE_M, PIPE_MTE1, PIPE_MTE2, PIPE_MTE3, PIPE_ALL, PIPE_FIX };
enum event_t : int { EVENT_ID0, EVENT_ID1, EVENT_ID2, EVENT_ID3, EVENT_ID4, EVENT_ID5,
                     EVENT_ID6, EVENT_ID7 };

namespace AscendC {

enum class HardEvent : int { MTE2_V, V_MTE2, MTE3_V, V_MTE3, MTE2_MTE3, MTE3_MTE2, MTE2_S,
                             S_MTE2, V_S, S_V, MTE3_S, S_MTE3, MTE2_MTE1, MTE1_MTE2, MTE1_M,
                             M_MTE1, M_V, V_M, V_V, MTE1_V, M_S, S_M, FIX_S, S_FIX };
enum class TPosition : int { GM, A1, A2, B1, B2, C1, C2, CO1, CO2, VECIN, VECOUT, VECCALC,
                             LCM, SPM, SHM, TSCM, C2PIPE2GM, C2PIPE2LOCAL, MAX };
using QuePosition = TPosition;
enum class RoundMode : int { CAST_NONE, CAST_RINT, CAST_FLOOR, CAST_CEIL, CAST_ROUND,
                             CAST_TRUNC, CAST_ODD };
enum class CacheMode : int { CACHE_MODE_DISABLE, CACHE_MODE_NORMAL, CACHE_MODE_LAST,
                             CACHE_MODE_PERSISTENT };
enum class CMPMODE : int { LT, GT, EQ, LE, GE, NE };
enum class SELMODE : int { VSEL_CMPMASK_SPR, VSEL_TENSOR_SCALAR_MODE, VSEL_TENSOR_TENSOR_MODE };
enum class ReduceOrder : int { ORDER_VALUE_INDEX, ORDER_INDEX_VALUE, ORDER_ONLY_VALUE,
                               ORDER_ONLY_INDEX };
enum class KernelMode : int { MIX_MODE, AIC_MODE, AIV_MODE };

}  // namespace AscendC

namespace aicore_sim {
template <> struct enum_name<AscendC::HardEvent> { static constexpr const char* value = "HardEvent"; };
template <> struct enum_name<AscendC::TPosition> { static constexpr const char* value = "TPosition"; };
template <> struct enum_name<AscendC::RoundMode> { static constexpr const char* value = "RoundMode"; };
template <> struct enum_name<AscendC::CacheMode> { static constexpr const char* value = "CacheMode"; };
template <> struct enum_name<AscendC::CMPMODE> { static constexpr const char* value = "CMPMODE"; };
template <> struct enum_name<AscendC::SELMODE> { static constexpr const char* value = "SELMODE"; };
template <> struct enum_name<AscendC::ReduceOrder> { static constexpr const char* value = "ReduceOrder"; };
template <> struct enum_name<pipe_t> { static constexpr const char* value = "pipe_t"; };
}  // namespace aicore_sim

namespace AscendC {
using aicore_sim::enc;

template <typename T, typename U> struct IsSameType { static constexpr bool value = false; };
template <typename T> struct IsSameType<T, T> { static constexpr bool value = true; };

constexpr uint32_t ONE_BLK_SIZE = 32;
constexpr uint32_t ONE_REPEAT_BYTE_SIZE = 256;
constexpr uint32_t DEFAULT_BLK_NUM = 8;
constexpr uint32_t DEFAULT_REPEAT_STRIDE = 8;
constexpr uint64_t MASK_PLACEHOLDER = 0;

struct DataCopyParams {
    uint16_t blockCount = 1;
    uint16_t blockLen = 0;
    uint16_t srcStride = 0;
    uint16_t dstStride = 0;
};
struct DataCopyExtParams {
    uint16_t blockCount = 1;
    uint32_t blockLen = 0;
    uint32_t srcStride = 0;
    uint32_t dstStride = 0;
    uint32_t rsv = 0;
};
struct DataCopyPadParams {
    bool isPad = false;
    uint8_t leftPadding = 0;
    uint8_t rightPadding = 0;
    uint64_t paddingValue = 0;
};
template <typename T> struct DataCopyPadExtParams {
    bool isPad = false;
    uint8_t leftPadding = 0;
    uint8_t rightPadding = 0;
    T paddingValue = 0;
    // constructors as well as braces: `DataCopyPadExtParams p{false, 0, 0, (int)0}` deduces T
    // from the padding value
    __aicore__ inline DataCopyPadExtParams() = default;
    __aicore__ inline DataCopyPadExtParams(bool pad, uint8_t left, uint8_t right, T value)
        : isPad(pad), leftPadding(left), rightPadding(right), paddingValue(value) {}
};
struct UnaryRepeatParams {
    uint16_t dstBlkStride = 1;
    uint16_t srcBlkStride = 1;
    uint8_t dstRepStride = 8;
    uint8_t srcRepStride = 8;
    // written with parentheses as well as braces: `UnaryRepeatParams p(1, 1, 8, 8)`
    __aicore__ inline UnaryRepeatParams() = default;
    __aicore__ inline UnaryRepeatParams(uint16_t dstBlk, uint16_t srcBlk, uint8_t dstRep,
                                        uint8_t srcRep)
        : dstBlkStride(dstBlk), srcBlkStride(srcBlk), dstRepStride(dstRep), srcRepStride(srcRep) {}
};
struct BinaryRepeatParams {
    uint8_t dstBlkStride = 1;
    uint8_t src0BlkStride = 1;
    uint8_t src1BlkStride = 1;
    uint8_t dstRepStride = 8;
    uint8_t src0RepStride = 8;
    uint8_t src1RepStride = 8;
};
struct CopyRepeatParams {
    uint16_t dstStride = 1;
    uint16_t srcStride = 1;
    uint16_t dstRepeatSize = 8;
    uint16_t srcRepeatSize = 8;
};
struct BrcbRepeatParams {
    uint16_t dstBlkStride = 1;
    uint16_t dstRepStride = 8;
};
struct GatherMaskParams {
    uint8_t src0BlockStride = 1;
    uint16_t repeatTimes = 1;
    uint16_t src0RepeatStride = 8;
    uint8_t src1RepeatStride = 1;
};
struct MrgSort4Info {
    uint16_t elementLengths[4] = {0, 0, 0, 0};
    bool ifExhaustedSuspension = false;
    uint16_t validBit = 15;
    uint16_t repeatTimes = 1;
};

// A handle: the id of a simulator object (TPipe, TQue, TBuf) of the running core.
struct Handle {
    int64_t id;
};

inline void enc(aicore_sim::Enc& e, Handle h) {
    e.put(aicore_sim::HANDLE);
    e.put(h.id);
}

// Parameter structs travel as their name and fields, in declaration order.
template <typename... F>
inline void enc_struct(aicore_sim::Enc& e, const char* name, const F&... fields) {
    e.put(aicore_sim::STRUCT);
    e.put(reinterpret_cast<int64_t>(name));
    e.put(static_cast<int64_t>(sizeof...(F)));
    (enc(e, fields), ...);
}
inline void enc(aicore_sim::Enc& e, const DataCopyParams& p) {
    enc_struct(e, "DataCopyParams", p.blockCount, p.blockLen, p.srcStride, p.dstStride);
}
inline void enc(aicore_sim::Enc& e, const DataCopyExtParams& p) {
    enc_struct(e, "DataCopyExtParams", p.blockCount, p.blockLen, p.srcStride, p.dstStride,
               p.rsv);
}
inline void enc(aicore_sim::Enc& e, const DataCopyPadParams& p) {
    enc_struct(e, "DataCopyPadParams", p.isPad, p.leftPadding, p.rightPadding, p.paddingValue);
}
template <typename T> inline void enc(aicore_sim::Enc& e, const DataCopyPadExtParams<T>& p) {
    enc_struct(e, "DataCopyPadExtParams", p.isPad, p.leftPadding, p.rightPadding,
               p.paddingValue);
}
inline void enc(aicore_sim::Enc& e, const UnaryRepeatParams& p) {
    enc_struct(e, "UnaryRepeatParams", p.dstBlkStride, p.srcBlkStride, p.dstRepStride,
               p.srcRepStride);
}
inline void enc(aicore_sim::Enc& e, const BinaryRepeatParams& p) {
    enc_struct(e, "BinaryRepeatParams", p.dstBlkStride, p.src0BlkStride, p.src1BlkStride,
               p.dstRepStride, p.src0RepStride, p.src1RepStride);
}
inline void enc(aicore_sim::Enc& e, const CopyRepeatParams& p) {
    enc_struct(e, "CopyRepeatParams", p.dstStride, p.srcStride, p.dstRepeatSize,
               p.srcRepeatSize);
}
inline void enc(aicore_sim::Enc& e, const BrcbRepeatParams& p) {
    enc_struct(e, "BrcbRepeatParams", p.dstBlkStride, p.dstRepStride);
}
inline void enc(aicore_sim::Enc& e, const GatherMaskParams& p) {
    enc_struct(e, "GatherMaskParams", p.src0BlockStride, p.repeatTimes, p.src0RepeatStride,
               p.src1RepeatStride);
}

// A fixed-size array of integers (a bit mask's two words, MrgSort's counts) as a list.
template <typename T, size_t N> struct Array {
    const T* p;
};
template <typename T, size_t N> inline void enc(aicore_sim::Enc& e, const Array<T, N>& a) {
    e.put(aicore_sim::LIST);
    e.put(static_cast<int64_t>(N));
    for (size_t i = 0; i < N; ++i) enc(e, a.p[i]);
}
inline void enc(aicore_sim::Enc& e, const MrgSort4Info& p) {
    enc_struct(e, "MrgSort4Info", Array<uint16_t, 4>{p.elementLengths}, p.ifExhaustedSuspension,
               p.validBit, p.repeatTimes);
}

// ---- GM ---------------------------------------------------------------------------------

// GlobalTensor<T>: a typed window on GM, from a real address of the simulator's image.
template <typename T> class GlobalTensor {
public:
    __gm__ T* address_ = nullptr;
    int64_t size_ = -1;  // elements, as SetGlobalBuffer gave them (-1: not given)
    int64_t cache_ = 0;  // the L2 cache mode of copies through it (0: default, else the
                         // simulator's code + 1)

    __aicore__ inline GlobalTensor() = default;
    __aicore__ inline void SetGlobalBuffer(__gm__ T* buffer, uint64_t bufferSize) {
        address_ = buffer;
        size_ = static_cast<int64_t>(bufferSize);
    }
    __aicore__ inline void SetGlobalBuffer(__gm__ T* buffer) {
        address_ = buffer;
        size_ = -1;
    }
    __aicore__ inline GlobalTensor operator[](uint64_t offset) const {
        GlobalTensor t;
        t.address_ = address_ + offset;
        t.cache_ = cache_;
        return t;
    }
    __aicore__ inline __gm__ T* GetPhyAddr() const { return address_; }
    __aicore__ inline __gm__ T* GetPhyAddr(uint64_t offset) const { return address_ + offset; }
    __aicore__ inline uint64_t GetSize() const { return size_ < 0 ? 0 : size_; }
    __aicore__ inline T GetValue(uint64_t offset, aicore_sim::Site s = {}) const {
        return aicore_sim::answer_as<T>(
            aicore_sim::call("GlobalTensor.GetValue", s, *this, offset));
    }
    __aicore__ inline void SetL2CacheHint(CacheMode mode, aicore_sim::Site s = {}) {
        cache_ = aicore_sim::call("GlobalTensor.SetL2CacheHint", s, *this, mode);
    }
};

template <typename T> inline void enc(aicore_sim::Enc& e, const GlobalTensor<T>& g) {
    e.put(aicore_sim::GLB);
    e.put(reinterpret_cast<int64_t>(g.address_));
    e.put(aicore_sim::dtype_of<T>::value | (g.cache_ << 8));
    e.put(g.size_);
}

// ---- UB ---------------------------------------------------------------------------------

// LocalTensor<T>: a typed window on one UB buffer of the running core: the buffer's id, a
// byte address and the buffer's end. Indexing and reinterpreting stay here; everything that
// reads, writes or checks goes to the simulator.
template <typename T> class LocalTensor {
public:
    int32_t buf_ = 0;  // 0: bound to no buffer
    int32_t addr_ = 0;
    int32_t limit_ = 0;
    int32_t size_ = -1;  // elements, as SetSize gave them (-1: to the buffer's end)

    __aicore__ inline LocalTensor() = default;
    // LocalTensor<T>(pos, addr, tileSize): a tensor at a fixed UB byte address.
    __aicore__ inline LocalTensor(TPosition pos, uint32_t addr, uint32_t tileSize,
                                  aicore_sim::Site s = {}) {
        aicore_sim::call("LocalTensor.Fixed", s, aicore_sim::DType<T>{}, pos, addr, tileSize);
        from_answer();
    }
    __aicore__ inline void from_answer() {
        buf_ = static_cast<int32_t>(aicore_sim::g_args[0] >> 8);
        addr_ = static_cast<int32_t>(aicore_sim::g_args[1] >> 32);
        limit_ = static_cast<int32_t>(aicore_sim::g_args[1] & 0xffffffff);
        size_ = -1;
    }
    __aicore__ inline LocalTensor operator[](uint32_t offset) const {
        LocalTensor t = *this;
        t.addr_ = addr_ + static_cast<int32_t>(offset * sizeof(T));
        t.size_ = -1;
        return t;
    }
    template <typename U> __aicore__ inline LocalTensor<U> ReinterpretCast() const {
        LocalTensor<U> t;
        t.buf_ = buf_;
        t.addr_ = addr_;
        t.limit_ = limit_;
        return t;
    }
    __aicore__ inline __ubuf__ T* GetPhyAddr() const {
        return reinterpret_cast<T*>(aicore_sim::t_ub_base + addr_);
    }
    __aicore__ inline __ubuf__ T* GetPhyAddr(uint32_t offset) const {
        return reinterpret_cast<T*>(aicore_sim::t_ub_base + addr_ + offset * sizeof(T));
    }
    __aicore__ inline uint32_t GetSize() const {
        return size_ >= 0 ? static_cast<uint32_t>(size_)
                          : static_cast<uint32_t>((limit_ - addr_) / static_cast<int32_t>(sizeof(T)));
    }
    __aicore__ inline uint32_t GetLength() const { return GetSize() * sizeof(T); }
    __aicore__ inline void SetSize(uint32_t size, aicore_sim::Site s = {}) {
        aicore_sim::call("LocalTensor.SetSize", s, *this, size);
        size_ = static_cast<int32_t>(size);
    }
    __aicore__ inline T GetValue(uint32_t offset, aicore_sim::Site s = {}) const {
        return aicore_sim::answer_as<T>(
            aicore_sim::call("LocalTensor.GetValue", s, *this, offset));
    }
    template <typename V>
    __aicore__ inline void SetValue(uint32_t offset, V value, aicore_sim::Site s = {}) const {
        aicore_sim::call("LocalTensor.SetValue", s, *this, offset, static_cast<T>(value));
    }
};

template <typename T> inline void enc(aicore_sim::Enc& e, const LocalTensor<T>& t) {
    e.put(t.size_ < 0 ? aicore_sim::LOC : aicore_sim::LOCS);
    e.put((static_cast<int64_t>(t.buf_) << 8) | aicore_sim::dtype_of<T>::value);
    e.put((static_cast<int64_t>(t.addr_) << 32) | static_cast<uint32_t>(t.limit_));
    if (t.size_ >= 0) e.put(t.size_);
}

template <typename T> inline LocalTensor<T> local_answer() {
    LocalTensor<T> t;
    t.from_answer();
    return t;
}

// Make the call `name` and take the tensor its answer names (TQue.AllocTensor, TBuf.Get, ...).
template <typename T, typename... A>
inline LocalTensor<T> local_call(const char* name, const aicore_sim::Site& s, const A&... args) {
    aicore_sim::call(name, s, args...);
    return local_answer<T>();
}

template <typename T> struct MrgSortSrcList {
    LocalTensor<T> src1, src2, src3, src4;
    __aicore__ inline MrgSortSrcList() = default;
    __aicore__ inline MrgSortSrcList(const LocalTensor<T>& a, const LocalTensor<T>& b,
                                     const LocalTensor<T>& c, const LocalTensor<T>& d)
        : src1(a), src2(b), src3(c), src4(d) {}
};
template <typename T> inline void enc(aicore_sim::Enc& e, const MrgSortSrcList<T>& l) {
    enc_struct(e, "MrgSortSrcList", l.src1, l.src2, l.src3, l.src4);
}

}  // namespace AscendC

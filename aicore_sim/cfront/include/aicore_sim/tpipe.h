// aicore-sim's Ascend C shim: TPipe, TQue, TQueBind and TBuf.
//
// Written for aicore-sim from the public Ascend C API reference and the kernels' call sites;
// no vendor code. Each object is a handle on the simulator's own object of the running core,
// made when first needed; UB placement, queue flags and their checks are the simulator's.
#pragma once

#include <exception>

#include "aicore_sim/types.h"

namespace AscendC {

class TPipe;

namespace detail {
// The C++ TPipe of each simulator TPipe id of the running core (GetTPipePtr answers with it).
constexpr int MAX_PIPES = 64;
inline thread_local TPipe* t_pipes[MAX_PIPES] = {};
}  // namespace detail

// A queue of `depth` buffers between two positions (TQue: between GM and one vector position).
template <TPosition src, TPosition dst, int32_t depth, auto mask = 0> class TQueBind {
public:
    int64_t h_ = -1;  // the simulator's queue, made by InitBuffer (-1: not yet)

    template <typename T> __aicore__ inline LocalTensor<T> AllocTensor(aicore_sim::Site s = {}) {
        return local_call<T>("TQue.AllocTensor", s, Handle{h_}, aicore_sim::DType<T>{});
    }
    template <typename T>
    __aicore__ inline bool EnQue(const LocalTensor<T>& tensor, aicore_sim::Site s = {}) {
        aicore_sim::call("TQue.EnQue", s, Handle{h_}, tensor);
        return true;
    }
    template <typename T> __aicore__ inline LocalTensor<T> DeQue(aicore_sim::Site s = {}) {
        return local_call<T>("TQue.DeQue", s, Handle{h_}, aicore_sim::DType<T>{});
    }
    // EnQue<srcPos, dstPos, T> / DeQue<srcPos, dstPos, T>: the positions a bound queue's
    // tensor moves between, named again at the call (the queue already knows them)
    template <TPosition from, TPosition to, typename T>
    __aicore__ inline bool EnQue(const LocalTensor<T>& tensor, aicore_sim::Site s = {}) {
        return EnQue(tensor, s);
    }
    template <TPosition from, TPosition to, typename T>
    __aicore__ inline LocalTensor<T> DeQue(aicore_sim::Site s = {}) {
        return DeQue<T>(s);
    }
    template <typename T>
    __aicore__ inline void FreeTensor(LocalTensor<T>& tensor, aicore_sim::Site s = {}) {
        aicore_sim::call("TQue.FreeTensor", s, Handle{h_}, tensor);
    }
    static constexpr TPosition src_position = src;
    static constexpr TPosition dst_position = dst;
    static constexpr int32_t queue_depth = depth;
};

template <TPosition pos, int32_t depth, auto mask = 0>
class TQue : public TQueBind<(pos == TPosition::VECIN ? TPosition::GM : pos),
                             (pos == TPosition::VECIN ? pos : TPosition::GM), depth, mask> {};

// One UB buffer with no implicit synchronisation.
template <TPosition pos = TPosition::VECCALC> class TBuf {
public:
    int64_t h_ = -2;  // the simulator's buffer, made by InitBuffer (-2: not yet)

    template <typename T> __aicore__ inline LocalTensor<T> Get(aicore_sim::Site s = {}) {
        return local_call<T>("TBuf.Get", s, Handle{h_}, aicore_sim::DType<T>{});
    }
    template <typename T>
    __aicore__ inline LocalTensor<T> Get(uint32_t len, aicore_sim::Site s = {}) {
        return local_call<T>("TBuf.Get", s, Handle{h_}, aicore_sim::DType<T>{}, len);
    }
    template <typename T>
    __aicore__ inline LocalTensor<T> GetWithOffset(uint32_t size, uint32_t bufOffset,
                                                   aicore_sim::Site s = {}) {
        return local_call<T>("TBuf.GetWithOffset", s, Handle{h_}, aicore_sim::DType<T>{}, size,
                             bufOffset);
    }
    static constexpr TPosition position = pos;
};

// The UB owner of one core. Its destructor destroys it (waits, barrier, UB released) unless
// Destroy already did, or the kernel is being unwound after the simulator refused a call.
class TPipe {
public:
    int64_t h_ = -1;
    aicore_sim::Site made_;

    __aicore__ inline TPipe(aicore_sim::Site s = {}) : made_(s) {
        h_ = aicore_sim::call("TPipe", s);
        if (h_ >= 0 && h_ < detail::MAX_PIPES) detail::t_pipes[h_] = this;
    }
    TPipe(const TPipe&) = delete;
    TPipe& operator=(const TPipe&) = delete;
    __aicore__ inline ~TPipe() {
        if (h_ >= 0 && h_ < detail::MAX_PIPES && detail::t_pipes[h_] == this)
            detail::t_pipes[h_] = nullptr;
        if (std::uncaught_exceptions() == 0 && aicore_sim::t_running)
            aicore_sim::call("TPipe.Release", made_, Handle{h_});
    }
    __aicore__ inline void Init(aicore_sim::Site s = {}) {
        aicore_sim::call("TPipe.Init", s, Handle{h_});
    }
    __aicore__ inline void Destroy(aicore_sim::Site s = {}) {
        aicore_sim::call("TPipe.Destroy", s, Handle{h_});
    }
    template <TPosition src, TPosition dst, int32_t depth, auto mask>
    __aicore__ inline bool InitBufferNamed(const char* name, TQueBind<src, dst, depth, mask>& que,
                                           uint8_t num, uint32_t len, aicore_sim::Site s = {}) {
        que.h_ = aicore_sim::call("TPipe.InitBuffer", s, Handle{h_}, Handle{que.h_}, name, src,
                                  dst, depth, static_cast<int64_t>(num),
                                  static_cast<int64_t>(len));
        return true;
    }
    template <TPosition pos>
    __aicore__ inline bool InitBufferNamed(const char* name, TBuf<pos>& buf, uint32_t len,
                                           aicore_sim::Site s = {}) {
        buf.h_ = aicore_sim::call("TPipe.InitBuffer", s, Handle{h_}, Handle{buf.h_}, name, pos,
                                  static_cast<int64_t>(len));
        return true;
    }
    __aicore__ inline int32_t FetchEventID(HardEvent evt, aicore_sim::Site s = {}) {
        return static_cast<int32_t>(aicore_sim::call("TPipe.FetchEventID", s, Handle{h_}, evt));
    }
    template <HardEvent evt> __aicore__ inline int32_t FetchEventID(aicore_sim::Site s = {}) {
        return FetchEventID(evt, s);
    }
    template <HardEvent evt> __aicore__ inline int32_t AllocEventID(aicore_sim::Site s = {}) {
        return static_cast<int32_t>(aicore_sim::call("TPipe.AllocEventID", s, Handle{h_}, evt));
    }
    template <HardEvent evt>
    __aicore__ inline void ReleaseEventID(int32_t id, aicore_sim::Site s = {}) {
        aicore_sim::call("TPipe.ReleaseEventID", s, Handle{h_}, evt, id);
    }
};

__aicore__ inline TPipe* GetTPipePtr(aicore_sim::Site s = {}) {
    int64_t h = aicore_sim::call("GetTPipePtr", s);
    return (h >= 0 && h < detail::MAX_PIPES) ? detail::t_pipes[h] : nullptr;
}

}  // namespace AscendC

// InitBuffer passes the buffer's own name (the member the kernel wrote), as the Python ports
// name theirs, so traces and stream comparisons see the same buffer names.
#define InitBuffer(obj, ...) InitBufferNamed(#obj, obj, __VA_ARGS__)

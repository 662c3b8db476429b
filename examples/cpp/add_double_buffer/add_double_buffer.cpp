// aicore-sim's own example kernel: z = x + y (half), double-buffered with static tensors.
//
// Each core takes an even share of the rows (the first totalM % splitM cores one more) and
// walks it in chunks of dataCopyLen elements through two sets of x / y / z buffers at fixed UB
// addresses (ping and pong), with event id 0 guarding the ping set and 1 the pong set, so the
// next chunk is copied in while this one is added and copied out. This is the double-buffering
// step of the best-practice guide's Add (op_models/board_samples/add.py, case 4, ports the
// sample; this file is written for aicore-sim to do the same calls in the same order).
#include "kernel_operator.h"
using namespace AscendC;

constexpr int32_t MAX_LEN = 16384;  // elements a buffer holds (A2/A3: 3 x 2 x 32 KiB of UB)

extern "C" __global__ __aicore__ void add_double_buffer(GM_ADDR x, GM_ADDR y, GM_ADDR z,
                                                        GM_ADDR tiling)
{
    GET_TILING_DATA(t, tiling);
    InitSocState();
    int64_t base = t.totalM / t.splitM;
    int64_t extra = t.totalM % t.splitM;
    int64_t core = GetBlockIdx();
    int64_t rows = core < extra ? base + 1 : base;
    int64_t firstRow = core < extra ? core * rows : extra * (base + 1) + (core - extra) * base;
    int64_t elements = rows * t.totalN;
    GlobalTensor<half> xGm, yGm, zGm;
    xGm.SetGlobalBuffer((__gm__ half*)x + firstRow * t.totalN, elements);
    yGm.SetGlobalBuffer((__gm__ half*)y + firstRow * t.totalN, elements);
    zGm.SetGlobalBuffer((__gm__ half*)z + firstRow * t.totalN, elements);

    const uint32_t bytes = MAX_LEN * sizeof(half);
    LocalTensor<half> xPing(TPosition::VECCALC, 0, MAX_LEN);
    LocalTensor<half> yPing(TPosition::VECCALC, bytes, MAX_LEN);
    LocalTensor<half> zPing(TPosition::VECCALC, 2 * bytes, MAX_LEN);
    LocalTensor<half> xPong(TPosition::VECCALC, 3 * bytes, MAX_LEN);
    LocalTensor<half> yPong(TPosition::VECCALC, 4 * bytes, MAX_LEN);
    LocalTensor<half> zPong(TPosition::VECCALC, 5 * bytes, MAX_LEN);

    int64_t chunks = DivCeil(elements, t.dataCopyLen);
    // both buffer sets start free: their "consumed" flags are set once up front
    SetFlag<HardEvent::V_MTE2>(EVENT_ID0);
    SetFlag<HardEvent::V_MTE2>(EVENT_ID1);
    SetFlag<HardEvent::MTE3_V>(EVENT_ID0);
    SetFlag<HardEvent::MTE3_V>(EVENT_ID1);
    for (int64_t k = 0; k < chunks; ++k) {
        int64_t start = k * t.dataCopyLen;
        int64_t left = elements - start;
        int32_t len = static_cast<int32_t>(left > t.dataCopyLen ? t.dataCopyLen : left);
        bool ping = (k & 1) == 0;
        event_t id = ping ? EVENT_ID0 : EVENT_ID1;
        LocalTensor<half>& xl = ping ? xPing : xPong;
        LocalTensor<half>& yl = ping ? yPing : yPong;
        LocalTensor<half>& zl = ping ? zPing : zPong;

        WaitFlag<HardEvent::V_MTE2>(id);  // the vector unit is done with this set's inputs
        DataCopy(xl, xGm[start], len);
        DataCopy(yl, yGm[start], len);
        SetFlag<HardEvent::MTE2_V>(id);
        WaitFlag<HardEvent::MTE2_V>(id);  // inputs arrived
        WaitFlag<HardEvent::MTE3_V>(id);  // this set's z has gone out
        Add(zl, xl, yl, len);
        SetFlag<HardEvent::V_MTE2>(id);
        SetFlag<HardEvent::V_MTE3>(id);
        WaitFlag<HardEvent::V_MTE3>(id);  // z computed
        DataCopy(zGm[start], zl, len);
        SetFlag<HardEvent::MTE3_V>(id);
    }
    // the flags set for chunks that never came are consumed, so none is left pending
    WaitFlag<HardEvent::V_MTE2>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE2>(EVENT_ID1);
    WaitFlag<HardEvent::MTE3_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE3_V>(EVENT_ID1);
    PipeBarrier<PIPE_ALL>();
}

// A test kernel of aicore-sim's own: each core scales its rows of x by 2 into y, through a
// double-buffered TQue pair; SCALE_NO_WAIT drops the WaitFlag before the copy-out (a race).
#include "kernel_operator.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void scale_rows(GM_ADDR x, GM_ADDR y, GM_ADDR tiling)
{
    GET_TILING_DATA(td, tiling);
    TPipe pipe;
    TQue<QuePosition::VECIN, 2> inQue;
    TBuf<TPosition::VECCALC> outBuf;
    pipe.InitBuffer(inQue, 2, td.cols * sizeof(float));
    pipe.InitBuffer(outBuf, td.cols * sizeof(float));
    GlobalTensor<float> xGm, yGm;
    xGm.SetGlobalBuffer((__gm__ float*)x + GetBlockIdx() * td.rowsPerCore * td.cols);
    yGm.SetGlobalBuffer((__gm__ float*)y + GetBlockIdx() * td.rowsPerCore * td.cols);
    LocalTensor<float> out = outBuf.Get<float>();
    for (int64_t r = 0; r < td.rowsPerCore; ++r) {
        LocalTensor<float> in = inQue.AllocTensor<float>();
        DataCopy(in, xGm[r * td.cols], td.cols);
        inQue.EnQue(in);
        in = inQue.DeQue<float>();
        Muls(out, in, 2.0f, td.cols);
        inQue.FreeTensor(in);
        SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
#ifndef SCALE_NO_WAIT
        WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
#endif
        DataCopy(yGm[r * td.cols], out, td.cols);
        SetFlag<HardEvent::MTE3_V>(EVENT_ID1);
        WaitFlag<HardEvent::MTE3_V>(EVENT_ID1);
    }
}

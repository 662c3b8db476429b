// aicore-sim's own test kernel: Arange is an API item the shim does not provide (yet).
#include "kernel_operator.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void lacks_api(GM_ADDR x, GM_ADDR tiling)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 256);
    LocalTensor<DTYPE_X> t = buf.Get<DTYPE_X>();
    Arange(t, 0, 1, 64);
}

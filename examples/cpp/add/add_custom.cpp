// aicore-sim's own example kernel: z = x + y (half), double-buffered through TQue.
//
// Written for aicore-sim as the best-practice guide describes the pattern: two input queues
// TQue<VECIN, 2> and one output queue TQue<VECOUT, 2>; per chunk CopyIn (AllocTensor,
// DataCopy, EnQue), Compute (DeQue, AllocTensor, Add, EnQue, FreeTensor) and CopyOut (DeQue,
// DataCopy, FreeTensor). With two buffers per queue, the copy in of chunk i + 1 overlaps the
// Add and the copy out of chunk i. The queues' flags are the only synchronisation.
//
// Rows are split over the cores as in op_models/board_samples/add.py (the first
// totalM % blockNum cores one row more); each core's rows are one contiguous range of
// elements walked in chunks of tileLength (the last chunk may be shorter; every chunk is a
// multiple of 16 halves, one 32-byte block, when totalN and tileLength are).
#include "kernel_operator.h"

using namespace AscendC;

constexpr int32_t BUFFER_NUM = 2;

class KernelAddQueued {
public:
    __aicore__ inline KernelAddQueued() {}

    __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, GM_ADDR z, uint32_t totalM,
                                uint32_t totalN, uint32_t tileLength)
    {
        const uint32_t blockIdx = GetBlockIdx();
        const uint32_t blockNum = GetBlockNum();
        const uint32_t baseRows = totalM / blockNum;
        const uint32_t extraRows = totalM % blockNum;
        uint32_t rows = baseRows;
        uint32_t firstRow = extraRows * (baseRows + 1) + (blockIdx - extraRows) * baseRows;
        if (blockIdx < extraRows) {
            rows = baseRows + 1;
            firstRow = blockIdx * rows;
        }
        coreLength_ = rows * totalN;
        tileLength_ = tileLength;
        const uint64_t offset = static_cast<uint64_t>(firstRow) * totalN;
        xGm_.SetGlobalBuffer((__gm__ half*)x + offset, coreLength_);
        yGm_.SetGlobalBuffer((__gm__ half*)y + offset, coreLength_);
        zGm_.SetGlobalBuffer((__gm__ half*)z + offset, coreLength_);
        pipe_.InitBuffer(inQueueX_, BUFFER_NUM, tileLength_ * sizeof(half));
        pipe_.InitBuffer(inQueueY_, BUFFER_NUM, tileLength_ * sizeof(half));
        pipe_.InitBuffer(outQueueZ_, BUFFER_NUM, tileLength_ * sizeof(half));
    }

    __aicore__ inline void Process()
    {
        const uint32_t chunks = (coreLength_ + tileLength_ - 1) / tileLength_;
        for (uint32_t i = 0; i < chunks; i++) {
            const uint32_t start = i * tileLength_;
            const uint32_t len = coreLength_ - start < tileLength_ ? coreLength_ - start
                                                                  : tileLength_;
            CopyIn(start, len);
            Compute(len);
            CopyOut(start, len);
        }
    }

private:
    __aicore__ inline void CopyIn(uint32_t start, uint32_t len)
    {
        LocalTensor<half> xLocal = inQueueX_.AllocTensor<half>();
        LocalTensor<half> yLocal = inQueueY_.AllocTensor<half>();
        DataCopy(xLocal, xGm_[start], len);
        DataCopy(yLocal, yGm_[start], len);
        inQueueX_.EnQue(xLocal);
        inQueueY_.EnQue(yLocal);
    }

    __aicore__ inline void Compute(uint32_t len)
    {
        LocalTensor<half> xLocal = inQueueX_.DeQue<half>();
        LocalTensor<half> yLocal = inQueueY_.DeQue<half>();
        LocalTensor<half> zLocal = outQueueZ_.AllocTensor<half>();
        Add(zLocal, xLocal, yLocal, len);
        outQueueZ_.EnQue<half>(zLocal);
        inQueueX_.FreeTensor(xLocal);
        inQueueY_.FreeTensor(yLocal);
    }

    __aicore__ inline void CopyOut(uint32_t start, uint32_t len)
    {
        LocalTensor<half> zLocal = outQueueZ_.DeQue<half>();
        DataCopy(zGm_[start], zLocal, len);
        outQueueZ_.FreeTensor(zLocal);
    }

    TPipe pipe_;
    TQue<TPosition::VECIN, BUFFER_NUM> inQueueX_;
    TQue<TPosition::VECIN, BUFFER_NUM> inQueueY_;
    TQue<TPosition::VECOUT, BUFFER_NUM> outQueueZ_;
    GlobalTensor<half> xGm_;
    GlobalTensor<half> yGm_;
    GlobalTensor<half> zGm_;
    uint32_t coreLength_ = 0;
    uint32_t tileLength_ = 0;
};

extern "C" __global__ __aicore__ void add_custom(GM_ADDR x, GM_ADDR y, GM_ADDR z,
                                                 GM_ADDR tiling)
{
    GET_TILING_DATA(tilingData, tiling);
    KernelAddQueued op;
    op.Init(x, y, z, tilingData.totalM, tilingData.totalN, tilingData.tileLength);
    op.Process();
}

// aicore-sim's own test host tiling (written for the tests, no vendor code): rows split over
// the AIV cores, each core's rows held in UB. It reads what host tilings read - an input's
// shape and dtype by instance index, an optional input by IR index, attributes by IR index,
// the platform's core count and UB, through the compile info its parse step fills - and
// writes a key, a block dim, a workspace and the tiling data. Attribute 0 (int, "mode"): 0
// tile, 1 crash (a null write), 2 throw.
#include <stdexcept>

#include "register/op_impl_registry.h"
#include "register/tilingdata_base.h"
#include "tiling/platform/platform_ascendc.h"
#include "log/log.h"

namespace optiling {
#include "scale_rows_tiling.h"

struct ScaleRowsCompileInfo {
    int64_t cores = -1;  // -1: the parse step did not run
    uint64_t ub = 0;
};

static ge::graphStatus TilingScaleRows(gert::TilingContext* context)
{
    const gert::StorageShape* x = context->GetInputShape(0);
    OP_CHECK_NULL_WITH_CONTEXT(context, x);
    const gert::Shape& shape = x->GetStorageShape();
    OP_CHECK_IF(shape.GetDimNum() != 2,
                OP_LOGE(context->GetNodeName(), "x must be 2-D, got %zu dims", shape.GetDimNum()),
                return ge::GRAPH_FAILED);
    const int64_t* mode = context->GetAttrs()->GetAttrPointer<int64_t>(0);
    if (mode != nullptr && *mode == 1) {
        volatile int* nowhere = nullptr;
        *nowhere = 1;
    }
    if (mode != nullptr && *mode == 2) throw std::runtime_error("mode 2 throws");
    auto platform = platform_ascendc::PlatformAscendC(context->GetPlatformInfo());
    const ScaleRowsCompileInfo* info = context->GetCompileInfo<ScaleRowsCompileInfo>();
    OP_CHECK_IF(info == nullptr || info->cores <= 0,
                OP_LOGE(context->GetNodeName(), "no compile info from the parse step"),
                return ge::GRAPH_FAILED);
    int64_t cores = info->cores;
    uint64_t ub = info->ub;
    int64_t rows = shape.GetDim(0), cols = shape.GetDim(1);
    int64_t bytes = ge::GetSizeByDataType(context->GetInputDesc(0)->GetDataType());
    OP_CHECK_IF(cols * bytes > static_cast<int64_t>(ub),
                OP_LOGE(context->GetNodeName(), "a row of %ld bytes exceeds UB %lu", cols * bytes, ub),
                return ge::GRAPH_FAILED);
    ScaleRowsTilingData tiling;
    tiling.set_rowsPerCore((rows + cores - 1) / cores);
    tiling.set_cols(cols);
    tiling.SaveToBuffer(context->GetRawTilingData()->GetData(), context->GetRawTilingData()->GetCapacity());
    context->GetRawTilingData()->SetDataSize(tiling.GetDataSize());
    context->SetBlockDim(static_cast<uint32_t>((rows + tiling.get_rowsPerCore() - 1) / tiling.get_rowsPerCore()));
    context->SetTilingKey(context->GetOptionalInputTensor(1) == nullptr ? 0 : 1);
    size_t* ws = context->GetWorkspaceSizes(1);
    ws[0] = static_cast<size_t>(platform.GetLibApiWorkSpaceSize());
    OP_LOGW(context, "%ld rows over %ld cores", rows, cores);
    return ge::GRAPH_SUCCESS;
}

static ge::graphStatus TilingParseScaleRows(gert::TilingParseContext* context)
{
    ScaleRowsCompileInfo* info = context->GetCompiledInfo<ScaleRowsCompileInfo>();
    OP_CHECK_NULL_WITH_CONTEXT(context, info);
    auto platform = platform_ascendc::PlatformAscendC(context->GetPlatformInfo());
    info->cores = platform.GetCoreNumAiv();
    platform.GetCoreMemSize(platform_ascendc::CoreMemType::UB, info->ub);
    return ge::GRAPH_SUCCESS;
}

IMPL_OP_OPTILING(ScaleRows).Tiling(TilingScaleRows).TilingParse<ScaleRowsCompileInfo>(TilingParseScaleRows);
}  // namespace optiling

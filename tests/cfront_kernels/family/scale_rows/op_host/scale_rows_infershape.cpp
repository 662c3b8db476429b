// aicore-sim's own test infershape (written for the tests, no vendor code): y takes x's shape
// and data type (an x of unknown rank: a y of two unknown dimensions).
#include "register/op_impl_registry.h"
#include "log/log.h"

namespace ops {
static ge::graphStatus InferShapeScaleRows(gert::InferShapeContext* context)
{
    const gert::Shape* x = context->GetInputShape(0);
    gert::Shape* y = context->GetOutputShape(0);
    OP_CHECK_NULL_WITH_CONTEXT(context, x);
    OP_CHECK_NULL_WITH_CONTEXT(context, y);
    if (x->GetDimNum() == 1 && x->GetDim(0) == ge::UNKNOWN_DIM_NUM) {
        y->SetDimNum(2);
        y->SetDim(0, ge::UNKNOWN_DIM);
        y->SetDim(1, ge::UNKNOWN_DIM);
        return ge::GRAPH_SUCCESS;
    }
    *y = *x;
    return ge::GRAPH_SUCCESS;
}

static ge::graphStatus InferDataTypeScaleRows(gert::InferDataTypeContext* context)
{
    return context->SetOutputDataType(0, context->GetInputDataType(0));
}

IMPL_OP_INFERSHAPE(ScaleRows).InferShape(InferShapeScaleRows).InferDataType(InferDataTypeScaleRows);
}  // namespace ops

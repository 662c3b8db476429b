// aicore-sim's own test host tiling (no vendor code): it calls a host API item the shim does
// not provide, so its compile error names the item.
#include "register/op_impl_registry.h"
#include "log/log.h"

namespace optiling {
static ge::graphStatus TilingLacksApi(gert::TilingContext* context)
{
    return context->GetDeterministicLevel() == 0 ? ge::GRAPH_SUCCESS : ge::GRAPH_FAILED;
}
IMPL_OP_OPTILING(LacksApi).Tiling(TilingLacksApi);
}  // namespace optiling

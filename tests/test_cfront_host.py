"""The CANN host shim (``aicore_sim/cfront/include/cann``, ``aicore_sim.cfront.host``) on a host
tiling of our own (``tests/cfront_kernels/family/scale_rows/op_host/scale_rows_tiling.cpp``):
what a tiling reads (shapes and dtypes by instance index, an optional input by IR index,
attributes, the platform's cores and UB) and writes (key, block dim, workspace, tiling data,
log lines), its failure as the op's own line, a crash and an exception named, and a host API
item the shim lacks named at the user's line (``lacks_api``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from aicore_sim.ascendc.host import TensorDesc, TilingContext
from aicore_sim.sim.errors import InputError
from aicore_sim.sim.platform import load_platform
from tests.cxx import needs_cxx

TREE = Path(__file__).resolve().parent / "cfront_kernels" / "family"

pytestmark = needs_cxx


class ScaleRowsCtx(TilingContext):
    OP_TYPE = "ScaleRows"
    INPUTS = (("x", True), ("bias", False))
    OUTPUTS = ("y",)
    ATTRS = (("mode", "int"),)


@pytest.fixture
def host(cxx_cache):
    from aicore_sim.cfront.host import HostSource

    return HostSource.of(TREE / "scale_rows")


def test_tiling_reads_the_case_and_the_platform(host) -> None:
    """The platform reaches the tiling through the compile info its parse step fills (as GE
    runs the step before a node's tilings)."""
    a2 = load_platform("ascend910b1")  # 48 AIV cores, UB 196352 bytes usable
    r = host.tiling(ScaleRowsCtx((TensorDesc((100, 64), "float32"),)), a2)
    # rowsPerCore ceil(100 / 48) = 3 -> block dim ceil(100 / 3) = 34; no bias: key 0; the
    # workspace is the library's 16 MiB (GetLibApiWorkSpaceSize)
    assert r.answer() == {"status": "success", "tiling_key": 0, "block_dim": 34,
                          "tiling_data": {"rowsPerCore": 3, "cols": 64},
                          "workspace": [16777216], "error": None}
    assert r.warnings == ("ScaleRows: 100 rows over 48 cores",)  # its OP_LOGW line
    assert r.tiling_data.to_bytes() == (3).to_bytes(8, "little") + (64).to_bytes(8, "little")
    # the optional bias present (IR index 1): key 1; 7 cores: rowsPerCore ceil(100 / 7) = 15,
    # block dim ceil(100 / 15) = 7
    with_bias = ScaleRowsCtx((TensorDesc((100, 64), "float16"), TensorDesc((64,), "float16")),
                             {0: 0})
    assert host.tiling(with_bias, a2).tiling_key == 1
    r7 = host.tiling(ScaleRowsCtx((TensorDesc((100, 64), "float32"),)), a2, cores=7)
    assert (r7.block_dim, r7.tiling_data.rowsPerCore) == (7, 15)


def test_a_refused_tiling_is_the_ops_own_line(host) -> None:
    a2 = load_platform("ascend910b1")
    r = host.tiling(ScaleRowsCtx((TensorDesc((100,), "float32"),)), a2)
    assert (r.status, r.tiling_data) == ("failed", None)
    assert r.error == ("ScaleRows: x must be 2-D, got 1 dims (the host tiling of "
                       "scale_rows/op_host, status 0xffffffff)")
    # a row of 100000 fp32 = 400000 bytes > UB 196352: the UB check, on the preset's UB
    r = host.tiling(ScaleRowsCtx((TensorDesc((4, 100000), "float32"),)), a2)
    assert r.error.startswith("ScaleRows: a row of 400000 bytes exceeds UB 196352")
    big_ub = a2.with_overrides(ub_size=524288)  # a what-if UB: the same C++ now tiles it
    assert host.tiling(ScaleRowsCtx((TensorDesc((4, 100000), "float32"),)), big_ub).ok


def test_a_crash_and_an_exception_are_named(host) -> None:
    from aicore_sim.cfront.host import HostTilingError

    a2 = load_platform("ascend910b1")
    x = (TensorDesc((100, 64), "float32"),)
    with pytest.raises(HostTilingError, match="ScaleRows host tiling .* crashed with signal 11"):
        host.tiling(ScaleRowsCtx(x, {0: 1}), a2)  # mode 1: a null write (SIGSEGV)
    with pytest.raises(HostTilingError, match="threw a C\\+\\+ exception: mode 2 throws"):
        host.tiling(ScaleRowsCtx(x, {0: 2}), a2)
    assert host.tiling(ScaleRowsCtx(x, {0: 0}), a2).ok  # the library still answers


def test_the_shim_lays_out_what_the_header_reader_lays_out(host) -> None:
    layout = host.header.struct_for("ScaleRows")
    assert host.built.fields("ScaleRows") == [
        ("size", "", 0, layout.size, 0), ("rowsPerCore", "q", 0, 8, 1), ("cols", "q", 8, 8, 1)]
    assert layout.size == 16


def test_a_missing_host_api_item_is_named_at_the_users_line(cxx_cache) -> None:
    from aicore_sim.cfront.host import HostSource

    with pytest.raises(InputError) as e:
        HostSource.of(TREE / "lacks_api").serves("LacksApi")
    msg = str(e.value)
    assert "lacks_api_tiling.cpp:9:" in msg
    assert ("aicore-sim's CANN host shim does not provide "
            "gert::TilingContext::GetDeterministicLevel yet") in msg


def test_op_src_must_be_an_operator_folder(tmp_path) -> None:
    from aicore_sim.cfront.host import HostSource

    with pytest.raises(InputError, match="is not a folder"):
        HostSource.of(tmp_path / "none")
    with pytest.raises(InputError, match="holds no op_host/ folder"):
        HostSource.of(tmp_path)
    (tmp_path / "op_host").mkdir()
    with pytest.raises(InputError, match="holds no \\*tiling\\*.cpp"):
        HostSource.of(tmp_path).sources()


def test_infershape_and_datatype_from_the_sources(host) -> None:
    """The op's own infershape / infer-datatype (``scale_rows_infershape.cpp``): y takes x's
    shape and dtype."""
    assert host.infer(ScaleRowsCtx((TensorDesc((100, 64), "float16"),)), 1) == (
        [(100, 64)], ["DT_FLOAT16"])
    assert host.infer(ScaleRowsCtx((TensorDesc((7, 3), "bfloat16"),)), 1) == (
        [(7, 3)], ["DT_BF16"])
    # GE's unknown rank and unknown dimension (ge::UNKNOWN_DIM_NUM, ge::UNKNOWN_DIM)
    assert host.infer(ScaleRowsCtx((TensorDesc((-2,), "float32"),)), 1) == (
        [(-1, -1)], ["DT_FLOAT"])


_LIST_TILING = """#include "register/op_impl_registry.h"
namespace optiling {
static ge::graphStatus TilingListAttr(gert::TilingContext*) { return ge::GRAPH_SUCCESS; }
IMPL_OP_OPTILING(ListAttr).Tiling(TilingListAttr);
}
"""
_LIST_INFER = """#include "register/op_impl_registry.h"
namespace ops {
static ge::graphStatus InferListAttr(gert::InferShapeContext* context)
{
    const int64_t* window = context->GetAttrs()->GetListInt(0)->GetData();
    gert::Shape* y = context->GetOutputShape(0);
    y->SetDimNum(1);
    y->SetDim(0, window[1] - window[0]);
    return ge::GRAPH_SUCCESS;
}
IMPL_OP_INFERSHAPE(ListAttr).InferShape(InferListAttr);
}
"""


def test_a_list_attribute_reads_as_typed_elements(cxx_cache, tmp_path) -> None:
    """``GetListInt(i)->GetData()`` is ``const int64_t*``, as gert's typed vector gives it."""
    from aicore_sim.cfront.host import HostSource

    (tmp_path / "list_attr" / "op_host").mkdir(parents=True)
    (tmp_path / "list_attr" / "op_host" / "list_attr_tiling.cpp").write_text(_LIST_TILING)
    (tmp_path / "list_attr" / "op_host" / "list_attr_infershape.cpp").write_text(_LIST_INFER)

    class ListAttrCtx(TilingContext):
        OP_TYPE = "ListAttr"
        INPUTS = (("x", True),)
        OUTPUTS = ("y",)
        ATTRS = (("window", "int_list"),)

    host = HostSource.of(tmp_path / "list_attr")
    shapes, _ = host.infer(ListAttrCtx((TensorDesc((8,), "float32"),), {0: [3, 10]}), 1)
    assert shapes == [(7,)]

"""benchmarks/api_coverage.py on a tiny synthetic ops-transformer tree (no upstream needed)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "api_coverage.py"


def _module():
    spec = importlib.util.spec_from_file_location("api_coverage", PATH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while being created
    spec.loader.exec_module(module)
    return module


COVERED_H = """\
#include "kernel_operator.h"
using namespace AscendC;
constexpr int32_t BUFFER_NUM = 2;

template <typename T>
class KernelCovered {
public:
    __aicore__ inline KernelCovered() {}
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR y);
    __aicore__ inline void Process();
private:
    __aicore__ inline int64_t Helper(int64_t n) { return n * 2; }
    TPipe pipe_;
    TQue<QuePosition::VECIN, BUFFER_NUM> inQue_;
    GlobalTensor<T> xGm_;
    GlobalTensor<T> yGm_;
};

template <typename T>
__aicore__ inline void KernelCovered<T>::Init(GM_ADDR x, GM_ADDR y)
{
    xGm_.SetGlobalBuffer((__gm__ T*)x);
    yGm_.SetGlobalBuffer((__gm__ T*)y);
    pipe_.InitBuffer(inQue_, BUFFER_NUM, 1024);
}

template <typename T>
__aicore__ inline void KernelCovered<T>::Process()
{
    LocalTensor<T> xLocal = inQue_.template AllocTensor<T>();
    DataCopy(xLocal, xGm_[GetBlockIdx() * 256], Helper(128));  // a count: the provided form
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    Add(xLocal, xLocal, xLocal, 256);
    // Exp(xLocal, xLocal, 256); a comment is not a call
    inQue_.FreeTensor(xLocal);
}
"""

SORT_H = """\
#include "kernel_operator.h"
using namespace AscendC;

__aicore__ inline void SortRows(LocalTensor<float> dst, LocalTensor<float> src,
                                LocalTensor<uint64_t> idx, LocalTensor<float> tmp,
                                GlobalTensor<float> gm)
{
    DataCopyParams copyParams{1, 2, 0, 0};
    DataCopy(src, gm, copyParams);
    TopK<float>(dst, src, idx, tmp, 4);
#if defined(__CCE_AICORE__) && __CCE_AICORE__ == 200
    GatherMask(dst, src, 1, false, 0, {1, 1, 8, 0}, 32);
#endif
}
"""


def _tree(root: Path) -> Path:
    for op, header in (("op_covered", COVERED_H), ("op_sort", SORT_H)):
        kernel = root / "moe" / op / "op_kernel"
        kernel.mkdir(parents=True)
        (kernel / "x.h").write_text(header)
        (kernel / f"{op}.cpp").write_text('#include "x.h"\n')
    # an Ascend 950 kernel (arch35/) next to op_sort's: not scanned
    (root / "moe" / "op_sort" / "op_kernel" / "arch35").mkdir()
    (root / "moe" / "op_sort" / "op_kernel" / "arch35" / "y.h").write_text("Exp(a, b, 8);\n")
    return root


def test_missing_lists_and_summary(tmp_path: Path) -> None:
    mod = _module()
    scans = mod.scan_upstream(_tree(tmp_path))
    provided = mod.provided_items()
    by_op = {s.name: s for s in scans}
    assert sorted(by_op) == ["op_covered", "op_sort"]
    assert by_op["op_covered"].files == ["moe/op_covered/op_kernel/op_covered.cpp",
                                         "moe/op_covered/op_kernel/x.h"]
    missing = {s.name: sorted(i for i in s.items if i not in provided) for s in scans}
    assert missing == {"op_covered": [], "op_sort": ["TopK"]}
    assert sorted(by_op["op_covered"].items) == [
        "Add", "DataCopy", "GetBlockIdx", "GlobalTensor", "GlobalTensor.SetGlobalBuffer",
        "LocalTensor", "SetFlag", "TPipe", "TPipe.InitBuffer", "TQue", "TQue.AllocTensor",
        "TQue.FreeTensor", "WaitFlag"]
    assert by_op["op_covered"].unclassified == {}
    assert {v for v in by_op["op_sort"].vocab if v not in provided} == {"dtype uint64_t"}

    summary = mod.summarise(scans, provided)
    assert len(summary.kernels) == 2
    assert sorted(by_op["op_sort"].items) == [
        "DataCopy (DataCopyParams)", "DataCopyParams", "GlobalTensor", "LocalTensor", "TopK"]
    assert len(summary.used) == 16  # op_covered's 13 + DataCopy (DataCopyParams), ..., TopK
    assert len(summary.provided) == 15  # all but TopK
    assert summary.covered == ["op_covered"]
    assert summary.missing == {"TopK": ["op_sort"]}

    report = tmp_path / "r.md"
    assert mod.main(["--upstream", str(tmp_path), "--report", str(report)]) == 0
    text = report.read_text()
    assert "A2/A3 MoE kernels: **2**" in text
    assert "kernels using only provided items: **1** (op_covered)" in text


@pytest.mark.parametrize("make", ["missing", "no_moe"])
def test_not_a_checkout_exits_2(tmp_path: Path, make: str, capsys) -> None:
    mod = _module()
    path = tmp_path / "nowhere"
    if make == "no_moe":
        path.mkdir()
    assert mod.main(["--upstream", str(path), "--report", str(tmp_path / "r.md")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"api_coverage: error: --upstream {path}: ")
    assert err.count("\n") == 1 and "Traceback" not in err
    assert not (tmp_path / "r.md").exists()

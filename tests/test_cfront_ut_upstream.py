"""``aicore-sim ut`` on upstream's own kernel unit tests (ops-transformer's
``moe/<op>/tests/ut/op_kernel/test_<op>.cpp``), built with the op's kernel sources: every TEST
runs to completion (gtest: all passed) and each launch writes its run folder.

Gated: ``AICORE_SIM_OPS_TRANSFORMER`` names an ops-transformer checkout, else skipped (with a
compiler and googletest's sources needed as well). Their launches use the tiling the tests
give (mostly none: zeroed buffers), so they take seconds; nothing is compared here but what
the TESTs themselves check."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from aicore_sim.cfront import build, ut
from aicore_sim.cli import main

ENV = "AICORE_SIM_OPS_TRANSFORMER"
ROOT = Path(os.environ[ENV]) if os.environ.get(ENV) else None


def _missing() -> str | None:
    if ROOT is None:
        return f"{ENV} does not name an ops-transformer checkout"
    try:
        build.compiler()
        ut.gtest_source()
    except (build.NoCompilerError, ut.NoGtestError) as e:
        return str(e)
    return None


pytestmark = pytest.mark.skipif(_missing() is not None, reason=str(_missing()))

# op -> the TESTs its file has (all of them run)
OPS = {
    "moe_token_unpermute_with_ep": 12,
    "moe_token_unpermute_with_ep_grad": 15,
    "moe_token_permute_with_ep_grad": 2,
    "moe_token_permute_with_ep": 8,
}


@pytest.fixture(autouse=True)
def _cache(cxx_cache):  # googletest and the kernels compiled once for the suite
    return cxx_cache


@pytest.mark.parametrize("op", OPS)
def test_upstream_unit_test_passes_with_a_run_folder_per_launch(op, tmp_path, capfd):
    folder = ROOT / "moe" / op
    out = tmp_path / "out"
    rc = main(["ut", str(folder / "tests" / "ut" / "op_kernel" / f"test_{op}.cpp"),
               "--kernel-src", str(folder / "op_kernel"), "--out", str(out), "--trace", "lanes"])
    text = capfd.readouterr()
    assert rc == 0, text.err[-2000:]
    assert f"[  PASSED  ] {OPS[op]} tests." in text.out
    runs = sorted(out.iterdir())
    assert len(runs) == OPS[op]  # one launch per TEST
    for run in runs:
        s = json.loads((run / "summary.json").read_text())
        assert s["ut"]["kernel"] == op and (run / "trace.json").is_file()

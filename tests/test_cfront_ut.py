"""``aicore-sim ut``: the project's own gtest files (tests/cfront_kernels/ut/) in upstream's
CPU-debug style, built with tests/cfront_kernels/scale_rows.cpp and googletest, every
ICPU_RUN_KF simulated; the exit codes (0 all passed, 1 a TEST failed, 2 a bad input or a
compile error) and the run folders.

Skipped with the reason when this machine has no usable C++ compiler or no googletest sources
(Debian/Ubuntu: apt-get install g++ libgtest-dev)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from aicore_sim.cfront import ut
from aicore_sim.cli import main
from tests.cxx import needs_gtest

HERE = Path(__file__).parent / "cfront_kernels"
KERNEL = HERE / "scale_rows.cpp"
PASSES = HERE / "ut" / "test_scale_rows_ut.cpp"
FAILS = HERE / "ut" / "test_scale_rows_fails.cpp"


pytestmark = needs_gtest


@pytest.fixture(autouse=True)
def _cache(cxx_cache):  # googletest and the kernels compiled once for the suite
    return cxx_cache


def _ut(test: Path, out: Path, *more: str) -> int:
    return main(["ut", str(test), "--kernel-src", str(KERNEL), "--out", str(out),
                 "--platform", "tiny", *more])


def test_own_unit_test_passes_and_writes_a_run_folder_per_launch(tmp_path, capfd):
    out = tmp_path / "out"
    assert _ut(PASSES, out) == 0
    text = capfd.readouterr().out
    assert "[  PASSED  ] 2 tests." in text
    first = out / "scale_rows_ut.doubles_every_row_on_four_cores-1"
    second = out / "scale_rows_ut.pointers_inside_a_buffer_launch_on_its_rows-1"
    assert sorted(p.name for p in out.iterdir()) == sorted([first.name, second.name])
    for folder in (first, second):
        assert (folder / "trace.json").is_file() and (folder / "PipeUtilization.csv").is_file()
    s = json.loads((first / "summary.json").read_text())
    assert s["ut"]["kernel"] == "scale_rows" and s["ut"]["block_dim"] == 4
    assert [a["buffer"] for a in s["ut"]["arguments"]] == ["gm0", "gm1", "gm2"]
    assert s["ut"]["written"] == ["gm1"] and s["makespan_cycles"] > 0
    assert s["hazard_counts"] == {}
    x = np.arange(12 * 64, dtype=np.float32) - 100
    y = np.load(first / "outputs" / "gm1.npy").view(np.float32)
    assert np.array_equal(y, 2 * x)  # what the TEST itself checked with EXPECT_EQ
    s2 = json.loads((second / "summary.json").read_text())
    assert s2["ut"]["arguments"][0]["offset"] == 6 * 64 * 4  # a pointer inside a buffer


def test_failing_tests_exit_1_with_gtest_naming_them(tmp_path, capfd):
    assert _ut(FAILS, tmp_path / "out") == 1
    text = capfd.readouterr().out
    assert "2 FAILED TESTS" in text
    assert "points into no buffer AscendC::GmAlloc gave" in text  # a refused launch fails
    # the launch that ran wrote its folder; the refused one none
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["scale_rows_fails."
                                                              "wrong_expectation-1"]


def test_filter_runs_the_tests_it_selects(tmp_path, capfd):
    assert _ut(FAILS, tmp_path / "out", "--filter", "*.wrong_expectation",
               "--mode", "functional") == 1
    text = capfd.readouterr().out
    assert "1 FAILED TEST" in text and "pointer_not_from_gm_alloc" not in text


def test_compile_error_exits_2_naming_the_line(tmp_path, capfd):
    bad = tmp_path / "test_bad.cpp"
    bad.write_text('#include "gtest/gtest.h"\n#include "tikicpulib.h"\n'
                   'extern "C" void scale_rows(GM_ADDR x, GM_ADDR y, GM_ADDR t);\n'
                   "TEST(bad, t) {\n  ICPU_RUN_KF(scale_rows, 1, nullptr, nullptr)\n}\n")
    assert _ut(bad, tmp_path / "out") == 2
    assert "test_bad.cpp:6" in capfd.readouterr().err


def test_missing_gtest_sources_exit_2_naming_the_package(tmp_path, monkeypatch, capfd):
    monkeypatch.setenv(ut.GTEST_SRC_ENV, str(tmp_path / "nowhere"))
    assert _ut(PASSES, tmp_path / "out") == 2
    assert "apt-get install libgtest-dev" in capfd.readouterr().err


def test_no_launch_in_the_test_is_a_bad_input(tmp_path, capfd):
    t = tmp_path / "test_empty.cpp"
    t.write_text('#include "gtest/gtest.h"\nTEST(a, b) {}\n')
    assert _ut(t, tmp_path / "out") == 2
    assert "no ICPU_RUN_KF" in capfd.readouterr().err

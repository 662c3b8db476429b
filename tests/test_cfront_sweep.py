"""A sweep over a user kernel's own tiling fields (the ``cpp_kernel`` op's tiling space):
examples/cpp/add_double_buffer's chunk length and block dim, on two platforms."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cxx import needs_cxx

CASE = Path(__file__).resolve().parents[1] / "examples" / "cpp" / "add_double_buffer" / \
    "add_double_buffer.json"


@pytest.fixture(autouse=True)
def _cache(cxx_cache):
    return cxx_cache


def test_knobs_are_the_headers_integer_fields():
    from aicore_sim.cfront.tiling_space import TILING_SPACE

    assert TILING_SPACE.knobs_for([str(CASE)]) == (
        "totalM", "totalN", "splitM", "dataCopyLen", "block_dim", "tiling_key")


@needs_cxx
def test_sweep_of_chunk_length_and_block_dim(tmp_path):
    from aicore_sim.cli import main

    spec = tmp_path / "s.toml"
    spec.write_text(f'[sweep]\nmode = "timing-only"\n[axes]\ncase = ["{CASE}"]\n'
                    'platform = ["ascend910b1", "ascend910b4"]\n'
                    "[tiling]\ndataCopyLen = [4096, 8192]\nblock_dim = [8, 64]\n")
    assert main(["sweep", str(spec), "--workers", "1", "--out", str(tmp_path / "o"),
                 "--no-progress"]) == 0  # infeasible points are rows, not failures
    rows = [json.loads(line) for line in (tmp_path / "o" / "results.jsonl").open()]
    got = {(r["axes"]["platform"], r["axes"]["dataCopyLen"], r["axes"]["block_dim"]):
           (r["status"], r.get("makespan_cycles")) for r in rows}
    # 8 cores x 5 rows x 4096 halves: 3 chunks of 8192 or 5 of 4096 a core. The chunk count
    # sets the core cycles; the copies' memory latencies are nanoseconds, fewer cycles at
    # ascend910b4's 1650 MHz than at ascend910b1's 1850; the inputs are L2 hits (left there
    # by the launch before)
    expected = {"ascend910b1": (3843, 4293), "ascend910b4": (3754, 4156)}
    for plat, (big, small) in expected.items():
        assert got[(plat, 8192, 8)] == ("ok", big)
        assert got[(plat, 4096, 8)] == ("ok", small)
        assert got[(plat, 8192, 64)][0] == "infeasible"  # more cores than the platform's 48
    assert {r["rule"] for r in rows if r["status"] == "infeasible"} == {"block_dim"}

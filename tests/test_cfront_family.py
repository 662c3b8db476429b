"""``aicore-sim coverage`` (``aicore_sim/cfront/family.py``): the coverage table of an
operator source tree - on a tree of our own (``tests/cfront_kernels/family``: an operator
whose kernel compiles, one whose kernel calls an API item the shim lacks, one with no A2/A3
config) and, when ``AICORE_SIM_OPS_TRANSFORMER`` names a checkout, on its ``moe/``."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from aicore_sim.cfront import family
from tests.cxx import needs_cxx

TREE = Path(__file__).resolve().parent / "cfront_kernels" / "family"
_ROOT = os.environ.get("AICORE_SIM_OPS_TRANSFORMER")


def test_dtype_macros_of_a_definition() -> None:
    # the first column of each of the operator's own inputs and outputs; a named list too
    macros = family.dtype_macros((TREE / "scale_rows/op_host/scale_rows_def.cpp").read_text())
    assert macros == {"DTYPE_X": np.dtype(np.float32), "DTYPE_Y": np.dtype(np.float32)}


def test_only_a2_a3_operators_are_listed() -> None:
    assert [n for n, _, _ in family.operators(TREE)] == ["lacks_api", "scale_rows"]


@needs_cxx
def test_coverage_rows_of_our_tree(cli, cxx_cache, tmp_path) -> None:
    report = tmp_path / "cov.md"
    p = cli("coverage", TREE, "--json", "--report", report, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    rows = {r["name"]: r for r in map(json.loads, p.stdout.splitlines())}
    assert list(rows) == ["lacks_api", "scale_rows"]
    lacks, scale = rows["lacks_api"], rows["scale_rows"]
    assert (lacks["kernel_compiles"], lacks["first_missing"]) == (False, "API item Arange")
    assert "lacks_api.cpp:11:5: error:" in lacks["kernel_error"]  # the call, at its line
    assert lacks["host_compiles"] is False  # its host tiling calls an item the shim lacks
    assert "gert::TilingContext::GetDeterministicLevel" in lacks["host_error"]
    # scale_rows' kernel and host tiling compile; no model of it (cases, golden): no run
    assert (scale["kernel_compiles"], scale["host_compiles"], scale["runs"]) == (True, True,
                                                                                 None)
    assert scale["first_missing"] == family.NO_MODEL
    text = report.read_text()
    assert "| `lacks_api` | no | no | - | - | 0 | API item Arange |" in text
    assert "2 operators: 1 kernels compile" in text


def test_bad_inputs_exit_2(cli, tmp_path) -> None:
    for args, words in (((tmp_path / "none",), "no such folder"),
                        ((tmp_path,), "no A2/A3 operator"),
                        ((TREE, "--only", "zz*"), "matches --only zz*")):
        p = cli("coverage", *args, cwd=tmp_path)
        assert p.returncode == 2 and words in p.stderr and len(p.stderr.splitlines()) == 1


@needs_cxx
@pytest.mark.skipif(not _ROOT, reason="AICORE_SIM_OPS_TRANSFORMER does not name an "
                    "ops-transformer checkout (the upstream kernels are never in the repo)")
def test_coverage_of_the_moe_family(cli, cxx_cache, tmp_path) -> None:
    p = cli("coverage", Path(_ROOT) / "moe", "--json", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    rows = {r["name"]: r for r in map(json.loads, p.stdout.splitlines())}
    assert len(rows) == 28  # the A2/A3 operators of moe/ with a kernel folder or not
    for op in ("moe_token_unpermute_with_ep_grad", "moe_token_unpermute_with_ep",
               "moe_token_permute_with_ep", "moe_token_permute_with_ep_grad"):
        assert (rows[op]["kernel_compiles"], rows[op]["host_compiles"], rows[op]["runs"]) \
            == (True, True, True), op
    # from their sources alone (host tiling and kernel C++ at the checkout's commit): eight
    # end to end and exact - three ported ops and the five of op_models/moe_family; the grad
    # op's smallest case takes the IR's default range {-1, -1}, which the checkout's tiling
    # wraps to an empty window where the model (V3) reads none
    exact = [n for n, r in rows.items() if r["golden_exact"] and r["first_missing"] is None]
    assert exact == ["moe_finalize_routing_v2_grad", "moe_init_routing",
                     "moe_init_routing_quant", "moe_init_routing_v2_grad", "moe_token_permute",
                     "moe_token_permute_with_ep", "moe_token_permute_with_ep_grad",
                     "moe_token_unpermute_with_ep"]
    assert rows["moe_token_unpermute_with_ep_grad"]["golden_exact"] is False
    assert all(r["first_missing"] for n, r in rows.items() if n not in exact)

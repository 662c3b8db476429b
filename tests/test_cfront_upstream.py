"""The upstream Ascend C kernels of the four bundled ops, compiled unmodified against the shim
(``aicore_sim.cfront``), record the same instructions, produce the same output bytes and the
same makespan as their Python ports.

These tests need an ops-transformer checkout: set ``AICORE_SIM_OPS_TRANSFORMER`` to its root
(the kernels are read from ``<root>/moe/<op>/op_kernel``); without it they are skipped. They
also need a host C++ compiler (the shim's build). A handful of representative bundled cases
per op, on an A2 and a 950 platform, in the ``timed`` and ``timing-only`` modes.
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path

import numpy as np
import pytest

_ROOT = os.environ.get("AICORE_SIM_OPS_TRANSFORMER")

pytestmark = pytest.mark.skipif(
    not _ROOT or not (Path(_ROOT) / "moe").is_dir(),
    reason="AICORE_SIM_OPS_TRANSFORMER does not name an ops-transformer checkout (the upstream "
           "kernels these tests compile)")

CASES = {
    "moe_token_unpermute_with_ep": ("tiny_bf16_probs_bf16", "tiny_fp16_noprobs",
                                    "tiny_fp32_probs_fp32"),
    "moe_token_permute_with_ep_grad": ("permute_grad_tiny_bf16_probs",
                                       "permute_grad_tiny_fp16_noprobs",
                                       "permute_grad_ep_path_tiny"),
    "moe_token_permute_with_ep": ("permute_tiny_bf16_probs", "permute_tiny_fp32_int64_noprobs",
                                  "permute_ep_path_tiny"),
    "moe_token_unpermute_with_ep_grad": ("tiny", "few_tokens_noprobs", "hidden_split_fp32",
                                         "range_start"),
}
PLATFORMS = ("ascend910b1", "ascend950pr_9589")
MODES = ("timed", "timing-only")

PARAMS = [(op, case, plat, mode) for op, cases in CASES.items() for case in cases
          for plat in PLATFORMS for mode in MODES]


@cache
def _prepared(op: str, case: str, platform: str):
    from aicore_sim.ops import registry
    from aicore_sim.sim.platform import load_platform

    model = registry.get_op(op)
    c = model.cases()[case]
    inputs = model.case_inputs(c)
    _, attrs = model.case_specs(c)
    return model, model.prepare(inputs, attrs, load_platform(platform))


@cache
def _source(op: str):
    from aicore_sim.cfront import KernelSource

    return KernelSource.of(Path(_ROOT) / "moe" / op / "op_kernel")


@pytest.mark.parametrize("op,case,platform,mode", PARAMS,
                         ids=[f"{o}-{c}-{p}-{m}" for o, c, p, m in PARAMS])
def test_upstream_kernel_equals_port(op, case, platform, mode):
    from aicore_sim.sim.program import stream_difference

    model, pc = _prepared(op, case, platform)
    port = model.execute(pc, mode=mode)
    cxx = model.execute(pc, mode=mode, kernel_source=_source(op))

    d = stream_difference(port.program.streams, cxx.program.streams)
    if d is not None:
        core, i, x, y = d
        pytest.fail(f"streams differ on core {core} at instruction {i}: port "
                    f"{x.describe() if x is not None else '(ended)'} | C++ "
                    f"{y.describe() if y is not None else '(ended)'}")
    assert cxx.trace.makespan == port.trace.makespan, (
        f"makespan: port {port.trace.makespan}, C++ {cxx.trace.makespan}")
    if mode != "timing-only":
        for name, want in port.outputs.items():
            got = cxx.outputs[name]
            assert (got is None) == (want is None), name
            if want is not None:
                assert got.shape == want.shape, name
                assert np.array_equal(got.view(np.uint8), want.view(np.uint8)), (
                    f"output {name} differs from the port's")


def test_verify_matrix_with_the_upstream_kernel(tmp_path, capsys):
    """``verify --matrix OP --kernel-src DIR``: the permute's whole matrix (24 cases) through its
    C++ kernel, every output bit-exact against the golden."""
    from aicore_sim.cli import main

    op = "moe_token_permute_with_ep"
    rc = main(["verify", "--matrix", op, "--kernel-src", str(Path(_ROOT) / "moe" / op /
                                                             "op_kernel"),
               "--report", str(tmp_path / "v"), "--no-progress", "--workers", "1"])
    out = capsys.readouterr().out
    assert rc == 0, out[-2000:]
    assert "24 / 24 cases passed, 0 of 60 outputs failed, 0 not run" in out


def test_run_kernel_src_through_the_command(tmp_path, capsys):
    """``run --case tiny --kernel-src DIR``: the seed's case through its C++ kernel, exact, the
    hot lines in the upstream header."""
    from aicore_sim.cli import main

    op = "moe_token_unpermute_with_ep_grad"
    rc = main(["run", "--case", "tiny", "--kernel-src", str(Path(_ROOT) / "moe" / op /
                                                            "op_kernel"),
               "--out", str(tmp_path / "r"), "--no-plot", "--hotspots", "1", "--jobs", "1"])
    out = capsys.readouterr().out
    assert rc == 0, out[-2000:]
    assert "makespan 5354 cycles" in out  # the port's figure for this case
    assert "golden permuted_tokens_grad: exact (1920 elements)" in out
    assert "moe_token_unpermute_grad_prob_not_none_with_ep.h:" in out


def test_sweep_axis_kernel_source_gives_the_ports_cycles(tmp_path):
    """A sweep over ``kernel_source = ["port", DIR]`` and a tiling knob: every C++ point's
    makespan equals the port's at the same tiling, and HBM what-ifs replay its record."""
    import json

    from aicore_sim.cli import main

    kdir = Path(_ROOT) / "moe" / "moe_token_unpermute_with_ep_grad" / "op_kernel"
    spec = tmp_path / "s.toml"
    spec.write_text('[sweep]\nmode = "timing-only"\n[axes]\ncase = ["tiny"]\n'
                    f'kernel_source = ["port", "{kdir}"]\nhbm_gbps = [800, 1600]\n'
                    "[tiling]\ninputReserveNum = [1, 3]\n")
    assert main(["sweep", str(spec), "--workers", "1", "--out", str(tmp_path / "o"),
                 "--no-progress"]) == 0
    rows = [json.loads(line) for line in (tmp_path / "o" / "results.jsonl").open()]
    by = {(r["axes"]["kernel_source"] == "port", r["axes"]["hbm_gbps"],
           r["axes"]["inputReserveNum"]): r for r in rows}
    assert len(by) == 8 and all(r["status"] == "ok" for r in rows)
    for (_port, hbm, knob), r in by.items():
        assert r["makespan_cycles"] == by[(True, hbm, knob)]["makespan_cycles"]
        assert r["record_reused"] == (hbm == 1600)
    # tiny's figures: 5,448 cycles with one permuted token a loop, 5,354 with three
    assert {r["makespan_cycles"] for r in rows} == {5448, 5354}

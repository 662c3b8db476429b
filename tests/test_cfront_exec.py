"""``aicore-sim exec`` (``aicore_sim/cfront/aclnn.py``): an aclnn example program, unmodified,
with each aclnn call a simulated launch. Our own program (``cfront_kernels/exec/
permute_program.cpp``: the permute with EP of four tokens, then a null required tensor) runs
without a checkout; upstream's four example programs run when ``AICORE_SIM_OPS_TRANSFORMER``
names one. Child processes: the program prints through C's stdio."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np
import pytest

from tests.cxx import needs_cxx

PROGRAM = Path(__file__).resolve().parent / "cfront_kernels" / "exec" / "permute_program.cpp"
_ROOT = os.environ.get("AICORE_SIM_OPS_TRANSFORMER")

pytestmark = needs_cxx


def test_our_program_prints_the_simulated_values(cli_subprocess, cxx_cache, tmp_path) -> None:
    p = cli_subprocess("exec", PROGRAM, "--out", tmp_path / "ex", "--trace", "none",
                       cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert "first phase: 0\n" in out and "second phase: 0\n" in out
    # experts of the 8 slots (slot s is token s // 2): 2 0 1 2 0 1 1 0; a stable sort puts
    # expert 0's slots 1, 4, 7 first (tokens 0, 2, 3), then expert 1's 2, 5, 6 (tokens 1, 2,
    # 3), then expert 2's 0, 3 (tokens 0, 1); each token's row is 3 consecutive values
    rows = [float(v) for v in re.findall(r"row value \d+: ([\d.]+)", out)]
    tokens = np.arange(1, 13, dtype=np.float32).reshape(4, 3)
    assert rows == tokens[[0, 2, 3, 1, 2, 3, 0, 1]].ravel().tolist()
    # sorted_indices: the permuted row of each slot (the inverse of that order)
    assert [int(v) for v in re.findall(r"sorted index \d+: (\d+)", out)] == [6, 0, 3, 7, 1, 4,
                                                                              5, 2]
    assert "null tokens: 161001\n" in out  # aclnn's code for a null required tensor
    assert "aclnnMoeTokenPermuteWithEpGetWorkspaceSize: [161001] tokens is a required" in \
        p.stderr
    summary = json.loads((tmp_path / "ex" / "aclnnMoeTokenPermuteWithEp-1" /
                          "summary.json").read_text())
    assert summary["aclnn"]["golden"] == "golden: exact"
    assert np.load(tmp_path / "ex" / "aclnnMoeTokenPermuteWithEp-1" / "outputs" /
                   "sorted_indices.npy").tolist() == [6, 0, 3, 7, 1, 4, 5, 2]


def test_a_program_without_an_aclnn_call_or_an_unknown_op(cli, tmp_path) -> None:
    none = tmp_path / "none.cpp"
    none.write_text('#include "acl/acl.h"\nint main() { return 0; }\n')
    p = cli("exec", none, cwd=tmp_path)
    assert p.returncode == 2 and "includes no aclnnop/aclnn_<op>.h" in p.stderr
    unknown = tmp_path / "unknown.cpp"
    unknown.write_text('#include "aclnnop/aclnn_no_such_op.h"\nint main() { return 0; }\n')
    p = cli("exec", unknown, cwd=tmp_path)
    assert p.returncode == 2 and "no operator no_such_op is installed" in p.stderr


def test_the_generated_header_follows_the_ir() -> None:
    from aicore_sim.cfront.aclnn import header
    from aicore_sim.ops.registry import get_op

    text = header(get_op("moe_token_permute_with_ep"))
    assert ("inline aclnnStatus aclnnMoeTokenPermuteWithEpGetWorkspaceSize(const aclTensor* "
            "tokens, const aclTensor* indices, const aclTensor* probs, const aclIntArray* "
            "range, int64_t num_out_tokens, bool padded_mode, const aclTensor* "
            "permute_tokens_out, const aclTensor* sorted_indices_out, const aclTensor* "
            "permute_probs_out, uint64_t* workspaceSize, aclOpExecutor** executor)") in text


EXAMPLES = ("moe_token_unpermute_with_ep_grad", "moe_token_unpermute_with_ep",
            "moe_token_permute_with_ep", "moe_token_permute_with_ep_grad")


@pytest.mark.skipif(not _ROOT or not (Path(_ROOT) / "moe").is_dir(),
                    reason="AICORE_SIM_OPS_TRANSFORMER does not name an ops-transformer "
                           "checkout (the example programs are upstream's)")
@pytest.mark.parametrize("op", EXAMPLES)
def test_upstream_example_program_unmodified(cli_subprocess, cxx_cache, tmp_path, op) -> None:
    program = Path(_ROOT) / "moe" / op / "examples" / f"test_aclnn_{op}.cpp"  # type: ignore
    p = cli_subprocess("exec", program, "--out", tmp_path / "ex", "--trace", "none",
                       cwd=tmp_path)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr
    calls = re.findall(r"\[aicore-sim\] aclnn\w+ call \d+: \d+ cycles, (.*?), ", p.stdout)
    assert calls == ["golden: exact"]  # one launch, every output equal to the golden
    assert "the program returned 0; 1 aclnn launch(es), 0 failed" in p.stdout

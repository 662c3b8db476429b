"""The forward through the command line: ``cases``, ``run`` (bundled case and case file),
``verify --matrix`` (in this process, tiny shapes: the ``cli`` fixture of the root
``conftest.py``) and the examples/ forward + backward script (a real subprocess). ``verify`` of
the upstream ATK records is in ``test_atk.py``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[3]


def test_cases_lists_the_forward(tmp_path, cli):
    r = cli("cases", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "op moe_token_unpermute_with_ep:" in r.stdout
    for name in ("tiny_bf16_probs_bf16", "deepseek_v3_layer", "qwen3_235b_layer",
                 "mixtral_8x7b_layer"):
        assert name in r.stdout


def test_run_bundled_case_is_exact(tmp_path, cli):
    r = cli("run", "--case", "tiny_bf16_probs_bf16", "--no-plot", "--out", tmp_path / "o",
            cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "golden unpermuted_tokens: exact (576 elements)" in r.stdout  # 12 tokens x H 48
    assert "hazards: none" in r.stdout
    out = np.load(tmp_path / "o" / "outputs" / "unpermuted_tokens.npy", allow_pickle=False)
    assert out.shape == (12, 48)


def test_run_case_file_and_a_bad_attribute(tmp_path, cli):
    case = REPO / "examples" / "cases" / "forward_tiny.json"
    r = cli("run", case, "--no-plot", "--out", tmp_path / "o", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "golden unpermuted_tokens: exact" in r.stdout
    doc = json.loads(case.read_text())
    doc["attrs"]["range"] = [0, 100]  # more rows than permuted_tokens has
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    r = cli("run", bad, "--no-plot", "--out", tmp_path / "b", cwd=tmp_path)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "range_rows" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "b").exists()


def test_verify_small_forward_matrix(tmp_path, cli):
    m = tmp_path / "m.toml"
    m.write_text('op = "moe_token_unpermute_with_ep"\nstandard = "bit-exact"\nmode = "timed"\n'
                 '[axes]\ndtype = ["bfloat16", "float32"]\nprobs = ["none", "bfloat16"]\n'
                 'shape = [{tokens = 6, topk = 2, hidden = 40}]\n'
                 'range = ["none", "middle_half"]\n')
    r = cli("verify", "--matrix", m, "--report", tmp_path / "rep", cwd=tmp_path)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr
    assert "8 / 8 cases passed" in r.stdout  # 2 dtypes x 2 probs x 2 ranges
    rep = json.loads((tmp_path / "rep.json").read_text())
    assert len(rep["cases"]) == 8 and all(c["passed"] for c in rep["cases"])


@pytest.mark.slow
def test_verify_bundled_forward_matrix(tmp_path, cli):
    r = cli("verify", "--matrix", "moe_token_unpermute_with_ep", "--mode", "timed",
            cwd=tmp_path)
    assert r.returncode == 0, r.stdout[-2000:]
    assert "144 / 144 cases passed" in r.stdout


def test_forward_backward_example_on_a_small_batch(tmp_path):
    """The examples/ script on 32 tokens: both summaries, both outputs bit-exact, exit 0."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    r = subprocess.run([sys.executable, str(REPO / "examples" / "forward_backward_deepseek_v3.py"),
                        "--tokens", "32"], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr
    assert "forward MoeTokenUnpermuteWithEp" in r.stdout
    assert "golden unpermuted_tokens: exact" in r.stdout
    assert "golden probs_grad: exact" in r.stdout
    assert "outputs equal the goldens bit for bit" in r.stdout


def test_tiling_command_reproduces_an_upstream_ut_string(tmp_path, cli):
    r = cli("tiling", REPO / "examples" / "cases" / "ut_fwd_prob_none_bf16_2.json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    # upstream's test_tiling_prob_none_bf16_2 expects key 0 and this tiling string
    assert "tiling_key 0, block_dim 64, workspace [16777216]" in r.stdout
    assert "tiling_data: 20480 1 8 1 6144 6143 17920 1 2560 12 0 12 1 0 2\n" in r.stdout


def test_sweep_and_search_the_forward(tmp_path, cli):
    """The smoke sweep (24 points: 16 cores > 12 tokens -> 8 infeasible, rule cores_range)
    in this process, its report, and a search whose best point is verified exact."""
    r = cli("sweep", REPO / "examples" / "sweeps" / "forward_smoke.toml", "--out",
            tmp_path / "sw", "--workers", "0", "--no-progress", "--verify", cwd=tmp_path)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr
    assert "24 points run (16 ok, 8 infeasible)" in r.stdout
    assert "verified (unpermuted_tokens: exact)" in r.stdout
    report = (tmp_path / "sw" / "report.md").read_text()
    assert "| cores_range | 8 |" in report
    r = cli("search", "tiny_bf16_zero_probs", "--budget", "6", "--workers", "0", "--out",
            tmp_path / "se", "--no-progress", cwd=tmp_path)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr
    assert "verified" in r.stdout

"""End-to-end tests of the ``aicore-sim`` command line on the small ``tiny`` case.

Most run the command in this process (the ``cli`` fixture, the root ``conftest.py``); the default
run and the memory refusal run a real ``python -m aicore_sim`` (the console entry's exit, and
an address-space limit on the process). Bad case files must exit 2 with one line naming the
field and the rule, and leave nothing in the output folder.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from aicore_sim.export.perfetto import read_trace
from tests.perfetto_schema import validate_chrome_trace

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples" / "cases"


def tiny_doc() -> dict:
    return json.loads((EXAMPLES / "tiny.json").read_text())


def write(tmp_path: Path, name: str, doc: dict) -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(doc))
    return p


def test_run_without_arguments(tmp_path, cli_subprocess) -> None:
    # a real process: the console entry (main, flush, os._exit) and its exit code
    out = tmp_path / "out"
    r = cli_subprocess("run", "--out", out, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in out.iterdir()) == [
        "L2Cache.csv", "OpBasicInfo.csv", "PipeUtilization.csv", "ResourceConflictRatio.csv",
        "outputs", "streams.npz", "summary.json", "timeline.npz", "timeline.png", "trace.json"]
    assert sorted(p.name for p in (out / "outputs").iterdir()) == [
        "permuted_tokens_grad.npy", "probs_grad.npy"]
    assert "makespan" in r.stdout and "bound by" in r.stdout
    assert "golden permuted_tokens_grad: exact" in r.stdout
    s = json.loads((out / "summary.json").read_text())
    assert s["case"] == "tiny" and s["platform"] == "ascend910b1"
    assert s["makespan_cycles"] > 0 and s["bound_by"]["pipe"] in (
        "SCALAR", "MTE2", "VECTOR", "MTE3")
    assert validate_chrome_trace(read_trace(out / "trace.json")) == []
    assert (out / "timeline.png").read_bytes()[:4] == b"\x89PNG"
    grad = np.load(out / "outputs" / "permuted_tokens_grad.npy")
    assert grad.shape == (30, 64)
    # nothing but the output folder was created
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_run_case_file_with_inputs_folder(tmp_path, cli) -> None:
    rng = np.random.default_rng(3)
    ins = tmp_path / "ins"
    ins.mkdir()
    bf16 = np.dtype(ml_dtypes.bfloat16)
    np.save(ins / "unpermuted_tokens_grad.npy", rng.random((10, 64), np.float32).astype(bf16))
    np.save(ins / "sorted_indices.npy", rng.permutation(30).astype(np.int32))
    np.save(ins / "permuted_tokens.npy", rng.random((30, 64), np.float32).astype(bf16))
    np.save(ins / "probs.npy", rng.random((10, 3), np.float32))
    out = tmp_path / "o"
    r = cli("run", EXAMPLES / "tiny.json", "--inputs", ins, "--out", out, "--no-plot",
            "--mode", "timing-only", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "mode timing-only" in r.stdout
    assert not (out / "timeline.png").exists() and (out / "trace.json").exists()


def test_run_functional_writes_no_trace(tmp_path, cli) -> None:
    out = tmp_path / "o"
    r = cli("run", "--case", "tiny", "--mode", "functional", "--out", out, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in out.iterdir()) == ["outputs", "summary.json"]
    assert "no timing" in r.stdout


def _probs_dtype(d: dict) -> None:
    d["inputs"]["probs"]["dtype"] = "bf17"


def _rank(d: dict) -> None:
    d["inputs"]["unpermuted_tokens_grad"]["shape"] = [10, 64, 1]


def _topk(d: dict) -> None:
    d["inputs"]["sorted_indices"]["shape"] = [6000]
    d["inputs"]["permuted_tokens"]["shape"] = [6000, 64]
    d["inputs"]["probs"]["shape"] = [10, 600]
    d["attrs"]["topk_num"] = 600


def _range(d: dict) -> None:
    d["attrs"]["range"] = [5, 2]


@pytest.mark.parametrize("edit, fragments", [
    (_probs_dtype, ["inputs.probs.dtype", "unknown dtype 'bf17'", "expected one of"]),
    (_rank, ["561002", "unpermuted_tokens_grad", "2-D"]),
    (_topk, ["561002", "topK", "[1, 512]", "600"]),
    (_range, ["561002", "range", "[5, 2]"]),
])
def test_bad_case_files(tmp_path, edit, fragments, cli) -> None:
    doc = copy.deepcopy(tiny_doc())
    edit(doc)
    case = write(tmp_path, "bad.json", doc)
    out = tmp_path / "out"
    out.mkdir()
    r = cli("run", case, "--out", out, cwd=tmp_path)
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    for f in fragments:
        assert f in lines[0], lines[0]
    assert list(out.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.json", "out"]


def test_bad_parameters(tmp_path, cli) -> None:
    r = cli("run", "--case", "no_such_case", "--out", tmp_path / "o", cwd=tmp_path)
    assert r.returncode == 2 and "no_such_case" in r.stderr
    r = cli("run", "--platform", "no_such_chip", "--out", tmp_path / "o", cwd=tmp_path)
    assert r.returncode == 2 and "--platform" in r.stderr
    assert not (tmp_path / "o").exists()
    r = cli("run", "--mode", "fast", cwd=tmp_path)
    assert r.returncode == 2


def test_tiling_reproduces_upstream_ut(tmp_path, cli) -> None:
    # upstream UT prob_not_none_bf16_002: only padded_mode given; K from probs (10, 3) fp32
    doc = {
        "op": "moe_token_unpermute_with_ep_grad",
        "inputs": {
            "unpermuted_tokens_grad": {"shape": [10, 64], "dtype": "DT_BF16"},
            "sorted_indices": {"shape": [30], "dtype": "DT_INT32"},
            "permuted_tokens": {"shape": [30, 64], "dtype": "DT_BF16"},
            "probs": {"shape": [10, 3], "dtype": "DT_FLOAT"},
        },
        "attrs": {"padded_mode": False},
        "platform": "ut-fake-910b",
    }
    case = write(tmp_path, "prob_not_none_bf16_002.json", doc)
    r = cli("tiling", case, EXAMPLES / "ut_prob_not_none_bf16_001.json", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    assert [row["case"] for row in rows] == ["prob_not_none_bf16_002",
                                             "ut_prob_not_none_bf16_001"]
    values = " ".join(str(v) for v in rows[0]["tiling_data"].values())
    assert values == "10 3 64 30 10 54 1 0 3 0 256 1 64 3 3 8 261888 0 30"
    assert list(rows[0]["tiling_data"])[:3] == ["tokensNum", "topK", "hiddenSize"]
    assert rows[0]["status"] == "success" and rows[0]["tiling_key"] == 1
    assert rows[0]["workspace"] == [16777216] and rows[0]["block_dim"] == 64
    assert rows[0]["error"] is None
    values = " ".join(str(v) for v in rows[1]["tiling_data"].values())
    assert values == "10 3 64 30 10 54 1 0 3 0 256 1 64 3 3 16 261888 0 30"


def test_tiling_failure_exits_2(tmp_path, cli) -> None:
    doc = copy.deepcopy(tiny_doc())
    _range(doc)
    bad = write(tmp_path, "bad.json", doc)
    r = cli("tiling", EXAMPLES / "tiny.json", bad, "--json", cwd=tmp_path)
    assert r.returncode == 2
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    assert [row["status"] for row in rows] == ["success", "failed"]
    assert "range" in rows[1]["error"]


def test_tiling_of_every_example(tmp_path, cli) -> None:
    r = cli("tiling", *sorted(EXAMPLES.glob("*.json")), cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "tiling_data:" in r.stdout


def test_platforms_and_cases(tmp_path, cli) -> None:
    r = cli("platforms", cwd=tmp_path)
    assert r.returncode == 0
    assert "ascend910b1" in r.stdout and "ut-fake-910b" in r.stdout and "tiny" in r.stdout
    r = cli("cases", cwd=tmp_path)
    assert r.returncode == 0
    assert "tiny" in r.stdout and "p1_deepseek_v3" in r.stdout
    r = cli("cases", "--json", cwd=tmp_path)
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    # one line per case of every installed op, ops in name order
    assert {"moe_token_unpermute_with_ep_grad", "moe_token_unpermute_with_ep"} <= \
        {row["op"] for row in rows}
    tiny = next(row for row in rows if row["name"] == "tiny")
    assert tiny["op"] == "moe_token_unpermute_with_ep_grad"


def test_help(tmp_path, cli) -> None:
    for args in (["--help"], ["run", "--help"], ["tiling", "--help"]):
        r = cli(*args, cwd=tmp_path)
        assert r.returncode == 0 and "examples:" in r.stdout


def test_run_records_its_phases_and_prints_them_with_verbose(tmp_path, cli) -> None:
    out = tmp_path / "o"
    r = cli("run", "--case", "tiny", "--out", out, "--verbose", "--jobs", "2", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    s = json.loads((out / "summary.json").read_text())
    phases = s["phases_seconds"]
    assert {"inputs", "record", "replay", "checks", "golden", "compare", "outputs", "trace",
            "plot", "total"} <= set(phases)
    assert all(v >= 0 for v in phases.values())
    assert s["jobs"] == 2
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("phases (s): "))
    assert "record" in line and "trace" in line
    size = (out / "trace.json").stat().st_size
    assert s["trace_bytes"] == size
    kib = f"{size / 1024:.1f} KiB" if size >= 1024 else f"{size} B"
    assert f"trace trace.json: {kib}, {s['trace_events']:,} events (full)" in r.stdout


def test_run_timing_only_writes_no_outputs_and_no_golden(tmp_path, cli) -> None:
    out = tmp_path / "o"
    r = cli("run", "--case", "tiny", "--mode", "timing-only", "--out", out, "--no-plot",
            cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in out.iterdir()) == [
        "L2Cache.csv", "OpBasicInfo.csv", "PipeUtilization.csv", "ResourceConflictRatio.csv",
        "streams.npz", "summary.json", "timeline.npz", "trace.json"]
    s = json.loads((out / "summary.json").read_text())
    assert "golden" not in s and "golden" not in s["phases_seconds"]
    assert "golden" not in r.stdout


@pytest.mark.parametrize("detail", ["lanes", "none"])
def test_run_trace_detail(tmp_path, detail, cli) -> None:
    out = tmp_path / "o"
    r = cli("run", "--case", "tiny", "--out", out, "--no-plot", "--trace", detail,
            cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    if detail == "none":
        assert not list(out.glob("trace.json*"))
        return
    obj = read_trace(out / "trace.json")
    assert validate_chrome_trace(obj) == []
    assert {e["ph"] for e in obj["traceEvents"]} == {"M", "X"}  # no flows, no counters


def test_run_check_streams_passes_on_the_bundled_op(tmp_path, cli) -> None:
    r = cli("run", "--case", "tiny", "--mode", "timing-only", "--check-streams", "--out",
            tmp_path / "o", "--no-plot", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "check-streams: the records with and without numerics give the same" in r.stdout


@pytest.mark.parametrize("jobs", ["0", "-3"])
def test_run_rejects_a_bad_jobs_count(tmp_path, jobs, cli) -> None:
    out = tmp_path / "o"
    r = cli("run", "--case", "tiny", "--jobs", jobs, "--out", out, cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        f"aicore-sim: error: run: argument --jobs {jobs}: must be >= 1 "
        "(see 'aicore-sim run --help')"]
    assert not out.exists()


def test_jobs_one_and_two_write_the_same_run(tmp_path, cli) -> None:
    runs = {}
    for jobs in ("1", "2"):
        out = tmp_path / f"j{jobs}"
        r = cli("run", "--case", "hidden_100", "--jobs", jobs, "--out", out, "--no-plot",
                cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        runs[jobs] = out
    one, two = runs["1"], runs["2"]
    for name in ("permuted_tokens_grad", "probs_grad"):
        assert (one / "outputs" / f"{name}.npy").read_bytes() == \
            (two / "outputs" / f"{name}.npy").read_bytes()
    assert read_trace(one / "trace.json") == read_trace(two / "trace.json")
    s1, s2 = (json.loads((p / "summary.json").read_text()) for p in (one, two))
    for s in (s1, s2):  # what may differ: the wall times and the process count itself
        for key in ("phases_seconds", "phases_in_background", "jobs", "wall_seconds"):
            s.pop(key)
    assert s1 == s2


def test_run_refuses_a_case_bigger_than_the_memory(tmp_path, cli_subprocess) -> None:
    # hidden 2**31: permuted_tokens alone is 30 x 2**31 bf16 = 120 GiB, more than this
    # machine has; the command must say so before allocating anything (address space capped
    # at 4 GiB in case it did not)
    doc = tiny_doc()
    h = 2 ** 31
    doc["inputs"]["unpermuted_tokens_grad"]["shape"] = [10, h]
    doc["inputs"]["permuted_tokens"]["shape"] = [30, h]
    case = write(tmp_path, "huge.json", doc)
    out = tmp_path / "o"

    def cap() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))

    r = cli_subprocess("run", case, "--out", out, cwd=tmp_path, timeout=120, preexec_fn=cap)
    assert r.returncode == 2
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith("aicore-sim: error: inputs.permuted_tokens: the case needs about ")
    assert "(inputs.permuted_tokens alone 120.0 GiB" in line
    assert line.endswith("of memory is available: use a smaller case")
    assert not out.exists()


def test_console_script_is_the_same_command(tmp_path, cli) -> None:
    # the `aicore-sim` script pip installs beside this interpreter ([project.scripts]), as a
    # user types it: the same output and exit code as the command run in this process
    script = Path(sys.executable).with_name("aicore-sim")
    if not script.is_file():
        pytest.skip("aicore-sim is not installed beside this interpreter")
    r = subprocess.run([str(script), "platforms"], cwd=tmp_path, capture_output=True, text=True,
                       timeout=120)
    assert (r.returncode, r.stderr) == (0, "")
    assert r.stdout == cli("platforms", cwd=tmp_path).stdout
    assert "ascend910b1" in r.stdout

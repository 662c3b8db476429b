"""Tests of the sweep machinery: spec validation, infeasible points, Dask vs local pool,
kill + resume, search on P1, and the CLI subcommands. Tiny cases only."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from aicore_sim.sweep import expand, parse_spec, run_points, run_sweep
from aicore_sim.sweep.run import SerialExecutor, read_rows
from aicore_sim.sweep.search import search
from aicore_sim.sweep.spec import SpecError

REPO = Path(__file__).resolve().parents[1]

SMALL = {
    "sweep": {"name": "small"},
    "axes": {"case": ["tiny"], "platform": ["ascend910b1"], "hbm_gbps": [800, 1600],
             "strategy": ["upstream", "wide_e"]},
    "tiling": {"indicesReserveNum": ["auto", 3, 4], "inputReserveNum": ["auto", 2]},
}


def _cmp(rows: list[dict]) -> dict[str, tuple]:
    return {r["key"]: (r["status"], r["rule"], r["makespan_cycles"], json.dumps(r["tiling"]))
            for r in rows}


@pytest.mark.parametrize("doc, where", [
    ({"axes": {"case": ["tiny"], "colour": [1]}}, "axes.colour: unknown field"),
    ({"axes": {"case": ["tiny"], "tokens_num": [10, "many"]}}, "axes.tokens_num[1]"),
    ({"axes": {"case": ["nope"]}}, "axes.case[0]"),
    ({"axes": {"case": ["tiny"], "strategy": ["fastest"]}}, "axes.strategy[0]: expected one of"),
    ({"axes": {"case": ["tiny"]}, "tiling": {"hiddenSize": [8]}}, "tiling.hiddenSize"),
    ({"axes": {"case": ["tiny"]}, "tiling": {"inputReserveNum": [-1]}},
     "tiling.inputReserveNum[0]"),
    ({"axes": {"case": ["tiny"], "platform": ["ascend123"]}}, "axes.platform[0]"),
    ({"axes": {"case": ["tiny"], "hbm_gbps": [0]}}, "axes.hbm_gbps[0]"),
    ({"axes": {"case": ["tiny"]}, "sweep": {"mode": "fast"}}, "sweep.mode"),
    ({"axes": {"tokens_num": [1]}}, "axes.case: missing"),
])
def test_spec_errors_name_the_field(doc: dict, where: str) -> None:
    with pytest.raises(SpecError) as e:
        parse_spec(doc)
    assert where in str(e.value)


def test_points_hash_stable_and_auto_equals_absent() -> None:
    a = expand(parse_spec(SMALL))
    assert len(a) == 2 * 2 * 3 * 2
    assert [p.key for p in a] == [p.key for p in expand(parse_spec(SMALL))]
    b = expand(parse_spec({"axes": {"case": ["tiny"], "platform": ["ascend910b1"],
                                    "hbm_gbps": [800], "strategy": ["upstream"]}}))
    assert b[0].key in {p.key for p in a}


def test_infeasible_points_name_the_rule(tmp_path: Path) -> None:
    doc = {"axes": {"case": ["tiny"], "ub_size": [8192]},
           "tiling": {"inputReserveNum": ["auto", 2], "indicesReserveNum": ["auto", 510]}}
    res = run_sweep(parse_spec(doc), tmp_path, SerialExecutor(), progress=False, report=False)
    by = {(r["axes"]["inputReserveNum"], r["axes"]["indicesReserveNum"]): r for r in res.rows}
    assert by[("auto", "auto")]["status"] == "ok"
    assert by[(2, "auto")]["status"] == "infeasible"
    assert by[(2, "auto")]["rule"] == "r_divides_topk"
    assert "divide topK 3" in by[(2, "auto")]["error"]
    assert by[("auto", 510)]["status"] == "infeasible"
    assert by[("auto", 510)]["rule"] == "ub_budget"
    assert "ub_budget" in by[(2, 510)]["rule"] and "r_divides_topk" in by[(2, 510)]["rule"]
    csv_text = (tmp_path / "results.csv").read_text()
    assert csv_text.count("\n") == 5 and "r_divides_topk" in csv_text


def test_dask_local_cluster_gives_the_same_rows_as_the_local_pool() -> None:
    distributed = pytest.importorskip("distributed")
    pts = expand(parse_spec(SMALL))
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(2, mp_context=ctx) as ex:
        local = run_points(pts, ex, progress=False, max_batch=4)
    # the scheduler's HTTP server on a free port of its own: None would mean 8787, which
    # another cluster on the machine may hold (a warning, and a clash between parallel runs)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address="127.0.0.1:0") as cluster, \
            distributed.Client(cluster) as client:
        dask_rows = run_points(pts, client.get_executor(pure=False), progress=False,
                               max_batch=4)
    assert len(local) == len(pts)
    assert _cmp(local) == _cmp(dask_rows)
    assert {r["status"] for r in local} == {"ok", "infeasible"}


def test_killed_sweep_resumes_without_recomputing_or_losing(tmp_path: Path) -> None:
    # 14 points of tiny, timed (tens of ms each): killed after 5 rows, the sweep is far from
    # done; the rest are run again in this process
    n = 14
    doc = {"sweep": {"name": "kill", "mode": "timed"},
           "axes": {"case": ["tiny"], "hbm_gbps": [float(100 + 10 * i) for i in range(n)]}}
    spec_path = tmp_path / "kill.json"
    spec_path.write_text(json.dumps(doc))
    out = tmp_path / "out"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.Popen([sys.executable, "-m", "aicore_sim", "sweep", str(spec_path),
                             "--out", str(out), "--workers", "0", "--batch", "1",
                             "--no-progress", "--no-report"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    jsonl = out / "results.jsonl"
    deadline = time.time() + 60
    while time.time() < deadline:
        if jsonl.exists() and jsonl.read_text().count("\n") >= 5:
            break
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    before = read_rows(out)
    assert 5 <= len(before) < n, "the sweep must be killed mid-way"
    prefix = jsonl.read_bytes()
    with open(jsonl, "ab") as f:  # a torn last line, as a kill during a write leaves
        f.write(b'{"key": "torn", "sta')
    res = run_sweep(parse_spec(doc), out, SerialExecutor(), resume=True, progress=False,
                    report=False)
    assert res.skipped == len(before)
    assert {r["key"] for r in res.rows}.isdisjoint({r["key"] for r in before})
    after = read_rows(out)
    keys = [r["key"] for r in after]
    assert len(keys) == len(set(keys)) == n
    assert set(keys) == {p.key for p in expand(parse_spec(doc))}
    assert jsonl.read_bytes().startswith(prefix)  # finished rows untouched
    assert "torn" not in keys


def test_search_p1_finds_a_verified_tiling_faster_than_upstream(tmp_path: Path) -> None:
    # The search keeps upstream's point among its candidates, so best <= upstream holds by
    # construction; what it must show is a strictly faster point. P1 cut to 48 tokens x
    # hidden 1024 on ascend910b1 (its inputs in L2, left there by the launch before):
    # upstream (R = topK 8 rows a group) 7265 cycles (1,902 of them the kernel entry); the
    # five strategies and two grid points (budget 7 of 12 legal tilings) find R = 1 at 7055.
    res = search("p1_deepseek_v3", SerialExecutor(), tmp_path, budget=7,
                 case_axes={"tokens_num": 48, "hidden": 1024}, progress=False)
    assert (res.points, res.space) == (7, 12)
    assert res.upstream is not None and res.best is not None
    assert res.upstream["makespan_cycles"] == 7265
    assert res.best["makespan_cycles"] == 7055
    assert res.best["tiling"]["inputReserveNum"] == 1
    assert res.upstream["tiling"]["inputReserveNum"] == 8
    assert res.speedup == 7265 / 7055
    assert res.verified is not None and res.verified["status"] == "verified"
    assert res.verified["cycles"] == 7055
    assert "speed-up over upstream: 1.0298x (2.89% less time)" in res.text()
    assert (tmp_path / "report.md").exists() and (tmp_path / "pareto.png").exists()


def test_cli_sweep_report_and_errors(tmp_path: Path, cli) -> None:
    spec = tmp_path / "s.json"
    spec.write_text(json.dumps(SMALL))
    r = cli("sweep", str(spec), "--out", "o", "--workers", "0", "--verify", "--no-progress",
             cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "24 points run" in r.stdout and "verified" in r.stdout
    for f in ("results.csv", "results.jsonl", "verify.jsonl", "report.md", "heatmap.png",
              "pareto.png", "bound_by.png", "spec.json"):
        assert (tmp_path / "o" / f).exists(), f
    md = (tmp_path / "o" / "report.md").read_text()
    assert "speed-up" in md and "r_divides_topk" in md
    r = cli("report", "o", "--out", "o2", "--heatmap", "strategy,hbm_gbps", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "o2" / "heatmap.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    bad = tmp_path / "bad.toml"
    bad.write_text('[axes]\ncase = ["tiny"]\nwidth = [3]\n')
    r = cli("sweep", str(bad), cwd=tmp_path)
    assert r.returncode == 2 and "axes.width: unknown field" in r.stderr
    r = cli("sweep", str(spec), "--out", "o", "--workers", "0", cwd=tmp_path)
    assert r.returncode == 2 and "--resume" in r.stderr


def test_axis_kernel_source_takes_port_or_an_existing_path(tmp_path):
    src = tmp_path / "op_kernel"
    src.mkdir()
    spec = parse_spec({"axes": {"case": ["tiny"], "kernel_source": ["port", str(src)]}})
    assert spec.axes["kernel_source"] == ["port", str(src.resolve())]
    with pytest.raises(SpecError, match=r"axes.kernel_source\[0\]: .*nowhere: no such folder "
                                        r"or file"):
        parse_spec({"axes": {"case": ["tiny"], "kernel_source": [str(tmp_path / "nowhere")]}})


def test_a_spec_named_dot_dot_writes_under_reports(tmp_path, monkeypatch):
    """A sweep file whose name is ``..`` (or a path) gets a folder of its own under reports/,
    never the current folder beside the user's own report.md."""
    from aicore_sim.cli import main

    spec = tmp_path / "s.toml"
    spec.write_text('[sweep]\nname = ".."\n[axes]\ncase = ["tiny"]\n')
    monkeypatch.chdir(tmp_path)
    (tmp_path / "report.md").write_text("mine")
    assert main(["sweep", str(spec), "--workers", "1", "--no-progress"]) == 0
    assert (tmp_path / "report.md").read_text() == "mine"
    assert (tmp_path / "reports" / "sweep" / "results.jsonl").is_file()


def test_resume_runs_error_rows_again_and_exits_by_every_points_final_state(tmp_path):
    """A point left as ``error`` is run again by ``--resume`` (its new row replaces the old
    one), and the exit code is that of every point's final row."""
    import json as _json

    from aicore_sim.cli import main

    spec = tmp_path / "s.toml"
    spec.write_text('[sweep]\nname = "r"\n[axes]\ncase = ["tiny"]\n'
                    '[tiling]\ninputReserveNum = [1, 3]\n')
    out = tmp_path / "o"
    assert main(["sweep", str(spec), "--workers", "1", "--out", str(out),
                 "--no-progress", "--no-report"]) == 0
    lines = (out / "results.jsonl").read_text().splitlines()
    first = _json.loads(lines[0])
    broken = dict(first, status="error", error="simulated failure", makespan_cycles=None)
    (out / "results.jsonl").write_text("\n".join([_json.dumps(broken), *lines[1:]]) + "\n")
    assert main(["sweep", str(spec), "--workers", "1", "--out", str(out), "--resume",
                 "--no-progress", "--no-report"]) == 0  # retried: every point is ok again
    from aicore_sim.sweep.rows import read_rows

    rows = read_rows(out)
    assert [r["status"] for r in rows] == ["ok", "ok"]
    assert rows[0]["key"] == first["key"]
    assert rows[0]["makespan_cycles"] == first["makespan_cycles"]

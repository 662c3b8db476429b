"""``aicore-sim diff`` (``aicore_sim/views/rundiff.py``) on real run folders of the default case:
two platforms give the differences of the two summary.json files, identical runs give none."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from aicore_sim.views.rundiff import digests
from op_models.moe_token_unpermute_with_ep_grad import run_case

PIPES = ("SCALAR", "MTE2", "VECTOR", "MTE3")


@pytest.fixture(scope="module")
def runs(tmp_path_factory, cli):
    """Run folders: a = tiny on ascend910b1, a2 = the same again, b = tiny on ascend910b4."""
    root = tmp_path_factory.mktemp("runs")
    for name, extra in (("a", []), ("a2", []), ("b", ["--platform", "ascend910b4"])):
        p = cli("run", "--out", root / name, "--no-plot", "--trace", "none", "--jobs", "1",
                *extra, cwd=root)
        assert p.returncode == 0, p.stderr
    return root


def _summary(folder):
    return json.loads((folder / "summary.json").read_text())


def test_two_platforms_give_the_summary_differences(runs, cli) -> None:
    p = cli("diff", runs / "a", runs / "b", "--json", cwd=runs)
    assert p.returncode == 1, p.stderr  # they differ
    d = json.loads(p.stdout)
    sa, sb = _summary(runs / "a"), _summary(runs / "b")
    assert d["makespan_cycles"] == {"a": sa["makespan_cycles"], "b": sb["makespan_cycles"],
                                    "delta": sb["makespan_cycles"] - sa["makespan_cycles"]}
    for pipe in PIPES:
        busy_a = sum(c["busy_cycles"][pipe] for c in sa["cores"])
        busy_b = sum(c["busy_cycles"][pipe] for c in sb["cores"])
        assert d["busy_cycles"][pipe] == {"a": busy_a, "b": busy_b, "delta": busy_b - busy_a}
        u = d["utilisation"][pipe]
        assert u["delta"] == sb["utilisation"][pipe] - sa["utilisation"][pipe]
    assert d["platform"]["delta"] == "differs"
    # 48 cores against 40: cores 40..47 exist in A only, their streams diverge at #0
    div = {v["core"]: v for v in d["first_divergence"]}
    assert set(div) >= set(range(40, 48))
    assert all(div[c]["index"] == 0 and div[c]["length_b"] == 0 for c in range(40, 48))
    assert div[40]["source_a"].startswith("op_models/moe_token_unpermute_with_ep_grad/")
    # hot lines: the changed ones, largest change first
    deltas = [abs(r["delta"]) for r in d["line_deltas"]]
    assert deltas and deltas == sorted(deltas, reverse=True)


def test_identical_runs_show_no_difference(runs, cli) -> None:
    p = cli("diff", runs / "a", runs / "a2", cwd=runs)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[-1] == "no difference"
    d = json.loads(cli("diff", runs / "a", runs / "a2", "--json", cwd=runs).stdout)
    assert d["differs"] is False and d["first_divergence"] == [] and d["line_deltas"] == []
    assert d["makespan_cycles"]["delta"] == 0


def test_report_writes_markdown_and_png(runs, tmp_path, cli) -> None:
    md = tmp_path / "ab.md"
    p = cli("diff", runs / "a", runs / "b", "--report", md, cwd=runs)
    assert p.returncode == 1, p.stderr
    text = md.read_text()
    assert "| makespan_cycles |" in text and "![paired bars](ab.png)" in text
    assert (tmp_path / "ab.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bad_folders_exit_2(runs, tmp_path, cli) -> None:
    p = cli("diff", runs / "a", tmp_path / "missing", cwd=runs)
    assert p.returncode == 2 and "not a run folder" in p.stderr and "Traceback" not in p.stderr
    p = cli("diff", runs / "a", cwd=runs)
    assert p.returncode == 2 and "two run folders" in p.stderr


@pytest.mark.parametrize("field, value, says", [
    ("makespan_cycles", "abc", 'makespan_cycles: expected an integer >= 0, got "abc"'),
    ("cores", [{"core": 0}], "cores[0].cycles: missing; this field is required"),
    ("achieved_gbps", -1.0, "achieved_gbps: expected null or a finite number >= 0, got -1.0"),
])
def test_a_damaged_summary_is_refused_naming_the_field(runs, tmp_path, cli, field, value,
                                                       says) -> None:
    import shutil

    bad = tmp_path / "bad"
    shutil.copytree(runs / "a", bad)
    doc = _summary(bad)
    doc[field] = value
    (bad / "summary.json").write_text(json.dumps(doc))
    p = cli("diff", runs / "a", bad, cwd=runs)
    assert p.returncode == 2
    assert p.stderr.strip() == (f"aicore-sim: error: {bad / 'summary.json'}: {says} (not a "
                                "summary.json as aicore-sim run writes it)")


def test_digests_ignore_scalar_values_only() -> None:
    _, timed, _ = run_case("tiny", mode="timed", jobs=1)
    _, timing, _ = run_case("tiny", mode="timing-only", jobs=1)
    # the two record modes differ in scalar operand values only: equal digests
    for x, y in zip(digests(timed.program.streams), digests(timing.program.streams)):
        assert np.array_equal(x, y)
    stream = timed.program.streams[0]
    d = digests([stream, [stream[1], *stream[1:]]])
    assert d[0][0] != d[1][0] and np.array_equal(d[0][1:], d[1][1:])


def test_two_sweep_points(tmp_path, cli) -> None:
    spec = Path(__file__).parents[1] / "examples" / "sweeps" / "tiny_smoke.toml"
    p = cli("sweep", spec, "--out", "sw", "--workers", "0", "--no-progress", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    rows = [json.loads(x) for x in (tmp_path / "sw" / "results.jsonl").read_text().splitlines()]
    ok = [r for r in rows if r["status"] == "ok"]
    a, b = ok[0], max(ok, key=lambda r: r["makespan_cycles"] - ok[0]["makespan_cycles"])
    p = cli("diff", "sw", "--points", a["key"][:12], b["key"][:12], "--json", cwd=tmp_path)
    assert p.returncode == (1 if a["makespan_cycles"] != b["makespan_cycles"] else 0), p.stderr
    d = json.loads(p.stdout)
    assert d["makespan_cycles"]["delta"] == b["makespan_cycles"] - a["makespan_cycles"]
    assert d["utilisation"]["MTE2"] == {"a": a["util_MTE2"], "b": b["util_MTE2"],
                                        "delta": b["util_MTE2"] - a["util_MTE2"]}
    bad = next(r for r in rows if r["status"] == "infeasible")
    p = cli("diff", "sw", "--points", a["key"], bad["key"], cwd=tmp_path)
    assert p.returncode == 2 and "infeasible" in p.stderr

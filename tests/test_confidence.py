"""What the timing model is validated on, said by ``run`` (``aicore_sim/validate/
confidence.py``): validated on the platform's SoC, or the nearest validated preset named; the
shipped record (``data/validation.json``, written by ``validate --write-confidence``) covers
every platform and source group the bundled suite runs."""

from __future__ import annotations

import json

from aicore_sim.sim.platform import load_platform
from aicore_sim.validate import confidence

DOC = {"platforms": {
    "ascend910b1": {"soc": "Ascend910B1", "costs": "a2", "samples": ["add", "data_copy"],
                    "held_out_groups": ["add@ascend910b1"], "figures": 12,
                    "task_median_pct": 3.4, "task_median_pct_held_out_scenarios": 4.6,
                    "held_out_by_source": {"count": 5, "median_pct": 2.0, "worst_pct": 9.0},
                    "steps": 7, "steps_right": 7, "cores": [1, 48]},
    "ascend950pr_9589": {"soc": "Ascend950PR_9589", "costs": "950", "samples": ["add"],
                         "held_out_groups": [], "figures": 3, "task_median_pct": None,
                         "task_median_pct_held_out_scenarios": None,
                         "held_out_by_source": None, "steps": 0, "steps_right": 0}}}


def test_validated_soc() -> None:
    s = confidence.statement(load_platform("ascend910b1"), DOC)
    assert (s["validated"], s["preset"]) == (True, "ascend910b1")
    assert s["text"] == (
        "timing model validated on Ascend910B1 (ascend910b1): 12 on-board figures of add, "
        "data_copy; Task Duration median |error| 3.4 % (4.6 % on the scenarios no parameter "
        "was fitted on); held out by source (add@ascend910b1): median 2.0 % over 5 figures; "
        "7 / 7 optimisation steps in the board's direction")


def test_an_unvalidated_soc_names_the_nearest_preset_of_its_cost_family() -> None:
    # 910B3 shares the a2 cost family with the validated 910B1
    s = confidence.statement(load_platform("ascend910b3"), DOC)
    assert (s["validated"], s["preset"]) == (False, "ascend910b1")
    assert s["text"].startswith("timing model not validated on Ascend910B3; nearest validated "
                                "preset ascend910b1 (the same cost family 'a2', whose fitted "
                                "parameters this preset carries unchanged): 12 on-board")
    # a what-if of a validated preset keeps its SoC: still the validated record
    what_if = load_platform("ascend910b1").with_overrides(aiv_core_num=8)
    assert confidence.statement(what_if, DOC)["validated"] is True
    # a 950 DT shares the 950 cost family with the validated 950 PR
    s = confidence.statement(load_platform("ascend950dt_9581"), DOC)
    assert (s["validated"], s["preset"]) == (False, "ascend950pr_9589")
    assert "no source group held out (parameters were fitted on every one)" in s["text"]
    # 'tiny' borrows a 910B1 SoC name but is a test platform: validated on nothing
    assert confidence.statement(load_platform("tiny"), DOC)["text"] == (
        "timing model: tiny is a test platform of round numbers, held against no board")


def test_the_launch_size_is_said_when_no_board_figure_was_taken_at_it() -> None:
    b1, b3 = load_platform("ascend910b1"), load_platform("ascend910b3")
    # 48 cores: a size the record's figures were taken at; nothing added
    s = confidence.statement(b1, DOC, cores=48)
    assert s["cores_validated"] is True
    assert s["text"] == confidence.statement(b1, DOC)["text"]
    # 8 cores: between the record's 1 and 48
    s = confidence.statement(b1, DOC, cores=8)
    assert s["cores_validated"] is False
    assert s["text"].endswith(
        "; this launch's 8 cores lie between the launch sizes of those figures (1, 48 cores): "
        "its shares of HBM and the fabric are checked by no board figure")
    # beyond the largest, and on the nearest preset's record for an unvalidated SoC
    s = confidence.statement(b3, DOC, cores=64)
    assert (s["validated"], s["cores_validated"]) == (False, False)
    assert "this launch's 64 cores lie outside the launch sizes of those figures" in s["text"]
    # a record without launch sizes (the 950 entry here) or no core count: not known
    assert confidence.statement(load_platform("ascend950pr_9589"), DOC,
                                cores=8)["cores_validated"] is None
    assert confidence.statement(b1, DOC)["cores_validated"] is None


def test_no_record() -> None:
    assert confidence.statement(load_platform("ascend910b1"), {"platforms": {}})["text"] == (
        "timing model: no validation record is installed")


def test_shipped_record_covers_the_bundled_suite() -> None:
    from op_models.board_samples.suite import SUITE

    doc = json.loads(confidence.SHIPPED.read_text())
    presets = {sc.platform for sc in SUITE.scenarios}
    assert set(doc["platforms"]) == presets
    for preset, entry in doc["platforms"].items():
        groups = {sc.group for sc in SUITE.scenarios if sc.platform == preset}
        fitted = {sc.group for sc in SUITE.scenarios if sc.name in SUITE.fitted}
        assert set(entry["held_out_groups"]) == groups - fitted, preset
        assert entry["soc"] == load_platform(preset).soc
        # the suite launches one core (add c0 / c1, bank_conflict_ub) or every AIV core
        assert entry["cores"] == [1, load_platform(preset).aiv_core_num], preset


def test_run_states_it(cli, tmp_path) -> None:
    p = cli("run", "--out", tmp_path / "r", "--no-plot", "--trace", "none", "--jobs", "1",
            cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    s = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert s["fidelity"] == confidence.statement(load_platform("ascend910b1"),
                                                 cores=s["block_dim"])
    assert s["fidelity"]["text"] in p.stdout

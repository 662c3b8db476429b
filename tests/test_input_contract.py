"""The input contract, systematically: every input surface refuses what it cannot read exactly.

One test (or one parametrised row) per rule: the exit code, the one line naming the field and
the rule, and that nothing was written. Refusals made while the command line is parsed run
``aicore_sim.cli.main`` in this process (no work happens before them); the others run it in a
forked child under ``RLIMIT_AS`` (``run_limited`` of ``tests/test_fuzz_contract.py``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from aicore_sim import cli

# -- the command line: every value checked by its type while the line is parsed ---------------


def _parse_refusal(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    code = cli.main(argv)
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("aicore-sim: error: "), err
    return err


@pytest.mark.parametrize("argv, says", [
    (["run", "--inputs", ""], "argument --inputs: must not be empty"),
    (["run", "--out", ""], "argument --out: must not be empty"),
    (["run", "--platform", ""], "argument --platform: must not be empty"),
    (["run", ""], "argument CASE.json: must not be empty"),
    (["run", "--case", " "], "argument --case: must not be empty"),
    (["run", "--jobs", "0"], "argument --jobs: must be >= 1, got 0"),
    (["run", "--hotspots", "0"], "argument --hotspots: must be >= 1, got 0"),
    (["run", "--window", "inf:"], "argument --window inf:: times must be finite"),
    (["run", "--window", "nan:100"], "argument --window nan:100: times must be finite"),
    (["run", "--window", "1e400:"], "argument --window 1e400:: times must be finite"),
    (["run", "--window", "9:3"], "argument --window 9:3: the end must be after the start"),
    (["run", "--window=-1:3"], "argument --window -1:3: times must be >= 0"),
    (["tiling", ""], "argument CASE: must not be empty"),
    (["search", "tiny", "--tokens", "0"], "argument --tokens: must be >= 1, got 0"),
    (["search", "tiny", "--budget", "0"], "argument --budget: must be >= 1, got 0"),
    (["search", "tiny", "--workers", "-3"], "argument --workers: must be >= 0, got -3"),
    (["sweep", "s.toml", "--batch", "0"], "argument --batch: must be >= 1, got 0"),
    (["sweep", "s.toml", "--batch", "-1"], "argument --batch: must be >= 1, got -1"),
    (["sweep", "s.toml", "--workers", "-3"], "argument --workers: must be >= 0, got -3"),
    (["sweep", "s.toml", "--out", ""], "argument --out: must not be empty"),
    (["sweep", ""], "argument SPEC: must not be empty"),
    (["report", ""], "argument RESULTS: must not be empty"),
    (["diff", "a", "b", "--lines", "-1"], "argument --lines: must be >= 0, got -1"),
    (["verify", "tiny", "--limit", "0"], "argument --limit: must be >= 1, got 0"),
    (["verify", "tiny", "--dump-golden", ""], "argument --dump-golden: must not be empty"),
    (["verify", "tiny", "--report", ""], "argument --report: must not be empty"),
    (["correlate", "", "x"], "argument RUN_DIR: must not be empty"),
    (["calibrate", "a:tiny", "--platform", "", "--out", "x.toml"],
     "argument --platform: must not be empty"),
    (["validate", "--max-median", "nan"], "argument --max-median: must be a finite number"),
])
def test_bad_option_values_are_refused_while_parsing(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        argv: list[str], says: str) -> None:
    monkeypatch.chdir(tmp_path)
    err = _parse_refusal(capsys, argv)
    assert says in err
    assert list(tmp_path.iterdir()) == []  # nothing written, not even a default folder

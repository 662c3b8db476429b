"""The timeline options of ``aicore-sim run`` (``aicore_sim/cli/timeline.py``): zoom by cores
and window (cycles or µs), the UB plot, and bad values refused with exit 2 and nothing written."""

from __future__ import annotations

import pytest

from aicore_sim.cli.timeline import UsageError, parse_cores, parse_window

PNG = b"\x89PNG\r\n\x1a\n"


def test_parse_cores() -> None:
    assert parse_cores("0,5", 48) == [0, 5]
    assert parse_cores("5,0-3,3", 48) == [0, 1, 2, 3, 5]
    for bad, words in (("48", "cores are 0..47, not 48"), ("a", "'a' is not a core"),
                       ("-1", "not a core")):
        with pytest.raises(UsageError, match=words):
            parse_cores(bad, 48)


def test_parse_window() -> None:
    assert parse_window("1000:5000", 1850.0, 9999) == (1000, 5000)
    assert parse_window("0.5us:2us", 1850.0, 9999) == (925, 3700)  # µs x 1850 cycles/µs
    assert parse_window("100ns:", 1850.0, 9999) == (185, 9999)  # open end: the makespan
    assert parse_window(":2µs", 1000.0, 9999) == (0, 2000)
    for bad in ("5000:1000", "1000", "x:5", "-3:5"):
        with pytest.raises(UsageError, match="--window"):
            parse_window(bad, 1850.0, 9999)


def test_run_zoom_and_ub_plot(tmp_path, cli) -> None:
    out = tmp_path / "o"
    r = cli("run", "--out", out, "--trace", "none", "--cores", "0,5", "--window", "0:2us",
             "--ub-plot", "--jobs", "1", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (out / "timeline.png").read_bytes()[:8] == PNG
    assert (out / "ub.png").read_bytes()[:8] == PNG


@pytest.mark.parametrize("args, words", [
    (["--cores", "0,99"], "--cores 0,99: cores are 0..47"),
    (["--window", "9:3"], "--window 9:3: the end must be after the start"),
    (["--window", "12"], "--window 12: expected START:END"),
])
def test_bad_zoom_exits_2_and_writes_nothing(tmp_path, args, words, cli) -> None:
    out = tmp_path / "o"
    r = cli("run", "--out", out, "--trace", "none", "--jobs", "1", *args, cwd=tmp_path)
    assert r.returncode == 2 and words in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    assert not out.exists() and not list(tmp_path.glob(".o.*"))

"""Output staging under signals: a stop that Python could only print still stops the publish.

Python prints, and then drops, an exception raised where it cannot propagate: in a
``__del__`` method, or in the hooks ``os.fork`` runs in the parent (seen: a SIGTERM landing
in ``logging``'s at-fork hook let a run finish with exit 0 and a traceback on stderr). The
tests raise the signal inside a ``__del__`` by sending it to this process there.
"""

from __future__ import annotations

import argparse
import os
import pickle
import signal
from pathlib import Path

import pytest

from aicore_sim.cli.console import _dispatch
from aicore_sim.util import staging
from aicore_sim.util.staging import Terminated


class _SignalOnDrop:
    """Sends ``sig`` to this process when dropped: its handler runs inside ``__del__``."""

    def __init__(self, sig: signal.Signals) -> None:
        self.sig = sig

    def __del__(self) -> None:
        os.kill(os.getpid(), self.sig)


@pytest.mark.parametrize("sig, stop", [(signal.SIGTERM, Terminated),
                                       (signal.SIGINT, KeyboardInterrupt)])
def test_a_swallowed_stop_is_silent_and_nothing_is_published(
        tmp_path: Path, capfd: pytest.CaptureFixture[str], sig: signal.Signals,
        stop: type[BaseException]) -> None:
    staging.install_signal_handlers()
    _SignalOnDrop(sig)  # dropped at once: the handler's exception can only be printed
    assert staging._STOP == sig  # remembered all the same
    with pytest.raises(stop):
        with staging.staged_folder(tmp_path / "out") as tmp:
            (tmp / "summary.json").write_text("{}")
    with pytest.raises(stop):
        staging.write_staged(tmp_path / "report.md", "# report\n")
    assert os.listdir(tmp_path) == []  # neither the folder, its stage nor the report
    assert capfd.readouterr().err == ""  # no "Exception ignored in ..." traceback


def test_without_a_signal_the_folder_is_published(tmp_path: Path) -> None:
    staging.install_signal_handlers()
    with staging.staged_folder(tmp_path / "out") as tmp:
        (tmp / "summary.json").write_text("{}")
    assert os.listdir(tmp_path) == ["out"]
    assert os.listdir(tmp_path / "out") == ["summary.json"]


def test_terminated_crosses_a_pipe_as_itself() -> None:
    # a forked child's exception is pickled back to the parent (background.py); rebuilding it
    # from its message ('SIGTERM') was an internal error
    again = pickle.loads(pickle.dumps(Terminated(signal.SIGTERM)))
    assert isinstance(again, Terminated)
    assert again.signum == signal.SIGTERM
    assert str(again) == "SIGTERM"


@pytest.mark.parametrize("stop, code, how", [
    (KeyboardInterrupt(), 130, "interrupted (SIGINT)"),
    (Terminated(signal.SIGTERM), 143, "terminated (SIGTERM)")])
def test_a_stop_after_the_folder_is_published_says_what_was_written(
        tmp_path: Path, capfd: pytest.CaptureFixture[str], stop: BaseException, code: int,
        how: str) -> None:
    staging.install_signal_handlers()

    def command(args: object) -> int:  # a run whose last lines are cut short by the signal
        with staging.staged_folder(tmp_path / "out") as tmp:
            (tmp / "summary.json").write_text("{}")
        raise stop

    assert _dispatch(argparse.Namespace(func=command), False) == code
    assert capfd.readouterr().err == f"aicore-sim: {how} after writing {tmp_path / 'out'}, " \
                                     "which is complete\n"
    assert os.listdir(tmp_path / "out") == ["summary.json"]


def test_a_stop_before_anything_is_published_says_nothing_was_written(
        capfd: pytest.CaptureFixture[str]) -> None:
    staging.install_signal_handlers()

    def command(args: object) -> int:
        raise KeyboardInterrupt

    assert _dispatch(argparse.Namespace(func=command), False) == 130
    assert capfd.readouterr().err == "aicore-sim: interrupted (SIGINT); nothing was written\n"

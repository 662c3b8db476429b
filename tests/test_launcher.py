"""Ctrl-C while the command line is still being imported: one line and exit 130, no
traceback (``aicore_sim/launcher.py``, the console script's entry)."""

from __future__ import annotations

import builtins
import sys

from aicore_sim import launcher


def test_interrupt_during_the_imports(monkeypatch, capsys):
    real_import = builtins.__import__

    def interrupted(name, *args, **kwargs):
        if name == "aicore_sim.cli":
            raise KeyboardInterrupt
        return real_import(name, *args, **kwargs)

    exits = []
    monkeypatch.delitem(sys.modules, "aicore_sim.cli", raising=False)
    monkeypatch.setattr(builtins, "__import__", interrupted)
    monkeypatch.setattr(launcher.os, "_exit", lambda code: exits.append(code))
    launcher.entry()
    assert exits == [130]
    assert capsys.readouterr().err == ("aicore-sim: interrupted (SIGINT) while starting; "
                                       "nothing was run\n")


def test_interrupt_while_the_line_is_parsed(monkeypatch, capsys):
    """A Ctrl-C after the imports and before the command installs its handlers (argparse at
    work) was a traceback and exit -2; found by benchmarks/fault_injection.py."""
    import aicore_sim.cli

    def parsing():
        raise KeyboardInterrupt

    exits = []
    monkeypatch.setattr(aicore_sim.cli, "entry", parsing)
    monkeypatch.setattr(launcher.os, "_exit", lambda code: exits.append(code))
    launcher.entry()  # the signal handlers it installs are put back by conftest
    assert exits == [130]
    assert capsys.readouterr().err == "aicore-sim: interrupted (SIGINT); nothing was written\n"

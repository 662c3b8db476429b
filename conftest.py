"""The test suite's fixtures and hooks, for both test trees: ``tests/`` (the simulator's
machinery, and what several operators share) and each operator's ``op_models/<op>/tests/``.
A conftest applies to the folder it is in, so the shared ones sit here, at the root; the
helpers they wrap, which tests import too (``TINY``, ``run_cli``), are in ``tests/conftest.py``.

* ``cli`` (fixture): :func:`tests.conftest.run_cli`, the command line in this process.
* ``cli_subprocess`` (fixture): :func:`tests.conftest.run_cli_subprocess`, the command line as a
  real ``python -m aicore_sim`` child.
* ``cxx_cache`` (fixture): the suite's own C++ kernel cache.
* autouse: every test leaves the process state the command line changes as it found it.
* collection order: the long files first (:data:`_LONG_FILES`).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import _process_state, run_cli, run_cli_subprocess


@pytest.fixture(autouse=True)
def _restore_process_state() -> Iterator[None]:
    """Every test: tests that call ``aicore_sim.cli.main`` directly (with ``capsys``) leave
    the process as they found it, as :func:`run_cli` does."""
    with _process_state():
        yield


# Files of few but long tests (the upstream ATK records, the validation subset, the whole
# equivalence matrix, sweeps, a pip install, real processes), collected first: pytest-xdist
# (--dist loadfile, --no-loadscope-reorder in pyproject.toml) hands files to its workers in
# collection order, so these start early instead of leaving one worker busy at the end.
_LONG_FILES = ("tests/test_sweep_interrupt.py", "tests/test_sweep.py",
               "op_models/board_samples/tests/test_fidelity.py",
               "tests/test_input_contract.py",
               "op_models/moe_token_unpermute_with_ep_grad/tests/test_matrix.py",
               "tests/test_record_modes.py", "tests/test_document_fuzz.py",
               "op_models/moe_token_unpermute_with_ep_grad/tests/test_atk.py",
               "tests/test_contract.py", "tests/test_cli.py", "tests/test_plugin.py",
               "tests/test_option_fuzz.py")
"""The files with the most test time (pytest --durations=0, summed per file), longest first;
paths from the repository root, as in the test ids."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {path: i for i, path in enumerate(_LONG_FILES)}
    # stable otherwise
    items.sort(key=lambda item: rank.get(item.nodeid.partition("::")[0], len(rank)))


@pytest.fixture(scope="session")
def cli():
    """``cli(*args, cwd=None)``: the command line in this process (:func:`run_cli`)."""
    return run_cli


@pytest.fixture(scope="session")
def cli_subprocess():
    """``cli_subprocess(*args, cwd, ...)``: the command line in a child process."""
    return run_cli_subprocess


@pytest.fixture
def cxx_cache(monkeypatch):
    """``$AICORE_SIM_CACHE`` set to the test suite's own kernel cache, in the system's
    temporary folder (never the user's cache): builds are keyed by their contents, so a
    kernel or googletest compiled by an earlier run or another worker is reused; its path."""
    path = Path(tempfile.gettempdir()) / f"aicore-sim-tests-{os.getuid()}" / "cxx-cache"
    monkeypatch.setenv("AICORE_SIM_CACHE", str(path))
    return path

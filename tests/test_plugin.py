"""Operators from other packages: ``tests/plugin_op`` (``tiny_axpy``: z = alpha * x + y, a
real kernel on the Ascend C API with its own golden) and the template users copy,
``examples/op_template`` (``my_op``: y = x * scale), installed with pip into a temporary folder
and run through ``aicore-sim run``, ``verify``, ``tiling`` and ``cases`` as subprocesses, with
no change to this package. The plug-in test is in the default suite (one isolated pip build and
five subprocesses: ~10-15 s), so a change that shuts other packages out fails CI; the template
test (a second build, an 8-case matrix and the template's own test suite) is marked slow.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from aicore_sim.cli import main

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "tests" / "plugin_op"
TEMPLATE = REPO / "examples" / "op_template"


def pip_install(project: Path, target: Path) -> Path:
    """``pip install --target`` of one project (an isolated build, as a user's install)."""
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target",
                        str(target), str(project)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    return target


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory) -> Path:
    target = pip_install(FIXTURE, tmp_path_factory.mktemp("plugin") / "site")
    assert (target / "tiny_axpy" / "kernel.py").is_file()
    return target


@pytest.fixture(scope="module")
def template_path(tmp_path_factory) -> Path:
    target = pip_install(TEMPLATE, tmp_path_factory.mktemp("template") / "site")
    assert (target / "my_op" / "equivalence_matrix.toml").is_file()
    return target


def cli(site: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), str(REPO)]))
    return subprocess.run([sys.executable, "-m", "aicore_sim", *map(str, args)], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=300)


def test_plugin_op_runs_and_verifies(plugin_path: Path, tmp_path: Path) -> None:
    r = cli(plugin_path, "cases", cwd=tmp_path)
    # both ops listed; the broken entry point is named on stderr (exit 1), hiding nothing
    assert "op tiny_axpy: z = alpha * x + y" in r.stdout and "axpy_tiles" in r.stdout
    assert "op moe_token_unpermute_with_ep_grad" in r.stdout
    assert "op moe_token_unpermute_with_ep: " in r.stdout
    assert r.returncode == 1
    assert r.stderr.count("\n") == 1 and "tiny_broken" in r.stderr
    assert "tiny_axpy.no_such_module:MODEL" in r.stderr and "tiny-axpy-op" in r.stderr

    # 200000 elements on ascend910b1's 48 cores: 25000 blocks of 8 -> 521 blocks (4168
    # elements) per core, so 48 cores (the last with 200000 - 47 * 4168 = 4104); tiles of
    # 2048 -> 3 per core
    r = cli(plugin_path, "tiling", FIXTURE / "axpy_case.json", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    row = json.loads(r.stdout)
    assert row["tiling_data"] == {"totalLength": 200000, "blockLength": 4168,
                                  "tileLength": 2048}
    assert row["block_dim"] == 48

    out = tmp_path / "run"
    r = cli(plugin_path, "run", "--case", "axpy_tiles", "--out", out, "--no-plot", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "golden z: exact (200000 elements)" in r.stdout
    assert "hazards: none" in r.stdout
    z = np.load(out / "outputs" / "z.npy")
    assert z.shape == (200000,) and z.dtype == np.float32

    r = cli(plugin_path, "verify", "axpy_small", str(FIXTURE / "axpy_case.json"), "--mode",
            "timed", "--report", tmp_path / "v", "--no-progress", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "2 / 2 cases passed" in r.stdout

    # a case file naming the broken plug-in: exit 1, one line naming the entry point
    doc = json.loads((FIXTURE / "axpy_case.json").read_text())
    bad = tmp_path / "broken.json"
    bad.write_text(json.dumps({**doc, "op": "tiny_broken"}))
    r = cli(plugin_path, "run", bad, "--out", tmp_path / "b", cwd=tmp_path)
    assert r.returncode == 1
    assert r.stderr.startswith("aicore-sim: error: op plug-in 'tiny_broken'")
    assert "ModuleNotFoundError" in r.stderr and r.stderr.count("\n") == 1
    assert not (tmp_path / "b").exists()


@pytest.mark.slow
def test_template_op_runs_verifies_and_passes_its_own_tests(template_path: Path,
                                                           tmp_path: Path) -> None:
    r = cli(template_path, "run", "--case", "my_op_small", "--platform", "tiny", "--out",
            tmp_path / "run", "--no-plot", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "golden y: exact (5000 elements)" in r.stdout

    # 2 dtypes x 2 shapes x 2 platforms, timed, bit-exact
    r = cli(template_path, "verify", "--matrix", "my_op", "--report", tmp_path / "m",
            "--no-progress", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "8 / 8 cases passed" in r.stdout

    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(template_path), str(REPO)]))
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-o", "addopts=", "-p",
                        "no:cacheprovider", str(TEMPLATE / "tests")], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:]
    assert "7 passed" in r.stdout


def test_unknown_op_names_the_field_and_the_known_ops(tmp_path: Path, capsys) -> None:
    doc = json.loads((FIXTURE / "axpy_case.json").read_text())
    case = tmp_path / "c.json"
    case.write_text(json.dumps({**doc, "op": "no_such_op"}))
    rc = main(["run", str(case), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.count("\n") == 1
    assert 'c.json: op: unknown operator "no_such_op"; expected one of [' in err
    assert "'moe_token_unpermute_with_ep_grad'" in err
    assert not (tmp_path / "o").exists()

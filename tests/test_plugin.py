"""Operators from other packages: ``tests/plugin_op`` (``tiny_axpy``: z = alpha * x + y, a
real kernel on the Ascend C API with its own golden) and the template users copy,
``examples/op_template`` (``my_op``: y = x * scale), each copied to a temporary folder and
installed from there with pip into another temporary folder (the source tree gets no ``build/``
or ``*.egg-info``), then run through ``aicore-sim run``, ``verify``, ``tiling`` and ``cases``
with no change to this package. ``cases`` runs in a fresh ``python -m aicore_sim`` with the
install on its PYTHONPATH (a new interpreter discovering the plug-in's entry points); the other
commands run in this process with the install put on ``sys.path`` and the operator registry's
caches reset for the test (:func:`plugins_on_path`). The plug-in test is in the default suite
(one isolated pip build, one subprocess: ~5 s), so a change that shuts other packages out fails
CI; the template test (a second build, an 8-case matrix and the template's own test suite) is
marked slow.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from aicore_sim.cli import main
from aicore_sim.ops import registry

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "tests" / "plugin_op"
TEMPLATE = REPO / "examples" / "op_template"


def pip_install(project: Path, work: Path) -> Path:
    """``pip install --target work/site`` of a copy of ``project`` made in ``work/src`` (an
    isolated build, as a user's install; pip builds in the copy, not in the source tree)."""
    src, target = work / "src", work / "site"
    shutil.copytree(project, src, ignore=shutil.ignore_patterns(
        "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache"))
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target",
                        str(target), str(src)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    return target


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory) -> Path:
    target = pip_install(FIXTURE, tmp_path_factory.mktemp("plugin"))
    assert (target / "tiny_axpy" / "kernel.py").is_file()
    return target


@pytest.fixture(scope="module")
def template_path(tmp_path_factory) -> Path:
    target = pip_install(TEMPLATE, tmp_path_factory.mktemp("template"))
    assert (target / "my_op" / "equivalence_matrix.toml").is_file()
    return target


@contextlib.contextmanager
def plugins_on_path(site: Path) -> Iterator[None]:
    """``site`` first on ``sys.path`` with the op registry's caches emptied (so its entry
    points are read again), as a process started with ``PYTHONPATH=site`` sees it; afterwards
    the path and the caches are as they were, and the modules imported from ``site`` are
    gone (modules of this package imported meanwhile stay: one copy of each class)."""
    saved = (list(sys.path), registry._EPS, dict(registry._LOADED), dict(registry._CLASHES))
    sys.path.insert(0, str(site))
    importlib.invalidate_caches()
    registry._EPS = None
    try:
        yield
    finally:
        sys.path[:] = saved[0]
        registry._EPS = saved[1]
        registry._CLASHES.clear()
        registry._CLASHES.update(saved[3])
        registry._LOADED.clear()
        registry._LOADED.update(saved[2])
        root = site.resolve()
        for name, module in list(sys.modules.items()):
            path = getattr(module, "__file__", None)
            if path and root in Path(path).resolve().parents:
                del sys.modules[name]
        importlib.invalidate_caches()


def test_plugin_op_runs_and_verifies(plugin_path: Path, tmp_path: Path, cli,
                                     cli_subprocess) -> None:
    r = cli_subprocess("cases", cwd=tmp_path, pythonpath=(plugin_path,))
    # both ops listed; the broken entry point is named on stderr (exit 1), hiding nothing
    assert "op tiny_axpy: z = alpha * x + y" in r.stdout and "axpy_tiles" in r.stdout
    assert "op moe_token_unpermute_with_ep_grad" in r.stdout
    assert "op moe_token_unpermute_with_ep: " in r.stdout
    assert r.returncode == 1
    assert r.stderr.count("\n") == 1 and "tiny_broken" in r.stderr
    assert "tiny_axpy.no_such_module:MODEL" in r.stderr and "tiny-axpy-op" in r.stderr

    with plugins_on_path(plugin_path):
        _plugin_commands(tmp_path, cli)


def _plugin_commands(tmp_path: Path, cli) -> None:
    # 200000 elements on ascend910b1's 48 cores: 25000 blocks of 8 -> 521 blocks (4168
    # elements) per core, so 48 cores (the last with 200000 - 47 * 4168 = 4104); tiles of
    # 2048 -> 3 per core
    r = cli("tiling", FIXTURE / "axpy_case.json", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    row = json.loads(r.stdout)
    assert row["tiling_data"] == {"totalLength": 200000, "blockLength": 4168,
                                  "tileLength": 2048}
    assert row["block_dim"] == 48

    out = tmp_path / "run"
    r = cli("run", "--case", "axpy_tiles", "--out", out, "--no-plot", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "golden z: exact (200000 elements)" in r.stdout
    assert "hazards: none" in r.stdout
    z = np.load(out / "outputs" / "z.npy")
    assert z.shape == (200000,) and z.dtype == np.float32

    r = cli("verify", "axpy_small", str(FIXTURE / "axpy_case.json"), "--mode",
            "timed", "--report", tmp_path / "v", "--no-progress", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "2 / 2 cases passed" in r.stdout

    # a case file naming the broken plug-in: exit 1, one line naming the entry point
    doc = json.loads((FIXTURE / "axpy_case.json").read_text())
    bad = tmp_path / "broken.json"
    bad.write_text(json.dumps({**doc, "op": "tiny_broken"}))
    r = cli("run", bad, "--out", tmp_path / "b", cwd=tmp_path)
    assert r.returncode == 1
    assert r.stderr.startswith("aicore-sim: error: op plug-in 'tiny_broken'")
    assert "ModuleNotFoundError" in r.stderr and r.stderr.count("\n") == 1
    assert not (tmp_path / "b").exists()


@pytest.mark.slow
def test_template_op_runs_verifies_and_passes_its_own_tests(template_path: Path,
                                                           tmp_path: Path, cli) -> None:
    with plugins_on_path(template_path):
        _template_commands(tmp_path, cli)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(template_path), str(REPO)]))
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-o", "addopts=", "-p",
                        "no:cacheprovider", str(TEMPLATE / "tests")], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:]
    assert "13 passed" in r.stdout


def _template_commands(tmp_path: Path, cli) -> None:
    r = cli("run", "--case", "my_op_small", "--platform", "tiny", "--out",
            tmp_path / "run", "--no-plot", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "golden y: exact (5000 elements)" in r.stdout

    # 2 dtypes x 2 sizes x 2 platforms, timed, bit-exact
    r = cli("verify", "--matrix", "my_op", "--report", tmp_path / "m",
            "--no-progress", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "8 / 8 cases passed" in r.stdout


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


def _dist(site: Path, name: str, entry_points: str) -> None:
    """A minimal installed distribution ``name`` in ``site`` with these entry points."""
    info = site / f"{name}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(entry_points)


def test_two_distributions_with_one_op_name_are_refused_naming_both(tmp_path: Path) -> None:
    for dist in ("pkg_a", "pkg_b"):
        _dist(tmp_path, dist, "[aicore_sim.ops]\nclash_op = nowhere:MODEL\n")
    with plugins_on_path(tmp_path):
        with pytest.raises(registry.OpLoadError, match=r"op 'clash_op' is provided by more "
                           r"than one installed distribution \(pkg_a, pkg_b\); uninstall "
                           r"all but one"):
            registry.get_op("clash_op")


def test_a_plugin_that_exits_while_imported_is_named(tmp_path: Path) -> None:
    (tmp_path / "exiting_op.py").write_text("import sys\nsys.exit(0)\n")
    _dist(tmp_path, "pkg_exit", "[aicore_sim.ops]\nexit_op = exiting_op:MODEL\n")
    with plugins_on_path(tmp_path):
        with pytest.raises(registry.OpLoadError, match=r"op plug-in 'exit_op' \(exiting_op:"
                           r"MODEL, distribution pkg_exit\) cannot be loaded: SystemExit: it "
                           r"exited while being imported"):
            registry.get_op("exit_op")


def test_a_broken_plugin_is_skipped_with_a_warning_naming_it(tmp_path: Path, capsys) -> None:
    _dist(tmp_path, "pkg_gone", "[aicore_sim.ops]\ngone_op = no_such_module_here:MODEL\n")
    with plugins_on_path(tmp_path):
        registry._SKIPPED.discard("gone_op")
        names = [m.name for m in registry.ops()]
    assert "gone_op" not in names and "moe_token_unpermute_with_ep_grad" in names
    err = capsys.readouterr().err
    assert err.startswith("aicore-sim: warning: op plug-in 'gone_op' (no_such_module_here:"
                          "MODEL, distribution pkg_gone) cannot be loaded: "
                          "ModuleNotFoundError: ")
    assert err.endswith("; skipped\n") and err.count("\n") == 1


def test_a_plugin_kernel_exception_fails_its_case_and_verify_goes_on(
        plugin_path: Path, tmp_path: Path, cli) -> None:
    site = tmp_path / "site"
    shutil.copytree(plugin_path, site)
    kernel = site / "tiny_axpy" / "kernel.py"
    text = kernel.read_text()
    hook = "        Muls(zLocal, xLocal, self.alpha, n)\n"
    assert hook in text
    kernel.write_text(text.replace(hook, "        if self.alpha == 3.0:\n"
                                         "            raise ValueError('alpha 3 refused')\n"
                                         + hook))
    golden = site / "tiny_axpy" / "golden.py"
    golden.write_text(golden.read_text().replace(
        "    return (x.astype", "    if alpha == 5.0:\n        raise KeyError('no golden for 5')\n"
        "    return (x.astype"))
    doc = json.loads((FIXTURE / "axpy_case.json").read_text())
    small = {**doc, "inputs": {k: {**v, "shape": [64]} for k, v in doc["inputs"].items()}}
    (tmp_path / "nogold.json").write_text(json.dumps({**small, "name": "nogold",
                                                      "attrs": {"alpha": 5.0}}))
    (tmp_path / "good.json").write_text(json.dumps({**small, "name": "good"}))
    (tmp_path / "bad.json").write_text(json.dumps({**small, "name": "bad",
                                                   "attrs": {"alpha": 3.0}}))
    with plugins_on_path(site):
        r = cli("verify", "bad.json", "good.json", "nogold.json", "--workers", "1",
                "--report", "v",
                "--no-progress", cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    assert r.stderr == ""
    report = json.loads((tmp_path / "v.json").read_text())
    bad, good, nogold = report["cases"]
    assert good["passed"] and not bad["passed"]
    # the error names the op's kernel line that raised, and the core (64 elements: one core)
    assert "ValueError" in bad["error"] and "alpha 3 refused" in bad["error"]
    assert "kernel.py:" in bad["error"] and "core0.veccore0" in bad["error"], bad["error"]
    # the golden's own exception: the op, its file and line (def on 9, the if 10, raise 11)
    assert nogold["error"] == ("KeyError in op tiny_axpy at golden.py:11 (golden): 'no golden "
                               "for 5'"), nogold["error"]
    assert "1 / 3 cases passed" in r.stdout

"""The import graph of ``aicore_sim/``: generic code names no operator, and has no cycles.

Read from the source (every ``import`` / ``from … import`` anywhere in a module, function-level
ones included), never by importing: operators reach the simulator only through the
``aicore_sim.ops`` entry points (``aicore_sim/ops/registry.py``).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "aicore_sim"


def _module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _imports(path: Path, root: Path = ROOT) -> set[str]:
    """Every module name ``path`` imports (``from a import b`` gives ``a`` and ``a.b``)."""
    name = _module_name(path, root)
    pkg = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                head = pkg.split(".")[: len(pkg.split(".")) - (node.level - 1)]
                base = ".".join(head + ([base] if base else []))
            out.add(base)
            out.update(f"{base}.{a.name}" for a in node.names)
    return out


def _graph() -> dict[str, set[str]]:
    files = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    return {m: {i for i in _imports(p) if i in files and i != m} for m, p in files.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_generic_module_imports_an_op_model() -> None:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        bad = sorted(i for i in _imports(path) if i == "op_models" or i.startswith("op_models."))
        if bad:
            found[str(path.relative_to(ROOT))] = bad
    assert found == {}


def test_the_reader_sees_imports_inside_functions(tmp_path) -> None:
    """The check can fail: a function-level import of an op model is found."""
    f = tmp_path / "aicore_sim" / "x.py"
    f.parent.mkdir()
    f.write_text("def g():\n    from op_models.some_op import api\n    return api\n\n\n"
                 "from .sweep import rows\n")
    assert _imports(f, tmp_path) == {"op_models.some_op", "op_models.some_op.api",
                                     "aicore_sim.sweep", "aicore_sim.sweep.rows"}


def test_import_graph_has_no_cycles() -> None:
    graph = _graph()
    assert "aicore_sim.sweep.rows" in graph["aicore_sim.sweep.report"]  # what broke run <-> report
    assert _cycles(graph) == []


def test_cycle_finder_finds_a_two_module_cycle() -> None:
    """The two cycles this graph once had (cli <-> sweep.cli_sweep, sweep.report <-> sweep.run)
    are what the finder reports on such a graph."""
    g = {"cli": {"cli_sweep", "errors"}, "cli_sweep": {"cli"}, "errors": set(),
         "report": {"run"}, "run": {"report", "rows"}, "rows": set()}
    assert _cycles(g) == [["cli", "cli_sweep"], ["report", "run"]]


# --- the layers (docs/layout.md): util <- sim <- everything else -------------------------------

LOWER = {"util": {"util"}, "sim": {"sim", "util"}}
"""What each base layer may import of ``aicore_sim``: itself and the layers below it."""

LAYER_EXCEPTIONS = {
    # Recording.compare() and the run's golden verdict: the recording reaches up to the
    # numeric standards (verify.compare) and the summary's golden table (views.summary), and
    # hands kernels GM_ADDR (ascendc.tensors). To be moved down when the pipeline splits.
    "aicore_sim.sim.recording": {
        "aicore_sim.ascendc.tensors", "aicore_sim.ascendc.tensors.GM_ADDR",
        "aicore_sim.verify.compare", "aicore_sim.verify.compare.OutputCompare",
        "aicore_sim.verify.compare.compare", "aicore_sim.views.summary",
        "aicore_sim.views.summary.compare_golden"},
    # the resource checks raise the simulator's ResourceError (sim/errors.py)
    "aicore_sim.util.resources": {"aicore_sim.sim.errors", "aicore_sim.sim.errors.ResourceError"},
}


def _layer_violations(graph_files: dict[str, Path], root: Path = ROOT) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for name, path in graph_files.items():
        parts = name.split(".")
        if len(parts) < 2 or parts[1] not in LOWER:
            continue
        bad = {i for i in _imports(path, root) if i.startswith("aicore_sim.")
               and i.split(".")[1] not in LOWER[parts[1]]}
        bad -= LAYER_EXCEPTIONS.get(name, set())
        if bad:
            found[name] = bad
    return found


def test_sim_and_util_import_nothing_above_them() -> None:
    files = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    assert "aicore_sim.sim.recording" in files and "aicore_sim.util.staging" in files
    assert _layer_violations(files) == {}
    # the exceptions are still needed (drop one when its import goes)
    for name, allowed in LAYER_EXCEPTIONS.items():
        assert allowed <= _imports(files[name]), name


def test_the_layer_check_can_fail(tmp_path) -> None:
    """A sim module importing the ops layer, or the facade, is found; util importing sim too."""
    (tmp_path / "aicore_sim" / "sim").mkdir(parents=True)
    (tmp_path / "aicore_sim" / "util").mkdir()
    a = tmp_path / "aicore_sim" / "sim" / "a.py"
    a.write_text("from aicore_sim.ops.opmodel import OpModel\nfrom aicore_sim import launch\n"
                 "from aicore_sim.util import staging\n")
    b = tmp_path / "aicore_sim" / "util" / "b.py"
    b.write_text("from aicore_sim.sim import isa\n")
    found = _layer_violations({"aicore_sim.sim.a": a, "aicore_sim.util.b": b}, tmp_path)
    assert found == {"aicore_sim.sim.a": {"aicore_sim.ops.opmodel",
                                          "aicore_sim.ops.opmodel.OpModel", "aicore_sim.launch"},
                     "aicore_sim.util.b": {"aicore_sim.sim", "aicore_sim.sim.isa"}}


# --- op_models: kernels see the Ascend C API only; no cycles -----------------------------------

OP_ROOT = ROOT / "op_models"

KERNEL_EXCEPTIONS = {
    # the port's element types looked up by name (aicore_sim.sim.dtypes through the facade):
    # aicore_sim.ascendc has no as_dtype of its own yet
    "op_models/moe_token_permute_with_ep/kernel_index_copy.py": {"aicore_sim.as_dtype"},
    "op_models/moe_token_permute_with_ep/kernel_mrgsort.py": {"aicore_sim.as_dtype"},
    "op_models/moe_token_permute_with_ep/kernel_sort.py": {"aicore_sim.as_dtype"},
    "op_models/moe_token_unpermute_with_ep_grad/kernel_base.py": {"aicore_sim.as_dtype"},
    # ... and the kernel's own failure (the C++ kernel's assert / trap)
    # (imported from sim/ itself: the facade's one import line would shift the port's lines,
    # and with them the sites of recorded streams)
    "op_models/moe_token_unpermute_with_ep/kernel_unpermute.py": {
        "aicore_sim.sim.dtypes", "aicore_sim.sim.dtypes.as_dtype",
        "aicore_sim.sim.errors", "aicore_sim.sim.errors.KernelError"},
}


def _kernel_violations(path: Path, root: Path = ROOT) -> set[str]:
    """What a kernel port imports besides ``aicore_sim.ascendc`` and kernel code: other
    ``kernel_*`` modules and the ``tiling`` module (its TilingData) of any op package."""
    bad = set()
    for i in _imports(path, root):
        parts = i.split(".")
        if parts[0] == "aicore_sim":
            if len(parts) > 1 and parts[1] != "ascendc":
                bad.add(i)
        elif parts[0] == "op_models":
            if len(parts) < 3 or not (parts[2].startswith("kernel_") or parts[2] == "tiling"):
                bad.add(i)
    return bad


def test_kernels_import_only_the_ascendc_api() -> None:
    kernels = sorted(OP_ROOT.glob("*/kernel_*.py"))
    assert len(kernels) >= 10
    found = {}
    for p in kernels:
        rel = p.relative_to(ROOT).as_posix()
        bad = _kernel_violations(p) - KERNEL_EXCEPTIONS.get(rel, set())
        if bad:
            found[rel] = sorted(bad)
    assert found == {}
    for rel, allowed in KERNEL_EXCEPTIONS.items():  # still needed
        assert allowed <= _kernel_violations(ROOT / rel), rel


def test_the_kernel_check_can_fail(tmp_path) -> None:
    f = tmp_path / "op_models" / "x" / "kernel_y.py"
    f.parent.mkdir(parents=True)
    f.write_text("from aicore_sim.ascendc import TPipe\nfrom aicore_sim.sim.isa import Pipe\n"
                 "from op_models.x.tiling import TilingData\nfrom op_models.x.golden import g\n")
    assert _kernel_violations(f, tmp_path) == {"aicore_sim.sim.isa", "aicore_sim.sim.isa.Pipe",
                                     "op_models.x.golden", "op_models.x.golden.g"}


def _submodule_graph(files: dict[str, Path]) -> dict[str, set[str]]:
    """As :func:`_graph`, but ``from pkg import submodule`` inside ``pkg`` is an edge to the
    submodule only (the package is already initialising: no cycle through its __init__)."""
    graph = {}
    for m, p in files.items():
        imps = {i for i in _imports(p) if i in files and i != m}
        graph[m] = {i for i in imps if not (m.startswith(i + ".")
                                            and any(j.startswith(i + ".") for j in imps))}
    return graph


OP_CYCLES: list[list[str]] = []  # none: api imports no model, tiling_space no model


def _operator_files(root: Path = ROOT) -> dict[str, Path]:
    """The modules of ``op_models/`` less each operator's tests (``op_models/<op>/tests/``):
    tests are no part of an operator - they import it, it never imports them, and the wheel
    leaves them out (pyproject.toml)."""
    op_root = root / "op_models"
    return {_module_name(p, root): p for p in op_root.rglob("*.py")
            if "tests" not in p.relative_to(op_root).parts}


def test_op_models_have_no_import_cycles() -> None:
    files = _operator_files()
    assert "op_models.moe_token_unpermute_with_ep.tests.test_kernel" not in files
    graph = _submodule_graph(files)
    assert "op_models.moe_token_unpermute_with_ep.kernel_unpermute" in graph
    assert _cycles(graph) == OP_CYCLES


def _test_imports(files: dict[str, Path], root: Path = ROOT) -> dict[str, list[str]]:
    """What operator modules import of test code (``tests/``, an op's ``tests/``, conftest)."""
    found = {}
    for name, path in files.items():
        bad = sorted(i for i in _imports(path, root)
                     if "tests" in i.split(".") or i.split(".")[-1] == "conftest")
        if bad:
            found[name] = bad
    return found


def test_operators_import_no_test_code() -> None:
    """An operator importing a test module would work from the source tree and break once
    installed from the wheel, which ships no tests."""
    files = _operator_files()
    assert "op_models.moe_common" in files
    assert _test_imports(files) == {}


def test_the_test_code_check_can_fail(tmp_path) -> None:
    pkg = tmp_path / "op_models" / "x"
    (pkg / "tests").mkdir(parents=True)
    (pkg / "tests" / "test_api.py").write_text("from op_models.x import api\n")
    (pkg / "api.py").write_text("from op_models.x.tests.test_api import helper\n"
                                "from tests.conftest import TINY\n")
    files = _operator_files(tmp_path)
    assert sorted(files) == ["op_models.x.api"]
    assert _test_imports(files, tmp_path) == {"op_models.x.api": [
        "op_models.x.tests.test_api", "op_models.x.tests.test_api.helper", "tests.conftest",
        "tests.conftest.TINY"]}

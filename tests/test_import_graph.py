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

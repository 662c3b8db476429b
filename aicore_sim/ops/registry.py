"""The operators this installation can simulate, found through entry points.

Step of the flow: before the *case*: which :class:`~aicore_sim.ops.opmodel.OpModel` a case file's
``"op"``, a bundled case name, a matrix or a sweep spec refers to.

Operators register in the ``aicore_sim.ops`` entry-point group of any installed distribution,
name = the op's case-file name, value = ``module:object`` of its model::

    [project.entry-points."aicore_sim.ops"]
    my_op = "my_package.model:MODEL"

The bundled operators register the same way in this project's ``pyproject.toml`` (read
directly when the package runs from its source tree, so a newly added op is seen before
``pip install -e`` refreshes the metadata). Names are read without importing anything; a model
is imported when first asked for.

The *default* operator (used where a command needs one and none is named: a sweep spec
without ``op``, ``verify --matrix`` without a name) is the one whose bundled cases hold
:data:`DEFAULT_CASE` (what ``aicore-sim run`` runs without arguments), else the first name.

Errors: an unknown name is an :class:`UnknownOpError` (a bad input: exit 2, naming the field
and the known ops); a plug-in that cannot be imported or lacks protocol members is an
:class:`OpLoadError` naming the entry point, its distribution and what is wrong.
"""

from __future__ import annotations

import importlib.metadata as md
from collections.abc import Iterator
from typing import Any

from aicore_sim.ops.opmodel import REQUIRED_MEMBERS, OpModel
from aicore_sim.sim.errors import InputError, SimError

__all__ = [
    "DEFAULT_CASE",
    "GROUP",
    "OpLoadError",
    "UnknownOpError",
    "default_op",
    "find_case",
    "get_op",
    "op_names",
    "ops",
    "register",
]

GROUP = "aicore_sim.ops"
DEFAULT_CASE = "tiny"
_DIST = "aicore-sim"

_EXTRA: dict[str, OpModel] = {}  # registered in-process (register())
_LOADED: dict[str, OpModel] = {}
_EPS: dict[str, md.EntryPoint] | None = None
_CLASHES: dict[str, list[str]] = {}  # op name -> the distributions that each provide it


class UnknownOpError(InputError):
    """No installed operator has this name (a bad input)."""


class OpLoadError(SimError):
    """An installed operator plug-in cannot be loaded or is not an OpModel."""


def dist_name(ep: md.EntryPoint) -> str:
    """The distribution an entry point comes from (this project's source tree if none)."""
    dist = getattr(ep, "dist", None)
    return dist.name if dist is not None else f"{_DIST} (source tree)"



def source_tree_entry_points(group: str) -> list[md.EntryPoint] | None:
    """This project's own entry points of ``group`` from its ``pyproject.toml`` when the
    package runs from a source tree (a checkout, an editable install): the file is the truth
    there, even before ``pip install -e`` has refreshed the metadata; ``None`` for an
    installed wheel."""
    import tomllib
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "pyproject.toml"
    try:
        doc = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError):
        return None
    project = doc.get("project", {})
    if project.get("name") != _DIST:
        return None
    table = project.get("entry-points", {}).get(group, {})
    return [md.EntryPoint(name, value, group) for name, value in table.items()]


def _source_tree_eps() -> list[md.EntryPoint] | None:
    return source_tree_entry_points(GROUP)


def _entry_points() -> dict[str, md.EntryPoint]:
    """Entry points by op name: this project's first (in pyproject order from a source tree,
    else by name), then other distributions' (by name)."""
    global _EPS
    if _EPS is None:
        eps = list(md.entry_points(group=GROUP))
        installed_own = [e for e in eps if dist_name(e).replace("_", "-").lower() == _DIST]
        own = _source_tree_eps()  # pyproject order
        if own is None:
            own = sorted(installed_own, key=lambda e: e.name)
        rest = sorted((e for e in eps if e not in installed_own), key=lambda e: e.name)
        out: dict[str, md.EntryPoint] = {}
        _CLASHES.clear()
        for e in own + rest:
            first = out.setdefault(e.name, e)  # the same distribution twice on the path: one
            if first is not e and dist_name(first) != dist_name(e) and e not in installed_own:
                _CLASHES.setdefault(e.name, [dist_name(first)]).append(dist_name(e))
        _EPS = out
    return _EPS


def op_names() -> list[str]:
    """Names of every known operator (registered order; nothing is imported)."""
    return [*_entry_points(), *(n for n in _EXTRA if n not in _entry_points())]


def _check(model: Any, where: str, name: str) -> OpModel:
    missing = [m for m in REQUIRED_MEMBERS if not hasattr(model, m)]
    if missing:
        raise OpLoadError(f"op plug-in {where}: the object is not an OpModel (missing "
                          f"{', '.join(missing)}; see aicore_sim/ops/opmodel.py)")
    if model.name != name:
        raise OpLoadError(f"op plug-in {where}: its model is named {model.name!r}, the entry "
                          f"point {name!r}; they must be the same")
    return model


def get_op(name: Any, field: str = "op") -> OpModel:
    """The model of operator ``name``; ``field`` is what the error names (``op``,
    ``sweep.op`` ...)."""
    if isinstance(name, str) and name in _LOADED:
        return _LOADED[name]
    if isinstance(name, str) and name in _EXTRA:
        return _EXTRA[name]
    eps = _entry_points()
    if not isinstance(name, str) or name not in eps:
        import json

        raise UnknownOpError(f"{field}: unknown operator {json.dumps(name)}; expected one of "
                             f"{op_names()}")
    if name in _CLASHES:  # neither may silently win
        raise OpLoadError(f"op {name!r} is provided by more than one installed distribution "
                          f"({', '.join(_CLASHES[name])}); uninstall all but one")
    ep = eps[name]
    where = f"{name!r} ({ep.value}, distribution {dist_name(ep)})"
    try:
        obj = ep.load()
    except (Exception, SystemExit) as e:  # noqa: BLE001 - any failure of a plug-in's import
        how = "it exited while being imported" if isinstance(e, SystemExit) else e
        raise OpLoadError(f"op plug-in {where} cannot be loaded: {type(e).__name__}: {how}"
                          ) from None
    model = _check(obj, where, name)
    _LOADED[name] = model
    return model


def register(model: OpModel) -> None:
    """Make ``model`` known in this process (for a model not installed as a distribution)."""
    _EXTRA[model.name] = _check(model, repr(model.name), model.name)


_SKIPPED: set[str] = set()  # broken plug-ins already warned about in this process


def ops() -> Iterator[OpModel]:
    """Every loadable operator's model, in :func:`op_names` order. A plug-in that cannot be
    loaded (its import fails or exits, it lacks members, two distributions provide it) is
    skipped with one warning line on stderr naming it and what failed; asked for by name
    (:func:`get_op`) it is an error."""
    for n in op_names():
        try:
            yield get_op(n)
        except OpLoadError as e:
            if n not in _SKIPPED:
                _SKIPPED.add(n)
                import sys

                print(f"aicore-sim: warning: {e}; skipped", file=sys.stderr)


def default_op() -> OpModel:
    """The operator bundling :data:`DEFAULT_CASE`, else the first (see the module docstring)."""
    names = op_names()
    if not names:
        raise UnknownOpError("op: no operator is installed (entry-point group aicore_sim.ops)")
    try:
        return find_case(DEFAULT_CASE)[0]
    except UnknownOpError:
        return get_op(names[0])


def find_case(name: str, field: str = "--case") -> tuple[OpModel, Any]:
    """The operator owning bundled case ``name``, and the case. A broken plug-in does not hide
    the other ops' cases; it is named only when no loadable op has the case."""
    known: list[str] = []
    broken: OpLoadError | None = None
    for op in op_names():
        try:
            model = get_op(op)
        except OpLoadError as e:
            broken = broken or e
            continue
        cases = model.cases()
        if name in cases:
            return model, cases[name]
        known += list(cases)
    if broken is not None:
        raise broken
    raise UnknownOpError(f"{field} {name}: unknown case {name!r}; valid names: "
                         f"{', '.join(known)}")

"""The validation suites this installation holds, found through entry points, and the
scenarios a command line selects from them.

Step of the flow: before the runs of ``aicore-sim validate``: which :class:`Suite` objects
exist and which of their :class:`Scenario` objects the user named.

Suites register in the ``aicore_sim.validation`` entry-point group of any installed
distribution, value = ``module:object`` of the :class:`Suite`::

    [project.entry-points."aicore_sim.validation"]
    board_samples = "op_models.board_samples.suite:SUITE"

As in :mod:`aicore_sim.ops.registry`, this project's own entry points are read from its
``pyproject.toml`` when the package runs from its source tree (the file is the truth there,
before ``pip install -e`` refreshes the metadata).

Errors: a name that selects nothing is an :class:`UnknownScenarioError` (a bad input: exit 2,
naming it and listing the known samples); a suite that cannot be imported, is not a
:class:`Suite`, or is inconsistent (a duplicated scenario name, an unknown column, a step or a
``fitted`` entry naming an unknown scenario) is a :class:`SuiteLoadError` (exit 1, naming the
entry point).
"""

from __future__ import annotations

import fnmatch
import importlib.metadata as md
from collections.abc import Iterable, Sequence

from aicore_sim.ops.registry import dist_name as _dist_name
from aicore_sim.ops.registry import source_tree_entry_points
from aicore_sim.sim.errors import SimError, UsageError
from aicore_sim.validate.suite import COLUMNS, Scenario, Step, Suite

__all__ = [
    "GROUP",
    "SuiteLoadError",
    "UnknownScenarioError",
    "check_suite",
    "find_suites",
    "select",
    "steps_for",
]

GROUP = "aicore_sim.validation"
_DIST = "aicore-sim"


class UnknownScenarioError(UsageError):
    """A scenario name, sample or pattern that selects nothing (a bad input)."""


class SuiteLoadError(SimError):
    """An installed validation suite cannot be loaded or is inconsistent."""


def _source_tree_eps() -> list[md.EntryPoint] | None:
    """This project's own suites from its ``pyproject.toml`` when running from a source tree
    (``None`` for an installed wheel): the registry's rule."""
    return source_tree_entry_points(GROUP)


def entry_points() -> list[md.EntryPoint]:
    """The suites' entry points: this project's first (pyproject order from a source tree),
    then other distributions' by name; one per name."""
    eps = list(md.entry_points(group=GROUP))
    installed_own = [e for e in eps if _dist_name(e).replace("_", "-").lower() == _DIST]
    own = _source_tree_eps()
    if own is None:
        own = sorted(installed_own, key=lambda e: e.name)
    rest = sorted((e for e in eps if e not in installed_own), key=lambda e: e.name)
    out: dict[str, md.EntryPoint] = {}
    for e in own + rest:
        out.setdefault(e.name, e)
    return list(out.values())


def check_suite(suite: Suite) -> list[str]:
    """What is inconsistent in ``suite`` (empty when nothing is): duplicated scenario names,
    board figures of unknown columns or in the wrong unit, steps naming unknown scenarios or
    columns, a scale outside (0, 1], a fitted scenario that is unknown or names no
    parameter."""
    problems: list[str] = []
    names: set[str] = set()
    for sc in suite.scenarios:
        if sc.name in names:
            problems.append(f"scenario {sc.name!r} is listed twice")
        names.add(sc.name)
        if not 0 < sc.scale <= 1:
            problems.append(f"scenario {sc.name!r}: scale {sc.scale} is not in (0, 1]")
        seen: set[str] = set()
        for bv in sc.board:
            if bv.column not in COLUMNS:
                problems.append(f"scenario {sc.name!r}: unknown column {bv.column!r} "
                                f"(known: {', '.join(COLUMNS)})")
            elif bv.unit != COLUMNS[bv.column][1]:
                problems.append(f"scenario {sc.name!r}: {bv.column} is in "
                                f"{COLUMNS[bv.column][1]}, not {bv.unit}")
            if bv.column in seen:
                problems.append(f"scenario {sc.name!r}: two board figures for {bv.column}")
            seen.add(bv.column)
    for st in suite.steps:
        for which in (st.baseline, st.optimised):
            if which not in names:
                problems.append(f"step {st.name!r}: unknown scenario {which!r}")
        if st.column not in COLUMNS:
            problems.append(f"step {st.name!r}: unknown column {st.column!r}")
    for name, params in suite.fitted.items():
        if name not in names:
            problems.append(f"fitted: unknown scenario {name!r}")
        if isinstance(params, str) or not params or not all(
                isinstance(p, str) and p for p in params):
            problems.append(f"fitted: scenario {name!r} names no parameter (a tuple of "
                            "non-empty strings)")
    return problems


def _checked(suite: object, where: str) -> Suite:
    if not isinstance(suite, Suite):
        raise SuiteLoadError(f"validation suite {where}: the object is a "
                             f"{type(suite).__name__}, not an aicore_sim.validate.suite.Suite")
    problems = check_suite(suite)
    if problems:
        raise SuiteLoadError(f"validation suite {where}: {'; '.join(problems)}")
    return suite


def find_suites(only: str | None = None) -> list[Suite]:
    """Every installed suite, loaded and checked (entry-point order); with ``only``, the one
    whose entry point or suite name it is (:class:`UsageError` when none is)."""
    eps = entry_points()
    if only is not None:
        chosen = [e for e in eps if e.name == only]
        if not chosen:  # perhaps the Suite's own name differs from its entry point's
            loaded = [s for s in (_load(e) for e in eps) if s.name == only]
            if loaded:
                return loaded
            raise UsageError(f"--suite {only}: no such validation suite; installed: "
                             f"{', '.join(e.name for e in eps) or 'none'}")
        eps = chosen
    return [_load(e) for e in eps]


def _load(ep: md.EntryPoint) -> Suite:
    where = f"{ep.name!r} ({ep.value}, distribution {_dist_name(ep)})"
    try:
        obj = ep.load()
    except Exception as e:  # noqa: BLE001 - any failure of a plug-in's import is named
        raise SuiteLoadError(f"validation suite {where} cannot be loaded: "
                             f"{type(e).__name__}: {e}") from None
    return _checked(obj, where)


def all_scenarios(suites: Iterable[Suite]) -> list[tuple[Suite, Scenario]]:
    """(suite, scenario) of every scenario, in suite then scenario order; a name that two
    suites both use is a :class:`SuiteLoadError`."""
    out: list[tuple[Suite, Scenario]] = []
    owner: dict[str, str] = {}
    for su in suites:
        for sc in su.scenarios:
            if sc.name in owner:
                raise SuiteLoadError(f"scenario {sc.name!r} is in suites {owner[sc.name]!r} "
                                     f"and {su.name!r}; names must be unique")
            owner[sc.name] = su.name
            out.append((su, sc))
    return out


def select(suites: Sequence[Suite], names: Sequence[str]) -> list[tuple[Suite, Scenario]]:
    """The scenarios ``names`` select (all of them when ``names`` is empty), in suite order.

    Each NAME matches a scenario by its exact name, by its sample name, or as a shell glob
    (:mod:`fnmatch`) over scenario names; a NAME that matches nothing is an
    :class:`UnknownScenarioError` naming it and the known samples."""
    every = all_scenarios(suites)
    if not names:
        return every
    picked: set[str] = set()
    for name in names:
        hit = [sc.name for _, sc in every
               if sc.name == name or sc.sample == name or fnmatch.fnmatchcase(sc.name, name)]
        if not hit:
            samples = list(dict.fromkeys(sc.sample for _, sc in every))
            raise UnknownScenarioError(
                f"validate: {name!r} is no scenario, sample or pattern of the installed "
                f"suites; known samples: {', '.join(samples) or 'none'} ('aicore-sim validate "
                f"--list' lists the scenarios)")
        picked.update(hit)
    return [(su, sc) for su, sc in every if sc.name in picked]


def steps_for(suites: Iterable[Suite], names: Iterable[str]) -> list[Step]:
    """The steps of ``suites`` whose baseline and optimised scenarios are both in ``names``."""
    have = set(names)
    return [st for su in suites for st in su.steps
            if st.baseline in have and st.optimised in have]

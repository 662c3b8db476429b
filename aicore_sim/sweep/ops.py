"""The tiling spaces sweeps explore, one per operator (step: sweep set-up).

The sweep machinery knows no operator. Each :class:`~aicore_sim.opmodel.OpModel` names its
*tiling-space module* (``OpModel.tiling_space``, an import path) holding:

``NAME``, ``CASE_AXES`` (dict), optionally ``CASE_AXIS_TYPES`` (axis -> ``int`` / ``str``,
default ``str``), ``KNOBS`` (tuple of tiling fields a sweep may override),
``STRATEGIES`` (dict name -> description), ``resolve_case(value, axes)``, ``case_columns(case)``,
``plan(case, platform, strategy, knobs)`` -> an object with ``feasible``, ``violations``,
``tiling_dict()``, ``tiling``, ``tiling_key``, ``block_dim``, ``ub_bytes``, ``record_key()``,
and ``search_space(case, platform)`` -> list of knob dicts. A point runs through the op's one
call path (:func:`launch`, :func:`verify`: :func:`aicore_sim.opmodel.call`,
``Recording.compare``) unless the module has ``launch`` / ``verify`` functions of its own (same
arguments, after the module).

Operators are found by name through :mod:`aicore_sim.registry` (entry points), so worker
processes (local or on a Dask cluster) find the same ones; :func:`register_op` adds a
tiling-space module under a name in this process, and a sweep spec may also name a module by
its import path.
"""

from __future__ import annotations

import functools
import importlib
from types import ModuleType
from typing import Any

_EXTRA: dict[str, str] = {}

_REQUIRED = ("CASE_AXES", "KNOBS", "STRATEGIES", "resolve_case", "case_columns", "plan",
             "search_space")


def register_op(name: str, module: str) -> None:
    """Make ``name`` refer to the tiling-space module at import path ``module``."""
    _EXTRA[name] = module


def op_names() -> list[str]:
    """Names of the operators that have a tiling space (nothing is imported for names)."""
    from aicore_sim.registry import op_names as all_names

    return sorted({*all_names(), *_EXTRA})


def default_op_name() -> str:
    """The op a sweep explores when none is named (:func:`aicore_sim.registry.default_op`)."""
    from aicore_sim.registry import default_op

    return default_op().name


def op_for_case(value: object) -> str:
    """The op a sweep or search of case ``value`` explores when none is named: the op whose
    bundled cases hold that name, the ``op`` of a case file, else the default op."""

    from aicore_sim import textinput
    from aicore_sim.registry import UnknownOpError, find_case

    text = str(value)
    if text.endswith(".json") or "/" in text:
        try:
            op = textinput.loads_json(textinput.read_document(text)).get("op")
        except (OSError, ValueError, AttributeError):
            op = None
        return op if isinstance(op, str) else default_op_name()
    try:
        return find_case(text)[0].name
    except UnknownOpError:
        return default_op_name()


def _module_path(name: str) -> str:
    from aicore_sim.registry import UnknownOpError, get_op

    if name in _EXTRA:
        return _EXTRA[name]
    try:
        model = get_op(name)
    except UnknownOpError:
        return name  # an import path
    if not model.tiling_space:
        raise ValueError(f"op {name!r} has no tiling space: it cannot be swept or searched")
    return model.tiling_space


def get_op(name: str) -> ModuleType:
    """The tiling-space module of operator ``name`` (a registered name or an import path)."""
    path = _module_path(name)
    try:
        mod = importlib.import_module(path)
    except ImportError as e:
        raise ValueError(f"op {name!r}: cannot import its tiling-space module {path!r} ({e}); "
                         f"registered ops: {', '.join(op_names())}") from None
    missing = [a for a in _REQUIRED if not hasattr(mod, a)]
    if missing:
        raise ValueError(f"op {name!r}: module {path} lacks {', '.join(missing)}")
    return mod


def op_model_name(name: str) -> str | None:
    """The registered op a sweep's ``op`` refers to (``None`` for a bare module path)."""
    from aicore_sim.registry import op_names as all_names

    if name in all_names():
        return name
    mod = get_op(name)
    n = getattr(mod, "NAME", None)
    return n if n in all_names() else None


@functools.lru_cache(maxsize=2)  # a sweep records many tilings of one case
def _case_call(name: str, case: Any, seed: int | None) -> tuple[Any, dict, dict]:
    """The op model named ``name``, the case's inputs for ``seed`` and its attributes."""
    from aicore_sim.registry import get_op as get_model

    model = get_model(name)
    return model, model.case_inputs(case, seed), model.case_specs(case)[1]


def launch(op: ModuleType, case: Any, platform: Any, plan: Any, mode: str = "timing-only",
           races: bool = False, seed: int | None = None) -> Any:
    """The :class:`~aicore_sim.recording.Recording` of ``case`` with ``plan``'s tiling, through
    the op's call path (op ``op.NAME``)."""
    if hasattr(op, "launch"):
        return op.launch(case, platform, plan, mode=mode, races=races, seed=seed)
    from aicore_sim.opmodel import call

    model, inputs, attrs = _case_call(op.NAME, case, seed)
    return call(model, inputs, attrs, platform, mode=mode, races=races,
                tiling=(plan.tiling, plan.tiling_key, plan.block_dim))[1]


def verify(op: ModuleType, case: Any, platform: Any, plan: Any, seed: int | None = None
           ) -> dict[str, Any]:
    """A timed run with numerics compared bit for bit with the golden of this tiling:
    ``status`` (``verified`` / ``mismatch``), ``detail`` and ``cycles``."""
    if hasattr(op, "verify"):
        return op.verify(case, platform, plan, seed=seed)
    rec = launch(op, case, platform, plan, mode="timed", seed=seed)
    cmp, hz = rec.compare(), sorted({h.kind for h in rec.hazards})
    exact = all(v.get("exact", False) for v in cmp.values())
    detail = "; ".join(f"{k}: {'exact' if v.get('exact') else v}" for k, v in cmp.items())
    return {"status": "verified" if exact and not hz else "mismatch",
            "detail": detail + (f"; hazards: {', '.join(hz)}" if hz else ""), "cycles": rec.cycles}

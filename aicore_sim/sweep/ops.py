"""The tiling spaces sweeps explore, found by operator name (step: sweep set-up).

The sweep machinery knows no operator: it asks :func:`get_op` for the
:class:`~aicore_sim.ops.tilingspace.TilingSpace` of the ``op`` a sweep, search or calibration names
(``OpModel.tiling_space``; that module documents what a space holds). Operators are found by
name through :mod:`aicore_sim.ops.registry` (entry points), so worker processes (local or on a Dask
cluster) find the same ones; :func:`register_op` adds a tiling space under a name in this
process, and a sweep's ``op`` may also be the import path of one: ``package.module`` (its
``TILING_SPACE``) or ``package.module:object``.
"""

from __future__ import annotations

import importlib

from aicore_sim.ops.tilingspace import TilingSpace

_EXTRA: dict[str, TilingSpace | str] = {}


def register_op(name: str, space: TilingSpace | str) -> None:
    """Make ``name`` refer to tiling space ``space`` (or to the one at that import path)."""
    _EXTRA[name] = space


def op_names() -> list[str]:
    """Names of the operators that have a tiling space (nothing is imported for names)."""
    from aicore_sim.ops.registry import op_names as all_names

    return sorted({*all_names(), *_EXTRA})


def default_op_name() -> str:
    """The op a sweep explores when none is named (:func:`aicore_sim.ops.registry.default_op`)."""
    from aicore_sim.ops.registry import default_op

    return default_op().name


def op_for_case(value: object) -> str:
    """The op a sweep or search of case ``value`` explores when none is named: the op whose
    bundled cases hold that name, the ``op`` of a case file, else the default op."""

    from aicore_sim.ops.registry import UnknownOpError, find_case
    from aicore_sim.util import textinput

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


def get_op(name: str) -> TilingSpace:
    """The tiling space of operator ``name`` (a registered name or an import path)."""
    from aicore_sim.ops.registry import UnknownOpError
    from aicore_sim.ops.registry import get_op as get_model

    space = _EXTRA.get(name)
    if space is None:
        try:
            model = get_model(name)
        except UnknownOpError:
            space = name  # an import path
        else:
            space = getattr(model, "tiling_space", None)
            if space is None:
                raise ValueError(f"op {name!r} has no tiling space: it cannot be swept or "
                                 "searched")
    return _imported(name, space) if isinstance(space, str) else space


def _imported(name: str, path: str) -> TilingSpace:
    module, _, attr = path.partition(":")
    try:
        mod = importlib.import_module(module)
    except ImportError as e:
        raise ValueError(f"op {name!r}: cannot import its tiling-space module {module!r} ({e}); "
                         f"registered ops: {', '.join(op_names())}") from None
    space = getattr(mod, attr or "TILING_SPACE", None)
    if not isinstance(space, TilingSpace):
        raise ValueError(f"op {name!r}: module {module} lacks {attr or 'TILING_SPACE'} "
                         "(a TilingSpace)")
    return space

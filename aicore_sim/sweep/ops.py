"""Registry of operators a sweep can explore (step: sweep set-up).

The sweep machinery knows no operator. Each operator model provides a *tiling-space module*
(see ``op_models/moe_token_unpermute_with_ep_grad/tiling_space.py``) with:

``NAME``, ``CASE_AXES`` (dict), ``KNOBS`` (tuple of tiling fields a sweep may override),
``STRATEGIES`` (dict name -> description), ``resolve_case(value, axes)``, ``case_columns(case)``,
``plan(case, platform, strategy, knobs)`` -> an object with ``feasible``, ``violations``,
``tiling_dict()``, ``tiling_key``, ``block_dim``, ``ub_bytes``, ``record_key()``,
``launch(case, platform, plan, mode, races, seed)`` -> RunResult,
``verify(case, platform, plan, seed)`` -> dict with ``status`` and ``detail``, and
``search_space(case, platform)`` -> list of knob dicts.

Modules are named by import path so that worker processes (local or on a Dask cluster) import
them by name; an operator is registered with :func:`register_op` or named in a sweep spec by
its module path.
"""

from __future__ import annotations

import importlib
from types import ModuleType

_REGISTRY: dict[str, str] = {
    "moe_token_unpermute_with_ep_grad":
        "op_models.moe_token_unpermute_with_ep_grad.tiling_space",
}

DEFAULT_OP = "moe_token_unpermute_with_ep_grad"

_REQUIRED = ("CASE_AXES", "KNOBS", "STRATEGIES", "resolve_case", "case_columns", "plan",
             "launch", "verify", "search_space")


def register_op(name: str, module: str) -> None:
    """Make ``name`` refer to the tiling-space module at import path ``module``."""
    _REGISTRY[name] = module


def op_names() -> list[str]:
    return sorted(_REGISTRY)


def get_op(name: str) -> ModuleType:
    """The tiling-space module of operator ``name`` (a registered name or an import path)."""
    path = _REGISTRY.get(name, name)
    try:
        mod = importlib.import_module(path)
    except ImportError as e:
        raise ValueError(f"op {name!r}: cannot import its tiling-space module {path!r} ({e}); "
                         f"registered ops: {', '.join(op_names())}") from None
    missing = [a for a in _REQUIRED if not hasattr(mod, a)]
    if missing:
        raise ValueError(f"op {name!r}: module {path} lacks {', '.join(missing)}")
    return mod

"""aicore-sim: a cycle-approximate simulator of the Ascend AICore vector core.

The facade: :data:`__all__` is the public API an operator author and a Python user import
(``from aicore_sim import OpModelBase, TensorSpec, launch, load_platform``); kernel ports import
:mod:`aicore_sim.ascendc` and host code :mod:`aicore_sim.ascendc.host`. The layers under it
(``docs/layout.md``): :mod:`aicore_sim.util` (base), :mod:`aicore_sim.sim` (the simulator core),
:mod:`aicore_sim.ops` (the operator contract), :mod:`aicore_sim.views` (readers of a trace), and
the front ends (``cli``, ``verify``, ``sweep``, ``validate``, ``correlate``, ``export``).

Names are resolved on first use (PEP 562): importing the package costs nothing, so the command
line (``aicore_sim.launcher``), which imports only what a command needs, stays as fast.
"""

from __future__ import annotations

import importlib

# public name -> the module defining it (a module itself when the name is the module's own)
_WHERE = {
    # the operator contract (aicore_sim/ops/)
    "OpModel": "aicore_sim.ops.opmodel",
    "OpModelBase": "aicore_sim.ops.opmodel",
    "TensorSpec": "aicore_sim.ops.opmodel",
    "AttrSpec": "aicore_sim.ops.opmodel",
    "Spec": "aicore_sim.ops.opmodel",
    "PreparedCall": "aicore_sim.ops.opmodel",
    "KernelLaunch": "aicore_sim.ops.opmodel",
    "call": "aicore_sim.ops.opmodel",
    "launch_tensors": "aicore_sim.ops.opmodel",
    "op_function": "aicore_sim.ops.opmodel",
    "TilingSpace": "aicore_sim.ops.tilingspace",
    "Plan": "aicore_sim.ops.tilingspace",
    "get_op": "aicore_sim.ops.registry",
    "find_case": "aicore_sim.ops.registry",
    "op_names": "aicore_sim.ops.registry",
    "load_case": "aicore_sim.ops.casefile",
    # running a kernel (aicore_sim/sim/)
    "Recording": "aicore_sim.sim.recording",
    "RunResult": "aicore_sim.sim.recording",
    "launch": "aicore_sim.sim.recording",
    "MODES": "aicore_sim.sim.recording",
    "Platform": "aicore_sim.sim.platform",
    "load_platform": "aicore_sim.sim.platform",
    "list_presets": "aicore_sim.sim.platform",
    "as_dtype": "aicore_sim.sim.dtypes",
    "dtype_name": "aicore_sim.sim.dtypes",
    "KernelSource": "aicore_sim.cfront",
    # the errors (aicore_sim/sim/errors.py)
    "SimError": "aicore_sim.sim.errors",
    "InputError": "aicore_sim.sim.errors",
    "UsageError": "aicore_sim.sim.errors",
    "PlatformError": "aicore_sim.sim.errors",
    "ResourceError": "aicore_sim.sim.errors",
    "UBOverflowError": "aicore_sim.sim.errors",
    "OutOfBoundsError": "aicore_sim.sim.errors",
    "DeadlockError": "aicore_sim.sim.errors",
    "EventIdError": "aicore_sim.sim.errors",
    "KernelError": "aicore_sim.sim.errors",
    # modules an operator uses by name: dtypes (bfloat16 and friends), schema (axis rules)
    "dtypes": "aicore_sim.sim.dtypes",
    "schema": "aicore_sim.util.schema",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str):
    where = _WHERE.get(name)
    if where is None:
        # not ours: ``from aicore_sim import ascendc`` then imports the sub-package
        raise AttributeError(f"module 'aicore_sim' has no attribute {name!r}")
    module = importlib.import_module(where)
    value = module if where.rpartition(".")[2] == name else getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


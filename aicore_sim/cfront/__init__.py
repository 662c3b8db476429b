"""The C++ front end: a kernel's own Ascend C sources, compiled against aicore-sim's shim.

``KernelSource`` names the sources; ``Recording(..., kernel_source=...)`` (the bundled ops'
``--kernel-src``) runs them in place of the Python port; every Ascend C call the compiled
kernel makes crosses one C ABI (``abi``) into :mod:`aicore_sim.ascendc`, which records,
checks and computes as for a Python port. ``build`` compiles and caches, ``tiling_header``
reads the op's tiling struct, ``kernel`` runs one core's copy.
"""

from aicore_sim.cfront.build import CompileError, NoCompilerError
from aicore_sim.cfront.kernel import CxxKernel, KernelCrashError, KernelSource

__all__ = ["CompileError", "CxxKernel", "KernelCrashError", "KernelSource", "NoCompilerError"]

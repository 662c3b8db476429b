"""The record pass's turns (``aicore_sim/sim/phases.py``): how a core's failure reaches the
caller."""

from __future__ import annotations

import numpy as np
import pytest

from aicore_sim import KernelError, launch
from aicore_sim.ascendc import GetBlockIdx
from tests.conftest import TINY


def test_a_kernels_own_exception_is_a_kernel_error_naming_core_and_line() -> None:
    """A plug-in port's bug (here a ZeroDivisionError on core1.veccore0) is the kernel's failure - a
    KernelError naming the core and the kernel's line - not an internal error of the
    simulator."""
    def kernel(x):
        if GetBlockIdx() == 1:
            return 1 // 0
        return None

    line = kernel.__code__.co_firstlineno + 2
    with pytest.raises(KernelError, match=rf"core1.veccore0: the kernel raised ZeroDivisionError: "
                       rf"integer division or modulo by zero at .*test_phases.py:{line} "
                       rf"\(kernel\)") as e:
        launch(kernel, ["x"], {"x": np.zeros(8, np.float32)}, {}, TINY, block_dim=2)
    assert isinstance(e.value.__cause__, ZeroDivisionError)

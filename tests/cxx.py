"""What the C++ front end's tests share: the skip (with its reason) when this machine cannot
compile kernels or googletest (the ``cxx_cache`` fixture, in conftest.py, gives them one kernel
cache per test session in a temporary folder: the user's own cache is never touched)."""

from __future__ import annotations

import pytest

from aicore_sim.cfront import build, ut


def missing(gtest: bool = False) -> str | None:
    """Why kernels (and, with ``gtest``, upstream-style unit tests) cannot be built here."""
    try:
        build.compiler()
        if gtest:
            ut.gtest_source()
    except (build.NoCompilerError, ut.NoGtestError) as e:
        return str(e)
    return None


needs_cxx = pytest.mark.skipif(missing() is not None, reason=f"no C++ compiler: {missing()}")
needs_gtest = pytest.mark.skipif(missing(True) is not None,
                                 reason=f"cannot build unit tests: {missing(True)}")

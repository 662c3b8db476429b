"""What the four MoE EP operators' ports of upstream's tiling unit tests share
(``op_models/moe_token_*_with_ep*/tests/test_tiling.py``): upstream's fake UT platform (64 AIV,
ub_size 262144 -> GetCoreMemSize 261888) with another ub_size where a case sets one, the real
A2 (48 AIV, 196352 B usable UB), and the checks of a case upstream asserts
to succeed or to fail."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from aicore_sim.ascendc.host import TilingError, TilingResult
from aicore_sim.ascendc.platform_ascendc import PlatformAscendC
from aicore_sim.sim.platform import load_platform


def ut_platform(ub_size: int | None = None) -> PlatformAscendC:
    """Upstream's UT platform (64 AIV, short SoC Ascend910B), optionally with another ub_size."""
    platform = load_platform("ut-fake-910b")
    if ub_size is None:
        return PlatformAscendC(platform)
    if ub_size <= 256:
        # with_overrides() refuses a platform without usable UB, but upstream's UT builds one
        # (prob_none_tiny_ub: ub_size 256 → GetCoreMemSize 0); replace the field directly.
        return PlatformAscendC(dataclasses.replace(platform, ub_size=ub_size))
    return PlatformAscendC(platform.with_overrides(ub_size=ub_size))


UT = ut_platform()
A2 = PlatformAscendC(load_platform("ascend910b1"))  # 48 AIV, 196352 B usable UB


def ut_and_a2() -> tuple[int, int, int, int]:
    """The AIV count and usable UB of :data:`UT` and of :data:`A2` (the tests assume
    ``(64, 261888, 48, 196352)``)."""
    return UT.GetCoreNumAiv(), UT.GetCoreMemSize(), A2.GetCoreNumAiv(), A2.GetCoreMemSize()


def assert_succeeded(result: TilingResult, key: int, expected: str | list[int], block_dim: int,
                     workspace: list[int]) -> None:
    """A case upstream asserts to succeed: the tiling key, the tiling data (``expected``:
    upstream's tiling string, every value followed by a space, or the list of the values), the
    block dim and the workspace sizes."""
    assert result.ok, result.error
    assert result.status == "success"
    assert result.tiling_key == key
    data: Any = result.tiling_data
    assert data is not None
    assert (data.to_string() if isinstance(expected, str) else data.as_list()) == expected
    assert result.block_dim == block_dim
    assert result.workspace == workspace


def assert_failed(result: TilingResult, rule: str) -> None:
    """A case upstream asserts to fail: no tiling data, the rule named in the result and its
    error, and ``raise_for_status`` raising it."""
    assert not result.ok
    assert result.status == "failed"
    assert result.tiling_data is None
    assert result.rule == rule, result.error
    assert result.error and rule in result.error
    with pytest.raises(TilingError, match=rule):
        result.raise_for_status()

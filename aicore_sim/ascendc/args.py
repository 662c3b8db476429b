"""The argument checks the Ascend C calls share: an element count, a parameter struct's type
and its fields' unsigned ranges, each refused as a ``KernelError`` naming the call.

Step of the flow: kernel-port support; records nothing.
"""

from __future__ import annotations

from typing import Any

from aicore_sim.sim.errors import KernelError


def element_count(count: Any, what: str) -> int:
    """``count`` as an int: a count of elements, >= 0."""
    n = int(count)
    if n < 0:
        raise KernelError(f"{what}: negative count {n}")
    return n


def expect_struct(p: Any, cls: type, what: str) -> None:
    """``p`` is a ``cls`` (a parameter struct the call takes)."""
    if not isinstance(p, cls):
        raise KernelError(f"{what}: expected {cls.__name__}, got {p!r}")


def unsigned_fields(p: Any, names: tuple[str, ...], bits: int, what: str) -> tuple[int, ...]:
    """The fields ``names`` of the parameter struct ``p`` as ints, each within the range of
    its C type, an unsigned integer of ``bits`` bits."""
    top = (1 << bits) - 1
    values = tuple(int(getattr(p, n)) for n in names)
    for n, v in zip(names, values):
        if not 0 <= v <= top:
            raise KernelError(f"{what}: {type(p).__name__}.{n} {v} outside the uint{bits} "
                              f"range [0, {top}]")
    return values


__all__ = ["element_count", "expect_struct", "unsigned_fields"]

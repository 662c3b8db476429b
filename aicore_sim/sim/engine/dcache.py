"""The scalar unit's data cache (DCache): LRU over fixed-size lines of GM.

Scalar ``GetValue`` on GM hits or misses here; a miss fills one line. Only the hit/miss
decision is modelled; the costs come from the platform.
"""

from __future__ import annotations

from collections import OrderedDict


class DCache:
    """LRU cache of ``size // line`` lines, keyed by (GM tensor, line number)."""

    __slots__ = ("line", "capacity", "lines")

    def __init__(self, size: int, line: int) -> None:
        self.line = max(1, int(line))
        self.capacity = max(1, int(size) // self.line)
        self.lines: OrderedDict[tuple[str, int], None] = OrderedDict()

    def access(self, buf: str, addr: int, nbytes: int) -> int:
        """Touch the bytes; return how many lines missed (0 = hit)."""
        misses = 0
        for ln in range(addr // self.line, (addr + max(nbytes, 1) - 1) // self.line + 1):
            key = (buf, ln)
            if key in self.lines:
                self.lines.move_to_end(key)
            else:
                misses += 1
                self.lines[key] = None
                if len(self.lines) > self.capacity:
                    self.lines.popitem(last=False)
        return misses

"""MemoryImage: the launch's GM bytes - read-only inputs, private outputs."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from aicore_sim.sim.memory import MemoryImage


def test_outputs_are_private_and_inputs_read_only() -> None:
    x = np.arange(8, dtype=np.float32)
    out = np.full(4, 7, dtype=np.int32)  # an output buffer with content: copied
    image = MemoryImage.from_tensors({"x": x, "out": out}, 64, 2, {"out"})
    assert not image.gm["x"].flags.writeable
    assert np.shares_memory(image.gm["x"], x)  # the caller's array, not a copy
    assert not np.shares_memory(image.gm["out"], out)
    image.gm["out"][:] = 0
    assert out.tolist() == [7, 7, 7, 7]  # the caller's buffer is untouched
    assert image.gm["out"].size == 16  # 4 int32 as bytes


def _resident_mib() -> int:
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") >> 20


@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="reads Linux's /proc")
def test_a_zero_output_buffer_is_a_fresh_zero_array_not_a_copy() -> None:
    out = np.zeros(256 << 20, dtype=np.uint8)  # 256 MiB the system has not provided yet
    before = _resident_mib()
    image = MemoryImage.from_tensors({"out": out}, 64, 1, {"out"})
    again = image.copy()
    # a copy would make 2 x 256 MiB resident; fresh zero arrays none until written
    assert _resident_mib() - before < 32
    for got in (image.gm["out"], again.gm["out"]):
        assert got.size == 256 << 20 and not got.any()
        assert not np.shares_memory(got, out)


@pytest.mark.parametrize("content", [0, 3])
def test_shared_outputs_keep_their_bytes(content: int) -> None:
    out = np.full(4096, content, dtype=np.uint8)
    image = MemoryImage.from_tensors({"out": out}, 64, 1, {"out"})
    image.share_writable()  # anonymous shared memory for the forked record workers
    assert image.gm["out"].tolist() == [content] * 4096

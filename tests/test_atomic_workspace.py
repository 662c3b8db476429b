"""``SetAtomicAdd`` / ``SetAtomicNone`` (UB->GM copies that add to GM, legal across cores) and
``GetUserWorkspace`` (the user part of the launch's workspace, after the library's 16 MiB).
Platform ``tiny``: 2 AIV cores."""

from __future__ import annotations

import numpy as np
import pytest

from aicore_sim.ascendc import (
    PIPE_ALL,
    DataCopy,
    Duplicate,
    GetBlockIdx,
    GetUserWorkspace,
    GlobalTensor,
    PipeBarrier,
    SetAtomicAdd,
    SetAtomicNone,
    TBuf,
    TPipe,
    float16,
    float32,
)
from aicore_sim.ascendc.utils import SYSTEM_WORKSPACE_BYTES
from aicore_sim.sim.errors import KernelError
from aicore_sim.sim.launch import launch
from tests.conftest import TINY

N = 64


def add_into(y, atomic, then_plain):
    """Each core adds core + 1 to all of y (both cores write the same bytes)."""
    c = GetBlockIdx()
    g = GlobalTensor(float32)
    g.SetGlobalBuffer(y)
    pipe = TPipe()
    b = TBuf(name="b")
    pipe.InitBuffer(b, N * 4)
    t = b.Get(float32)
    Duplicate(t, float(c + 1), N)
    PipeBarrier(PIPE_ALL)
    if atomic:
        SetAtomicAdd(float32)
    DataCopy(g, t, N)
    if then_plain:
        SetAtomicNone()
        PipeBarrier(PIPE_ALL)
        DataCopy(g[0], t, 8)  # overwrites the first 8 again


def _run(atomic, then_plain=False, mode="timed"):
    y = np.arange(N, dtype=np.float32)
    return y, launch(add_into, ["y", atomic, then_plain], {"y": y},
                     {"y": (np.dtype(np.float32), (N,))}, TINY, block_dim=2, mode=mode)


def test_atomic_adds_of_two_cores_both_land():
    y, r = _run(atomic=True)
    assert np.array_equal(r.outputs["y"], y + 1 + 2)  # small integers: exact in fp32
    assert r.hazards == []  # atomic adds to the same bytes are not a race


def test_without_atomic_the_cores_race_and_one_wins():
    y, r = _run(atomic=False)
    got = r.outputs["y"]
    assert np.array_equal(got, np.full(N, 1.0)) or np.array_equal(got, np.full(N, 2.0))
    assert any(h.kind == "race" and "GM 'y'" in h.message for h in r.hazards)


def test_set_atomic_none_makes_copies_overwrite_again():
    y, r = _run(atomic=True, then_plain=True, mode="functional")
    # functional image, cores in order: core 0 adds 1, writes 1 over [0, 8); core 1 adds 2
    # (y + 1 + 2 beyond 8, 1 + 2 = 3 below), then writes 2 over [0, 8)
    want = y + 3
    want[:8] = 2.0
    assert np.array_equal(r.outputs["y"], want)


def test_atomic_type_must_match_the_copy():
    def kernel(y):
        g = GlobalTensor(float16)
        g.SetGlobalBuffer(y)
        pipe = TPipe()
        b = TBuf(name="b")
        pipe.InitBuffer(b, 64)
        SetAtomicAdd(float32)
        DataCopy(g, b.Get(float16), 16)

    with pytest.raises(KernelError, match=r"copy of float16 after SetAtomicAdd<float32>"):
        launch(kernel, ["y"], {"y": np.zeros(16, np.float16)}, {}, TINY, block_dim=1)
    with pytest.raises(KernelError, match=r"SetAtomicAdd<int64>: atomic add is for"):
        launch(lambda y: SetAtomicAdd(np.int64), ["y"], {"y": np.zeros(4, np.float32)}, {},
               TINY, block_dim=1)


def test_user_workspace_starts_after_the_system_part():
    def kernel(ws):
        user = GetUserWorkspace(ws)
        g = GlobalTensor(float32)
        g.SetGlobalBuffer(user)
        pipe = TPipe()
        b = TBuf(name="b")
        pipe.InitBuffer(b, 32)
        t = b.Get(float32)
        Duplicate(t, 9.0, 8)
        PipeBarrier(PIPE_ALL)
        DataCopy(g, t, 8)

    ws = np.zeros(SYSTEM_WORKSPACE_BYTES + 32, np.uint8)
    r = launch(kernel, ["ws"], {"ws": ws}, {"ws": (np.dtype(np.uint8), ws.shape)}, TINY,
               block_dim=1, mode="functional")
    out = r.outputs["ws"]
    assert SYSTEM_WORKSPACE_BYTES == 16 * 1024 * 1024
    assert not out[:SYSTEM_WORKSPACE_BYTES].any()  # the library's part untouched
    assert np.array_equal(out[SYSTEM_WORKSPACE_BYTES:].view(np.float32), np.full(8, 9.0))
    with pytest.raises(KernelError, match="GetUserWorkspace: the workspace argument is nullptr"):
        launch(lambda w: GetUserWorkspace(w), [None], {}, {}, TINY, block_dim=1)

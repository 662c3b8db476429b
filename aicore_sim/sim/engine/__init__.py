"""SimPy replay of recorded per-core instruction streams: the only package importing simpy.

Step of the flow: a ``Recording`` hands the recorded :class:`~aicore_sim.sim.program.Program` to
:func:`replay`, which runs every core's scalar issuer and pipes together on one SimPy clock
with the shared HBM server, and returns the :class:`~aicore_sim.sim.trace.Trace`.
"""

from __future__ import annotations

import simpy

from aicore_sim.sim.cost import kernel_entry_cycles
from aicore_sim.sim.cost.mechanisms import PREPARED_PLATFORM_FIELDS
from aicore_sim.sim.engine.core import ChipBarrier, Columns, CoreSim, prepare
from aicore_sim.sim.engine.fabric import Fabric
from aicore_sim.sim.engine.gm import GmBandwidth
from aicore_sim.sim.engine.groups import groups
from aicore_sim.sim.engine.l2 import L2Result
from aicore_sim.sim.engine.l2 import apply as apply_l2
from aicore_sim.sim.isa import Instr, Pipe
from aicore_sim.sim.memory import MemoryImage
from aicore_sim.sim.trace import Trace
from aicore_sim.util.resources import gc_paused


def replay(streams: list[list[Instr]], platform, image: MemoryImage | None = None,
           allocations=None, prepared: dict | None = None, group: bool = True) -> Trace:
    """Replay all cores together. With ``image`` (the timed image) effects are applied at
    each instruction's completion; without it the run is timing-only, and cores whose
    timelines are provably equal are replayed once (``groups.py``; ``group=False`` replays
    every core, for the tests that compare the two).

    ``prepared``: a dict the caller keeps with ``streams`` to replay them again (sweeps); the
    per-instruction costs and flags (after the L2 model, ``l2.py``) are computed once per
    :func:`prepared_key` (the costs and the platform fields they depend on) and reused from
    it."""
    # The replay allocates many small long-lived objects and frees little: the cyclic
    # garbage collector's passes would find nothing to free, so it is paused meanwhile
    # (preparing the cores and building the trace included).
    with gc_paused():
        return _replay(streams, platform, image, allocations, prepared, group)


def prepared_key(platform) -> tuple:
    """What prepared columns depend on besides the streams: the costs and the platform fields
    the prices and the mechanisms priced before the replay read
    (``cost.mechanisms.PREPARED_PLATFORM_FIELDS``: the clock, the scalar unit's fixed reads,
    the L2)."""
    return (id(platform.costs), *(getattr(platform, f) for f in PREPARED_PLATFORM_FIELDS))


def prepare_all(streams: list[list[Instr]], platform, l2_reuse_hits: bool = False
                ) -> tuple[list[Columns], L2Result]:
    """Every core's prepared columns, the copies re-priced through the L2 model (l2.py;
    ``l2_reuse_hits``: as if every re-read hit, the slack scenario)."""
    priced: dict = {}  # the streams share Instr objects: each is priced once
    columns = [prepare(stream, platform, priced) for stream in streams]
    return apply_l2(streams, columns, platform, reuse_hits=l2_reuse_hits)


def _replay(streams, platform, image, allocations, prepared, group) -> Trace:
    env = simpy.Environment()
    gm = GmBandwidth(env, platform.hbm_bytes_per_cycle)
    per_core = float(platform.costs.gm_fabric_ai_core_bytes_per_cycle)
    fabric = Fabric(env, per_core * int(platform.aic_core_num), gm) if per_core > 0 else None
    start = int(platform.op_head_cycles)
    key = prepared_key(platform)
    held = None if prepared is None else prepared.get(key)
    if held is not None and held[0] is platform.costs:  # the entry keeps its Costs alive
        columns = held[1]
        l2 = held[2] if len(held) > 2 else L2Result(len(streams))
        grouped = held[3] if len(held) > 3 else {}
    else:
        columns, l2 = prepare_all(streams, platform)
        grouped = {}  # the groups of these columns, by the data-cache geometry they used
        if prepared is not None:
            prepared[key] = (platform.costs, columns, l2, grouped)
    # Without effects, cores with equal timelines run once (groups.py); with effects each
    # core reads and writes its own data, so each runs.
    if image is None and group:
        gkey = (int(platform.dcache_size), int(platform.dcache_line))
        parts = grouped.get(gkey)
        if parts is None:
            parts = grouped[gkey] = groups(streams, columns, platform)
    else:
        parts = [[c] for c in range(len(streams))]
    cores = []
    barrier = ChipBarrier(env, len(streams))  # SyncAll
    entry = kernel_entry_cycles(platform, len(streams))
    for members in parts:
        c = members[0]
        sim = CoreSim(env, c, streams[c], platform, gm, image, start, columns[c],
                      weight=len(members), barrier=barrier, entry=entry, fabric=fabric)
        cores.append(sim)
        env.process(sim.issuer_process())
        for p in (Pipe.VECTOR, Pipe.MTE2, Pipe.MTE3):
            env.process(sim.pipe_process(p))
    env.run()
    for sim in cores:
        sim.check_finished()
    trace = Trace.from_cores(cores, parts, streams, platform, allocations)
    trace.l2_read_bytes, trace.l2_hit_bytes = l2.read_bytes, l2.hit_bytes
    trace.hbm_bytes = [sum(c.gmb) + sum(c.wbb) for c in columns]
    return trace

__all__ = ["prepare_all", "prepared_key", "replay"]

"""Benchmark: replay throughput of the SimPy engine in timing-only mode.

A synthetic 48-core launch of ~1,000,000 mixed instructions (double-buffered
copy-in / compute / copy-out with explicit flags, the shape of a real vector kernel) is
replayed on ascend910b1. Prints instructions per second and peak memory, and writes the
figure to reports/bench_replay_throughput.md.

    python benchmarks/replay_throughput.py [--instructions N] [--cores C]
"""

from __future__ import annotations

import argparse
import os
import platform as host
import resource
import time
from pathlib import Path

import numpy as np

from aicore_sim.sim import engine
from aicore_sim.sim.isa import HardEvent, Instr, Opcode, Operand, Pipe, RoundMode, Space
from aicore_sim.sim.platform import load_platform

F32, F16 = np.dtype(np.float32), np.dtype(np.float16)


def _loop_body(core: int, slot: int, n: int) -> list[Instr]:
    """One double-buffered iteration: 14 instructions over MTE2, VECTOR, MTE3."""
    ev = 2 + slot
    gm_in = Operand(Space.GM, "x", (core * 2 + slot) * n * 2, n * 2, F16)
    ub_in = Operand(Space.UB, f"in[{slot}]", slot * n * 2, n * 2, F16)
    ub_f = Operand(Space.UB, "f32", 4 * n, n * 4, F32)
    ub_out = Operand(Space.UB, f"out[{slot}]", 8 * n + slot * n * 4, n * 4, F32)
    gm_out = Operand(Space.GM, "y", (core * 2 + slot) * n * 4, n * 4, F32)
    copy = (1, n * 2, 0, 0)
    return [
        Instr(Pipe.MTE2, Opcode.WAIT_FLAG, event=HardEvent.V_MTE2, event_id=ev),
        Instr(Pipe.MTE2, Opcode.COPY_GM_TO_UB, dst=ub_in, src=(gm_in,), count=1, nbytes=n * 2,
              params=copy),
        Instr(Pipe.MTE2, Opcode.SET_FLAG, event=HardEvent.MTE2_V, event_id=ev),
        Instr(Pipe.VECTOR, Opcode.WAIT_FLAG, event=HardEvent.MTE2_V, event_id=ev),
        Instr(Pipe.VECTOR, Opcode.CAST, dst=ub_f, src=(ub_in,), count=n,
              round_mode=RoundMode.CAST_NONE),
        Instr(Pipe.VECTOR, Opcode.SET_FLAG, event=HardEvent.V_MTE2, event_id=ev),
        Instr(Pipe.VECTOR, Opcode.WAIT_FLAG, event=HardEvent.MTE3_V, event_id=slot),
        Instr(Pipe.VECTOR, Opcode.MULS, dst=ub_out, src=(ub_f,), count=n, scalar=2.0),
        Instr(Pipe.VECTOR, Opcode.ADD, dst=ub_out, src=(ub_out, ub_f), count=n),
        Instr(Pipe.VECTOR, Opcode.SET_FLAG, event=HardEvent.V_MTE3, event_id=slot),
        Instr(Pipe.MTE3, Opcode.WAIT_FLAG, event=HardEvent.V_MTE3, event_id=slot),
        Instr(Pipe.MTE3, Opcode.COPY_UB_TO_GM, dst=gm_out, src=(ub_out,), count=1,
              nbytes=n * 4, params=(1, n * 4, 0, 0)),
        Instr(Pipe.MTE3, Opcode.SET_FLAG, event=HardEvent.MTE3_V, event_id=slot),
        Instr(Pipe.SCALAR, Opcode.GET_VALUE_GM,
              src=(Operand(Space.GM, "idx", 4 * (core * 64 + slot), 4, np.dtype(np.int32)),),
              nbytes=4),
    ]


def synthetic_streams(total: int, cores: int, n: int = 2048) -> list[list[Instr]]:
    """Per-core streams totalling about ``total`` instructions, flags balanced."""
    per_core = total // cores
    streams = []
    for c in range(cores):
        bodies = [_loop_body(c, s, n) for s in (0, 1)]
        head = [Instr(Pipe.VECTOR, Opcode.SET_FLAG, event=HardEvent.V_MTE2, event_id=e)
                for e in (2, 3)]
        head += [Instr(Pipe.MTE3, Opcode.SET_FLAG, event=HardEvent.MTE3_V, event_id=e)
                 for e in (0, 1)]
        tail = [Instr(Pipe.MTE2, Opcode.WAIT_FLAG, event=HardEvent.V_MTE2, event_id=e)
                for e in (2, 3)]
        tail += [Instr(Pipe.VECTOR, Opcode.WAIT_FLAG, event=HardEvent.MTE3_V, event_id=e)
                 for e in (0, 1)]
        body_len = len(bodies[0])
        loops = max(1, (per_core - len(head) - len(tail)) // body_len)
        s = list(head)
        for i in range(loops):
            s.extend(bodies[i % 2])
        s.extend(tail)
        streams.append(s)
    return streams


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instructions", type=int, default=1_000_000)
    ap.add_argument("--cores", type=int, default=48)
    ap.add_argument("--no-report", action="store_true", help="do not write reports/")
    args = ap.parse_args()
    plat = load_platform("ascend910b1")
    streams = synthetic_streams(args.instructions, args.cores)
    count = sum(len(s) for s in streams)
    t0 = time.perf_counter()
    trace = engine.replay(streams, plat, image=None)
    wall = time.perf_counter() - t0
    rate = count / wall
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    assert trace.instruction_count() == count, "every instruction must execute"
    lines = [
        "# Benchmark: replay throughput (timing-only)",
        "",
        f"Command: `python benchmarks/replay_throughput.py --instructions {args.instructions} "
        f"--cores {args.cores}`",
        "",
        "| figure | value |",
        "|---|---|",
        f"| instructions replayed | {count:,} on {args.cores} cores (ascend910b1) |",
        f"| wall time of the replay | {wall:.2f} s |",
        f"| throughput | {rate:,.0f} instructions/s (target >= 250,000) |",
        f"| simulated makespan | {trace.makespan:,} cycles ({trace.us(trace.makespan):,.1f} µs) |",
        f"| peak resident memory of the process | {peak_mib:,.0f} MiB |",
        f"| machine | {host.machine()}, {os.cpu_count()} CPUs, Python {host.python_version()} |",
        "",
        f"Measured {time.strftime('%Y-%m-%d')}.",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.no_report:
        out = Path(__file__).resolve().parent.parent / "reports" / "bench_replay_throughput.md"
        out.parent.mkdir(exist_ok=True)
        tmp = out.with_suffix(".tmp")
        tmp.write_text(text)
        os.replace(tmp, out)


if __name__ == "__main__":
    main()

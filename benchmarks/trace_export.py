"""Benchmark: writing the Perfetto trace of a case (``aicore_sim.export.perfetto.write_trace``).

Loads a case's Trace (``run_case`` in timing-only mode, or a pickled Trace with ``--pickle``),
then times each requested ``write_trace`` in a forked child, so that the peak resident memory
reported (``resource.getrusage``) is the trace in memory plus what the write itself needs, not
what loading needed (the child's resident memory before the write is printed beside it).
Prints wall and CPU time, peak memory, file size (compressed and decompressed) and events.

    python benchmarks/trace_export.py [--case p1_deepseek_v3] [--pickle trace.pkl]
                                      [--detail full lanes] [--chunk N] [--no-threads]
                                      [--zlib] [--repeat N] [--encoders CORES]

``--encoders CORES`` also compares, on the first CORES cores, the array renderer with the
per-event-dict route (the same events as dicts, encoded by the standard json module, orjson
and msgspec when installed).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import pickle
import resource
import sys
import tempfile
import time
from pathlib import Path


def _rss_mib() -> float:
    """Current resident memory (Linux), else the peak so far."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _in_child(fn):
    """Run ``fn()`` in a forked child; returns its JSON-able result plus the child's peak."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.close(r)
        try:
            start = _rss_mib()
            out = fn()
            out["start_mib"] = start
            out["peak_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            data = json.dumps(out).encode()
        except BaseException as exc:  # report, never fall back into the parent's code
            data = json.dumps({"error": repr(exc)}).encode()
        with os.fdopen(w, "wb") as f:
            f.write(data)
        os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        data = f.read()
    os.waitpid(pid, 0)
    out = json.loads(data)
    if "error" in out:
        raise RuntimeError(out["error"])
    return out


def _load(args):
    if args.pickle:
        with open(args.pickle, "rb") as f:
            return pickle.load(f)
    from op_models.moe_token_unpermute_with_ep_grad import run_case

    return run_case(args.case, platform=args.platform, mode="timing-only")[1].trace


def _write(trace, folder: Path, detail: str, chunk: int, threaded: bool) -> dict:
    from aicore_sim.export.perfetto import write_trace

    c0, t0 = time.process_time(), time.perf_counter()
    w = write_trace(trace, folder / f"trace-{detail}.json.gz", detail=detail,
                    chunk_events=chunk, threaded=threaded)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    plain = 0
    with gzip.open(w.path, "rb") as f:
        while block := f.read(1 << 24):
            plain += len(block)
    return {"detail": detail, "wall": wall, "cpu": cpu, "bytes": w.bytes, "plain": plain,
            "events": w.events}


def _encoders(trace, cores: int) -> list[tuple[str, float, int]]:
    """(route, seconds, bytes) on the first ``cores`` cores."""
    from aicore_sim.export.perfetto import chrome_trace, write_trace
    from aicore_sim.sim.trace import Trace

    sub = Trace(trace.cores[:cores], trace.clock_mhz)
    rows = []
    with tempfile.TemporaryDirectory() as d:
        t0 = time.perf_counter()
        w = write_trace(sub, Path(d) / "t.json", gzip=False, threaded=False)
        rows.append(("array renderer (text, no gzip)", time.perf_counter() - t0, w.bytes))
    obj = chrome_trace(sub)  # the same events as one dict each
    t0 = time.perf_counter()
    copies = [{**e, "args": {**e["args"]}} if "args" in e else {**e}
              for e in obj["traceEvents"]]
    rows.append(("building the dicts (copying them)", time.perf_counter() - t0, 0))
    del copies
    t0 = time.perf_counter()
    n = len(json.dumps(obj, separators=(",", ":")))
    rows.append(("json.dumps of the dicts", time.perf_counter() - t0, n))
    try:
        import orjson

        t0 = time.perf_counter()
        n = len(orjson.dumps(obj))
        rows.append(("orjson.dumps of the dicts", time.perf_counter() - t0, n))
    except ImportError:
        pass
    try:
        import msgspec

        enc = msgspec.json.Encoder()
        t0 = time.perf_counter()
        n = len(enc.encode(obj))
        rows.append(("msgspec encode of the dicts", time.perf_counter() - t0, n))
    except ImportError:
        pass
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", default="p1_deepseek_v3")
    ap.add_argument("--platform", default="ascend910b1")
    ap.add_argument("--pickle", help="a pickled aicore_sim.sim.trace.Trace instead of running")
    ap.add_argument("--detail", nargs="+", default=["full", "lanes"])
    ap.add_argument("--chunk", type=int, default=None, help="chunk_events (default: module's)")
    ap.add_argument("--no-threads", action="store_true")
    ap.add_argument("--zlib", action="store_true", help="gzip with the standard zlib module")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--encoders", type=int, default=0, metavar="CORES")
    args = ap.parse_args()

    from aicore_sim.export import perfetto
    from aicore_sim.export.perfetto import sink

    if args.zlib:
        import zlib

        sink._zlib = zlib
    t0 = time.perf_counter()
    trace = _load(args)
    print(f"loaded {trace.instruction_count():,} instructions on {len(trace.cores)} cores "
          f"in {time.perf_counter() - t0:.1f} s; resident {_rss_mib():.0f} MiB", flush=True)
    chunk = args.chunk or perfetto.CHUNK_EVENTS
    print(f"compressor: {sink._zlib.__name__}, chunk_events {chunk:,}, "
          f"threaded {not args.no_threads}")
    with tempfile.TemporaryDirectory() as d:
        for detail in args.detail:
            for _ in range(args.repeat):
                r = _in_child(lambda detail=detail: _write(
                    trace, Path(d), detail, chunk, not args.no_threads))
                print(f"{detail:5s}: wall {r['wall']:.2f} s, cpu {r['cpu']:.2f} s, "
                      f"peak {r['peak_mib']:.0f} MiB (before the write {r['start_mib']:.0f} "
                      f"MiB), "
                      f"{r['bytes'] / 2**20:.1f} MiB gzipped, {r['plain'] / 2**20:.1f} MiB "
                      f"JSON, {r['events']:,} events", flush=True)
    if args.encoders:
        print(f"encoders on the first {args.encoders} cores:")
        for name, sec, n in _encoders(trace, args.encoders):
            print(f"  {name:34s} {sec:6.2f} s  {n / 2**20:7.1f} MiB")


if __name__ == "__main__":
    sys.exit(main())

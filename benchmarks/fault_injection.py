"""Fault injection over every command: thousands of (command, fault, moment) injections, each
checked against the failure contract's invariants (tests/faults.py); the tally goes to
reports/fault_injection.md.

    python benchmarks/fault_injection.py --count 2000 --seed 0
    python benchmarks/fault_injection.py --count 2000 --max-seconds 900   # stop early, say so

The injections cycle through every (command, fault, moment) in an order drawn from the seed,
so any prefix covers the combinations evenly.
"""

from __future__ import annotations

import argparse
import collections
import itertools
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import faults  # noqa: E402


def plan(count: int, seed: int) -> list[tuple[str, str, float]]:
    combos = list(itertools.product(faults.COMMANDS, faults.FAULTS, faults.MOMENTS))
    rng = random.Random(seed)
    out: list[tuple[str, str, float]] = []
    while len(out) < count:
        batch = combos[:]
        rng.shuffle(batch)
        out += batch
    return out[:count]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-seconds", type=float, default=None,
                    help="stop after this wall time (the report says how many ran)")
    ap.add_argument("--out", default=str(ROOT / "reports" / "fault_injection.md"))
    a = ap.parse_args()
    todo = plan(a.count, a.seed)
    t0 = time.monotonic()
    done: list[faults.Outcome] = []
    with tempfile.TemporaryDirectory(prefix="fi-") as tmp:
        for i, (cmd, fault, moment) in enumerate(todo):
            if a.max_seconds is not None and time.monotonic() - t0 > a.max_seconds:
                break
            o = faults.inject(cmd, fault, moment, Path(tmp) / f"i{i}")
            done.append(o)
            mark = "ok" if not o.broken else "BROKEN " + "; ".join(o.broken)
            print(f"{i:5d} {cmd:10} {fault:16} {moment:4} exit {o.code:4} {o.wall_s:5.1f}s "
                  f"{mark}", flush=True)
    wall = time.monotonic() - t0
    Path(a.out).write_text(report(done, a, wall, len(todo)))
    bad = sum(1 for o in done if o.broken)
    print(f"{len(done)} injections, {bad} broke an invariant, {wall:.0f} s; {a.out}")
    return 1 if bad else 0


def report(done: list[faults.Outcome], a: argparse.Namespace, wall: float, planned: int
           ) -> str:
    by: dict[tuple[str, str], list[faults.Outcome]] = collections.defaultdict(list)
    for o in done:
        by[(o.command, o.fault)].append(o)
    bad = [o for o in done if o.broken]
    lines = [
        "# Fault injection",
        "",
        f"`python benchmarks/fault_injection.py --count {a.count} --seed {a.seed}"
        + (f" --max-seconds {a.max_seconds:g}" if a.max_seconds is not None else "") + "`",
        "",
        f"{len(done)} of {planned} planned injections ran in {wall:.0f} s"
        + ("" if len(done) == planned else
           f" (stopped by --max-seconds: {planned - len(done)} not run)")
        + f"; {len(bad)} broke an invariant. Commands: {', '.join(faults.COMMANDS)}; faults: "
        f"{', '.join(faults.FAULTS)}; moments (s after the start): "
        f"{', '.join(map(str, faults.MOMENTS))}. The invariants are listed in tests/faults.py.",
        "",
        "| command | fault | injections | broken | exit codes seen |",
        "|---|---|---:|---:|---|",
    ]
    for (cmd, fault), os_ in sorted(by.items()):
        codes = collections.Counter(o.code for o in os_)
        seen = ", ".join(f"{c} x{n}" for c, n in sorted(codes.items()))
        lines.append(f"| {cmd} | {fault} | {len(os_)} | {sum(1 for o in os_ if o.broken)} | "
                     f"{seen} |")
    if bad:
        lines += ["", "## Broken invariants", ""]
        for o in bad[:60]:
            lines.append(f"- {o.command} / {o.fault} at {o.moment} s: exit {o.code}: "
                         f"{'; '.join(o.broken)}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())

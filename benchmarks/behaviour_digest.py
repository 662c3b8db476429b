"""Digest of what the simulator does, for refactors that must change nothing.

Runs the ``aicore-sim`` command as a user does and prints one JSON object: for every bundled
case small enough (``--max-elements``), the digests of its outputs, its makespan and the
digest of the arrays of its ``streams.npz``; ``tiling --json`` of every bundled case;
``validate``'s figures; and, with ``--p1``, P1's makespan (timing-only). Two runs are
compared with ``diff``::

    python benchmarks/behaviour_digest.py > /tmp/before.json
    ... refactor ...
    python benchmarks/behaviour_digest.py > /tmp/after.json && diff /tmp/before.json /tmp/after.json

Source-only operators (``op_models/moe_family``) run only with ``AICORE_SIM_OPS_TRANSFORMER``
naming an ops-transformer checkout; without it their cases are listed as skipped, so compare
two digests taken the same way. The digests are taken from the files a run writes
(``outputs/*.npy``, ``summary.json``'s makespan, ``streams.npz``), so a change that moves code
without changing behaviour leaves the object byte-identical.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import re
import subprocess
import sys
import tempfile
from pathlib import Path


class NeedsSourcesError(Exception):
    """The command refused a source-only operator's case: no ops-transformer checkout given."""


def sim(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "aicore_sim", *args], capture_output=True,
                          text=True)
    if done.returncode == 2 and "runs from its own sources" in done.stderr:
        raise NeedsSourcesError(done.stderr.strip())
    if done.returncode not in (0, 1):
        raise SystemExit(f"aicore-sim {' '.join(args)} exited {done.returncode}: "
                         f"{done.stderr.strip()[-400:]}")
    return done.stdout


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def _site_text(label: str) -> str:
    """A site label with the simulator's own places made one (the kernel end was a line of the
    simulator's program.py before it was named: a moved line is no change of behaviour)."""
    return "<simulator>" if label.startswith(("aicore_sim/", "(kernel end)")) else label


def npz_digest(path: Path) -> str:
    """Digest of the arrays of an ``.npz`` (the zip's own timestamps left out; the site table's
    simulator places made one)."""
    import numpy as np

    h = hashlib.sha256()
    with np.load(path) as z:
        for name in sorted(z.files):
            a = z[name]
            if name == "sites":
                a = np.array(json.dumps([_site_text(s) for s in json.loads(str(a))]))
            h.update(f"{name}:{a.dtype.str}:{a.shape}".encode())
            h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:16]


def case_elements(case: dict) -> int:
    return sum(math.prod(spec["shape"]) for spec in case["inputs"].values() if spec)


def run_digest(case: str, out: Path, *extra: str) -> dict:
    sim("run", "--case", case, "--out", str(out), "--no-plot", "--trace", "none", "--jobs", "1",
        *extra)
    summary = json.loads((out / "summary.json").read_text())
    outputs = {p.stem: file_digest(p) for p in sorted((out / "outputs").glob("*.npy"))}
    streams = out / "streams.npz"
    return {"makespan": summary.get("makespan_cycles", summary.get("makespan")),
            "outputs": outputs,
            "streams": npz_digest(streams) if streams.exists() else None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-elements", type=int, default=2_000_000,
                    help="run only bundled cases with at most this many input elements")
    ap.add_argument("--p1", action="store_true", help="also P1's makespan (timing-only)")
    args = ap.parse_args()
    cases = [json.loads(line) for line in sim("cases", "--json").splitlines() if line.strip()]
    result: dict = {"runs": {}, "tiling": {}, "validate": None}
    with tempfile.TemporaryDirectory() as tmp:
        for k, case in enumerate(cases):
            key = f"{case['op']}/{case['name']}"
            try:
                result["tiling"][key] = sim("tiling", case["name"], "--json")
                if case_elements(case) <= args.max_elements:
                    result["runs"][key] = run_digest(case["name"], Path(tmp) / str(k))
            except NeedsSourcesError:
                # a source-only operator without AICORE_SIM_OPS_TRANSFORMER: named, not run
                result["tiling"][key] = "skipped: needs its sources (AICORE_SIM_OPS_TRANSFORMER)"
            print(f"{k + 1}/{len(cases)} {key}", file=sys.stderr)
        if args.p1:
            result["runs"]["p1_timing_only"] = run_digest(
                "p1_deepseek_v3", Path(tmp) / "p1", "--mode", "timing-only")
    # validate's last line gives its wall time, which no refactor controls
    result["validate"] = re.sub(r"; wall [0-9.]+ s$", "; wall - s", sim("validate").rstrip("\n"),
                                flags=re.M)
    json.dump(result, sys.stdout, indent=1, sort_keys=True)
    print()


if __name__ == "__main__":
    main()

"""Run the forward's upstream ATK records (``MoeTokenUnpermuteWithEp``) through the verify
machinery and write ``<stem>.json`` / ``<stem>.md`` (per record) plus the totals on stdout.

Usage: ``python benchmarks/verify_atk_forward.py ATK_FILE [--records SEL] [--report STEM]``
(wrap timing runs in ``flock /tmp/aicore-bench.lock``).
"""

from __future__ import annotations

import argparse
import statistics
import time

from aicore_sim.verify.report import write_reports
from op_models.moe_token_unpermute_with_ep.atk import STANDARD, run_records


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("atk")
    ap.add_argument("--records", default=None)
    ap.add_argument("--report", default="reports/verify_atk_forward_full")
    ap.add_argument("--mode", default="functional")
    args = ap.parse_args()
    t0 = time.perf_counter()
    results = run_records(args.atk, args.records, mode=args.mode, progress=True)
    wall = time.perf_counter() - t0
    meta = {"source": args.atk, "standard": STANDARD, "mode": args.mode, "wall_s": wall}
    write_reports(results, args.report, meta)
    passed = sum(r.passed for r in results)
    per = [r.wall_s["total"] for r in results]
    bad = sum(o.bad for r in results for o in r.outputs)
    elems = sum(o.elements for r in results for o in r.outputs)
    worst = max((o.max_rel for r in results for o in r.outputs), default=0.0)
    worst_mean = max((o.mean_rel for r in results for o in r.outputs), default=0.0)
    print(f"{passed} passed / {len(results) - passed} failed; {wall:.1f} s wall; per record "
          f"min {min(per):.2f} s, median {statistics.median(per):.2f} s, max {max(per):.2f} s; "
          f"{bad} / {elems} elements over the threshold; worst max rel {worst:.4g}, worst mean "
          f"rel {worst_mean:.4g}")
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    raise SystemExit(main())

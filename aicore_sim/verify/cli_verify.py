"""``aicore-sim verify``: numeric equivalence of cases, matrices and ATK records with a golden.

Step of the flow: the outermost shell for equivalence testing. It gathers cases (case files,
bundled case names, ATK json records, a case matrix), runs each through the operator API,
compares every output with the golden or with user-supplied expected outputs under a
standard, prints PASS/FAIL per case and output, and writes a JSON and a markdown report.

Exit codes: 0 every output passed; 1 some output failed (or a case could not run);
2 a bad input to verify (missing or malformed expected file, unknown standard, bad matrix
spec, unknown case) - one line on stderr naming the file and the rule.

:func:`add_parser` is called from :mod:`aicore_sim.cli`; this module imports nothing heavy at
import time.
"""

from __future__ import annotations

import argparse
from typing import Any

_EXAMPLES = """\
examples:
  aicore-sim verify tiny mixtral                   bundled cases, built-in golden, bit-exact
  aicore-sim verify --matrix                       the default op's bundled equivalence matrix
  aicore-sim verify --matrix OPNAME                that op's bundled matrix ('aicore-sim cases')
  aicore-sim verify --matrix my_matrix.toml --mode timed --standard threshold
  aicore-sim verify my_case.json --expected out/ --standard custom:rtol=1e-3,atol=1e-5,ratio=0
  aicore-sim verify atk_aclnn<Op>.json --records 0,72,199   (the op by its aclnn_name)
  aicore-sim verify atk_....json --records 0:200:20 --limit 5

CASE is a case file (aicore_sim/ops/casefile.py), a bundled case name ('aicore-sim cases'), or an
ATK case-description json (each record a case; --records / --limit pick some).
--expected DIR holds DIR/<case>/<output>.npy or .bin (raw, as msOpST and gen_data write them;
dtype and shape from the case); with a single case DIR/<output>.{npy,bin} also works.
Standards: bit-exact (md5), threshold (CANN mean/max relative error by dtype),
custom:rtol=R,atol=A,ratio=F. A case matrix is documented in aicore_sim/verify/matrix.py.
"""


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``verify`` subcommand to the ``aicore-sim`` subparsers."""
    from aicore_sim.cli.common import add_source_options, subcommand
    from aicore_sim.cli.options import (
        count,
        jobs,
        nonempty,
        nonneg_int,
        scheduler,
    )
    from aicore_sim.util.background import usable_cpus

    v = subcommand(
        subparsers, "verify",
        "compare every output of cases / matrices / ATK records with a golden",
        "Numeric equivalence testing: run cases and compare each output with the built-in "
        "golden or with expected outputs, under a standard.", _EXAMPLES)
    v.add_argument("cases", nargs="*", type=nonempty, metavar="CASE",
                   help="case file, bundled case name, or ATK json")
    v.add_argument("--matrix", nargs="?", const="default", type=nonempty, metavar="SPEC",
                   help="case matrix (TOML or JSON), or an op name for that op's bundled "
                        "equivalence matrix; alone: the default op's")
    v.add_argument("--mode", choices=("functional", "timed"), default=None,
                   help="simulation mode (default functional; a matrix may set it)")
    v.add_argument("--standard", type=nonempty, metavar="NAME", default=None,
                   help="bit-exact | threshold | custom:rtol=R,atol=A,ratio=F (default "
                        "bit-exact; ATK records use their own 'md5' = bit-exact)")
    v.add_argument("--expected", type=nonempty, metavar="DIR",
                   help="expected outputs DIR/<case>/<output>.{npy,bin} instead of the golden")
    v.add_argument("--report", type=nonempty, metavar="FILE",
                   help="report path: FILE.json and FILE.md are written (default "
                        "reports/verify-<time to the ms>-<first case>)")
    v.add_argument("--platform", type=nonempty, metavar="P",
                   help="platform preset (overrides the cases' platform; not the matrix's)")
    v.add_argument("--records", type=nonempty, metavar="SEL",
                   help="ATK records by index: '0,5,9' or a slice 'start:stop[:step]'")
    v.add_argument("--limit", type=count, metavar="N", help="at most N >= 1 cases in total")
    v.add_argument("--max-cases", type=count, default=None, metavar="N",
                   help="refuse (exit 2, before any case is built) more than N >= 1 cases "
                        "(default 20000): a matrix is counted as the product of its axes")
    v.add_argument("--seed", type=nonneg_int,
                   help="seed of the random inputs (default: the case's)")
    v.add_argument("--dump-golden", type=nonempty, metavar="DIR",
                   help="also write each case's golden outputs as DIR/<case>/<output>.npy; "
                        "an existing file there is never replaced (exit 2 before any work)")
    v.add_argument("--workers", type=jobs, default=min(2, usable_cpus()), metavar="N",
                   help="cases run at once, each in its own process (default 2, or 1 on a "
                        "one-CPU machine; 1 = in this process); results and report as with 1")
    v.add_argument("--scheduler", type=scheduler, metavar="ADDRESS",
                   help="run the cases on a Dask cluster instead of --workers: a scheduler "
                        "address (tcp://host:8786) or local:N for a new LocalCluster of N >= 1 "
                        "workers; each worker rebuilds the cases from these options, so the "
                        "files they name must be readable there; results and report as with 1")
    add_source_options(
        v,
        tiling_help="verify with this tiling field set (repeatable; as run --tiling): the op's "
                    "tiling space plans the rest, and the golden is that of the tiling that ran; "
                    "a refused value fails the case naming the rule",
        kernel_help="run the operator's own Ascend C kernel sources instead of its Python port "
                    "(as run --kernel-src): a folder holding <entry>.cpp, or one .cpp; "
                    "docs/cpp_kernels.md",
        op_help="run the operator from its source folder (as run --op-src): its op_host tiling "
                "C++ in place of the port's tiling, its op_kernel/ as the kernel unless "
                "--kernel-src names another")
    v.add_argument("--no-progress", action="store_true", help="no progress bar")
    v.set_defaults(func=cmd_verify)
    return v


def cmd_verify(args: argparse.Namespace) -> int:
    """Run ``verify``; returns the exit code (0 pass, 1 fail, 2 bad input)."""
    from aicore_sim.cli.common import err
    from aicore_sim.ops.casefile import CaseFileError
    from aicore_sim.verify import VerifyError
    from aicore_sim.verify.runner import verify_main

    try:
        return verify_main(args)
    except (VerifyError, CaseFileError) as e:
        err(f"error: {e}")
        return 2

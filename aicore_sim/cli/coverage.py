"""``aicore-sim coverage``: which operators of a source tree the C++ front end carries - the
kernel compiles, the host tiling compiles, it runs, its outputs equal the golden - and the
first missing item of each other one (step: the command line; the table is
:mod:`aicore_sim.cfront.family`'s).

Exit code: 0 the table was made (whatever it says), 2 a bad input (no such folder, no operator
in it, a bad platform) or no C++ compiler.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import sys
from pathlib import Path
from typing import Any

from aicore_sim.cli.common import add_json_report, existing, platform_arg, subcommand
from aicore_sim.cli.options import nonempty
from aicore_sim.ops.casefile import DEFAULT_PLATFORM
from aicore_sim.sim.errors import UsageError
from aicore_sim.util.staging import write_staged

_EXAMPLES = """\
examples:
  aicore-sim coverage <ops-transformer>/moe
  aicore-sim coverage <ops-transformer>/moe --only 'moe_token_*' --json
  aicore-sim coverage <ops-transformer>/moe --report reports/coverage_moe.md

DIR holds operators in the ops-transformer layout: <op>/op_host/<op>_def.cpp (its inputs,
outputs, dtypes, SoC configs), <op>/op_kernel/<op>.cpp (the kernel entry) and
<op>/op_host/*tiling*.h (the tiling struct). Every operator whose definition adds an A2/A3
config (ascend910b, ascend910_93) gets a row: the kernel compiled against the shim (first
dtype column, ascend910b1 by default; builds are cached), the host tiling (op_host/
*tiling*.cpp against the CANN host shim, one library per operator), and, for an operator with
a model installed (its cases and golden), its smallest bundled case run from this tree's
sources (run --op-src: host tiling and kernel C++) and compared with the golden. The last
column names the first item missing on the way. Nothing of DIR is copied.
"""


def add_parser(sub: Any) -> None:
    p = subcommand(sub, "coverage", "which operators of a source tree run from their C++ "
                   "sources, and the first missing item of the others", "The coverage table of "
                   "an operator source tree: kernel compiles, host compiles, runs, golden "
                   "exact, bundled cases, first missing item.", _EXAMPLES)
    p.add_argument("dir", type=nonempty, metavar="DIR",
                   help="folder of operators (an ops-transformer checkout's moe/)")
    p.add_argument("--only", type=nonempty, metavar="GLOB",
                   help="only the operators whose folder name matches GLOB")
    p.add_argument("--platform", type=nonempty, metavar="P",
                   help=f"the platform the kernels are built for (default {DEFAULT_PLATFORM})")
    add_json_report(p, "one JSON object per operator",
                    "also write the table as markdown to FILE.md (replaced if it exists)",
                    "FILE.md")
    p.set_defaults(func=cmd_coverage)


def cmd_coverage(args: argparse.Namespace) -> int:
    from aicore_sim.cfront import family

    root = existing(args.dir, "folder", folder=True)
    platform = platform_arg(args.platform or DEFAULT_PLATFORM)
    report = Path(args.report) if args.report else None
    if report is not None:  # writable and locked before the work
        from aicore_sim.util.claim import claim

        claim(report, "--report")
    ops = [n for n, _, _ in family.operators(root)
           if not args.only or fnmatch.fnmatchcase(n, args.only)]
    if not ops:
        raise UsageError(f"{args.dir}: no A2/A3 operator (<op>/op_host/<op>_def.cpp with an "
                         f"ascend910b or ascend910_93 config)"
                         + (f" matches --only {args.only}" if args.only else ""))
    done = [0]

    def progress(name: str) -> None:
        done[0] += 1
        print(f"[{done[0]}/{len(ops)}] {name}", file=sys.stderr, flush=True)

    rows = family.coverage(root, platform, progress,
                           only=(lambda n: n in ops) if args.only else None)
    table = family.table(rows)
    ran = sum(bool(r.runs) for r in rows)
    exact = sum(bool(r.golden_exact) for r in rows)
    built = sum(bool(r.kernel_compiles) for r in rows)
    hosts = sum(bool(r.host_compiles) for r in rows)
    line = (f"{len(rows)} operators: {built} kernels compile, {hosts} host tilings compile, "
            f"{ran} run end to end from their sources, {exact} golden exact")
    if report is not None:
        commit = _commit(root)
        where = f"`{root.name}/`" + (f" at commit {commit}" if commit else "")
        write_staged(report, f"# Operator coverage of {where}\n\nMade by `aicore-sim "
                             f"coverage` on {platform.name}: {line}.\n\n{table}\n")
    if args.json:
        for r in rows:
            print(json.dumps(r.as_dict()))
    else:
        print(table)
        print(line)
    return 0


def _commit(root: Path) -> str | None:
    """The short commit of the git checkout ``root`` lies in, if it is one."""
    import subprocess

    try:
        p = subprocess.run(["git", "-C", str(root), "rev-parse", "--short=7", "HEAD"],
                           capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return p.stdout.strip() or None if p.returncode == 0 else None


__all__ = ["add_parser", "cmd_coverage"]

"""``aicore-sim ut``: an upstream kernel unit test (gtest, CPU-debug interface) with every
launch simulated (step: the command line; the build and the launches are
:mod:`aicore_sim.cfront.ut`'s).

Exit code: 0 when every TEST ran passed, 1 when one failed (gtest's own summary says which),
2 for a bad input, a compile error or missing googletest sources.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from aicore_sim.cli.common import (
    add_launches_options,
    existing,
    launches_folder,
    platform_arg,
    subcommand,
)
from aicore_sim.cli.options import nonempty
from aicore_sim.ops.casefile import DEFAULT_PLATFORM
from aicore_sim.sim.errors import UsageError
from aicore_sim.util.resources import gc_paused

_EXAMPLES = """\
examples:
  aicore-sim ut <ops-transformer>/moe/moe_token_unpermute_with_ep/tests/ut/op_kernel/\\
test_moe_token_unpermute_with_ep.cpp --kernel-src <ops-transformer>/moe/\\
moe_token_unpermute_with_ep/op_kernel --out traces/ut_unpermute
  aicore-sim ut my_test.cpp --kernel-src my_kernel/ --filter 'my_suite.*' --mode functional

builds the test file, the kernel's sources (DIR/<entry>.cpp, the entry being what
ICPU_RUN_KF launches, with the tiling struct of DIR/../op_host/*tiling*.h) and googletest into
one shared library (cached), runs its TESTs (gtest's output), and writes one run folder per
ICPU_RUN_KF under --out: <Suite.Test>-<k>/ with summary.json, trace.json, outputs/<gmN>.npy
(the GmAlloc'd buffers the launch wrote, raw bytes) and msprof op's CSVs.
exit 0: every TEST passed; 1: one failed; 2: a bad input or a compile error.
"""


def add_parser(sub: Any) -> None:
    p = subcommand(sub, "ut", "run a kernel unit test (gtest, tikicpulib.h) with its launches "
                   "simulated", "Build and run an Ascend C kernel unit test (gtest file of the "
                   "CPU-debug interface) on the simulator.", _EXAMPLES)
    p.add_argument("test", type=nonempty, metavar="TEST.cpp", help="the gtest file")
    p.add_argument("--kernel-src", type=nonempty, metavar="DIR", required=True,
                   help="the kernel's sources: a folder holding <entry>.cpp (ops-transformer: "
                        "<op>/op_kernel) or one .cpp")
    add_launches_options(p, "test")
    p.add_argument("--filter", type=nonempty, metavar="GTEST_FILTER",
                   help="run only the TESTs gtest's --gtest_filter pattern selects")
    p.add_argument("--strict", action="store_true",
                   help="a launch with a hazard (race, pending flag, ...) fails its TEST")
    p.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME[=VALUE]",
                   type=nonempty,
                   help="a macro for the kernel and the test (after the folder's "
                        "CMakeLists.txt AddOpTestCase options); repeatable")
    p.set_defaults(func=cmd_ut)


def cmd_ut(args: argparse.Namespace) -> int:
    from aicore_sim.cfront import ut

    test = existing(args.test, "test file")
    src = Path(args.kernel_src).expanduser()
    if not src.exists():
        raise UsageError(f"--kernel-src {args.kernel_src}: does not exist")
    entries = ut.entries_of(test)
    if not entries:
        raise UsageError(f"{args.test}: no ICPU_RUN_KF(kernel, blockDim, ...) launch in it")
    platform = platform_arg(args.platform or DEFAULT_PLATFORM)
    defines = tuple((d.partition("=")[0], d.partition("=")[2]) for d in args.defines)
    b = ut.UtBuild(test.resolve(), src.resolve(), tuple(entries), platform, defines)
    lib = ut.build_library(b)
    out = launches_folder(args.out, test.stem)
    session = ut.Session(lib, platform, out, mode=args.mode, trace=args.trace,
                         strict=args.strict)
    gtest_args = [f"--gtest_filter={args.filter}"] if args.filter else []
    with gc_paused():  # as 'run': the recorded objects hold no cycles worth the passes
        rc = session.run(gtest_args)
    done = [x for x in session.launches if x.folder is not None]
    failed = [x for x in session.launches if x.error is not None]
    print(f"aicore-sim ut: {len(session.launches)} launch(es), {len(failed)} failed; "
          f"{len(done)} run folder(s) in {out}/")
    return 0 if rc == 0 else 1

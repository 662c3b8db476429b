"""``aicore-sim exec``: an operator's aclnn example program, unmodified, with each aclnn call a
simulated launch (step: the command line; the build and the calls are
:mod:`aicore_sim.cfront.aclnn`'s).

Exit code: the program's own when it is 0 and every launch matched its golden (0); 1 when the
program returned non-zero or an output differs from the golden; 2 for a bad input or a compile
error.
"""

from __future__ import annotations

import argparse
from typing import Any

from aicore_sim.cli.common import (
    OP_SRC_HELP,
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
  aicore-sim exec <ops-transformer>/moe/moe_token_permute_with_ep/examples/\\
test_aclnn_moe_token_permute_with_ep.cpp
  aicore-sim exec test_aclnn_moe_token_permute.cpp --op-src <ops-transformer>/moe/\\
moe_token_permute --out traces/permute_example

compiles the program against aicore-sim's ACL / aclnn shim (each aclnnop/aclnn_<op>.h it
includes is generated from that operator's model: inputs, attributes, outputs in IR order),
runs its main: device memory is the simulator's, aclnn<Op>GetWorkspaceSize runs the
operator's first phase (its aclnn codes: 161001, 161002, 561002), aclnn<Op> is one simulated
launch writing the program's output buffers, with a run folder aclnn<Op>-<k>/ under --out and
its outputs compared with the operator's golden. The program prints what it prints on an NPU.
exit 0: the program returned 0 and every launch matched its golden; 1: not; 2: a bad input.
"""


def add_parser(sub: Any) -> None:
    p = subcommand(sub, "exec", "run an operator's aclnn example program with its launches "
                   "simulated", "Build and run a host program of the ACL runtime and aclnn "
                   "two-phase API (e.g. an operator's examples/test_aclnn_*.cpp) on the "
                   "simulator.", _EXAMPLES)
    p.add_argument("program", type=nonempty, metavar="PROGRAM.cpp", help="the program")
    p.add_argument("--op-src", type=nonempty, metavar="DIR", help=OP_SRC_HELP)
    add_launches_options(p, "program")
    p.set_defaults(func=cmd_exec)


def cmd_exec(args: argparse.Namespace) -> int:
    from aicore_sim.cfront import aclnn
    from aicore_sim.cli.common import op_source
    from aicore_sim.ops.registry import UnknownOpError, get_op

    program = existing(args.program, "program")
    ops = aclnn.operators_of(program)
    if not ops:
        raise UsageError(f"{args.program}: includes no aclnnop/aclnn_<op>.h (no operator to "
                         "call)")
    models = {}
    for name in ops:
        try:
            models[name] = get_op(name)
        except UnknownOpError:
            raise UsageError(f"{args.program}: includes aclnnop/aclnn_{name}.h, but no operator "
                             f"{name} is installed ('aicore-sim cases' lists them)") from None
    platform = platform_arg(args.platform or DEFAULT_PLATFORM)
    host = op_source(args)
    lib = aclnn.build_program(program.resolve(), list(models.values()))
    out = launches_folder(args.out, program.stem)
    session = aclnn.Session(lib, models, platform, out, mode=args.mode, trace=args.trace,
                            host=host)
    with gc_paused():  # as 'run': the recorded objects hold no cycles worth the passes
        rc = session.run()
    bad = [c for c in session.done if c.error or c.golden.startswith("golden: DIFFERS")]
    print(f"aicore-sim exec: the program returned {rc}; {len(session.done)} aclnn launch(es), "
          f"{len(bad)} failed or differing from the golden; run folders in {out}/")
    return 0 if rc == 0 and not bad else 1

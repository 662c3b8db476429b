"""``aicore-sim tiling``: the host tiling of case files (or bundled cases), printed or as JSON
lines (step: the command line; the tiling itself is the operator's ``tiling``)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from aicore_sim.cli.common import (
    OP_SRC_HELP,
    PROG,
    bundled,
    err,
    host_tiling_of,
    json_default,
    platform_arg,
    subcommand,
    with_platform,
)
from aicore_sim.cli.options import nonempty
from aicore_sim.ops.casefile import DEFAULT_PLATFORM, CaseFile, CaseFileError, load_case
from aicore_sim.sim.errors import UsageError

_TILING_EXAMPLES = """\
examples:
  aicore-sim tiling tiny                           a bundled case ('aicore-sim cases')
  aicore-sim tiling examples/cases/tiny.json
  aicore-sim tiling examples/cases/*.json --json   one JSON object per line and case
  aicore-sim tiling my_ut.json --platform '{"preset": "ut-fake-910b", "ub_size": 256}'
  aicore-sim tiling tiny --op-src <ops-transformer>/moe/moe_token_unpermute_with_ep_grad
                                                   the op's own host tiling C++

Any platform the fields' limits allow is tiled, also one 'run' refuses to simulate (e.g. no
usable UB); exit 0 when every case tiled, 2 otherwise.
"""


def add_parser(sub: Any) -> None:
    """The ``tiling`` subcommand."""
    t = subcommand(sub, "tiling", "host tiling of case files",
                   "Run the host tiling of each case file and print its result.", _TILING_EXAMPLES)
    t.add_argument("case_files", nargs="+", type=nonempty, metavar="CASE",
                   help="case file or bundled case name")
    t.add_argument("--platform", type=nonempty, metavar="P",
                   help="overrides the cases' platform (not empty)")
    t.add_argument("--json", action="store_true", help="one JSON object per line and case")
    t.add_argument("--op-src", type=nonempty, metavar="DIR", help=OP_SRC_HELP)
    t.set_defaults(func=cmd_tiling)


def tiling_of(cf: CaseFile) -> dict[str, Any]:
    """The tiling result of a case as a JSON-ready dict (fields in upstream order)."""
    specs = {k: None if s is None else (s.shape, s.dtype) for k, s in cf.inputs.items()}
    attrs = list(cf.attrs) if cf.positional_attrs else dict(cf.attrs)
    return {"case": cf.name, **cf.op.model.tiling(specs, attrs, cf.platform)}


def cmd_tiling(args: argparse.Namespace) -> int:
    with host_tiling_of(args):  # --op-src: the op's own host tiling C++
        return _tile_all(args)


def _tile_all(args: argparse.Namespace) -> int:
    platform = platform_arg(args.platform) if args.platform else None
    ok = True
    first_bad: str | None = None  # "<case>: <error>" of the first case not tiled
    for path in args.case_files:
        try:
            if not Path(path).exists() and not path.endswith(".json") and "/" not in path:
                try:
                    cf, _ = bundled(path, platform or DEFAULT_PLATFORM)  # a bundled case name
                except UsageError:
                    raise UsageError(f"{path}: not a file and not a bundled case name "
                                     f"('{PROG} cases' lists them)") from None
            else:
                cf = load_case(path)
            if platform is not None:
                cf = with_platform(cf, platform)
            row = tiling_of(cf)
        except (CaseFileError, UsageError) as e:
            row = {"case": Path(path).stem, "status": "invalid", "tiling_key": None,
                   "tiling_data": None, "workspace": [], "block_dim": None, "error": str(e)}
        ok &= row["status"] == "success"
        if row["status"] != "success" and first_bad is None:
            first_bad = f"{row['case']}: {' '.join(str(row.get('error')).split())}"
        if args.json:
            print(json.dumps(row, default=json_default))
            continue
        print(f"{row['case']}: {row['status']}")
        if row["status"] == "success":
            td = row["tiling_data"]
            print(f"  tiling_key {row['tiling_key']}, block_dim {row['block_dim']}, "
                  f"workspace {row['workspace']}")
            print(f"  tiling_data: {' '.join(str(v) for v in td.values())}")
            print("  " + ", ".join(f"{k}={v}" for k, v in td.items()))
        else:
            print(f"  error: {row['error']}")
    if first_bad is not None:  # the report above has every case; the contract's one line
        err(f"error: {first_bad}")
    return 0 if ok else 2

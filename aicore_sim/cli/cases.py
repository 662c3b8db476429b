"""``aicore-sim platforms`` and ``aicore-sim cases``: the platform presets and the bundled
cases of every installed operator, as tables or JSON lines (step: the command line)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from aicore_sim.cli.common import PROG, err
from aicore_sim.ops.casefile import DEFAULT_PLATFORM, case_document
from aicore_sim.ops.registry import DEFAULT_CASE, OpLoadError, get_op, op_names
from aicore_sim.sim import boards
from aicore_sim.sim.platform import list_presets, load_platform


def add_parsers(sub: Any) -> None:
    """The ``platforms`` and ``cases`` subcommands."""
    pl = sub.add_parser("platforms", help="list platform presets: key numbers, the boards "
                                          "each stands for, roofline sources",
                        description="List the platform presets: key numbers, the product "
                                    "family each stands for, where its HBM roofline comes "
                                    "from; then each family's boards and how a board tells "
                                    "which chip (so which preset) it carries.")
    pl.add_argument("--json", action="store_true", help="one JSON object per line")
    pl.set_defaults(func=cmd_platforms)

    c = sub.add_parser("cases", help="list the bundled cases",
                       description="List the bundled cases of every installed operator.")
    c.add_argument("--json", action="store_true", help="each case as a case-file document")
    c.set_defaults(func=cmd_cases)


# --------------------------------------------------------------------------------------------
# platforms
# --------------------------------------------------------------------------------------------


def cmd_platforms(args: argparse.Namespace) -> int:
    rows = []
    for name in list_presets():
        p = load_platform(name)
        fam = boards.family_of(p)
        rows.append({
            "name": name, "soc": p.soc, "aiv_cores": p.aiv_core_num, "clock_mhz": p.clock_mhz,
            "ub_bytes": p.ub_size, "ub_usable_bytes": p.core_mem_size_ub,
            "hbm_gbps": round(p.hbm_bytes_per_cycle * p.clock_mhz / 1000, 1),
            "queue_depth": p.queue_depth, "costs": p.costs.family,
            "family": fam.name if fam else None,
            "products": list(fam.products) if fam else [],
            "hbm_roofline_source": boards.roofline_source(p),
        })
    if args.json:
        for r in rows:
            print(json.dumps(r))
        return 0
    head = f"{'preset':<18} {'soc':<16} {'AIV':>4} {'MHz':>7} {'UB bytes':>9} " \
           f"{'usable':>8} {'HBM GB/s':>9} {'queue':>5}  {'costs':<5}  family"
    print(head)
    for r in rows:
        print(f"{r['name']:<18} {r['soc']:<16} {r['aiv_cores']:>4} {r['clock_mhz']:>7g} "
              f"{r['ub_bytes']:>9} {r['ub_usable_bytes']:>8} {r['hbm_gbps']:>9g} "
              f"{r['queue_depth']:>5}  {r['costs']:<5}  {r['family'] or '- (test platform)'}")
    print()
    print("families (data/products.toml, with sources):")
    for fam in sorted(boards.families(), key=lambda f: f.name):
        print(f"  {fam.name}: {', '.join(fam.products)}; which chip: {fam.identify}")
    print()
    print("HBM rooflines:")
    for r in rows:
        print(f"  {r['name']}: {r['hbm_gbps']:g} GB/s, {r['hbm_roofline_source']}")
    return 0


# --------------------------------------------------------------------------------------------
# cases
# --------------------------------------------------------------------------------------------


def _case_table(model: Any) -> list[str]:
    """The lines of one op's case table: name, the op's columns (``case_row``), description;
    columns of integers right-aligned."""
    rows = [(c.name, model.case_row(c), c.description) for c in model.cases().values()]
    if not rows:  # an op run from case files only (cpp_kernel: the file names the kernel)
        return ["(no bundled cases: its case files name what to run; e.g. "
                f"{PROG} run CASE.json)"]
    heads = list(rows[0][1])
    width = {h: max([len(h), *(len(r[h]) for _, r, _ in rows)]) for h in heads}
    right = {h: all(r[h].isdigit() for _, r, _ in rows) for h in heads}

    def cells(row: dict[str, str]) -> str:
        return " ".join(f"{row[h]:>{width[h]}}" if right[h] else f"{row[h]:<{width[h]}}"
                        for h in heads)

    name_w = max([24, *(len(n) for n, _, _ in rows)])
    lines = [f"{'case':<{name_w}} {cells({h: h for h in heads})} description"]
    for name, row, desc in rows:  # descriptions whole: they say what the case is for
        lines.append(f"{name:<{name_w}} {cells(row)} {desc}")
    return lines


def cmd_cases(args: argparse.Namespace) -> int:
    models, broken = [], []
    for name in op_names():
        try:
            models.append(get_op(name))
        except OpLoadError as e:  # the other ops are still listed
            broken.append(e)
    models.sort(key=lambda m: DEFAULT_CASE not in m.cases())  # the default op first
    try:
        _print_cases(args, models)
    finally:
        for e in broken:
            err(f"error: {e}")
    return 1 if broken else 0


def _print_cases(args: argparse.Namespace, models: list[Any]) -> None:
    if args.json:
        for m in models:
            for c in m.cases().values():
                print(json.dumps(case_document(c, DEFAULT_PLATFORM, m)))
        return
    for i, m in enumerate(models):
        if i:
            print()
        print(f"op {m.name}: {m.description}")
        for line in _case_table(m):
            print(line)
    print(f"\nrun one with: {PROG} run --case NAME   (default: {DEFAULT_CASE})")

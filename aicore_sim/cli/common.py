"""What the commands of :mod:`aicore_sim.cli` share: the program's name, the one line a message
takes on stderr, a subcommand's parser and the options several take, the ``--platform`` value,
a bundled case as a case file, the ``--out`` folder, and numpy values in JSON (step: the
command line)."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from aicore_sim.ops.casefile import DEFAULT_PLATFORM, CaseFile, case_document, parse_case
from aicore_sim.ops.registry import UnknownOpError, find_case
from aicore_sim.sim.errors import UsageError
from aicore_sim.sim.platform import Platform, load_platform
from aicore_sim.util import textinput

PROG = "aicore-sim"
DEBUG_ENV = "AICORE_SIM_DEBUG"  # "1" (as --debug): unexpected exceptions show their traceback


# control characters (C0 but tab and newline, DEL, C1) as visible escapes: a name read from a
# file (a case name, a path) cannot move the cursor, recolour or fake a line on the terminal
_CONTROLS = {c: f"\\x{c:02x}" for c in (*range(0x00, 0x09), *range(0x0B, 0x20),
                                       *range(0x7F, 0xA0))}


def visible(text: str) -> str:
    """``text`` with its control characters escaped (tab and newline kept)."""
    return text.translate(_CONTROLS)


def err(msg: str) -> None:
    """``aicore-sim: <msg>`` on stderr, as one line (whitespace runs become one space,
    control characters escaped)."""
    print(f"{PROG}: {visible(' '.join(str(msg).split()))}", file=sys.stderr)


def subcommand(sub: Any, name: str, help: str, description: str,
               examples: str) -> argparse.ArgumentParser:
    """The parser of the subcommand ``name``; its epilog ``examples`` (examples and notes)
    keeps its line breaks."""
    return sub.add_parser(name, help=help, description=description, epilog=examples,
                          formatter_class=argparse.RawDescriptionHelpFormatter)


def add_json_report(p: Any, json_help: str, report_help: str, report_metavar: str) -> None:
    """``--json`` (the results as JSON instead of text) and ``--report FILE`` (also write
    them as a report) of a command that prints results."""
    from aicore_sim.cli.options import nonempty

    p.add_argument("--json", action="store_true", help=json_help)
    p.add_argument("--report", type=nonempty, metavar=report_metavar, help=report_help)


def add_source_options(p: Any, tiling_help: str, kernel_help: str, op_help: str) -> None:
    """What runs in place of the case's tiling and the operator's Python port (``run``,
    ``verify``): ``--tiling FIELD=VALUE`` (repeatable), ``--kernel-src DIR`` (its Ascend C
    kernel) and ``--op-src DIR`` (its source folder: host tiling and kernel)."""
    from aicore_sim.cli.options import nonempty, tiling_setting

    p.add_argument("--tiling", type=tiling_setting, action="append", default=[],
                   metavar="FIELD=VALUE", help=tiling_help)
    p.add_argument("--kernel-src", type=nonempty, metavar="DIR", help=kernel_help)
    p.add_argument("--op-src", type=nonempty, metavar="DIR", help=op_help)


def platform_arg(spec: str) -> Platform:
    """The platform of a ``--platform`` value: a preset name, a preset TOML path, or a JSON
    object of fields (a bad one is a usage error, exit 2)."""
    try:
        if spec.lstrip().startswith("{"):
            return load_platform(textinput.loads_json(spec))
        return load_platform(spec)
    except (ValueError, KeyError, TypeError) as e:
        raise UsageError(f"--platform {spec}: {e.args[0] if e.args else e}") from None


def existing(arg: str, what: str, folder: bool = False) -> Path:
    """The path ``arg`` names (``~`` expanded): an existing folder (``folder``) or file, else a
    usage error ``<arg>: no such <what>``."""
    path = Path(arg).expanduser()
    if not (path.is_dir() if folder else path.is_file()):
        raise UsageError(f"{arg}: no such {what}")
    return path


def bundled(name: str, platform: str | Platform) -> tuple[CaseFile, dict[str, Any]]:
    """A bundled case (``aicore-sim cases``) as a case file, and ``{"case": <the op's case>}``."""
    try:
        model, case = find_case(name)
    except UnknownOpError as e:
        raise UsageError(str(e)) from None
    doc = case_document(case, DEFAULT_PLATFORM, model)
    cf = parse_case(doc, name)
    if isinstance(platform, Platform):
        cf = with_platform(cf, platform)
    return cf, {"case": case}


def with_platform(cf: CaseFile, platform: Platform) -> CaseFile:
    """``cf`` on another platform (``--platform`` overrides the case's)."""
    return replace(cf, platform=platform)


def json_default(o: Any) -> Any:
    """``json.dumps``'s ``default=`` for numpy scalars and arrays and paths."""
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


OP_SRC_HELP = ("run the operator from its own source folder (for a bundled op "
               "<ops-transformer>/moe/<op>): its op_host/*tiling*.cpp compiled against "
               "aicore-sim's CANN host shim gives the tiling, key, block dim and workspace in "
               "place of the Python port's, on the case's shapes, attributes and platform "
               "(docs/cpp_kernels.md)")


def op_source(args: Any) -> Any:
    """The ``--op-src`` folder's host sources (``aicore_sim.cfront.host.HostSource``), or
    ``None``; a folder that is not an operator's is a usage error naming it."""
    if not getattr(args, "op_src", None):
        return None
    from aicore_sim.cfront.host import HostSource

    return HostSource.of(args.op_src)


def host_tiling_of(args: Any) -> Any:
    """The context the op's host tiling runs in: ``--op-src``'s C++, else the port's."""
    from contextlib import nullcontext

    from aicore_sim.ascendc.host import using_host_source

    source = op_source(args)
    return nullcontext() if source is None else using_host_source(source)


def out_folder(out: str | None, stem: str) -> Path:
    """The folder a command writes, claimed (checked writable, locked) before the work:
    ``--out`` (absolute; it must not exist or be an empty folder) or a new
    ``traces/<time>-<stem>``."""
    from aicore_sim.util.claim import claim
    from aicore_sim.util.staging import check_target_folder, safe_name, unique_stamp

    if out:
        folder = claim(out, "--out")
        try:
            check_target_folder(folder)
        except OSError:
            raise UsageError(f"--out {out}: exists and is not an empty folder") from None
        return folder
    folder = unique_stamp(Path("traces"), safe_name(stem))  # the stem as one component
    claim(folder, "--out")
    return folder


def launches_folder(out: str | None, stem: str) -> Path:
    """The folder a program's launches write their run folders in (:func:`out_folder`),
    created."""
    folder = out_folder(out, stem)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def add_launches_options(p: Any, stem: str) -> None:
    """``--out``, ``--platform``, ``--mode`` and ``--trace`` of a command whose C++ program
    makes launches (``ut``, ``exec``); ``stem`` names the default folder's last part."""
    from aicore_sim.cli.options import nonempty
    from aicore_sim.ops.casefile import MODES

    p.add_argument("--out", type=nonempty, metavar="DIR",
                   help="folder of the launches' run folders (must not exist or be empty; "
                        f"default traces/<time>-<{stem}>)")
    p.add_argument("--platform", type=nonempty, metavar="P",
                   help=f"preset name, preset TOML path or JSON object (default "
                        f"{DEFAULT_PLATFORM})")
    p.add_argument("--mode", choices=MODES, default="timed",
                   help="timed (default), functional (no timing, no trace) or timing-only (no "
                        "results in the buffers)")
    p.add_argument("--trace", choices=("full", "lanes", "none"), default="full",
                   help="trace.json detail of each launch (default full)")


"""How much of an operator family the C++ front end carries: the coverage table.

Step of the flow: a front end over a source tree (an ops-transformer checkout's ``moe/``, or
any folder of operators in its layout: ``<op>/op_host/<op>_def.cpp``, ``<op>/op_kernel/
<op>.cpp``, ``<op>/op_host/*tiling*.h``). For every operator of the tree the A2/A3 AI Core
runs (its definition adds an ``ascend910b`` or ``ascend910_93`` config) it answers, in order:

1. **kernel compiles**: the kernel entry against the shim, on ``ascend910b1``, with the
   ``DTYPE_<NAME>`` macros of the definition's first dtype column (one build; the compile
   cache makes a second look instant); otherwise the compiler's first error, which names the
   API item the shim lacks;
2. **host compiles**: the operator's ``op_host/*tiling*.cpp`` against the CANN host shim
   (``aicore_sim.cfront.host``), linked into one library that registers its tiling; otherwise
   the compiler's first error, which names the host API item the shim lacks;
3. **runs, golden exact**: for an operator with a model installed (``aicore-sim cases`` lists
   it: its cases and numpy golden), its smallest bundled case runs from this tree's sources -
   ``run --op-src`` (host tiling and kernel C++) when the host compiles, else the kernel with
   the model's Python tiling (``--kernel-src``) - and every output is compared with the golden;
4. the first missing item, when an operator does not run end to end.

Nothing of the tree is copied: it is read where it lies, as ``--kernel-src`` reads it.
"""

from __future__ import annotations

import math
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from aicore_sim.sim.errors import InputError

_GE_DTYPES = {"DT_FLOAT16": "float16", "DT_FLOAT": "float32", "DT_BF16": "bfloat16",
              "DT_INT32": "int32", "DT_INT64": "int64", "DT_INT8": "int8", "DT_UINT8": "uint8",
              "DT_INT16": "int16", "DT_UINT16": "uint16", "DT_UINT32": "uint32",
              "DT_UINT64": "uint64", "DT_BOOL": "bool", "DT_DOUBLE": "float64"}
_IO = re.compile(r"this->(Input|Output)\(\s*\"(\w+)\"\s*\)(.*?);", re.S)
_DTYPES = re.compile(r"\.DataType\(\s*(?:\{([^}]*)\}|(\w+)\s*\))")
_LIST = re.compile(r"std::vector<\s*ge::DataType\s*>\s*(\w+)\s*=\s*\{([^}]*)\}")
_A2A3 = re.compile(r"AddConfig\(\s*\"ascend910(?:b|_93)\"")
NO_MODEL = "a model of the operator (its cases and numpy golden): none installed"


@dataclass
class OpCoverage:
    """One operator's row of the coverage table."""

    name: str
    kernel_compiles: bool | None = None
    kernel_error: str | None = None
    host_compiles: bool | None = None
    host_error: str | None = None
    runs: bool | None = None
    golden_exact: bool | None = None
    cases: list[str] = field(default_factory=list)
    first_missing: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _strip_comments(text: str) -> str:
    return re.sub(r"//[^\n]*|/\*.*?\*/", "", text, flags=re.S)


def dtype_columns(def_text: str) -> dict[str, list[str | None]]:
    """Each of the operator's own (``this->``) inputs and outputs -> its dtype columns in its
    definition, as canonical names (``None``: a GE dtype not known here); an input or output
    without a ``DataType`` list is left out."""
    text = _strip_comments(def_text)
    lists = dict(_LIST.findall(text))  # named dtype lists: .DataType(tokenTypes)
    out: dict[str, list[str | None]] = {}
    for _kind, name, chain in _IO.findall(text):
        m = _DTYPES.search(chain)
        if not m or name in out:
            continue
        items = m.group(1) if m.group(1) is not None else lists.get(m.group(2), "")
        out[name] = [_GE_DTYPES.get(x.strip().removeprefix("ge::"))
                     for x in items.split(",") if x.strip()]
    return out


def dtype_macros(def_text: str) -> dict[str, Any]:
    """``DTYPE_<NAME>`` -> the numpy dtype of the first dtype column of the operator's own
    (``this->``) inputs and outputs in its definition (an unknown GE dtype: no macro)."""
    return {f"DTYPE_{name.upper()}": _dtype(col[0])
            for name, col in dtype_columns(def_text).items() if col and col[0]}


def absent_dtype_macros(def_text: str, present: dict[str, Any]) -> dict[str, Any]:
    """``DTYPE_<NAME>`` of the tensors a call leaves out, from the definition's first dtype
    column whose entries match every given tensor's dtype (``present``: name -> dtype): the
    binary a real build compiles for that column defines every tensor's macro, an absent
    optional one's too. No matching column: none."""
    cols = dtype_columns(def_text)
    given = {n: np.dtype(d).name if np.dtype(d) != _dtype("bfloat16") else "bfloat16"
             for n, d in present.items() if d is not None and n in cols}
    width = min((len(c) for c in cols.values()), default=0)
    for j in range(width):
        if all(cols[n][j] == dt for n, dt in given.items()):
            return {f"DTYPE_{n.upper()}": _dtype(c[j]) for n, c in cols.items()
                    if n not in given and c[j] is not None}
    return {}


def _dtype(name: str) -> Any:
    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def operators(root: Path) -> list[tuple[str, Path, Path]]:
    """(name, definition file, kernel entry) of every A2/A3 AI Core operator under ``root``,
    by name; an operator folder without a kernel entry is listed with a missing one."""
    out = []
    for d in sorted(p for p in root.iterdir() if p.is_dir()):
        defs = sorted((d / "op_host").glob("*_def.cpp"))
        if not defs:
            continue
        text = defs[0].read_text(errors="replace")
        if not _A2A3.search(_strip_comments(text)):
            continue
        out.append((d.name, defs[0], d / "op_kernel" / f"{d.name}.cpp"))
    return out


_NO_FILE = re.compile(r"fatal error: ([\w./]+): No such file")
_NOT_PROVIDED = re.compile(r"aicore-sim does not provide (\w+) yet")
_NO_TYPE = re.compile(r"['\u2018](\w+)['\u2019] does not name a type")
_NOT_IN_HOST_SHIM = re.compile(r"CANN host shim does not provide ([\w:]+) yet")
_NO_STRUCT = re.compile(r"TILING_DATA_FIELD_DEF_STRUCT\((\w+),")
_AT = re.compile(r"([\w./-]+\.(?:h|cpp)):(\d+):\d+: (?:fatal )?error: (.*)")


def missing_item(error: str) -> str:
    """The item a kernel's first build error says is missing, in a few words: a header, an
    API item, a tiling struct, else the error itself (at its file:line, shortened)."""
    for pattern, words in ((_NO_FILE, "header {} (CANN's; the shim has no copy)"),
                           (_NOT_PROVIDED, "API item {}"),
                           (_NOT_IN_HOST_SHIM, "host API item {}"),
                           (_NO_TYPE, "type {} (neither the shim nor the tree declares it)"),
                           (_NO_STRUCT, "tiling struct {} (declared outside the op's tiling "
                                        "headers)")):
        m = pattern.search(error)
        if m:
            return words.format(m.group(1))
    m = _AT.search(error)
    if m:
        text = f"{Path(m.group(1)).name}:{m.group(2)}: {m.group(3)}"
        return text if len(text) <= 140 else text[:137] + "..."
    return error if len(error) <= 140 else error[:137] + "..."


def _check_kernel(name: str, def_file: Path, kernel: Path, platform: Any
                  ) -> tuple[bool, str | None]:
    from aicore_sim.cfront import build
    from aicore_sim.cfront.kernel import KernelSource

    if not kernel.is_file():
        return False, f"kernel entry op_kernel/{name}.cpp (none in the tree)"
    try:
        src = KernelSource.of(kernel.parent)
        variant, _ = src.variant(name, platform, dtype_macros(def_file.read_text(
            errors="replace")))
        build.shared_object(variant)
    except build.NoCompilerError:
        raise
    except InputError as e:
        return False, str(e)
    return True, None


def _check_host(op_dir: Path) -> tuple[bool | None, str | None]:
    """(host compiles, its first error): ``None`` when the operator has no host tiling
    source."""
    from aicore_sim.cfront import build
    from aicore_sim.cfront.host import HostSource

    try:
        source = HostSource.of(op_dir)
        source.sources()
    except InputError:
        return None, None
    try:
        if not source.built.op_types():
            return False, "its host sources register no IMPL_OP_OPTILING"
    except build.NoCompilerError:
        raise
    except InputError as e:
        return False, str(e)
    return True, None


def _run_port(case: str, op_dir: Path, op_src: bool) -> tuple[bool, bool | None, str | None]:
    """(runs, every output exact, what failed) of bundled ``case`` from the tree's sources:
    ``aicore-sim run --case CASE --op-src DIR`` (or ``--kernel-src DIR/op_kernel``) as a user
    runs it (functional: numbers only), exit 0 exact, 1 a golden mismatch, 2 the line that
    names what is missing."""
    source = ["--op-src", str(op_dir)] if op_src else ["--kernel-src", str(op_dir / "op_kernel")]
    with tempfile.TemporaryDirectory() as tmp:
        p = subprocess.run([sys.executable, "-m", "aicore_sim", "run", "--case", case,
                            *source, "--mode", "functional", "--out",
                            str(Path(tmp) / "run"), "--no-plot", "--trace", "none", "--jobs",
                            "1"], capture_output=True, text=True)
    line = (p.stderr.strip().splitlines() or [""])[-1].removeprefix("aicore-sim: ")
    if p.returncode == 0:
        return True, True, None
    if p.returncode == 1 and "differs from the golden" in line:
        return True, False, None
    return False, None, line or f"exit {p.returncode}"


def _smallest(model: Any) -> str | None:
    """The bundled case of ``model`` with the fewest input elements."""
    from aicore_sim.ops.casefile import case_document

    best = None
    for name, case in model.cases().items():
        inputs = case_document(case, model=model)["inputs"].values()
        size = sum(math.prod(t["shape"]) for t in inputs if t)
        if best is None or size < best[0]:
            best = (size, name)
    return None if best is None else best[1]


def coverage(root: Path, platform: Any, progress: Callable[[str], None] | None = None,
             only: Callable[[str], bool] | None = None) -> list[OpCoverage]:
    """The coverage row of every A2/A3 operator under ``root`` (see the module); ``only``
    keeps the operators whose name it accepts."""
    from aicore_sim.ops.registry import UnknownOpError, get_op

    rows = []
    for name, def_file, kernel in operators(root):
        if only is not None and not only(name):
            continue
        if progress is not None:
            progress(name)
        row = OpCoverage(name)
        row.kernel_compiles, row.kernel_error = _check_kernel(name, def_file, kernel, platform)
        row.host_compiles, row.host_error = _check_host(kernel.parent.parent)
        try:
            op = get_op(name)
        except UnknownOpError:
            op = None
        if op is not None:
            row.cases = list(op.cases())
            small = _smallest(op)
            if row.kernel_compiles and small:
                row.runs, row.golden_exact, err = _run_port(small, kernel.parent.parent,
                                                            bool(row.host_compiles))
                if err:
                    row.first_missing = err
        if row.first_missing is None:
            if not row.kernel_compiles:
                row.first_missing = missing_item(row.kernel_error or "")
            elif not row.host_compiles:
                row.first_missing = (missing_item(row.host_error) if row.host_error else
                                     "host tiling source (op_host/*tiling*.cpp: none)")
            elif op is None:
                row.first_missing = NO_MODEL
            elif row.golden_exact is False:
                row.first_missing = "outputs differ from the model's golden"
        rows.append(row)
    return rows


def table(rows: list[OpCoverage]) -> str:
    """The coverage table as markdown."""
    def yes(v: bool | None) -> str:
        return "-" if v is None else ("yes" if v else "no")

    out = ["| operator | kernel compiles | host compiles | runs | golden exact | bundled cases "
           "| first missing item |", "|---|---|---|---|---|---:|---|"]
    for r in rows:
        out.append(f"| `{r.name}` | {yes(r.kernel_compiles)} | {yes(r.host_compiles)} | "
                   f"{yes(r.runs)} | {yes(r.golden_exact)} | {len(r.cases)} | "
                   f"{(r.first_missing or '-').replace('|', '/')} |")
    return "\n".join(out)


__all__ = ["NO_MODEL", "OpCoverage", "absent_dtype_macros", "coverage", "dtype_columns",
           "dtype_macros", "missing_item", "operators", "table"]

"""Which Ascend C APIs the MoE kernels of an ops-transformer checkout call that we lack.

Usage: ``python benchmarks/api_coverage.py --upstream PATH [--report reports/api_coverage.md]
[--all-files]``. ``PATH`` is an ops-transformer checkout (a folder holding ``moe/``); nothing
is built or run, the C++ sources are read as text. The report goes to stdout and, in markdown,
to ``--report``.

What is scanned (per operator, an operator being a folder ``moe/<op>/`` with an
``op_kernel/``; ``moe/3rd/`` holds no operator of its own and is not entered):

- The A2/A3 kernel is the one the op's definition builds for ascend910b / ascend910_93: the
  entry file ``op_kernel/<op>.cpp`` (the default ``opFile``). The Ascend 950 kernel is
  ``op_kernel/<op>_apt.cpp`` (``opFile.value = <op>_apt`` in ``op_host/*_def.cpp``) plus the
  ``arch35/`` folder; an op with no ``<op>.cpp`` has no A2/A3 kernel and is listed apart.
- From the entry on, every ``#include "..."`` is followed (relative to the including file,
  then to ``op_kernel/``, then to ``moe/``); includes into ``arch35/`` or of ``*_apt.cpp``
  are not followed, unresolved ones (``kernel_operator.h`` ...) are the library's.
- Preprocessor conditions are evaluated for an A2/A3 vector core where they depend only on
  the target macros (``__CCE_AICORE__`` = 220, ``__NPU_ARCH__`` = 2201, ``__DAV_C220_VEC__``
  defined, ``__DAV_C220_CUBE__`` and ``__CCE_KT_TEST__`` not): branches for 310P
  (``__CCE_AICORE__ == 200``) or 950 (``__NPU_ARCH__ == 3510``) are dropped. Any other
  condition (dtype macros, include guards, ``ASCENDC_OOM`` ...) keeps every branch.
- ``--all-files`` instead scans every ``*.h`` / ``*.cpp`` under ``op_kernel/`` outside
  ``arch35/`` and ``*_apt.cpp`` with no preprocessing (a cruder rule, to compare).

What is counted as an "API item" (each with the operators using it):

- functions, by name, from the allow-list ``API_FUNCTIONS`` below (called as ``Name(``,
  ``Name<...>(`` or ``AscendC::Name(``; it includes the few library internals some kernels
  call on raw addresses, ``API_INTERNAL``), unless the call is the operator's own: its
  sources define or declare a function of that name taking that many arguments (a kernel's
  scalar ``Max(a, b)`` is its own, a 4-argument ``Max`` the library's), or a class or macro
  of that name. ``AscendC::Name(`` is always the library's; ``Other::Name(`` never is;
- methods (``.Name(`` / ``->Name(``) from ``API_METHODS``, named ``Owner.Name``; the owner is
  the declared type of the receiver variable when the sources declare it (``GlobalTensor<T>
  xGm;`` ...), else the method's usual owner in the table;
- types from ``API_TYPES`` (classes and parameter / info structs) wherever they are named;
- round modes ``RoundMode::X``;
- overload forms, told apart only for the functions we provide in some form (``FORMS``): by
  the number of arguments (count form vs mask + repeat form of a vector call) and, for
  ``DataCopy``, whether the third argument is a parameter struct (a brace list, a variable
  declared with a ``*Params`` type, or a name containing "param") rather than an element
  count. A mask + repeat call written with a bit mask (``uint64_t mask[2]``) has the same
  arity as the lane-count mask and is not told apart.

A kernel whose only missing item is ``GetUserWorkspace`` with its result never used is
counted apart as well ("covered if an unused GetUserWorkspace is ignored").

Other Ascend C vocabulary (``HardEvent::``, ``TPosition::`` / ``QuePosition::``, ``PIPE_*``,
``EVENT_ID*``, ``CMPMODE::`` and the other enums, tensor element types) is listed per op in
its own table and not counted as items. Kernel-framework macros (``TILING_KEY_IS``,
``GET_TILING_DATA*``, ``KERNEL_TASK_TYPE_DEFAULT`` ...) are not API items (a port's tiling is
Python). Identifiers that look like calls but are neither allow-listed, nor defined in the
op's sources, nor C++ keywords / std / casts, are listed as "unclassified" for a human to
check.

What we provide is read from ``aicore_sim.ascendc`` itself (its exported functions, classes,
the public methods of LocalTensor / GlobalTensor / TPipe / TQue / TQueBind / TBuf, the
``RoundMode`` members); which overload forms each provided function accepts is the explicit
``FORMS`` table below, transcribed from their signatures and docstrings.
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_REPORT = ROOT / "reports" / "api_coverage.md"

# --- the allow-lists: names of the Ascend C API (basic and high-level) the scanner knows ---

API_FUNCTIONS = frozenset("""
DataCopy DataCopyPad SetFlag WaitFlag PipeBarrier GetBlockIdx GetBlockNum GetSubBlockIdx
GetTaskRation GetTPipePtr SyncAll GetUserWorkspace GetSysWorkSpacePtr InitGlobalMemory
InitOutput SetAtomicAdd SetAtomicNone SetAtomicMax SetAtomicMin SetAtomicType
DataCacheCleanAndInvalid SetVectorMask ResetMask SetMaskCount SetMaskNorm SetDeqScale
SetPadValue SetSysWorkspace InitSocState DivCeil
Add Sub Mul Div Max Min And Or Adds Muls Maxs Mins ShiftLeft ShiftRight LeakyRelu Axpy
Exp Ln Abs Sqrt Rsqrt Reciprocal Relu Not Cast Copy Duplicate Brcb Select Compare
CompareScalar GatherMask Gather Gatherb Scatter ArithProgression CreateVecIndex Sort Sort32
MrgSort MrgSort4 Concat Extract GetSortLen GetSortOffset ProposalConcat ProposalExtract
ReduceSum ReduceMax ReduceMin WholeReduceSum WholeReduceMax WholeReduceMin BlockReduceSum
BlockReduceMax BlockReduceMin PairReduceSum RepeatReduceSum GetReduceMaxMinCount
TopK SoftMax SoftmaxFlashV2 SoftmaxFlash Sigmoid Broadcast BroadCast Arange ToFloat ToBfloat16
AscendDequant AscendQuant Power Sin Cos Tanh Erf Floor Ceil Round Trunc Sign Transpose
TransDataTo5HD SetAippFunctions GetArithProgressionMaxMinTmpSize
""".split())

# library internals some kernels call directly on raw addresses (``__ubuf__ T*``): counted
# as functions, since a port needs them as much as the public calls
API_INTERNAL = frozenset("""
DataCopyPadGm2UBImpl DataCopyPadUB2GMImpl BlockReduceMaxIntrinsicsImpl
BlockReduceSumIntrinsicsImpl
""".split())
API_FUNCTIONS = API_FUNCTIONS | API_INTERNAL

# method name -> its usual owner (used when the receiver's declared type is not found)
API_METHODS = {
    "InitBuffer": "TPipe", "FetchEventID": "TPipe", "AllocEventID": "TPipe",
    "ReleaseEventID": "TPipe", "Destroy": "TPipe", "Reset": "TPipe", "InitBufPool": "TPipe",
    "AllocTensor": "TQue", "FreeTensor": "TQue", "EnQue": "TQue", "DeQue": "TQue",
    "VacantInQue": "TQue", "HasTensorInQue": "TQue", "GetTensorCountInQue": "TQue",
    "Get": "TBuf", "GetWithOffset": "TBuf",
    "SetGlobalBuffer": "GlobalTensor", "SetL2CacheHint": "GlobalTensor",
    "GetPhyAddr": "LocalTensor", "ReinterpretCast": "LocalTensor", "SetSize": "LocalTensor",
    "GetSize": "LocalTensor", "GetValue": "LocalTensor", "SetValue": "LocalTensor",
    "SetBufferLen": "LocalTensor", "GetLength": "LocalTensor", "SetUserTag": "LocalTensor",
    "GetUserTag": "LocalTensor", "GetPosition": "LocalTensor",
}
OWNERS = ("LocalTensor", "GlobalTensor", "TPipe", "TQue", "TQueBind", "TBuf")

API_TYPES = frozenset("""
TPipe TQue TQueBind TBuf TBufPool LocalTensor GlobalTensor TEventID
DataCopyParams DataCopyExtParams DataCopyPadParams DataCopyPadExtParams DataCopyEnhancedParams
UnaryRepeatParams BinaryRepeatParams CopyRepeatParams GatherMaskParams GatherRepeatParams
BrcbRepeatParams MrgSortSrcList MrgSort4Info TopKInfo TopkTiling SoftMaxShapeInfo SoftMaxTiling
SliceInfo ShapeInfo Nd2NzParams
""".split())

# vocabulary: reported per op, not counted as items
VOCAB_ENUMS = ("HardEvent", "TPosition", "QuePosition", "CMPMODE", "SELMODE", "ReduceOrder",
               "TopKMode", "MaskMode", "DcciDst", "CacheLine", "CacheMode", "MaskedSelectMode",
               "RoundMode")
ELEMENT_TYPES = {"half": "float16", "float": "float32", "bfloat16_t": "bfloat16",
                 "int32_t": "int32", "int64_t": "int64", "uint32_t": "uint32",
                 "int8_t": "int8", "uint8_t": "uint8", "int16_t": "int16", "uint16_t": "uint16",
                 "uint64_t": "uint64", "bool": "bool", "int4b_t": "int4"}

# kernel-framework macros and debug hooks: not API items (tiling and launch are Python in a port)
FRAMEWORK = frozenset("""
TILING_KEY_IS GET_TILING_DATA GET_TILING_DATA_WITH_STRUCT GET_TILING_DATA_MEMBER
KERNEL_TASK_TYPE_DEFAULT REGISTER_TILING_DEFAULT REGISTER_TILING_FOR_TILINGKEY ASSERT
ASCENDC_ASSERT TRACE_START TRACE_STOP OOMCheckAddrRange
""".split())

CPP_WORDS = frozenset("""
if for while switch return sizeof alignof decltype static_cast reinterpret_cast const_cast
dynamic_cast static_assert defined __has_include noexcept catch template operator typeid new
delete else do case default constexpr volatile const unlikely likely alignas throw
int char short long unsigned signed float double bool void auto half bfloat16_t int8_t uint8_t
int16_t uint16_t int32_t uint32_t int64_t uint64_t size_t __aicore__ __global__ __gm__ __ubuf__
__inout_pipe__ __restrict__ printf assert
""".split())
STD_QUALIFIERS = frozenset({"std", "Simt", "simt"})
API_QUALIFIERS = frozenset({"AscendC", "AscendCUtils"})

# --- what we provide in which form -----------------------------------------------------------
# function -> {argument count: form label (None = the base form)}, for the functions
# aicore_sim.ascendc provides; from their signatures in aicore_sim/ascendc/{vector,datacopy}.py.
FORMS: dict[str, dict[int, str | None]] = {
    # binary: (dst, a, b, count) | (dst, a, b, mask, repeatTime, BinaryRepeatParams)
    **{f: {4: None, 6: "mask+repeat"} for f in ("Add", "Sub", "Mul", "Div", "Max", "Min")},
    # vector-scalar: (dst, src, scalar, count) | (.., mask, repeatTime, UnaryRepeatParams)
    **{f: {4: None, 6: "mask+repeat"} for f in ("Muls", "Adds", "Maxs", "Mins")},
    # unary: (dst, src, count) | (dst, src, mask, repeatTime, UnaryRepeatParams)
    **{f: {3: None, 5: "mask+repeat"} for f in ("Exp", "Abs", "Relu", "Sqrt")},
    "Duplicate": {3: None, 6: "mask+repeat"},    # (dst, scalar, count) | (.., mask, rep, blk, rep)
    "Cast": {4: None},                           # Cast(dst, src, roundMode, count)
    "Copy": {5: None},                           # Copy(dst, src, mask, repeat, CopyRepeatParams)
    "BlockReduceSum": {7: None},                 # (dst, src, repeat, mask, dRep, sBlk, sRep)
    "WholeReduceSum": {7: None},                 # (dst, src, mask, repeat, dRep, sBlk, sRep)
    "DataCopy": {3: None},                       # DataCopy(dst, src, calCount) only
    "DataCopyPad": {3: None, 4: None},           # (dst, src, params[, padParams]), all 4 structs
    "SetFlag": {1: None}, "WaitFlag": {1: None}, "PipeBarrier": {0: None},
    "SyncAll": {0: None, 2: None, 3: None},      # hard form | soft (gmWs, ubWs[, usedCores])
    # count forms only (aicore_sim/ascendc/select.py)
    "Compare": {5: None},                        # (dst, src0, src1, cmpMode, count)
    "CompareScalar": {5: None},                  # (dst, src0, scalar, cmpMode, count)
    "Select": {6: None},                         # (dst, selMask, src0, src1, selMode, count)
    "GatherMask": {7: None},                     # (dst, src0, pattern, reduceMode, mask, p, cnt)
    **{f: {4: None} for f in ("And", "Or", "ShiftLeft", "ShiftRight")},
    "WholeReduceMax": {7: None, 8: None},        # (.., dRep, sBlk, sRep[, order])
    "Brcb": {4: None},                           # (dst, src, repeatTime, BrcbRepeatParams)
    "Gather": {5: None},                         # (dst, src, srcOffset, srcBaseAddr, count)
    "Sigmoid": {3: None, 4: None},               # (dst, src[, sharedTmpBuffer], calCount)
    "PairReduceSum": {7: None},                  # (dst, src, repeat, mask, dRep, sBlk, sRep)
    "Sort32": {4: None},                         # (dst, scores, indices, repeatTime)
}
# names of the forms we lack, by argument count (for the provided functions above)
FORM_NAMES: dict[str, dict[int, str]] = {
    "Cast": {6: "mask+repeat"}, "Copy": {3: "count"},
    "Compare": {7: "mask+repeat"}, "CompareScalar": {7: "mask+repeat"},
    "Select": {8: "mask+repeat"}, "And": {6: "mask+repeat"}, "Or": {6: "mask+repeat"},
    "ShiftLeft": {6: "mask+repeat"}, "ShiftRight": {6: "mask+repeat"},
    "DataCopy": {4: "DataCopyParams + DataCopyEnhancedParams"},
}
DATA_COPY_PARAMS_FORM = "DataCopyParams"
# forms FORMS cannot key by argument count: DataCopy(dst, src, DataCopyParams) has the arity of
# the count form (aicore_sim/ascendc/datacopy.py accepts both)
PROVIDED_SAME_ARITY_FORMS = frozenset({f"DataCopy ({DATA_COPY_PARAMS_FORM})"})

A2A3_MACROS = {"__CCE_AICORE__": 220, "__NPU_ARCH__": 2201, "__DAV_C220_VEC__": 1}
A2A3_UNDEFINED = frozenset({"__DAV_C220_CUBE__", "__CCE_KT_TEST__", "__DAV_M200__",
                            "__DAV_C310__"})
EXCLUDED_DIRS = frozenset({"arch35"})


class UsageError(Exception):
    """A bad --upstream path (exit 2, one line)."""


# --- what aicore_sim.ascendc provides ----------------------------------------------------------

def provided_items() -> set[str]:
    """Items of ``aicore_sim.ascendc``: functions (base and FORMS forms), types, methods and
    round modes."""
    import enum
    import inspect

    import aicore_sim.ascendc as m

    items: set[str] = set()
    for name in dir(m):
        obj = getattr(m, name)
        if name.startswith("_"):
            continue
        if inspect.isclass(obj) and not issubclass(obj, enum.Enum):
            items.add(name)
        elif inspect.isfunction(obj):
            items.add(name)
            for label in FORMS.get(name, {}).values():
                if label:
                    items.add(f"{name} ({label})")
    for owner in OWNERS:
        cls = getattr(m, owner)
        for meth in dir(cls):
            if meth[:1].isupper() and callable(getattr(cls, meth)):
                items.add(f"{owner}.{meth}")
    items.update(PROVIDED_SAME_ARITY_FORMS)
    items.update(f"RoundMode::{r.name}" for r in m.RoundMode)
    items.update(f"HardEvent::{e.name}" for e in m.HardEvent)
    items.update(f"TPosition::{p.name}" for p in m.TPosition)
    items.update(f"QuePosition::{p.name}" for p in m.TPosition)  # Ascend C: an alias
    items.update(n for n in dir(m) if n.startswith(("PIPE_", "EVENT_ID")))
    for cname, dname in ELEMENT_TYPES.items():
        try:
            from aicore_sim.sim.dtypes import as_dtype
            as_dtype(dname)
            items.add(f"dtype {cname}")
        except (ValueError, TypeError):
            pass
    return items


# --- source text handling ----------------------------------------------------------------------

_COMMENT_STRING = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'',
                             re.S)


def strip_comments(text: str) -> str:
    """Comments removed (newlines kept) and string literals emptied, except include paths."""
    def repl(mt: re.Match) -> str:
        s = mt.group(0)
        if s.startswith("/"):
            return "\n" * s.count("\n") if s.startswith("/*") else ""
        if s.startswith('"') and text[max(0, mt.start() - 12):mt.start()].rstrip().endswith(
                "#include"):
            return s
        return s[0] * 2
    return _COMMENT_STRING.sub(repl, text)


_SAFE_NODES = (ast.Expression, ast.BoolOp, ast.BinOp, ast.UnaryOp, ast.Compare, ast.Constant,
               ast.And, ast.Or, ast.Not, ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE,
               ast.Add, ast.Sub, ast.Mult, ast.USub, ast.UAdd, ast.Invert, ast.BitAnd,
               ast.BitOr)


def eval_condition(cond: str) -> bool | None:
    """True / False for a condition on the A2/A3 target macros only; None if it depends on
    anything else."""
    cond = cond.strip()

    def defined(mt: re.Match) -> str:
        name = mt.group(1)
        if name in A2A3_MACROS:
            return " 1 "
        if name in A2A3_UNDEFINED:
            return " 0 "
        return " __UNKNOWN__ "
    expr = re.sub(r"\bdefined\s*\(?\s*(\w+)\s*\)?", defined, cond)
    if "__UNKNOWN__" in expr:
        return None
    for name, value in A2A3_MACROS.items():
        expr = re.sub(rf"\b{name}\b", str(value), expr)
    for name in A2A3_UNDEFINED:
        expr = re.sub(rf"\b{name}\b", "0", expr)
    if re.search(r"[A-Za-z_]", expr.replace("&&", "").replace("||", "")):
        return None
    expr = expr.replace("&&", " and ").replace("||", " or ")
    expr = re.sub(r"!(?!=)", " not ", expr)
    expr = re.sub(r"(\d+)[uUlL]+\b", r"\1", expr)
    try:
        tree = ast.parse(expr.strip(), mode="eval")
    except SyntaxError:
        return None
    if not all(isinstance(n, _SAFE_NODES) for n in ast.walk(tree)):
        return None
    return bool(eval(compile(tree, "<cond>", "eval"), {"__builtins__": {}}))  # noqa: S307


def live_text(text: str, preprocess: bool) -> str:
    """The source with comments gone and, if ``preprocess``, the lines of branches dead on
    A2/A3 blanked (line count kept)."""
    text = strip_comments(text).replace("\\\n", " ")
    if not preprocess:
        return text
    out = []
    stack: list[list] = []  # [parent_live, taken, live]
    live = True
    for line in text.split("\n"):
        mt = re.match(r"\s*#\s*(if|ifdef|ifndef|elif|else|endif)\b(.*)", line)
        if not mt:
            out.append(line if live else "")
            continue
        kind, rest = mt.group(1), mt.group(2)
        if kind in ("if", "ifdef", "ifndef"):
            if kind == "ifdef":
                rest = f"defined({rest.strip()})"
            elif kind == "ifndef":
                rest = f"!defined({rest.strip()})"
            val = eval_condition(rest)
            branch = live and val is not False
            stack.append([live, val is True and live, branch])
            live = branch
        elif kind == "elif" and stack:
            parent, taken, _ = stack[-1]
            val = eval_condition(rest)
            branch = parent and not taken and val is not False
            stack[-1] = [parent, taken or (val is True and parent), branch]
            live = branch
        elif kind == "else" and stack:
            parent, taken, _ = stack[-1]
            live = parent and not taken
            stack[-1][2] = live
        elif kind == "endif" and stack:
            live = stack.pop()[0]
        out.append("")
    return "\n".join(out)


def split_args(text: str, start: int) -> tuple[list[str], int]:
    """Top-level arguments of the call whose ``(`` is at ``start``; and the index after ``)``."""
    depth, args, cur, i = 0, [], [], start + 1
    n = len(text)
    while i < n:
        c = text[i]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                args.append("".join(cur).strip())
                return [a for a in args if a] if args != [""] else [], i + 1
            depth -= 1
        elif c == "<" and i and (text[i - 1].isalnum() or text[i - 1] == "_"):
            mt = re.match(r"<[^;(){}<>]*>", text[i:])
            if mt and "&&" not in mt.group(0) and "||" not in mt.group(0):
                cur.append(mt.group(0))
                i += len(mt.group(0))
                continue
        elif c == "," and depth == 0:
            args.append("".join(cur).strip())
            cur = []
            i += 1
            continue
        cur.append(c)
        i += 1
    return args, n


# --- the scan -----------------------------------------------------------------------------------

@dataclass
class OpScan:
    name: str
    files: list[str] = field(default_factory=list)
    unreached: list[str] = field(default_factory=list)  # non-950 files the entry does not reach
    items: dict[str, int] = field(default_factory=dict)  # item -> call sites
    vocab: dict[str, int] = field(default_factory=dict)
    unclassified: dict[str, int] = field(default_factory=dict)
    shadowed: list[str] = field(default_factory=list)  # API names the op defines itself
    unused_workspace: bool = False
    a2a3: bool = True


_CALL = re.compile(r"(?<![\w.])(?<!->)((?:\w+\s*::\s*)*)([A-Za-z_]\w*)\s*(<[^;(){}]*?>)?\s*\(")
_METHOD = re.compile(r"(\.|->)\s*(?:template\s+)?([A-Za-z_]\w*)\s*(<[^;(){}]*?>)?\s*\(")
_DECL = re.compile(r"\b(GlobalTensor|LocalTensor|TBuf|TQue|TQueBind|TPipe)\b\s*(<[^;{}()]*?>)?"
                   r"\s*[*&]?\s*(\w+)\s*(?=[;,=)\[{(])")
_PARAMS_DECL = re.compile(r"\b(\w*Params)\b\s*(?:<[^;{}()]*?>)?\s*[*&]?\s*(\w+)\s*(?=[;,={(])")
_TPL_TYPE = re.compile(r"\b(?:LocalTensor|GlobalTensor|AllocTensor|Get|ReinterpretCast|"
                       r"GetWithOffset|DeQue|GetValue)\s*<\s*(\w+)\s*[,>]")


# a name after a type (``void``, ``T``, ``LocalTensor<T>``, ``Class<T>::``), then ``(``
_FUNC_DEF = re.compile(r"([\w>*&:]+)\s+(?:\w+(?:<[^;(){}]*?>)?\s*::\s*)*(~?\w+)\s*\(")
STATEMENT_WORDS = frozenset({"return", "else", "case", "new", "delete", "throw", "if", "while",
                             "for", "switch", "sizeof", "goto", "co_return", "not", "and", "or"})


ANY_ARITY = (0, 10**6)


def definitions(text: str) -> dict[str, set[tuple[int, int]]]:
    """Names the sources define or declare, each with the argument counts it accepts:
    functions (a name after a type, whose ``)`` is followed by ``{``, a constructor's ``:``
    or, for a declaration, ``;``: from its parameters, defaulted ones optional), and with any
    count classes, structs, enums, namespaces, macros, aliases and template parameters."""
    out: dict[str, set[tuple[int, int]]] = defaultdict(set)
    for pat in (r"\b(?:class|struct|enum|namespace|typename|union)\s+(\w+)",
                r"#\s*define\s+(\w+)", r"\busing\s+(\w+)\s*=", r"\btypedef\b[^;]*?\b(\w+)\s*;"):
        for name in re.findall(pat, text):
            out[name].add(ANY_ARITY)
    for mt in _FUNC_DEF.finditer(text):
        before, name = mt.group(1), mt.group(2)
        if before.endswith(":") and not before.endswith("::"):
            continue  # a label or case: what follows is a statement
        if before in STATEMENT_WORDS or not re.search(r"\w", before):
            continue  # ``a * Foo()``, ``x > Foo()``: an expression, not a declaration
        params, end = split_args(text, mt.end() - 1)
        tail = text[end:end + 80]
        if re.match(r"\s*(const\s*)?(override\s*)?(noexcept\s*)?(\{|:[^:]|;)", tail):
            if params in ([], ["void"]):
                arity = (0, 0)
            elif any("..." in a for a in params):
                arity = ANY_ARITY
            else:
                arity = (sum("=" not in a for a in params), len(params))
            out[name.lstrip("~")].add(arity)
    return dict(out)


def is_local(local: dict[str, set[tuple[int, int]]], name: str, nargs: int) -> bool:
    """The op's own ``name`` (an overload taking ``nargs`` arguments, or a non-function)."""
    return any(lo <= nargs <= hi for lo, hi in local.get(name, ()))


def resolve_include(inc: str, cur: Path, op_kernel: Path, moe: Path) -> Path | None:
    for base in (cur.parent, op_kernel, moe):
        p = (base / inc).resolve()
        if p.is_file():
            return p
    return None


def excluded(p: Path) -> bool:
    return bool(EXCLUDED_DIRS & set(p.parts)) or p.name.endswith("_apt.cpp")


def kernel_files(op_dir: Path, moe: Path, all_files: bool) -> tuple[list[Path], list[Path],
                                                                       bool]:
    """(files scanned, non-950 files not reached, has an A2/A3 entry)."""
    op_kernel = op_dir / "op_kernel"
    tree = sorted(p for p in op_kernel.rglob("*")
                  if p.is_file() and p.suffix in (".h", ".cpp", ".hpp", ".cce")
                  and not excluded(p.relative_to(op_kernel)))
    entry = op_kernel / f"{op_dir.name}.cpp"
    if not entry.is_file():
        return [], tree, False
    if all_files:
        return tree, [], True
    seen: list[Path] = []
    todo = [entry.resolve()]
    while todo:
        p = todo.pop(0)
        if p in seen:
            continue
        seen.append(p)
        text = live_text(p.read_text(errors="replace"), True)
        for inc in re.findall(r'^\s*#\s*include\s*"([^"]+)"', text, re.M):
            q = resolve_include(inc, p, op_kernel, moe)
            if q is not None and not excluded(q) and q not in seen:
                todo.append(q)
    reached = set(seen)
    return seen, [p for p in tree if p.resolve() not in reached], True


def classify_datacopy(args: list[str], params_vars: set[str]) -> str | None:
    third = args[2]
    if third.startswith("{") or re.search(r"param", third, re.I):
        return DATA_COPY_PARAMS_FORM
    if re.fullmatch(r"[\w.\->\[\]]+", third):
        last = re.findall(r"\w+", third)[-1]
        if last in params_vars:
            return DATA_COPY_PARAMS_FORM
    return None


def scan_op(op_dir: Path, moe: Path, all_files: bool) -> OpScan:
    scan = OpScan(op_dir.name)
    files, unreached, has_entry = kernel_files(op_dir, moe, all_files)
    upstream = moe.parent
    scan.unreached = [str(p.resolve().relative_to(upstream.resolve())) for p in unreached]
    if not has_entry:
        scan.a2a3 = False
        return scan
    scan.files = [str(p.resolve().relative_to(upstream.resolve())) for p in files]
    texts = [live_text(p.read_text(errors="replace"), not all_files) for p in files]
    whole = "\n".join(texts)
    local = {k: v for k, v in definitions(whole).items() if k not in API_TYPES}
    decl: dict[str, set[str]] = defaultdict(set)
    for m in _DECL.finditer(whole):
        decl[m.group(3)].add("TQue" if m.group(1) == "TQueBind" else m.group(1))
    params_vars = {m.group(2) for m in _PARAMS_DECL.finditer(whole)}
    items: dict[str, int] = defaultdict(int)
    vocab: dict[str, int] = defaultdict(int)
    unclassified: dict[str, int] = defaultdict(int)
    shadowed: set[str] = set()

    for mt in _CALL.finditer(whole):
        if re.search(r"(\.|->)\s*template\s+$", whole[max(0, mt.start() - 16):mt.start()]):
            continue  # obj.template Name<T>(): a method
        quals = [q for q in re.split(r"\s*::\s*", mt.group(1).strip()) if q]
        name = mt.group(2)
        qual = quals[-1] if quals else ""
        if name in CPP_WORDS or name in FRAMEWORK or qual in STD_QUALIFIERS:
            continue
        if name in API_TYPES or name in ELEMENT_TYPES:
            continue  # a constructor / functional cast: counted as a type below
        if qual and qual not in API_QUALIFIERS:
            continue  # MoeSortBase::SyncAll, gatherv2::...: the kernel's own
        args, _ = split_args(whole, mt.end() - 1)
        if not qual and is_local(local, name, len(args)):
            if name in API_FUNCTIONS:
                shadowed.add(name)
            continue
        if name not in API_FUNCTIONS:
            if name[:1].isupper() and not re.fullmatch(r"[A-Z0-9_]+", name) or qual:
                unclassified[(qual + "::" if qual else "") + name] += 1
            continue
        form = None
        if name in FORMS:
            n = len(args)
            if name == "DataCopy" and n == 3:
                form = classify_datacopy(args, params_vars)
            elif n not in FORMS[name]:
                form = FORM_NAMES.get(name, {}).get(n, f"{n} args")
        items[f"{name} ({form})" if form else name] += 1

    for mt in _METHOD.finditer(whole):
        name = mt.group(2)
        if name not in API_METHODS:
            continue
        recv = re.findall(r"(\w+)\s*(?:\[[^\[\]]*\])?\s*$", whole[max(0, mt.start() - 80):
                                                                mt.start()])
        types = decl.get(recv[0], set()) if recv else set()
        # the receiver's declared type; the usual owner if undeclared or declared ambiguously
        owner = next(iter(types)) if len(types) == 1 else API_METHODS[name]
        if owner == "TPipe" and name not in ("InitBuffer", "FetchEventID", "AllocEventID",
                                             "ReleaseEventID", "Destroy", "Reset",
                                             "InitBufPool"):
            continue
        items[f"{owner}.{name}"] += 1

    for name in API_TYPES:
        k = len(re.findall(rf"(?<![\w.]){name}\b", whole))
        if k:
            items[name] += k
    for mt in re.finditer(r"\bRoundMode::(\w+)", whole):
        items[f"RoundMode::{mt.group(1)}"] += 1
    for mt in re.finditer(rf"\b({'|'.join(VOCAB_ENUMS[:-1])})::(\w+)", whole):
        vocab[f"{mt.group(1)}::{mt.group(2)}"] += 1
    for mt in re.finditer(r"\b(PIPE_[A-Z0-9]+|EVENT_ID\d)\b", whole):
        vocab[mt.group(1)] += 1
    for mt in _TPL_TYPE.finditer(whole):
        if mt.group(1) in ELEMENT_TYPES:
            vocab[f"dtype {mt.group(1)}"] += 1

    for mt in re.finditer(r"(\w+)\s*=\s*(?:AscendC::)?GetUserWorkspace\s*\(", whole):
        if len(re.findall(rf"\b{mt.group(1)}\b", whole)) == 1:
            scan.unused_workspace = True
    scan.items, scan.vocab, scan.unclassified = dict(items), dict(vocab), dict(unclassified)
    scan.shadowed = sorted(shadowed)
    return scan


def upstream_commit(path: Path) -> str:
    try:
        out = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return "unknown (not a git work tree)"
    return out.stdout.strip() if out.returncode == 0 else "unknown (not a git work tree)"


def scan_upstream(path: Path, all_files: bool = False) -> list[OpScan]:
    moe = path / "moe"
    if not path.is_dir():
        raise UsageError(f"--upstream {path}: not a folder")
    if not moe.is_dir():
        raise UsageError(f"--upstream {path}: no moe/ folder (expected an ops-transformer "
                         "checkout)")
    ops = sorted(d for d in moe.iterdir() if (d / "op_kernel").is_dir())
    if not ops:
        raise UsageError(f"--upstream {path}: moe/ holds no operator with an op_kernel/")
    return [scan_op(d, moe, all_files) for d in ops]


# --- the summary --------------------------------------------------------------------------------

@dataclass
class Summary:
    kernels: list[OpScan]
    skipped: list[OpScan]
    used: dict[str, list[str]]        # item -> ops using it
    provided: set[str]
    missing: dict[str, list[str]]     # item -> ops using it, for items we lack
    covered: list[str]
    covered_ignoring_workspace: list[str]
    covered_with_vocab: list[str]
    vocab_missing: dict[str, list[str]]


def summarise(scans: list[OpScan], provided: set[str] | None = None) -> Summary:
    provided = provided_items() if provided is None else provided
    kernels = [s for s in scans if s.a2a3]
    used: dict[str, list[str]] = defaultdict(list)
    vocab_used: dict[str, list[str]] = defaultdict(list)
    for s in kernels:
        for item in s.items:
            used[item].append(s.name)
        for v in s.vocab:
            vocab_used[v].append(s.name)
    missing = {k: v for k, v in used.items() if k not in provided}
    vmiss = {k: v for k, v in vocab_used.items() if k not in provided}
    covered, covered_ws, covered_v = [], [], []
    for s in kernels:
        lack = [i for i in s.items if i not in provided]
        vlack = [v for v in s.vocab if v not in provided]
        if not lack:
            covered.append(s.name)
            if not vlack:
                covered_v.append(s.name)
        if not lack or (lack == ["GetUserWorkspace"] and s.unused_workspace):
            covered_ws.append(s.name)
    return Summary(kernels, [s for s in scans if not s.a2a3], dict(used),
                   {i for i in used if i in provided}, missing, covered, covered_ws, covered_v,
                   vmiss)


def ranked(d: dict[str, list[str]]) -> list[tuple[str, list[str]]]:
    return sorted(d.items(), key=lambda kv: (-len(kv[1]), kv[0]))


def _lacking(fn: str) -> list[tuple[str, str]]:
    """(argument count, form) pairs of ``fn`` we lack, as the report's forms table shows."""
    return [(str(n), lbl) for n, lbl in FORM_NAMES.get(fn, {}).items()]


def render(scans: list[OpScan], summary: Summary, commit: str, all_files: bool,
           provided: set[str]) -> str:
    s = summary
    rule = ("every non-950 file under op_kernel/, no preprocessing" if all_files else
            "entry op_kernel/<op>.cpp and the includes it reaches, A2/A3 preprocessor branches")
    lines = [
        "# Ascend C API coverage of ops-transformer's MoE kernels",
        "",
        "Made by `benchmarks/api_coverage.py` (rules in its docstring). The upstream sources are",
        "read, not committed; this report names APIs and counts only.",
        "",
        f"- upstream commit: `{commit}`",
        f"- files scanned: {rule}",
        "",
        "## Summary",
        "",
        f"- A2/A3 MoE kernels: **{len(s.kernels)}** (operators under `moe/` with an "
        f"`op_kernel/<op>.cpp`); 950-only, not counted: "
        f"{', '.join(x.name for x in s.skipped) or 'none'}",
        f"- distinct API items used: **{len(s.used)}**; provided by `aicore_sim.ascendc`: "
        f"**{len(s.provided)}**; missing: **{len(s.missing)}**",
        f"- kernels using only provided items: **{len(s.covered)}** "
        f"({', '.join(s.covered) or 'none'})",
        f"- ... if an unused `GetUserWorkspace` result is ignored: "
        f"**{len(s.covered_ignoring_workspace)}**",
        f"- ... and also only provided vocabulary (events, positions, enums, element types): "
        f"**{len(s.covered_with_vocab)}**",
        "",
        "## How items are counted",
        "",
        "- an item is a function, a method (`Owner.Name`, the owner from the receiver's",
        "  declaration), a type (class or parameter / info struct), a `RoundMode::` member, or",
        "  an overload form; library internals called on raw addresses (`*Impl`) count as",
        "  functions;",
        "- forms are told apart only for functions we provide in some form, by argument count",
        "  (and for `DataCopy` by a parameter-struct third argument); a mask + repeat call with",
        "  a bit mask has the arity of the lane-count form and is not told apart;",
        "- events, positions, pipes, event ids, other enums and element types are",
        "  \"vocabulary\": listed below, not counted;",
        "- a call that matches a same-named function the op defines itself (same argument",
        "  count) is the op's own; such names are listed per op.",
        "",
        "What we provide is read from `aicore_sim.ascendc`; the forms its functions accept",
        "(from their signatures) are this table in the script:",
        "",
        "| function | argument counts accepted | forms we lack, by argument count |",
        "|---|---|---|",
        *[f"| `{fn}` | {', '.join(str(n) + (f' ({lbl})' if lbl else '') for n, lbl in fm.items())}"
          f" | {', '.join(f'{n}: {lbl}' for n, lbl in _lacking(fn)) or '-'} |"
          for fn, fm in FORMS.items()],
        "",
        "## Missing items, by number of operators using them",
        "",
        "| # | item | ops | operators |",
        "|---:|---|---:|---|",
    ]
    for i, (item, ops) in enumerate(ranked(s.missing), 1):
        lines.append(f"| {i} | `{item}` | {len(ops)} | {', '.join(ops)} |")
    lines += ["", "## Provided items in use", "",
              "| item | ops |", "|---|---:|"]
    for item, ops in ranked({k: v for k, v in s.used.items() if k in provided}):
        lines.append(f"| `{item}` | {len(ops)} |")
    lines += ["", "## Vocabulary we lack (not counted as items)", "",
              "| name | ops | operators |", "|---|---:|---|"]
    for item, ops in ranked(s.vocab_missing):
        lines.append(f"| `{item}` | {len(ops)} | {', '.join(ops)} |")
    lines += ["", "## Per operator", ""]
    for op in scans:
        lines.append(f"### {op.name}")
        lines.append("")
        if not op.a2a3:
            lines.append("No A2/A3 kernel (no `op_kernel/<op>.cpp`; 950 only). Not counted.")
            lines.append("")
            continue
        miss = sorted(i for i in op.items if i not in provided)
        vmiss = sorted(v for v in op.vocab if v not in provided)
        own = f"moe/{op.name}/op_kernel/"
        lines.append(f"- files scanned ({len(op.files)}): "
                     + ", ".join(f"`{f.removeprefix(own)}`" for f in op.files))
        if op.unreached:
            lines.append("- non-950 files the entry does not reach (not scanned): "
                         + ", ".join(f"`{Path(f).name}`" for f in op.unreached))
        lines.append(f"- APIs used ({len(op.items)}): " + ", ".join(f"`{i}`" for i in
                                                                     sorted(op.items)))
        lines.append(f"- **missing ({len(miss)})**: " + (", ".join(f"`{i}`" for i in miss)
                                                         or "none")
                     + (" (the `GetUserWorkspace` result is unused)"
                        if op.unused_workspace and "GetUserWorkspace" in miss else ""))
        if vmiss:
            lines.append("- vocabulary we lack: " + ", ".join(f"`{v}`" for v in vmiss))
        if op.shadowed:
            lines.append("- API names the op defines itself (calls matching its own overloads "
                         "not counted): " + ", ".join(f"`{n}`" for n in op.shadowed))
        lines.append("")
    unc: dict[str, list[str]] = defaultdict(list)
    for op in s.kernels:
        for name in op.unclassified:
            unc[name].append(op.name)
    lines += ["## Unclassified identifiers (for a human to check)", "",
              "Called like functions, not on the allow-list, not defined in the op's own scanned",
              "sources, not C++ keywords: helpers from shared headers outside the op (e.g.",
              "`op_kernel/math_util.h`), names from the library's headers the allow-list misses,",
              "or kernel names the definition heuristic did not catch.", "",
              "| name | ops | operators |", "|---|---:|---|"]
    for name, ops in ranked(unc):
        lines.append(f"| `{name}` | {len(ops)} | {', '.join(ops)} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="api_coverage", description=__doc__.split("\n")[0])
    ap.add_argument("--upstream", required=True, type=Path,
                    help="an ops-transformer checkout (holding moe/)")
    ap.add_argument("--report", type=Path, default=DEFAULT_REPORT,
                    help="markdown report path (default: reports/api_coverage.md)")
    ap.add_argument("--all-files", action="store_true",
                    help="scan every non-950 op_kernel file, no preprocessing")
    args = ap.parse_args(argv)
    try:
        scans = scan_upstream(args.upstream, args.all_files)
    except UsageError as e:
        print(f"api_coverage: error: {e}", file=sys.stderr)
        return 2
    provided = provided_items()
    summary = summarise(scans, provided)
    text = render(scans, summary, upstream_commit(args.upstream), args.all_files, provided)
    print(text, end="")
    args.report.parent.mkdir(parents=True, exist_ok=True)
    args.report.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

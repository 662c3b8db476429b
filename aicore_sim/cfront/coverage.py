"""The Ascend C API items the shim provides, read from its own headers (docs/cpp_kernels.md's
table is generated from this, and a test holds the two equal)."""

from __future__ import annotations

import re

from aicore_sim.cfront.abi import INCLUDE

_CALL = re.compile(r'call(?:<\w+>)?\(\s*"([\w.<>]+)"')  # call(...) and local_call<T>(...)
_SCALAR_OPS = re.compile(r"AICORE_SIM_\w+_OP\((\w+)[,)]")  # an element-wise family, by name
_MACRO = re.compile(r"^#define\s+(\w+)\(", re.M)
_FREE = re.compile(r"^__aicore__ inline [\w:<>*]+ (\w+)\(", re.M)


def api_items() -> dict[str, list[str]]:
    """Header -> the API items it provides: the names its calls forward to the simulator
    (``Name<flag>`` as ``Name``, ``Class.Method`` as written), the element-wise families'
    names and the kernel-side macros, sorted."""
    out: dict[str, list[str]] = {}
    for h in sorted((INCLUDE / "aicore_sim").glob("*.h")):
        text = h.read_text()
        names = {re.sub(r"<\w+>$", "", n) for n in _CALL.findall(text)}
        names |= set(_SCALAR_OPS.findall(text)) - {"NAME"}
        names |= set(_FREE.findall(text))
        names |= {m for m in _MACRO.findall(text) if not m.startswith("AICORE_SIM")}
        if names:
            out[h.name] = sorted(names)
    return out


def api_table() -> str:
    """The markdown table of :func:`api_items`."""
    rows = ["| shim header | API items |", "|---|---|"]
    for header, names in api_items().items():
        rows.append(f"| `{header}` | " + ", ".join(f"`{n}`" for n in names) + " |")
    return "\n".join(rows)


if __name__ == "__main__":
    print(api_table())

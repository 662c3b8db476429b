"""Tiling data from the op's own header: ``BEGIN_TILING_DATA_DEF`` blocks read, laid out, packed.

Step of the flow: before a C++ kernel compiles, its tiling struct is generated from the
``op_host/*_tiling*.h`` blocks (``TILING_DATA_FIELD_DEF``, ``..._ARR``, ``..._STRUCT``,
``END_TILING_DATA_DEF``, ``REGISTER_TILING_DATA_CLASS(OpType, Name)``) as a plain C++ struct
the kernel's ``GET_TILING_DATA`` copies, and the same layout packs the host tiling's values
into the bytes the kernel is given.

The layout (CANN serialises the fields in declaration order; ASSUMPTION where the public
documentation is silent): each scalar aligned to its own size, a nested struct to 8 bytes,
every struct's size a multiple of 8. For the all-``int64_t`` structs of the MoE ops this is
8 bytes a field in order, which ``TilingStruct.to_bytes`` also gives.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aicore_sim.sim.errors import InputError

SCALARS: dict[str, tuple[str, int]] = {
    "int8_t": ("b", 1), "uint8_t": ("B", 1), "int16_t": ("h", 2), "uint16_t": ("H", 2),
    "int32_t": ("i", 4), "uint32_t": ("I", 4), "int64_t": ("q", 8), "uint64_t": ("Q", 8),
    "float": ("f", 4), "bool": ("?", 1), "double": ("d", 8),
}
"""C type -> (struct format, size) of the scalar field types a tiling struct may hold."""

_BLOCK = re.compile(r"BEGIN_TILING_DATA_DEF\s*\(\s*(\w+)\s*\)(.*?)END_TILING_DATA_DEF", re.S)
_FIELD = re.compile(r"TILING_DATA_FIELD_DEF(_ARR|_STRUCT)?\s*\(([^)]*)\)")
_REGISTER = re.compile(r"REGISTER_TILING_DATA_CLASS\s*\(\s*(\w+)\s*,\s*(\w+)\s*\)")


class TilingHeaderError(InputError):
    """A tiling header the reader cannot lay out (names the file and the rule)."""


@dataclass
class Field:
    """One member: a scalar, a fixed array of scalars, or a nested struct."""

    name: str
    ctype: str
    count: int = 1  # array length (1 for a scalar or a struct)
    struct: TilingLayout | None = None
    offset: int = 0

    @property
    def size(self) -> int:
        return self.struct.size if self.struct else SCALARS[self.ctype][1] * self.count

    @property
    def align(self) -> int:
        return 8 if self.struct else SCALARS[self.ctype][1]


@dataclass
class TilingLayout:
    """A tiling-data struct: its fields with their byte offsets and its size."""

    name: str
    fields: list[Field] = field(default_factory=list)
    size: int = 0

    def lay_out(self) -> None:
        offset = 0
        for f in self.fields:
            offset = -(-offset // f.align) * f.align
            f.offset = offset
            offset += f.size
        self.size = -(-offset // 8) * 8

    def cpp(self) -> str:
        """The C++ definition (nested structs are defined before it)."""
        lines = [f"struct alignas(8) {self.name} {{"]
        for f in self.fields:
            if f.struct:
                lines.append(f"    {f.struct.name} {f.name};")
            elif f.count > 1:
                lines.append(f"    {f.ctype} {f.name}[{f.count}];")
            else:
                lines.append(f"    {f.ctype} {f.name};")
        lines.append("};")
        lines.append(f"static_assert(sizeof({self.name}) == {self.size}, "
                     f"\"aicore-sim's layout of {self.name}\");")
        return "\n".join(lines)

    def pack(self, values: dict[str, Any] | list[Any]) -> bytes:
        """The struct's bytes: ``values`` by field name (nested structs as dicts, arrays as
        lists) or, for a struct of scalars, in declaration order."""
        if isinstance(values, (list, tuple)):
            values = dict(zip([f.name for f in self.fields], values))
        out = bytearray(self.size)
        for f in self.fields:
            v = values.get(f.name, 0)
            if f.struct:
                out[f.offset:f.offset + f.size] = f.struct.pack(v if isinstance(v, dict) else {})
                continue
            fmt = SCALARS[f.ctype][0]
            items = list(v) if f.count > 1 else [v]
            items += [0] * (f.count - len(items))
            if fmt in "fd":
                items = [float(x) for x in items]
            elif fmt == "?":
                items = [bool(x) for x in items]
            else:
                items = [_wrap(int(x), SCALARS[f.ctype][1], fmt.islower()) for x in items]
            struct.pack_into(f"<{f.count}{fmt}", out, f.offset, *items)
        return bytes(out)

    def unpack(self, raw: bytes) -> dict[str, Any]:
        """The values ``raw`` holds by field name (nested structs as dicts, arrays as lists):
        ``pack``'s inverse."""
        out: dict[str, Any] = {}
        for f in self.fields:
            if f.struct:
                out[f.name] = f.struct.unpack(raw[f.offset:f.offset + f.size])
                continue
            items = struct.unpack_from(f"<{f.count}{SCALARS[f.ctype][0]}", raw, f.offset)
            out[f.name] = list(items) if f.count > 1 else items[0]
        return out

    def names(self) -> list[str]:
        """``field`` / ``struct.field`` names in order (what a case file may set)."""
        out = []
        for f in self.fields:
            out += [f"{f.name}.{n}" for n in f.struct.names()] if f.struct else [f.name]
        return out


def _wrap(v: int, size: int, signed: bool) -> int:
    """``v`` as a C integer of ``size`` bytes would hold it (two's complement)."""
    bits = 8 * size
    v &= (1 << bits) - 1
    return v - (1 << bits) if signed and v >> (bits - 1) else v


@dataclass
class TilingHeader:
    """Every tiling struct of an op's headers, in declaration order, and its registrations
    (op type -> struct name)."""

    structs: dict[str, TilingLayout]
    registered: dict[str, str]

    def struct_for(self, op_type: str | None) -> TilingLayout:
        """The struct ``GET_TILING_DATA`` reads: the one registered for ``op_type``, else the
        only one registered."""
        if op_type and op_type in self.registered:
            return self.structs[self.registered[op_type]]
        if len(self.registered) == 1:
            return self.structs[next(iter(self.registered.values()))]
        if len(self.structs) == 1:
            return next(iter(self.structs.values()))
        known = ", ".join(sorted(self.registered)) or "none"
        raise TilingHeaderError(f"tiling header: no REGISTER_TILING_DATA_CLASS for op type "
                                f"{op_type!r} (registered: {known})")

    def cpp(self) -> str:
        return "\n\n".join(s.cpp() for s in self.structs.values())


def read(paths: list[Path]) -> TilingHeader:
    """Read the tiling blocks of ``paths`` (in that order)."""
    structs: dict[str, TilingLayout] = {}
    registered: dict[str, str] = {}
    for path in paths:
        text = re.sub(r"//[^\n]*|/\*.*?\*/", "", path.read_text(errors="replace"), flags=re.S)
        for name, body in _BLOCK.findall(text):
            layout = TilingLayout(name)
            for kind, args in _FIELD.findall(body):
                parts = [p.strip() for p in args.split(",")]
                where = f"{path.name}: {name}"
                if kind == "_STRUCT":
                    if len(parts) != 2 or parts[0] not in structs:
                        raise TilingHeaderError(
                            f"{where}: TILING_DATA_FIELD_DEF_STRUCT({args}) names a struct not "
                            "declared before it in the op's tiling headers")
                    layout.fields.append(Field(parts[1], parts[0], struct=structs[parts[0]]))
                    continue
                ctype = parts[0]
                if ctype not in SCALARS:
                    raise TilingHeaderError(f"{where}: field type {ctype!r} is not one of "
                                            f"{', '.join(SCALARS)}")
                if kind == "_ARR":
                    if len(parts) != 3 or not parts[1].isdigit():
                        raise TilingHeaderError(f"{where}: TILING_DATA_FIELD_DEF_ARR({args}) "
                                                "needs (type, count, name)")
                    layout.fields.append(Field(parts[2], ctype, int(parts[1])))
                else:
                    if len(parts) != 2:
                        raise TilingHeaderError(f"{where}: TILING_DATA_FIELD_DEF({args}) needs "
                                                "(type, name)")
                    layout.fields.append(Field(parts[1], ctype))
            layout.lay_out()
            structs[name] = layout
        for op_type, name in _REGISTER.findall(text):
            if name in structs:
                registered[op_type] = name
    return TilingHeader(structs, registered)


def headers_near(kernel_dir: Path) -> list[Path]:
    """The op's tiling headers: ``op_host/*tiling*.h`` beside ``op_kernel`` (the layout of
    ops-transformer), else ``*tiling*.h`` in the kernel's own folder."""
    for folder in (kernel_dir.parent / "op_host", kernel_dir):
        found = sorted(p for p in folder.glob("*tiling*.h") if p.is_file())
        # a base header others include comes first
        found.sort(key=lambda p: (0 if "base" in p.name else 1, p.name))
        if found:
            return found
    return []


__all__ = ["SCALARS", "Field", "TilingHeader", "TilingHeaderError", "TilingLayout",
           "headers_near", "read"]

"""CANN ATK case-description files: read records, pick some, map them to cases.

Step of the flow: the *case* at the head of the pipeline, from an upstream system-test file.
The format (as ATK writes it, e.g. ``tests/st/<aclnn name>/atk_<aclnn name>.json`` in CANN op
repositories) is a JSON list of records::

    {"id": 0, "name": "...", "aclnn_name": "<aclnn name>",
     "standard": {"acc": "md5", "perf": "not_key"},
     "inputs": [
        {"name": "x", "type": "tensor", "dtype": "bf16", "shape": [N, H],
         "range_values": [-100, 100], "required": true, ...},
        {"name": "flag", "type": "attr", "dtype": "bool", "range_values": false, ...},
        [{"name": "r", "type": "attr_tuple", "dtype": "int", "range_values": 0, ...}, ...]
     ]}

A tensor entry gives dtype, shape and the value range of its random data; an ``attr`` entry
gives its value in ``range_values``; a list of ``attr_tuple`` entries is one tuple attribute
whose elements are the entries' ``range_values``. ``standard.acc`` names the accuracy standard
(``md5`` = bit-exact). How a record becomes an operator call is the executor's business and
op-specific: :data:`BUILDERS` maps an ``aclnn_name`` to the op model's builder.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aicore_sim.util import schema, textinput
from aicore_sim.verify import VerifyError

__all__ = [
    "AtkRecord",
    "AtkTensor",
    "is_atk_file",
    "load_atk",
    "select_records",
]


@dataclass(frozen=True)
class AtkTensor:
    """One tensor entry of a record."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    range_values: Any
    required: bool = True


@dataclass(frozen=True)
class AtkRecord:
    """One record, its entries by name (tensors and attributes separately)."""

    index: int
    id: Any
    name: str
    aclnn_name: str
    acc: str
    tensors: dict[str, AtkTensor] = field(default_factory=dict)
    attrs: dict[str, Any] = field(default_factory=dict)
    source: str = ""


def is_atk_file(path: str | Path) -> bool:
    """True for a ``.json`` file holding a list whose first item has ``aclnn_name``/``inputs``."""
    p = Path(path)
    if p.suffix.lower() != ".json" or not p.is_file():
        return False
    with p.open("rb") as f:
        head = f.read(4096).lstrip()
    if not head.startswith(b"["):
        return False
    return b'"aclnn_name"' in head or b'"api_type"' in head


_NAMED = schema.Table({"name": schema.Anything()}, required=("name",), open=True,
                      what_text="an entry with a name")
# The fields of an ATK record this module reads (the format has many more: open tables)
_RECORD = schema.Table({
    "aclnn_name": schema.Anything(),
    "inputs": schema.ListOf(schema.AnyOf((
        schema.ListOf(_NAMED),  # a tuple attribute: one entry per element
        schema.Table({"name": schema.Anything(), "type": schema.Anything()},
                     required=("name", "type"), open=True,
                     what_text="an entry with name and type"))), nonempty=False),
}, required=("aclnn_name", "inputs"), open=True)
_SHAPE = schema.ListOf(schema.Int(minimum=0), nonempty=False)


def _record(raw: Any, index: int, where: str) -> AtkRecord:
    w = f"{where}: record {index}"
    try:
        raw = _RECORD.check(raw, "")
        for j, e in enumerate(raw["inputs"]):
            if isinstance(e, dict) and e["type"] == "tensor":
                _SHAPE.check(e.get("shape"), f"inputs[{j}] ({e['name']}).shape")
    except schema.FieldError as e:
        raise VerifyError(f"{w}: {e} (rule atk_record)") from None
    std = raw.get("standard") or {}
    acc = str(std.get("acc", "md5")) if isinstance(std, dict) else "md5"
    tensors: dict[str, AtkTensor] = {}
    attrs: dict[str, Any] = {}
    for e in raw["inputs"]:
        if isinstance(e, list):  # a tuple attribute: one entry per element
            attrs[str(e[0]["name"])] = [x.get("range_values") for x in e]
        elif e["type"] == "tensor":
            tensors[str(e["name"])] = AtkTensor(str(e["name"]), str(e.get("dtype")),
                                                tuple(e["shape"]), e.get("range_values"),
                                                bool(e.get("required", True)))
        else:
            attrs[str(e["name"])] = e.get("range_values")
    return AtkRecord(index, raw.get("id", index), str(raw.get("name", "")),
                     str(raw["aclnn_name"]), acc, tensors, attrs, where)


def load_atk(path: str | Path) -> list[AtkRecord]:
    """All records of an ATK file; malformed records raise :class:`VerifyError`."""
    p = Path(path)
    try:
        doc = textinput.loads_json(textinput.read_document(p))
    except OSError as e:
        raise VerifyError(f"{p}: cannot read ({e.strerror}) (rule atk_file)") from None
    except UnicodeDecodeError as e:
        raise VerifyError(f"{p.name}: not UTF-8 text (offset {e.start}) (rule atk_file)"
                          ) from None
    except textinput.TextInputError as e:
        raise VerifyError(f"{p.name}: not valid JSON ({e}) (rule atk_file)") from None
    if not isinstance(doc, list):
        raise VerifyError(f"{p.name}: an ATK file holds a list of records (rule atk_file)")
    return [_record(r, i, p.name) for i, r in enumerate(doc)]


def select_records(n: int, sel: str | None, where: str = "--records") -> list[int]:
    """Record indices from ``'0,5,9'`` or a slice ``'start:stop[:step]'`` (``None`` = all)."""
    if sel is None or not sel.strip():
        return list(range(n))
    s = sel.strip()
    try:
        if ":" in s:
            parts = [int(x) if x.strip() else None for x in s.split(":")]
            if len(parts) > 3:
                raise ValueError
            return list(range(n))[slice(*parts)]
        out = [int(x) for x in s.split(",") if x.strip()]
    except ValueError:
        raise VerifyError(f"{where} {sel}: expected '0,5,9' or 'start:stop[:step]' "
                          f"(rule records_syntax)") from None
    bad = [i for i in out if not -n <= i < n]
    if bad:
        raise VerifyError(f"{where} {sel}: record {bad[0]} out of range; the file has {n} "
                          f"records (rule records_range)")
    return [i % n for i in out]

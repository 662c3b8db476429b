"""Which mechanism should read the JSON documents users hand the simulator: ours
(``aicore_sim.util.textinput`` + the per-surface field checks), msgspec, or pydantic?

Measured on the case-file surface, three things a user meets:

1. **start-up**: what importing the mechanism adds to every ``aicore-sim`` command (median of
   ``python -c "import X"`` over several runs, minus ``python -c "pass"``);
2. **decode time** of each bundled case file, structure checked (median of many calls);
3. **what each refuses**, and in what words, on malformed documents (a key given twice, an
   unknown key, a field of the wrong type, 200,000 nested ``[``, a negative dimension).

The libraries are given the case file's structure as a schema (unknown fields forbidden) - the
most they can check without our code. Run: ``python benchmarks/input_mechanism.py`` (needs
``pip install msgspec pydantic``); writes nothing, prints a Markdown report.
"""

from __future__ import annotations

import json
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import msgspec
import pydantic

from aicore_sim.ops import casefile
from aicore_sim.util import textinput

ROOT = Path(__file__).resolve().parents[1]
CASES = sorted((ROOT / "examples" / "cases").glob("*.json"))


# --- the case file's structure, as each library declares it ----------------------------------

class MInput(msgspec.Struct, forbid_unknown_fields=True):
    shape: list[int]
    dtype: str
    value_range: list[float] | None = None


class MData(msgspec.Struct, forbid_unknown_fields=True):
    seed: int = 0


class MCase(msgspec.Struct, forbid_unknown_fields=True):
    op: str
    inputs: dict[str, MInput | None]
    name: str | None = None
    description: str | None = None
    attrs: dict[str, Any] | list[Any] | None = None
    platform: str | dict[str, Any] | None = None
    mode: str | None = None
    data: MData | None = None


class _Strict(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid", strict=True)


class PInput(_Strict):
    shape: list[pydantic.NonNegativeInt]
    dtype: str
    value_range: list[float] | None = None


class PData(_Strict):
    seed: int = 0


class PCase(_Strict):
    op: str
    inputs: dict[str, PInput | None]
    name: str | None = None
    description: str | None = None
    attrs: dict[str, Any] | list[Any] | None = None
    platform: str | dict[str, Any] | None = None
    mode: str | None = None
    data: PData | None = None


def ours(text: str) -> Any:
    return textinput.loads_json(text)


def ours_full(path: Path) -> Any:
    return casefile.load_case(path)


def ours_document(text: str) -> Any:
    """What ``run`` does with a case file's text: load_case (syntax, then every field)."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / "case.json"
        p.write_text(text)
        return casefile.load_case(p)


MECHANISMS = {
    "ours (textinput.loads_json)": ours,
    "msgspec (json.decode, Struct)": lambda text: msgspec.json.decode(text, type=MCase),
    "pydantic (model_validate_json, strict)": PCase.model_validate_json,
}


# --- 1. start-up ------------------------------------------------------------------------------

def import_ms(module: str, runs: int = 9) -> float:
    """Median wall ms of ``python -c "import <module>"``."""
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", f"import {module}" if module else "pass"],
                       check=True)
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


# --- 2. decode time ---------------------------------------------------------------------------

def decode_us(fn, text: str, calls: int = 2000) -> float:
    """Median µs per call over 5 rounds of ``calls`` calls."""
    rounds = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn(text)
        rounds.append((time.perf_counter() - t0) / calls * 1e6)
    return statistics.median(rounds)


# --- 3. refusals ------------------------------------------------------------------------------

def malformed() -> dict[str, str]:
    base = json.loads((ROOT / "examples" / "cases" / "tiny.json").read_text())
    text = json.dumps(base)
    bad_shape = json.loads(text)
    bad_shape["inputs"]["probs"]["shape"] = [10, -3]
    wrong = dict(base, inputs=0)
    return {
        'key given twice ("platform")': text[:-1] + ', "platform": "ascend910_9391"}',
        'unknown key ("platfrom")': json.dumps(dict(base, platfrom="ascend910b1")),
        'wrong type ("inputs": 0)': json.dumps(wrong),
        "200,000 nested [ in op": '{"op": ' + "[" * 200_000 + "]" * 200_000 + "}",
        "200,000 nested [ in attrs": text[:-1] + ', "attrs": ' + "[" * 200_000
        + "]" * 200_000 + "}",
        "negative dimension (probs [10, -3])": json.dumps(bad_shape),
    }


def verdict(fn, text: str) -> str:
    try:
        fn(text)
    except RecursionError:
        return "**RecursionError** (crash)"
    except Exception as e:  # noqa: BLE001 - the message is what is measured
        words = " ".join(str(e).split()[:16]) or type(e).__name__
        words = re.sub(r"/tmp/\w+/", "", words)  # ours names the file: drop the temp folder
        return f"refused: {words}"
    return "**accepted**"


def main() -> None:
    print("# Input mechanism: ours vs msgspec vs pydantic (case files)\n")
    print(f"Python {sys.version.split()[0]}, msgspec {msgspec.__version__}, "
          f"pydantic {pydantic.__version__}.\n")

    print("## 1. What importing it adds to every command\n")
    base = import_ms("")
    print("| import | added ms (median of 9) |\n|---|---:|")
    for mod in ("json, tomllib", "msgspec", "pydantic"):
        print(f"| {mod} | {import_ms(mod) - base:.1f} |")
    t0 = time.perf_counter()
    PCase.model_validate_json((ROOT / "examples/cases/tiny.json").read_text())
    print(f"\n(pydantic's first validation after the models are built: "
          f"{(time.perf_counter() - t0) * 1e3:.2f} ms)\n")

    print("## 2. Decode with the structure checked, per bundled case file (µs per call)\n")
    names = list(MECHANISMS)
    print("| case file | bytes | " + " | ".join(names) + " | ours, whole load_case |")
    print("|---|---:|" + "---:|" * (len(names) + 1))
    for path in CASES:
        text = path.read_text()
        cells = [f"{decode_us(MECHANISMS[n], text):.1f}" for n in names]
        full = decode_us(lambda _t, p=path: ours_full(p), text, calls=200)
        print(f"| {path.name} | {len(text)} | " + " | ".join(cells) + f" | {full:.1f} |")

    print("\n## 3. What each refuses (ours: the whole load_case)\n")
    checks = dict(MECHANISMS, **{names[0]: ours_document})
    print("| document | " + " | ".join(names) + " |\n|---|" + "---|" * len(names))
    for what, text in malformed().items():
        cells = [verdict(checks[n], text).replace("|", "\\|") for n in names]
        print(f"| {what} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()

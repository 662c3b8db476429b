"""The command line's contract under mutated inputs (hypothesis).

Every example mutates something a user hands ``aicore-sim`` - a valid case file (any field set
to any JSON value, shapes, dtypes, attributes, names, raw bytes), the ``--inputs`` arrays
(shape, dtype, values with inf/NaN, an .npz under an .npy name, garbage), platform overrides
(every field, zero, negative, huge, non-finite) and sweep specs - runs one command (``run``,
``tiling``, ``verify``, ``sweep``, ``search``, ``report``) and asserts the contract:

* the exit code is 0, 1 or 2 (nothing else: no signal, no crash);
* stderr holds at most one line, never ``Traceback``;
* on exit 2 nothing was written: the output folder or report does not exist;
* whatever the exit, no hidden temporary file or folder is left behind;
* the command ends within :data:`TIMEOUT_S` and inside :data:`MEMORY_LIMIT` of address space
  (``RLIMIT_AS`` set in the child, so a runaway allocation fails instead of eating the machine).

Each command runs in a forked child of this process (``aicore_sim.cli.main`` with the limit
set, stdout and stderr to files), so an example costs the command's own work and not an
interpreter start. The fast suite runs :data:`FAST_EXAMPLES` examples; ``-m slow`` runs
:data:`SLOW_EXAMPLES` and prints the tally (reports/fuzz_contract.md holds the last figure).
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import resource
import shutil
import signal
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT_S = 60.0
MEMORY_LIMIT = 4 << 30  # bytes of address space per command
FAST_EXAMPLES = 30
SLOW_EXAMPLES = 2000

BASE_CASE: dict[str, Any] = json.loads((ROOT / "examples/cases/tiny.json").read_text())

PLATFORM_FIELDS = (
    "aiv_core_num", "aic_core_num", "core_num", "clock_mhz", "ub_size", "ub_align", "l2_size",
    "hbm_size", "ddr_rate", "hbm_efficiency", "hbm_bytes_per_cycle", "hbm_gbps", "l2_rate",
    "queue_depth", "dcache_size", "dcache_line", "dcache_hit_cycles", "dcache_miss_cycles",
    "ub_read_cycles", "op_head_cycles", "system_counter_mhz", "short_soc", "soc", "costs",
    "no_such_field")
PRESETS = ("ascend910b1", "ascend910b4", "ascend910_9391", "ascend950pr_9589", "tiny",
           "ut-fake-910b", "nope")
DTYPES = ("bfloat16", "float16", "float32", "int32", "int64", "DT_BF16", "bf16", "fp32",
          "int8", "bool", "bf17", "")
OPS = ("moe_token_unpermute_with_ep", "moe_token_unpermute_with_ep_grad", "no_such_op")
INPUTS = ("unpermuted_tokens_grad", "sorted_indices", "permuted_tokens", "probs")

# -- values -----------------------------------------------------------------------------------

edge_ints = st.sampled_from([0, 1, 2, 3, -1, -2, 7, 63, 64, 65, 256, 4096, 2**31, 2**63,
                             10**12, -(10**12)])
edge_floats = st.sampled_from([0.0, -0.0, 0.5, 1.0, -1.0, 1e-30, 1e30, float("inf"),
                               float("-inf"), float("nan")])
texts = st.sampled_from(["", "x", "../../../x", "a/b", "..", ".", "tiny", "ascend910b1",
                         "\u00e9\u4e2d", "a\\b", " "])
scalars = st.one_of(st.none(), st.booleans(), edge_ints, st.integers(-100, 100), edge_floats,
                    texts)
json_values = st.recursive(scalars, lambda c: st.one_of(st.lists(c, max_size=3),
                                                         st.dictionaries(texts, c, max_size=2)),
                           max_leaves=6)
small_dims = st.one_of(st.integers(0, 12), edge_ints)


@st.composite
def shapes(draw: Any) -> list[Any]:
    return draw(st.lists(small_dims, min_size=0, max_size=3))


# -- case mutations ---------------------------------------------------------------------------


@st.composite
def platform_value(draw: Any) -> Any:
    kind = draw(st.integers(0, 3))
    if kind == 0:
        return draw(st.sampled_from(PRESETS))
    if kind == 1:
        return draw(json_values)
    fields = draw(st.dictionaries(st.sampled_from(PLATFORM_FIELDS),
                                  st.one_of(edge_ints, edge_floats, st.integers(1, 96),
                                            texts, st.none()), max_size=3))
    if kind == 2:
        return {"preset": draw(st.sampled_from(PRESETS)), **fields}
    return fields


@st.composite
def small_valid_case(draw: Any) -> dict[str, Any]:
    """A legal case of a few rows (most examples stay cheap to simulate)."""
    n, k, h = draw(st.integers(0, 8)), draw(st.integers(1, 4)), draw(st.integers(0, 80))
    tok = draw(st.sampled_from(["bfloat16", "float16", "float32"]))
    probs = draw(st.sampled_from([None, "bfloat16", "float16", "float32"]))
    doc = copy.deepcopy(BASE_CASE)
    doc["inputs"] = {
        "unpermuted_tokens_grad": {"shape": [n, h], "dtype": tok},
        "sorted_indices": {"shape": [n * k], "dtype": "int32"},
        "permuted_tokens": {"shape": [n * k, h], "dtype": tok},
        "probs": None if probs is None else {"shape": [n, k], "dtype": probs},
    }
    doc["attrs"] = {"padded_mode": False, "restore_shape": None, "range": None, "topk_num": k}
    doc["data"] = {"seed": draw(st.integers(0, 5))}
    doc["mode"] = draw(st.sampled_from(["functional", "timed", "timing-only"]))
    return doc


@st.composite
def mutated_case(draw: Any) -> dict[str, Any]:
    doc = draw(small_valid_case())
    for _ in range(draw(st.integers(0, 3))):
        what = draw(st.integers(0, 10))
        if not isinstance(doc.get("inputs"), dict):  # an earlier mutation replaced it
            doc["inputs"] = {}
        if not isinstance(doc.get("attrs"), dict):
            doc["attrs"] = {}
        if what == 0:  # any top-level field, any value
            doc[draw(st.sampled_from([*doc, "extra"]))] = draw(json_values)
        elif what == 1:
            name = draw(st.sampled_from(INPUTS))
            doc["inputs"][name] = draw(st.one_of(
                st.none(), json_values,
                st.fixed_dictionaries({"shape": shapes(), "dtype": st.sampled_from(DTYPES)})))
        elif what == 2:
            name = draw(st.sampled_from(INPUTS))
            if isinstance(doc["inputs"].get(name), dict):
                doc["inputs"][name]["dtype"] = draw(st.sampled_from(DTYPES))
        elif what == 3:
            name = draw(st.sampled_from(INPUTS))
            if isinstance(doc["inputs"].get(name), dict):
                doc["inputs"][name]["shape"] = draw(shapes())
        elif what == 4:
            doc["attrs"][draw(st.sampled_from(["padded_mode", "restore_shape", "range",
                                                "topk_num", "bogus"]))] = draw(st.one_of(
                json_values, st.lists(st.one_of(edge_ints, st.integers(-40, 40)),
                                      min_size=0, max_size=3)))
        elif what in (5, 6):
            doc["platform"] = draw(platform_value())
        elif what == 7:
            doc["name"] = draw(texts)
        elif what == 10:  # another registered op, with this op's inputs
            doc["op"] = draw(st.sampled_from(OPS))
        elif what == 8:
            doc["data"] = draw(st.one_of(json_values, st.fixed_dictionaries(
                {"seed": st.one_of(edge_ints, st.integers(0, 9))})))
        else:
            doc["attrs"] = draw(st.one_of(json_values, st.lists(scalars, max_size=5)))
    return doc


@st.composite
def case_bytes(draw: Any) -> bytes:
    doc = draw(mutated_case())
    kind = draw(st.integers(0, 19))
    text = json.dumps(doc)  # NaN / Infinity allowed: Python's JSON reads them
    if kind == 0:
        return text.encode()[: draw(st.integers(0, len(text)))]  # truncated
    if kind == 1:
        return b"\xff\xfe" + text.encode("utf-16-le")  # not UTF-8
    return text.encode()


# -- input arrays -----------------------------------------------------------------------------


def _np_dtype(name: Any) -> np.dtype | None:
    from aicore_sim.sim.dtypes import as_dtype

    try:
        return as_dtype(name)
    except (ValueError, TypeError):
        return None


@st.composite
def input_files(draw: Any, doc: dict[str, Any]) -> dict[str, tuple[str, Any]]:
    """What to write as --inputs: per input ("npy", array) / ("npz", array) / ("bytes", b)."""
    out: dict[str, tuple[str, Any]] = {}
    specs = doc.get("inputs") if isinstance(doc.get("inputs"), dict) else {}
    for name in INPUTS:
        spec = specs.get(name) if isinstance(specs, dict) else None
        if not isinstance(spec, dict):
            continue
        shape, dt = spec.get("shape"), _np_dtype(spec.get("dtype"))
        ok = (isinstance(shape, list) and all(isinstance(d, int) and 0 <= d <= 64 for d in shape)
              and int(np.prod(shape, dtype=np.int64)) <= 4096 and dt is not None)
        kind = draw(st.integers(0, 11))
        if kind == 0 or not ok:
            if draw(st.booleans()):
                continue  # missing file
            out[name] = ("bytes", draw(st.binary(max_size=64)))
            continue
        if kind == 1:
            shape = draw(st.lists(st.integers(0, 5), max_size=3))
        if kind == 2:
            dt = np.dtype(draw(st.sampled_from(["float64", "int64", "uint8", "V2"])))
        size = int(np.prod(shape, dtype=np.int64))
        if dt.kind in "iu":
            vals = draw(st.sampled_from(["perm", "dup", "wild"]))
            if vals == "perm":
                arr = np.random.default_rng(size).permutation(size)
            elif vals == "dup":
                arr = np.random.default_rng(size).integers(0, max(1, size), size)
            else:
                arr = np.random.default_rng(size).integers(-50, 10**6, size)
            arr = arr.astype(dt).reshape(shape)
        elif dt.kind == "V":
            arr = np.zeros(shape, dt)
        else:
            arr = np.random.default_rng(size).uniform(-2, 2, size).astype(np.float32)
            for v in draw(st.lists(st.sampled_from([np.inf, -np.inf, np.nan, 0.0, 6e4, 1e38]),
                                   max_size=3)):
                if size:
                    arr[draw(st.integers(0, size - 1))] = v
            with np.errstate(over="ignore", invalid="ignore"):  # 1e38 and inf on purpose
                arr = arr.astype(dt).reshape(shape)
        out[name] = ("npz" if kind == 3 else "npy", arr)
    return out


def write_inputs(folder: Path, files: dict[str, tuple[str, Any]]) -> None:
    folder.mkdir()
    for name, (kind, payload) in files.items():
        path = folder / f"{name}.npy"
        if kind == "bytes":
            path.write_bytes(payload)
        elif kind == "npz":
            with open(path, "wb") as f:
                np.savez(f, a=payload)
        else:
            np.save(path, payload)  # bfloat16 lands as |V2, as documented


# -- sweep specs ------------------------------------------------------------------------------


@st.composite
def sweep_spec(draw: Any) -> dict[str, Any]:
    """Half legal specs (small values of every axis), half with mutated values."""
    if draw(st.booleans()):
        axes: dict[str, Any] = {"case": draw(st.sampled_from([["tiny"], ["case.json"],
                                                              ["tiny", "case.json"]]))}
        for key, vals in (("strategy", st.sampled_from(["upstream", "wide_e", "balanced"])),
                          ("tokens_num", st.integers(1, 12)),
                          ("hbm_gbps", st.integers(100, 3000)),
                          ("ub_size", st.sampled_from([131072, 196608])),
                          ("core_num", st.integers(1, 48))):
            if draw(st.booleans()):
                axes[key] = draw(st.lists(vals, min_size=1, max_size=2, unique=True))
        mode = draw(st.sampled_from(["timing-only", "timed"]))
        return {"sweep": {"name": "fz", "mode": mode}, "axes": axes}
    axes = {"case": draw(st.one_of(
        st.just(["tiny"]), st.just(["case.json"]), st.lists(texts, max_size=2), json_values))}
    for key, vals in (("strategy", st.sampled_from(["upstream", "wide_e", "nope"])),
                      ("tokens_num", st.one_of(st.integers(0, 12), edge_ints)),
                      ("platform", st.sampled_from(PRESETS)),
                      ("hbm_gbps", st.one_of(st.integers(1, 3000), edge_floats)),
                      ("ub_size", st.one_of(st.integers(1, 300000), edge_ints)),
                      ("core_num", st.one_of(st.integers(1, 64), edge_ints))):
        if draw(st.booleans()):
            axes[key] = draw(st.lists(vals, min_size=0, max_size=2))
    spec: dict[str, Any] = {"sweep": {"name": "fz", "mode": draw(st.sampled_from(
        ["timing-only", "timed", "bogus"]))}, "axes": axes}
    if draw(st.booleans()):
        spec["tiling"] = {"indicesReserveNum": draw(st.lists(
            st.one_of(st.just("auto"), edge_ints, st.integers(1, 9)), max_size=2))}
    if draw(st.integers(0, 9)) == 0:
        spec[draw(texts)] = draw(json_values)
    return spec


# -- one command in a limited child -----------------------------------------------------------


def run_limited(argv: list[str], cwd: Path, stdout: list[str] | None = None
                ) -> tuple[int, str, float]:
    """``aicore-sim ARGV`` in a forked child (cwd, RLIMIT_AS, outputs to files): (exit code or
    -signal, stderr, seconds); the child's stdout is appended to ``stdout`` when given."""
    out_f, err_f = cwd / "..stdout", cwd / "..stderr"
    t0 = time.perf_counter()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 99
        try:
            os.chdir(cwd)
            resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
            fo = os.open(out_f, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            fe = os.open(err_f, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            os.dup2(fo, 1)
            os.dup2(fe, 2)
            sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115
            sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
            signal.signal(signal.SIGINT, signal.default_int_handler)
            from aicore_sim.cli import main

            code = main(argv)
            sys.stdout.flush()
            sys.stderr.flush()
        except BaseException as e:  # noqa: BLE001 - reported as exit 98 with its name
            with contextlib.suppress(Exception):
                os.write(2, f"\nTraceback-escaped {type(e).__name__}: {e}\n".encode())
            code = 98
        os._exit(code)
    deadline = t0 + TIMEOUT_S
    status = None
    while status is None:
        done, st_ = os.waitpid(pid, os.WNOHANG)
        if done:
            status = st_
        elif time.perf_counter() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return -999, "timeout", time.perf_counter() - t0
        else:
            time.sleep(0.005)
    code = os.waitstatus_to_exitcode(status)
    err = err_f.read_text(errors="replace") if err_f.exists() else ""
    if stdout is not None and out_f.exists():
        stdout.append(out_f.read_text(errors="replace"))
    for f in (out_f, err_f):
        with contextlib.suppress(OSError):
            f.unlink()
    return code, err, time.perf_counter() - t0


def leftovers(folder: Path) -> list[str]:
    """Hidden temporary files or folders anywhere under ``folder``."""
    return [str(p.relative_to(folder)) for p in folder.rglob(".*")
            if p.name not in ("..stdout", "..stderr") and ".tmp" in p.name]


@st.composite
def command(draw: Any) -> dict[str, Any]:
    which = draw(st.sampled_from(["run"] * 6 + ["tiling", "verify", "verify", "sweep",
                                                "search", "report"]))
    ex: dict[str, Any] = {"cmd": which}
    if draw(st.integers(0, 5)) == 0:
        ex["case_bytes"] = draw(case_bytes())
        ex["doc"] = None
    else:
        ex["doc"] = draw(mutated_case())
        ex["case_bytes"] = json.dumps(ex["doc"]).encode()
    if which == "run":
        if ex["doc"] is not None and draw(st.integers(0, 2)) == 0:
            ex["inputs"] = draw(input_files(ex["doc"]))
        opts = ["--no-plot"] if draw(st.integers(0, 19)) else []
        opts += draw(st.sampled_from([[], ["--trace", "none"], ["--trace", "lanes"]]))
        opts += draw(st.sampled_from([[], [], ["--jobs", "1"], ["--strict"],
                                      ["--seed", str(draw(st.sampled_from([-1, 0, 3])))],
                                      ["--max-memory", draw(st.sampled_from(
                                          ["1K", "64M", "2G", "lots"]))],
                                      ["--check-streams"], ["--mode", "timing-only"]]))
        if draw(st.integers(0, 4)) == 0:
            opts += ["--platform", json.dumps(draw(platform_value()))]
        ex["opts"] = opts
        ex["out"] = draw(st.sampled_from(["out", "out", "out", "case.json/x", "existing"]))
    elif which == "verify":
        ex["opts"] = draw(st.sampled_from([[], ["--mode", "timed"], ["--standard", "threshold"],
                                           ["--standard", "custom:rtol=nan"], ["--seed", "-2"],
                                           ["--mode", "functional", "--limit", "1"]]))
    elif which == "tiling":
        ex["opts"] = draw(st.sampled_from([[], ["--json"], ["--platform", json.dumps(
            draw(platform_value()))]]))
    elif which == "sweep":
        ex["spec"] = draw(sweep_spec())
        ex["opts"] = draw(st.sampled_from([[], [], ["--resume"], ["--verify"], ["--batch", "0"]]))
    elif which == "search":
        ex["opts"] = ["--budget", str(draw(st.sampled_from([1, 2, 0]))), "--workers", "0",
                      "--no-progress"]
        ex["opts"] += draw(st.sampled_from([[], ["--no-verify"], ["--tokens", str(
            draw(st.sampled_from([1, 4, 100000000])))], ["--platform", json.dumps(
                draw(platform_value()))]]))
        ex["target"] = draw(st.sampled_from(["case.json", "tiny", "nope"]))
    else:
        ex["report_kind"] = draw(st.sampled_from(["corrupt", "empty", "missing", "rows"]))
    return ex


def check_contract(ex: dict[str, Any], tally: Counter) -> None:
    work = Path(tempfile.mkdtemp(prefix="fuzz-"))
    try:
        (work / "case.json").write_bytes(ex["case_bytes"])
        (work / "existing").mkdir()
        (work / "existing" / "mine.txt").write_text("the user's\n")
        cmd = ex["cmd"]
        target: Path | None = None  # what must not exist after an exit 2
        if cmd == "run":
            argv = ["run", "case.json", "--out", ex["out"], *ex["opts"]]
            if "inputs" in ex:
                write_inputs(work / "in", ex["inputs"])
                argv += ["--inputs", "in"]
            target = work / ex["out"] if ex["out"] == "out" else None
        elif cmd == "tiling":
            argv = ["tiling", "case.json", *ex["opts"]]
        elif cmd == "verify":
            argv = ["verify", "case.json", "--report", "rep/v", "--no-progress", *ex["opts"]]
            target = work / "rep"
        elif cmd == "sweep":
            (work / "spec.json").write_text(json.dumps(ex["spec"]))
            argv = ["sweep", "spec.json", "--out", "sw", "--workers", "0", "--no-progress",
                    "--no-report", *ex["opts"]]
            target = work / "sw"
        elif cmd == "search":
            argv = ["search", ex["target"], "--out", "se", *ex["opts"]]
            target = work / "se"
        else:
            folder = work / "res"
            kind = ex["report_kind"]
            if kind != "missing":
                folder.mkdir()
                text = {"corrupt": "{not json\n\x00\n", "empty": "",
                        "rows": json.dumps({"key": "k", "status": "ok", "axes": {}}) + "\n"}
                (folder / "results.jsonl").write_text(text[kind])
            argv = ["report", "res", "--out", "rep"]
            target = work / "rep"
        code, err, seconds = run_limited(argv, work)
        tally[(cmd, code)] += 1
        lines = [x for x in err.splitlines() if x.strip()]
        context = f"aicore-sim {' '.join(argv)} -> {code}: {err[:600]!r}"
        assert code in (0, 1, 2), context
        assert len(lines) <= 1, context
        assert "Traceback" not in err, context
        assert "internal error" not in err, context  # a bug, even if it exits 1
        assert seconds < TIMEOUT_S, context
        if code == 2 and target is not None:
            assert not target.exists() or not any(target.iterdir()), context
        assert leftovers(work) == [], context
        assert (work / "existing" / "mine.txt").read_text() == "the user's\n", context
    finally:
        shutil.rmtree(work, ignore_errors=True)


SETTINGS = dict(deadline=None, database=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.filter_too_much])


def _warm() -> None:
    """Import what the commands import, once in this process, so each forked child starts
    with it (an example then costs the command's work, not its imports)."""
    import importlib

    for mod in ("aicore_sim.cli", "aicore_sim.sim.launch", "aicore_sim.views.summary",
                "aicore_sim.export.perfetto", "aicore_sim.verify.runner", "aicore_sim.sweep.run",
                "aicore_sim.sweep.search", "aicore_sim.sweep.report", "tqdm",
                "op_models.moe_token_unpermute_with_ep_grad.api",
                "op_models.moe_token_unpermute_with_ep_grad.kernel_entry",
                "op_models.moe_token_unpermute_with_ep_grad.golden",
                "op_models.moe_token_unpermute_with_ep_grad.tiling_space"):
        importlib.import_module(mod)


def _fuzz(examples: int, shrink: bool = True) -> Counter:
    tally: Counter = Counter()
    _warm()
    phases = [p for p in Phase if shrink or p is not Phase.shrink]

    @settings(max_examples=examples, phases=phases, **SETTINGS)
    @given(command())
    def one(ex: dict[str, Any]) -> None:
        check_contract(ex, tally)

    one()
    return tally


def _print_tally(tally: Counter, seconds: float) -> None:
    total = sum(tally.values())
    print(f"\nfuzz contract: {total} examples in {seconds:.0f} s, no violation")
    for cmd in sorted({c for c, _ in tally}):
        codes = {code: n for (c, code), n in sorted(tally.items()) if c == cmd}
        print(f"  {cmd}: " + ", ".join(f"exit {k}: {v}" for k, v in codes.items()))


def test_fuzz_contract_fast() -> None:
    t0 = time.perf_counter()
    tally = _fuzz(FAST_EXAMPLES)
    _print_tally(tally, time.perf_counter() - t0)
    assert sum(tally.values()) >= FAST_EXAMPLES


@pytest.mark.slow
def test_fuzz_contract_slow() -> None:
    t0 = time.perf_counter()
    tally = _fuzz(SLOW_EXAMPLES, shrink=False)  # a failing example is reported as drawn
    _print_tally(tally, time.perf_counter() - t0)
    assert sum(tally.values()) >= SLOW_EXAMPLES

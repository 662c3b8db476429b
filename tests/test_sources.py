"""Source attribution (``aicore_sim/sim/sources.py``): every recorded instruction names the kernel
port's line that issued it, the trace carries it, and hot spots add up.

The acceptance walk: on the default case (and on P1 with ``-m slow``) every instruction slice
of the trace has a ``source`` whose file exists in the checkout, whose line is in range, and
whose text calls the API the opcode names (``DataCopyPad`` for copies, ``Cast`` for casts …).
Flags a ``TQue`` call issues are the ``TQue`` call's line, and the kernel-end teardown
(pending free-event waits, the final ``PipeBarrier<PIPE_ALL>``) is the record pass's
``Destroy()`` line.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from aicore_sim.export.perfetto import chrome_trace
from aicore_sim.sim import sources
from aicore_sim.sim.isa import Pipe
from aicore_sim.sim.sources import ROOT
from aicore_sim.sim.trace import STALL_CAUSES
from aicore_sim.views.hotspots import hotspots
from op_models.moe_token_unpermute_with_ep_grad import run_case

TQUE_CALLS = ("AllocTensor", "EnQue", "DeQue", "FreeTensor", "Destroy")


def _api(name: str) -> str:
    """The Ascend C API of a slice name: ``SetFlag<V_MTE2>(2)`` -> ``SetFlag``,
    ``DataCopyPad.GM2UB`` -> ``DataCopyPad``."""
    return re.split(r"[<.]", name, maxsplit=1)[0]


def _walk(trace_obj) -> int:
    """Check every instruction slice's source; returns the number of slices checked."""
    texts: dict[str, list[str]] = {}
    checked: set[tuple[str, str, bool]] = set()
    n = 0
    for e in trace_obj["traceEvents"]:
        if e["ph"] != "X" or "index" not in e["args"]:
            continue
        n += 1
        args = e["args"]
        key = (args["source"], e["name"], bool(args.get("implicit")))
        if key in checked:
            continue
        checked.add(key)
        if args["source"] == str(sources.KERNEL_END):  # the simulator's kernel end, named
            assert _api(e["name"]) in ("PipeBarrier", "WaitFlag"), key
            continue
        where, func = args["source"].split(" ")
        path, line = where.rsplit(":", 1)
        line = int(line)
        if path not in texts:
            f = ROOT / path
            assert f.is_file(), args["source"]  # a file of the checkout (repo-relative path)
            texts[path] = f.read_text().splitlines()
        lines = texts[path]
        assert 1 <= line <= len(lines), args["source"]
        text = lines[line - 1]
        assert re.search(rf"\bdef {func}\b", "\n".join(lines[:line])), args["source"]
        api = _api(e["name"])
        calls = TQUE_CALLS if key[2] or path.startswith("aicore_sim/") else (api,)
        assert any(re.search(rf"\b{c}\s*\(", text) for c in calls), (args["source"], text, api)
        assert not path.startswith("aicore_sim/"), key  # never a line of the simulator
    return n


def test_every_slice_of_the_default_case_names_its_kernel_line() -> None:
    _, r, _ = run_case("tiny")
    obj = chrome_trace(r.trace)
    n = _walk(obj)
    assert n == r.trace.instruction_count() == 1738  # every one of the 1,738 instructions
    # the kernel lines, not the API's: the copies of path B are in the prob-not-none port
    srcs = {e["args"]["source"] for e in obj["traceEvents"]
            if e["ph"] == "X" and e["name"] == "DataCopyPad.GM2UB"}
    assert srcs and all("kernel_prob_not_none.py:" in s and s.endswith(" Process")
                        for s in srcs)


@pytest.mark.slow
def test_every_slice_of_p1_names_its_kernel_line() -> None:
    _, r, _ = run_case("p1_deepseek_v3", mode="timing-only", jobs=2)
    obj = chrome_trace(r.trace, detail="lanes")
    assert _walk(obj) == r.trace.instruction_count()


def test_parallel_record_gives_the_serial_sources() -> None:
    _, a, _ = run_case("tiny", mode="timing-only", jobs=1)
    _, b, _ = run_case("tiny", mode="timing-only", jobs=2)
    assert b.program.jobs == 2
    sa, sb = a.program.sources, b.program.sources
    for c in range(len(a.program.streams)):
        assert [str(sa.site(c, i)) for i in range(len(a.program.streams[c]))] == \
               [str(sb.site(c, i)) for i in range(len(b.program.streams[c]))]


def test_hot_spots_add_up_to_the_busy_cycles() -> None:
    _, r, _ = run_case("tiny")
    rows = hotspots(r.trace, top=10 ** 6)
    for p in (Pipe.MTE2, Pipe.VECTOR, Pipe.MTE3):
        got = sum(x["cycles"] for x in rows if x["pipe"] == p.name)
        assert got == sum(r.trace.busy_cycles(p))  # every executed cycle has a line
    # ranked by occupied cycles, largest first
    occ = [x["cycles"] + x["gm_stretch_cycles"] for x in rows]
    assert occ == sorted(occ, reverse=True)
    # the tiny case's token rows: 30 copies GM->UB on line 310 (64 bf16 = 128 B, one row):
    # max(issue 20.63, 128 B / 34.2 B per cycle) -> 21 cycles each (a2.toml), plus the cycles
    # some of them queue behind other cores on a shared 512-byte granule (same_granule stalls)
    line = "kernel_prob_not_none.py:310"
    queued = sum(b - a for ct in r.trace.cores
                 for p, a, b, cause, w in ct.stall_rows.tolist()
                 if cause == STALL_CAUSES.index("same_granule")
                 and str(r.trace.sources.site(ct.core, w)).endswith(line + " Process"))
    top = next(x for x in rows if x["pipe"] == "MTE2" and x["source"].endswith(line + " Process"))
    assert queued > 0
    assert (top["instructions"], top["cycles"]) == (30, 30 * 21 + queued)
    assert np.isclose(top["share"], top["cycles"] / sum(r.trace.busy_cycles(Pipe.MTE2)))


def test_run_hotspots_prints_n_lines(tmp_path, cli) -> None:
    out = tmp_path / "run"
    p = cli("run", "--out", out, "--no-plot", "--trace", "none", "--hotspots", "3", "--jobs",
            "1", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    table = p.stdout.split("hot spots")[1].splitlines()[2:5]
    assert len(table) == 3 and all("kernel_" in t for t in table)
    bad = cli("run", "--out", tmp_path / "bad", "--hotspots", "0", cwd=tmp_path)
    assert bad.returncode == 2 and "--hotspots 0" in bad.stderr
    assert not (tmp_path / "bad").exists()

"""Differences between two runs: summary figures side by side, hot-line deltas, and where the
instruction streams of each core first diverge.

Step of the flow: reads run folders written by ``aicore-sim run`` (``summary.json`` and
``streams.npz``) or two rows of a sweep's ``results.jsonl``; nothing is re-simulated.

``streams.npz`` (written by :func:`save_streams` with every run) holds, per core, one 64-bit
digest per instruction (of all its fields but scalar operand values, left
out as in :func:`aicore_sim.sim.program.stream_difference`, so a timed and a timing-only record
compare equal) and its source-site id, and the site table: P1's 0.78 M instructions take
about 9 MB, written by a background process during the replay (about 0.5 s of CPU). Hot-line
deltas come from ``summary.json`` (``source_lines``: every line's cycles).

Every figure is a ``{"a": .., "b": .., "delta": b - a}`` triple (:func:`diff_runs`).
"""

from __future__ import annotations

import json
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from aicore_sim.sim.isa import HardEvent, Instr, Opcode, Pipe, per_object
from aicore_sim.sim.trace import core_name
from aicore_sim.util import schema, textinput
from aicore_sim.views.hotspots import line_table

STREAMS_FILE = "streams.npz"
PIPES = ("SCALAR", "MTE2", "VECTOR", "MTE3")


class RunFolderError(ValueError):
    """A run folder (or sweep result) that cannot be compared; the message names it."""


# --------------------------------------------------------------------------------------------
# Saving the streams' digests
# --------------------------------------------------------------------------------------------


_OPCODES = {o: k for k, o in enumerate(Opcode)}
_EVENTS: dict[Any, int] = {e: k for k, e in enumerate(HardEvent)}
_EVENTS[None] = -1
_TEXT: dict[str, int] = {}


def _text(s: str) -> int:
    v = _TEXT.get(s)
    if v is None:
        v = _TEXT[s] = zlib.crc32(s.encode())
    return v


def _operand(o: Any) -> tuple:
    return (o.space, _text(o.buf), o.addr, o.nbytes, o.dtype.num)


def _digest(ins: Instr) -> int:
    """A 64-bit digest of every field but the scalar operand value: the hash of a tuple of
    ints (strings by CRC-32, enums by number, None as -1), which Python computes the same in
    every process (it randomises the hashes of strings, and those of None and other
    identity-hashed objects follow their addresses)."""
    d, b, dep = ins.dst, ins.barrier, ins.dep
    return hash((_OPCODES[ins.op], ins.pipe, ins.count, ins.nbytes, ins.mask, ins.repeat,
                 ins.params, _EVENTS[ins.event], ins.event_id, -1 if b is None else b,
                 -1 if dep is None else dep, ins.implicit, _text(ins.label),
                 -1 if d is None else _operand(d), tuple(map(_operand, ins.src))))


def digests(streams: list[list[Instr]]) -> list[np.ndarray]:
    """One int64 digest per instruction of each stream (computed once per distinct object)."""
    seen: dict[int, int] = {}
    return [per_object(stream, seen, _digest, np.int64) for stream in streams]


def save_streams(path: Path, streams: list[list[Instr]], sources: Any) -> None:
    """Write ``streams.npz``: digests and site ids per core, and the site table."""
    arrays: dict[str, Any] = {"cores": np.array([len(streams)])}
    for c, d in enumerate(digests(streams)):
        arrays[f"digest_{c}"] = d
    if sources is not None:
        for c, s in enumerate(sources.per_core):
            arrays[f"site_{c}"] = s
        arrays["sites"] = np.array(json.dumps(sources.labels()))
    with open(path, "wb") as f:
        np.savez(f, **arrays)


def source_lines(trace: Any) -> list[list[Any]]:
    """Every (source, pipe) with cycles, as ``[source, pipe, cycles, HBM hold, instructions]``
    rows (``summary.json`` ``source_lines``: what a diff compares hot lines by)."""
    table = line_table(trace) if trace is not None else None
    if table is None:
        return []
    labels, t = table
    return [[labels[i], Pipe(p).name, int(t[i, p, 0]), int(t[i, p, 1]), int(t[i, p, 2])]
            for i, p in zip(*np.nonzero(t[:, :, 0] + t[:, :, 1] + t[:, :, 2]))]


# --------------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------------


def read_streams(path: Path) -> dict[str, np.ndarray]:
    """Every array of a ``streams.npz``, read and checked now (a truncated or foreign file is a
    :class:`RunFolderError` naming it, never a failure half-way through the diff)."""
    import zipfile

    def bad(why: str) -> RunFolderError:
        return RunFolderError(f"{path}: not a streams file of 'aicore-sim run' ({why})")

    try:
        z = np.load(path, allow_pickle=False)
        arrays = None
        if isinstance(z, np.lib.npyio.NpzFile):  # (one array: an .npy file, no archive)
            with z:
                arrays = {k: z[k] for k in z.files}
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile) as e:
        raise bad(f"{type(e).__name__}: {e}") from None
    if arrays is None:
        raise bad("one .npy array, not an .npz archive")
    cores = arrays.get("cores")
    if cores is None or cores.shape != (1,) or cores.dtype.kind not in "iu" or \
            not 0 <= int(cores[0]) <= 1 << 20:
        raise bad("'cores' must hold one core count")
    for k, v in arrays.items():
        if k.startswith(("digest_", "site_")) and (v.ndim != 1 or v.dtype.kind not in "iu"):
            raise bad(f"{k!r} must be a 1-D integer array")
    if "sites" in arrays:
        try:
            sites = json.loads(str(arrays["sites"]))
        except ValueError:
            sites = None
        if not isinstance(sites, list):
            raise bad("'sites' must be a JSON list")
        for k, v in arrays.items():
            if k.startswith("site_") and v.size and int(v.max()) >= len(sites):
                raise bad(f"{k!r} names a site beyond the {len(sites)} of 'sites'")
    return arrays


_COUNT, _FIGURE = schema.Int(minimum=0), schema.Number(minimum=0)
_NULLABLE_FIGURE = schema.AnyOf((schema.Null(), _FIGURE))
# The figures of a run's summary.json a diff compares (the file has more: an open table)
_SUMMARY = schema.Table({
    "makespan_cycles": _COUNT, "makespan_us": _FIGURE, "instructions": _COUNT,
    "block_dim": _COUNT, "bytes_gm_to_ub": _COUNT, "bytes_ub_to_gm": _COUNT,
    "achieved_gbps": _NULLABLE_FIGURE, "hbm_roofline_pct": _NULLABLE_FIGURE,
    "ub_high_water_bytes": _COUNT,
    "utilisation": schema.Table({}, open=True),
    "cores": schema.ListOf(schema.Table({"cycles": _COUNT}, required=("cycles",), open=True),
                           nonempty=False),
}, required=("makespan_cycles",), open=True, what_text="one JSON object")


class Run:
    """One side of a diff: its summary and, for a run folder, its streams file."""

    def __init__(self, name: str, summary: dict[str, Any], streams: Any = None) -> None:
        self.name, self.summary, self.streams = name, summary, streams

    @classmethod
    def folder(cls, path: str | Path) -> Run:
        path = Path(path)
        f = path / "summary.json"
        if not f.is_file():
            raise RunFolderError(f"{path}: not a run folder (no summary.json)")
        try:
            summary = textinput.loads_json(textinput.read_document(f))
        except (OSError, ValueError) as e:
            raise RunFolderError(f"{f}: unreadable ({e})") from None
        if not isinstance(summary, dict) or "makespan_cycles" not in summary:
            raise RunFolderError(f"{f}: the run has no timing (functional mode)")
        try:
            _SUMMARY.check(summary, "")
        except schema.FieldError as e:
            raise RunFolderError(f"{f}: {e} (not a summary.json as aicore-sim run writes "
                                 "it)") from None
        streams = None
        if (path / STREAMS_FILE).is_file():
            streams = read_streams(path / STREAMS_FILE)
        return cls(str(path), summary, streams)

    def lines(self) -> dict[tuple[str, str], int]:
        """(source, pipe) -> cycles incl. HBM hold, from ``source_lines`` (every line) when
        the summary has it, else from the top lines."""
        rows = self.summary.get("source_lines")
        if rows is not None:
            return {(r[0], r[1]): r[2] + r[3] for r in rows}
        return {(r["source"], r["pipe"]): r["cycles"] + r.get("gm_stretch_cycles", 0)
                for r in self.summary.get("hotspots", [])}


def sweep_points(results: str | Path, keys: list[str]) -> tuple[Run, Run]:
    """Two rows of a sweep's ``results.jsonl`` (by key, or a unique key prefix) as runs."""
    path = Path(results)
    if path.is_dir():
        path = path / "results.jsonl"
    if not path.is_file():
        raise RunFolderError(f"{results}: no results.jsonl")
    rows = []
    for line in path.read_text().splitlines():
        if line.strip():
            try:
                row = textinput.loads_json(line)
            except ValueError as e:
                raise RunFolderError(f"{path}: a line is not a JSON row ({e})") from None
            if not isinstance(row, dict):
                raise RunFolderError(f"{path}: a line is not a JSON object (a sweep's row)")
            rows.append(row)
    out = []
    for k in keys:
        hit = [r for r in rows if str(r.get("key", "")).startswith(k)]
        if len({r["key"] for r in hit}) != 1:
            raise RunFolderError(f"--points {k}: {'no' if not hit else 'more than one'} point "
                                 f"of {path} has a key starting so")
        row = hit[-1]
        if row.get("status") != "ok":
            raise RunFolderError(f"--points {k}: the point's status is {row.get('status')}")
        s = {"makespan_cycles": row["makespan_cycles"], "makespan_us": row["makespan_us"],
             "utilisation": {p: row.get(f"util_{p}") for p in PIPES},
             "bound_by": {"label": row.get("bound_by"), "why": row.get("bound_by_why")},
             "hbm_roofline_pct": row.get("hbm_roofline_pct"),
             "achieved_gbps": row.get("achieved_gbps"),
             "ub_high_water_bytes": row.get("ub_high_water_bytes"),
             "platform": row.get("platform"), "case": row.get("case"),
             "tiling": {"fields": row.get("tiling"), "tiling_key": row.get("tiling_key"),
                        "block_dim": row.get("block_dim")},
             "axes": {k: v for k, v in (row.get("axes") or {}).items()
                      if k not in ("case", "platform") and k not in (row.get("tiling") or {})}}
        out.append(Run(f"{path}#{row['key']}", s))
    return out[0], out[1]


# --------------------------------------------------------------------------------------------
# The diff
# --------------------------------------------------------------------------------------------


def _triple(a: Any, b: Any) -> dict[str, Any]:
    num = isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(
        a, bool) and not isinstance(b, bool)
    return {"a": a, "b": b, "delta": (b - a) if num else (None if a == b else "differs")}


def _imbalance(s: dict[str, Any]) -> dict[str, Any] | None:
    cycles = [c["cycles"] for c in s.get("cores", [])]
    if not cycles:
        return None
    mean = sum(cycles) / len(cycles)
    return {"max_over_mean": max(cycles) / mean if mean else 0.0,
            "max_minus_min_cycles": max(cycles) - min(cycles)}


def first_divergence(a: Any, b: Any) -> list[dict[str, Any]]:
    """Per core where the two streams first differ: index, and each side's source line."""
    if a is None or b is None:
        return []
    n = max(int(a["cores"][0]), int(b["cores"][0]))
    sites_a = json.loads(str(a["sites"])) if "sites" in a else []
    sites_b = json.loads(str(b["sites"])) if "sites" in b else []

    def src(s, sites, core, i):
        key = f"site_{core}"
        if key not in s or i >= s[key].size or s[key][i] < 0:
            return None
        return sites[int(s[key][i])]

    out = []
    for core in range(n):
        da = a[f"digest_{core}"] if f"digest_{core}" in a else np.zeros(0, np.int64)
        db = b[f"digest_{core}"] if f"digest_{core}" in b else np.zeros(0, np.int64)
        m = min(da.size, db.size)
        neq = np.flatnonzero(da[:m] != db[:m])
        if neq.size:
            i = int(neq[0])
        elif da.size != db.size:
            i = m
        else:
            continue
        out.append({"core": core, "index": i, "length_a": int(da.size),
                    "length_b": int(db.size), "source_a": src(a, sites_a, core, i),
                    "source_b": src(b, sites_b, core, i)})
    return out


def input_changes(sa: dict[str, Any], sb: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """What differs in what the two runs were given: case, platform, kernel (port or C++
    sources), tiling key, block dim and each tiling field, as (name, A, B)."""
    out: list[tuple[str, Any, Any]] = []
    for key in ("case", "platform", "kernel_source"):
        if sa.get(key) != sb.get(key) and (key in sa or key in sb):
            out.append((key, sa.get(key), sb.get(key)))
    xa, xb = sa.get("axes") or {}, sb.get("axes") or {}  # a sweep point's other axes
    for name in [*xa, *(k for k in xb if k not in xa)]:
        if xa.get(name) != xb.get(name):
            out.append((name, xa.get(name), xb.get(name)))
    ta, tb = sa.get("tiling") or {}, sb.get("tiling") or {}
    for key in ("tiling_key", "block_dim"):
        if ta.get(key) != tb.get(key):
            out.append((key, ta.get(key), tb.get(key)))
    fa, fb = _flat(ta.get("fields") or {}), _flat(tb.get("fields") or {})
    for name in [*fa, *(k for k in fb if k not in fa)]:
        if fa.get(name) != fb.get(name):
            out.append((f"tiling.{name}", fa.get(name), fb.get(name)))
    return out


def _flat(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        out.update(_flat(v, f"{prefix}{k}.") if isinstance(v, dict) else {prefix + k: v})
    return out


def verdict_label(summary: dict[str, Any]) -> str | None:
    """What bounds a run (``verdict.py``'s label, with HBM-bound yes/no when known)."""
    v = summary.get("bound_by") or {}
    label = v.get("label") or v.get("pipe")
    if label and "hbm_bound" in v:
        label += f"; HBM-bound: {'yes' if v['hbm_bound'] else 'no'}"
    return label


def diff_runs(a: Run, b: Run, top_lines: int = 10) -> dict[str, Any]:
    """Every compared figure as an a / b / delta triple, plus hot-line deltas and the streams'
    first divergence per core; ``inputs`` what differs in what the runs were given
    (:func:`input_changes`). ``differs`` says whether anything compared differs."""
    sa, sb = a.summary, b.summary
    d: dict[str, Any] = {"a": a.name, "b": b.name}
    d["inputs"] = [{"name": n, "a": x, "b": y} for n, x, y in input_changes(sa, sb)]
    d["makespan_cycles"] = _triple(sa["makespan_cycles"], sb["makespan_cycles"])
    d["makespan_us"] = _triple(sa["makespan_us"], sb["makespan_us"])
    for key in ("platform", "case"):
        if key in sa or key in sb:
            d[key] = _triple(sa.get(key), sb.get(key))
    if "cores" in sa and "cores" in sb:
        d["busy_cycles"] = {p: _triple(sum(c["busy_cycles"][p] for c in sa["cores"]),
                                       sum(c["busy_cycles"][p] for c in sb["cores"]))
                            for p in PIPES}
        d["gm_stretch_cycles"] = {p: _triple(sa.get("gm_stretch_cycles", {}).get(p, 0),
                                             sb.get("gm_stretch_cycles", {}).get(p, 0))
                                  for p in PIPES}
    d["utilisation"] = {p: _triple(sa["utilisation"].get(p), sb["utilisation"].get(p))
                        for p in PIPES}
    d["bound_by"] = _triple(verdict_label(sa), verdict_label(sb))
    if "waits" in sa and "waits" in sb:
        d["wait_cycles"] = {p: {k: _triple(sa["waits"][p]["cycles"][k],
                                            sb["waits"][p]["cycles"][k])
                                 for k in sa["waits"][p]["cycles"]} for p in PIPES}
    for key in ("bytes_gm_to_ub", "bytes_ub_to_gm", "achieved_gbps", "hbm_roofline_pct",
                "ub_high_water_bytes", "block_dim", "instructions"):
        if key in sa and key in sb:
            d[key] = _triple(sa[key], sb[key])
    ia, ib = _imbalance(sa), _imbalance(sb)
    if ia and ib:
        d["core_imbalance"] = {k: _triple(ia[k], ib[k]) for k in ia}
    la, lb = a.lines(), b.lines()
    rows = [{"source": k[0], "pipe": k[1], **_triple(la.get(k, 0), lb.get(k, 0))}
            for k in sorted(set(la) | set(lb))]
    rows = [r for r in rows if r["delta"]]
    rows.sort(key=lambda r: (-abs(r["delta"]), r["source"], r["pipe"]))
    d["line_deltas"] = rows[:top_lines]
    d["first_divergence"] = first_divergence(a.streams, b.streams)
    d["differs"] = _differs(d)
    return d


def _differs(d: Any) -> bool:
    if isinstance(d, dict):
        if "delta" in d and "a" in d:
            return bool(d["delta"])
        return any(_differs(v) for k, v in d.items() if k not in ("a", "b"))
    if isinstance(d, list):
        return bool(d)
    return False


# --------------------------------------------------------------------------------------------
# Text, markdown, figure
# --------------------------------------------------------------------------------------------


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:,.4g}" if abs(v) < 1e4 else f"{v:,.0f}"
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v:,}"
    return "-" if v is None else str(v)


def _rows(d: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(label, triple) of every scalar figure, in report order."""
    out: list[tuple[str, dict[str, Any]]] = []
    for key in ("case", "platform", "makespan_cycles", "makespan_us", "bound_by", "block_dim",
                "instructions", "bytes_gm_to_ub", "bytes_ub_to_gm", "achieved_gbps",
                "hbm_roofline_pct", "ub_high_water_bytes"):
        if key in d:
            out.append((key, d[key]))
    for group in ("busy_cycles", "gm_stretch_cycles", "utilisation"):
        for p, t in d.get(group, {}).items():
            out.append((f"{group}.{p}", t))
    for p, causes in d.get("wait_cycles", {}).items():
        for k, t in causes.items():
            if t["a"] or t["b"]:
                out.append((f"wait_cycles.{p}.{k}", t))
    for k, t in d.get("core_imbalance", {}).items():
        out.append((f"core_imbalance.{k}", t))
    return out


def _delta_text(t: dict[str, Any]) -> str:
    dl = t["delta"]
    if dl is None or dl == 0:
        return "="
    if dl == "differs":
        return "differs"
    pct = f" ({100.0 * dl / t['a']:+.1f} %)" if isinstance(t["a"], (int, float)) and t["a"] \
        else ""
    return f"{'+' if dl > 0 else ''}{_fmt(dl)}{pct}"


def _side(v: dict[str, Any], side: str) -> str:
    if v[f"source_{side}"]:
        return v[f"source_{side}"]
    return "no such core" if not v[f"length_{side}"] else "end of stream"


def format_diff(d: dict[str, Any], only_changes: bool = True) -> str:
    """Terminal text of a diff: changed figures, line deltas, stream divergence."""
    lines = [f"A: {d['a']}", f"B: {d['b']}"]
    changes = d.get("inputs") or []
    if changes:  # what the user changed comes first, then what it did
        lines.append("inputs changed: " + "; ".join(
            f"{c['name']} {_fmt(c['a'])} -> {_fmt(c['b'])}" for c in changes))
    v = d.get("bound_by") or {}
    if v.get("a") or v.get("b"):  # the verdict of each run, as its summary gives it
        lines.append(f"bound by: {v['a']}" if v["a"] == v["b"]
                     else f"bound by: A {v['a']} -> B {v['b']}")
    if not d["differs"]:
        lines.append("no difference")
        return "\n".join(lines)
    rows = [(k, t) for k, t in _rows(d) if not only_changes or t["delta"]]
    w = max((len(k) for k, _ in rows), default=10)
    lines.append(f"{'figure':<{w}}  {'A':>16}  {'B':>16}  delta")
    for k, t in rows:
        lines.append(f"{k:<{w}}  {_fmt(t['a']):>16}  {_fmt(t['b']):>16}  {_delta_text(t)}")
    if d["line_deltas"]:
        lines.append("largest hot-line deltas (cycles incl. HBM hold):")
        for r in d["line_deltas"]:
            lines.append(f"  {r['pipe']:<6} {r['source']}: {_fmt(r['a'])} -> {_fmt(r['b'])} "
                         f"({_delta_text(r)})")
    for v in d["first_divergence"][:8]:
        lines.append(f"{core_name(v['core'])}: streams diverge at instruction #{v['index']} "
                     f"(A {_side(v, 'a')}; B {_side(v, 'b')})")
    if len(d["first_divergence"]) > 8:
        lines.append(f"... and {len(d['first_divergence']) - 8} more cores diverge")
    return "\n".join(lines)


def markdown(d: dict[str, Any], png: str | None) -> str:
    """A markdown report of a diff (every figure, changed or not)."""
    out = ["# Run diff", "", f"* A: `{d['a']}`", f"* B: `{d['b']}`", ""]
    for c in d.get("inputs") or []:
        out.insert(-1, f"* changed: {c['name']} {_fmt(c['a'])} -> {_fmt(c['b'])}")
    if not d["differs"]:
        out += ["No difference.", ""]
    out += ["| figure | A | B | delta |", "|---|---:|---:|---:|"]
    for k, t in _rows(d):
        out.append(f"| {k} | {_fmt(t['a'])} | {_fmt(t['b'])} | {_delta_text(t)} |")
    if d["line_deltas"]:
        out += ["", "## Largest hot-line deltas", "", "| pipe | source | A | B | delta |",
                "|---|---|---:|---:|---:|"]
        for r in d["line_deltas"]:
            out.append(f"| {r['pipe']} | `{r['source']}` | {_fmt(r['a'])} | {_fmt(r['b'])} | "
                       f"{_delta_text(r)} |")
    if d["first_divergence"]:
        out += ["", "## Where the instruction streams first diverge", "",
                "| core | index | A | B |", "|---:|---:|---|---|"]
        for v in d["first_divergence"]:
            out.append(f"| {v['core']} | {v['index']} | {_side(v, 'a')} | {_side(v, 'b')} |")
    if png:
        out += ["", f"![paired bars]({png})"]
    return "\n".join(out) + "\n"


def plot_diff(d: dict[str, Any], path: Path) -> None:
    """Paired bars of busy cycles per pipe (A, B) and the largest hot-line deltas."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lines = d["line_deltas"]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 4.5),
                                   gridspec_kw={"width_ratios": [1, 1.6]})
    busy = d.get("busy_cycles") or {p: {"a": d["utilisation"][p]["a"] or 0,
                                        "b": d["utilisation"][p]["b"] or 0} for p in PIPES}
    xs = np.arange(len(PIPES))
    ax1.bar(xs - 0.2, [busy[p]["a"] for p in PIPES], 0.4, label="A")
    ax1.bar(xs + 0.2, [busy[p]["b"] for p in PIPES], 0.4, label="B")
    ax1.set_xticks(xs, PIPES)
    ax1.set_ylabel("busy cycles (all cores)" if "busy_cycles" in d else "utilisation")
    m = d["makespan_cycles"]
    ax1.set_title(f"makespan {m['a']:,} -> {m['b']:,} cycles")
    ax1.legend()
    if lines:
        ys = np.arange(len(lines))
        ax2.barh(ys, [r["delta"] for r in lines],
                 color=["tab:red" if r["delta"] > 0 else "tab:green" for r in lines])
        ax2.set_yticks(ys, [f"{r['pipe']} {r['source'].rsplit('/', 1)[-1]}" for r in lines],
                       fontsize=7)
        ax2.invert_yaxis()
        ax2.axvline(0, color="k", lw=0.5)
        ax2.set_xlabel("cycles B - A")
        ax2.set_title("largest hot-line deltas")
    else:
        ax2.text(0.5, 0.5, "no hot-line differences", ha="center", va="center")
        ax2.set_axis_off()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


__all__ = ["Run", "RunFolderError", "STREAMS_FILE", "diff_runs", "digests", "first_divergence",
           "format_diff", "markdown", "plot_diff", "save_streams", "source_lines",
           "sweep_points"]

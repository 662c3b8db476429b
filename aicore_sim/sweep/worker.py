"""Run batches of sweep points in any process (step: launch + replay + summary, per point).

:func:`run_batch` is what an executor runs: for each point it builds the platform (preset plus
what-if fields), resolves the case, asks the op for the point's tiling, and either records an
``infeasible`` row naming the broken rules or launches the kernel and summarises the trace.
Records are cached per process by everything the record pass depends on (case, seed, tiling,
block dim, cores, usable UB), so points that differ only in timing fields (HBM bandwidth,
clock) are replays of one recorded program. Nothing raised by a point escapes: it becomes a row
with status ``error``.
"""

from __future__ import annotations

import gc
import json
import time
import traceback
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from aicore_sim.sim.platform import Platform, load_platform
from aicore_sim.sweep.ops import get_op
from aicore_sim.sweep.points import Point
from aicore_sim.sweep.spec import AUTO, PLATFORM_AXES

DEFAULT_PLATFORM = "ascend910b1"
PIPES = ("SCALAR", "MTE2", "VECTOR", "MTE3")

# Result columns, in CSV order (dict/list values are JSON text in the CSV): these, then the
# op's case columns (``TilingSpace.sweep_columns``), then TAIL_COLUMNS.
HEAD_COLUMNS: tuple[str, ...] = ("key", "group", "status", "rule", "error", "case")
TAIL_COLUMNS: tuple[str, ...] = (
    "platform", "ub_size", "core_num", "hbm_gbps", "clock_mhz", "strategy", "overrides",
    "tiling_key", "block_dim", "makespan_cycles", "makespan_us",
    *(f"util_{p}" for p in PIPES), "bound_by", "bound_by_why", "hbm_roofline_pct",
    "achieved_gbps", "ub_bytes", "ub_high_water_bytes", "hazards", "record_reused", "wall_s",
    "axes", "tiling",
)


def worker_init() -> None:
    """Start of a sweep worker process: the parent decides when the sweep stops, so SIGINT
    (the terminal sends it to every process of the group) and SIGTERM are ignored here (a
    stopped sweep kills its workers), and the worker dies with its parent (a ``kill -9`` of
    the sweep leaves no worker behind)."""
    import signal

    from aicore_sim.util.background import die_with_parent

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    die_with_parent()


def columns(op: str) -> tuple[str, ...]:
    """The result columns of a sweep of operator ``op``."""
    return (*HEAD_COLUMNS, *case_columns_of(op), *TAIL_COLUMNS)


def case_columns_of(op: str) -> tuple[str, ...]:
    """The op's case columns (none for an op without a tiling space)."""
    try:
        return tuple(get_op(op).sweep_columns)
    except ValueError:
        return ()


_RECORDS: OrderedDict[tuple, Any] = OrderedDict()  # record key -> Recording
_RECORD_CACHE_SIZE = 4


def build_platform(axes: dict[str, Any]) -> Platform:
    """Preset named by the ``platform`` axis with the what-if axes applied (each axis is a
    platform field or one of its aliases: ``Platform.with_overrides`` resolves them, and
    ``hbm_gbps`` at the possibly overridden clock)."""
    base = load_platform(axes.get("platform", DEFAULT_PLATFORM))
    ov = {k: v for k, v in axes.items() if k in PLATFORM_AXES and k != "platform"}
    return base.with_overrides(**ov) if ov else base


def check_platforms(axes: dict[str, list[Any]], limit: int = 4096) -> None:
    """Every combination of the platform axes (the first ``limit``) builds a platform inside
    its field limits (``platform.py`` ``LIMITS``); ValueError naming the axes otherwise - a
    bad what-if value is a bad spec, refused before a point runs, not a failed point."""
    import itertools

    names = [k for k in axes if k in PLATFORM_AXES]
    for values in itertools.islice(itertools.product(*(axes[k] for k in names)), limit):
        combo = dict(zip(names, values))
        try:
            build_platform(combo)
        except (KeyError, ValueError) as e:
            where = ", ".join(f"axes.{k} = {v!r}" for k, v in combo.items())
            raise ValueError(f"{where}: {e.args[0] if e.args else e}") from None


def split_axes(op: Any, axes: dict[str, Any]) -> tuple[dict, dict, str, dict]:
    """(case axes, platform axes, strategy, knob overrides) of a point."""
    case_axes = {k: v for k, v in axes.items() if k in op.case_axes}
    plat = {k: v for k, v in axes.items() if k in PLATFORM_AXES}
    known = op.knobs_for([axes["case"]]) if "case" in axes else op.knobs
    knobs = {k: int(v) for k, v in axes.items() if k in known and v != AUTO}
    return case_axes, plat, str(axes.get("strategy", "upstream")), knobs


def group_label(axes: dict[str, Any], knobs: tuple[str, ...] | list[str]) -> str:
    """Label of everything but the tiling: points of one group compete for "best tiling"."""
    parts = []
    for k, v in axes.items():
        if k == "strategy" or k in knobs:
            continue
        text = str(v).rsplit("/", 1)[-1]
        parts.append(text if k in ("case", "platform") else f"{k}={text}")
    return " ".join(parts)


def point_label(point: Point) -> str:
    """A point in words: its group (case, platform, what-ifs), then its strategy and the
    tiling fields it sets (``auto`` ones left out)."""
    try:
        knobs = get_op(point.op).knobs_for([point.axes.get("case")])
    except ValueError:
        knobs = ()
    tiling = [f"{k}={v}" for k, v in point.axes.items() if k in knobs and v != AUTO]
    strategy = point.axes.get("strategy")
    return " ".join([group_label(point.axes, knobs),
                     *([f"strategy={strategy}"] if strategy else []), *tiling])


def _base_row(point: Point) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(columns(point.op), None)
    row["key"] = point.key
    row["op"] = point.op  # in results.jsonl only (not a CSV column): what the report names
    row["axes"] = dict(point.axes)
    try:
        op = get_op(point.op)
        row["group"] = group_label(point.axes, op.knobs_for([point.axes.get("case")]))
    except ValueError:
        row["group"] = group_label(point.axes, ())
    return row


def _platform_cols(p: Platform) -> dict[str, Any]:
    return {"platform": p.name, "ub_size": p.ub_size, "core_num": p.aiv_core_num,
            "hbm_gbps": round(p.hbm_bytes_per_cycle * p.clock_mhz / 1e3, 3),
            "clock_mhz": p.clock_mhz}


def _record_key(point: Point, case: Any, platform: Platform, plan: Any) -> tuple:
    """Everything a point's record pass depends on: case, seed, tiling and what the kernel reads
    of the platform (``recording.record_fields``); other fields' points replay the record."""
    from aicore_sim.sim.recording import record_fields

    return (point.op, repr(case), point.seed, plan.record_key(), *record_fields(platform),
            point.axes.get("kernel_source"), point.axes.get("op_source"))


def _host_tiling(point: Point) -> Any:
    """The context a point's host tiling runs in: its ``op_source``'s C++, else the port's."""
    from contextlib import nullcontext

    from aicore_sim.sweep.spec import PORT

    src = point.axes.get("op_source")
    if src in (None, PORT):
        return nullcontext()
    from aicore_sim.ascendc.host import using_host_source
    from aicore_sim.cfront.host import HostSource

    return using_host_source(HostSource.of(src))


def _kernel_source(point: Point) -> str | None:
    """The point's kernel sources: ``kernel_source``, else its ``op_source``'s ``op_kernel``."""
    from aicore_sim.sweep.spec import PORT

    given = point.axes.get("kernel_source")
    src = point.axes.get("op_source")
    if given in (None, PORT) and src not in (None, PORT):
        from aicore_sim.cfront.host import HostSource

        return str(HostSource.of(src).kernel_dir)
    return given


def _planned(point: Point) -> tuple[Any, Any, Platform, Any]:
    """The point's tiling space, resolved case, platform and host tiling plan (raises what
    they raise)."""
    op = get_op(point.op)
    case_axes, plat_axes, strategy, knobs = split_axes(op, point.axes)
    platform = build_platform(plat_axes)
    case = op.resolve_case(point.axes["case"], case_axes)
    with _host_tiling(point):
        return op, case, platform, op.plan(case, platform, strategy, knobs)


def record_group(point: Point) -> str:
    """The group of points that can share ``point``'s record, from its resolved tiling (so
    strategies and overrides that come to the same tiling record once); the point's axes-only
    group when the tiling cannot be resolved here (the worker then reports why). Never
    raises; cheap (host tiling only)."""
    if point.mode != "timing-only":
        return point.record_group()
    try:
        _, case, platform, plan = _planned(point)
        if not plan.feasible:
            return point.record_group()
        return repr(_record_key(point, case, platform, plan))
    except Exception:  # noqa: BLE001 - run_point reports the point's own error
        return point.record_group()


def record_grouper() -> Callable[[Point], str]:
    """:func:`record_group` computed once per axes-only group (``Point.record_group``: the
    points that differ only in timing-only axes - HBM, clock - which neither the host tiling
    nor the record pass reads): a sweep of 100000 bandwidth x clock points plans its tiling
    once, not 100000 times (37 s)."""
    memo: dict[str, str] = {}

    def group_of(point: Point) -> str:
        key = point.record_group()
        if key not in memo:
            memo[key] = record_group(point)
        return memo[key]
    return group_of


def run_point(point: Point) -> dict[str, Any]:
    """One row for one point (never raises)."""
    from aicore_sim.views.summary import summarize_trace

    t0 = time.perf_counter()
    row = _base_row(point)
    try:
        op = get_op(point.op)
        case_axes, plat_axes, strategy, knobs = split_axes(op, point.axes)
        platform = build_platform(plat_axes)
        row.update(_platform_cols(platform))
        case = op.resolve_case(point.axes["case"], case_axes)
        row.update(op.case_columns(case))
        row["strategy"] = strategy
        row["overrides"] = knobs
        try:
            with _host_tiling(point):
                plan = op.plan(case, platform, strategy, knobs)
        except Exception as e:  # the host tiling rejected the case itself
            rule = getattr(e, "rule", None)
            if rule is None:
                raise
            row.update(status="infeasible", rule=f"tiling:{rule}", error=str(e))
            return row
        row.update(tiling=plan.tiling_dict(), tiling_key=plan.tiling_key,
                   block_dim=plan.block_dim, ub_bytes=plan.ub_bytes)
        if not plan.feasible:
            row.update(status="infeasible", rule=",".join(r for r, _ in plan.violations),
                       error="; ".join(m for _, m in plan.violations))
            return row
        rkey = _record_key(point, case, platform, plan) if point.mode == "timing-only" else None
        rec = _RECORDS.get(rkey) if rkey is not None else None
        row["record_reused"] = rec is not None
        if rec is None:
            with _host_tiling(point):
                rec = op.launch(case, platform, plan, mode=point.mode, seed=point.seed,
                                kernel_source=_kernel_source(point))
            if rkey is not None:  # its what-if replays share its record and its costs
                _RECORDS[rkey] = rec
                # the cached record lives on: keep the cyclic collector from rescanning its
                # objects at every full pass (1.8 s of 34 s on the tilings benchmark)
                gc.freeze()
                while len(_RECORDS) > _RECORD_CACHE_SIZE:
                    _RECORDS.popitem(last=False)
        else:
            _RECORDS.move_to_end(rkey)
        trace, hazards = rec.replay(platform)
        rec.drop_trace()  # the cache keeps the record, not this point's trace
        s = summarize_trace(trace, platform)
        bb = s.get("bound_by") or {}
        row.update(
            status="ok", makespan_cycles=s["makespan_cycles"],
            makespan_us=round(s["makespan_us"], 4),
            **{f"util_{p}": round(s["utilisation"].get(p, 0.0), 4) for p in PIPES},
            bound_by=bb.get("label"), bound_by_why=bb.get("why"),
            hbm_roofline_pct=round(s["hbm_roofline_pct"], 2),
            achieved_gbps=round(s["achieved_gbps"], 2),
            ub_high_water_bytes=s["ub_high_water_bytes"], hazards=len(hazards))
    except Exception as e:  # noqa: BLE001 - a point never crashes the sweep
        code = getattr(e, "code", None)  # the op API refused the case: invalid, with its code
        row.update(status="invalid" if code is not None else "error",
                   error=f"{type(e).__name__}: {e}", rule=None if code is None else f"aclnn:{code}")
        row["traceback"] = traceback.format_exc(limit=4)
    finally:
        row["wall_s"] = round(time.perf_counter() - t0, 4)
    return row


def run_batch(points: list[Point]) -> list[dict[str, Any]]:
    """Rows of a batch (one record group), in order. What executors run."""
    return [run_point(p) for p in points]


def verify_point(point: Point) -> dict[str, Any]:
    """Re-run a point with numerics and compare it with the op's golden (never raises)."""
    t0 = time.perf_counter()
    out: dict[str, Any] = {"key": point.key, "label": point_label(point)}
    try:
        op, case, platform, plan = _planned(point)
        with _host_tiling(point):
            out.update(op.verify(case, platform, plan, seed=point.seed,
                                 kernel_source=_kernel_source(point)))
    except Exception as e:  # noqa: BLE001
        out.update(status="error", detail=f"{type(e).__name__}: {e}")
    out["wall_s"] = round(time.perf_counter() - t0, 4)
    return out


def ping(op: str) -> str:
    """Import check for remote workers: returns the name of the op the tiling space runs."""
    return get_op(op).op


def row_json(row: dict[str, Any]) -> str:
    return json.dumps(row, sort_keys=False, default=str)

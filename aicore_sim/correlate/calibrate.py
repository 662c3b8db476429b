"""Calibration: fit cost knobs to measured launches, re-simulate, write a platform overlay.

Step of the flow: after a board's profiles are read (:mod:`aicore_sim.correlate.opprof`).
Each launch is recorded once (timing-only) and replayed for every trial setting of the knobs;
nothing here prices an instruction (``cost/price.py`` does, with the knobs as data).

Knobs (``KNOBS``): ``mte2_scale`` and ``mte3_scale`` multiply the single-core GM->UB and
UB->GM copy curves, ``vector_scale`` every vector API cost (``Costs`` fields), and
``hbm_efficiency`` the chip's HBM rate (a ``Platform`` field). The fit is Gauss-Newton with
Levenberg damping on ``x = ln(knob / base)``, minimising the sum over launches, fitted pipes
(MTE2, VECTOR, MTE3) and blocks of ``(ln measured - ln simulated(x))^2``, plus ``RIDGE *
|x|^2`` (a weak pull to the base: where the launches cannot tell two knobs apart, e.g. the
MTE2 curve and the HBM rate of a bandwidth-bound launch, the smaller change wins); the
Jacobian is taken by finite differences of re-simulations (a 5 % step). A knob whose column
of the Jacobian is (near) zero - e.g. the HBM efficiency when no launch is bandwidth-bound -
is not identifiable from the launches: it keeps its base value and the report says so.

Error of a pipe = mean over launches and blocks of ``|ln r|``, r = simulated / measured (the
project's one ratio convention, as ``validate`` and ``correlate``). With more than one launch,
each launch is also predicted from a fit to the others (held-out error).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from aicore_sim.correlate.compare import FREQ_TOLERANCE
from aicore_sim.correlate.opprof import PIPES, ProfiledLaunch, choose
from aicore_sim.sim.platform import LIMITS, Platform, apply_overlay, load_platform
from aicore_sim.util import textinput
from aicore_sim.util.staging import write_staged

PROG = "aicore-sim"

KNOBS: tuple[str, ...] = ("mte2_scale", "mte3_scale", "vector_scale", "hbm_efficiency")
"""The fitted knobs, in report order."""
FITTED_PIPES: tuple[str, ...] = ("MTE2", "VECTOR", "MTE3")
MAX_RESIDUAL = math.log(1.5)
"""Largest error after the fit (mean |ln r| of a fitted pipe, r = simulated / measured) an
overlay is written with: beyond it the busy times are still off by more than a factor 1.5 on
average (in log terms) - the four knobs cannot
express what differs between the model and the board (a missing mechanism, the wrong case or
platform for the profile), and an overlay would move the other pipes to hide it. Exit 1 and
nothing written, unless ``--keep-anyway``."""
"""Pipes whose residuals drive the fit (SCALAR is reported, not fitted: no knob moves it)."""

STEP = math.log(1.05)  # finite-difference step in ln(knob)
MAX_ITERATIONS = 12
TOLERANCE = 1e-5  # stop when no ln(knob) moves more than this
IDENTIFIABLE = 1e-3  # a Jacobian column with a smaller RMS (d ln t / d ln knob) is dropped
BOUND = math.log(20.0)  # |ln(knob / base)| is kept below this
RIDGE = 1e-2  # weight of sum(x^2): of two settings that fit equally, the nearer the base wins


class CalibrateError(ValueError):
    """A bad calibrate input: ``str()`` is one line naming the argument and the rule."""


@dataclass
class Launch:
    """One measured launch, its case and its Recording (replayed per knob setting)."""

    spec: str
    measured: ProfiledLaunch
    case_name: str
    recording: Any


def _knob_platform(base: Platform, x: np.ndarray) -> Platform:
    """``base`` with the knobs at ``base value * exp(x)``; the HBM efficiency kept inside the
    platform's limits (a trial step of the fit below 1e-9 is tried at 1e-9)."""
    f = np.exp(x)
    c = base.costs
    lo, hi = LIMITS["hbm_efficiency"]
    return base.with_overrides(
        hbm_efficiency=min(max(base.hbm_efficiency * float(f[3]), lo), hi),
        costs={"mte2_scale": c.mte2_scale * float(f[0]), "mte3_scale": c.mte3_scale * float(f[1]),
               "vector_scale": c.vector_scale * float(f[2])})


def knob_values(platform: Platform) -> dict[str, float]:
    """The current value of each knob of ``platform``."""
    c = platform.costs
    return {"mte2_scale": c.mte2_scale, "mte3_scale": c.mte3_scale,
            "vector_scale": c.vector_scale, "hbm_efficiency": platform.hbm_efficiency}


def simulate(launch: Launch, platform: Platform) -> dict[str, list[float]]:
    """Busy µs per pipe and core of ``launch`` replayed on ``platform``."""
    from aicore_sim.sim.isa import Pipe

    trace = launch.recording.replay(platform, check=False)[0]
    clock = float(platform.clock_mhz)
    # a board's pipe time includes a copy's wait for HBM and its data in flight (trace.py)
    return {p: [c.pipe_time_cycles(Pipe[p]) / clock for c in trace.cores] for p in PIPES}


def _pairs(measured: ProfiledLaunch, sim: dict[str, list[float]], pipe: str
           ) -> list[tuple[float, float]]:
    return [(m, s) for m, s in zip(measured.times[pipe], sim[pipe])
            if m is not None and m > 0 and s > 0]


def _residuals(launches: list[Launch], sims: list[dict[str, list[float]]]) -> np.ndarray:
    out = []
    for launch, sim in zip(launches, sims):
        for pipe in FITTED_PIPES:
            out += [math.log(m / s) for m, s in _pairs(launch.measured, sim, pipe)]
    return np.array(out)


def errors(launches: list[Launch], sims: list[dict[str, list[float]]]) -> dict[str, Any]:
    """Per pipe: mean |ln r| (r = simulated / measured), median ratio and the blocks counted."""
    out = {}
    for pipe in PIPES:
        ratios = [s / m for launch, sim in zip(launches, sims)
                  for m, s in _pairs(launch.measured, sim, pipe)]
        out[pipe] = {"error": float(np.mean([abs(math.log(r)) for r in ratios]))
                     if ratios else None,
                     "ratio_median": float(np.median(ratios)) if ratios else None,
                     "cores": len(ratios)}
    return out


def fit(launches: list[Launch], base: Platform) -> tuple[np.ndarray, list[str], int]:
    """(ln(knob / base) per knob, knobs not identifiable, iterations) of the least squares."""
    x = np.zeros(len(KNOBS))
    active = list(range(len(KNOBS)))
    dropped: list[str] = []
    lam = 1e-3
    iterations = 0

    def run(xv: np.ndarray) -> list[dict[str, list[float]]]:
        p = _knob_platform(base, xv)
        return [simulate(launch, p) for launch in launches]

    r = _residuals(launches, run(x))
    if not r.size:
        raise CalibrateError("no block of any launch has a measured and a simulated time on "
                             "MTE2, VECTOR or MTE3: nothing to fit")
    cost = float(r @ r + RIDGE * x @ x)
    for iterations in range(1, MAX_ITERATIONS + 1):  # noqa: B007 - reported
        cols = []
        for j in active:
            xh = x.copy()
            xh[j] += STEP
            rh = _residuals(launches, run(xh))
            if rh.shape != r.shape:  # a block gained or lost a time: step the other way
                xh[j] -= 2 * STEP
                rh = _residuals(launches, run(xh))
                cols.append((r - rh) / STEP if rh.shape == r.shape else np.zeros_like(r))
            else:
                cols.append((r - rh) / STEP)  # d ln(sim) / d x_j = -(d r / d x_j)
        jac = np.stack(cols, axis=1)
        rms = np.sqrt((jac ** 2).mean(axis=0))
        keep = [k for k, v in enumerate(rms) if v >= IDENTIFIABLE]
        for k in sorted(set(range(len(active))) - set(keep), reverse=True):
            dropped.append(KNOBS[active[k]])
            x[active[k]] = 0.0
        if len(keep) < len(active):  # re-evaluate without the dropped knobs
            active = [active[k] for k in keep]
            jac = jac[:, keep]
            r = _residuals(launches, run(x))
            cost = float(r @ r + RIDGE * x @ x)
        if not active:
            break
        # Solve (J^T J + RIDGE + lam diag) dx = J^T r - RIDGE x: r = ln m - ln s, and ln s
        # grows with J dx
        jtj = jac.T @ jac + RIDGE * np.eye(len(active))
        g = jac.T @ r - RIDGE * x[active]
        moved = False
        for _ in range(8):
            dx = np.linalg.solve(jtj + lam * np.diag(np.diag(jtj) + 1e-12), g)
            xn = x.copy()
            xn[active] = np.clip(x[active] + dx, -BOUND, BOUND)
            rn = _residuals(launches, run(xn))
            cn = float(rn @ rn + RIDGE * xn @ xn) if rn.shape == r.shape else math.inf
            if cn <= cost:
                step = np.abs(xn - x).max()
                x, r, cost = xn, rn, cn
                lam = max(lam / 10, 1e-9)
                moved = True
                break
            lam *= 10
        if not moved or step < TOLERANCE:
            break
    return x, dropped, iterations


def _load(spec: str, platform: Platform, op_name: str | None) -> Launch:
    from aicore_sim.sweep.ops import get_op, op_for_case

    folder, sep, case = spec.rpartition(":")
    if not sep or not folder or not case:
        raise CalibrateError(f"{spec!r}: expected OPPROF_DIR:CASE (a measured launch folder, "
                             f"a colon, the case file or bundled case name it ran)")
    measured = choose(Path(folder))
    try:
        op = get_op(op_name or op_for_case(case))
        c = op.resolve_case(case, {})
        plan = op.plan(c, platform, "upstream", {})
    except (KeyError, ValueError, OSError) as e:
        raise CalibrateError(f"{spec}: case {case!r}: {e.args[0] if e.args else e}") from None
    except Exception as e:
        rule = getattr(e, "rule", None)
        if rule is None:
            raise
        raise CalibrateError(f"{spec}: case {case!r}: tiling rejected it ({e})") from None
    if not plan.feasible:
        raise CalibrateError(f"{spec}: case {case!r}: tiling breaks "
                             f"{'; '.join(m for _, m in plan.violations)}")
    rec = op.launch(c, platform, plan)  # timing-only
    n = len(rec.program.streams)
    if n != measured.n_blocks:
        raise CalibrateError(
            f"{measured.pipe_file}: {measured.n_blocks} vector blocks, but case {case!r} on "
            f"{platform.name} launches {n} cores (block counts must match: give the platform "
            f"the board is, e.g. its aiv_core_num)")
    return Launch(spec, measured, case, rec)


def _values(base: Platform, x: np.ndarray) -> dict[str, float]:
    return knob_values(_knob_platform(base, x))


def load_hint(spec: str, out: Path) -> str:
    """The ``--platform`` value that loads overlay ``out`` on the platform ``spec``."""
    doc = json.loads(spec) if spec.lstrip().startswith("{") else {"preset": spec}
    prior = doc.get("overlay")
    doc["overlay"] = [*(prior if isinstance(prior, list) else [prior]), str(out)] \
        if prior else str(out)
    return json.dumps(doc)


def _num(v: float) -> str:
    """A knob as TOML: every digit of the float (the file reproduces the fit exactly; six
    decimals wrote an efficiency of 1e-9 as 0.000000, which no platform accepts)."""
    return repr(float(v))


def _overlay_text(base: Platform, values: dict[str, float], fitted: list[str],
                  dropped: list[str], launches: list[Launch], before: dict, after: dict,
                  date: str, hint: str) -> str:
    files = ", ".join(str(launch.measured.pipe_file) for launch in launches)
    src = f"# source: calibrated from {files} on {date}"
    err = ", ".join(f"{p} {_pct(before[p]['error'])} -> {_pct(after[p]['error'])}"
                    for p in PIPES)
    lines = [
        f"# Platform overlay written by `aicore-sim calibrate` on {date}, relative to platform "
        f"{base.name!r}.",
        "# Fitted by least squares on ln(simulated / measured) busy time per block and pipe "
        "(MTE2, VECTOR, MTE3)",
        "# from these msprof op launches (case in brackets):",
        *(f"#   {launch.measured.pipe_file} [{launch.case_name}]" for launch in launches),
        f"# Error per pipe, mean |ln(simulated / measured)|, before -> after: {err}",
    ]
    if dropped:
        lines.append(f"# Not identifiable from these launches (kept at the platform's value, "
                     f"not written): {', '.join(dropped)}")
    lines += [f"# Load it with: --platform '{hint}'", ""]
    if "hbm_efficiency" in fitted:
        lines += [f"hbm_efficiency_ratio = {_num(values['hbm_efficiency'])}  {src}", ""]
    cost_knobs = [k for k in KNOBS[:3] if k in fitted]
    if cost_knobs:
        lines.append("[costs]")
        lines += [f"{k} = {_num(values[k])}  {src}" for k in cost_knobs]
    return "\n".join(lines) + "\n"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.2f}%"


def calibrate(launches: list[Launch], base: Platform) -> dict[str, Any]:
    """The fit of ``launches`` on ``base``: knobs, errors before / after, held-out errors."""
    before = errors(launches, [simulate(launch, base) for launch in launches])
    x, dropped, iterations = fit(launches, base)
    fitted = [k for k in KNOBS if k not in dropped]
    after = errors(launches, [simulate(launch, _knob_platform(base, x)) for launch in launches])
    held_out = []
    if len(launches) > 1:
        for i, launch in enumerate(launches):
            rest = launches[:i] + launches[i + 1:]
            xi, _, _ = fit(rest, base)
            e = errors([launch], [simulate(launch, _knob_platform(base, xi))])
            held_out.append({"launch": launch.spec, "knobs": _values(base, xi), "errors": e})
    flags = [f"{launch.measured.info_file}: the board ran at {launch.measured.freq_mhz:g} MHz, "
             f"the platform is {base.clock_mhz:g} MHz (cycle-priced costs absorb the "
             f"difference: give the board's clock_mhz in --platform)"
             for launch in launches if launch.measured.freq_mhz
             and abs(launch.measured.freq_mhz - base.clock_mhz) > FREQ_TOLERANCE * base.clock_mhz]
    return {"platform": base.name, "base": knob_values(base), "knobs": _values(base, x),
            "flags": flags,
            "fitted": fitted, "not_identifiable": dropped, "iterations": iterations,
            "launches": [{"spec": launch.spec, "pipe_file": str(launch.measured.pipe_file),
                          "case": launch.case_name, "blocks": launch.measured.n_blocks}
                         for launch in launches],
            "errors_before": before, "errors_after": after, "held_out": held_out}


def format_text(result: dict[str, Any], out: Path) -> str:
    """The terminal form: knobs, error per pipe before / after, held-out errors."""
    lines = [f"calibrated {len(result['launches'])} launch(es) on {result['platform']} in "
             f"{result['iterations']} Gauss-Newton iteration(s)"]
    for k in KNOBS:
        v, b = result["knobs"][k], result["base"][k]
        note = "" if k in result["fitted"] else "  (not identifiable: kept)"
        lines.append(f"  {k:<15} {b:.4f} -> {v:.4f}  (x{v / b:.4f}){note}")
    lines.append(f"{'pipe':<8} {'error before':>12} {'error after':>12}  median ratio after")
    for p in PIPES:
        b, a = result["errors_before"][p], result["errors_after"][p]
        med = "-" if a["ratio_median"] is None else f"{a['ratio_median']:.4f}"
        fit_note = "" if p in FITTED_PIPES else "  (not fitted)"
        lines.append(f"{p:<8} {_pct(b['error']):>12} {_pct(a['error']):>12}  {med}{fit_note}")
    for h in result["held_out"]:
        e = ", ".join(f"{p} {_pct(h['errors'][p]['error'])}" for p in PIPES)
        lines.append(f"held out {h['launch']}: predicted from the others, error {e}")
    lines += [f"flag: {f}" for f in result["flags"]]
    if result.get("overlay"):
        lines.append(f"wrote {out}; load it with --platform '{result['load_with']}'")
    return "\n".join(lines)


def calibrate_main(args: argparse.Namespace) -> int:
    """The ``calibrate`` command (errors: :class:`CalibrateError`, OpprofError)."""
    spec = args.platform
    try:
        base = load_platform(textinput.loads_json(spec) if spec.lstrip().startswith("{") else spec)
    except (ValueError, KeyError, TypeError) as e:
        raise CalibrateError(f"--platform {spec}: {e.args[0] if e.args else e}") from None
    out = Path(args.out)
    if out.suffix != ".toml":
        raise CalibrateError(f"--out {out}: must end with .toml (a platform overlay)")
    if out.is_dir():
        raise CalibrateError(f"--out {out}: is a folder")
    from aicore_sim.util.claim import claim

    claim(out, "--out")  # writable and locked before the fit
    launches = [_load(s, base, args.op) for s in args.pairs]
    result = calibrate(launches, base)
    date = _dt.date.today().isoformat()
    text = _overlay_text(base, result["knobs"], result["fitted"], result["not_identifiable"],
                         launches, result["errors_before"], result["errors_after"], date,
                         load_hint(spec, out))
    result["load_with"] = load_hint(spec, out)
    worst = max(((result["errors_after"][p]["error"], p) for p in FITTED_PIPES
                 if result["errors_after"][p]["error"] is not None), default=(0.0, None))
    result["max_residual"] = MAX_RESIDUAL
    too_far = worst[0] > MAX_RESIDUAL
    write = not too_far or getattr(args, "keep_anyway", False)
    if write:
        checked: list[Platform] = []

        def reload(tmp: Path) -> None:  # the file must load before it is published
            try:
                checked.append(apply_overlay(base, tmp))
            except ValueError as e:
                raise CalibrateError(f"--out {out}: the overlay written does not load "
                                     f"({e}); nothing written") from None

        write_staged(out, text, check=reload)
        # the file reproduces the fit: re-simulate through it
        result["errors_overlay"] = errors(launches, [simulate(launch, checked[0])
                                                     for launch in launches])
        result["overlay"] = str(out)
    else:
        result["overlay"] = None
    if args.json:
        print(json.dumps(result))
    else:
        print(format_text(result, out))
    if too_far:
        what = (f"the fit leaves {worst[1]} off by a factor {math.exp(worst[0]):.2f} (mean "
                f"|ln(simulated / measured)| {worst[0]:.3f} above ln 1.5 = "
                f"{MAX_RESIDUAL:.3f}): the knobs cannot explain these launches")
        if write:
            print(f"{PROG}: warning: {what}; --keep-anyway: {out} written", file=sys.stderr)
            return 0
        print(f"{PROG}: check failed: {what}; {out} not written (--keep-anyway writes it)",
              file=sys.stderr)
        return 1
    return 0


__all__ = ["FITTED_PIPES", "KNOBS", "CalibrateError", "calibrate", "calibrate_main", "errors",
           "fit", "knob_values", "simulate"]

"""Design-space sweeps: spec -> points -> executor-agnostic runner -> results -> report.

Step of the flow: the outermost loop around single launches. :mod:`.spec` parses and validates a
sweep file, :mod:`.points` expands it into hashed points, :mod:`.worker` runs batches of points
(in any process), :mod:`.run` drives any ``concurrent.futures.Executor`` and writes one result
row per point, :mod:`.search` looks for the fastest legal tiling of one case, and :mod:`.report`
turns result rows into markdown and PNG charts. Operator knowledge (tiling knobs, strategies,
constraints) comes from the operator's ``TilingSpace`` (:mod:`aicore_sim.ops.tilingspace`), found
by name through :mod:`.ops`.
"""

from aicore_sim.sweep.ops import get_op, register_op
from aicore_sim.sweep.points import Point, expand, point_key
from aicore_sim.sweep.run import make_executor, run_points, run_sweep
from aicore_sim.sweep.spec import SpecError, SweepSpec, load_spec, parse_spec

__all__ = [
    "Point",
    "SpecError",
    "SweepSpec",
    "expand",
    "get_op",
    "load_spec",
    "make_executor",
    "parse_spec",
    "point_key",
    "register_op",
    "run_points",
    "run_sweep",
]

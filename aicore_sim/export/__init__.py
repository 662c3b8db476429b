"""Exporters: turn a Trace into files other tools open.

Step of the flow: after the replay and the summary; they read the
:class:`~aicore_sim.trace.Trace` only. :mod:`aicore_sim.export.perfetto` writes Chrome Trace
Event JSON that Perfetto (ui.perfetto.dev) and chrome://tracing open, and validates it against
Perfetto's import rules.
"""

from aicore_sim.export.perfetto import (
    chrome_trace,
    read_trace,
    validate_chrome_trace,
    write_trace,
)

__all__ = ["chrome_trace", "read_trace", "validate_chrome_trace", "write_trace"]

"""Exporters: turn a Trace into files other tools open.

Step of the flow: after the replay and the summary; they read the
:class:`~aicore_sim.sim.trace.Trace` only. :mod:`aicore_sim.export.perfetto` writes Chrome Trace
Event JSON that Perfetto (ui.perfetto.dev) and chrome://tracing open — streamed to disk from
the Trace's arrays, at two detail levels (its import rules are checked by the tests'
validator, ``tests/perfetto_schema.py``).
:mod:`aicore_sim.export.msprof` writes a run's ``PipeUtilization.csv`` / ``OpBasicInfo.csv``
in ``msprof op``'s format (from the summary).
"""

from aicore_sim.export.perfetto import (
    TraceFile,
    chrome_trace,
    read_trace,
    write_trace,
)

__all__ = ["TraceFile", "chrome_trace", "read_trace", "write_trace"]

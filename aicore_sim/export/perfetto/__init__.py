"""Chrome Trace Event JSON for Perfetto: one process per core, one thread per pipe.

Step of the flow: an exporter after the replay; it reads the :class:`~aicore_sim.sim.trace.Trace`
only and never recomputes a cycle.

Layout of the file (``{"schemaVersion": 2, "displayTimeUnit": "ns", "profilingType": "op",
"traceEvents": [...], "otherData": {...}}``; :data:`HEADER`):

- the first keys are those of msprof op simulator's ``trace.json``: MindStudio Insight imports
  a file as an operator trace only when ``profilingType`` / ``op`` come before the first ``[``;
- process ``"core<core>.veccore0"`` (msprof's simulator name of a vector core) with
  ``pid = core + 1`` (numeric ids with name metadata: Perfetto needs them, Insight reads the
  names);
- threads ``SCALAR``, ``MTE2``, ``VECTOR``, ``MTE3`` (and ``<PIPE> stalls`` where a pipe
  stalled) with ``tid = core * 8 + lane + 1`` — unique across the trace and never 0;
- one complete event (``"ph": "X"``) per executed instruction; the SCALAR thread also carries
  ``issue`` slices (scalar-unit busy time outside scalar instructions, args: ``cycles``);
- stall slices named ``stall: <cause>`` (args: ``what``, ``cycles``) on the pipe's stall thread;
- a flow arrow (``"s"`` → ``"f"``, same ``id``) from every SetFlag to the WaitFlag it released;
- a counter (``"ph": "C"``) ``UB bytes`` per core: ``reserved`` (InitBuffer total) and ``live``
  (buffers between the first and the last instruction touching them).

``otherData`` holds ``clock_mhz``, ``makespan_cycles``, ``cores``, ``detail``, ``events`` (the
number of events in the file), ``dtype`` when the trace has a single one, and the caller's
metadata (case, platform, mode …).

``detail="lanes"`` keeps the processes, the four pipe threads and the instruction slices only
(no stall threads, issue slices, flows or counters): P1 has 0.78 M events instead of 1.88 M.

The modules, in the order the text is made:

- :mod:`~aicore_sim.export.perfetto.schema`: ids, names, labels and args of the events, and
  their timestamps;
- :mod:`~aicore_sim.export.perfetto.events`: the numbers behind one core's events (instruction
  shapes, issue slices, stalls, flows, the UB counter), as numpy arrays;
- :mod:`~aicore_sim.export.perfetto.rows`: rendering rows of events as a byte matrix;
- :mod:`~aicore_sim.export.perfetto.writer`: the text of a whole trace, chunk by chunk, and
  :func:`chrome_trace` (in memory);
- :mod:`~aicore_sim.export.perfetto.sink`: :func:`write_trace` (the file: gzip, worker thread,
  atomic) and :func:`read_trace`.
"""

from aicore_sim.export.perfetto.schema import (
    DETAILS,
    HEADER,
    LANES,
    core_label,
    instr_args,
    pid_of,
    tid_of,
)
from aicore_sim.export.perfetto.sink import TraceFile, read_trace, write_trace
from aicore_sim.export.perfetto.writer import CHUNK_EVENTS, chrome_trace

__all__ = [
    "CHUNK_EVENTS",
    "DETAILS",
    "HEADER",
    "LANES",
    "TraceFile",
    "chrome_trace",
    "core_label",
    "instr_args",
    "pid_of",
    "read_trace",
    "tid_of",
    "write_trace",
]

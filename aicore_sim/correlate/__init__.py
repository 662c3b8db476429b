"""The simulator against a board: read ``msprof op`` profiles, correlate, calibrate.

Step of the flow: after a run (its ``PipeUtilization.csv`` / ``OpBasicInfo.csv``, written by
:mod:`aicore_sim.export.msprof`). :mod:`~aicore_sim.correlate.opprof` reads msprof op folders,
:mod:`~aicore_sim.correlate.compare` computes simulated / measured ratios,
:mod:`~aicore_sim.correlate.report` writes them, :mod:`~aicore_sim.correlate.calibrate` fits
cost knobs to measured launches and writes a platform overlay, and
:mod:`~aicore_sim.correlate.cli_correlate` holds the ``correlate`` and ``calibrate``
subcommands.
"""

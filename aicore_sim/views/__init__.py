"""Readers of a :class:`~aicore_sim.sim.trace.Trace`: the run summary, hotspots, slack, the
diff of two runs and the timeline plots."""

"""The operator contract: :class:`~aicore_sim.ops.opmodel.OpModel`, tiling spaces, the registry
of installed operators (entry-point group ``aicore_sim.ops``) and case files."""

"""CANN ops-transformer ``MoeTokenUnpermuteWithEp`` (the forward): host tiling, kernel port, golden."""

"""CANN ops-transformer ``MoeTokenUnpermuteWithEp`` (forward): tiling, kernel port, golden."""

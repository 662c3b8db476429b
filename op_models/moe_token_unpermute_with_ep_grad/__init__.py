"""CANN ops-transformer ``MoeTokenUnpermuteWithEpGrad``: host tiling, kernel ports and golden."""

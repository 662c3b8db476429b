"""CANN ops-transformer ``MoeTokenPermuteWithEp`` (forward EP permute): tiling, kernels, golden."""

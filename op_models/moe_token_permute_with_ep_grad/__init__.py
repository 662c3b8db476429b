"""CANN ops-transformer ``MoeTokenPermuteWithEpGrad`` (EP permute backward): tiling, kernel."""

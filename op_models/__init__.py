"""Python ports of Ascend C operators (host tiling, kernels, golden models), one package each."""

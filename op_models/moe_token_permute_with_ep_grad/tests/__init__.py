"""Tests of op_models/moe_token_permute_with_ep_grad/ (kept out of the wheel: pyproject.toml)."""

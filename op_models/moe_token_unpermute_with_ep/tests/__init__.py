"""Tests of op_models/moe_token_unpermute_with_ep/ (kept out of the wheel: pyproject.toml)."""

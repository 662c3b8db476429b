"""Tests of op_models/board_samples/ (kept out of the wheel: pyproject.toml)."""

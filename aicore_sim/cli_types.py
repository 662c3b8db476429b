"""argparse value types shared by every subcommand's parser (step: the command line).

A value that fails its type is reported by argparse as one line naming the option and the
rule (exit 2), like every other bad input.
"""

from __future__ import annotations

import argparse


def nonneg_int(text: str) -> int:
    """Seeds and counts: an integer >= 0."""
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {v}")
    return v


__all__ = ["nonneg_int"]

"""Cases -> results for ``aicore-sim verify`` (placeholder, being written)."""

from __future__ import annotations

import argparse

from aicore_sim.verify import VerifyError


def verify_main(args: argparse.Namespace) -> int:
    raise VerifyError("verify: not implemented yet")

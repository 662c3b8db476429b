"""Numeric equivalence testing: run cases, compare every output with a golden, report.

Step of the flow: after the launch - outputs of :mod:`aicore_sim.sim.recording` runs are compared
with the operator's golden (or with expected outputs a user supplies) under a numeric standard, over
single cases, case matrices or upstream ATK system-test records.

Modules: :mod:`.standards` (bit-exact, CANN threshold, custom rtol/atol/ratio),
:mod:`.compare` (error metrics of one output), :mod:`.matrix` (case matrices from TOML/JSON),
:mod:`.atk` (CANN ATK case-description files), :mod:`.runner` (cases -> results),
:mod:`.report` (text, JSON and markdown), :mod:`.cli_verify` (``aicore-sim verify``).
"""

from aicore_sim.sim.errors import InputError


class VerifyError(InputError):
    """A bad input to ``verify`` (spec, file, standard); the message names file and rule."""


__all__ = ["VerifyError"]

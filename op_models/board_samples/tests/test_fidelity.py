"""The model held against the board in the default tests: a cheap subset of the board_samples
suite (op_models/board_samples: Huawei's best-practice samples with their on-board msprof
figures) runs as ``aicore-sim validate`` runs it, and the figures and optimisation steps of
``reports/fidelity.md`` must hold. Each step fails when its mechanism is removed: the L2
(slicing for reuse), the alignment factor (unaligned rows), the bank model (both
bank_conflict_ub steps) and same-address serialisation (same order vs staggered) - the
mechanism tests in test_l2.py, test_bank_conflicts.py and test_same_granule.py show the
mechanisms themselves on tiny platforms.

The full run (37 scenarios, about 95 s) is `aicore-sim validate --report reports/fidelity.md`.
"""

from __future__ import annotations

import pytest

from aicore_sim.validate.run import run_suite
from op_models.board_samples.suite import SUITE

# data_copy s3-s8 on A2 (full size, 0.2-1.6 s each) and the eight bank_conflict_ub layouts
SUBSET = ["data_copy_s[345678]_a2", "bank_conflict_ub"]


@pytest.fixture(scope="module")
def outcome():
    return run_suite(SUITE, SUBSET)


def test_the_subset_runs(outcome) -> None:
    assert outcome.failed == []
    assert len(outcome.runs) == 6 + 8


def test_figures_within_the_reported_errors(outcome) -> None:
    worst = {c.scenario: 0.0 for c in outcome.cells}
    for c in outcome.cells:
        if c.compared:
            worst[c.scenario] = max(worst[c.scenario], c.error)
    # reports/fidelity.md: these scenarios' worst |ln r| (staggered s8, 128 B rows bypassing
    # L2, is the model's largest miss on A2: 24.7 %; 38 % before bypassed reads paid the
    # unaligned ratio on partial granules, engine/l2.py)
    assert worst["data_copy_s8_a2"] < 0.25
    assert all(e < 0.13 for name, e in worst.items() if name != "data_copy_s8_a2"), worst


def test_every_optimisation_step_is_in_the_boards_direction(outcome) -> None:
    steps = {s.step.name: s for s in outcome.steps}
    # alignment (s4 -> s3), L2 reuse (s5 -> s6), core staggering (s7 -> s8), and the two
    # bank-conflict-free layouts of bank_conflict_ub
    assert len(steps) == 5
    assert all(s.right for s in steps.values()), {k: (s.board_gain, s.sim_gain)
                                                  for k, s in steps.items()}
    # every gain within a factor 1.25 of the board's (core staggering: 1.87 vs 1.64; 2.14
    # before bypassed reads paid for partial granules)
    assert all(s.within for s in steps.values())

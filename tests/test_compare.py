"""aicore_sim.verify.compare: the one output-vs-golden comparison (verify and the run summary)."""

from __future__ import annotations

import numpy as np
import pytest

from aicore_sim.sim.dtypes import bfloat16, float32, int32, int64
from aicore_sim.verify.compare import CHUNK, EXACT_VALUES, compare
from aicore_sim.verify.standards import parse_standard
from aicore_sim.views.summary import compare_golden, format_summary

BIT_EXACT = parse_standard("bit-exact").rule(float32)
THRESHOLD_BF16 = parse_standard("threshold").rule(bfloat16)
THRESHOLD_F32 = parse_standard("threshold").rule(float32)


def _golden_lines(got: np.ndarray, want: np.ndarray) -> list[str]:
    """The golden lines format_summary prints for one output named ``y``."""
    d = {"platform": "p", "clock_mhz": 1.0, "mode": "functional", "block_dim": 1,
         "instructions": 0, "hazard_counts": {}, "hazards": [],
         "golden": compare_golden({"y": got}, {"y": want})}
    return [ln for ln in format_summary(d).splitlines() if ln.startswith("golden")]


def _bf16_12() -> np.ndarray:
    return np.arange(1, 13, dtype=np.float32).reshape(3, 4).astype(bfloat16)


def test_exact_match_every_rule_and_the_summary():
    want = _bf16_12()
    for rule in (EXACT_VALUES, BIT_EXACT, THRESHOLD_BF16):
        r = compare("y", want.copy(), want, rule)
        assert (r.passed, r.elements, r.bad, r.bit_mismatches) == (True, 12, 0, 0)
        assert (r.max_abs, r.max_rel, r.mean_rel, r.first_bad, r.error) == (0, 0, 0, None, None)
    g = compare_golden({"y": want.copy()}, {"y": want, "z": None})
    assert g == {"y": {"elements": 12, "mismatches": 0, "max_abs_error": 0.0,
                       "max_rel_error": 0.0, "mean_rel_error": 0.0, "exact": True,
                       "bit_mismatches": 0, "first_mismatch": None}}
    assert _golden_lines(want.copy(), want) == ["golden y: exact (12 elements)"]


def test_one_ulp_bf16_named_with_index_and_values():
    want = _bf16_12()
    got = want.copy()
    got.view(np.uint16)[2, 1] += 1  # 10 = 0x4120 -> 0x4121 = 10 + 2^-4 (7 mantissa bits, 2^3)
    rel = 0.0625 / (10.0 + 1e-7)  # CANN's relative error with its 1e-7 guard
    first = {"index": [2, 1], "got": 10.0625, "want": 10.0}
    for rule in (EXACT_VALUES, BIT_EXACT):
        r = compare("y", got, want, rule)
        assert (r.passed, r.bad, r.bit_mismatches, r.first_bad) == (False, 1, 1, first)
        assert (r.max_abs, r.max_rel) == (0.0625, rel)
        assert r.mean_rel == rel / 12  # 11 equal elements add 0
    # threshold bf16: rel 0.00625 < 2^-7 = 0.0078125, so not bad; mean rel/12 < 2^-7: pass
    r = compare("y", got, want, THRESHOLD_BF16)
    assert (r.passed, r.bad, r.bit_mismatches, r.first_bad) == (True, 0, 1, None)
    g = compare_golden({"y": got}, {"y": want})["y"]
    assert g == {"elements": 12, "mismatches": 1, "max_abs_error": 0.0625,
                 "max_rel_error": rel, "mean_rel_error": rel / 12, "exact": False,
                 "bit_mismatches": 1, "first_mismatch": first}
    # .3g of 0.0625 and of 0.0625 / 10.0000001 = 0.00624999994
    assert _golden_lines(got, want) == [
        "golden y: 1 of 12 elements differ, max abs 0.0625, max rel 0.00625, "
        "first at [2, 1]: got 10.0625, want 10.0"]


def test_nan_vs_nan_and_signed_zero_are_equal_values_but_not_equal_bits():
    want = np.array([1.0, np.nan, 0.0, 2.0], np.float32)
    got = want.copy()
    got.view(np.uint32)[1] = 0xFFC00001  # NaN with the sign set and another payload
    got[2] = -0.0
    r = compare("y", got, want, EXACT_VALUES)
    assert (r.passed, r.bad, r.bit_mismatches, r.max_abs, r.mean_rel) == (True, 0, 2, 0, 0)
    r = compare("y", got, want, THRESHOLD_F32)
    assert (r.passed, r.bad, r.bit_mismatches) == (True, 0, 2)
    r = compare("y", got, want, BIT_EXACT)  # md5 semantics: the bits differ, so both are bad
    assert (r.passed, r.bad, r.max_abs) == (False, 2, 0.0)
    assert r.first_bad["index"] == [1] and np.isnan(r.first_bad["got"])
    assert _golden_lines(got, want) == [
        "golden y: exact (4 elements); 2 differ only in bits (NaN payload or sign, -0 vs +0)"]
    # NaN with the very same bits on both sides is equal under every rule, bit-exact included
    both = np.array([np.nan, 1.0], np.float32)
    assert compare("y", both, both.copy(), BIT_EXACT).passed


def test_nan_vs_number_is_bad():
    want = np.array([1.0, 2.0, 4.0], np.float32)
    got = want.copy()
    got[2] = np.nan
    for rule in (EXACT_VALUES, BIT_EXACT, THRESHOLD_F32):
        r = compare("y", got, want, rule)
        assert (r.passed, r.bad, r.max_abs, r.max_rel, r.mean_rel) == (
            False, 1, np.inf, np.inf, np.inf)
        assert r.first_bad["index"] == [2] and r.first_bad["want"] == 4.0
    g = compare_golden({"y": got}, {"y": want})["y"]
    assert (g["mismatches"], g["exact"], g["max_abs_error"]) == (1, False, np.inf)


def test_plus_inf_vs_minus_inf():
    want = np.array([np.inf, -np.inf, np.inf], np.float32)
    got = np.array([-np.inf, -np.inf, np.inf], np.float32)  # the same infinities are equal
    r = compare("y", got, want, EXACT_VALUES)
    # |-inf - inf| = inf; rel = inf / (inf + 1e-7) = nan, reported as inf
    assert (r.passed, r.bad, r.bit_mismatches, r.max_abs, r.max_rel) == (
        False, 1, 1, np.inf, np.inf)
    assert r.first_bad == {"index": [0], "got": -np.inf, "want": np.inf}
    assert not compare("y", got, want, THRESHOLD_F32).passed


def test_int_outputs():
    want = np.array([[5, -7], [100, 0]], np.int32)
    got = want.copy()
    got[1, 0] = 103
    for rule in (EXACT_VALUES, parse_standard("threshold").rule(int32)):
        r = compare("y", got, want, rule)
        assert (r.passed, r.bad, r.max_abs) == (False, 1, 3.0)
        assert r.max_rel == 3.0 / (100 + 1e-7)
        assert r.first_bad == {"index": [1, 0], "got": 103, "want": 100}
        assert isinstance(r.first_bad["got"], int)
    # custom tolerances do not apply to integers: any differing element is bad
    loose = parse_standard("custom:rtol=1,atol=10,ratio=0").rule(int32)
    assert compare("y", got, want, loose).bad == 1
    # int64 above 2^53: 2^53 + 1 rounds to 2^53 in float64, so abs reads 0 (documented), but
    # the element is still bad because its bits differ
    big = np.array([2**53], int64)
    r = compare("y", big + 1, big, EXACT_VALUES)
    assert (r.passed, r.bad, r.max_abs, r.first_bad["got"]) == (False, 1, 0.0, 2**53 + 1)


@pytest.mark.parametrize("rule", [EXACT_VALUES, BIT_EXACT, THRESHOLD_F32,
                                  parse_standard("custom:rtol=0.01,atol=0,ratio=0.2")
                                  .rule(float32)],
                         ids=["exact-values", "bit-exact", "threshold", "custom"])
def test_chunk_boundaries_give_the_one_chunk_result(rule):
    want = (np.arange(35, dtype=np.float32) * 0.5 + 1).reshape(5, 7)
    want.reshape(-1)[20] = np.nan
    got = want.copy()
    flat = got.reshape(-1)
    flat[[0, 6, 7, 13, 34]] += np.float32(0.25)  # first and last element, both sides of rows
    flat[14] = np.nan  # NaN where the golden has a number
    flat.view(np.uint32)[20] ^= 1  # NaN vs NaN with another payload
    flat[27] = -flat[27]
    one = compare("y", got, want, rule, chunk=35)
    assert one.bit_mismatches == 8 and one.max_abs == np.inf
    assert one.first_bad is not None and one.first_bad["index"] == [0, 0]
    key = ("passed", "bad", "bit_mismatches", "max_abs", "max_rel", "first_bad", "elements")
    for chunk in (1, 2, 3, 6, 7, 8, 13, 34, 36, CHUNK):
        for g in (got, np.asfortranarray(got), got.T.copy().T):  # and non-contiguous layouts
            r = compare("y", g, want, rule, chunk=chunk)
            assert {k: getattr(r, k) for k in key} == {k: getattr(one, k) for k in key}
            assert r.mean_rel == one.mean_rel  # inf here (the NaN vs number)
    # finite sums: the order of summation may change the last bits only
    got[2, 0] = want[2, 0]
    ref = compare("y", got, want, rule, chunk=35).mean_rel
    for chunk in (1, 3, 7, 13):
        assert compare("y", got, want, rule, chunk=chunk).mean_rel == pytest.approx(ref,
                                                                                  rel=1e-15)


def test_chunks_inside_a_row_and_on_3d():
    want = np.zeros((2, 3, 5), np.float32)
    got = want.copy()
    got[1, 2, 4] = 1.0  # the last element
    got[0, 1, 0] = 2.0  # flat 5
    for chunk in (1, 2, 4, 5, 14, 30):
        r = compare("y", got, want, EXACT_VALUES, chunk=chunk)
        assert (r.bad, r.max_abs, r.first_bad["index"]) == (2, 2.0, [0, 1, 0])
        assert r.max_rel == 2.0 / 1e-7  # golden 0: the guard alone
    assert compare_golden({"y": got}, {"y": want}, chunk=1)["y"]["mismatches"] == 2


def test_zero_d_and_empty():
    r = compare("y", np.float32(2.0), np.float32(1.0), EXACT_VALUES)
    assert (r.elements, r.bad, r.first_bad) == (1, 1, {"index": [], "got": 2.0, "want": 1.0})
    r = compare("y", np.zeros((0, 4), np.float32), np.zeros((0, 4), np.float32), EXACT_VALUES)
    assert (r.passed, r.elements, r.mean_rel) == (True, 0, 0.0)


def test_shape_and_dtype_mismatch_messages():
    r = compare("y", np.zeros(3, np.float32), np.zeros(4, np.float32), BIT_EXACT)
    assert (r.passed, r.error) == (False, "shape [3] != expected [4]")
    r = compare("y", np.zeros(3, np.float32), np.zeros(3, bfloat16), BIT_EXACT)
    assert (r.passed, r.error) == (False, "dtype float32 != expected bfloat16")
    g = compare_golden({"a": np.zeros((2, 2)), "b": np.zeros(2, np.int32), "c": None},
                       {"a": np.zeros((2, 3)), "b": np.zeros(2, np.int64),
                        "c": np.zeros(2)})
    assert g == {"a": {"error": "shape [2, 2] != expected [2, 3]"},
                 "b": {"error": "dtype int32 != expected int64"},
                 "c": {"error": "output missing"}}
    assert _golden_lines(np.zeros(2), np.zeros(3)) == ["golden y: shape [2] != expected [3]"]

"""examples/ep_token_path.py at the tiny size: the four EP-path kernels through ``aicore-sim run``
on one routing, every output exact, and every hand-over what the data flow says it is.

The chain runs once per module (four ``aicore-sim run`` subprocesses, a few seconds); the
assertions read the case files, ``--inputs`` folders and ``outputs/`` the runs left on disk.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from op_models.moe_token_permute_with_ep import cases as permute_cases

BF16 = np.dtype(ml_dtypes.bfloat16)
REPO = Path(__file__).resolve().parents[1]


def _example():
    spec = importlib.util.spec_from_file_location("ep_token_path",
                                                  REPO / "examples" / "ep_token_path.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


EX = _example()


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    out = tmp_path_factory.mktemp("ep_path") / "tiny"
    rt, steps = EX.run_chain("tiny", out, "timed")
    return rt, {st.op: st for st in steps}


def _npy(path):
    a = np.load(path)
    return a.view(BF16) if a.dtype.kind == "V" else a


def _inp(steps, op, name):
    return _npy(steps[op].input_dir / f"{name}.npy")


def _out(steps, op, name):
    return _npy(steps[op].run_dir / "outputs" / f"{name}.npy")


def _same_bits(a, b):
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def test_every_run_exits_0_with_every_output_exact(chain):
    _, steps = chain
    assert list(steps) == list(EX.OPS)
    for op, st in steps.items():
        assert st.returncode == 0, st.stderr
        # the command printed one "golden <output>: exact" line per output, and its summary
        assert set(st.exact) == set(EX.OUTPUTS[op])
        assert all(st.exact.values())
        assert all(g["exact"] and g["bit_mismatches"] == 0 for g in st.summary["golden"].values())
        assert st.summary["hazards"] == []
        assert st.ok("timed")
        assert json.loads(st.case_file.read_text())["op"] == op


def test_routing_is_the_bundled_case_and_rank_0_window(chain):
    rt, steps = chain
    case = permute_cases.get_case("permute_ep_path_tiny")
    assert (case.experts, case.ep, case.rank, case.top_k) == (256, 8, 0, 8)
    ids = _inp(steps, EX.PERMUTE, "indices")
    assert _same_bits(ids, permute_cases.make_inputs(case)["indices"])
    # rank 0 of EP 8 holds experts [0, 32): the first (ids < 32).sum() permuted rows
    assert (rt.start, rt.end) == (0, int((ids < 32).sum()))
    for op in EX.OPS:
        assert json.loads(steps[op].case_file.read_text())["attrs"]["range"] == [0, rt.end]


def test_sorted_indices_of_the_forward_permute_feed_every_later_kernel(chain):
    rt, steps = chain
    si = _out(steps, EX.PERMUTE, "sorted_indices")
    # independently: the inverse of the stable argsort of the flattened expert ids
    order = np.argsort(_inp(steps, EX.PERMUTE, "indices").reshape(-1), kind="stable")
    assert np.array_equal(np.argsort(order), si)
    for op in (EX.UNPERMUTE, EX.UNPERMUTE_GRAD, EX.PERMUTE_GRAD):
        assert _same_bits(_inp(steps, op, "sorted_indices"), si)


def test_token_hand_overs(chain):
    rt, steps = chain
    n, k, rows = rt.n, rt.k, rt.end - rt.start
    pt = _out(steps, EX.PERMUTE, "permute_tokens")
    assert pt.shape == (rows, rt.h)
    # identity experts: the unpermute reads the permute's rows as they are
    assert _same_bits(_inp(steps, EX.UNPERMUTE, "permuted_tokens"), pt)
    # the unpermute backward takes them embedded as rows [0, rows) of an (N*K, H) tensor
    full = _inp(steps, EX.UNPERMUTE_GRAD, "permuted_tokens")
    assert full.shape == (n * k, rt.h)
    assert _same_bits(full[:rows], pt)
    assert not full[rows:].astype(np.float32).any()
    # dY has the unpermute output's shape and dtype
    y = _out(steps, EX.UNPERMUTE, "unpermuted_tokens")
    dy = _inp(steps, EX.UNPERMUTE_GRAD, "unpermuted_tokens_grad")
    assert (dy.shape, dy.dtype) == (y.shape, y.dtype)
    # the permute backward takes the window rows of the unpermute backward's permuted grad
    ptg = _out(steps, EX.UNPERMUTE_GRAD, "permuted_tokens_grad")
    assert ptg.shape == (n * k, rt.h)
    assert _same_bits(_inp(steps, EX.PERMUTE_GRAD, "permuted_tokens_output_grad"), ptg[:rows])


def test_probs_hand_overs(chain):
    rt, steps = chain
    si = _out(steps, EX.PERMUTE, "sorted_indices").astype(np.int64)
    win = (si >= rt.start) & (si < rt.end)
    # the slot weights gathered from permute_probs are the router probs on this rank's slots
    slot = _inp(steps, EX.UNPERMUTE, "probs").reshape(-1)
    router = _inp(steps, EX.PERMUTE, "probs").reshape(-1)
    assert _same_bits(slot[win], router[win])
    assert not slot[~win].astype(np.float32).any()
    assert _same_bits(_inp(steps, EX.UNPERMUTE_GRAD, "probs"), _inp(steps, EX.UNPERMUTE, "probs"))
    # the probs grad scattered to permuted rows comes back to the slots unchanged
    pg_unp = _out(steps, EX.UNPERMUTE_GRAD, "probs_grad").reshape(-1)
    ppg = _inp(steps, EX.PERMUTE_GRAD, "permuted_probs_output_grad")
    assert _same_bits(ppg[si[win] - rt.start], pg_unp[win])
    pg = _out(steps, EX.PERMUTE_GRAD, "probs_grad").reshape(-1)
    assert _same_bits(pg[win], pg_unp[win])
    assert not pg[~win].astype(np.float32).any()


def test_the_path_computes_the_layer_and_its_gradient(chain):
    """With identity experts the layer is y[i] = x[i] * sum of this rank's p[i, k]; its
    gradients are dx[i] = dY[i] * that sum and dp[i, k] = <dY[i], x[i]> on this rank's slots."""
    rt, steps = chain
    x = _inp(steps, EX.PERMUTE, "tokens").astype(np.float64)
    p = _inp(steps, EX.PERMUTE, "probs").astype(np.float64)
    si = _out(steps, EX.PERMUTE, "sorted_indices").astype(np.int64).reshape(rt.n, rt.k)
    win = (si >= rt.start) & (si < rt.end)
    assert win.any() and not win.all()
    psum = (p * win).sum(axis=1, keepdims=True)
    y = _out(steps, EX.UNPERMUTE, "unpermuted_tokens").astype(np.float64)
    assert np.abs(y - x * psum).max() <= 2.0**-7 * np.abs(x * psum).max()
    dy = _inp(steps, EX.UNPERMUTE_GRAD, "unpermuted_tokens_grad").astype(np.float64)
    dx = _out(steps, EX.PERMUTE_GRAD, "token_grad").astype(np.float64)
    assert np.abs(dx - dy * psum).max() <= 2.0**-7 * np.abs(dy * psum).max()
    dp = _out(steps, EX.PERMUTE_GRAD, "probs_grad").astype(np.float64)
    ref = np.where(win, (dy * x).sum(axis=1, keepdims=True), 0.0)
    assert np.abs(dp - ref).max() <= 2.0**-7 * np.abs(ref).max()


def test_table_has_the_four_kernels(chain):
    _, steps = chain
    text = EX.table(list(steps.values()), "timed")
    head = text.splitlines()[0]
    assert all(EX.TITLES[op] in head for op in EX.OPS)
    row = {line.split("|")[0].strip(): [c.strip() for c in line.split("|")[1:]]
           for line in text.splitlines() if "|" in line}
    assert row["exact (timed)"] == ["yes"] * 4
    assert row["makespan cycles"] == [f"{st.summary['makespan_cycles']:,}"
                                      for st in steps.values()]


def test_a_golden_that_differs_fails_the_step():
    st = EX.Step(EX.UNPERMUTE, REPO, {}, {}, returncode=0)
    st.exact = EX._golden_lines("golden unpermuted_tokens: 3 of 2048 elements differ, ...\n")
    assert st.exact == {"unpermuted_tokens": False}
    assert not st.ok("timed")
    st.exact = {}  # timed mode: an output without its golden line is a failure too
    st.outputs = {"unpermuted_tokens": np.zeros(1)}
    assert not st.ok("timed")


@pytest.mark.parametrize("name", ["permute_ep_path_tiny", "permute_grad_ep_path_tiny"])
def test_bundled_tiny_cases_are_exact(name, tmp_path, cli):
    r = cli("run", "--case", name, "--no-plot", "--trace", "none", "--out", tmp_path / "o",
            cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    lines = [x for x in r.stdout.splitlines() if x.startswith("golden ")]
    assert len(lines) in (2, 3)
    assert all(": exact (" in x for x in lines)

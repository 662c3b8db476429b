"""The upstream host tilings of the four bundled ops, compiled unmodified against the CANN host
shim (``aicore_sim.cfront.host``), answer every upstream tiling unit-test case as the Python
ports do: status, key, block dim, workspace and every tiling-data field.

The cases are the ports' own transcriptions of upstream's ``tests/ut/op_host`` (their
contexts and platforms, in each op's ``op_models/<op>/tests/test_tiling.py``); the C++ is the
checkout's ``moe/<op>/op_host/*_tiling.cpp`` at the commit ``AICORE_SIM_OPS_TRANSFORMER`` names
(5778144).
Three grad-op cases differ by design: the grad op's port follows a later tiling ("V3", its
module docstring), and 5778144's own unit test expects what its C++ gives - pinned below with
the values of that unit test. Skipped without a checkout.
"""

from __future__ import annotations

import importlib
import os
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from aicore_sim.ascendc.host import TilingContext
from aicore_sim.ascendc.platform_ascendc import PlatformAscendC
from aicore_sim.sim.platform import load_platform

_ROOT = os.environ.get("AICORE_SIM_OPS_TRANSFORMER")

pytestmark = pytest.mark.skipif(
    not _ROOT or not (Path(_ROOT) / "moe").is_dir(),
    reason="AICORE_SIM_OPS_TRANSFORMER does not name an ops-transformer checkout (the upstream "
           "host tilings these tests compile)")

UT_MODULES = {op: f"op_models.{op}.tests.test_tiling"
              for op in ("moe_token_unpermute_with_ep_grad", "moe_token_unpermute_with_ep",
                         "moe_token_permute_with_ep", "moe_token_permute_with_ep_grad")}

# 5778144's own UT expectations where the grad op's V3 port differs (test_moe_token_unpermute_
# with_ep_grad_tiling.cpp at 5778144): range {-1, -1} is wrapped to start = end = 30 - 1 = 29
# (numOutTokens = end, as start != 0), and the intra-core split's failure is not checked there
# (GRAPH_SUCCESS with the split fields left 0).
AT_5778144 = {
    "prob_not_none_bf16_001": ("success", 1, {"numOutTokens": 29, "start": 29, "end": 29}),
    "rowidmap_unknown_dtype": ("success", 0, {"hiddenSizeAlign": 0, "indicesReserveNum": 0}),
    "prob_not_none_small_ub_failed": ("success", 1, {"hiddenSizeAlign": 0,
                                                     "inputReserveNum": 0}),
}


@cache
def _host(op: str):
    from aicore_sim.cfront.host import HostSource

    return HostSource.of(Path(_ROOT) / "moe" / op)  # type: ignore[arg-type]


def _ut_cases() -> list[tuple[str, str, TilingContext, PlatformAscendC, bool]]:
    out = []
    for op, modname in UT_MODULES.items():
        mod = importlib.import_module(modname)
        for lst in ("UT_SUCCESS", "UT_FAILED"):
            for case in getattr(mod, lst):
                ctx = next(x for x in case if isinstance(x, TilingContext))
                plat = next((x for x in case if isinstance(x, PlatformAscendC)), None)
                if plat is None:  # the UT platform; the grad op's rows carry its ub_size
                    p = load_platform("ut-fake-910b")
                    ub = case[2] if op == "moe_token_unpermute_with_ep_grad" else None
                    plat = PlatformAscendC(p if ub is None else p.with_overrides(ub_size=ub))
                out.append((op, case[0], ctx, plat, lst == "UT_SUCCESS"))
    return out


UT_CASES = _ut_cases()


@pytest.mark.parametrize(("op", "name", "ctx", "plat", "ok"), UT_CASES,
                         ids=[f"{c[0]}-{c[1]}" for c in UT_CASES])
def test_upstream_host_tiling_equals_port(cxx_cache, op: str, name: str, ctx: TilingContext,
                                          plat: PlatformAscendC, ok: bool) -> None:
    port = importlib.import_module(f"op_models.{op}.tiling").tiling_func(ctx, plat).answer()
    cxx = _host(op).tiling(ctx, plat.platform, plat.cores).answer()
    if op == "moe_token_unpermute_with_ep_grad" and name in AT_5778144:
        status, key, fields = AT_5778144[name]
        assert (cxx["status"], cxx["tiling_key"], cxx["block_dim"]) == (status, key, 64)
        assert {k: cxx["tiling_data"][k] for k in fields} == fields
        return
    if ok:
        assert cxx == port
    else:  # the op's own error line, not the port's words: the status is what must agree
        assert (cxx["status"], cxx["tiling_data"], port["status"]) == ("failed", None, "failed")
        assert cxx["error"]


@pytest.mark.parametrize("op", list(UT_MODULES))
def test_shim_lays_out_tiling_data_as_the_kernel_reads_it(cxx_cache, op: str) -> None:
    """The host shim's SaveToBuffer layout (offset and size of every field, read from the
    compiled library) is the layout ``tiling_header`` gives the kernel's struct."""
    host = _host(op)
    op_type = "".join(w.capitalize() for w in op.split("_"))
    layout = host.header.struct_for(op_type)
    rows = host.built.fields(op_type)
    assert rows[0] == ("size", "", 0, layout.size, 0)

    def flat(lay, base=0, prefix=""):
        for f in lay.fields:
            if f.struct:
                yield from flat(f.struct, base + f.offset, f"{prefix}{f.name}.")
            else:
                yield (f"{prefix}{f.name}", base + f.offset, f.size // f.count, f.count)

    assert [(n, off, size, count) for n, _, off, size, count in rows[1:]] == list(flat(layout))


WHAT_IFS = [{"ub_size": 131072}, {"aiv_core_num": 7}, {"ub_size": 65536, "aiv_core_num": 20}]


@pytest.mark.parametrize("override", WHAT_IFS, ids=lambda o: "-".join(map(str, o.values())))
@pytest.mark.parametrize("op", list(UT_MODULES))
def test_platform_what_if_changes_cxx_as_port(cxx_cache, op: str, override: dict) -> None:
    """A smaller UB or core count on ascend910b1 changes the C++ tiling's answer exactly as the
    port's, for each op's bundled cases."""
    from aicore_sim.ascendc.host import using_host_source
    from aicore_sim.ops import registry

    model = registry.get_op(op)
    plat = load_platform("ascend910b1").with_overrides(**override)
    base = load_platform("ascend910b1")
    changed = 0
    for case in list(model.cases().values())[:6]:
        specs, attrs = model.case_specs(case)
        port = model.tiling(specs, attrs, plat)
        with using_host_source(_host(op)):
            cxx, cxx_base = model.tiling(specs, attrs, plat), model.tiling(specs, attrs, base)
        if op != "moe_token_unpermute_with_ep_grad" or (attrs.get("range") or [0])[0] >= 0:
            assert cxx == port, case  # the grad op's default range is V3's "no range" only
        changed += cxx != cxx_base
    assert changed > 0  # the what-if reaches the C++ tiling


# the bundled cases run from the op's source folder alone (host tiling C++ + kernel C++): the
# grad op's cases with an explicit range (its default range differs at 5778144, see above)
OP_SRC_CASES = [("moe_token_unpermute_with_ep", "tiny_bf16_probs_bf16"),
                ("moe_token_unpermute_with_ep", "tiny_fp16_noprobs"),
                ("moe_token_permute_with_ep", "permute_tiny_bf16_probs"),
                ("moe_token_permute_with_ep", "permute_ep_path_tiny"),
                ("moe_token_permute_with_ep_grad", "permute_grad_tiny_bf16_probs"),
                ("moe_token_permute_with_ep_grad", "permute_grad_ep_path_tiny"),
                ("moe_token_unpermute_with_ep_grad", "range_start"),
                ("moe_token_unpermute_with_ep_grad", "range_end_noprobs")]


@pytest.mark.parametrize(("op", "case"), OP_SRC_CASES, ids=[c for _, c in OP_SRC_CASES])
def test_op_src_run_equals_port(cxx_cache, op: str, case: str) -> None:
    """Tiling and kernel from the op's sources: the tiling, the instruction streams, the
    makespan and every output byte equal the port's."""
    from aicore_sim.ascendc.host import using_host_source
    from aicore_sim.cfront import KernelSource
    from aicore_sim.ops import registry
    from aicore_sim.sim.program import stream_difference

    model = registry.get_op(op)
    c = model.cases()[case]
    inputs, (_, attrs) = model.case_inputs(c), model.case_specs(c)
    plat = load_platform("ascend910b1")
    pc = model.prepare(inputs, attrs, plat)
    with using_host_source(_host(op)):
        pc_cxx = model.prepare(inputs, attrs, plat)
    assert (pc_cxx.tiling.as_dict(), pc_cxx.tiling_key, pc_cxx.block_dim, pc_cxx.workspace_size) \
        == (pc.tiling.as_dict(), pc.tiling_key, pc.block_dim, pc.workspace_size)
    port = model.execute(pc)
    cxx = model.execute(pc_cxx, kernel_source=KernelSource.of(_host(op).kernel_dir))
    assert stream_difference(port.program.streams, cxx.program.streams) is None
    assert cxx.trace.makespan == port.trace.makespan
    for name, want in port.outputs.items():
        got = cxx.outputs[name]
        assert (got is None) == (want is None) and (want is None or np.array_equal(
            got.view(np.uint8), want.view(np.uint8))), name


def test_op_src_failing_tiling_is_the_ops_own_line(tmp_path, capsys, cxx_cache) -> None:
    """A tiling the C++ refuses (topK 0 in the forward op) exits 2 with the op's OP_LOGE line;
    nothing is written."""
    import json

    from aicore_sim.cli import main

    op = "moe_token_unpermute_with_ep"
    case = tmp_path / "bad.json"
    case.write_text(json.dumps({
        "op": op, "name": "bad", "platform": "ascend910b1",
        "inputs": {"permuted_tokens": {"shape": [8, 16], "dtype": "bfloat16"},
                   "sorted_indices": {"shape": [8], "dtype": "int32"}},
        "attrs": {"num_topk": 0, "range": [0, 8]}}))
    code = main(["tiling", str(case), "--op-src", str(Path(_ROOT) / "moe" / op)])
    out, err = capsys.readouterr()
    assert code == 2
    assert "MoeTokenUnpermuteWithEp: input num TopK" in err  # the op's own OP_LOGE text
    assert "host tiling of moe_token_unpermute_with_ep/op_host" in err
    code = main(["run", str(case), "--op-src", str(Path(_ROOT) / "moe" / op), "--out",
                 str(tmp_path / "r")])
    out, err = capsys.readouterr()
    assert code == 2 and not (tmp_path / "r").exists()
    assert err.count("\n") == 1 and "MoeTokenUnpermuteWithEp" in err


def test_verify_matrix_from_the_op_source(tmp_path, capsys, cxx_cache) -> None:
    """``verify --matrix OP --op-src DIR``: the permute's whole matrix (24 cases) tiled by its
    C++ host and run by its C++ kernel, every output bit-exact against the golden."""
    from aicore_sim.cli import main

    op = "moe_token_permute_with_ep"
    rc = main(["verify", "--matrix", op, "--op-src", str(Path(_ROOT) / "moe" / op),
               "--report", str(tmp_path / "v"), "--no-progress", "--workers", "1"])
    out = capsys.readouterr().out
    assert rc == 0, out[-2000:]
    assert "24 / 24 cases passed, 0 of 60 outputs failed, 0 not run" in out


def test_sweep_axis_op_source_gives_the_ports_cycles(tmp_path, cxx_cache) -> None:
    """``op_source = ["port", DIR]``: each point tiled by the op's own C++ (and run by its
    kernel) has the port's tiling and makespan, a tiling knob overridden alike."""
    import json

    from aicore_sim.cli import main

    op_dir = Path(_ROOT) / "moe" / "moe_token_unpermute_with_ep_grad"  # type: ignore[arg-type]
    spec = tmp_path / "s.toml"
    spec.write_text('[sweep]\nmode = "timing-only"\n[axes]\ncase = ["range_start"]\n'
                    f'op_source = ["port", "{op_dir}"]\n[tiling]\ninputReserveNum = [1, "auto"]\n')
    assert main(["sweep", str(spec), "--out", str(tmp_path / "s"), "--workers", "1",
                 "--no-progress"]) == 0
    rows = [json.loads(x) for x in (tmp_path / "s" / "results.jsonl").read_text().splitlines()]
    by = {(r["axes"]["op_source"] != "port", json.dumps(r["overrides"])): r for r in rows}
    assert len(by) == 4 and all(r["status"] == "ok" for r in rows)
    for knob in ('{"inputReserveNum": 1}', "{}"):
        port, cxx = by[(False, knob)], by[(True, knob)]
        assert (cxx["tiling"], cxx["makespan_cycles"]) == (port["tiling"], port["makespan_cycles"])


def test_search_from_the_op_source(tmp_path, cxx_cache) -> None:
    """``search CASE --op-src DIR``: every point tiled by the op's own C++; the same points and
    makespans as the port's search."""
    import json

    from aicore_sim.cli import main

    op_dir = Path(_ROOT) / "moe" / "moe_token_unpermute_with_ep_grad"  # type: ignore[arg-type]
    runs = {}
    for label, extra in (("port", []), ("cxx", ["--op-src", str(op_dir)])):
        assert main(["search", "range_start", "--budget", "6", "--out", str(tmp_path / label),
                     "--workers", "1", "--no-progress", *extra]) == 0
        rows = [json.loads(x) for x in
                (tmp_path / label / "results.jsonl").read_text().splitlines()]
        runs[label] = sorted((json.dumps(r["overrides"]), r["makespan_cycles"]) for r in rows)
        assert all(r["axes"].get("op_source", "port") == ("port" if label == "port" else
                                                           str(op_dir)) for r in rows)
    assert runs["cxx"] == runs["port"] and len(runs["port"]) == 6

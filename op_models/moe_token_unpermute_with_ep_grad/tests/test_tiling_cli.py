"""``aicore-sim tiling`` reproduces every case of upstream's tiling unit test (V3 target).

The contexts, platforms and expected fields are those of ``test_tiling.py`` beside this file
(transcribed from upstream ``moe/moe_token_unpermute_with_ep_grad/tests/ut/op_host/``); here each
becomes a case file with positional attributes, run through the command line with upstream's fake
platform (``ut-fake-910b``, with the UT's ``ub_size`` when it changes it). Odd platforms are
tiled as upstream does - ``prob_none_tiny_ub`` with ub_size 256 (GetCoreMemSize 0) gives key 0
and upstream's wrapped fields - while ``run`` refuses to simulate such a platform and says why.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aicore_sim.cli import main
from op_models.moe_token_unpermute_with_ep_grad.tests.test_tiling import (
    UT_FAILED,
    UT_SUCCESS,
    fields_of,
)
from op_models.moe_token_unpermute_with_ep_grad.tiling import TilingContext

INPUT_NAMES = ("unpermuted_tokens_grad", "sorted_indices", "permuted_tokens", "probs")


def case_doc(name: str, ctx: TilingContext) -> dict:
    inputs = {}
    for n, d in zip(INPUT_NAMES, ctx.inputs):
        inputs[n] = None if d is None else {"shape": list(d.shape), "dtype": d.dtype}
    attrs = [ctx.attrs[i] for i in sorted(ctx.attrs)]
    return {"op": "moe_token_unpermute_with_ep_grad", "name": name, "inputs": inputs,
            "attrs": attrs, "platform": "ut-fake-910b"}


def tiling_cli(tmp_path: Path, name: str, ctx: TilingContext, ub_size: int | None,
               capsys: pytest.CaptureFixture[str]) -> tuple[int, dict]:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(case_doc(name, ctx)))
    argv = ["tiling", str(path), "--json"]
    if ub_size is not None:
        argv += ["--platform", json.dumps({"preset": "ut-fake-910b", "ub_size": ub_size})]
    code = main(argv)
    out, err = capsys.readouterr()
    row = json.loads(out)
    if row["status"] == "success":
        assert err == ""
    else:  # the report on stdout, and the contract's one line on stderr naming the case
        assert err == f"aicore-sim: error: {name}: {' '.join(row['error'].split())}\n"
    return code, row


@pytest.mark.parametrize(("name", "ctx", "ub_size", "key", "expected"), UT_SUCCESS,
                         ids=[c[0] for c in UT_SUCCESS])
def test_cli_tiling_upstream_ut_success(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                        name: str, ctx: TilingContext, ub_size: int | None,
                                        key: int, expected: str) -> None:
    code, row = tiling_cli(tmp_path, name, ctx, ub_size, capsys)
    assert (code, row["status"], row["tiling_key"]) == (0, "success", key)
    assert list(row["tiling_data"].values()) == fields_of(expected)
    assert (row["block_dim"], row["workspace"]) == (64, [16777216])  # 64 AIV of the UT platform


@pytest.mark.parametrize(("name", "ctx", "ub_size", "rule"), UT_FAILED,
                         ids=[c[0] for c in UT_FAILED])
def test_cli_tiling_upstream_ut_failed(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                       name: str, ctx: TilingContext, ub_size: int | None,
                                       rule: str) -> None:
    if any(d is not None and isinstance(d.dtype, int) for d in ctx.inputs):
        # upstream's raw enum value 100 has no name a case file could give: the case file is
        # refused (exit 2, the field named), as the tiling fails it (dtype_length)
        path = tmp_path / f"{name}.json"
        doc = case_doc(name, ctx)
        path.write_text(json.dumps(doc))
        assert main(["tiling", str(path), "--json"]) == 2
        row = json.loads(capsys.readouterr().out)
        assert row["status"] == "invalid" and "dtype" in row["error"]
        return
    code, row = tiling_cli(tmp_path, name, ctx, ub_size, capsys)
    assert (code, row["status"], row["tiling_data"]) == (2, "failed", None)
    assert f"rule {rule}" in row["error"] or rule in row["error"]


def test_cli_tiling_case_count() -> None:
    # 15 successes + 4 failures (+ upstream's tiling_parse case, tested in test_tiling.py)
    assert (len(UT_SUCCESS), len(UT_FAILED)) == (15, 4)


def test_cli_tiling_takes_bundled_case_names(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tiling", "tiny", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)
    # tiny on ascend910b1: N 10, K 3, H 64 -> T 30 rows, 48 AIV: 10 former cores with 1 token
    assert (row["case"], row["tiling_key"], row["block_dim"]) == ("tiny", 1, 48)
    assert list(row["tiling_data"].values())[:4] == [10, 3, 64, 30]
    assert main(["tiling", "no_such_case"]) == 2
    assert "not a file and not a bundled case name" in capsys.readouterr().out


def test_run_refuses_the_tiny_ub_platform_with_its_reason(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    code = main(["run", "--case", "tiny", "--platform",
                 '{"preset": "ut-fake-910b", "ub_size": 256}', "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2
    assert "ub_size 256 leaves no usable UB (GetCoreMemSize(UB) = 0)" in err
    assert not out.exists() and list(tmp_path.iterdir()) == []

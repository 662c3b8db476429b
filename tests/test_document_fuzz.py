"""The input contract, fuzzed in-process, on the input documents: case files made malformed on
purpose (a key given twice, an unknown key, nesting deeper than the readers allow, a field of the
wrong JSON type), given to ``run``, ``tiling`` and ``verify``; each must be refused before any
work - exit 2, one ``aicore-sim: error:`` line, no traceback, nothing written. The options'
half is ``test_option_fuzz.py``; this file runs ``DOCUMENT_EXAMPLES`` generated cases (about
4 s of one CPU), ``-m slow`` ``SLOW_EXAMPLES`` (reports/fuzz_contract.md).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import run_cli

DOCUMENT_EXAMPLES = 1000  # the default suite's share; -m slow runs SLOW_EXAMPLES
SLOW_EXAMPLES = 50_000


# --- documents --------------------------------------------------------------------------------

_CASE = json.loads((Path(__file__).resolve().parents[1] / "examples" / "cases" /
                    "tiny.json").read_text())


def _with_duplicate(doc: dict, key: str) -> str:
    """JSON text of ``doc`` with ``key`` written twice (the second time with another value)."""
    text = json.dumps(doc)
    return text[:-1] + f', {json.dumps(key)}: {json.dumps(doc.get(key, 1))}' + "}"


_JSON_VALUES = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=6),
                            lambda kids: st.lists(kids, max_size=3), max_leaves=5)


@st.composite
def _bad_case_text(draw) -> str:
    kind = draw(st.sampled_from(["duplicate", "unknown", "deep", "wrong_type"]))
    doc = dict(_CASE)
    if kind == "duplicate":
        return _with_duplicate(doc, draw(st.sampled_from(sorted(doc))))
    if kind == "unknown":
        key = draw(st.text(min_size=1, max_size=8).filter(lambda k: k not in doc))
        doc[key] = draw(_JSON_VALUES)
        return json.dumps(doc)
    if kind == "deep":
        depth = draw(st.integers(70, 3000))
        return '{"op": ' + "[" * depth + "]" * depth + "}"
    field = draw(st.sampled_from(["inputs", "attrs", "data"]))
    doc[field] = draw(st.one_of(st.integers(), st.text(max_size=5), st.lists(st.integers(),
                                                                             max_size=2)))
    return json.dumps(doc)


@settings(max_examples=DOCUMENT_EXAMPLES, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(text=_bad_case_text(), command=st.sampled_from(["run", "tiling", "verify"]))
def test_malformed_case_files_are_refused_before_any_work(text, command):
    with tempfile.TemporaryDirectory(prefix="doc") as tmp:  # one per example, removed
        work = Path(tmp)
        (work / "case.json").write_text(text, encoding="utf-8")
        before = sorted(p.name for p in work.iterdir())
        r = run_cli(command, "case.json", cwd=work)
        lines = r.stderr.splitlines()
        assert r.returncode == 2, (text[:200], r.stderr, r.stdout[:300])
        assert len(lines) == 1 and lines[0].startswith("aicore-sim: error:"), r.stderr
        assert "Traceback" not in r.stderr and "internal error" not in r.stderr
        assert sorted(p.name for p in work.iterdir()) == before


@pytest.mark.slow
@settings(max_examples=SLOW_EXAMPLES, deadline=None, derandomize=False, database=None,
          suppress_health_check=list(HealthCheck))
@given(text=_bad_case_text(), command=st.sampled_from(["run", "tiling", "verify"]))
def test_malformed_case_files_long_run(text, command):
    test_malformed_case_files_are_refused_before_any_work.hypothesis.inner_test(
        text, command)



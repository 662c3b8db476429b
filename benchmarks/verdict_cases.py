"""What bounds P1, Qwen3-MoE on a 910B3 and a streaming Add: the verdict as a user sees it.

Runs ``aicore-sim run ... --slack`` on each (timing-only for the two real-model shapes, timed
for the Add so its golden is checked) and ``aicore-sim diff`` of each run with itself, and
writes ``reports/verdict_cases.md``: the summary's verdict and HBM lines, the slack table and
the diff's verdict line - which must name the same class - with each command's wall time.

    python benchmarks/verdict_cases.py
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CASES = [
    ("P1 (DeepSeek-V3 unpermute grad, ascend910b1)",
     ["--case", "p1_deepseek_v3", "--mode", "timing-only"]),
    ("Qwen3-MoE (ascend910b3)",
     ["--case", "qwen3_moe", "--platform", "ascend910b3", "--mode", "timing-only"]),
    ("streaming Add, double-buffered C++ kernel (ascend910b1, 8 cores)",
     [str(ROOT / "examples/cpp/add_double_buffer/add_double_buffer.json")]),
]


def sim(*args: str) -> tuple[str, float]:
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "aicore_sim", *args], capture_output=True,
                       text=True)
    if p.returncode != 0:
        raise SystemExit(f"aicore-sim {' '.join(args)}: exit {p.returncode}: {p.stderr}")
    return p.stdout, time.perf_counter() - t


def main() -> None:
    out = ["# What bounds it: one verdict in the summary, --slack and diff", "",
           "Made by `python benchmarks/verdict_cases.py` (each run: `aicore-sim run ... "
           "--slack --no-plot --trace none`; then `aicore-sim diff RUN RUN`).", ""]
    with tempfile.TemporaryDirectory() as tmp:
        for k, (title, args) in enumerate(CASES):
            folder = Path(tmp) / str(k)
            text, wall = sim("run", *args, "--out", str(folder), "--slack", "--no-plot",
                             "--trace", "none")
            diff, _ = sim("diff", str(folder), str(folder))
            lines = text.splitlines()
            keep = [ln for ln in lines if ln.startswith(("bound by", "HBM-bound", "  (HBM"))]
            start = next(i for i, ln in enumerate(lines) if ln.startswith("what-if slack"))
            end = next(i for i, ln in enumerate(lines) if ln.startswith("  lever:"))
            shown = " ".join(a.replace(f"{ROOT}/", "") for a in args)  # paths as in the repo
            out += [f"## {title}", "", f"`aicore-sim run {shown} --slack` "
                    f"({wall:.1f} s wall)", "", "```", *keep, "", *lines[start:end + 1], "```",
                    "", "`aicore-sim diff` of the run with itself:", "", "```",
                    *[ln for ln in diff.splitlines() if ln.startswith("bound by")], "```", ""]
            print(f"{title}: {wall:.1f} s", file=sys.stderr)
    (ROOT / "reports" / "verdict_cases.md").write_text("\n".join(out))


if __name__ == "__main__":
    main()

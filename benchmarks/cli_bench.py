"""Shared parts of the command-line benchmarks: inputs on disk, one timed ``aicore-sim run``
as a subprocess with its peak memory, and the numpy golden of the same job.

A figure here is what a user gets: the ``aicore-sim`` command started from a shell (Python
start-up, imports, reading ``--inputs``, writing the run folder), never an internal API.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from aicore_sim.ops.casefile import case_document
from op_models.moe_token_unpermute_with_ep_grad import cases
from op_models.moe_token_unpermute_with_ep_grad.golden import golden, normalise_range
from op_models.moe_token_unpermute_with_ep_grad.model import MODEL
from op_models.moe_token_unpermute_with_ep_grad.tiling_space import TILING_SPACE

PLATFORM = "ascend910b1"
COMMAND = [sys.executable, "-m", "aicore_sim"]  # the installed command's own entry point


@dataclass
class Job:
    """One case on disk: its case file and its input folder."""

    case: cases.Case
    folder: Path
    case_file: Path = field(init=False)
    inputs: Path = field(init=False)

    def __post_init__(self) -> None:
        self.case_file = self.folder / f"{self.case.name}.json"
        self.inputs = self.folder / "inputs"

    def write(self) -> None:
        self.inputs.mkdir(parents=True, exist_ok=True)
        # the backward op's case, also when renamed (cut to other token counts)
        self.case_file.write_text(json.dumps(case_document(self.case, PLATFORM, MODEL)))
        for name, arr in cases.make_inputs(self.case, None).items():
            if arr is not None:
                np.save(self.inputs / f"{name}.npy", arr)

    def input_bytes(self) -> int:
        return sum(f.stat().st_size for f in self.inputs.glob("*.npy"))


def _in_fresh_process(fn, *args):
    """``fn(*args)`` in a new interpreter (spawn): this driver never holds a job's arrays, so
    the commands it starts (fork + exec) do not inherit its size in their peak RSS."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(fn, args)


def _write(case: cases.Case, folder: Path) -> None:
    Job(case, folder).write()


def make_job(case: cases.Case, root: Path) -> Job:
    job = Job(case, root / case.name)
    _in_fresh_process(_write, case, job.folder)
    return job


def run_cli(job: Job, mode: str, plot: bool, extra: list[str] | None = None) -> dict[str, Any]:
    """``aicore-sim run`` on ``job`` as a subprocess: wall seconds, peak RSS (wait4: the
    largest of the command and the record workers it forked), and its summary.json."""
    out = Path(tempfile.mkdtemp(prefix="bench-run-", dir=job.folder))
    shutil.rmtree(out)
    cmd = [*COMMAND, "run", str(job.case_file), "--inputs", str(job.inputs), "--mode", mode,
           "--out", str(out), *(extra or [])]
    if not plot:
        cmd.append("--no-plot")
    os.sync()  # the previous run's files go to disk now, not as writeback during this one
    with tempfile.TemporaryFile() as so, tempfile.TemporaryFile() as se:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=so, stderr=se)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        so.seek(0)
        se.seek(0)
        stdout, stderr = so.read().decode(), se.read().decode()
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}: {stderr}")
    summary = json.loads((out / "summary.json").read_text())
    files = {p.name: p.stat().st_size for p in out.rglob("*") if p.is_file()}
    shutil.rmtree(out)
    return {"wall": wall, "peak_mib": usage.ru_maxrss / 1024, "summary": summary,
            "files": files, "stdout": stdout}


def golden_job(job: Job) -> float:
    """Seconds of the numpy golden of the same job: read the inputs, compute both outputs
    (fp32 arithmetic, vectorised), write them (timed inside a fresh process)."""
    return _in_fresh_process(_golden_seconds, job.case, job.folder)


def _golden_seconds(case: cases.Case, folder: Path) -> float:
    job = Job(case, folder)
    t0 = time.perf_counter()
    ins = {n: np.load(job.inputs / f"{n}.npy") for n in
           ("unpermuted_tokens_grad", "sorted_indices", "permuted_tokens", "probs")
           if (job.inputs / f"{n}.npy").exists()}
    grad = ins["unpermuted_tokens_grad"].view(cases.np_dtype(case.dtype))
    perm = ins["permuted_tokens"].view(cases.np_dtype(case.dtype))
    probs = ins.get("probs")
    if probs is not None:
        probs = probs.view(cases.np_dtype(case.probs_dtype))
    start, end, num_out = normalise_range(case.range, case.flat_size)
    chunk = TILING_SPACE.plan(case, _platform(), "upstream", {}).tiling.hiddenSizeAlign
    pg, prg = golden(grad, ins["sorted_indices"], perm, probs, start=start, end=end,
                     num_out_tokens=num_out, hidden_chunk=chunk)
    with tempfile.TemporaryDirectory(dir=job.folder) as d:
        np.save(Path(d) / "permuted_tokens_grad.npy", pg)
        if prg is not None:
            np.save(Path(d) / "probs_grad.npy", prg)
    return time.perf_counter() - t0


def _platform():
    from aicore_sim.sim.platform import load_platform

    return load_platform(PLATFORM)


def machine_line() -> str:
    return (f"Measured {time.strftime('%Y-%m-%d')} on {os.cpu_count()} CPUs, Python "
            f"{sys.version.split()[0]}, numpy {np.__version__}.")

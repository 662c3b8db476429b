"""A DeepSeek-V3 MoE layer's whole EP token path, four kernels on one routing, through the command.

One routing (seeded: tokens, expert ids = top-K of 256 experts, router probs, EP 8 with this
process playing rank 0, which holds experts [0, 32), i.e. the permuted rows [start, end)) is
built with the permute's bundled-case generator, then the four kernels run in data-flow order,
each as ``aicore-sim run CASE.json --inputs DIR --out DIR`` in a subprocess:

1. ``moe_token_permute_with_ep`` (forward permute): tokens -> this rank's permuted rows;
2. the experts: the identity on the permuted rows (no kernel: expert output = expert input);
3. ``moe_token_unpermute_with_ep`` (forward unpermute): expert outputs -> the N token rows,
   each the probs-weighted sum of its slots that this rank holds;
4. ``moe_token_unpermute_with_ep_grad`` (its backward), with a seeded random gradient of the
   layer output: -> gradients of the expert outputs and of the probs;
5. ``moe_token_permute_with_ep_grad`` (the permute's backward): -> gradients of the tokens and
   of the router probs.

Every kernel after the first reads its inputs from the previous runs' ``outputs/*.npy``
(embedded or sliced where the operators' shapes require; each hand-over is explained where it is
made). Each run must exit 0 and say ``exact`` for every golden (timed mode); the script exits 1
otherwise. At the end a table shows the four kernels side by side from their ``summary.json``.

    python examples/ep_token_path.py                       # tiny: 32 tokens, H 64 (seconds)
    python examples/ep_token_path.py --size deepseek       # 4096 tokens, top-8, H 7168, EP 8
    python examples/ep_token_path.py --mode timing-only --out my_run/

In ``timing-only`` mode a run that computes no numbers writes no ``outputs/``: the next kernel's
inputs are then made by that operator's golden (``op_models/<op>/golden.py``) from the same
inputs, and the table says ``n/a`` for that run's exactness.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from aicore_sim import dtypes
from op_models.moe_token_permute_with_ep import cases as permute_cases

PLATFORM = "ascend910b1"
# --size -> the permute's bundled case whose routing the whole path shares (same generator,
# seed and shape as the permute_grad case of the same size: EP 8, rank 0, 256 experts, top-8)
SIZES = {"tiny": "permute_ep_path_tiny", "deepseek": "permute_deepseek_v3_layer"}
GRAD_SEED = 1  # seed of the layer-output gradient dY

PERMUTE = "moe_token_permute_with_ep"
UNPERMUTE = "moe_token_unpermute_with_ep"
UNPERMUTE_GRAD = "moe_token_unpermute_with_ep_grad"
PERMUTE_GRAD = "moe_token_permute_with_ep_grad"
OPS = (PERMUTE, UNPERMUTE, UNPERMUTE_GRAD, PERMUTE_GRAD)
TITLES = {PERMUTE: "permute fwd", UNPERMUTE: "unpermute fwd", UNPERMUTE_GRAD: "unpermute bwd",
          PERMUTE_GRAD: "permute bwd"}
OUTPUTS = {PERMUTE: ("permute_tokens", "sorted_indices", "permute_probs"),
           UNPERMUTE: ("unpermuted_tokens",),
           UNPERMUTE_GRAD: ("permuted_tokens_grad", "probs_grad"),
           PERMUTE_GRAD: ("token_grad", "probs_grad")}
PIPES = ("SCALAR", "MTE2", "VECTOR", "MTE3")


def command() -> list[str]:
    """The installed ``aicore-sim`` beside this interpreter (a venv's), else on PATH, else the
    package's entry point under this interpreter."""
    here = Path(sys.executable).with_name("aicore-sim")
    if here.exists():
        return [str(here)]
    found = shutil.which("aicore-sim")
    return [found] if found else [sys.executable, "-m", "aicore_sim"]


@dataclass
class Routing:
    """The one routing of the path and the sizes that follow from it."""

    size: str
    case: str
    tokens: np.ndarray  # (N, H) bf16
    indices: np.ndarray  # (N, K) int32 expert ids
    probs: np.ndarray  # (N, K) bf16 router weights (top-K of a softmax, renormalised)
    start: int
    end: int

    @property
    def n(self) -> int:
        return int(self.indices.shape[0])

    @property
    def k(self) -> int:
        return int(self.indices.shape[1])

    @property
    def h(self) -> int:
        return int(self.tokens.shape[1])


def build_routing(size: str) -> Routing:
    """Tokens, expert ids, router probs and rank 0's window from the permute's bundled case."""
    case = permute_cases.get_case(SIZES[size])
    inp = permute_cases.make_inputs(case)
    start, end = inp["range"]
    return Routing(size, case.name, inp["tokens"], inp["indices"], inp["probs"], int(start),
                   int(end))


@dataclass
class Step:
    """One kernel run: its case file, input folder, run folder and what the run said."""

    op: str
    folder: Path
    inputs: dict[str, np.ndarray | None]
    attrs: dict[str, Any]
    returncode: int = -1
    wall: float = 0.0
    stdout: str = ""
    stderr: str = ""
    summary: dict[str, Any] = field(default_factory=dict)
    exact: dict[str, bool] = field(default_factory=dict)  # output -> golden exact (as printed)
    outputs: dict[str, np.ndarray] = field(default_factory=dict)  # what the next step reads
    from_golden: tuple[str, ...] = ()  # outputs made by the golden (timing-only, none written)

    @property
    def case_file(self) -> Path:
        return self.folder / "case.json"

    @property
    def input_dir(self) -> Path:
        return self.folder / "inputs"

    @property
    def run_dir(self) -> Path:
        return self.folder / "run"

    def ok(self, mode: str) -> bool:
        """Exit 0 and every golden printed exact; in timed mode every output has one."""
        want = [o for o in OUTPUTS[self.op] if o in self.outputs or o in self.exact]
        if self.returncode != 0 or not all(self.exact.values()):
            return False
        return mode != "timed" or all(self.exact.get(o) for o in want)


def _write_case(step: Step, name: str, mode: str) -> None:
    """The case file (shapes and dtypes of the inputs actually handed over) and the inputs."""
    step.input_dir.mkdir(parents=True)
    ins = {}
    for key, arr in step.inputs.items():
        if arr is None:
            ins[key] = None
            continue
        ins[key] = {"shape": list(arr.shape), "dtype": dtypes.dtype_name(arr.dtype)}
        np.save(step.input_dir / f"{key}.npy", arr)
    doc = {"op": step.op, "name": name, "inputs": ins, "attrs": step.attrs,
           "platform": PLATFORM, "mode": mode}
    step.case_file.write_text(json.dumps(doc, indent=2) + "\n")


def _golden_lines(stdout: str) -> dict[str, bool]:
    """``golden <output>: exact (...)`` lines of the run's stdout -> {output: exact}."""
    out = {}
    for line in stdout.splitlines():
        if line.startswith("golden ") and ":" in line:
            name, verdict = line[len("golden "):].split(":", 1)
            out[name.strip()] = verdict.strip().startswith("exact")
    return out


def run_step(step: Step, name: str, mode: str, extra: list[str]) -> Step:
    """Write the case, run the command on it, read back its summary and outputs."""
    _write_case(step, name, mode)
    cmd = [*command(), "run", str(step.case_file), "--inputs", str(step.input_dir),
           "--out", str(step.run_dir), "--mode", mode, *extra]
    print(f"$ aicore-sim run {step.case_file} --inputs {step.input_dir} --out {step.run_dir} "
          f"--mode {mode} {' '.join(extra)}".rstrip(), flush=True)
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    step.wall = time.perf_counter() - t0
    step.returncode, step.stdout, step.stderr = r.returncode, r.stdout, r.stderr
    for line in r.stdout.splitlines():
        if line.startswith(("makespan", "bound by", "hazards", "golden ")):
            print(f"    {line[:150]}")
    if r.returncode != 0:
        print(f"    exit {r.returncode}: {r.stderr.strip()}", flush=True)
        return step
    step.summary = json.loads((step.run_dir / "summary.json").read_text())
    step.exact = _golden_lines(r.stdout)
    return step


def read_outputs(step: Step) -> None:
    """The run's ``outputs/*.npy`` (read exactly as the operator's output specs say); outputs
    the run did not write (timing-only) come from the operator's golden on the same inputs."""
    from aicore_sim import get_op, load_platform

    model = get_op(step.op)
    pc = model.prepare(step.inputs, step.attrs, load_platform(PLATFORM))
    missing = []
    for name in OUTPUTS[step.op]:
        spec = pc.out_shapes.get(name)
        if spec is None:
            continue
        path = step.run_dir / "outputs" / f"{name}.npy"
        if path.exists():
            step.outputs[name] = np.array(dtypes.read_npy(path, tuple(spec[0]), np.dtype(spec[1])))
        else:
            missing.append(name)
    if missing:
        gold = model.golden(step.inputs, step.attrs, pc)
        for name in missing:
            step.outputs[name] = np.asarray(gold[name])
        step.from_golden = tuple(missing)


def window_slots(sorted_indices: np.ndarray, start: int, end: int) -> np.ndarray:
    """Flat slots ``q = i*K + k`` whose permuted row ``sorted_indices[q]`` this rank holds."""
    s = sorted_indices.astype(np.int64)
    return np.flatnonzero((s >= start) & (s < end))


def run_chain(size: str, out: Path, mode: str = "timed", extra: list[str] | None = None
              ) -> tuple[Routing, list[Step]]:
    """The four kernels on one routing, each fed by the previous runs' outputs."""
    extra = ["--no-plot"] if extra is None else extra
    rt = build_routing(size)
    n, k, h, s, e = rt.n, rt.k, rt.h, rt.start, rt.end
    print(f"routing ({rt.case}): N {n} tokens x top-{k} of 256 experts, H {h}, EP 8 rank 0 "
          f"keeps permuted rows [{s}, {e}) of {n * k}", flush=True)
    out.mkdir(parents=True, exist_ok=True)
    steps: list[Step] = []

    def go(i: int, op: str, inputs: dict, attrs: dict) -> Step:
        step = run_step(Step(op, out / f"{i}_{op}", inputs, attrs), f"ep_path_{size}_{i}", mode,
                        extra)
        if step.returncode == 0:
            read_outputs(step)
        steps.append(step)
        return step

    # 1. forward permute: the routing's tokens, expert ids and (bf16, the tokens' dtype as the
    #    IR requires) router probs; range = rank 0's window, so only its rows are gathered.
    p = go(1, PERMUTE, {"tokens": rt.tokens, "indices": rt.indices, "probs": rt.probs},
           {"range": [s, e], "num_out_tokens": 0, "padded_mode": False})
    if p.returncode != 0:
        return rt, steps
    permute_tokens = p.outputs["permute_tokens"]  # (e - s, H): rank 0's permuted rows
    sorted_indices = p.outputs["sorted_indices"]  # (N*K,): the permuted row of every slot
    permute_probs = p.outputs["permute_probs"]  # (e - s,): the router prob of every row

    # 2. the experts: identity on the permuted rows, so the expert outputs are permute_tokens.
    expert_out = permute_tokens

    # 3. forward unpermute. permuted_tokens = the expert outputs, (e - s, H): the operator reads
    #    row r - start for a slot whose row r is in [s, e) (its documented shape); sorted_indices
    #    = the permute's output as is; probs (N, K): the weight of every slot, gathered back from
    #    the permute's permute_probs through sorted_indices (slot q -> row sorted_indices[q]),
    #    so the weights this rank applies are the ones its permute produced. Slots outside the
    #    window get 0: the operator never reads them (and the gradient gives them 0 back).
    slots = window_slots(sorted_indices, s, e)
    slot_probs = np.zeros(n * k, permute_probs.dtype)
    slot_probs[slots] = permute_probs[sorted_indices[slots].astype(np.int64) - s]
    slot_probs = slot_probs.reshape(n, k)
    u = go(2, UNPERMUTE, {"permuted_tokens": expert_out, "sorted_indices": sorted_indices,
                          "probs": slot_probs},
           {"num_topk": k, "range": [s, e], "padded_mode": False, "restore_shape": None})
    if u.returncode != 0:
        return rt, steps

    # 4. backward of the unpermute. unpermuted_tokens_grad = dY, a seeded random gradient of
    #    the layer output (the unpermute's output shape and dtype, (N, H) bf16). The operator
    #    takes the forward's permuted_tokens as (N*K, H) (its tiling requires dim 0 = N*K) and
    #    reads row r - start for a slot in the window: the expert outputs are embedded as rows
    #    [0, e - s) of zeros. sorted_indices and probs are the forward unpermute's inputs.
    rng = np.random.default_rng(GRAD_SEED)
    dy = (rng.random((n, h), dtype=np.float32) * np.float32(2) - np.float32(1)).astype(
        u.outputs["unpermuted_tokens"].dtype)
    permuted_full = np.zeros((n * k, h), expert_out.dtype)
    permuted_full[: e - s] = expert_out
    ug = go(3, UNPERMUTE_GRAD, {"unpermuted_tokens_grad": dy, "sorted_indices": sorted_indices,
                                "permuted_tokens": permuted_full, "probs": slot_probs},
            {"padded_mode": False, "restore_shape": None, "range": [s, e], "topk_num": k})
    del permuted_full
    if ug.returncode != 0:
        return rt, steps

    # 5. backward of the permute. permuted_tokens_output_grad = the gradient of permute_tokens:
    #    through the identity experts it is the unpermute backward's permuted_tokens_grad, whose
    #    (N*K, H) holds this rank's rows in [0, e - s) (the rest is never written): sliced to
    #    (e - s, H). permuted_probs_output_grad = the gradient of permute_probs: the unpermute
    #    backward's probs_grad (N, K) is the gradient of the slot probs of step 3, which were
    #    gathered from permute_probs, so it scatters back to row sorted_indices[q] - start
    #    (e - s,). sorted_indices and range: the permute's.
    ptg = ug.outputs["permuted_tokens_grad"][: e - s]
    probs_grad = ug.outputs["probs_grad"].reshape(-1)
    ppg = np.zeros(e - s, probs_grad.dtype)
    ppg[sorted_indices[slots].astype(np.int64) - s] = probs_grad[slots]
    go(4, PERMUTE_GRAD, {"permuted_tokens_output_grad": np.ascontiguousarray(ptg),
                         "sorted_indices": sorted_indices, "permuted_probs_output_grad": ppg},
       {"num_topk": k, "range": [s, e], "padded_mode": False})
    return rt, steps


# ---------------------------------------------------------------------------------------------
# The side-by-side table
# ---------------------------------------------------------------------------------------------


def _mib(b: float) -> str:
    return f"{b / 2**20:.2f} MiB" if b >= 2**20 else f"{b / 2**10:.1f} KiB"


def table(steps: list[Step], mode: str) -> str:
    """The four kernels side by side: one column each, one row per figure."""
    def col(st: Step) -> list[str]:
        sm = st.summary
        if not sm:
            return [TITLES[st.op], st.op.replace("moe_token_", ""), f"exit {st.returncode}"]
        util = sm.get("utilisation", {})
        bound = sm.get("bound_by") or {}
        shapes = ", ".join(f"{v.shape[0]}x{v.shape[1]}" if v.ndim == 2 else f"{v.shape[0]}"
                           for v in st.inputs.values() if v is not None and v.ndim)
        exact = ("n/a (" + ", ".join(st.from_golden) + " by golden)" if st.from_golden
                 and not st.exact else
                 ("yes" if st.exact and all(st.exact.values()) else "NO"))
        return [TITLES[st.op], st.op.replace("moe_token_", ""), shapes,
                f"{sm.get('block_dim', 0)}",
                f"{sm.get('makespan_cycles', 0):,}", f"{sm.get('makespan_us', 0):.1f}",
                f"{sm.get('task_us', 0):.1f}", f"{bound.get('pipe', '-')} "
                f"(core {bound.get('core', '-')})",
                *[f"{100 * util.get(p, 0):.0f} %" for p in PIPES],
                _mib(sm.get("bytes_gm_to_ub", 0)), _mib(sm.get("bytes_ub_to_gm", 0)),
                f"{sm.get('instructions', 0):,}",
                "none" if not sm.get("hazards") else f"{len(sm['hazards'])}",
                f"{st.wall:.2f}", exact]

    labels = ["kernel", "operator", "input shapes", "cores", "makespan cycles", "makespan us",
              "task us", "bound by", *[f"{p} util" for p in PIPES], "GM->UB", "UB->GM",
              "instructions", "hazards", "wall s (command)", f"exact ({mode})"]
    cols = [(c + [""] * len(labels))[:len(labels)] for c in map(col, steps)]
    w0 = max(len(x) for x in labels)
    ws = [max(len(x) for x in c) for c in cols]
    lines = []
    for i, lab in enumerate(labels):
        cells = [c[i].rjust(w) if i > 1 else c[i].ljust(w) for c, w in zip(cols, ws)]
        lines.append(f"{lab:<{w0}} | " + " | ".join(cells))
        if i == 0:
            lines.append("-" * w0 + "-+-" + "-+-".join("-" * w for w in ws))
    done = [st for st in steps if st.summary]
    if done:
        lines.append("")
        lines.append(f"path total: {sum(st.summary.get('task_us', 0) for st in done):.1f} us "
                     f"simulated (task durations), {sum(st.wall for st in steps):.1f} s of "
                     f"wall time for {len(steps)} commands")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", choices=sorted(SIZES), default="tiny",
                    help="tiny (32 tokens, H 64) or deepseek (4096 tokens, H 7168)")
    ap.add_argument("--out", type=Path, default=None,
                    help="folder of the four runs (default traces/<time>-ep_token_path_<size>)")
    ap.add_argument("--mode", choices=("timed", "timing-only"), default="timed")
    ap.add_argument("--plot", action="store_true", help="also write each run's timeline.png")
    args = ap.parse_args(argv)
    out = args.out or Path("traces") / f"{time.strftime('%Y%m%d-%H%M%S')}-ep_token_path_{args.size}"
    if out.exists() and any(out.iterdir()):
        print(f"ep_token_path: error: --out {out}: exists and is not empty", file=sys.stderr)
        return 2
    _, steps = run_chain(args.size, out, args.mode, [] if args.plot else ["--no-plot"])
    print()
    print(table(steps, args.mode))
    bad = [st for st in steps if not st.ok(args.mode)]
    if len(steps) < len(OPS) or bad:
        for st in bad:
            print(f"FAILED: {st.op}: exit {st.returncode}, goldens {st.exact}", file=sys.stderr)
        return 1
    exact = "every output exact against its golden" if args.mode == "timed" else \
        "every golden that ran exact"
    print(f"\nall four kernels ran; {exact}; runs in {out}/")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

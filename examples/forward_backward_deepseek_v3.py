"""Forward then backward of one DeepSeek-V3-shaped MoE layer on the same routing.

One EP rank (rank 0 of 8: 32 of the 256 routed experts) of a DeepSeek-V3 layer (hidden 7168,
top-8, bf16 tokens, fp32 router weights): the forward ``MoeTokenUnpermuteWithEp`` combines this
rank's expert outputs into the N token rows; the backward ``MoeTokenUnpermuteWithEpGrad``
takes the gradient of those rows back to the permuted rows and the router weights, with the
same ``sorted_indices``, ``probs`` and EP window. Both run on the simulator; their summaries are
printed side by side and both outputs are checked against their goldens.

    python examples/forward_backward_deepseek_v3.py              # 4096 tokens (a minute or two)
    python examples/forward_backward_deepseek_v3.py --tokens 256 --platform ascend910_9391
"""

from __future__ import annotations

import argparse
import itertools
import textwrap

import numpy as np

from aicore_sim.views.summary import format_summary, summarize
from op_models.moe_token_unpermute_with_ep import cases as fwd_cases
from op_models.moe_token_unpermute_with_ep import moe_token_unpermute_with_ep
from op_models.moe_token_unpermute_with_ep.golden import golden as fwd_golden
from op_models.moe_token_unpermute_with_ep_grad import moe_token_unpermute_with_ep_grad
from op_models.moe_token_unpermute_with_ep_grad.golden import golden as bwd_golden
from op_models.moe_token_unpermute_with_ep_grad.golden import normalise_range

WIDTH = 62


def side_by_side(left: str, right: str, titles: tuple[str, str]) -> str:
    def wrap(text: str) -> list[str]:
        return [w for line in text.splitlines()
                for w in (textwrap.wrap(line, WIDTH, subsequent_indent="  ") or [""])]

    a, b = wrap(left), wrap(right)
    rows = [f"{titles[0]:<{WIDTH}} | {titles[1]}", f"{'-' * WIDTH}-+-{'-' * WIDTH}"]
    rows += [f"{x:<{WIDTH}} | {y}" for x, y in itertools.zip_longest(a, b, fillvalue="")]
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, default=4096, help="tokens of the micro-batch")
    ap.add_argument("--platform", default="ascend910b1", help="platform preset")
    ap.add_argument("--jobs", type=int, default=1, help="processes of the record pass")
    args = ap.parse_args(argv)

    case = fwd_cases.get_case("deepseek_v3_layer").with_(tokens_num=args.tokens)
    inp = fwd_cases.make_inputs(case)
    n, k, h = case.tokens_num, case.top_k, case.hidden
    start, end = inp["range"]
    idx, probs = inp["sorted_indices"], inp["probs"]
    print(f"DeepSeek-V3 layer, EP rank 0 of 8: N {n} tokens x top-{k}, H {h}; this rank holds "
          f"permuted rows [{start}, {end}) of {n * k}")

    # forward: combine this rank's expert outputs into token rows
    ys, fwd = moe_token_unpermute_with_ep(inp["permuted_tokens"], idx, probs, num_topk=k,
                                          range=[start, end], platform=args.platform,
                                          jobs=args.jobs)
    y = ys["unpermuted_tokens"]
    fwd_ref = fwd_golden(inp["permuted_tokens"], idx, probs, k, start, end)

    # backward on the same routing: dY -> d(permuted rows), d(probs). The backward takes the
    # permuted rows as a (N*K, H) tensor whose first end - start rows are this rank's.
    rng = np.random.default_rng(1)
    dy = (rng.random((n, h), dtype=np.float32) * 2 - 1).astype(y.dtype)
    permuted_full = np.zeros((n * k, h), y.dtype)
    permuted_full[: end - start] = inp["permuted_tokens"]
    outs, bwd = moe_token_unpermute_with_ep_grad(dy, idx, permuted_full, probs,
                                                 range=[start, end], topk_num=k,
                                                 platform=args.platform, jobs=args.jobs)
    s, e, num_out = normalise_range([start, end], n * k)
    chunk = next((a.nbytes // 4 for a in bwd.program.allocations[0]
                  if a.name == "tmpBufferPermutedTokensCast"), 1 << 30)
    bwd_ref = dict(zip(("permuted_tokens_grad", "probs_grad"),
                       bwd_golden(dy, idx, permuted_full, probs, start=s, end=e,
                                  num_out_tokens=num_out, hidden_chunk=chunk)))

    left = format_summary(summarize(fwd, {"unpermuted_tokens": fwd_ref}))
    right = format_summary(summarize(bwd, bwd_ref))
    print(side_by_side(left, right, ("forward MoeTokenUnpermuteWithEp",
                                     "backward MoeTokenUnpermuteWithEpGrad")))
    same = np.array_equal(y.view(np.uint16), fwd_ref.view(np.uint16)) and all(
        np.array_equal(outs[k].view(np.uint8), bwd_ref[k].view(np.uint8)) for k in bwd_ref)
    print(f"\nforward {fwd.us:.1f} us + backward {bwd.us:.1f} us = {fwd.us + bwd.us:.1f} us "
          f"simulated; outputs {'equal' if same else 'DIFFER from'} the goldens bit for bit")
    return 0 if same and not fwd.hazards and not bwd.hazards else 1


if __name__ == "__main__":
    raise SystemExit(main())

"""Named shape/dtype cases for ``MoeTokenUnpermuteWithEpGrad`` and their input tensors.

Place in the flow: the *case* at the head of the pipeline. Tests, benchmarks and sweeps pick a
:class:`Case` by name from :data:`CASES` (or build their own) and call :func:`make_inputs` for
reproducible tensors. :func:`upstream_st_inputs` rebuilds inputs the way upstream's system tests
construct them (pure row scatter, no probs).

Value conventions: float tensors are drawn in fp32 with ``np.random.default_rng(seed)`` and cast
to the case dtype, so every value is exactly representable in that dtype; grads and permuted
tokens lie in [-2, 2), probs in [0.01, 0.99] (strictly inside (0, 1) after narrowing).
``sorted_indices`` is int32 and by default a random permutation of ``[0, N*K)`` - a real
unpermute mapping.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from aicore_sim import dtypes
from op_models.moe_token_unpermute_with_ep_grad.golden import normalise_range

__all__ = [
    "Case",
    "CASES",
    "DTYPES",
    "INDEX_MODES",
    "VALUE_MODES",
    "get_case",
    "make_inputs",
    "np_dtype",
    "upstream_st_expected",
    "upstream_st_inputs",
]

DTYPES: dict[str, np.dtype] = dtypes.table("bfloat16", "float16", "float32")

# How ``sorted_indices`` is built:
#   permutation     random permutation of [0, T)
#   identity        0, 1, ..., T-1
#   outside_window  a permutation, then a fraction of positions replaced by values outside the
#                   normalised window [start, end) (negative values and values >= end, some >= T)
#   duplicates      a permutation, then a fraction of positions copies the value of another
#                   position (some rows hit twice, others not at all)
INDEX_MODES = ("permutation", "identity", "outside_window", "duplicates")
# How float values are drawn: "random" (see module docstring) or "ones" (every value 1).
VALUE_MODES = ("random", "ones")

_ROWS_PER_DRAW = 1 << 22  # elements drawn per rng call for big tensors (bounded fp32 scratch)


def np_dtype(name: str) -> np.dtype:
    """numpy dtype for a case dtype name (``bfloat16``, ``float16``, ``float32``)."""
    try:
        return DTYPES[name]
    except KeyError:
        raise KeyError(f"unknown dtype {name!r}; valid: {sorted(DTYPES)}") from None


@dataclass(frozen=True)
class Case:
    """One operator call: shapes, dtypes, range attribute and how inputs are drawn.

    ``probs_dtype`` ``None`` means the call has no probs (tiling key 0, path A). ``range`` is
    the raw ``range`` attribute (``None`` = absent, i.e. ``[0, T)``), normalised per spec §3.8
    by :meth:`window`.
    """

    name: str
    tokens_num: int
    top_k: int
    hidden: int
    dtype: str
    probs_dtype: str | None
    range: tuple[int, int] | None
    description: str = ""
    seed: int = 0
    indices: str = "permutation"
    values: str = "random"
    inject_fraction: float = 0.25

    def __post_init__(self) -> None:
        np_dtype(self.dtype)
        if self.probs_dtype is not None:
            np_dtype(self.probs_dtype)
        if self.indices not in INDEX_MODES:
            raise ValueError(f"indices must be one of {INDEX_MODES}, got {self.indices!r}")
        if self.values not in VALUE_MODES:
            raise ValueError(f"values must be one of {VALUE_MODES}, got {self.values!r}")
        if min(self.tokens_num, self.top_k, self.hidden) < 1:
            raise ValueError("tokens_num, top_k and hidden must be >= 1")

    @property
    def flat_size(self) -> int:
        """``T = tokens_num * top_k``: length of ``sorted_indices`` and rows of permuted tensors."""
        return self.tokens_num * self.top_k

    @property
    def has_probs(self) -> bool:
        return self.probs_dtype is not None

    def window(self) -> tuple[int, int, int]:
        """Normalised ``(start, end, num_out_tokens)`` of this case's range."""
        return normalise_range(self.range, self.flat_size)

    def with_(self, **changes: object) -> Case:
        """A copy with some fields replaced (e.g. another seed or dtype)."""
        return dataclasses.replace(self, **changes)


def _uniform(
    rng: np.random.Generator, shape: tuple[int, int], lo: float, hi: float, dtype: np.dtype
) -> np.ndarray:
    """fp32 uniform draws in [lo, hi) cast to ``dtype``, row blocks to bound the fp32 scratch."""
    out = np.empty(shape, dtype=dtype)
    rows, cols = shape
    step = max(1, _ROWS_PER_DRAW // max(cols, 1))
    scale = np.float32(hi - lo)
    for r0 in range(0, rows, step):
        r1 = min(rows, r0 + step)
        block = rng.random((r1 - r0, cols), dtype=np.float32) * scale + np.float32(lo)
        out[r0:r1] = block.astype(dtype)
    return out


def _sorted_indices(case: Case, rng: np.random.Generator, mode: str, fraction: float) -> np.ndarray:
    T = case.flat_size
    if mode == "identity":
        return np.arange(T, dtype=np.int32)
    s = rng.permutation(T).astype(np.int64)
    count = int(round(fraction * T))
    if mode == "outside_window" and count:
        start, end, _ = case.window()
        pos = rng.choice(T, size=count, replace=False)
        below = rng.integers(-T, 0, size=count)  # negative: fails start <= v
        above = rng.integers(end, end + T + 1, size=count)  # >= end (often >= T)
        take_below = rng.random(count) < 0.5
        if start > 0:  # values in [0, start) are outside the window as well
            low_in = rng.integers(0, start, size=count)
            below = np.where(rng.random(count) < 0.5, below, low_in)
        s[pos] = np.where(take_below, below, above)
    elif mode == "duplicates" and count:
        pos = rng.choice(T, size=count, replace=False)
        src = rng.integers(0, T, size=count)
        s[pos] = s[src]
    return s.astype(np.int32)


def make_inputs(
    case: Case,
    seed: int | None = None,
    *,
    indices: str | None = None,
    inject_fraction: float | None = None,
) -> dict[str, np.ndarray | None]:
    """Reproducible input tensors for ``case``.

    Keys: ``unpermuted_tokens_grad`` (N, H), ``sorted_indices`` int32 (T,), ``permuted_tokens``
    (T, H) in the case dtype, and ``probs`` (N, K) in the probs dtype or ``None``. ``seed``
    overrides ``case.seed``; ``indices`` / ``inject_fraction`` override the case's index mode
    (see :data:`INDEX_MODES`) and the fraction of positions it alters.
    """
    rng = np.random.default_rng(case.seed if seed is None else seed)
    mode = case.indices if indices is None else indices
    if mode not in INDEX_MODES:
        raise ValueError(f"indices must be one of {INDEX_MODES}, got {mode!r}")
    fraction = case.inject_fraction if inject_fraction is None else inject_fraction
    N, K, H, T = case.tokens_num, case.top_k, case.hidden, case.flat_size
    tok = np_dtype(case.dtype)
    s = _sorted_indices(case, rng, mode, fraction)
    if case.values == "ones":
        grad = np.ones((N, H), dtype=tok)
        permuted = np.ones((T, H), dtype=tok)
        probs = None if case.probs_dtype is None else np.ones((N, K), np_dtype(case.probs_dtype))
    else:
        grad = _uniform(rng, (N, H), -2.0, 2.0, tok)
        permuted = _uniform(rng, (T, H), -2.0, 2.0, tok)
        probs = None
        if case.probs_dtype is not None:
            probs = _uniform(rng, (N, K), 0.01, 0.99, np_dtype(case.probs_dtype))
    return {
        "unpermuted_tokens_grad": grad,
        "sorted_indices": s,
        "permuted_tokens": permuted,
        "probs": probs,
    }


# ---------------------------------------------------------------------------------------------
# Upstream system-test construction
# ---------------------------------------------------------------------------------------------


def upstream_st_inputs(
    n: int, hidden: int, seed: int, topk: int = 1
) -> dict[str, np.ndarray | None]:
    """Inputs built the way upstream's system tests build them (prob-None path, bf16).

    An int32 "expert id" per token, shape (n, topk), is drawn uniformly in ``[0, n)``;
    ``origin`` is the stable argsort of the flattened ids and becomes ``sorted_indices``; the
    permuted tokens are rows of an original token matrix gathered at ``argsort(origin) // topk``.
    Grads and tokens are bf16 in [-100, 100). ``probs`` is ``None`` and the call uses
    ``range = (0, n * topk)`` explicitly. Upstream's own records all have ``topk = 1``.
    """
    rng = np.random.default_rng(seed)
    bf16 = DTYPES["bfloat16"]
    T = n * topk
    expert_ids = rng.integers(0, n, size=(n, topk), dtype=np.int32)
    origin = np.argsort(expert_ids.reshape(-1), kind="stable").astype(np.int32)
    tokens = _uniform(rng, (n, hidden), -100.0, 100.0, bf16)
    grad = _uniform(rng, (n, hidden), -100.0, 100.0, bf16)
    permuted = tokens[np.argsort(origin, kind="stable") // topk]
    assert permuted.shape == (T, hidden)
    return {
        "unpermuted_tokens_grad": grad,
        "sorted_indices": origin,
        "permuted_tokens": permuted,
        "probs": None,
    }


def upstream_st_expected(inputs: dict[str, np.ndarray | None]) -> np.ndarray:
    """Upstream's ST expectation for :func:`upstream_st_inputs`: a row scatter.

    fp32 zeros (T, H); row ``origin[i]`` receives grad row ``i // topk`` in fp32; cast to bf16.
    Compared bit-exactly (md5) upstream.
    """
    grad = inputs["unpermuted_tokens_grad"]
    origin = inputs["sorted_indices"]
    assert grad is not None and origin is not None
    T = origin.size
    topk = T // grad.shape[0]
    out = np.zeros((T, grad.shape[1]), dtype=np.float32)
    out[origin.astype(np.int64)] = grad.astype(np.float32)[np.arange(T) // topk]
    return out.astype(DTYPES["bfloat16"])


# ---------------------------------------------------------------------------------------------
# The named cases
# ---------------------------------------------------------------------------------------------


def _case_list() -> list[Case]:
    bf, fp16, fp32 = "bfloat16", "float16", "float32"
    return [
        Case(
            "seed_example",
            1,
            3,
            2,
            fp32,
            fp32,
            None,
            "The aclnn doc example: 1 token, topK 3, hidden 2, every value 1, indices "
            "0,1,2, null range. Expected permuted_tokens_grad all 1, probs_grad all 2.",
            indices="identity",
            values="ones",
        ),
        Case(
            "tiny",
            10,
            3,
            64,
            bf,
            fp32,
            None,
            "Default small case (bf16 tokens, fp32 probs); the upstream tiling-UT shape.",
            seed=1,
        ),
        Case(
            "p1_deepseek_v3",
            4096,
            8,
            7168,
            bf,
            fp32,
            None,
            "DeepSeek-V3 layer: 4096 tokens, topK 8, hidden 7168, bf16 tokens, fp32 probs.",
            seed=2,
        ),
        Case(
            "p2_deepseek_v3_noprobs",
            4096,
            8,
            7168,
            bf,
            None,
            None,
            "As p1 without probs (path A: pure row copy).",
            seed=3,
        ),
        Case(
            "mixtral",
            4096,
            2,
            4096,
            bf,
            bf,
            None,
            "Mixtral-8x7B: 4096 tokens, topK 2, hidden 4096, bf16 tokens and probs.",
            seed=4,
        ),
        Case(
            "qwen3_moe",
            4096,
            8,
            2048,
            bf,
            bf,
            None,
            "Qwen3-MoE: 4096 tokens, topK 8, hidden 2048, bf16 tokens and probs.",
            seed=5,
        ),
        Case(
            "few_tokens",
            5,
            4,
            256,
            bf,
            fp32,
            None,
            "5 tokens: fewer tokens than AIV cores, most cores idle.",
            seed=6,
        ),
        Case(
            "few_tokens_noprobs",
            5,
            4,
            256,
            fp16,
            None,
            None,
            "5 tokens without probs (path A with idle cores).",
            seed=7,
        ),
        Case(
            "hidden_100",
            12,
            2,
            100,
            fp16,
            fp16,
            None,
            "Hidden 100: not a multiple of 16; reduction folds 36 lanes onto 64.",
            seed=8,
        ),
        Case(
            "hidden_40_mask",
            7,
            2,
            40,
            fp32,
            bf,
            None,
            "Hidden 40 < 64: one masked WholeReduceSum (partial 64-lane tree).",
            seed=9,
        ),
        Case(
            "hidden_split_fp32",
            10,
            3,
            8192,
            fp32,
            fp32,
            None,
            "fp32 hidden 8192: on a 48-core / 196352-byte-UB platform path B cannot hold one "
            "row, so the hidden dim is split (hiddenSizeAlign 5376: chunks 5376 + 2816) and "
            "probs_grad accumulates per chunk.",
            seed=10,
        ),
        Case(
            "hidden_16384_bf16",
            4,
            2,
            16384,
            bf,
            fp32,
            None,
            "bf16 hidden 16384: split on real UB (chunks 7936, 7936, 512); unsplit (halving "
            "reduction, L >= 8192) on a "
            "large-UB what-if platform.",
            seed=11,
        ),
        Case(
            "topk_512",
            3,
            512,
            64,
            bf,
            fp32,
            None,
            "Maximum topK 512 with few tokens (one token per outer loop in path B).",
            seed=12,
        ),
        Case(
            "range_start",
            64,
            4,
            128,
            bf,
            fp32,
            (0, 64),
            "EP window at the start: rows [0, 64) of T=256.",
            seed=13,
        ),
        Case(
            "range_end",
            64,
            4,
            128,
            bf,
            bf,
            (192, 256),
            "EP window at the end: rows [192, 256) of T=256 (numOutTokens = 256).",
            seed=14,
        ),
        Case(
            "range_negative",
            64,
            4,
            128,
            fp16,
            fp32,
            (-100, -1),
            "Negative range (-100, -1) normalises to [156, 255) of T=256, numOutTokens 255.",
            seed=15,
        ),
        Case(
            "range_end_noprobs",
            64,
            4,
            128,
            bf,
            None,
            (192, 256),
            "EP window at the end without probs (path A).",
            seed=16,
        ),
        Case(
            "indices_outside_window",
            32,
            4,
            96,
            bf,
            fp32,
            (32, 96),
            "Window [32, 96) of T=128 and 25% of indices replaced by values outside it "
            "(negative, below start, >= end, >= T): their probs_grad is 0, rows untouched.",
            seed=17,
            indices="outside_window",
        ),
        Case(
            "indices_duplicates",
            16,
            4,
            64,
            bf,
            fp32,
            None,
            "25% of positions duplicate another position's index: write races upstream; "
            "golden rule 'last q in flat order wins'.",
            seed=18,
            indices="duplicates",
        ),
    ]


CASES: dict[str, Case] = {c.name: c for c in _case_list()}


def get_case(name: str) -> Case:
    """The named case; an unknown name raises ``KeyError`` listing the valid names."""
    try:
        return CASES[name]
    except KeyError:
        raise KeyError(f"unknown case {name!r}; valid names: {', '.join(CASES)}") from None

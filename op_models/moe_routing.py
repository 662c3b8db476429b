"""The MoE routing the EP-path operators' bundled cases draw their inputs from.

A token picks ``top_k`` distinct experts of ``experts`` (uniformly: the first K of a random
order), the router gives it ``top_k`` logits, and an expert-parallel rank ``rank`` of ``ep``
holds experts ``[rank * E / ep, (rank + 1) * E / ep)``: the rows of the expert-sorted slots
that fall there are the rank's window ``[start, end)``. Every case of the permute / unpermute
pair and their gradients draws these numbers in this order from its seed, so cases of the same
shape and seed share one routing and can be chained (``examples/ep_token_path.py``).
"""

from __future__ import annotations

import numpy as np


def draw(tokens: int, top_k: int, experts: int, rng: np.random.Generator
         ) -> tuple[np.ndarray, np.ndarray]:
    """(expert ids ``[N, K]`` int64, router logits ``[N, K]`` fp32), drawn from ``rng`` in
    blocks of tokens (about 4 Mi random numbers at a time, whatever the layer size)."""
    ids = np.empty((tokens, top_k), dtype=np.int64)
    step = max(1, (1 << 22) // experts)
    for t0 in range(0, tokens, step):
        t1 = min(tokens, t0 + step)
        ids[t0:t1] = np.argsort(rng.random((t1 - t0, experts), dtype=np.float32),
                                axis=1)[:, :top_k]
    logits = rng.standard_normal((tokens, top_k), dtype=np.float32)
    return ids, logits


def ep_window(ids: np.ndarray, experts: int, ep: int, rank: int,
              fixed: tuple[int, int] | None = None) -> tuple[int, int]:
    """``[start, end)``: the rows of the expert-sorted slots rank ``rank`` of ``ep`` holds
    (``fixed`` when a case gives its range itself)."""
    if fixed is not None:
        return int(fixed[0]), int(fixed[1])
    per = experts // ep
    flat = np.sort(ids.reshape(-1))
    return (int(np.searchsorted(flat, rank * per)),
            int(np.searchsorted(flat, (rank + 1) * per)))


def router_weights(logits: np.ndarray) -> np.ndarray:
    """The routing weights of the router logits: their softmax over each token's top-K, fp32."""
    w = np.exp(logits - logits.max(axis=1, keepdims=True))
    return (w / w.sum(axis=1, keepdims=True)).astype(np.float32)


def slots(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(order, sorted_indices)``: the stable argsort of the flattened expert ids (the slots
    grouped by expert, i.e. the permuted rows' slots) and its inverse, int32 (the permuted row
    of each slot: the permute's ``sorted_indices``)."""
    order = np.argsort(ids.reshape(-1), kind="stable")
    inverse = np.empty_like(order)
    inverse[order] = np.arange(order.size)
    return order, inverse.astype(np.int32)


def values(rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """fp32 draws in [-2, 2) of ``rng``, cast to ``dtype`` (exactly representable)."""
    return (rng.random(shape, dtype=np.float32) * np.float32(4) - np.float32(2)).astype(dtype)


__all__ = ["draw", "ep_window", "router_weights", "slots", "values"]

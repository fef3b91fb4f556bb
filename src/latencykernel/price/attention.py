"""Attention work: causal prefill FLOPs, sliding windows, and the prefill-context-parallel
(PCP) zigzag split of vLLM.

A prefill chunk of ``s`` new tokens after a prefix of ``c`` already-computed tokens attends
every prefix token and, causally, the tokens before it in the chunk.
"""

from __future__ import annotations

import math

__all__ = [
    "causal_flops_per_qk_dim",
    "windowed_causal_flops_per_qk_dim",
    "pcp_local_tokens",
    "pcp_causal_flops_per_qk_dim",
    "pcp_rank_chunks",
    "decode_read_tokens",
]


def decode_read_tokens(context_tokens: float, top_k: int, window: int, compress_ratio: int) -> float:
    """Cached tokens one decode reads in one attention layer at a context of ``ctx`` tokens.

    sparse (top_k > 0):  min(ctx, top_k) + (ctx − top_k) / compress_ratio
                         (the selected tokens, plus compressed entries beyond them when
                         the layer keeps a compressed cache, compress_ratio > 0)
    windowed (window > 0): min(ctx, window)
    otherwise:           ctx
    """
    if top_k > 0:
        read = float(min(context_tokens, top_k))
        if compress_ratio > 0 and context_tokens > top_k:
            read += (context_tokens - top_k) / compress_ratio
        return read
    if window > 0:
        return float(min(context_tokens, window))
    return float(context_tokens)


def causal_flops_per_qk_dim(scheduled: int, prefix: int) -> float:
    """Causal attention FLOPs of one prefill chunk, per (query head × head dim).

    flops = 4 · (s · c + s² / 2)

    s · c prefix pairs plus s²/2 in-chunk pairs, 2 FLOPs per multiply-accumulate, 2 matmuls
    (QKᵀ and PV). Multiply by n_q · d_h / tp for a rank's FLOPs.
    """
    return 4.0 * (scheduled * prefix + scheduled * scheduled / 2.0)


def windowed_causal_flops_per_qk_dim(chunks: list[tuple[int, int]], window: int) -> float:
    """Causal FLOPs of prefill chunks under a sliding window of ``window`` tokens.

    For each chunk (s, c): the first ns = clamp(w − c, 0, s) queries still see their whole
    history, the rest see exactly w keys:
    pairs = ns·(c+1) + ns·(ns−1)/2 − ns/2 + (s − ns)·w;   flops = 4 · Σ pairs.
    0 without a window.
    """
    if window <= 0:
        return 0.0
    pairs = 0.0
    for s, c in chunks:
        ns = max(0, min(s, window - c))
        pairs += ns * (c + 1) + ns * (ns - 1) / 2.0 - ns / 2.0 + (s - ns) * window
    return 4.0 * pairs


def _zigzag_bounds(index: int, chunk: int, s: int) -> tuple[int, int]:
    lo = min(index * chunk, s)
    return lo, min(lo + chunk, s)


def pcp_local_tokens(scheduled: int, pcp: int, dcp: int) -> int:
    """Tokens of one prefill the busiest PCP rank runs, or −1 when PCP is off.

    vLLM cuts a prefill of s tokens into 2·pcp chunks of ceil(s / 2·pcp); rank r owns chunks
    r and 2·pcp − 1 − r. With DCP also on, a prefill too short to give every chunk a token
    ((2·pcp − 1)·chunk >= s) is replicated on every rank instead (returns s).
    """
    if pcp <= 1 or scheduled <= 0:
        return -1
    n = 2 * pcp
    c = math.ceil(scheduled / n)
    if dcp > 1 and (n - 1) * c >= scheduled:
        return scheduled
    best = 0
    for rank in range(pcp):
        held = 0
        for idx in (rank, n - 1 - rank):
            lo, hi = _zigzag_bounds(idx, c, scheduled)
            held += max(0, hi - lo)
        best = max(best, held)
    return best


def pcp_causal_flops_per_qk_dim(scheduled: int, prefix: int, pcp: int, dcp: int) -> float:
    """Causal FLOPs (per query head × head dim) of the busiest PCP rank for one prefill.

    Each rank's chunk [lo, hi) of m tokens at global offset prefix + lo attends
    m·(prefix + 1) + (lo + hi − 1)·m/2 − m/2 pairs; flops = 4 · max over ranks.
    0 when PCP is off; the unsplit count when the prefill is replicated.
    """
    if pcp <= 1 or scheduled <= 0:
        return 0.0
    if pcp_local_tokens(scheduled, pcp, dcp) == scheduled:
        return causal_flops_per_qk_dim(scheduled, prefix)
    n = 2 * pcp
    c = math.ceil(scheduled / n)
    best = 0.0
    for rank in range(pcp):
        p = 0.0
        for idx in (rank, n - 1 - rank):
            lo, hi = _zigzag_bounds(idx, c, scheduled)
            m = hi - lo
            if m > 0:
                p += m * (prefix + 1) + (lo + hi - 1) * m / 2.0 - m / 2.0
        best = max(best, p)
    return 4.0 * best


def pcp_rank_chunks(scheduled: int, prefix: int, pcp: int, dcp: int) -> list[list[tuple[int, int]]]:
    """Every PCP rank's (tokens, global prefix) chunks of one prefill, rank by rank.

    Rank r holds zigzag chunks r and 2·pcp − 1 − r at their true offsets; a replicated
    prefill (see ``pcp_local_tokens``) gives every rank the whole (s, prefix). Under a
    sliding window the rank with the most tokens is not always the one with the most work,
    so a windowed layer is priced at the maximum over these lists.
    """
    local = pcp_local_tokens(scheduled, pcp, dcp)
    if local < 0:
        return [[(scheduled, prefix)]]
    if local == scheduled:
        return [[(scheduled, prefix)] for _ in range(pcp)]
    n = 2 * pcp
    c = math.ceil(scheduled / n)
    ranks: list[list[tuple[int, int]]] = []
    for rank in range(pcp):
        chunks = []
        for idx in (rank, n - 1 - rank):
            lo, hi = _zigzag_bounds(idx, c, scheduled)
            if hi > lo:
                chunks.append((hi - lo, prefix + lo))
        ranks.append(chunks)
    return ranks

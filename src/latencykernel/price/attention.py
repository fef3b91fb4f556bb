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
    "layer_kv_bytes_per_token",
    "decode_attention_s",
    "secondary_kv_bytes_per_token",
    "secondary_read_tokens",
    "prefill_attention_s",
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


def layer_kv_bytes_per_token(kv_bytes_per_token: float, kv_layers: int) -> float:
    """KV bytes one token holds in one KV-holding layer on one rank.

    bytes = kv_bytes_per_token / max(kv_layers, 1)

    ``kv_bytes_per_token`` is the whole model's (``price.kv.kv_bytes_per_token``); every
    KV-holding layer stores the same share. A decode that has no measured read rate reads
    tokens × this at HBM bandwidth (no floor).
    """
    return kv_bytes_per_token / max(kv_layers, 1)


def decode_attention_s(read_tokens: float, bytes_per_token: float, floor_s: float, rate_bytes_per_s: float) -> float:
    """Decode attention of one layer: a launch floor plus the KV bytes read at the measured rate.

    t = floor + read_tokens · bytes_per_token / rate

    read_tokens is the cached tokens the busiest rank reads, summed over the decodes
    (``decode_read_tokens`` per request, then the DCP shard); (floor, rate) is the registry's
    decode-attention pair for the layer's attention kind (or the part-wide pair), fitted on
    measured paged-attention decode kernels. The caller prices a layer without a rate as
    plain HBM bytes instead. With read_tokens = 1 and floor = 0 it is the seconds per token
    the fused path folds.
    """
    return floor_s + read_tokens * bytes_per_token / rate_bytes_per_s


def secondary_kv_bytes_per_token(
    layer_kv_bytes: float, kv_heads: int, head_dim: int, primary_kv_heads: int, primary_head_dim: int
) -> float:
    """Bytes per token a secondary attention (an indexer, with its own small cache) reads.

    bytes = layer_kv_bytes · (kv_heads · head_dim) / (primary_kv_heads · primary_head_dim)

    The secondary cache is sized like the primary one, scaled by its width: layer_kv_bytes
    is the primary's per-layer bytes (``layer_kv_bytes_per_token``). The caller skips a
    secondary without a primary width.
    """
    return layer_kv_bytes * (kv_heads * head_dim) / (primary_kv_heads * primary_head_dim)


def secondary_read_tokens(context_tokens: float, decodes: int, window: int, compress_ratio: int) -> float:
    """Cached tokens a secondary attention reads over the decodes of one step.

    t = Σ ctx                      summed decode contexts
    t = min(t, window · decodes)   under a window (window > 0)
    t = t / compress_ratio         over a compressed cache (compress_ratio > 1)

    The bound is on the summed contexts (each decode reads at most its window). Under DCP
    the caller then takes the busiest rank's share (``price.context.dcp_rank_tokens``).
    """
    t = context_tokens
    if window > 0:
        t = min(t, window * decodes)
    if compress_ratio > 1:
        t /= compress_ratio
    return t


def prefill_attention_s(
    flops_per_qk_dim: float, q_heads: int, head_dim: int, tp: int, peak_flops_per_s: float, efficiency: float
) -> float:
    """Prefill attention compute of one prefill in one layer on one rank (without the launch floor).

    t = flops_per_qk_dim · n_q · d_h / tp / (peak · efficiency)
    efficiency = prefill_scale · eff(query tokens of this prefill)     (``price.ramp.efficiency``)

    flops_per_qk_dim comes from ``causal_flops_per_qk_dim`` (or its windowed / PCP forms); a
    step sums this over its prefills. Why each prefill's own query tokens, not the step's
    GEMM M: FlashAttention's forward kernel gives each thread block one tile of one
    sequence's queries for one head (``compute_attn_1rowblock(params, bidb, bidh, m_block)``
    in csrc/flash_attn/src/flash_fwd_kernel.h, blocks indexed by (m_block, batch, head)),
    so how full its tiles are depends on that sequence's query length, never on the other
    requests in the step. The registry's floor and ``attention_prefill_work_scale`` were
    fitted on single-prefill attention sweeps (AISimulate), where the step's tokens are
    the prefill's own: for one prefill alone this is the fitted law unchanged. (Pricing at
    the batch's M let an added request lower the price: issue 10.)
    """
    return flops_per_qk_dim * q_heads * head_dim / tp / (peak_flops_per_s * efficiency)

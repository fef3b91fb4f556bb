"""Context parallelism: which tokens a decode-context-parallel (DCP) rank holds, and the
payloads vLLM's DCP and prefill-context-parallel (PCP) attention exchange.

Payload laws give bytes; which collective carries each one (and over which group) is the
kernel's rule (``kernel/step.py``), priced by ``price.collective.collective_time_s``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from .attention import decode_read_tokens

__all__ = [
    "dcp_rank_tokens",
    "decode_rank_read_tokens",
    "dcp_decode_payload_bytes_per_row",
    "latent_context_gather_bytes",
    "pcp_kv_gather_bytes",
]

ACTIVATION_BYTES = 2  # bf16 activations
LSE_BYTES = 4  # fp32 log-sum-exp


def dcp_rank_tokens(length: int, dcp: int, interleave: int) -> int:
    """Tokens of one sequence the busiest DCP rank holds.

    vLLM deals a sequence out in runs of ``interleave`` tokens, round-robin from rank 0, so
    rank 0 is always the busiest:
    tokens = (L // (I·D))·I + min(L mod (I·D), I)          (= ceil(L / D) when I = 1)
    """
    if length <= 0:
        return 0
    if dcp <= 1:
        return length
    i = max(interleave, 1)
    cycle = i * dcp
    return (length // cycle) * i + min(length % cycle, i)


def decode_rank_read_tokens(
    contexts: Iterable[int], top_k: int, window: int, compress_ratio: int, dcp: int, interleave: int
) -> float:
    """Cached tokens one layer's primary decode attention reads on the busiest rank, summed
    over the step's decodes.

    per request: r = decode_read_tokens(ctx, top_k, window, compress_ratio)   (selection first)
                 r = dcp_rank_tokens(round(r), dcp, interleave)              (then the shard, dcp > 1)
    tokens = Σ r

    Pass dcp = 1 for a layer whose cache DCP does not shard (``resolve.context.dcp_shards_kv``).
    """
    total = 0.0
    for ctx in contexts:
        read = decode_read_tokens(ctx, top_k, window, compress_ratio)
        if dcp > 1:
            read = dcp_rank_tokens(int(read + 0.5), dcp, interleave)
        total += read
    return total


def dcp_decode_payload_bytes_per_row(
    q_heads: int, head_dim: int, kv_lora_rank: int, latent: bool, tp: int, dcp: int, pcp: int
) -> tuple[float, float, float, float, float]:
    """Bytes per query row of the collectives one DCP attention layer runs on a decode step.

    ah (attention heads a rank computes) = n_q / tp · dcp          without PCP
                                         = n_q / tp, or n_q when dcp > pcp   with PCP
    ow (output width) = kv_lora_rank for a latent cache, else d_h
    query_gather   = ah · d_h · 2        (DCP all-gather of the queries; 0 with PCP)
    tp_gather      = n_q · d_h · 2       (TP all-gather of the queries when dcp > pcp > 1, else 0)
    output_all2all = ah · (ow + 2) · 2   (all-to-all combine: bf16 output plus fp32 LSE)
    lse_gather     = dcp · ah · 4        (all-gather combine: fp32 log-sum-exp)
    output_reduce  = ah · ow · 2         (all-gather combine: reduce-scatter, or all-reduce
                                          under PCP, of the partial outputs)

    Returns (query_gather, tp_gather, output_all2all, lse_gather, output_reduce); a step
    uses either the all-to-all or the gather-and-reduce pair (vLLM's dcp combine setting).
    """
    ow = kv_lora_rank if latent and kv_lora_rank > 0 else head_dim
    query = tp_query = 0.0
    if pcp <= 1:
        ah = q_heads / tp * dcp
        query = ah * head_dim * ACTIVATION_BYTES
    else:
        ah = q_heads / tp
        if dcp > pcp:
            ah = q_heads
            tp_query = float(q_heads * head_dim * ACTIVATION_BYTES)
    return (
        query,
        tp_query,
        ah * (ow + 2) * ACTIVATION_BYTES,
        dcp * ah * LSE_BYTES,
        ah * ow * ACTIVATION_BYTES,
    )


def latent_context_gather_bytes(
    prefills: list[tuple[int, int]], width_bytes: float, chunk_tokens: int
) -> list[tuple[int, float]]:
    """Messages of the DCP all-gathers that bring a latent (MLA) cache back for prefills, as
    (how many, bytes each).

    Prefills are taken shortest first (vLLM orders its prefill metadata so); consecutive
    ones with a prefix form a run, a prefill without one ends it. Each run of R prefix
    tokens is gathered in chunks = ceil(R / chunk_tokens) messages of R · width / chunks
    bytes (the MLA context-chunk size). ``prefills`` holds (scheduled, computed) pairs. The
    equal messages of a run are counted, not listed, so a huge prefix costs one entry.
    """
    out: list[tuple[int, float]] = []

    def gather(run: int) -> None:
        if run <= 0:
            return
        chunks = math.ceil(run / chunk_tokens)
        out.append((chunks, run * width_bytes / chunks))

    run = 0
    for _, computed in sorted(prefills, key=lambda p: p[0]):
        if computed <= 0:
            gather(run)
            run = 0
        else:
            run += computed
    gather(run)
    return out


def pcp_kv_gather_bytes(
    prefill_tokens: int, pcp: int, head_dim: int, kv_lora_rank: int, indexer_widths: list[int]
) -> list[float]:
    """Messages of the PCP all-gathers of one layer's new KV for a step's prefills.

    rows = pcp · prefill_tokens (every rank gathers every rank's tokens)
    latent cache split in two (0 < kv_lora_rank < d_h):  rows · r · 2, rows · (d_h − r) · 2
    otherwise:                                           rows · d_h · 2
    plus rows · width · 2 per secondary attention's own cache (width = n_kv · d_h).
    """
    rows = pcp * prefill_tokens
    if 0 < kv_lora_rank < head_dim:
        out = [rows * kv_lora_rank * ACTIVATION_BYTES, rows * (head_dim - kv_lora_rank) * ACTIVATION_BYTES]
    else:
        out = [rows * head_dim * ACTIVATION_BYTES]
    out += [rows * w * ACTIVATION_BYTES for w in indexer_widths]
    return [float(x) for x in out]

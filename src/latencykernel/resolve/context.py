"""Context parallelism: vLLM's decode-context (DCP) and prefill-context (PCP) rules."""

from __future__ import annotations

__all__ = ["dcp_rank_tokens", "dcp_shards_kv"]


def dcp_shards_kv(kind: str) -> bool:
    """DCP shards the KV cache of full and latent attention; vLLM refuses DCP with a
    sliding window, so a window layer keeps its whole cache on every rank."""
    return kind in ("gqa", "mla", "sparse_mla")


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

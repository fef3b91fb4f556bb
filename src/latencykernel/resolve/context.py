"""Context parallelism: vLLM's decode-context (DCP) rules. The arithmetic of which tokens a
DCP rank holds is a law, ``price.context.dcp_rank_tokens`` (re-exported here)."""

from __future__ import annotations

from latencykernel.price.context import dcp_rank_tokens

__all__ = ["dcp_rank_tokens", "dcp_shards_kv"]


def dcp_shards_kv(kind: str) -> bool:
    """DCP shards the KV cache of full and latent attention; vLLM refuses DCP with a
    sliding window, so a window layer keeps its whole cache on every rank."""
    return kind in ("gqa", "mla", "sparse_mla")

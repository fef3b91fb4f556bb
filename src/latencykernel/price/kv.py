"""KV cache geometry and paging."""

from __future__ import annotations

import math

__all__ = ["kv_heads_per_rank", "kv_bytes_per_token", "paged_bytes"]


def kv_heads_per_rank(n_kv_heads: int, tp: int) -> int:
    """KV heads one tensor-parallel rank holds.

    heads = n_kv                    if tp <= 1
          = max(1, n_kv // tp)      otherwise (a head is never split: with more ranks
                                    than KV heads each rank keeps a replica of one)
    """
    if tp <= 1:
        return n_kv_heads
    return max(1, n_kv_heads // tp)


def kv_bytes_per_token(n_kv_heads: int, tp: int, head_dim: int, layers: int, dtype_bytes: float, latent: bool) -> float:
    """Bytes of KV cache one token holds on one rank, over every KV-holding layer.

    kv_bytes_per_token = tensors · heads_per_rank · head_dim · dtype_bytes · layers

    tensors = 2 (a K and a V vector per head), or 1 for a latent cache (MLA stores one
    compressed latent vector per token, and no TP width shrinks it: n_kv is 1).
    Returns 0 when any of n_kv_heads, head_dim, layers, dtype_bytes is not positive.
    """
    if n_kv_heads <= 0 or head_dim <= 0 or layers <= 0 or dtype_bytes <= 0:
        return 0.0
    tensors = 1 if latent else 2
    return float(tensors * kv_heads_per_rank(n_kv_heads, tp) * head_dim * dtype_bytes * layers)


def paged_bytes(tokens: int, block_tokens: int, bytes_per_token: float) -> int:
    """Bytes of ``tokens`` tokens of cache allocated in whole pages of ``block_tokens``.

    paged_bytes = ceil(tokens / block) · block · bytes_per_token    (block > 1)
                = tokens · bytes_per_token                           (block <= 1)
    truncated to whole bytes; 0 for no tokens or no bytes per token.
    """
    if tokens <= 0 or bytes_per_token <= 0:
        return 0
    if block_tokens <= 1:
        return int(tokens * bytes_per_token)
    return int(math.ceil(tokens / block_tokens) * block_tokens * bytes_per_token)

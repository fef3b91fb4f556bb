"""KV capacity under vLLM's hybrid KV-cache manager: full-attention and sliding-window
layers grouped by kind, windowed layers holding only their window's blocks.

Evidence, vLLM v0.31.0:

- ``vllm/v1/core/kv_cache_utils.py`` ``_get_kv_cache_groups_uniform_page_size``: layers of
  one kind (one KV spec) form groups of ``group_size`` layers; ``group_size`` is the fewest
  layers of any kind, or the most when that is under 1.25 times the fewest (fewer padding
  layers). A kind of n layers makes ceil(n / group_size) groups.
- ``get_kv_cache_config_from_groups``: every block id is one page in each of
  ``group_size`` shared tensors, so the pool holds
  ``num_blocks = budget // (page_bytes_per_layer · group_size)``.
- ``vllm/v1/core/single_type_kv_cache_manager.py`` ``FullAttentionManager`` keeps
  ceil(tokens / block) blocks per request; ``SlidingWindowManager.remove_skipped_blocks``
  frees every block wholly outside the window, so a request keeps at most
  ceil((window − 1) / block) + 1 blocks (``SlidingWindowSpec.max_memory_usage_bytes``
  counts the same ``cdiv(window − 1, block) + 1``).
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["hybrid_group_size", "window_blocks", "hybrid_blocks_per_request"]


def hybrid_group_size(layers_per_kind: Sequence[int]) -> int:
    """Layers per KV-cache group: the fewest layers of any kind, or the most when the most
    is under 1.25 × the fewest. 0 for no layers.

    group_size = max(n) if max(n) < 1.25 · min(n) else min(n)
    """
    counts = [n for n in layers_per_kind if n > 0]
    if not counts:
        return 0
    lo, hi = min(counts), max(counts)
    return hi if hi < 1.25 * lo else lo


def window_blocks(tokens: int, block_tokens: int, window_tokens: int) -> int:
    """Blocks one request holds in one group of layers of a kind.

    full attention (window 0):  ceil(tokens / block)
    sliding window w:           min(ceil(tokens / block), ceil((w − 1) / block) + 1)
    """
    if tokens <= 0:
        return 0
    b = max(block_tokens, 1)
    full = -(-tokens // b)
    if window_tokens <= 0:
        return full
    return min(full, -(-(window_tokens - 1) // b) + 1)


def hybrid_blocks_per_request(tokens: int, block_tokens: int, kinds: Sequence[tuple[int, int]]) -> int:
    """Pool blocks one request of ``tokens`` tokens holds under the hybrid manager.

    ``kinds`` holds (layers, window) per kind of KV layer (window 0 for full attention).

    blocks = Σ_kind ceil(layers / group_size) · window_blocks(tokens, block, window)

    Bytes per request = blocks · page_bytes_per_layer · group_size.
    """
    gs = hybrid_group_size([n for n, _ in kinds])
    if gs <= 0:
        return 0
    return sum(-(-n // gs) * window_blocks(tokens, block_tokens, w) for n, w in kinds if n > 0)

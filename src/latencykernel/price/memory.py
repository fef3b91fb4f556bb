"""Memory laws: recurrent state, activations, and snapping a width to a declared one."""

from __future__ import annotations

import math
from collections.abc import Iterable

__all__ = [
    "mamba2_state_bytes",
    "matrix_state_bytes",
    "recurrent_state_bytes",
    "activation_peak_bytes",
    "snap_declared_width",
]


def _per_rank(count: int, tp: int) -> int:
    """Heads (or groups) one tensor-parallel rank holds: ceil(count / tp), at least one."""
    return max(1, -(-count // max(tp, 1))) if count > 0 else 0


def mamba2_state_bytes(
    intermediate_size: int,
    n_groups: int,
    state_size: int,
    conv_kernel: int,
    n_heads: int,
    head_dim: int,
    state_dtype_bytes: float,
    tp: int = 1,
) -> float:
    """One Mamba-2 layer's per-sequence state on one tensor-parallel rank (convolution
    window + SSM state). vLLM splits the mixer over TP: the inner width and heads divide by
    tp; the B/C groups too, padded so every rank holds at least one.

    conv_dim = intermediate / tp + 2 · ceil(n_groups / tp) · state_size
    temporal = ceil(n_heads / tp) · head_dim · state_size   (· state_size without a head_dim)
    bytes    = (conv_dim · max(conv_kernel − 1, 1) + temporal) · state_dtype_bytes
    """
    t = max(tp, 1)
    conv_dim = intermediate_size / t + 2 * _per_rank(n_groups, t) * state_size
    heads = _per_rank(n_heads, t)
    temporal = heads * head_dim * state_size if head_dim > 0 else heads * state_size * state_size
    return (conv_dim * max(conv_kernel - 1, 1) + temporal) * state_dtype_bytes


def matrix_state_bytes(n_heads: int, state_size: int, state_dtype_bytes: float, tp: int = 1) -> float:
    """One KDA / Gated-DeltaNet layer's per-sequence state on one tensor-parallel rank: a
    state_size² matrix per head, heads split over TP.

    bytes = ceil(n_heads / tp) · state_size² · state_dtype_bytes
    """
    return _per_rank(n_heads, tp) * state_size * state_size * state_dtype_bytes


def recurrent_state_bytes(
    page_bytes: float, mode: str, max_len_tokens: int, block_tokens: int, spec_tokens: int, checkpoints: int
) -> float:
    """Recurrent-state bytes one sequence holds in one layer, by vLLM's mamba cache mode.

    all:   page · (ceil(max_len / block) + spec)    a state per block (prefix caching of
                                                     every position); page alone without blocks
    align: page · (2 + spec + checkpoints)          running + aligned checkpoint
    none:  page · (1 + spec)                        one running state
    """
    if page_bytes <= 0:
        return 0.0
    if mode == "all":
        if block_tokens <= 0:
            return page_bytes
        return page_bytes * (math.ceil(max_len_tokens / block_tokens) + spec_tokens)
    if mode == "align":
        return page_bytes * (2 + spec_tokens + checkpoints)
    return page_bytes * (1 + spec_tokens)


def activation_peak_bytes(
    buffer_count: float, max_batched_tokens: int, activation_width: int, scratch_floor_bytes: float
) -> float:
    """Peak activation memory of one forward pass (bf16 activations).

    bytes = max(buffer_count · max_num_batched_tokens · width · 2, scratch_floor)

    buffer_count is how many width-sized bf16 buffers are live at the peak (registry,
    by dense/MoE family and TP width); width is the attention width (n_q · d_h, or the
    hidden size for a latent-attention model).
    """
    return max(buffer_count * max_batched_tokens * activation_width * 2.0, scratch_floor_bytes)


def snap_declared_width(width: int, declared: Iterable[int]) -> int:
    """The widest declared width not above ``width``; the narrowest declared one when
    ``width`` is below them all; ``width`` itself when nothing is declared."""
    ds = sorted(set(declared))
    if not ds:
        return width
    below = [d for d in ds if d <= width]
    return below[-1] if below else ds[0]

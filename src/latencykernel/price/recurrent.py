"""Recurrent (linear-attention) layers: the state update's cost in decode and prefill."""

from __future__ import annotations

from typing import Any

__all__ = ["CHUNK_TOKENS", "chunked_prefill_share_s", "chunked_recurrent_flops_per_token", "recurrent_update_s"]

CHUNK_TOKENS = 64  # chunk length of the chunked (WY / SSD) prefill kernels


def chunked_recurrent_flops_per_token(n_heads: int, key_dim: int, value_dim: int, chunk: int = CHUNK_TOKENS) -> float:
    """FLOPs one prompt token costs a chunked delta-rule / SSD prefill, whole layer.

    flops = n_heads · (6 · d_k · d_v + 4 · C · d_k)

    A prefill does not step the recurrence token by token: vLLM runs the chunked kernels
    (``chunk_gated_delta_rule`` in vllm/model_executor/layers/fla/ops/chunk.py for GDN and
    KDA, the SSD chunk scan for Mamba2), which per chunk of C tokens read the state through
    the queries and the WY-transformed keys (2 · d_k · d_v each) and update it with one more
    d_k × d_v product, plus the C × C intra-chunk attention (about 4 · C · d_k per token):
    matrix products at GEMM efficiency (Yang et al., "Parallelizing Linear Transformers with
    the Delta Rule over Sequence Length", §3). 0 for a layer without heads or dimensions.
    """
    if n_heads <= 0 or key_dim <= 0 or value_dim <= 0:
        return 0.0
    return float(n_heads) * (6.0 * key_dim * value_dim + 4.0 * chunk * key_dim)


def recurrent_update_s(
    decode_tokens: float,
    prefill_tokens: float,
    floor_s: float,
    decode_tokens_per_s: float,
    prefill_flops_per_token: float,
    peak_flops_per_s: float,
    efficiency: float,
) -> float:
    """One recurrent layer's state update in a step (per rank).

    t = floor + decode_tokens / decode_rate + prefill_tokens · F / (peak · eff)

    Decodes step the recurrence one token at a time at the fitted decode rate
    (cost-model-recurrent, the fused recurrent kernels); prompt tokens go through the
    chunked kernels at GEMM efficiency (``chunked_recurrent_flops_per_token``, divided over
    tensor-parallel ranks by the caller). Pricing prompt tokens at the decode rate made an
    8,192-token Qwen3.5-397B prefill (bf16, TP8, B200) 578 ms of SM alone, against 318 ms
    of measured TTFT at concurrency 4, queueing included (InferenceX). The floor is paid
    once per step that touches the layer; 0 for an empty step. A layer whose graph node
    states no head geometry (F = 0) prices its prompt tokens at the decode rate.
    """
    if decode_tokens <= 0 and prefill_tokens <= 0:
        return 0.0
    t = floor_s
    if decode_tokens > 0 and decode_tokens_per_s > 0:
        t += decode_tokens / decode_tokens_per_s
    if prefill_tokens > 0:
        if prefill_flops_per_token > 0 and peak_flops_per_s > 0 and efficiency > 0:
            t += prefill_tokens * prefill_flops_per_token / (peak_flops_per_s * efficiency)
        elif decode_tokens_per_s > 0:  # no head geometry: the decode rate, as before
            t += prefill_tokens / decode_tokens_per_s
    return t


def chunked_prefill_share_s(flops_per_token: float, prefill_tokens: Any, step_tokens: Any, gemm_s: Any) -> Any:
    """The prompt-token term of ``recurrent_update_s`` as the fused and vectorised paths
    fold it, given one GEMM-ramp time for the whole step.

    t = F · prefill_tokens / step_tokens · gemm_s

    ``gemm_s`` is step_tokens / (peak · eff(step_tokens)) (times the SM-budget derate): the
    time one FLOP per token costs the step, so F · prefill_tokens / (peak · eff) follows.
    Written once so that the scalar and numpy paths round alike (numpy arrays work as well
    as floats).
    """
    return flops_per_token * prefill_tokens / step_tokens * gemm_s

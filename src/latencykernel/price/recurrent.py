"""Recurrent (linear-attention) layers: the state update's cost in decode and prefill."""

from __future__ import annotations

from typing import Any

__all__ = [
    "CHUNK_TOKENS",
    "chunked_prefill_share_s",
    "chunked_recurrent_flops_per_token",
    "rank_decode_rate",
    "recurrent_update_s",
]

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


def rank_decode_rate(layer_tokens_per_s: float, tp: int) -> float:
    """Decode tokens per second one tensor-parallel rank's share of a recurrent layer
    updates, from the registry's whole-layer rate.

    rate_rank = rate_layer · tp

    The registry's decode rates (``recurrent_decode_rate_<kind>``, cost-model-recurrent)
    are fitted on kernel sweeps at the model's own head geometry, all heads on one GPU
    ("fitted at num_k_heads=96, which is what Kimi-K3's graph declares; the kernel's
    coefficient carries no head term"; the GDN entries likewise at the catalog GDN model's
    geometry). vLLM shards the mixer's heads over the tensor-parallel ranks (divergence V6
    divides the state the same way), and the decode kernels' work is per head: the fused
    GDN update runs one program per (value block, sequence x head of this rank)
    (``fused_recurrent_gated_delta_rule``, vllm/model_executor/layers/fla/ops/
    fused_recurrent.py), reading and writing that head's d_k x d_v state. So a rank holding
    1/tp of the heads updates a token in 1/tp of the whole layer's time; the per-call floor
    is unchanged. Before, every rank paid the whole layer: at TP8 Qwen3.5-397B's 45 GDN
    layers cost 62 us per decoding request per step on B200 (0.724 tokens/us each), and
    the priced per-request slope of its InferenceX sweeps' decode steps was 1.2-1.6x the
    measured TPOT slope (bench/analyse_fit.py).

    Evidence (InferenceX, closed form; docs/accuracy.md fix 14): TPOT shape / MAPE fit 7.22
    / 11.95 -> 7.02 / 11.56 %, evaluation 8.76 / 13.46 -> 8.61 / 12.91 %; Qwen3.5's TPOT
    MAE fit 22.6 -> 15.1 %, evaluation 16.4 -> 11.2 %. Its TTFT, priced low at high
    concurrency already, moves the other way (fit 29.0 -> 29.7 %, evaluation 26.5 ->
    27.5 %): cheaper decode steps shorten the priced prompt queue. Nothing is fitted: the
    exponent of tp is the head split's (0.5 scored 7.08 / 11.67 and 8.53 / 12.94 %)."""
    return layer_tokens_per_s * max(int(tp), 1)


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
    (cost-model-recurrent, the fused recurrent kernels; per rank, ``rank_decode_rate``);
    prompt tokens go through the
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

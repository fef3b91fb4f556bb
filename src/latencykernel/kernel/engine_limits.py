"""The engine settings ``new`` resolves for the scheduler and the capacity: the recurrent
cache mode, the scheduler limits and CUDA-graph capture, the MLA context-gather chunk and
the memory utilization (each unstated one vLLM's default, recorded in the assumptions)."""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from latencykernel.resolve.layout import Override
from latencykernel.resolve.settings import (
    Assumptions,
    capture_ceiling_tokens,
    default_max_num_batched_tokens,
    default_max_num_seqs,
    graph_modes,
)
from latencykernel.resolve.startup import check_scheduler_limits, resolve_max_model_len

__all__ = [
    "VLLM_GPU_MEMORY_UTILIZATION",
    "EngineSettings",
    "recurrent_cache_mode",
    "engine_settings",
    "mla_context_chunk",
    "memory_utilization",
]

VLLM_GPU_MEMORY_UTILIZATION = 0.92


class EngineSettings(NamedTuple):
    """Speculative tokens and the uniform decode width they make, the scheduler limits,
    chunked prefill, the CUDA-graph mode (and its decode and other halves), the capture
    ceiling, and whether the model is compiled as one graph (``splitting_ops: []``)."""

    spec_tokens: int
    uniform_width: int
    max_seqs: int
    max_batched: int
    max_len: int
    chunked: bool
    mode_name: str
    graph_decode: str
    graph_other: str
    nvfp4_native: bool
    capture: int
    unsplit: bool


def recurrent_cache_mode(eng: Any, hybrid: bool, overrides: list[Override], assumptions: Assumptions) -> str:
    """The recurrent (mamba) cache mode: stated, or none; a hybrid model runs in align mode
    whenever prefix caching is on."""
    mamba_mode: str = eng.mamba_cache_mode or "none"
    if hybrid:
        prefix_caching = eng.enable_prefix_caching is not False
        if prefix_caching and mamba_mode == "none":
            if eng.mamba_cache_mode == "none":
                overrides.append(
                    Override(
                        "mamba_cache_mode",
                        "none",
                        "align",
                        "vLLM runs a hybrid model in align mode whenever prefix caching is on",
                    )
                )
            mamba_mode = "align"
        if eng.mamba_cache_mode is None:
            assumptions.add(
                "mamba_cache_mode",
                mamba_mode,
                "unstated; vLLM's mode for a hybrid model "
                + ("with prefix caching on" if prefix_caching else "without prefix caching"),
            )
    return mamba_mode


def engine_settings(
    eng: Any, chip: Any, facts: Any, assumptions: Assumptions, overrides: list[Override] | None = None
) -> EngineSettings:
    """Engine limits and graph capture (a graph mode vLLM replaces is recorded in ``overrides``)."""
    spec = eng.speculative
    spec_tokens = (spec.num_spec_tokens or 0) if spec is not None else 0
    uniform_width = 1 + spec_tokens
    max_seqs = eng.max_num_seqs
    if max_seqs is None:
        max_seqs = default_max_num_seqs(chip.name, chip.MemoryGiB)
        assumptions.add("max_num_seqs", max_seqs, "unstated; vLLM v0.31.0's OpenAI-server default for this part")
    max_batched = eng.max_num_batched_tokens
    if max_batched is None:
        max_batched = default_max_num_batched_tokens(chip.name, chip.MemoryGiB)
        assumptions.add(
            "max_num_batched_tokens", max_batched, "unstated; vLLM v0.31.0's OpenAI-server default for this part"
        )
    max_len = resolve_max_model_len(eng, facts, assumptions)
    # Chunked prefill: vLLM v0.31.0's default is on. The choice is shown in ``Kernel.info``
    # (``enable_chunked_prefill``) rather than added to the assumptions, whose count the Go
    # kernel's worked figures pin; it prices nothing, it only decides the refusal below.
    chunked = eng.enable_chunked_prefill is not False
    check_scheduler_limits(max_batched, max_seqs, max_len, chunked)
    unsplit = eng.splitting_ops is not None and len(eng.splitting_ops) == 0
    mode_name, g_decode, g_other = graph_modes(eng.cudagraph_mode, assumptions, unsplit, overrides)
    nvfp4_native = (chip.TFlopsNVFP4 or 0) > 0
    capture = 0
    if g_decode != "eager" or g_other != "eager":
        capture = capture_ceiling_tokens(max_seqs, uniform_width, nvfp4_native)
        assumptions.add(
            "max_cudagraph_capture_size",
            capture,
            "the deployment format cannot state it; vLLM's default min(max_num_seqs x "
            f"{uniform_width} x 2, {1024 if nvfp4_native else 512})",
        )
    return EngineSettings(
        spec_tokens,
        uniform_width,
        max_seqs,
        max_batched,
        max_len,
        chunked,
        mode_name,
        g_decode,
        g_other,
        nvfp4_native,
        capture,
        unsplit,
    )


def mla_context_chunk(
    eng: Any, max_seqs: int, block: int, dcp: int, interleave: int, latent: bool, assumptions: Assumptions
) -> int:
    """The MLA context-gather chunk (DCP prefill over a latent cache), aligned to the block
    (and under DCP to the interleaved block)."""
    if eng.max_model_len is not None:
        chunk = min(max(8 * eng.max_model_len, 4 * max_seqs * block), 65536)
    else:
        chunk = 65536
        if dcp > 1 and latent:
            assumptions.add("mla_context_chunk", 65536, "max_model_len unstated; vLLM's ceiling")
    align = block if dcp <= 1 else math.lcm(block, dcp * interleave)
    chunk = int(math.ceil(chunk / align) * align)
    return chunk


def memory_utilization(eng: Any, assumptions: Assumptions) -> float:
    """``engine.gpu_memory_utilization``, or vLLM's default."""
    util: float | None = eng.gpu_memory_utilization
    if util is None:
        util = VLLM_GPU_MEMORY_UTILIZATION
        assumptions.add("gpu_memory_utilization", util, "unstated; vLLM's default (capacity only, not step time)")
    return util

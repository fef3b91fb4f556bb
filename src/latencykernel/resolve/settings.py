"""Engine settings the kernel needs, with vLLM v0.31.0's defaults where the deployment
leaves one unstated. Every default taken is recorded as an assumption, so a user can see
what a price rests on."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from latencykernel.errors import RefusedError
from latencykernel.resolve.layout import Override

__all__ = [
    "Assumption",
    "Assumptions",
    "GRAPH_MODES",
    "UNSPLIT_MODES",
    "graph_modes",
    "default_max_num_seqs",
    "default_max_num_batched_tokens",
    "capture_ceiling_tokens",
    "hybrid_kv_manager",
    "ENGINE_BEHAVIOUR_VERSION",
    "ENGINE_BEHAVIOUR_COMMIT",
]

# The vLLM release whose behaviour the kernel prices, whatever a scenario's engine_version says.

ENGINE_BEHAVIOUR_VERSION = "0.31.0"
ENGINE_BEHAVIOUR_COMMIT = "db9527a46873454610df6dbedf79a36d6bf1a7f6"


@dataclass(frozen=True)
class Assumption:
    """A value the kernel supplied itself: ``name`` (the setting's YAML key or a
    coefficient name), the ``value`` taken and the ``reason``."""

    name: str
    value: str
    reason: str


@dataclass
class Assumptions:
    items: list[Assumption] = field(default_factory=list)

    def add(self, name: str, value: object, reason: str) -> None:
        self.items.append(Assumption(name, str(value), reason))

    def names(self) -> list[str]:
        return [a.name for a in self.items]


# cudagraph_mode -> (mode for a uniform decode batch, mode for any other batch)
GRAPH_MODES: dict[str, tuple[str, str]] = {
    "PIECEWISE": ("piecewise", "piecewise"),
    "FULL": ("full", "full"),
    "FULL_AND_PIECEWISE": ("full", "piecewise"),
    "FULL_DECODE_ONLY": ("full", "eager"),
    "NONE": ("eager", "eager"),
}


# With compilation_config.splitting_ops = [] the model is compiled as one graph, which holds
# no piecewise CUDA graph: vLLM turns the modes that ask for one into the nearest mode
# without (vllm/config/compilation.py, CompilationConfig.set_splitting_ops_for_v1:
# PIECEWISE -> NONE, FULL_AND_PIECEWISE -> FULL, each with a warning).
UNSPLIT_MODES: dict[str, str] = {"PIECEWISE": "NONE", "FULL_AND_PIECEWISE": "FULL"}


def graph_modes(
    stated: str | None,
    assumptions: Assumptions,
    unsplit: bool = False,
    overrides: list[Override] | None = None,
) -> tuple[str, str, str]:
    """(mode name, decode graph mode, other graph mode); refuses an unknown mode.

    ``unsplit``: the deployment states ``splitting_ops: []``; a mode that needs piecewise
    graphs becomes vLLM's replacement (``UNSPLIT_MODES``), recorded in ``overrides``.
    """
    if stated is None:
        assumptions.add("cudagraph_mode", "FULL_AND_PIECEWISE", "unstated; vLLM v0.31.0's default")
        stated = "FULL_AND_PIECEWISE"
    if stated not in GRAPH_MODES:
        raise RefusedError(
            f"engine.cudagraph_mode {stated!r} is not a vLLM CUDA-graph mode; use one of {', '.join(GRAPH_MODES)}",
            setting="engine.cudagraph_mode",
            value=stated,
        )
    if unsplit and stated in UNSPLIT_MODES:
        mode = UNSPLIT_MODES[stated]
        if overrides is not None:
            overrides.append(
                Override(
                    "cudagraph_mode",
                    stated,
                    mode,
                    "splitting_ops: [] compiles the model as one graph, which holds no piecewise CUDA graph",
                )
            )
        stated = mode
    decode, other = GRAPH_MODES[stated]
    return stated, decode, other


def default_max_num_seqs(chip_name: str, memory_gib: float) -> int:
    """vLLM's OpenAI-server default: 1024 on parts with at least 70 GiB that are not A100s,
    else 256."""
    return 1024 if memory_gib >= 70 and "a100" not in chip_name.lower() else 256


def default_max_num_batched_tokens(chip_name: str, memory_gib: float) -> int:
    """vLLM's OpenAI-server default: 16384 from 160 GiB, 8192 from 70 GiB (not A100), else 2048."""
    if memory_gib >= 160:
        return 16384
    if memory_gib >= 70 and "a100" not in chip_name.lower():
        return 8192
    return 2048


def capture_ceiling_tokens(max_num_seqs: int, uniform_decode_width: int, nvfp4_native: bool) -> int:
    """vLLM's max_cudagraph_capture_size: min(max_num_seqs · width · 2, 512), or 1024 on
    parts with native NVFP4. Batches with more tokens run eagerly."""
    return min(max_num_seqs * uniform_decode_width * 2, 1024 if nvfp4_native else 512)


def hybrid_kv_manager(
    layers: Any, eng: Any, connectors: set[Any], dcp: int, recurrent: bool, latent: bool, assumptions: Assumptions
) -> tuple[tuple[tuple[int, int], ...], bool]:
    """((layers, window) per kind of KV layer, whether vLLM's hybrid KV-cache manager sizes
    the cache). Only a stack with sliding-window layers is affected: there the manager keeps
    just the window's blocks (``price/hybrid_kv.py``).

    vLLM runs it unless ``--disable-hybrid-kv-cache-manager`` is stated
    (``vllm/config/scheduler.py`` ``SchedulerConfig.disable_hybrid_kv_cache_manager``), and
    turns it off itself (``vllm/config/vllm.py`` ``VllmConfig.__post_init__``) under a KV
    connector that does not declare support for it (taken here for any connector) and under
    decode-context parallelism; then every layer is charged the whole context, as for a
    full-attention layer."""
    by_window: dict[int, int] = {}
    for lp in layers:
        if lp.primary is None:
            continue
        w = lp.primary.window if lp.primary.kind == "swa" else 0
        by_window[w] = by_window.get(w, 0) + lp.count
    kinds = tuple(sorted((n, w) for w, n in by_window.items()))
    if not any(w > 0 for w in by_window) or recurrent or latent:
        return kinds, False
    connector = next((c for c in connectors if c), None)
    if eng.disable_hybrid_kv_cache_manager:
        why = "stated off (--disable-hybrid-kv-cache-manager): windowed layers hold the whole context"
    elif connector is not None:
        why = (
            f"off: vLLM disables it under a KV connector ({connector}) that does not declare hybrid support; "
            "windowed layers hold the whole context"
        )
    elif dcp > 1:
        why = "off: vLLM disables it under decode-context parallelism; windowed layers hold the whole context"
    else:
        assumptions.add(
            "hybrid_kv_cache_manager",
            "on",
            "vLLM v0.31.0's default: sliding-window layers keep only their window's blocks (+1)",
        )
        return kinds, True
    assumptions.add("hybrid_kv_cache_manager", "off", why)
    return kinds, False

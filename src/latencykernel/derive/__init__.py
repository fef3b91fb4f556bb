"""Model graphs from vendor configs (:mod:`.hf`) and counts over graphs (:mod:`.counts`)."""

from __future__ import annotations

from latencykernel.derive.hf import (
    DERIVER_VERSION,
    SUPPORTED_ARCHITECTURES,
    derive_graph,
    derive_graph_from_bytes,
    derive_graph_from_file,
    render_graph_yaml,
)

__all__ = [
    "DERIVER_VERSION",
    "SUPPORTED_ARCHITECTURES",
    "derive_graph",
    "derive_graph_from_bytes",
    "derive_graph_from_file",
    "render_graph_yaml",
]

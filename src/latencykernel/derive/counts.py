"""Counts over a model graph: parameters, layers, KV geometry.

Pure functions of a validated :class:`latencykernel.documents.graph.ModelGraph` (load one
with ``documents.graph.load_graph``, or validate a derived document with
``documents.common.validate``); the schema has already checked every key, type, range and
layer-kind reference, so nothing here re-checks them.

Parameter rules (weights a graph node stands for):

    GEMM          n·k
    GroupedGEMM   experts·3·n·k_e + shared_experts·3·inner·k
                  (a gated expert is three matrices: gate, up, down; k_e = latent_size when
                  set, else k; inner = shared_intermediate_size, or n when absent or 0)
    embeddings    vocab·hidden (the input table is not a node)
    lm_head       its GEMM n·k, unless tie_word_embeddings (it reuses the table)
    Attention, RecurrentUpdate, Elementwise, collectives: none (a recurrent mixer's
                  projections are GEMM nodes; its state is not a parameter)

A graph omits norm weights, biases, routers, learned position embeddings, convolution
kernels and any encoder of a multimodal model, so these counts run slightly under the
vendor's published totals.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import NamedTuple

from latencykernel.documents.graph import ModelGraph, Node
from latencykernel.errors import DocumentError

__all__ = [
    "KvGeometry",
    "parameter_count",
    "active_parameter_count",
    "layer_count",
    "kv_geometry",
    "kv_layers_by_kind",
]


def _layers(graph: ModelGraph, include_speculator: bool = False) -> list[list[Node]]:
    """The nodes of every layer, in stack order (then the speculator's, on request)."""
    ids = graph.expand()
    if include_speculator and graph.speculator is not None:
        ids = ids + graph.speculator.stack.expand()
    kinds = {lk.id: lk.nodes for lk in graph.layer_kinds}
    return [kinds[i] for i in ids]


def _node_params(node: Node, active: bool) -> int:
    if node.op == "GEMM":
        assert node.n is not None and node.k is not None  # required for GEMM by the schema
        return node.n * node.k
    if node.op == "GroupedGEMM":
        assert node.n is not None and node.k is not None
        assert node.experts is not None and node.top_k is not None
        routed = node.top_k if active else node.experts
        k_expert = node.latent_size or node.k
        inner = node.shared_intermediate_size or node.n
        return routed * 3 * node.n * k_expert + (node.shared_experts or 0) * 3 * inner * node.k
    return 0


def _count(graph: ModelGraph, *, active: bool, include_speculator: bool) -> int:
    total = sum(_node_params(node, active) for nodes in _layers(graph, include_speculator) for node in nodes)
    g = graph.global_
    total += g.vocab_size * g.hidden_size  # input embedding table
    tied = bool(g.tie_word_embeddings)
    for node in graph.head:
        if tied and node.role == "lm_head":
            continue
        total += _node_params(node, active)
    return total


def parameter_count(graph: ModelGraph, include_speculator: bool = False) -> int:
    """Weights of the model the graph describes (MTP draft layers only on request)."""
    return _count(graph, active=False, include_speculator=include_speculator)


def active_parameter_count(graph: ModelGraph) -> int:
    """Weights one token reads: top_k routed experts per MoE layer instead of all of them
    (shared experts, attention, embeddings and head in full)."""
    return _count(graph, active=True, include_speculator=False)


def layer_count(graph: ModelGraph) -> int:
    """Decoder layers of the main stack."""
    return len(graph.expand())


class KvGeometry(NamedTuple):
    """KV cache shape of the layers that hold one: heads, head width, attention kind, and
    the number of such layers.  ``kind`` is the kind most of those layers use (ties: the
    first in layer order)."""

    n_kv: int
    d_h: int
    kind: str
    kv_layers: int


def _primary_attention(nodes: Iterable[Node]) -> Node | None:
    for node in nodes:
        if node.op == "Attention" and not node.role:
            return node
    return None


def kv_layers_by_kind(graph: ModelGraph) -> dict[str, int]:
    """Layers holding KV, per primary attention kind, in first-seen order."""
    counts: Counter[str] = Counter()
    for nodes in _layers(graph):
        node = _primary_attention(nodes)
        if node is not None:
            counts[str(node.kind)] += 1
    return dict(counts)


def kv_geometry(graph: ModelGraph) -> KvGeometry:
    """``(n_kv, d_h, kind, kv_layers)`` of the primary (role-less) attention nodes.

    Raises DocumentError when the graph has no attention layer, or when its primary
    attention nodes disagree on n_kv or d_h (one geometry cannot describe the cache).
    """
    shapes: set[tuple[int, int]] = set()
    for nodes in _layers(graph):
        node = _primary_attention(nodes)
        if node is not None:
            assert node.n_kv is not None and node.d_h is not None  # required for Attention
            shapes.add((node.n_kv, node.d_h))
    if not shapes:
        raise DocumentError("the graph has no attention layer, so no KV cache", key="layer_kinds")
    if len(shapes) > 1:
        raise DocumentError(
            f"primary attention nodes disagree on (n_kv, d_h): {sorted(shapes)}",
            key="layer_kinds",
            value=sorted(shapes),
        )
    ((n_kv, d_h),) = shapes
    by_kind = kv_layers_by_kind(graph)
    kind = max(by_kind, key=lambda k: by_kind[k])  # max keeps the first of equal counts
    return KvGeometry(n_kv, d_h, kind, sum(by_kind.values()))

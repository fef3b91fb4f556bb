"""Counts over a model graph: parameters, layers, KV geometry.

Pure functions.  A graph is either the plain dict of a graph.yaml (as
:func:`latencykernel.derive.hf.derive_graph` returns it) or the pydantic ``ModelGraph`` of
``latencykernel.documents.graph``; a small adapter reads keys or attributes alike (the
pydantic field for ``global`` is ``global_``).

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
from collections.abc import Iterable, Mapping
from enum import Enum
from typing import Any, NamedTuple

from latencykernel.errors import DocumentError

__all__ = [
    "KvGeometry",
    "parameter_count",
    "active_parameter_count",
    "layer_count",
    "expand_stack",
    "kv_geometry",
    "kv_layers_by_kind",
]

_ALIASES = {"global": "global_"}


def _get(obj: Any, key: str, default: Any = None) -> Any:
    """``obj[key]`` for a mapping, ``obj.key`` (or ``obj.global_``) for a model object."""
    if obj is None:
        return default
    if isinstance(obj, Mapping):
        value = obj.get(key, default)
    else:
        value = getattr(obj, _ALIASES.get(key, key), _MISSING)
        if value is _MISSING:
            value = getattr(obj, key, default)
    if isinstance(value, Enum):
        value = value.value
    return default if value is None else value


_MISSING = object()


def _int(obj: Any, key: str, default: int = 0) -> int:
    v = _get(obj, key, default)
    if isinstance(v, bool) or not isinstance(v, int):
        raise DocumentError(f"graph node key {key!r} must be an integer", key=key, value=v)
    return v


def expand_stack(stack: Any) -> list[str]:
    """``prologue + pattern × repeat + epilogue`` as a list of layer-kind ids."""
    pattern = list(_get(stack, "pattern", []))
    return [
        *_get(stack, "prologue", []),
        *(pattern * _int(stack, "repeat", 0 if not pattern else 1)),
        *_get(stack, "epilogue", []),
    ]


def _kinds(graph: Any) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for kind in _get(graph, "layer_kinds", []):
        out[str(_get(kind, "id"))] = list(_get(kind, "nodes", []))
    return out


def _layers(graph: Any, include_speculator: bool = False) -> list[list[Any]]:
    kinds = _kinds(graph)
    ids = expand_stack(_get(graph, "stack"))
    if include_speculator:
        spec = _get(graph, "speculator")
        if spec is not None:
            ids += expand_stack(_get(spec, "stack"))
    missing = sorted({i for i in ids if i not in kinds})
    if missing:
        raise DocumentError(f"stack names undeclared layer kinds {missing}", key="stack", value=missing)
    return [kinds[i] for i in ids]


def _node_params(node: Any, active: bool) -> int:
    op = _get(node, "op")
    if op == "GEMM":
        return _int(node, "n") * _int(node, "k")
    if op == "GroupedGEMM":
        n, k = _int(node, "n"), _int(node, "k")
        routed = _int(node, "top_k") if active else _int(node, "experts")
        k_expert = _int(node, "latent_size", 0) or k
        shared = _int(node, "shared_experts", 0)
        inner = _int(node, "shared_intermediate_size", 0) or n
        return routed * 3 * n * k_expert + shared * 3 * inner * k
    return 0


def _count(graph: Any, *, active: bool, include_speculator: bool) -> int:
    total = sum(
        _node_params(node, active)
        for nodes in _layers(graph, include_speculator)
        for node in nodes
    )
    g = _get(graph, "global")
    hidden, vocab = _int(g, "hidden_size"), _int(g, "vocab_size")
    tied = bool(_get(g, "tie_word_embeddings", False))
    total += vocab * hidden  # input embedding table
    for node in _get(graph, "head", []):
        if tied and _get(node, "role") == "lm_head":
            continue
        total += _node_params(node, active)
    return total


def parameter_count(graph: Any, include_speculator: bool = False) -> int:
    """Weights of the model the graph describes (MTP draft layers only on request)."""
    return _count(graph, active=False, include_speculator=include_speculator)


def active_parameter_count(graph: Any) -> int:
    """Weights one token reads: top_k routed experts per MoE layer instead of all of them
    (shared experts, attention, embeddings and head in full)."""
    return _count(graph, active=True, include_speculator=False)


def layer_count(graph: Any) -> int:
    """Decoder layers of the main stack."""
    return len(expand_stack(_get(graph, "stack")))


class KvGeometry(NamedTuple):
    """KV cache shape of the layers that hold one: heads, head width, attention kind, and
    the number of such layers.  ``kind`` is the kind most of those layers use (ties: the
    first in layer order)."""

    n_kv: int
    d_h: int
    kind: str
    kv_layers: int


def _primary_attention(nodes: Iterable[Any]) -> Any | None:
    for node in nodes:
        if _get(node, "op") == "Attention" and not _get(node, "role", ""):
            return node
    return None


def kv_layers_by_kind(graph: Any) -> dict[str, int]:
    """Layers holding KV, per primary attention kind, in first-seen order."""
    counts: Counter[str] = Counter()
    for nodes in _layers(graph):
        node = _primary_attention(nodes)
        if node is not None:
            counts[str(_get(node, "kind"))] += 1
    return dict(counts)


def kv_geometry(graph: Any) -> KvGeometry:
    """``(n_kv, d_h, kind, kv_layers)`` of the primary (role-less) attention nodes.

    Raises DocumentError when the graph has no attention layer, or when its primary
    attention nodes disagree on n_kv or d_h (one geometry cannot describe the cache).
    """
    shapes: set[tuple[int, int]] = set()
    for nodes in _layers(graph):
        node = _primary_attention(nodes)
        if node is not None:
            shapes.add((_int(node, "n_kv"), _int(node, "d_h")))
    if not shapes:
        raise DocumentError("the graph has no attention layer, so no KV cache", key="layer_kinds")
    if len(shapes) > 1:
        raise DocumentError(f"primary attention nodes disagree on (n_kv, d_h): {sorted(shapes)}",
                            key="layer_kinds", value=sorted(shapes))
    (n_kv, d_h), = shapes
    by_kind = kv_layers_by_kind(graph)
    kind = max(by_kind, key=lambda k: by_kind[k])  # max keeps the first of equal counts
    return KvGeometry(n_kv, d_h, kind, sum(by_kind.values()))

"""Models as the scenarios see them: parameters, layers, KV geometry, experts, FLOPs per token.

Two sources, one type:

* ``Workload.catalog("llama-3.1-8b-instruct")``: counted from the model graph of the
  shared catalog (the graph the kernel prices), with ``latencykernel.derive.counts``.
* ``Workload.recorded("GPT2")``: the figures mlsysim 0.3.0 registers for a model, as its
  golden file records them (``data/scenario_library/recorded_workloads.yaml``) (GPT-2 XL is "1.5 B" there; its graph counts 1.56 B). Named
  scenarios that reproduce mlsysim use these and say so in their ``sources``.

A workload states a parameter *basis*: ``counted`` (from the graph) or ``nominal`` (the
published round figure). ``parameters``, ``active_parameters`` and ``flops_per_token``
follow the basis; ``.nominal()`` and ``.counted()`` switch it.

KV bytes per token come from one law, ``latencykernel.price.kv.kv_bytes_per_token``, the
one the kernel sizes its cache with: MHA, GQA and MQA store a K and a V vector per KV head
per layer; MLA stores one latent vector (``kv_lora_rank + rope`` wide) per layer. Missing
geometry is an error, never a default.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import pint

from latencykernel.errors import NotApplicableError, UnknownScenarioError
from latencykernel.price.kv import kv_bytes_per_token  # the kernel's KV law (price/ imports nothing of ours)
from latencykernel.scenarios.reference_data import RECORDED_WORKLOADS  # package data, read on first use
from latencykernel.scenarios.units import Q_, magnitude_in

__all__ = ["KvGeometry", "LayerReads", "ExpertGeometry", "Workload", "RECORDED_WORKLOADS", "NOMINAL_PARAMETERS"]

_LATENT_KINDS = frozenset({"mla", "sparse_mla"})


@dataclass(frozen=True)
class LayerReads:
    """``layers`` KV layers whose decode attention reads less than the whole context, as the
    kernel prices it: a sliding-window layer reads min(ctx, window); a sparse layer its top-k
    min(ctx, topk) plus (ctx − topk) / compress_ratio compressed entries beyond them."""

    layers: int
    window: int = 0
    topk: int = 0
    compress_ratio: int = 0

    def tokens(self, ctx: int) -> float:
        """Cached tokens one such layer reads for one sequence at context ``ctx``."""
        from latencykernel.price.attention import decode_read_tokens

        return decode_read_tokens(ctx, self.topk, self.window, self.compress_ratio)


@dataclass(frozen=True)
class KvGeometry:
    """What one token's cache holds.

    kind:      the attention kind as the graph states it (``gqa`` covers MHA and MQA,
               ``mla``/``sparse_mla`` are latent, ``swa`` sliding-window)
    n_kv:      KV heads (1 for a latent cache)
    head_dim:  width of one cached vector (the latent width for MLA: kv_lora_rank + rope)
    layers:    layers that hold a cache
    n_q:       query heads (``None`` if unknown); used only to name the design
    reads:     layers whose attention reads less than the whole cache (sliding windows,
               sparse top-k); every other KV layer reads all of it
    """

    kind: str
    n_kv: int
    head_dim: int
    layers: int
    n_q: int | None = None
    reads: tuple[LayerReads, ...] = ()

    def __post_init__(self) -> None:
        for name in ("n_kv", "head_dim", "layers"):
            v = getattr(self, name)
            if not isinstance(v, int) or v <= 0:
                raise ValueError(f"KV geometry {name}={v!r} must be a positive int")

    @property
    def latent(self) -> bool:
        return self.kind in _LATENT_KINDS

    @property
    def design(self) -> str:
        """MHA, GQA, MQA or MLA."""
        if self.latent:
            return "MLA"
        if self.n_kv == 1:
            return "MQA"
        if self.n_q is not None and self.n_kv == self.n_q:
            return "MHA"
        return "GQA"

    def bytes_per_token(self, dtype_bytes: float, tp: int = 1) -> float:
        """Bytes one token's cache holds on one TP rank (the kernel's law)."""
        return kv_bytes_per_token(self.n_kv, tp, self.head_dim, self.layers, dtype_bytes, self.latent)

    def kv_bytes_per_token(self, kv_bytes_per_value: Any, tp: int = 1) -> pint.Quantity:
        """``bytes_per_token`` as a quantity (``B/token``), from a byte quantity."""
        return Q_(self.bytes_per_token(magnitude_in(kv_bytes_per_value, "B"), tp), "B/token")

    def layer_tokens_read(self, ctx: int) -> float:
        """Σ over KV layers of the cached tokens each reads for one sequence at ``ctx``
        (``layers · ctx`` when every layer attends to the whole context)."""
        limited = sum(r.layers for r in self.reads)
        return (self.layers - limited) * float(ctx) + sum(r.layers * r.tokens(ctx) for r in self.reads)

    def bytes_read(self, ctx: int, dtype_bytes: float, tp: int = 1) -> float:
        """Cache bytes one decode step of one sequence reads at context ``ctx`` (one TP rank)."""
        return self.bytes_per_token(dtype_bytes, tp) / self.layers * self.layer_tokens_read(ctx)

    def kv_bytes_read(self, kv_bytes_per_value: Any, context_tokens: Any, tp: int = 1) -> pint.Quantity:
        """``bytes_read`` as a quantity (``B``) from a byte quantity and a token count."""
        ctx = int(context_tokens.to("token").magnitude) if hasattr(context_tokens, "to") else int(context_tokens)
        return Q_(self.bytes_read(ctx, magnitude_in(kv_bytes_per_value, "B"), tp), "B")


@dataclass(frozen=True)
class ExpertGeometry:
    """Routed experts: ``routed`` per MoE layer, ``top_k`` chosen per token.

    Split of the parameters (derived from total and active counts, all routed experts the
    same size):  expert = (P − P_active) / (E − k)   (one routed expert, over every MoE layer)
                 dense  = P_active − k · expert      (attention, shared experts, embeddings)
    """

    routed: int
    top_k: int

    def split(self, total: float, active: float) -> tuple[float, float]:
        """(dense, per_expert) parameters."""
        if self.routed <= self.top_k:
            return total, 0.0
        per_expert = (total - active) / (self.routed - self.top_k)
        return active - self.top_k * per_expert, per_expert

    def touched(self, tokens: int) -> float:
        """Expected distinct routed experts ``tokens`` tokens read, per MoE layer (the kernel's law)."""
        from latencykernel.price.experts import experts_touched

        return experts_touched(tokens, self.routed, self.top_k, float(self.routed))


@dataclass(frozen=True)
class Workload:
    """One model."""

    name: str
    layers: int
    kv: KvGeometry | None
    source: str
    counted_parameters: float | None = None
    counted_active_parameters: float | None = None
    nominal_parameters: float | None = None
    nominal_active_parameters: float | None = None
    basis: str = "counted"
    hidden: int | None = None
    heads: int | None = None
    experts: ExpertGeometry | None = None
    catalog_name: str | None = None
    note: str = ""

    def __post_init__(self) -> None:
        if self.basis not in ("counted", "nominal"):
            raise ValueError(f"basis={self.basis!r} must be 'counted' or 'nominal'")
        if self._total() is None:
            raise ValueError(f"{self.name} states no {self.basis} parameter count")

    # ---------------------------------------------------------------- basis
    def _total(self) -> float | None:
        return self.counted_parameters if self.basis == "counted" else self.nominal_parameters

    def _active(self) -> float | None:
        a = self.counted_active_parameters if self.basis == "counted" else self.nominal_active_parameters
        return a if a is not None else self._total()

    def nominal(self) -> Workload:
        """This model on its published (nominal) parameter figure."""
        if self.nominal_parameters is None:
            raise NotApplicableError(f"{self.name} declares no nominal parameter figure")
        return dataclasses.replace(self, basis="nominal")

    def counted(self) -> Workload:
        """This model on the parameters counted from its graph."""
        if self.counted_parameters is None:
            raise NotApplicableError(f"{self.name} has no graph count (figures as recorded only)")
        return dataclasses.replace(self, basis="counted")

    def rank_share(self, tp: int) -> Workload:
        """The part of this model one of ``tp`` tensor-parallel ranks holds: parameters / tp
        (every matrix sharded; replicated norms ignored), and max(1, n_kv // tp) KV heads
        (a head is never split; a latent cache is not sharded)."""
        if tp <= 1:
            return self
        from latencykernel.price.kv import kv_heads_per_rank

        kv = self.kv
        if kv is not None and not kv.latent:
            kv = dataclasses.replace(kv, n_kv=kv_heads_per_rank(kv.n_kv, tp))

        def share(x: float | None) -> float | None:
            return None if x is None else x / tp

        return dataclasses.replace(
            self,
            name=f"{self.name} (one of {tp} TP ranks)",
            kv=kv,
            counted_parameters=share(self.counted_parameters),
            counted_active_parameters=share(self.counted_active_parameters),
            nominal_parameters=share(self.nominal_parameters),
            nominal_active_parameters=share(self.nominal_active_parameters),
        )

    # ---------------------------------------------------------------- floats for the cores
    @property
    def n_parameters(self) -> float:
        total = self._total()
        assert total is not None
        return total

    @property
    def n_active_parameters(self) -> float:
        active = self._active()
        assert active is not None
        return active

    def require_kv(self, argument: str = "workload") -> KvGeometry:
        if self.kv is None:
            raise NotApplicableError(f"{argument}={self.name} keeps no KV cache (no attention geometry stated)")
        return self.kv

    def kv_bytes(self, dtype_bytes: float, tp: int = 1) -> float:
        """Bytes one token's cache holds (one TP rank)."""
        return self.require_kv().bytes_per_token(dtype_bytes, tp)

    def weights_read_parameters(self, tokens: int) -> float:
        """Parameters a step over ``tokens`` tokens reads when only touched experts are read:
        dense + E_touched(tokens) · expert; all parameters for a dense model."""
        if self.experts is None:
            return self.n_parameters
        dense, per_expert = self.experts.split(self.n_parameters, self.n_active_parameters)
        return dense + self.experts.touched(tokens) * per_expert

    # ---------------------------------------------------------------- quantities
    @property
    def parameters(self) -> pint.Quantity:
        """Parameters on the workload's basis (``param``)."""
        return Q_(self.n_parameters, "param")

    @property
    def active_parameters(self) -> pint.Quantity:
        """Parameters one token's forward pass uses (all of them for a dense model)."""
        return Q_(self.n_active_parameters, "param")

    @property
    def flops_per_token(self) -> pint.Quantity:
        """Forward FLOPs per token: one multiply-add (2 FLOPs) per active parameter;
        attention over the context is not counted."""
        if self.kv is None:
            raise NotApplicableError(f"{self.name} is not a token model (no attention geometry)")
        return Q_(2.0 * self.n_active_parameters, "flop/token")

    def kv_bytes_per_token(self, kv_bytes_per_value: Any, tp: int = 1) -> pint.Quantity:
        """Cache bytes per token (``B/token``) at ``kv_bytes_per_value`` (a byte quantity)."""
        return self.require_kv().kv_bytes_per_token(kv_bytes_per_value, tp)

    def kv_bytes_read(self, kv_bytes_per_value: Any, context_tokens: Any, tp: int = 1) -> pint.Quantity:
        """Cache bytes (``B``) one sequence's decode step reads: the whole cache, except on
        sliding-window and sparse-attention layers."""
        return self.require_kv().kv_bytes_read(kv_bytes_per_value, context_tokens, tp)

    def weights_read(self, weight_bytes_per_param: Any, tokens: int) -> pint.Quantity:
        """Bytes a step over ``tokens`` tokens reads from the weights (touched experts only)."""
        return Q_(self.weights_read_parameters(tokens), "param") * weight_bytes_per_param

    def __str__(self) -> str:
        return self.name

    # ---------------------------------------------------------------- constructors
    @classmethod
    def recorded(cls, key: str) -> Workload:
        """The model mlsysim 0.3.0 registers as ``Models.*.<key>`` (``GPT2``, ``Llama3_8B``, ...)."""
        try:
            return RECORDED_WORKLOADS[key]
        except KeyError:
            raise UnknownScenarioError(
                f"no recorded workload {key!r}; recorded: {', '.join(sorted(RECORDED_WORKLOADS))}"
            ) from None

    @classmethod
    def catalog(cls, model: str, repos: Any = None, *, setting: str = "model") -> Workload:
        """The shared catalog's model ``model``, counted from its graph; ``setting`` is the
        input a missing model's error names."""
        from latencykernel.derive import counts  # lazy: the catalog layer
        from latencykernel.documents.graph import load_graph
        from latencykernel.repos import Repos

        repos = repos if repos is not None else Repos.default()
        graph = load_graph(repos.graph_path(model, setting=setting), shared=True)  # read only
        total = float(counts.parameter_count(graph))
        active = float(counts.active_parameter_count(graph))
        layers = int(counts.layer_count(graph))
        n_kv, d_h, kind, kv_layers = counts.kv_geometry(graph)  # raises for a graph without attention
        n_q, routed, top_k = _graph_heads_and_experts(graph)
        kv = KvGeometry(kind, n_kv, d_h, kv_layers, n_q, _graph_reads(graph))
        nominal = NOMINAL_PARAMETERS.get(model)
        return cls(
            name=model,
            layers=layers,
            kv=kv,
            source=f"shared catalog graph {model!r} (parameters counted from the graph)",
            counted_parameters=total,
            counted_active_parameters=active,
            nominal_parameters=nominal[0] if nominal else None,
            nominal_active_parameters=nominal[1] if nominal else None,
            basis="counted",
            hidden=graph.global_.hidden_size,
            heads=n_q,
            experts=ExpertGeometry(routed, top_k) if routed and top_k and routed > top_k else None,
            catalog_name=model,
        )


def _graph_heads_and_experts(graph: Any) -> tuple[int | None, int, int]:
    """Query heads of the first primary attention node; routed experts and top-k of the
    first GroupedGEMM (uniform across layers, as the kernel assumes)."""
    n_q: int | None = None
    routed = top_k = 0
    for kind in getattr(graph, "layer_kinds", None) or []:
        for node in getattr(kind, "nodes", None) or []:
            op = getattr(node, "op", None)
            if op == "Attention" and n_q is None and not getattr(node, "role", None):
                n_q = getattr(node, "n_q", None)
            if op == "GroupedGEMM" and not routed:
                routed = int(getattr(node, "experts", 0) or 0)
                top_k = int(getattr(node, "top_k", 0) or 0)
    return n_q, routed, top_k


def _graph_reads(graph: Any) -> tuple[LayerReads, ...]:
    """Layers whose primary attention reads less than the context: sliding windows, sparse top-k."""
    groups: dict[tuple[int, int, int], int] = {}
    for lid in graph.expand():
        for node in graph.layer_kind(lid).nodes:
            if getattr(node, "op", None) != "Attention" or getattr(node, "role", None):
                continue
            kind = getattr(node, "kind", "")
            window = int(getattr(node, "window", 0) or 0)
            if kind == "sparse_mla":
                topk = int(getattr(node, "index_topk", 0) or 0) or window
                key = (0, topk, int(getattr(node, "compress_ratio", 0) or 0))
            elif kind == "swa" and window > 0:
                key = (window, 0, 0)
            else:
                break
            groups[key] = groups.get(key, 0) + 1
            break
    return tuple(LayerReads(n, w, k, c) for (w, k, c), n in groups.items())


# Published round figures (total, active) for catalog models, where a scenario wants them.
NOMINAL_PARAMETERS: dict[str, tuple[float, float | None]] = {
    "gpt2-xl": (1.5e9, None),  # "GPT-2 (1.5B)", Radford et al. 2019
}

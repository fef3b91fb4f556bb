"""The plan: a model graph flattened once per distinct layer kind.

A step walks the plan's layer kinds, not the model's layers, and multiplies by how many
of each there are. Everything here depends on the graph and the layout only, never on a
batch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from latencykernel.errors import RefusedError
from latencykernel.price.memory import mamba2_state_bytes, matrix_state_bytes
from latencykernel.price.recurrent import chunked_recurrent_flops_per_token
from latencykernel.resolve.dtypes import ACTIVATION_BYTES, DTYPE_BYTES
from latencykernel.resolve.layout import Group, Op

__all__ = ["PlannedGEMM", "PlannedAttention", "PlannedCollective", "LayerPlan", "Plan", "build_plan", "LAUNCHES"]

# Kernel launches per graph primitive (a grouped GEMM is routing + gate/up + act + down).
LAUNCHES = {
    "GEMM": 1,
    "GroupedGEMM": 4,
    "Attention": 2,
    "Elementwise": 1,
    "RecurrentUpdate": 2,
    "AllReduce": 1,
    "AllGather": 1,
    "ReduceScatter": 1,
    "All2All": 2,
}
LATENT_KINDS = ("mla", "sparse_mla")
EMIT_CONDITIONS = ("", "tensor_parallel", "expert_parallel", "tensor_parallel_unless_sp_moe")


@dataclass
class PlannedGEMM:
    n: int
    k: int
    flops_per_token: float
    shard_n: bool  # column-parallel (TP splits N); else row-parallel (TP splits K)


@dataclass(frozen=True)
class PlannedAttention:
    q_heads: int
    kv_heads: int
    head_dim: int
    kind: str
    window: int
    role: str
    compress_ratio: int
    index_topk: int
    kv_lora_rank: int

    @property
    def holds_kv(self) -> bool:
        """A primary attention (no role) sizes the KV pages; a secondary one (an indexer)
        holds its own small cache."""
        return self.role == ""

    @property
    def read_top_k(self) -> int:
        """Tokens a decode's sparse selection reads (``price.attention.decode_read_tokens``'s
        top_k): a sparse-MLA layer's indexer top-k, else its window; 0 for dense attention."""
        if self.kind != "sparse_mla":
            return 0
        # KNOWN DIVERGENCE D9: a compressed sparse layer without top-k reads its whole context.
        return self.index_topk if self.index_topk > 0 else self.window

    @property
    def read_window(self) -> int:
        """The window bounding a decode's read (``decode_read_tokens``'s window), or 0.

        A sliding-window layer reads at most its window (vLLM's FlashAttention with
        window_size; the registry's swa pair was fitted on min(context, window)). The Go
        kernel reads the whole context here; we price the engine. See docs/divergences.md.
        """
        return self.window if self.kind == "swa" and self.window > 0 else 0


@dataclass(frozen=True)
class PlannedCollective:
    op: Op
    group: Group
    bytes_per_token: float
    routed_by_top_k: bool


@dataclass
class LayerPlan:
    id: str
    count: int = 0
    kernels: int = 0
    dense_flops_per_token: float = 0.0
    dense_weight_bytes: float = 0.0
    gemms: list[PlannedGEMM] = field(default_factory=list)
    expert_flops_per_token_per_expert: float = 0.0
    expert_weight_bytes_per_expert: float = 0.0
    top_k: int = 0
    experts: int = 0
    shared_expert_flops_per_token: float = 0.0
    shared_expert_weight_bytes: float = 0.0
    attentions: list[PlannedAttention] = field(default_factory=list)
    primary: PlannedAttention | None = None
    recurrent_kind: str = ""
    recurrent_state_bytes: float = 0.0
    recurrent_prefill_flops_per_token: float = 0.0  # chunked prefill, whole layer (all ranks)
    elementwise_bytes_per_token: float = 0.0
    collectives: list[PlannedCollective] = field(default_factory=list)


@dataclass
class Plan:
    layers: list[LayerPlan]
    head: LayerPlan
    total_layers: int
    total_kernels: int
    piecewise_segments: int
    experts: int  # max routed experts over expert layers (0 when dense)

    @property
    def has_experts(self) -> bool:
        return self.experts > 0


def _get(node: Any, key: str, default: Any = None) -> Any:
    v = getattr(node, key, None) if not isinstance(node, dict) else node.get(key)
    return default if v is None else v


def _plan_nodes(
    lp: LayerPlan,
    nodes: list[Any],
    hidden: int,
    served_weight_bytes: float,
    state_bytes: float,
    emits: Callable[[str], bool],
    where: str,
    tp: int,
) -> None:
    prev_gemm = False
    for i, node in enumerate(nodes):
        op = _get(node, "op")
        cond = _get(node, "emit", "")
        if cond not in EMIT_CONDITIONS:
            raise RefusedError(
                f"{where} node {i} ({op}) has emit condition {cond!r}, which this kernel does not know; "
                f"known conditions are {', '.join(repr(c) for c in EMIT_CONDITIONS)}",
                setting="emit",
                value=cond,
            )
        if not emits(cond):
            continue  # a skipped node does not break a GEMM fusion chain in the engine either
        lp.kernels += LAUNCHES.get(op, 1)
        wdt = _get(node, "weight_dtype")
        wb = DTYPE_BYTES[wdt] if wdt else served_weight_bytes
        if op == "GEMM":
            n, k = int(_get(node, "n")), int(_get(node, "k"))
            f = 2.0 * n * k
            lp.dense_flops_per_token += f
            lp.dense_weight_bytes += n * k * wb
            shard_n = k == hidden and n != hidden
            last = lp.gemms[-1] if lp.gemms else None
            if prev_gemm and last is not None and shard_n and last.shard_n and last.k == k:
                # vLLM fuses adjacent column-parallel projections of one input (QKV, gate/up).
                last.n += n
                last.flops_per_token += f
            else:
                lp.gemms.append(PlannedGEMM(n, k, f, shard_n))
            prev_gemm = True
            continue
        prev_gemm = False
        if op == "GroupedGEMM":
            n, k = int(_get(node, "n")), int(_get(node, "k"))
            per = 3.0 * n * k  # a gated expert: gate, up and down matrices
            lp.expert_flops_per_token_per_expert += 2.0 * per
            lp.expert_weight_bytes_per_expert += per * wb
            lp.top_k = int(_get(node, "top_k", 0))
            if lp.top_k > 0:
                lp.experts = max(lp.experts, int(_get(node, "experts", 0)))
            shared = int(_get(node, "shared_experts", 0))
            if shared > 0:
                inner = int(_get(node, "shared_intermediate_size", 0)) or n
                sh = 3.0 * inner * k * shared
                lp.shared_expert_flops_per_token += 2.0 * sh
                lp.shared_expert_weight_bytes += sh * wb
        elif op == "Attention":
            a = PlannedAttention(
                q_heads=int(_get(node, "n_q", 0)),
                kv_heads=int(_get(node, "n_kv", 0)),
                head_dim=int(_get(node, "d_h", 0)),
                kind=str(_get(node, "kind", "gqa")),
                window=int(_get(node, "window", 0)),
                role=str(_get(node, "role", "")),
                compress_ratio=int(_get(node, "compress_ratio", 0)),
                index_topk=int(_get(node, "index_topk", 0)),
                kv_lora_rank=int(_get(node, "kv_lora_rank", 0)),
            )
            lp.attentions.append(a)
            if a.holds_kv and lp.primary is None:
                lp.primary = a
        elif op == "RecurrentUpdate":
            kind = str(_get(node, "recurrent_kind"))
            lp.recurrent_kind = kind
            heads, dstate = int(_get(node, "n_heads", 0)), int(_get(node, "state_size", 0))
            # mamba2: a head_dim x state_size state per head; GDN/KDA: state_size square
            dv = int(_get(node, "head_dim", 0)) if kind == "mamba2" else dstate
            lp.recurrent_prefill_flops_per_token += chunked_recurrent_flops_per_token(heads, dstate, dv)
            sdt = _get(node, "state_dtype")
            sb = DTYPE_BYTES[sdt] if sdt in DTYPE_BYTES else state_bytes
            if kind == "mamba2":
                lp.recurrent_state_bytes += mamba2_state_bytes(
                    int(_get(node, "intermediate_size", 0)),
                    int(_get(node, "n_groups", 0)),
                    int(_get(node, "state_size", 0)),
                    int(_get(node, "conv_kernel", 0)),
                    int(_get(node, "n_heads", 0)),
                    int(_get(node, "head_dim", 0)),
                    sb,
                    tp,
                )
            else:
                lp.recurrent_state_bytes += matrix_state_bytes(
                    int(_get(node, "n_heads", 0)), int(_get(node, "state_size", 0)), sb, tp
                )
        elif op == "Elementwise":
            lp.elementwise_bytes_per_token += float(_get(node, "bytes_per_token", 0)) or 2.0 * hidden * ACTIVATION_BYTES
        elif op in ("AllReduce", "AllGather", "ReduceScatter"):
            # KNOWN DIVERGENCE D12: a TP all-reduce and the RMSNorm after it are priced as two
            # kernels where vLLM fuses them by default (TP > 1, Hopper/Blackwell). See
            # docs/divergences.md.
            # the message a token adds: the node's own (e.g. a norm's variances) or the hidden state
            per_token = float(_get(node, "bytes_per_token", 0)) or hidden * ACTIVATION_BYTES
            lp.collectives.append(PlannedCollective(Op(op), Group.TP, per_token, False))
        elif op == "All2All":
            # KNOWN DIVERGENCE D2: dispatch priced at 16 bits even where a quantized MoE kernel
            # sends fp8/fp4 activations (about 2x on w8a8 dispatch). See docs/divergences.md.
            per_token = float(_get(node, "bytes_per_token", 0)) or hidden * ACTIVATION_BYTES
            lp.collectives.append(PlannedCollective(Op.ALL2ALL, Group.EXPERT, per_token, True))


def build_plan(
    graph: Any, emits: Callable[[str], bool], served_weight_bytes: float, state_bytes: float, tp: int = 1
) -> Plan:
    """Flatten ``graph`` per layer kind under a layout's emit decisions.

    ``served_weight_bytes`` is the width weights are read at (nodes with their own
    ``weight_dtype`` keep it); ``state_bytes`` the recurrent state width; ``tp`` splits the
    recurrent state (per-rank bytes).
    """
    hidden = int(graph.global_.hidden_size)
    kinds = {lk.id: lk for lk in graph.layer_kinds}
    stack = graph.stack
    order = list(stack.prologue or []) + list(stack.pattern or []) * int(stack.repeat or 0) + list(stack.epilogue or [])
    counts: dict[str, int] = {}
    for kid in order:
        if kid not in kinds:
            raise RefusedError(
                f"graph {graph.name!r}: stack names layer kind {kid!r}, which layer_kinds does not declare "
                f"(declared: {', '.join(kinds)})",
                setting="stack",
                value=kid,
            )
        counts[kid] = counts.get(kid, 0) + 1
    layers: list[LayerPlan] = []
    for kid, count in counts.items():
        lp = LayerPlan(id=kid, count=count)
        _plan_nodes(
            lp,
            list(kinds[kid].nodes),
            hidden,
            served_weight_bytes,
            state_bytes,
            emits,
            f"graph {graph.name!r} layer kind {kid!r}",
            tp,
        )
        layers.append(lp)
    head = LayerPlan(id="head", count=1)
    _plan_nodes(
        head, list(graph.head or []), hidden, served_weight_bytes, state_bytes, emits, f"graph {graph.name!r} head", tp
    )
    total_kernels = sum(lp.kernels * lp.count for lp in layers) + head.kernels
    sparse_indexed = sum(
        lp.count
        for lp in layers
        if lp.primary is not None and lp.primary.kind == "sparse_mla" and any(not a.holds_kv for a in lp.attentions)
    )
    experts = max((lp.experts for lp in layers), default=0)
    return Plan(
        layers=layers,
        head=head,
        total_layers=len(order),
        total_kernels=total_kernels,
        piecewise_segments=len(order) + sparse_indexed + 1,
        experts=experts,
    )

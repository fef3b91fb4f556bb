"""What the model's layer graph fixes for a deployment: its plan and KV geometry, its
experts per rank, the KV block size, the decode-context interleave, the sparse-MLA page
layout and the KV bytes a token holds (each resolved once by ``new``)."""

from __future__ import annotations

from typing import Any, NamedTuple

from latencykernel.kernel.checks import check_cache_dtypes, refuse
from latencykernel.plan import LATENT_KINDS, Plan, build_plan
from latencykernel.price.experts import experts_per_rank
from latencykernel.price.kv import kv_bytes_per_token
from latencykernel.resolve.context import dcp_shards_kv
from latencykernel.resolve.dtypes import DTYPE_BYTES, cache_dtype_bytes
from latencykernel.resolve.layout import Layout, Override
from latencykernel.resolve.settings import Assumptions, hybrid_kv_manager
from latencykernel.resolve.sparse_mla import sparse_mla_backend
from latencykernel.resolve.startup import (
    check_attention_heads,
    check_block_size,
    check_experts,
    check_moe_intermediate,
    check_recurrent_heads,
)

__all__ = [
    "DS_MLA_CELL_BYTES",
    "KVGeometry",
    "Experts",
    "BlockSize",
    "Interleave",
    "KVCache",
    "graph_nodes",
    "plan_and_geometry",
    "resolve_experts",
    "resolve_block_size",
    "resolve_interleave",
    "sparse_mla_layout",
    "kv_cache",
]

DS_MLA_CELL_BYTES = {"fp8_ds_mla": 656, "nvfp4_ds_mla": 352}


class KVGeometry(NamedTuple):
    """The attention the stack holds KV for: heads and head size of the geometry that sets
    the page, its kind, the KV-holding layers and every primary attention kind."""

    n_kv: int
    d_h: int
    kind: str
    kv_layers: int
    attn_kinds: list[str]
    latent: bool
    is_dsa: bool
    hybrid: bool


class Experts(NamedTuple):
    """Routed experts (``routed``), EPLB's ``redundant`` copies, the tensor slices of each
    expert, the experts the heaviest rank holds and its share of them."""

    routed: int
    redundant: int
    tensor_shards: int
    per_rank: int
    local_share: float


class BlockSize(NamedTuple):
    size: int
    final: bool  # no later rule may change it (not hybrid; stated, or DeepSeek sparse attention)


class Interleave(NamedTuple):
    size: int
    connectors: set[Any]


class KVCache(NamedTuple):
    bytes_per_token: float
    dcp_shards_all_kv_layers: bool
    kinds: tuple[tuple[int, int], ...]
    hybrid: bool


def _kv_geometry(graph: Any, plan: Plan) -> tuple[int, int, str, int, list[str]]:
    """(n_kv, d_h, kind, KV-holding layers, every primary attention kind in the stack).
    With several geometries, the last KV-holding kind in layer_kinds order sets it."""
    n_kv = d_h = 0
    kind = ""
    for lk in graph.layer_kinds:
        for lp in plan.layers:
            if lp.id == lk.id and lp.primary is not None:
                n_kv, d_h, kind = lp.primary.kv_heads, lp.primary.head_dim, lp.primary.kind
    kv_layers = sum(lp.count for lp in plan.layers if lp.primary is not None)
    kinds = [lp.primary.kind for lp in plan.layers if lp.primary is not None]
    return n_kv, d_h, kind, kv_layers, kinds


def graph_nodes(graph: Any, op: str) -> list[tuple[str, Any]]:
    """(layer kind id, node) for every node of ``op`` in a layer kind the stack uses."""
    used = set(graph.expand())
    return [(lk.id, n) for lk in graph.layer_kinds if lk.id in used for n in lk.nodes if n.op == op]


def plan_and_geometry(graph: Any, layout: Layout, eng: Any, served: str) -> tuple[Plan, KVGeometry]:
    """The plan, then the KV geometry, with the head-count and cache-dtype checks vLLM makes."""
    state_bytes = 4.0
    if eng.mamba_ssm_cache_dtype in ("float16", "bfloat16"):
        state_bytes = 2.0
    try:
        plan = build_plan(graph, layout.emits, DTYPE_BYTES[served], state_bytes, layout.tp)
    except KeyError as e:  # pragma: no cover - the graph model constrains dtypes
        raise refuse(f"unknown weight dtype {e}", "weight_dtype", str(e)) from None
    n_kv, d_h, kv_kind, kv_layers, attn_kinds = _kv_geometry(graph, plan)
    check_attention_heads(
        layout.tp,
        [
            (lp.id, lp.primary.q_heads, lp.primary.kv_heads, lp.primary.kind in LATENT_KINDS)
            for lp in plan.layers
            if lp.primary is not None
        ],
    )
    check_recurrent_heads(
        layout.tp,
        [
            (kid, str(n.recurrent_kind), int(n.n_heads or 0), int(n.n_groups or 0))
            for kid, n in graph_nodes(graph, "RecurrentUpdate")
        ],
    )
    check_cache_dtypes(eng, kv_kind)
    latent = kv_kind in LATENT_KINDS
    is_dsa = kv_kind == "sparse_mla" and d_h == 576
    hybrid = any(lp.recurrent_kind for lp in plan.layers)
    return plan, KVGeometry(n_kv, d_h, kv_kind, kv_layers, attn_kinds, latent, is_dsa, hybrid)


def resolve_experts(plan: Plan, graph: Any, par: Any, eng: Any, layout: Layout, assumptions: Assumptions) -> Experts:
    """Routed experts, EPLB's redundant copies and how the heaviest rank holds them."""
    E = plan.experts
    if E > 0 and par.enable_expert_parallel is None:
        assumptions.add("enable_expert_parallel", "false", "unstated; vLLM's default (experts split by tensor slices)")
    eplb = eng.eplb
    R = (eplb.num_redundant_experts or 0) if (eplb is not None and eplb.enable_eplb) else 0
    if layout.expert_width <= 1:
        # KNOWN DIVERGENCE D4: with PCP and EP off vLLM slices experts 1/(dp·pcp·tp); we use 1/(dp·tp).
        expert_tensor_shards = layout.tp * max(layout.dp, 1)
    else:
        expert_tensor_shards = 1
    experts_rank, local_share = 0, 1.0
    if E > 0:
        stated_r = (eplb.num_redundant_experts or 0) if eplb is not None else 0
        check_experts(E, R, layout.expert_width, bool(eplb is not None and eplb.enable_eplb), stated_r)
        if layout.expert_width <= 1:
            check_moe_intermediate(
                expert_tensor_shards, [(kid, int(n.n)) for kid, n in graph_nodes(graph, "GroupedGEMM")]
            )
        base, heaviest, _, _ = experts_per_rank(E + R, max(layout.expert_width, 1))
        if base == 0:
            raise refuse(
                f"expert-parallel width {layout.expert_width} exceeds the model's {E + R} physical "
                f"experts, so some ranks would hold none; lower tp·dp or disable "
                f"enable_expert_parallel",
                "parallel.enable_expert_parallel",
                True,
            )
        experts_rank, local_share = heaviest, heaviest / (E + R)
    return Experts(E, R, expert_tensor_shards, experts_rank, local_share)


def resolve_block_size(eng: Any, geo: KVGeometry, assumptions: Assumptions) -> BlockSize:
    """The KV block size: stated, or vLLM's default (64 for DeepSeek sparse attention)."""
    is_dsa, hybrid = geo.is_dsa, geo.hybrid
    if is_dsa:
        if eng.block_size is not None and eng.block_size % 64 != 0:
            raise refuse(
                f"engine.block_size {eng.block_size} is not a multiple of 64, which DeepSeek sparse "
                f"attention pages need; use 64",
                "engine.block_size",
                eng.block_size,
            )
        block = eng.block_size or 64
        if eng.block_size is None:
            assumptions.add("block_size", 64, "unstated; vLLM pages DeepSeek sparse attention in 64-token blocks")
    else:
        block = eng.block_size or 16
        if eng.block_size is None:
            assumptions.add("block_size", 16, "unstated; vLLM v0.31.0's default")
        check_block_size(block, eng.block_size is not None)
    block_final = (not hybrid) and (eng.block_size is not None or is_dsa)
    return BlockSize(block, block_final)


def resolve_interleave(
    deployment: Any, eng: Any, dcp: int, block: BlockSize, is_dsa: bool, overrides: list[Override]
) -> Interleave:
    """The decode-context interleave (``engine.cp_kv_cache_interleave_size``) and the KV
    connectors the deployment names."""
    interleave = 1
    connectors = {
        getattr(getattr(deployment, "offload", None), "connector", None),
        getattr(getattr(deployment, "pd_transfer", None), "connector", None),
    }
    nixl = "NixlConnector" in connectors
    multi = "MultiConnector" in connectors
    if dcp > 1:
        stated = eng.cp_kv_cache_interleave_size
        if stated is not None:
            misfit = stated > block.size or block.size % stated != 0
            # Under a NixlConnector alone vLLM tolerates a misfit only where the block size may
            # still change (a stated size on a hybrid model); a final or assumed block is refused.
            block_assumed = eng.block_size is None and not is_dsa
            if misfit and (multi or not nixl or block.final or block_assumed):
                raise refuse(
                    f"engine.cp_kv_cache_interleave_size {stated} must divide engine.block_size {block.size} "
                    f"and not exceed it; use a divisor of {block.size}",
                    "engine.cp_kv_cache_interleave_size",
                    stated,
                )
            interleave = stated
        elif multi:
            raise refuse(
                "with a MultiConnector, vLLM's decode-context interleave cannot be known; state "
                "engine.cp_kv_cache_interleave_size",
                "engine.cp_kv_cache_interleave_size",
                None,
            )
        elif nixl and block.size > 1:
            interleave = block.size
            overrides.append(
                Override(
                    "cp_kv_cache_interleave_size",
                    "1",
                    str(block.size),
                    "NixlConnector transfers whole blocks, so vLLM interleaves by block",
                )
            )
    return Interleave(interleave, connectors)


def sparse_mla_layout(
    plan: Plan,
    chip: Any,
    eng: Any,
    layout: Layout,
    combine: str,
    is_dsa: bool,
    overrides: list[Override],
    assumptions: Assumptions,
) -> str:
    """The sparse-MLA backend vLLM picks and the cache layout it allocates ('' for the
    stated or default cache dtype's own layout)."""
    layout_dtype = eng.cache_dtype or ""
    if is_dsa:
        heads = max((a.q_heads for lp in plan.layers for a in lp.attentions if a.kind == "sparse_mla"), default=0)
        be = sparse_mla_backend(
            chip=chip.name,
            cache=eng.cache_dtype,
            heads_per_rank=max(heads // layout.tp, 1),
            sm100=(chip.TFlopsNVFP4 or 0) > 0,
            tp=layout.tp,
            dcp=layout.dcp,
            pcp=layout.pcp,
            combine=combine,
        )
        if be.layout != (eng.cache_dtype or "auto") and eng.cache_dtype is not None:
            overrides.append(
                Override(
                    "cache_dtype", eng.cache_dtype, be.layout, f"the {be.name} backend allocates its packed page layout"
                )
            )
        layout_dtype = be.layout if be.layout != "auto" else ""
        if be.name == "FLASHINFER_MLA_SPARSE_SM90":
            assumptions.add("sparse_mla_backend", be.name, "needs FlashInfer >= 0.6.18 installed")
    return layout_dtype


def kv_cache(
    plan: Plan,
    eng: Any,
    geo: KVGeometry,
    layout: Layout,
    served: str,
    layout_dtype: str,
    connectors: set[Any],
    assumptions: Assumptions,
) -> KVCache:
    """The KV bytes a token holds, whether DCP shards every KV layer, and vLLM's hybrid
    KV-cache manager groups."""
    dcp = layout.dcp
    cache_bytes = cache_dtype_bytes(eng.cache_dtype, served)
    kv_bpt = kv_bytes_per_token(geo.n_kv, layout.tp, geo.d_h, geo.kv_layers, cache_bytes, geo.latent)
    if geo.latent and layout_dtype in DS_MLA_CELL_BYTES:
        kv_bpt = float(DS_MLA_CELL_BYTES[layout_dtype] * geo.kv_layers)
    dcp_all = dcp > 1 and bool(geo.attn_kinds) and all(dcp_shards_kv(k) for k in geo.attn_kinds)
    kv_kinds, hybrid_kv = hybrid_kv_manager(plan.layers, eng, connectors, dcp, geo.hybrid, geo.latent, assumptions)
    return KVCache(kv_bpt, dcp_all, kv_kinds, hybrid_kv)

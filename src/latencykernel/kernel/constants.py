"""What a step needs, resolved once at construction: plain numbers, no lookups by string."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any

from latencykernel.plan import Plan
from latencykernel.resolve.layout import Group, Layout, Op

__all__ = ["CollectiveCost", "StepConstants"]


@dataclass(frozen=True)
class CollectiveCost:
    """One collective (op, group): its law's parameters and where its bytes travel."""

    floor_s: float
    peak_bytes_per_s: float
    transition_bytes_per_s: float
    crosses_nodes: bool  # charged to NIC, bytes multiplied by span
    span: float


@dataclass(frozen=True)
class StepConstants:
    """The batch-independent numbers one deployment pool's step price reads, resolved once
    by ``kernel.build.new`` (``Kernel.constants``). Frozen, and its mappings are read-only
    views: a kernel never changes after it is built. Seconds, bytes and bytes per second
    throughout; every value is per rank.

    plan, layout           the per-kind layer plan and the parallel layout
    tp, dcp, pcp           tensor, decode-context and prefill-context parallel widths
    dcp_interleave         DCP's interleave (tokens dealt to a rank at a time)
    dcp_combine            how DCP combines partial attention outputs ("a2a" or gather+reduce)
    sm_count, nvfp4_native the chip's SMs; whether it runs nvfp4 natively
    hbm_bytes_per_s, peak_flops_per_s   HBM bandwidth and the served dtype's dense peak
    eps_max, m_half        the GEMM ramp (``price.ramp.efficiency``)
    linear_m_half          the ramp's half point for the dense linear layers (every GEMM but
                           the routed experts; ``gemm_m_half_linear_<dtype>``, else m_half)
    shape_aware, n_half, k_half   the shape-aware ramp's half points (``shape_efficiency``)
    total_experts, experts_per_rank, local_expert_share, expert_tensor_shards, moe_imbalance,
    moe_concentration      routed-expert placement and routing skew (``price.experts``)
    attn_floor_s, attn_rate_bytes_per_s   the part-wide decode-attention pair
    attn_by_kind           the decode-attention pair per attention kind, where measured
    prefill_floor_s, prefill_scale        prefill-attention floor and efficiency scale
    recurrent_by_kind      (floor_s, tokens_per_s) of each recurrent kind's update, per rank
                           (``price.recurrent.rank_decode_rate``)
    collectives            each (op, group) a step may charge, with its price (None: unpriced)
    kv_bytes_per_token, kv_layers, block_size   KV geometry (``price.kv``)
    dcp_shards_all_kv_layers, mla_context_chunk DCP capacity rule; MLA context-gather chunk
    host_*, graph_*, capture_tokens, uniform_decode_width   host dispatch (``price.host``)
    nvlink_bytes_per_s, nic_bytes_per_s   transfer rates (KV hand-off between pools)
    extra                  further named rates (host_link_bytes_per_s)
    primary_pairs, secondary_pairs        derived: each layer kind's (floor_s, rate) pairs
    gemm_read_overlap      derived: a dense GEMM's weight read overlaps its own compute
                           (``price.ramp.gemm_read_beyond_compute_s``); true for a plan
                           without routed experts. divergence D10 (see
                           docs/divergences.md): a plan with routed experts keeps the Go
                           kernel's sum of GEMM compute and weight read.
    """

    plan: Plan
    layout: Layout
    tp: int
    dcp: int
    pcp: int
    dcp_interleave: int
    dcp_combine: str
    sm_count: int
    nvfp4_native: bool
    hbm_bytes_per_s: float
    peak_flops_per_s: float
    eps_max: float
    m_half: float
    linear_m_half: float
    shape_aware: bool
    n_half: float
    k_half: float
    # experts
    total_experts: int
    experts_per_rank: int
    local_expert_share: float
    expert_tensor_shards: int
    moe_imbalance: float
    moe_concentration: float  # price.experts.expert_miss_fraction's α (0: uniform routing)
    # attention: (floor_s, rate_bytes_per_s) part-wide and per kind
    attn_floor_s: float
    attn_rate_bytes_per_s: float
    attn_by_kind: Mapping[str, tuple[float, float]]
    prefill_floor_s: float
    prefill_scale: float
    recurrent_by_kind: Mapping[str, tuple[float, float]]  # (floor_s, tokens_per_s)
    collectives: Mapping[tuple[Op, Group], CollectiveCost | None]
    # KV
    kv_bytes_per_token: float
    kv_layers: int
    block_size: int
    dcp_shards_all_kv_layers: bool
    mla_context_chunk: int
    # host
    host_launch_per_kernel_s: float
    host_replay_s: float
    host_eager_per_layer_s: float
    host_per_request_s: float  # price.host.step_requests_host_s: per request a step schedules
    graph_decode: str
    graph_other: str
    capture_tokens: int
    uniform_decode_width: int
    # transfers
    nvlink_bytes_per_s: float
    nic_bytes_per_s: float
    extra: Mapping[str, float] = field(default_factory=dict)
    # (floor_s, rate) of each layer kind's primary attention, and of its secondary ones, in
    # plan order: resolved here so a step looks nothing up by kind.
    primary_pairs: tuple[tuple[float, float], ...] = ()
    secondary_pairs: tuple[tuple[tuple[float, float], ...], ...] = ()
    gemm_read_overlap: bool = False

    def __post_init__(self) -> None:
        for name in _MAPPINGS:
            object.__setattr__(self, name, MappingProxyType(dict(getattr(self, name))))
        # KNOWN DIVERGENCE D10: only a plan without routed experts prices a GEMM as
        # max(compute, weight read). On MoE plans the summed weight read stands in for the
        # per-layer fixed cost of routing, permutation and small-batch grouped GEMMs, which
        # is not priced separately; changing both there moves the Go guide's pinned figures
        # (DeepSeek-V3, tests/test_step_guide.py), so it is kept.
        object.__setattr__(
            self,
            "gemm_read_overlap",
            not any(lp.expert_flops_per_token_per_expert > 0 for lp in self.plan.layers),
        )
        object.__setattr__(
            self,
            "primary_pairs",
            tuple(self.attention_pair(lp.primary.kind) if lp.primary else (0.0, 0.0) for lp in self.plan.layers),
        )
        object.__setattr__(
            self,
            "secondary_pairs",
            tuple(
                tuple(self.attention_pair(a.kind) for a in lp.attentions if not a.holds_kv) for lp in self.plan.layers
            ),
        )

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle and deep-copy through plain dicts (a read-only mapping view cannot be)."""
        values = {f.name: getattr(self, f.name) for f in fields(self) if f.init}
        for name in _MAPPINGS:
            values[name] = dict(values[name])
        return (_rebuild, (values,))

    def attention_pair(self, kind: str) -> tuple[float, float]:
        """(floor_s, rate_bytes_per_s) for decode attention of ``kind``: its own pair when the
        registry measured one, else the part-wide pair."""
        return self.attn_by_kind.get(kind, (self.attn_floor_s, self.attn_rate_bytes_per_s))


_MAPPINGS = ("attn_by_kind", "recurrent_by_kind", "collectives", "extra")


def _rebuild(values: dict[str, Any]) -> StepConstants:
    return StepConstants(**values)

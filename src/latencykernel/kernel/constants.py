"""What a step needs, resolved once at construction: plain numbers, no lookups by string."""

from __future__ import annotations

from dataclasses import dataclass, field

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


@dataclass
class StepConstants:
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
    shape_aware: bool
    n_half: float
    k_half: float
    # experts
    total_experts: int
    experts_per_rank: int
    local_expert_share: float
    expert_tensor_shards: int
    moe_imbalance: float
    # attention: (floor_s, rate_bytes_per_s) part-wide and per kind
    attn_floor_s: float
    attn_rate_bytes_per_s: float
    attn_by_kind: dict[str, tuple[float, float]]
    prefill_floor_s: float
    prefill_scale: float
    recurrent_by_kind: dict[str, tuple[float, float]]  # (floor_s, tokens_per_s)
    collectives: dict[tuple[Op, Group], CollectiveCost | None]
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
    graph_decode: str
    graph_other: str
    capture_tokens: int
    uniform_decode_width: int
    # transfers
    nvlink_bytes_per_s: float
    nic_bytes_per_s: float
    extra: dict[str, float] = field(default_factory=dict)
    # (floor_s, rate) of each layer kind's primary attention, and of its secondary ones, in
    # plan order: resolved here so a step looks nothing up by kind.
    primary_pairs: tuple[tuple[float, float], ...] = ()
    secondary_pairs: tuple[tuple[tuple[float, float], ...], ...] = ()

    def __post_init__(self) -> None:
        self.primary_pairs = tuple(
            self.attention_pair(lp.primary.kind) if lp.primary else (0.0, 0.0) for lp in self.plan.layers
        )
        self.secondary_pairs = tuple(
            tuple(self.attention_pair(a.kind) for a in lp.attentions if not a.holds_kv) for lp in self.plan.layers
        )

    def attention_pair(self, kind: str) -> tuple[float, float]:
        """(floor_s, rate_bytes_per_s) for decode attention of ``kind``: its own pair when the
        registry measured one, else the part-wide pair."""
        return self.attn_by_kind.get(kind, (self.attn_floor_s, self.attn_rate_bytes_per_s))

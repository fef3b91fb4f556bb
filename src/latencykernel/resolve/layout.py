"""Parallel layout: group widths, which groups leave a node, and how far.

vLLM numbers ranks DP × PP × PCP × TP with TP innermost, and a node holds consecutive
ranks, so the members of a group sit ``stride`` ranks apart.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum

from latencykernel.price.collective import all_to_all_span, ring_span

__all__ = ["Op", "Group", "Override", "Layout", "resolve_layout"]


class Op(str, Enum):
    ALL_REDUCE = "AllReduce"
    ALL_GATHER = "AllGather"
    REDUCE_SCATTER = "ReduceScatter"
    ALL2ALL = "All2All"


class Group(str, Enum):
    TP = "tp"
    EXPERT = "expert"
    DCP = "dcp"
    PCP = "pcp"


@dataclass(frozen=True)
class Override:
    """A setting the engine resolves differently from what the deployment asked."""

    field: str
    requested: str
    resolved: str
    reason: str


@dataclass(frozen=True)
class Layout:
    tp: int
    pp: int
    dp: int
    pcp: int  # floored at 1
    dcp: int  # floored at 1
    ep_enabled: bool
    expert_width: int  # tp·max(dp, pcp) with EP on, else 1
    moe_group_width: int  # the group MoE tokens are exchanged over
    gpus_per_node: int
    rack_gpus: int  # GPUs in one NVLink domain when the rack is one, else 0
    sequence_parallel_moe: bool
    custom_all_reduce: bool
    all2all_backend: str
    overrides: tuple[Override, ...] = field(default=())

    @property
    def moe_group(self) -> int:
        return max(self.moe_group_width, self.expert_width)

    @property
    def widest(self) -> int:
        return max(self.tp, self.moe_group_width, self.tp * self.pcp)

    @property
    def nodes_spanned(self) -> int:
        if self.gpus_per_node <= 0:
            return 1
        if self.rack_gpus > 0 and self.widest <= self.rack_gpus:
            return 1
        return math.ceil(self.widest / self.gpus_per_node)

    def emits(self, condition: str | None) -> bool:
        """Whether a graph node with this ``emit`` condition runs under this layout.
        Unknown conditions are rejected earlier (plan)."""
        if not condition:
            return True
        if condition == "tensor_parallel":
            return self.tp > 1
        if condition == "expert_parallel":
            return self.moe_group > 1
        if condition == "tensor_parallel_unless_sp_moe":
            return self.tp > 1 and not self.sequence_parallel_moe
        raise ValueError(condition)

    def routed_all2all(self) -> bool:
        """True when the MoE dispatch is point-to-point (bytes scale with top_k)."""
        if not self.ep_enabled:
            return False
        return self.all2all_backend not in ("", "naive", "allgather_reducescatter")

    def group_size(self, group: Group) -> int:
        if group is Group.TP:
            return self.tp
        if group is Group.EXPERT:
            return max(self.moe_group, 1)
        if group is Group.DCP:
            return self.dcp
        return self.pcp

    def stride(self, group: Group) -> int:
        if group is Group.PCP:
            return self.tp
        if group is Group.DCP and self.pcp > 1 and self.dcp <= self.pcp:
            return self.tp
        return 1

    def per_node(self, group: Group) -> float:
        if self.gpus_per_node <= 0:
            return math.inf
        return max(self.gpus_per_node // self.stride(group), 1)

    def crosses_nodes(self, group: Group) -> bool:
        """Whether a group of this axis has members on more than one node (a rack that is
        one NVLink domain counts as one node)."""
        if self.gpus_per_node <= 0:
            return False
        width = self.group_size(group)
        if width <= self.per_node(group):
            return False
        block = width * self.stride(group)  # the rank span of one group
        if self.rack_gpus > 0 and block <= self.rack_gpus:
            # groups are aligned to multiples of their block; one straddles a domain boundary
            # only when the domain is not a whole number of blocks and more ranks exist
            world = self.tp * self.pcp * max(self.dp, 1) * max(self.pp, 1)
            if self.rack_gpus % block == 0 or world <= self.rack_gpus:
                return False
        return True

    def span_for(self, op: Op, group: Group, ratio: float) -> float:
        """Byte multiplier of a node-crossing collective (see price.collective)."""
        g = self.group_size(group)
        p = self.per_node(group)
        if op is Op.ALL2ALL and (group is not Group.EXPERT or self.routed_all2all()):
            return all_to_all_span(g, p, ratio)
        return ring_span(g, p, ratio)


def resolve_layout(
    *,
    tp: int,
    pp: int,
    dp: int,
    pcp: int | None,
    dcp: int | None,
    ep_enabled: bool,
    gpus_per_node: int,
    rack_gpus: int,
    all2all_backend: str | None,
    sp_moe_backends: frozenset[str],
    custom_all_reduce_widths: frozenset[int],
    disable_custom_all_reduce: bool | None,
    allreduce_backend: str | None,
) -> Layout:
    """Resolve widths and the all-reduce backend (vLLM v0.31.0 rules)."""
    pcp_w = max(pcp or 1, 1)
    dcp_w = max(dcp or 1, 1)
    expert_width = tp * max(dp, pcp_w) if ep_enabled else 1
    moe_group_width = expert_width
    if not ep_enabled and dp > 1:
        moe_group_width = tp * pcp_w * dp
    backend = all2all_backend or ""
    sp_moe = bool(ep_enabled and tp > 1 and dp > 1 and backend in sp_moe_backends)

    overrides: list[Override] = []
    requested = not (disable_custom_all_reduce is True or allreduce_backend == "nccl")
    custom = requested
    if requested:
        if tp not in custom_all_reduce_widths:
            custom = False
            overrides.append(
                Override(
                    "allreduce_backend",
                    "custom",
                    "nccl",
                    f"vLLM's custom all-reduce supports tensor-parallel widths "
                    f"{sorted(custom_all_reduce_widths)}, not {tp}",
                )
            )
        elif gpus_per_node > 0 and tp > gpus_per_node and not rack_gpus:
            custom = False
            overrides.append(
                Override(
                    "allreduce_backend",
                    "custom",
                    "nccl",
                    "the tensor-parallel group spans nodes without a multi-node NVLink domain",
                )
            )
    return Layout(
        tp=tp,
        pp=pp,
        dp=dp,
        pcp=pcp_w,
        dcp=dcp_w,
        ep_enabled=ep_enabled,
        expert_width=expert_width,
        moe_group_width=moe_group_width,
        gpus_per_node=gpus_per_node,
        rack_gpus=rack_gpus,
        sequence_parallel_moe=sp_moe,
        custom_all_reduce=custom,
        all2all_backend=backend,
        overrides=tuple(overrides),
    )

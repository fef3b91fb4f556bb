"""Fixed memory per rank: weights, activations, CUDA graphs, communication buffers, EPLB."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from latencykernel.errors import RefusedError
from latencykernel.plan import LATENT_KINDS
from latencykernel.price.memory import activation_peak_bytes, snap_declared_width
from latencykernel.resolve.dtypes import DTYPE_BYTES

if TYPE_CHECKING:
    from latencykernel.kernel.constants import StepConstants
    from latencykernel.resolve.coefficients import Coefficients

__all__ = ["MemoryBreakdown", "fixed_memory"]

GIB = 1 << 30


@dataclass(frozen=True)
class MemoryBreakdown:
    """Bytes one rank holds whatever the requests: the weights it stores, the peak of a
    forward pass's activations, captured CUDA graphs, buffers that scale with the deployment
    (all-to-all dispatch buffers), and redundant EPLB experts."""

    weights: int
    activation_peak: int
    cuda_graph: int
    comm_buffers: int
    eplb_redundant: int

    @property
    def total(self) -> int:
        return self.weights + self.activation_peak + self.cuda_graph + self.comm_buffers + self.eplb_redundant

    def gib(self) -> dict[str, float]:
        return {
            k: getattr(self, k) / GIB
            for k in ("weights", "activation_peak", "cuda_graph", "comm_buffers", "eplb_redundant", "total")
        }


def _need(coeffs: Coefficients, name: str) -> float:
    v = coeffs.get(name)
    if v is None:
        raise RefusedError(
            f"memory occupancy needs {name}; list cost-model-memory and cost-model-primitives among the "
            f"scenario's coefficients ({coeffs.near(name)})",
            setting="coefficients",
            value=name,
        )
    return v


def _declared(coeffs: Coefficients, prefix: str) -> list[int]:
    out = []
    for name in coeffs.names():
        if name.startswith(prefix) and name.endswith("rank"):
            tail = name[len(prefix) : -len("rank")]
            if tail.isdigit():
                out.append(int(tail))
    return out


def fixed_memory(
    *,
    consts: StepConstants,
    coeffs: Coefficients,
    graph: Any,
    mode_name: str,
    max_batched_tokens: int,
    served_bytes: float,
    eplb_redundant: int,
) -> tuple[MemoryBreakdown, int]:
    """(fixed bytes per rank, bytes held before the engine measures its memory budget).

    weights = Σ count · (dense/tp + expert_bytes · experts_per_rank / expert_tensor_shards
              + shared/tp) + (head + vocab · hidden · max(bytes(checkpoint dtype), 2)) / tp
    activation_peak = max(buffers · max_num_batched_tokens · width · 2, scratch floor)
    pre-snapshot = NCCL communicator (when any group is wider than 1) + engine workspace
    """
    plan, layout, tp = consts.plan, consts.layout, consts.tp
    weights = 0.0
    eplb = 0.0
    for lp in plan.layers:
        w = lp.dense_weight_bytes / tp
        if lp.expert_weight_bytes_per_expert > 0:
            w += lp.expert_weight_bytes_per_expert * consts.experts_per_rank / consts.expert_tensor_shards
            w += lp.shared_expert_weight_bytes / tp
            if eplb_redundant > 0:
                eplb += (
                    lp.count
                    * lp.expert_weight_bytes_per_expert
                    * eplb_redundant
                    / max(layout.expert_width, 1)
                    / consts.expert_tensor_shards
                )
        weights += lp.count * w
    g = graph.global_
    # Embedding tables are not quantized: held at 16 bits unless the checkpoint is wider.
    embed = g.vocab_size * g.hidden_size * max(DTYPE_BYTES[g.weight_dtype], 2)
    weights += (plan.head.dense_weight_bytes + embed) / tp
    weights -= eplb  # the heaviest rank's expert count already includes the redundant ones

    family = "moe" if plan.has_experts else "dense"
    prefix = f"activation_buffer_count_{family}_"
    n = snap_declared_width(min(layout.tp, 8), _declared(coeffs, prefix))
    buffers = _need(coeffs, f"{prefix}{n}rank")
    widths = [
        lp.primary.q_heads * lp.primary.head_dim
        for lp in plan.layers
        if lp.primary is not None and lp.primary.kind not in LATENT_KINDS
    ]
    if any(lp.primary is not None and lp.primary.kind in LATENT_KINDS for lp in plan.layers):
        widths.append(g.hidden_size)
    width = max(widths) if widths else g.hidden_size
    act = activation_peak_bytes(buffers, max_batched_tokens, width, _need(coeffs, "activation_scratch_floor_bytes"))
    graph_bytes = _need(coeffs, f"cudagraph_capture_bytes_{mode_name.lower()}")

    any_group = layout.tp > 1 or layout.moe_group > 1 or layout.pcp > 1 or layout.dcp > 1
    pre = _need(coeffs, "engine_workspace_bytes")
    if any_group:
        c = snap_declared_width(layout.tp, _declared(coeffs, "nccl_communicator_bytes_"))
        pre += _need(coeffs, f"nccl_communicator_bytes_{c}rank")
    # KNOWN DIVERGENCE D8: all-to-all dispatch buffers under expert parallelism are not sized
    # (no coefficient exists); new() records the assumption where it applies.
    comm = 0.0
    return MemoryBreakdown(int(weights), int(act), int(graph_bytes), int(comm), int(eplb)), int(pre)

"""Collectives: time for a message, and how much longer a group that leaves its node takes."""

from __future__ import annotations

import math

__all__ = [
    "collective_time_s",
    "floor_and_rate_s",
    "span",
    "ring_span",
    "all_to_all_span",
    "flat_span",
]


# Where the transition regime ends: the registry's sweeps fit r_transition over messages of
# about 64 KiB-8 MiB, and vLLM runs its custom all-reduce only below 8 MiB
# (vllm/distributed/device_communicators/custom_all_reduce.py: CustomAllreduce max_size
# 8192 * 1024, should_custom_ar: size < max_size), handing larger messages to NCCL.
LARGE_MESSAGE_BYTES = 8 * 1024 * 1024


def collective_time_s(
    message_bytes: float, transition_rate_bytes_per_s: float, peak_rate_bytes_per_s: float, floor_s: float
) -> float:
    """Three-parameter collective law, with the peak rate for bytes beyond 8 MiB.

    t(b) = max(floor + min(b, K) / r_transition + max(b − K, 0) / r_fast, b / r_peak)

    K = ``LARGE_MESSAGE_BYTES`` (8 MiB), r_fast = max(r_transition, r_peak): the
    transition rate governs the 64 KiB–8 MiB range where decode collectives land, and each
    byte beyond K moves at the peak rate, the highest rate the sweep reached (its largest,
    hundreds-of-MiB messages). Below K (and whenever r_peak ≤ r_transition) this is the
    registry's law max(floor + b / r_transition, b / r_peak). Floor alone for an empty
    message; +inf without a peak rate; without a transition rate, max(floor, b / r_peak).

    Evidence: with r_transition < r_peak (every measured H100/H200/B200 all-reduce lane,
    e.g. 8 × H200 fp16: 104.25 against 134.26 GB/s) the registry's law never reaches the
    peak, so it priced each large message slower than the sweep measured it: a Llama-3.1-70B
    TP8 8k prefill on H200 paid 207 ms of all-reduce against 120 ms of SM, and on the
    InferenceX fit half the closed form's TTFT of dense TP8 8k1k sweeps at 4 clients came
    out 1.28x (H200) and 1.40x (H100) measured (docs/accuracy.md).
    """
    if message_bytes <= 0:
        return floor_s
    if peak_rate_bytes_per_s <= 0:
        return math.inf
    if transition_rate_bytes_per_s <= 0:
        return max(floor_s, message_bytes / peak_rate_bytes_per_s)
    if message_bytes > LARGE_MESSAGE_BYTES and peak_rate_bytes_per_s > transition_rate_bytes_per_s:
        return (
            floor_s
            + LARGE_MESSAGE_BYTES / transition_rate_bytes_per_s
            + (message_bytes - LARGE_MESSAGE_BYTES) / peak_rate_bytes_per_s
        )  # above b / r_peak already
    return max(floor_s + message_bytes / transition_rate_bytes_per_s, message_bytes / peak_rate_bytes_per_s)


def floor_and_rate_s(message_bytes: float, rate_bytes_per_s: float, floor_s: float) -> float:
    """Two-parameter transfer law: t(b) = max(floor, b / rate).

    floor for an empty transfer; +inf without a rate.
    """
    if message_bytes <= 0:
        return floor_s
    if rate_bytes_per_s <= 0:
        return math.inf
    return max(floor_s, message_bytes / rate_bytes_per_s)


def span(crossing_steps: float, total_steps: float, intra_to_inter_ratio: float) -> float:
    """Slow-down of a collective some of whose steps cross the slower fabric.

    span = 1 + (ratio − 1) · crossing / total

    where ratio = intra-node bandwidth / inter-node bandwidth. 1 when nothing crosses, the
    total is empty, or the ratio is not a finite number above 1.
    """
    r = intra_to_inter_ratio
    if crossing_steps <= 0 or total_steps <= 0 or not math.isfinite(r) or r <= 1:
        return 1.0
    return 1.0 + (r - 1.0) * crossing_steps / total_steps


def flat_span(group: int, per_node: float, ratio: float) -> float:
    """Every step crosses: span(g−1, g−1, ratio) for a group wider than a node, else 1."""
    if group <= 1 or per_node <= 0 or group <= per_node:
        return 1.0
    return span(group - 1, group - 1, ratio)


def ring_span(group: int, per_node: float, ratio: float) -> float:
    """A ring over ``group`` ranks laid out ``per_node`` to a node.

    span = span(g/per_node − 1, g − 1, ratio): of its g − 1 steps, one per node boundary
    crosses the fabric. A group that does not fill whole nodes is priced as flat.
    """
    if group <= 1 or per_node <= 0:
        return 1.0
    if group % per_node != 0:
        return flat_span(group, per_node, ratio)
    return span(group / per_node - 1, group - 1, ratio)


def all_to_all_span(group: int, per_node: float, ratio: float) -> float:
    """An all-to-all: of the g − 1 peers, g − per_node are on other nodes.

    span = span(g − per_node, g − 1, ratio)
    """
    if group <= 1 or per_node <= 0:
        return 1.0
    return span(group - per_node, group - 1, ratio)

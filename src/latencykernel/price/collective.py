"""Collectives: time for a message, and how much longer a group that leaves its node takes."""

from __future__ import annotations

import math

__all__ = ["collective_time_s", "floor_and_rate_s", "span", "ring_span", "all_to_all_span", "flat_span"]


def collective_time_s(
    message_bytes: float, transition_rate_bytes_per_s: float, peak_rate_bytes_per_s: float, floor_s: float
) -> float:
    """Three-parameter collective law.

    t(b) = max(floor + b / r_transition, b / r_peak)

    floor alone for an empty message; +inf without a peak rate; without a transition
    rate it falls back to max(floor, b / r_peak). The transition rate governs the
    64 KiB–8 MiB range where prefill collectives land; the peak rate is the asymptote.
    """
    if message_bytes <= 0:
        return floor_s
    if peak_rate_bytes_per_s <= 0:
        return math.inf
    if transition_rate_bytes_per_s <= 0:
        return max(floor_s, message_bytes / peak_rate_bytes_per_s)
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

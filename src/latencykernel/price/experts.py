"""Routed experts: how they spread over ranks, and how many a batch touches."""

from __future__ import annotations

__all__ = ["experts_per_rank", "routed_expert_flops", "expert_miss_probability", "experts_touched"]


def experts_per_rank(experts: int, ep_width: int) -> tuple[int, int, int, float]:
    """How ``experts`` physical experts spread over ``ep_width`` expert-parallel ranks.

    base = E // ep; extra = E % ep; heaviest = base + (1 if extra else 0)
    imbalance = heaviest / (E / ep)

    Returns (base, heaviest, extra, imbalance); (0, 0, 0, 1.0) when either is not positive.
    """
    if ep_width <= 0 or experts <= 0:
        return 0, 0, 0, 1.0
    base, extra = divmod(experts, ep_width)
    heaviest = base + (1 if extra else 0)
    return base, heaviest, extra, heaviest / (experts / ep_width)


def routed_expert_flops(
    routed_tokens: float,
    top_k: int,
    local_share: float,
    flops_per_token_per_expert: float,
    imbalance: float,
    tensor_slice: float,
) -> float:
    """Routed-expert FLOPs one rank runs in one MoE layer.

    flops = routed_tokens · k · local_share · F_expert · imbalance / slice

    Each routed token visits k experts, a local_share of them on this rank (1/ep, or 1
    without EP); the heaviest rank holds ``imbalance`` times its fair share
    (``experts_per_rank``); ``slice`` is the fraction of each expert's matrices the rank
    computes. With routed_tokens = 1 it is the per-token coefficient the fused path folds.
    """
    return routed_tokens * top_k * local_share * flops_per_token_per_expert * imbalance / tensor_slice


def expert_miss_probability(experts: int, top_k: int) -> float:
    """Probability that one token's routing misses a given expert (uniform routing).

    q = (E − k) / E

    0 when the routing is degenerate (E <= 0, k <= 0, or k >= E): every expert is touched.
    The fused path folds q at construction and raises it to the step's routed tokens.
    """
    if experts <= 0 or top_k <= 0 or top_k >= experts:
        return 0.0
    return (experts - top_k) / experts


def experts_touched(tokens: int, experts: int, top_k: int, local_experts: float) -> float:
    """Expected distinct local experts a batch of ``tokens`` routes to (uniform routing).

    touched = local · (1 − ((E − k) / E) ** tokens)

    Each token picks k of E experts; an expert is missed by one token with probability
    (E − k)/E. 0 for no tokens or no local experts; all local experts when the routing is
    degenerate (E <= 0, k <= 0, or k >= E).
    """
    if local_experts <= 0 or tokens <= 0:
        return 0.0
    if experts <= 0 or top_k <= 0 or top_k >= experts:
        return float(local_experts)
    return local_experts * (1.0 - expert_miss_probability(experts, top_k) ** tokens)

"""Routed experts: how they spread over ranks, and how many a batch touches."""

from __future__ import annotations

import math

__all__ = [
    "experts_per_rank",
    "routed_expert_flops",
    "expert_miss_probability",
    "expert_miss_fraction",
    "experts_touched",
]


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


def expert_miss_fraction(tokens: float, miss_probability: float, concentration: float = 0.0) -> float:
    """Expected fraction of experts that ``tokens`` routed tokens all miss.

    uniform routing (concentration <= 0):  miss = q ** tokens
    skewed routing (concentration α > 0):  miss = (1 + tokens · (−ln q) / α) ** (−α)

    q = ``expert_miss_probability``. The skewed form gives each expert a popularity drawn from
    a Gamma distribution of shape α (coefficient of variation 1/√α): an expert of relative
    popularity w is missed by one token with probability q ** w, and the mean of q ** (w·n)
    over a Gamma(α, 1/α) draw of w is the expression above. It tends to q ** tokens as α
    grows, and for finite α a batch touches fewer distinct experts than uniform routing
    would, which its weight reads show: a skewed assignment runs faster than a balanced one
    of the same shape (the registry's moe_routing_imbalance_median, below 1 on L40S), and
    decode slopes of MoE models at small TP rise slower than the uniform law prices (the
    coefficient moe_routing_concentration states α and its fit). 1 when there are no tokens;
    0 when q is 0 (every expert is touched by any token).
    """
    if tokens <= 0:
        return 1.0
    if miss_probability <= 0.0:
        return 0.0
    if concentration <= 0.0:
        return float(miss_probability**tokens)
    return float((1.0 + tokens * -math.log(miss_probability) / concentration) ** -concentration)


def experts_touched(tokens: int, experts: int, top_k: int, local_experts: float, concentration: float = 0.0) -> float:
    """Expected distinct local experts a batch of ``tokens`` routes to.

    touched = local · (1 − expert_miss_fraction(tokens, (E − k) / E, α))

    Each token picks k of E experts; an expert is missed by one token with probability
    (E − k)/E; ``concentration`` α > 0 spreads the experts' popularity (Gamma, shape α) and
    0 keeps routing uniform, where touched = local · (1 − ((E − k) / E) ** tokens). 0 for no
    tokens or no local experts; all local experts when the routing is degenerate (E <= 0,
    k <= 0, or k >= E).
    """
    if local_experts <= 0 or tokens <= 0:
        return 0.0
    if experts <= 0 or top_k <= 0 or top_k >= experts:
        return float(local_experts)
    return local_experts * (1.0 - expert_miss_fraction(tokens, expert_miss_probability(experts, top_k), concentration))

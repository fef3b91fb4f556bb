"""Routed-expert spread and touch laws, recurrent-state, activation and width-snapping
memory laws (blis-kernel-spec §4.1, §4.2, §6, §17), against brute-force oracles."""

from __future__ import annotations

import itertools
import math
import random
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from latencykernel.price.experts import expert_miss_fraction, experts_per_rank, experts_touched
from latencykernel.price.memory import (
    activation_peak_bytes,
    mamba2_state_bytes,
    matrix_state_bytes,
    recurrent_state_bytes,
    snap_declared_width,
)

# --------------------------------------------------------------------------------------
# Experts per rank
# --------------------------------------------------------------------------------------


def deal_experts(experts: int, ep: int) -> list[int]:
    """Deal physical experts to EP ranks one at a time, round-robin; returns the count on
    each rank (the same multiset as vLLM's linear placement, where the first E % ep ranks
    hold one more)."""
    counts = [0] * ep
    for e in range(experts):
        counts[e % ep] += 1
    return counts


def test_experts_per_rank_matches_dealing_oracle() -> None:
    for experts in range(1, 300):
        for ep in (1, 2, 3, 4, 6, 8, 16, 32, 64, 72, 256, 512):
            counts = deal_experts(experts, ep)
            base, heaviest, extra, imbalance = experts_per_rank(experts, ep)
            fewest, most = min(counts), max(counts)
            assert base == fewest
            assert heaviest == most
            assert extra == sum(1 for c in counts if c > fewest)
            assert base * ep + extra == experts  # every expert placed once
            exact = Fraction(heaviest * ep, experts)
            assert abs(imbalance - float(exact)) <= 2 * math.ulp(float(exact))


def test_experts_per_rank_numbers() -> None:
    assert experts_per_rank(256, 8) == (32, 32, 0, 1.0)
    base, heaviest, extra, imb = experts_per_rank(256 + 32, 72)  # EPLB with 32 redundant
    assert (base, heaviest, extra) == (4, 4, 0) and imb == 1.0
    base, heaviest, extra, imb = experts_per_rank(257, 8)
    assert (base, heaviest, extra) == (32, 33, 1)
    assert imb == pytest.approx(33 * 8 / 257, rel=1e-15)
    # more ranks than experts: base 0 (refused at construction), heaviest 1
    assert experts_per_rank(8, 16)[:3] == (0, 1, 8)


@pytest.mark.parametrize("e,ep", [(0, 8), (-1, 8), (64, 0), (64, -2)])
def test_experts_per_rank_degenerate(e, ep) -> None:
    assert experts_per_rank(e, ep) == (0, 0, 0, 1.0)


# --------------------------------------------------------------------------------------
# Experts touched
# --------------------------------------------------------------------------------------


def touched_brute_force(tokens: int, experts: int, top_k: int, local: int) -> Fraction:
    """Expected distinct local experts (the first ``local`` of ``experts``) hit when each of
    ``tokens`` tokens routes to top_k distinct experts, every k-subset equally likely."""
    subsets = list(itertools.combinations(range(experts), top_k))
    total = 0
    count = 0
    for routing in itertools.product(subsets, repeat=tokens):
        hit = set().union(*routing)
        total += sum(1 for e in hit if e < local)
        count += 1
    return Fraction(total, count)


def test_experts_touched_matches_enumeration_of_routings() -> None:
    cases = 0
    for experts in range(2, 7):
        for top_k in range(1, experts):
            for tokens in range(1, 4):
                for local in range(1, experts + 1):
                    exact = touched_brute_force(tokens, experts, top_k, local)
                    assert experts_touched(tokens, experts, top_k, local) == pytest.approx(float(exact), rel=1e-12), (
                        tokens,
                        experts,
                        top_k,
                        local,
                    )
                    cases += 1
    assert cases > 150


# two token counts, the experts, top-k and the local experts of one routing
ROUTING = {
    "t1": st.integers(0, 5000),
    "t2": st.integers(0, 5000),
    "e": st.integers(2, 512),
    "k": st.integers(1, 16),
    "local": st.integers(1, 256),
}


@settings(max_examples=300, deadline=None)
@given(**ROUTING)
def test_experts_touched_bounded_and_monotone(t1, t2, e, k, local) -> None:
    lo, hi = sorted((t1, t2))
    a, b = experts_touched(lo, e, k, local), experts_touched(hi, e, k, local)
    assert 0 <= a <= b <= local


def test_experts_touched_224_top8_saturates_by_128_tokens() -> None:
    """§17: at 224 experts / top-8 the touched count reaches within 1% of the full shard by
    128 tokens (and is still well short of it at 64)."""
    local = 224 / 8
    assert experts_touched(128, 224, 8, local) >= 0.99 * local
    assert experts_touched(64, 224, 8, local) < 0.95 * local
    assert 1 - experts_touched(128, 224, 8, local) / local == pytest.approx((216 / 224) ** 128, rel=1e-12)


def test_experts_touched_degenerate_routing() -> None:
    assert experts_touched(0, 64, 8, 8) == 0.0
    assert experts_touched(10, 64, 8, 0) == 0.0
    assert experts_touched(1, 0, 8, 8) == 8.0  # no routing: every local expert
    assert experts_touched(1, 64, 0, 8) == 8.0
    assert experts_touched(1, 8, 8, 8) == 8.0  # top_k covers all experts
    assert experts_touched(1, 8, 9, 8) == 8.0
    assert experts_touched(1, 64, 8, 8) == pytest.approx(1.0, rel=1e-15)  # 8 · 8/64


def gamma_mean_of_miss(tokens: float, q: float, alpha: float) -> float:
    """E[q ** (w · tokens)] over expert popularity w ~ Gamma(shape alpha, mean 1), by
    trapezoidal integration of the density on a fine logarithmic grid (an oracle independent
    of the closed form)."""
    t = np.linspace(math.log(1e-14), math.log(60.0), 400_001)  # w = e^t, dw = w dt
    w = np.exp(t)
    log_density = alpha * math.log(alpha) - math.lgamma(alpha) + (alpha - 1) * t - alpha * w
    f = np.exp(log_density + w * tokens * math.log(q)) * w
    return float(np.sum((f[1:] + f[:-1]) * np.diff(t)) / 2)


@pytest.mark.parametrize(
    ("tokens", "q", "alpha"),
    [(1, 216 / 224, 1.75), (8, 216 / 224, 1.75), (64, 120 / 128, 2.0), (256, 248 / 256, 1.5), (32, 0.5, 3.0)],
)
def test_skewed_miss_fraction_is_the_gamma_mean(tokens, q, alpha) -> None:
    """Guards the skewed form drifting from its stated derivation: the mean over a Gamma
    popularity of the probability that every token misses an expert."""
    assert expert_miss_fraction(tokens, q, alpha) == pytest.approx(gamma_mean_of_miss(tokens, q, alpha), rel=1e-6)


def test_skewed_miss_fraction_tends_to_uniform_as_concentration_grows() -> None:
    q = 216 / 224
    for n in (1, 16, 128, 1024):
        uniform = q**n
        assert expert_miss_fraction(n, q, 0.0) == uniform  # 0 is uniform routing exactly
        assert expert_miss_fraction(n, q, 1e8) == pytest.approx(uniform, rel=1e-5)


def test_miss_fraction_edges() -> None:
    assert expert_miss_fraction(0, 0.9, 1.75) == 1.0  # no tokens miss every expert
    assert expert_miss_fraction(5, 0.0, 1.75) == 0.0  # q = 0: every token touches every expert
    assert expert_miss_fraction(5, 0.9, -1.0) == 0.9**5  # no skew below zero
    # alpha = 1 (exponential popularity): 1 / (1 + n · ln(1/q))
    assert expert_miss_fraction(10, 0.5, 1.0) == pytest.approx(1 / (1 + 10 * math.log(2)), rel=1e-15)


@settings(max_examples=300, deadline=None)
@given(**ROUTING, a1=st.floats(0.05, 50.0), a2=st.floats(0.05, 50.0))
def test_skewed_routing_touches_fewer_experts_and_stays_monotone(t1, t2, e, k, local, a1, a2) -> None:
    """Guards the skewed law touching more experts than uniform routing (Jensen: the mean of
    q ** (w·n) is at least q ** n), more skew touching more, or more tokens touching fewer."""
    lo, hi = sorted((t1, t2))
    skew, flat = sorted((a1, a2))
    for a in (skew, flat):
        x, y = experts_touched(lo, e, k, local, a), experts_touched(hi, e, k, local, a)
        assert 0 <= x <= y * (1 + 1e-12) <= local * (1 + 1e-12)
    uniform = experts_touched(hi, e, k, local)
    assert experts_touched(hi, e, k, local, skew) <= experts_touched(hi, e, k, local, flat) * (1 + 1e-12)
    assert experts_touched(hi, e, k, local, flat) <= uniform * (1 + 1e-12)


# --------------------------------------------------------------------------------------
# Recurrent state
# --------------------------------------------------------------------------------------


def recurrent_oracle(page: float, mode: str, max_len: int, block: int, spec: int, ckpt: int) -> float:
    """vLLM's mamba cache modes, state by state: `all` keeps a state at every block boundary
    of the longest sequence (page-granular prefix caching) plus the speculative ones;
    `align` a running state, one aligned checkpoint, the speculative ones and any extra
    checkpoints; anything else (`none`) a running state and the speculative ones."""
    if page <= 0:
        return 0.0
    states = 0
    if mode == "all":
        if block <= 0:
            return page
        covered = 0
        while covered < max_len:
            states += 1
            covered += block
        states += spec
    elif mode == "align":
        states = 1 + 1 + spec + ckpt
    else:
        states = 1 + spec
    return page * states


@settings(max_examples=200, deadline=None)
@given(
    page=st.integers(-5, 10**7),
    mode=st.sampled_from(["all", "align", "none", "bogus"]),
    max_len=st.integers(0, 40_000),
    block=st.sampled_from([-1, 0, 1, 16, 64, 528, 1024]),
    spec=st.integers(0, 4),
    ckpt=st.integers(0, 3),
)
def test_recurrent_state_bytes_matches_mode_oracle(page, mode, max_len, block, spec, ckpt) -> None:
    assert recurrent_state_bytes(page, mode, max_len, block, spec, ckpt) == recurrent_oracle(
        page, mode, max_len, block, spec, ckpt
    )


def test_recurrent_state_bytes_numbers() -> None:
    assert recurrent_state_bytes(1000, "none", 32_768, 16, 0, 0) == 1000
    assert recurrent_state_bytes(1000, "none", 32_768, 16, 2, 5) == 3000
    assert recurrent_state_bytes(1000, "align", 32_768, 16, 0, 0) == 2000
    assert recurrent_state_bytes(1000, "align", 32_768, 16, 1, 2) == 5000
    assert recurrent_state_bytes(1000, "all", 32_768, 16, 0, 0) == 2048 * 1000
    assert recurrent_state_bytes(1000, "all", 32_769, 16, 1, 0) == (2049 + 1) * 1000
    assert recurrent_state_bytes(1000, "all", 32_768, 0, 3, 0) == 1000
    assert recurrent_state_bytes(0, "all", 32_768, 16, 0, 0) == 0


def test_mamba2_and_matrix_state_bytes() -> None:
    # Mamba-2 layer: intermediate 4096, 1 group, state 128, conv 4, 64 heads × 64, fp32
    conv_dim = 4096 + 2 * 1 * 128
    expected = (conv_dim * 3 + 64 * 64 * 128) * 4
    assert expected == 2_149_376
    assert mamba2_state_bytes(4096, 1, 128, 4, 64, 64, 4) == expected
    # without a head_dim the SSM state is n_heads · state²
    assert mamba2_state_bytes(4096, 1, 128, 4, 64, 0, 4) == (conv_dim * 3 + 64 * 128 * 128) * 4
    # a conv kernel of 1 keeps one column
    assert mamba2_state_bytes(100, 0, 8, 1, 1, 1, 2) == (100 * 1 + 8) * 2
    # KDA / Gated-DeltaNet: a state² matrix per head
    assert matrix_state_bytes(32, 128, 4) == 32 * 128 * 128 * 4


# --------------------------------------------------------------------------------------
# Activations and width snapping
# --------------------------------------------------------------------------------------


def test_activation_peak_bytes_floor() -> None:
    # bf16: 2 bytes per element of each live buffer
    assert activation_peak_bytes(3, 8192, 7168, 0) == 3 * 8192 * 7168 * 2
    assert activation_peak_bytes(3, 8192, 7168, 10**12) == 10**12  # the scratch floor wins
    assert activation_peak_bytes(0, 8192, 7168, 5e8) == 5e8
    assert activation_peak_bytes(2.5, 16, 100, 8000) == 8000
    assert activation_peak_bytes(2.5, 16, 100, 7999) == 8000


@settings(max_examples=300, deadline=None)
@given(buffers=st.floats(0, 64), tokens=st.integers(0, 65_536), width=st.integers(0, 65_536), floor=st.floats(0, 1e11))
def test_activation_peak_never_below_floor(buffers, tokens, width, floor) -> None:
    got = activation_peak_bytes(buffers, tokens, width, floor)
    assert got >= floor
    assert got >= buffers * tokens * width * 2


def snap_oracle(width: int, declared: list[int]) -> int:
    if not declared:
        return width
    best = None
    for d in declared:
        if d <= width and (best is None or d > best):
            best = d
    return best if best is not None else min(declared)


@settings(max_examples=200, deadline=None)
@given(width=st.integers(-4, 600), declared=st.lists(st.integers(1, 512), max_size=8))
def test_snap_declared_width_matches_oracle(width, declared) -> None:
    assert snap_declared_width(width, declared) == snap_oracle(width, declared)
    assert snap_declared_width(width, iter(declared)) == snap_oracle(width, declared)  # any iterable


def test_snap_declared_width_numbers() -> None:
    assert snap_declared_width(16, [8, 16, 32]) == 16
    assert snap_declared_width(12, [8, 16, 32]) == 8
    assert snap_declared_width(64, [8, 16, 32]) == 32
    assert snap_declared_width(4, [32, 8, 16]) == 8  # below them all: the narrowest
    assert snap_declared_width(12, []) == 12


def test_random_expert_spreads_sum_back() -> None:
    rnd = random.Random(3)
    for _ in range(2000):
        e, ep = rnd.randint(1, 1024), rnd.randint(1, 300)
        base, heaviest, extra, _ = experts_per_rank(e, ep)
        assert base * ep + extra == e
        assert heaviest - base == (1 if extra else 0)
        assert 0 <= extra < ep

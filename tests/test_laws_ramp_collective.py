"""GEMM efficiency ramps, collective times, node-crossing spans, and host dispatch
(blis-kernel-spec §4.1, §4.7, §14 properties, §17)."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from latencykernel.price.collective import (
    LARGE_MESSAGE_BYTES,
    all_to_all_span,
    collective_time_s,
    flat_span,
    floor_and_rate_s,
    ring_span,
    span,
)
from latencykernel.price.host import graph_dispatch_s
from latencykernel.price.ramp import efficiency, shape_efficiency

pos = st.floats(min_value=1e-6, max_value=1e7, allow_nan=False, allow_infinity=False)
eps = st.floats(min_value=1e-4, max_value=1.0, allow_nan=False)
# dyadic values: products and quotients below are exact in binary floating point
dyadic_eps = st.integers(1, 1024).map(lambda k: k / 1024)
int_tokens = st.integers(1, 1_000_000)

# --------------------------------------------------------------------------------------
# Efficiency ramp
# --------------------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(m1=pos, m2=pos, e=eps, h=pos)
def test_efficiency_monotone_in_m_and_bounded(m1: float, m2: float, e: float, h: float) -> None:
    lo, hi = sorted((m1, m2))
    assert 0 < efficiency(lo, e, h) <= efficiency(hi, e, h) <= e


@settings(max_examples=200, deadline=None)
@given(e=dyadic_eps, h=int_tokens)
def test_efficiency_exactly_half_at_m_half(e: float, h: int) -> None:
    assert efficiency(h, e, h) == e / 2


@settings(max_examples=200, deadline=None)
@given(e=dyadic_eps, m=int_tokens, h=int_tokens)
def test_efficiency_is_the_hyperbolic_ramp(e: float, m: int, h: int) -> None:
    exact = Fraction(e) * m / (m + h)
    assert efficiency(m, e, h) == pytest.approx(float(exact), rel=4e-16)


def test_efficiency_edges() -> None:
    assert efficiency(0, 0.8, 100) == 0.0
    assert efficiency(-5, 0.8, 100) == 0.0
    assert efficiency(100, 0.0, 100) == 0.0
    assert efficiency(100, -0.1, 100) == 0.0
    assert efficiency(1, 0.8, 0) == 0.8  # no half point: flat at eps_max
    assert efficiency(1, 0.8, -3) == 0.8
    assert efficiency(300, 0.9, 100) == pytest.approx(0.675, rel=1e-15)


@settings(max_examples=200, deadline=None)
@given(m=pos, n=pos, k=pos, e=eps, mh=pos, nh=pos, kh=pos)
def test_shape_efficiency_below_the_m_ramp(m, n, k, e, mh, nh, kh) -> None:
    """Each extra factor N/(N+N_half), K/(K+K_half) is a fraction; with both active (and
    not rounding to 1) the shape-aware efficiency is strictly below the plain ramp."""
    assume(n / (n + nh) < 1 - 1e-9 and k / (k + kh) < 1 - 1e-9)
    s = shape_efficiency(m, n, k, e, mh, nh, kh)
    assert 0 < s < efficiency(m, e, mh)
    assert s == pytest.approx(e * m / (m + mh) * n / (n + nh) * k / (k + kh), rel=1e-14)


@settings(max_examples=300, deadline=None)
@given(m=pos, e=eps, mh=pos, n=pos, k=pos)
def test_shape_efficiency_factors_left_out(m, e, mh, n, k) -> None:
    """A factor is left out when its half point or its dimension is not positive: the
    result is then the M ramp — up to rounding only: the two laws multiply in a different
    order (eps·(m/(m+h)) vs (eps·m)/(m+h)) and can differ in the last bits."""
    plain = efficiency(m, e, mh)
    for nn, kk, nh, kh in [(n, k, 0, 0), (0, 0, 5, 5), (n, k, -1, -1), (-3, -3, 5, 5)]:
        assert math.isclose(shape_efficiency(m, nn, kk, e, mh, nh, kh), plain, rel_tol=1e-15, abs_tol=0)


@settings(max_examples=300, deadline=None)
@given(m=int_tokens, e=dyadic_eps, mh=int_tokens)
def test_shape_efficiency_with_no_factors_is_exactly_the_ramp_when_representable(m, e, mh) -> None:
    """With m + M_half a power of two every operation is exact, so the two orders agree."""
    total = 1 << max(1, (m + mh - 1).bit_length())
    mh = total - m
    assume(mh > 0)
    assert shape_efficiency(m, 10, 10, e, mh, 0, 0) == efficiency(m, e, mh)


def test_shape_efficiency_edges_and_value() -> None:
    assert shape_efficiency(0, 10, 10, 0.8, 1, 1, 1) == 0.0
    assert shape_efficiency(10, 10, 10, 0.0, 1, 1, 1) == 0.0
    # 0.8 · 100/200 · 300/400 · 50/100
    assert shape_efficiency(100, 50, 300, 0.8, 100, 50, 100) == pytest.approx(0.15, rel=1e-15)


@settings(max_examples=300, deadline=None)
@given(m1=pos, m2=pos, n=pos, k=pos, e=eps, mh=pos, nh=pos, kh=pos)
def test_shape_efficiency_monotone_in_m(m1, m2, n, k, e, mh, nh, kh) -> None:
    lo, hi = sorted((m1, m2))
    assert shape_efficiency(lo, n, k, e, mh, nh, kh) <= shape_efficiency(hi, n, k, e, mh, nh, kh)


# --------------------------------------------------------------------------------------
# Collective time
# --------------------------------------------------------------------------------------

nonneg = st.floats(min_value=0, max_value=1e12, allow_nan=False, allow_infinity=False)
rate = st.floats(min_value=1e3, max_value=1e13, allow_nan=False, allow_infinity=False)
floor_s = st.floats(min_value=0, max_value=1e-2, allow_nan=False)


@settings(max_examples=200, deadline=None)
@given(b1=nonneg, b2=nonneg, rt=rate, rp=rate, f=floor_s)
def test_collective_time_at_least_floor_and_monotone_in_bytes(b1, b2, rt, rp, f) -> None:
    lo, hi = sorted((b1, b2))
    t_lo, t_hi = collective_time_s(lo, rt, rp, f), collective_time_s(hi, rt, rp, f)
    assert f <= t_lo <= t_hi
    # never faster than the peak rate allows
    assert t_hi >= hi / rp


@settings(max_examples=200, deadline=None)
@given(b=st.floats(min_value=1, max_value=1e12), rt=rate, rp=rate, f=floor_s)
def test_collective_time_three_parameter_form(b, rt, rp, f) -> None:
    """Guards the law's two regimes: up to 8 MiB (or when the peak is no faster than the
    transition rate) the registry's max(floor + b / r_t, b / r_peak); beyond, the bytes
    past 8 MiB move at the peak rate."""
    if b <= LARGE_MESSAGE_BYTES or rp <= rt:
        assert collective_time_s(b, rt, rp, f) == max(f + b / rt, b / rp)
    else:
        want = f + LARGE_MESSAGE_BYTES / rt + (b - LARGE_MESSAGE_BYTES) / rp
        assert collective_time_s(b, rt, rp, f) == want
        assert b / rp <= want <= f + b / rt
    # without a transition rate: floor-and-peak
    assert collective_time_s(b, 0, rp, f) == max(f, b / rp)
    assert collective_time_s(b, -1, rp, f) == max(f, b / rp)


@settings(max_examples=100, deadline=None)
@given(rt=rate, rp=rate, f=floor_s)
def test_collective_time_empty_message_is_floor(rt, rp, f) -> None:
    assert collective_time_s(0, rt, rp, f) == f
    assert collective_time_s(-10, rt, rp, f) == f
    assert collective_time_s(0, rt, 0, f) == f  # even without a peak


def test_collective_time_without_peak_is_infinite() -> None:
    assert collective_time_s(1, 1e9, 0, 1e-6) == math.inf
    assert collective_time_s(1, 1e9, -1, 1e-6) == math.inf


def test_collective_time_numbers() -> None:
    # 1 MiB at transition 10 GB/s and peak 100 GB/s over a 20 µs floor: floor + b/r_t wins
    assert collective_time_s(2**20, 10e9, 100e9, 20e-6) == pytest.approx(20e-6 + 2**20 / 10e9, rel=1e-15)
    # 10 GB: the peak asymptote wins when it is slower than floor + transition
    assert collective_time_s(1e10, 1e12, 100e9, 20e-6) == pytest.approx(0.1, rel=1e-15)


@settings(max_examples=200, deadline=None)
@given(b1=nonneg, b2=nonneg, r=rate, f=floor_s)
def test_floor_and_rate(b1, b2, r, f) -> None:
    lo, hi = sorted((b1, b2))
    assert f <= floor_and_rate_s(lo, r, f) <= floor_and_rate_s(hi, r, f)
    assert floor_and_rate_s(0, r, f) == f
    assert floor_and_rate_s(1, 0, f) == math.inf
    if hi > 0:
        assert floor_and_rate_s(hi, r, f) == max(f, hi / r)


# --------------------------------------------------------------------------------------
# Span
# --------------------------------------------------------------------------------------

ratios = st.one_of(
    st.floats(min_value=-10, max_value=1e6, allow_nan=False, allow_infinity=False),
    st.sampled_from([math.inf, -math.inf, math.nan, 0.0, 1.0, -1.0]),
)
steps = st.integers(min_value=-5, max_value=10_000)  # crossing and total step counts


@settings(max_examples=300, deadline=None)
@given(cross=steps, total=steps, r=ratios)
def test_span_at_least_one_and_finite(cross, total, r) -> None:
    s = span(cross, total, r)
    assert math.isfinite(s) and s >= 1


@settings(max_examples=300, deadline=None)
@given(total=st.floats(min_value=1, max_value=1e4), r=ratios)
def test_span_one_at_zero_crossings(total, r) -> None:
    assert span(0, total, r) == 1.0


@pytest.mark.parametrize("r", [math.inf, -math.inf, math.nan, 0.0, -3.0, 0.5, 1.0])
def test_span_one_on_degenerate_ratios(r) -> None:
    assert span(3, 7, r) == 1.0
    assert ring_span(16, 8, r) == 1.0
    assert all_to_all_span(16, 8, r) == 1.0
    assert flat_span(16, 8, r) == 1.0


@settings(max_examples=200, deadline=None)
@given(c1=st.floats(0, 100), c2=st.floats(0, 100), total=st.floats(1, 100), r1=st.floats(1, 1e3), r2=st.floats(1, 1e3))
def test_span_monotone_in_crossings_and_ratio(c1, c2, total, r1, r2) -> None:
    clo, chi = sorted((c1, c2))
    rlo, rhi = sorted((r1, r2))
    assert span(clo, total, rhi) <= span(chi, total, rhi)
    assert span(chi, total, rlo) <= span(chi, total, rhi)
    # every step crossing costs the full ratio
    assert span(total, total, rhi) == pytest.approx(rhi, rel=1e-15)


def test_ring_vs_all_to_all_across_a_9x_fabric() -> None:
    """16 ranks over 2 nodes of 8 GPUs, a 9× slower fabric: a ring scales 1.5× (of its 15
    steps, 1 crosses the one node boundary), an all-to-all 5.3× (8 of 15 peers are remote).
    Exactly 23/15 and 79/15."""
    ring = ring_span(16, 8, 9)
    a2a = all_to_all_span(16, 8, 9)
    assert ring == pytest.approx(float(1 + Fraction(8 * 1, 15)), rel=1e-15)  # 23/15
    assert a2a == pytest.approx(float(1 + Fraction(8 * 8, 15)), rel=1e-15)  # 79/15
    assert round(ring, 1) == 1.5
    assert round(a2a, 1) == 5.3


@pytest.mark.parametrize(
    "g,p,expected",
    [
        (32, 8, 1 + Fraction(8 * 3, 31)),  # 4 nodes: 3 boundary steps of 31
        (8, 8, Fraction(1)),  # one node
        (4, 8, Fraction(1)),
        (12, 8, Fraction(9)),  # ragged: priced flat, every step crosses
        (1, 8, Fraction(1)),
    ],
)
def test_ring_span_values(g, p, expected) -> None:
    assert ring_span(g, p, 9) == pytest.approx(float(expected), rel=1e-15)


@pytest.mark.parametrize(
    "g,p,expected",
    [
        (32, 8, 1 + Fraction(8 * 24, 31)),
        (8, 8, Fraction(1)),
        (12, 8, 1 + Fraction(8 * 4, 11)),
        (16, 1, Fraction(9)),
        (0, 8, Fraction(1)),
    ],
)
def test_all_to_all_span_values(g, p, expected) -> None:
    assert all_to_all_span(g, p, 9) == pytest.approx(float(expected), rel=1e-15)


@settings(max_examples=300, deadline=None)
@given(nodes=st.integers(1, 16), p=st.sampled_from([1, 2, 4, 8]), r=st.floats(1, 100))
def test_ring_never_slower_than_all_to_all_on_whole_nodes(nodes, p, r) -> None:
    g = nodes * p
    assert 1 <= ring_span(g, p, r) <= all_to_all_span(g, p, r) <= flat_span(g, p, r) <= max(r, 1) * (1 + 1e-15)


def test_no_nodes_no_span() -> None:
    for f in (ring_span, all_to_all_span, flat_span):
        assert f(16, 0, 9) == 1.0
        assert f(16, -1, 9) == 1.0


# --------------------------------------------------------------------------------------
# Host dispatch by graph mode
# --------------------------------------------------------------------------------------


def test_graph_dispatch_by_mode() -> None:
    assert graph_dispatch_s("full", 5e-6, 9e-6, 62, 61) == 5e-6
    # §17: PIECEWISE host = 7 µs × (61+1) segments = 0.434 ms
    assert graph_dispatch_s("piecewise", 7e-6, 1.0, 62, 61) == pytest.approx(0.434e-3, rel=1e-12)
    assert graph_dispatch_s("eager", 1.0, 30e-6, 62, 61) == pytest.approx(61 * 30e-6, rel=1e-15)
    assert graph_dispatch_s("none", 1.0, 30e-6, 62, 61) == pytest.approx(61 * 30e-6, rel=1e-15)

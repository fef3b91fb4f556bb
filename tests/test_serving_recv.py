"""SGLang's --scheduler-recv-interval (serving.scheduler.receive) and its closed form
(validation.predict.recv_wait_s)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from latencykernel.errors import LatencyKernelError
from latencykernel.serving import ClosedLoop, RandomRange, Trace, simulate
from latencykernel.validation.points import Deployment, Point
from latencykernel.validation.predict import recv_wait_s
from test_serving_sim import Affine

STEP_S = 0.01  # Affine(a=0.01, b=0, c=0): every step lasts 10 ms


def _ttft_of_second(interval: int, arrival_s: float, skip_ahead: bool) -> float:
    m = Affine(a=STEP_S, b=0.0, c=0.0)
    # A: a 4-token prompt, then a long decode; B arrives while A decodes
    r = simulate(
        m,
        Trace([(0.0, 4, 400), (arrival_s, 4, 2)]),
        skip_ahead=skip_ahead,
        scheduler_recv_interval=interval,
    )
    return float(r.per_request["ttft"][1])


def _expected_ttft(interval: int, arrival_s: float) -> float:
    """The rule, by hand: A's prefill is step 0 (0 to 10 ms); the decision at 10 ms follows a
    prefill (weight 1000) and receives; each later decision i (at 10 (1 + i) ms) adds 1 for
    the decode before it, so the scheduler receives at i = 0, N, 2N, ...; B's one-step
    prefill runs in the step decided there and its first token comes at that step's end."""
    i = 0
    while STEP_S * (1 + i) < arrival_s or i % interval:
        i += 1
    return STEP_S * (1 + i) + STEP_S - arrival_s


@settings(max_examples=40, deadline=None)
@given(
    interval=st.integers(min_value=1, max_value=40),
    arrival_ms=st.integers(min_value=12, max_value=900),
    skip_ahead=st.booleans(),
)
def test_new_request_waits_for_the_receive(interval: int, arrival_ms: int, skip_ahead: bool) -> None:
    """Guards the receive rule: while another request only decodes, a new one is taken in at
    the first decision whose counter reaches N (every N decode steps after a prefill), with
    the skip-ahead's runs stopping there too."""
    arrival = arrival_ms * 1e-3 + 0.0037  # off the step grid
    got = _ttft_of_second(interval, arrival, skip_ahead)
    assert got == pytest.approx(_expected_ttft(interval, arrival), abs=1e-9)


def test_receive_interval_one_is_every_step() -> None:
    """Guards the default: N = 1 (and the key left out) takes a request at the next step."""
    a = _ttft_of_second(1, 0.0555, False)
    m = Affine(a=STEP_S, b=0.0, c=0.0)
    b = simulate(m, Trace([(0.0, 4, 400), (0.0555, 4, 2)]), skip_ahead=False)
    assert a == pytest.approx(float(b.per_request["ttft"][1]), abs=1e-12)
    assert a == pytest.approx(0.07 - 0.0555, abs=1e-9)
    assert any(name == "scheduler_recv_interval" for name, _, _ in b.assumptions)


def test_idle_engine_takes_a_request_at_once() -> None:
    """Guards the idle pass: with nothing running the scheduler loops to its receive at
    once, so a lone request's TTFT does not depend on N."""
    m1 = Affine(a=STEP_S, b=0.0, c=0.0)
    m2 = Affine(a=STEP_S, b=0.0, c=0.0)
    one = simulate(m1, ClosedLoop(1, 10, 20, num_prompts=5), scheduler_recv_interval=1)
    many = simulate(m2, ClosedLoop(1, 10, 20, num_prompts=5), scheduler_recv_interval=50)
    assert many.ttft.mean == pytest.approx(one.ttft.mean, rel=1e-12)
    assert many.e2el.mean == pytest.approx(one.e2el.mean, rel=1e-12)


def test_longer_interval_never_lowers_ttft() -> None:
    """Metamorphic: in a closed loop of several clients (output lengths spread, so they
    finish apart) a longer receive interval never gives a lower mean TTFT, and at N = 30 it
    is above N = 1 by about the closed form's (N - 1) / 2 decode steps."""
    means = []
    for n in (1, 5, 10, 30):
        m = Affine(a=STEP_S, b=0.0, c=0.0)
        r = simulate(m, ClosedLoop(6, 8, RandomRange(200, 0.9), num_prompts=120), seed=3, scheduler_recv_interval=n)
        means.append(r.ttft.mean)
    assert means == sorted(means)
    extra = means[-1] - means[0]
    assert extra == pytest.approx(recv_wait_s(6, STEP_S, 30), rel=0.1)


def test_recv_wait_closed_form() -> None:
    """Guards the closed form's values: (N - 1) / 2 decode steps beside other decodes, none
    for a lone request or N <= 1."""
    assert recv_wait_s(8, 0.02, 30) == pytest.approx(29 / 2 * 0.02)
    assert recv_wait_s(8, 0.02, 10) == pytest.approx(9 / 2 * 0.02)
    assert recv_wait_s(1, 0.02, 30) == 0.0
    assert recv_wait_s(8, 0.02, 1) == 0.0
    assert recv_wait_s(8, 0.02, 0) == 0.0
    assert math.isfinite(recv_wait_s(2, 1e-3, 1920))


@pytest.mark.parametrize("bad", [0, -3, 2.5, True, "10"])
def test_bad_interval_is_refused_naming_the_key(bad: object) -> None:
    """Guards input checking: a receive interval that is not a whole number >= 1 is this
    package's error naming the setting."""
    with pytest.raises(LatencyKernelError, match="scheduler_recv_interval"):
        simulate(Affine(), Trace([(0.0, 4, 4)]), scheduler_recv_interval=bad)


def test_point_refuses_a_negative_interval() -> None:
    """Guards Point's check of the run's setting."""
    with pytest.raises(LatencyKernelError, match="scheduler_recv_interval"):
        Point(
            sweep="s",
            deployment=Deployment(scenario="x.yaml"),
            isl=10,
            osl=10,
            concurrency=1,
            scheduler_recv_interval=-1,
        )

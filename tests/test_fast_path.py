"""The fast step price (kernel/fast.py) against the reference walk (kernel/step.py).

How they are compared. The fast path fuses the laws into a few coefficients per layer kind,
so its untruncated seconds differ from the reference's by a few ulps: they are held to
1e-12 relative here (observed below 1e-15). The published figures are whole nanoseconds,
each resource truncated as the Go kernel does, and many values sit exactly on an integer
nanosecond (the coefficients are round numbers), where one ulp can move a truncation by
1 ns. So the estimates are compared resource by resource to within 1 ns — 1e-9 relative on
anything of a microsecond or more, and every step costs far more — NoOverlap (a sum of five
truncations, host exact) to within 4 ns, and the bottleneck must agree unless two resources
are within 1 ns of each other.
"""

from __future__ import annotations

import copy
import dataclasses
import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import latencykernel as lk
from _deployments import DEPLOYMENTS, PREFILL_FALLBACK, kernel
from latencykernel import Batch, Resource
from latencykernel.kernel.fast_build import build_fast_plan
from latencykernel.kernel.step import price_step

NS = 1e-9


def request() -> st.SearchStrategy[tuple[int, int]]:
    decode = st.tuples(st.sampled_from([0, 1, 1, 1, 2, 4, 8]), st.integers(0, 70_000))
    prefill = st.tuples(st.integers(9, 9000), st.one_of(st.just(0), st.integers(0, 40_000)))
    return st.one_of(decode, decode, decode, prefill)


batches = st.builds(
    lambda reqs, th, budget: Batch.from_columns([s for s, _ in reqs], [c for _, c in reqs], th, budget),
    st.lists(request(), max_size=40),
    st.sampled_from([8, 8, 1, 0, 128]),
    st.sampled_from([0, 0, 0, 60, 10_000]),
)
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def close_raw(fast: tuple[float, ...], plain: tuple[float, ...]) -> None:
    for f, p in zip(fast, plain):
        assert f == pytest.approx(p, rel=1e-12, abs=1e-18)


def assert_same_estimate(e: lk.StepEstimate, r: lk.StepEstimate) -> None:
    for res in Resource:
        assert abs(e.per_resource.get(res, 0.0) - r.per_resource.get(res, 0.0)) <= 1.001 * NS, res
    assert e.per_resource.get(Resource.HOST) == r.per_resource.get(Resource.HOST)  # host is not fused
    assert abs(e.no_overlap - r.no_overlap) <= 4.001 * NS
    assert abs(e.overlap - r.overlap) <= 4.001 * NS
    if e.bottleneck is not r.bottleneck:
        top = sorted(r.per_resource.values())[-2:]
        assert top[1] - top[0] <= 1.001 * NS


@pytest.mark.parametrize("name", sorted(DEPLOYMENTS))
def test_every_deployment_has_a_fast_plan(name: str) -> None:
    assert kernel(name)._fast is not None


@pytest.mark.parametrize("name", sorted(DEPLOYMENTS))
@SETTINGS
@given(batch=batches)
def test_fused_and_plain_paths_agree(name: str, batch: Batch) -> None:
    k = kernel(name)
    c = k.constants
    args = (batch.scheduled, batch.computed, batch.decode_threshold, batch.sm_budget)
    fast = k._fast.price(*args)
    has_prefill = any(s > batch.decode_threshold for s in batch.scheduled)
    if fast is None:
        assert name in PREFILL_FALLBACK and has_prefill
    else:
        per, overlap = price_step(c, *args)
        close_raw(fast, (*per, overlap))
    e, r = k.step_time(batch), k._reference_step(batch)
    if fast is None:
        assert e == r  # a fallback step is the reference's own
    else:
        assert_same_estimate(e, r)


@pytest.mark.parametrize("name", ["mla-guide", "moe-ep16-2nodes"])
def test_guide_figures_on_either_path(name: str) -> None:
    k = kernel(name)
    for n in (1, 32, 256, 1024):
        b = Batch.decode(n, 4096)
        assert_same_estimate(k.step_time(b), k._reference_step(b))
    mixed = Batch.from_columns([2048] * 8 + [1] * 248, [0] * 8 + [4095] * 248, 8)
    assert_same_estimate(k.step_time(mixed), k._reference_step(mixed))


def test_step_time_into_fills_the_callers_dict() -> None:
    k = kernel("mla-guide")
    per: dict[Resource, float] = {Resource.NIC: 1.0}
    b = Batch.decode(16, 2048)
    e = k.step_time_into(b, per)
    assert e.per_resource is per
    assert e == k.step_time(b)
    assert Resource.NIC not in per


def variants(c):  # constants no catalog deployment has, to reach every branch of the fused path
    a = c.plan.layers[-1].primary
    yield "shape-aware", dataclasses.replace(c, shape_aware=True, n_half=512.0, k_half=1024.0)
    yield "no-m-half", dataclasses.replace(c, m_half=0.0)
    yield "linear-m-half", dataclasses.replace(c, linear_m_half=2.0 * c.m_half + 50.0)
    yield "no-prefill-scale", dataclasses.replace(c, prefill_scale=0.0)
    yield "no-decode-rate", dataclasses.replace(c, attn_by_kind={}, attn_rate_bytes_per_s=0.0)
    yield "larger-decode-floor", dataclasses.replace(c, prefill_floor_s=0.0)
    yield "no-sm-count", dataclasses.replace(c, sm_count=0)
    plan = copy.deepcopy(c.plan)
    for lp in plan.layers:
        lp.attentions = [
            dataclasses.replace(s, window=512, compress_ratio=4) if not s.holds_kv else s for s in lp.attentions
        ]
    yield "windowed-indexer", dataclasses.replace(c, plan=plan)
    assert a is not None


@pytest.mark.parametrize(
    "name", ["mla-guide", "sparse-mla", "dcp-sparse", "sliding-window", "recurrent", "moe-ep16-deepep"]
)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batch=batches)
def test_fused_path_on_unusual_constants(name: str, batch: Batch) -> None:
    for label, c in variants(kernel(name).constants):
        fp = build_fast_plan(c)
        assert fp is not None, label
        args = (batch.scheduled, batch.computed, batch.decode_threshold, batch.sm_budget)
        fast = fp.price(*args)
        if fast is None:
            continue
        per, overlap = price_step(c, *args)
        close_raw(fast, (*per, overlap))


def test_uncovered_deployments_have_no_fast_plan() -> None:
    c = kernel("mla-guide").constants
    assert build_fast_plan(dataclasses.replace(c, eps_max=0.0)) is None
    missing = {key: None for key in c.collectives}
    assert build_fast_plan(dataclasses.replace(c, collectives=missing)) is None


def test_zero_context_requests_are_skipped_like_the_reference() -> None:
    k = kernel("swa-with-indexer")
    for s, c in (([0, 0, 1], [0, 0, 9]), ([0, 3000, 1], [0, 0, 100]), ([0, 0], [0, 0]), ([0], [5])):
        b = Batch.from_columns(s, c, 8)
        assert_same_estimate(k.step_time(b), k._reference_step(b))


def test_concurrent_callers_get_the_same_prices() -> None:
    k = kernel("moe-ep16-2nodes")
    batches_ = [Batch.decode(n, 1000 + n) for n in range(1, 64)]
    expected = [k.step_time(b) for b in batches_]
    errors: list[str] = []

    def work() -> None:
        for _ in range(20):
            if [k.step_time(b) for b in batches_] != expected:
                errors.append("differs")

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


SCENARIOS = lk.Repos.default().list_scenarios()
ALL_POOLS = [(n, p) for n in SCENARIOS for p in range(len(lk.open_inputs(n).deployment.pools))]
FIXED = [
    Batch.decode(1, 8192),
    Batch.decode(32, 4096),
    Batch.from_columns([1, 2, 0, 1], [100, 70_000, 0, 0], 8),
    Batch.from_columns([2048, 512] + [1] * 62, [0, 3000] + list(range(1000, 63_000, 1000)), 8),
    Batch.from_columns([4096] * 2, [0, 0], 8, sm_budget=60),
]


@pytest.mark.parametrize(("name", "pool"), ALL_POOLS, ids=[f"{n}#{p}" for n, p in ALL_POOLS])
def test_every_embedded_deployment_takes_the_fast_path(name: str, pool: int) -> None:
    k = lk.open_pool(name, None, pool)
    assert k._fast is not None
    for b in FIXED:
        assert_same_estimate(k.step_time(b), k._reference_step(b))
    r = k.step_times(
        [i for i, b in enumerate(FIXED[:4]) for _ in b.scheduled],
        [s for b in FIXED[:4] for s in b.scheduled],
        [c for b in FIXED[:4] for c in b.computed],
        decode_threshold=8,
    )
    assert list(r) == [k.step_time(b) for b in FIXED[:4]]

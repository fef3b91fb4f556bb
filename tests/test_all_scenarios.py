"""Every embedded scenario (every pool) prices decode and mixed batches to finite,
positive, ordered results, and a longer context never prices lower."""

from __future__ import annotations

import math

import pytest

import latencykernel as lk
from latencykernel import Batch, Resource

SCENARIOS = lk.Repos.default().list_scenarios()


def pools(name: str) -> list[int]:
    return list(range(len(lk.open_inputs(name).deployment.pools)))


CASES = [(name, p) for name in SCENARIOS for p in pools(name)]


def test_every_shipped_model_has_a_scenario() -> None:
    repos = lk.Repos.default()
    named = {lk.open_inputs(s).scenario.model for s in SCENARIOS}
    assert set(repos.list_models()) <= named


def sane(e: lk.StepEstimate) -> None:
    assert math.isfinite(e.no_overlap) and e.no_overlap > 0
    assert 0 < e.overlap <= e.no_overlap
    assert all(v > 0 and math.isfinite(v) for v in e.per_resource.values())
    assert sum(e.per_resource.values()) == pytest.approx(e.no_overlap, rel=1e-12)
    assert e.bottleneck in e.per_resource


@pytest.mark.parametrize(("name", "pool"), CASES, ids=[f"{n}#{p}" for n, p in CASES])
def test_prices_decode_and_mixed_batches(name: str, pool: int) -> None:
    k = lk.open_pool(name, None, pool)
    decode = k.step_time(Batch.decode(32, 4096))
    mixed = k.step_time(Batch.from_columns([1024] + [1] * 31, [512] + [4095] * 31, 8))
    sane(decode)
    sane(mixed)
    assert mixed.per_resource[Resource.SM] > decode.per_resource[Resource.SM]  # the prefill computes
    previous = 0.0
    for ctx in (16, 256, 2048, 8192, 32768):
        e = k.step_time(Batch.decode(8, ctx))
        sane(e)
        assert e.no_overlap >= previous
        previous = e.no_overlap


@pytest.mark.parametrize(("name", "pool"), CASES[::7], ids=[f"{n}#{p}" for n, p in CASES[::7]])
def test_an_empty_step_costs_host_dispatch_only(name: str, pool: int) -> None:
    e = lk.open_pool(name, None, pool).step_time(Batch([], 8))
    assert set(e.per_resource) <= {Resource.HOST}
    assert e.overlap == e.no_overlap

"""More work never prices lower, on every embedded deployment (every pool of every scenario):
adding a request, more context, or a longer prefill never lowers ``overlap`` or
``no_overlap`` (issue 10: an efficiency of the whole batch's token count let an added
request make the existing prefills' attention cheaper)."""

from __future__ import annotations

import random

import pytest

import latencykernel as lk
from latencykernel import Batch

SCENARIOS = lk.Repos.default().list_scenarios()
CASES = [(n, p) for n in SCENARIOS for p in range(len(lk.open_inputs(n).deployment.pools))]
TH = 8

BASES = [
    [(100, 20000)],  # issue 10's reproducer: a prefill alone
    [(2048, 0), (1, 4095), (1, 30000)],
    [(1, 8191)] * 16,
    [(512, 3000), (64, 0), (1, 100), (2, 70000)],
]
ADDED = [(1, 4095), (100, 0), (4096, 0), (9, 131000), (0, 500), (0, 0), (2, 1)]


def price(k: lk.Kernel, reqs: list[tuple[int, int]]) -> tuple[float, float]:
    e = k.step_time(Batch.from_columns([s for s, _ in reqs], [c for _, c in reqs], TH))
    return e.overlap, e.no_overlap


def not_lower(k: lk.Kernel, smaller: list[tuple[int, int]], larger: list[tuple[int, int]]) -> None:
    a, b = price(k, smaller), price(k, larger)
    assert b[0] >= a[0] and b[1] >= a[1], (smaller, larger, a, b)


@pytest.mark.parametrize(("name", "pool"), CASES, ids=[f"{n}#{p}" for n, p in CASES])
def test_more_work_never_prices_lower(name: str, pool: int) -> None:
    """Guards: a law whose per-request cost falls as the batch grows (the prefill attention
    efficiency of the batch's GEMM M), or any term that shrinks with more context or tokens."""
    k = lk.open_pool(name, None, pool)
    rng = random.Random(hash((name, pool)) & 0xFFFF)
    for base in BASES:
        for add in ADDED:  # adding a request, at the end or the front
            not_lower(k, base, [*base, add])
            not_lower(k, base, [add, *base])
        i = rng.randrange(len(base))
        s, c = base[i]
        for dc in (1, 37, 4096):  # more context for one request
            not_lower(k, base, [*base[:i], (s, c + dc), *base[i + 1 :]])
        for j, (s, c) in enumerate(base):
            if s > TH:  # a longer prefill
                for ds in (1, 100, 3000):
                    not_lower(k, base, [*base[:j], (s + ds, c), *base[j + 1 :]])

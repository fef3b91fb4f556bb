"""``search.run``: candidates, refusals, fronts, best, cost, provenance and reproducibility.

Service figures come from ``_search_standin`` (a closed-form stand-in, see its docstring) so
these tests check the search itself and stay fast; ``test_search_serving`` runs the real
simulation."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import latencykernel as lk
from latencykernel.errors import DocumentError, LatencyKernelError
from latencykernel.search import fewest_gpus, run
from latencykernel.search.result import Candidate, pareto

SIM = "_search_standin:simulate"
SPACE: dict[str, Any] = {"hardware": ["h200", "b200"], "tp": [1, 4, 8], "dp": [1, 2], "expert_parallel": [False, True]}
WORKLOAD = {"isl": 1024, "osl": 512, "concurrency": [8, 64]}
SLO = {"tpot": "40ms", "ttft_p99": "2s"}


@pytest.fixture(scope="module")
def serial() -> Any:
    return run("deepseek-v3", WORKLOAD, SLO, SPACE, executor="serial", simulator=SIM)


def test_every_deployment_is_a_candidate_or_a_refusal(serial: Any) -> None:
    """Guards deployments lost between building and the result: each of the 24 is either
    refused (once, with the kernel's reason) or gives one candidate per load point, in space
    order then load order."""
    r = serial
    assert r.deployments == 24
    refused = {x.deployment.index for x in r.refusals if x.load is None}
    built = sorted({c.index for c in r.candidates})
    assert sorted(refused | set(built)) == list(range(24)) and not refused & set(built)
    assert [(c.index, c.load_index) for c in r.candidates] == [(i, j) for i in built for j in range(2)]
    # DeepSeek-V3 does not fit one H200 or one B200 at tp=1, dp=1
    for x in r.refusals:
        if x.deployment.layout.gpus == 1:
            with pytest.raises(lk.RefusedError) as e:
                lk.build("deepseek-v3", x.deployment.hardware, tp=1)
            assert str(e.value) == x.reason


def test_refusals_are_grouped_by_setting_and_reason(serial: Any) -> None:
    """Guards a refusal list with one row per numeric variant: refusals differing only in
    their numbers form one group, counts add up to the refusals."""
    r = serial
    assert sum(g.count for g in r.refused) == len(r.refusals)
    assert len(r.refused) < len(r.refusals)
    g = r.refused[0]
    assert "#" in g.pattern and g.example == r.refusals[0].reason and g.setting == "parallel.tp"


def _dominates(a: Candidate, b: Candidate, ya: float, yb: float) -> bool:
    xa, xb = a.figures["tokens_per_s_per_gpu"], b.figures["tokens_per_s_per_gpu"]
    return xa >= xb and ya >= yb and (xa > xb or ya > yb)


def test_fronts_are_pareto_optimal(serial: Any) -> None:
    """Guards a front holding dominated points or missing undominated ones, against
    tokens/s per user and against TTFT (lower is better)."""
    r = serial
    steady = [c for c in r.candidates if not c.saturated]
    for front, y in (
        (r.front, lambda c: c.figures["tokens_per_s_per_user"]),
        (r.front_ttft, lambda c: -c.figures["ttft_p99_s"]),
    ):
        assert front
        for f in front:
            assert not any(_dominates(c, f, y(c), y(f)) for c in steady)
        for c in steady:
            if c not in front:
                assert any(_dominates(f, c, y(f), y(c)) or (f.figures == c.figures) for f in front)


def test_best_is_the_cheapest_candidate_meeting_the_slo(serial: Any) -> None:
    """Guards ``best`` ignoring the SLO or the price: it meets every target and no other
    SLO-meeting candidate has a lower price per million output tokens."""
    r = serial
    assert r.best is not None and r.best.meets_slo
    assert r.best.figures["tpot_mean_s"] <= 0.04 and r.best.figures["ttft_p99_s"] <= 2.0
    for c in r.candidates:
        if c.meets_slo:
            assert c.cost["usd_per_mtok"] >= r.best.cost["usd_per_mtok"]
        else:
            assert c.misses


def test_cost_follows_the_price_table(serial: Any) -> None:
    """Guards the cost arithmetic: GPU-hours per million tokens = GPUs / (tokens/s) × 1e6 /
    3600, and dollars = that × the chip's price; a user table changes only its chip."""
    c = serial.candidates[0]
    tps = c.figures["output_tokens_per_s"]
    price = lk.search.load_prices().get(c.deployment.hardware).usd_per_gpu_hour  # type: ignore[attr-defined]
    assert c.cost["gpu_hours_per_mtok"] == pytest.approx(c.gpus / tps * 1e6 / 3600, rel=1e-12)
    assert c.cost["usd_per_mtok"] == pytest.approx(c.cost["gpu_hours_per_mtok"] * price, rel=1e-12)
    assert c.cost["cost_per_hour_usd"] == pytest.approx(c.gpus * price, rel=1e-12)
    cheap = run("deepseek-v3", WORKLOAD, SLO, SPACE, executor="serial", simulator=SIM, prices={"h200": 0.01})
    for a, b in zip(serial.candidates, cheap.candidates):
        assert a.figures == b.figures
        if a.deployment.hardware == "h200":
            assert b.cost["usd_per_mtok"] < a.cost["usd_per_mtok"]
            assert "user table" in b.provenance["cost"]
        else:
            assert b.cost == a.cost
    assert cheap.best is not None and cheap.best.deployment.hardware == "h200"


def test_provenance_names_assumed_values_and_engine_rules(serial: Any) -> None:
    """Guards figures reported without their evidence: each candidate lists the assumed
    values its kernel rests on (as ``Kernel.evidence()`` gives them); the run records the
    engine rules and the documents read."""
    c = serial.candidates[0]
    d = c.deployment
    k = lk.build(
        "deepseek-v3", d.hardware, tp=d.layout.tp, dp=d.layout.dp, enable_expert_parallel=d.layout.expert_parallel
    )
    measured, total, assumed = k.evidence()
    assert c.provenance["latency"] == tuple(sorted(assumed))
    assert c.provenance["evidenced"] == (measured, total)
    p = serial.provenance
    assert p["engine_behaviour_version"] == lk.ENGINE_BEHAVIOUR_VERSION
    assert p["engine_behaviour_commit"] == lk.ENGINE_BEHAVIOUR_COMMIT
    assert p["documents"]["h200"]["chip"].endswith("h200.yaml")
    assert p["simulator"] == SIM and len(p["space_sha256"]) == 64
    taken = {a[0] for a in p["assumptions"]}
    assert {"fabric", "num_prompts", "prices"} <= taken and "tp" not in taken  # tp was stated


def test_built_kernels_equal_lk_build(serial: Any) -> None:
    """Guards the in-memory variant drifting from ``lk.build``: the search's kernel for a
    deployment prices a step exactly as ``lk.build`` with the same settings."""
    from latencykernel.search.evaluate import kernels_for, prepare
    from latencykernel.search.space import load_space

    sp = load_space({"hardware": ["h200"], "tp": [8], "dp": [2], "expert_parallel": [True], "cache_dtype": ["fp8"]})
    docs = prepare("deepseek-v3", sp)
    (k,) = kernels_for(docs, lk.search.deployments(sp)[0])  # type: ignore[attr-defined]
    ref = lk.build(
        "deepseek-v3", "h200", tp=8, dp=2, enable_expert_parallel=True, cache_dtype="fp8", nodes=2, fabric="ib-400g"
    )
    b = lk.Batch.from_columns([1] * 32 + [512], [2048] * 32 + [0], 8)
    assert k.step_time(b) == ref.step_time(b)
    assert k.limits() == ref.limits()


@pytest.mark.parametrize("workers", [1, 2])
def test_local_processes_give_the_serial_result(serial: Any, workers: int) -> None:
    """Guards results that depend on the executor, the worker count or chunk completion
    order: the same candidates, refusals, fronts and best, figure for figure."""
    r = run("deepseek-v3", WORKLOAD, SLO, SPACE, executor="local", workers=workers, simulator=SIM)
    assert r.candidates == serial.candidates
    assert r.refusals == serial.refusals
    assert r.front == serial.front and r.front_ttft == serial.front_ttft and r.best == serial.best


def test_progress_reports_every_deployment() -> None:
    """Guards a progress bar that never reaches its end."""
    seen: list[tuple[int, int]] = []
    run(
        "deepseek-v3",
        WORKLOAD,
        SLO,
        {"hardware": ["h200"], "tp": [4, 8]},
        executor="serial",
        simulator=SIM,
        progress=lambda d, t: seen.append((d, t)),
    )
    assert seen[-1] == (2, 2) and [d for d, _ in seen] == sorted(d for d, _ in seen)


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"workload": {"isl": 1024, "osl": 64}}, "exactly one of concurrency"),
        ({"workload": {"isl": 1024, "osl": 64, "concurrency": [0]}}, "workload.concurrency"),
        ({"workload": {"isl": -1, "osl": 64, "concurrency": 1}}, "workload.isl"),
        ({"workload": {"isl": 1, "osl": 64, "concurrency": 1, "rate": 2}}, "workload.rate"),
        ({"executor": "dask"}, "executor"),
        ({"workers": 0}, "workers"),
        ({"space": {"hardware": ["h900"]}}, "h900"),
    ],
)
def test_bad_arguments_are_named(kw: dict[str, Any], match: str) -> None:
    """Guards raw exceptions or silent defaults on bad input: each names the argument."""
    args: dict[str, Any] = {"workload": WORKLOAD, "space": {"hardware": ["h200"], "tp": [8]}, "executor": "serial"}
    args.update(kw)
    with pytest.raises((LatencyKernelError, DocumentError), match=match):
        run(
            "deepseek-v3",
            args["workload"],
            SLO,
            args["space"],
            executor=args["executor"],
            workers=args.get("workers"),
            simulator=SIM,
        )


def test_fewest_gpus_is_the_smallest_count_meeting_the_slo() -> None:
    """Guards the inverse question: the sizing found meets the SLO at its replica count, one
    replica fewer does not, and sizings come fewest GPUs first."""
    sp = {"hardware": ["h200"], "tp": [4, 8], "dp": [1, 2], "expert_parallel": [True]}
    r = fewest_gpus(
        "deepseek-v3", 40.0, {"tpot": "35ms"}, sp, isl=1024, osl=512, executor="serial", simulator=SIM, max_replicas=32
    )
    assert r.sizing
    assert [s.gpus for s in r.sizing] == sorted(s.gpus for s in r.sizing)
    import _search_standin as sa
    from latencykernel.search.evaluate import LoadPoint, kernels_for, prepare
    from latencykernel.search.space import load_space

    docs = prepare("deepseek-v3", load_space(sp))
    for s in r.sizing:
        ks = kernels_for(docs, s.deployment)
        at = sa.simulate(ks, s.deployment, LoadPoint(1024, 512, request_rate=40.0 / s.replicas), 0)
        assert at.tpot.mean <= 0.035
        assert s.gpus == s.replicas * s.deployment.gpus
        if s.replicas > 1:
            fewer = sa.simulate(ks, s.deployment, LoadPoint(1024, 512, request_rate=40.0 / (s.replicas - 1)), 0)
            assert fewer.tpot.mean > 0.035


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 20), st.integers(0, 20)), min_size=1, max_size=40))
def test_pareto_keeps_exactly_the_undominated(points: list[tuple[int, int]]) -> None:
    """Guards the front algorithm on ties and duplicates: a point is on the front iff no
    other point is at least as good on both axes and better on one (of equal points, the
    first is kept)."""
    fake = [
        Candidate(i, 0, None, None, {"x": float(x), "y": float(y)}, {}, True, (), False, {})  # type: ignore[arg-type]
        for i, (x, y) in enumerate(points)
    ]
    front = pareto(fake, lambda c: c.figures["x"], lambda c: c.figures["y"])
    chosen = {c.index for c in front}
    for i, (x, y) in enumerate(points):
        dominated = any(a >= x and b >= y and (a > x or b > y) for a, b in points)
        first_of_equals = points.index((x, y)) == i
        assert (i in chosen) == (not dominated and first_of_equals)
    assert [c.figures["x"] for c in front] == sorted((c.figures["x"] for c in front), reverse=True)
    assert all(math.isfinite(c.figures["y"]) for c in front)

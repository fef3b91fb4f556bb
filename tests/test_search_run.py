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


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"workload": {"isl": 1024, "osl": 64, "concurrency": []}}, "workload.concurrency: no value"),
        ({"workload": {"isl": 1024, "osl": 64, "request_rate": ()}}, "workload.request_rate: no value"),
        ({"space": {"hardware": ["h200"], "tp": [2], "gpus": [3]}}, "space: no deployment .*gpus \\[3\\]"),
        ({"space": {"hardware": ["h200"], "tp": [8], "expert_parallel": [True], "ep": [4]}}, "space: no deployment"),
        ({"space": None}, "space: expected"),
        ({"space": 5}, "space: expected"),
        ({"seed": -1}, "seed: expected a whole number of at least 0"),
        ({"seed": 1.5}, "seed"),
        ({"seed": "x"}, "seed"),
        ({"simulator": 5}, "simulator: expected"),
        ({"simulator": "math:pi"}, "simulator: 'math:pi' is not a function"),
    ],
)
def test_arguments_that_mean_nothing_are_refused_up_front(kw: dict[str, Any], match: str) -> None:
    """Guards review A7, A10 and A12: an empty load list or a space without a deployment gave
    "0 candidates" with no error; ``seed=-1`` aborted the search half-way with numpy's raw
    ValueError; ``load_space(None | 5)`` and ``simulator=5`` raised raw TypeErrors. Each is now
    refused before any work, naming the argument."""
    args: dict[str, Any] = {"workload": WORKLOAD, "space": {"hardware": ["h200"], "tp": [8]}, "simulator": SIM}
    args.update(kw)
    seed = args.pop("seed", 0)
    with pytest.raises(LatencyKernelError, match=match):
        run(
            "deepseek-v3",
            args["workload"],
            SLO,
            args["space"],
            executor="serial",
            simulator=args["simulator"],
            seed=seed,
        )
    if "workload" not in kw:
        with pytest.raises(LatencyKernelError, match=match):
            fewest_gpus(
                "deepseek-v3",
                4.0,
                SLO,
                args["space"],
                isl=64,
                osl=8,
                executor="serial",
                simulator=args["simulator"],
                seed=seed,
            )


@pytest.mark.parametrize(
    ("kw", "name"),
    [
        ({"isl": 0}, "isl: expected a whole number"),
        ({"osl": -1}, "osl: expected a whole number"),
        ({"isl": 1.5}, "isl: expected a whole number"),
        ({"rate": -2.0}, "request_rate: expected a positive request rate"),
        ({"max_replicas": 0}, "max_replicas: expected a whole number"),
    ],
)
def test_fewest_gpus_checks_its_arguments(kw: dict[str, Any], name: str) -> None:
    """Guards review A6: ``fewest_gpus(..., isl=0)`` returned an empty answer with no error;
    each argument is refused under its own name (not as a ``workload.`` key it is not)."""
    args = {"isl": 64, "osl": 8, "rate": 4.0, **kw}
    rate = args.pop("rate")
    with pytest.raises(LatencyKernelError, match=f"^{name}"):
        fewest_gpus(
            "deepseek-v3", rate, SLO, {"hardware": ["h200"], "tp": [8]}, executor="serial", simulator=SIM, **args
        )


def test_fewest_gpus_keeps_every_deployment_it_cannot_size() -> None:
    """Guards review A6: a deployment that could not meet the SLO within ``max_replicas`` (and
    a disaggregated one, which it does not size) vanished without a trace. Every deployment of
    the space is now sized or refused once, the unsized ones with the targets they missed."""
    sp = {
        "hardware": ["h200"],
        "tp": [4, 8],
        "expert_parallel": [True],
        "disaggregation": {"prefill": {"tp": [8]}, "decode": {"tp": [8]}},
    }
    r = fewest_gpus(
        "deepseek-v3", 40.0, {"tpot": "1ms"}, sp, isl=1024, osl=512, executor="serial", simulator=SIM, max_replicas=4
    )
    assert r.deployments == 3 and not r.sizing
    assert sorted(x.deployment.index for x in r.refusals) == [0, 1, 2]
    by = {x.deployment.index: x for x in r.refusals}
    assert by[2].setting == "disaggregation" and by[2].load is None
    unsized = [x for x in r.refusals if x.setting == "max_replicas"]
    assert unsized, r.refusals
    for x in unsized:
        assert "4 replicas at 10 requests/s each: misses tpot mean <= 1 ms" in x.reason
        assert x.load is not None and x.load.request_rate == 10.0  # built, so not counted as unbuilt
    assert r.as_dict()["built"] == 3 - sum(1 for x in r.refusals if x.load is None)


def test_an_empty_slo_is_said() -> None:
    """Guards review A5: with no SLO every unsaturated candidate "meets" and ``best`` is just
    the cheapest, and nothing said so. The provenance now carries the note and an assumption."""
    r = run("deepseek-v3", WORKLOAD, None, {"hardware": ["h200"], "tp": [8]}, executor="serial", simulator=SIM)
    assert r.provenance["slo"] == {} and r.provenance["slo_note"] == "no SLO given: best is the cheapest"
    assert ("slo", "none") in [a[:2] for a in r.provenance["assumptions"]]
    priced = [c for c in r.candidates if not c.saturated]
    assert r.best is not None and r.best.cost["usd_per_mtok"] == min(c.cost["usd_per_mtok"] for c in priced)
    assert (
        "slo_note"
        not in run(
            "deepseek-v3", WORKLOAD, SLO, {"hardware": ["h200"], "tp": [8]}, executor="serial", simulator=SIM
        ).provenance
    )


def test_a_chip_without_a_price_is_said() -> None:
    """Guards review A15: a chip the price table does not hold was left out of ``best``
    without a word (its candidates meet the SLO at "—"); the provenance now names it."""
    sp = {"hardware": ["gb300", "h100"], "tp": [1]}
    r = run(
        "llama-3.1-8b-instruct", {"isl": 128, "osl": 16, "concurrency": [1]}, None, sp, executor="serial", simulator=SIM
    )
    assert r.provenance["unpriced"] == {"gb300": "no price in the table; left out of best (give --prices)"}
    assert any(c.deployment.hardware == "gb300" and c.meets_slo for c in r.candidates)
    assert r.best is not None and r.best.deployment.hardware == "h100"
    priced = run(
        "llama-3.1-8b-instruct",
        {"isl": 128, "osl": 16, "concurrency": [1]},
        None,
        sp,
        executor="serial",
        simulator=SIM,
        prices={"gb300": 9.0},
    )
    assert priced.provenance["unpriced"] == {}


def test_cost_has_one_home() -> None:
    """Guards review C22 (the cost formula documented in ``prices.py`` but computed in
    ``run.py``): ``prices.cost`` computes it, GPU-hours per million tokens need no price, and
    no output means unknown per-token figures rather than infinite ones."""
    from latencykernel.search.prices import Price, cost

    p = Price(2.0, "test", "2026-12-01")
    assert cost(p, 8, 1000.0) == {
        "usd_per_gpu_hour": 2.0,
        "cost_per_hour_usd": 16.0,
        "gpu_hours_per_mtok": 8 / 1000.0 * 1e6 / 3600.0,
        "usd_per_mtok": 8 / 1000.0 * 1e6 / 3600.0 * 2.0,
    }
    assert cost(None, 8, 1000.0)["gpu_hours_per_mtok"] == 8 / 1000.0 * 1e6 / 3600.0
    assert cost(None, 8, 1000.0)["usd_per_mtok"] is None and cost(None, 8, 1000.0)["cost_per_hour_usd"] is None
    assert cost(p, 8, 0.0)["usd_per_mtok"] is None and cost(p, 8, 0.0)["cost_per_hour_usd"] == 16.0

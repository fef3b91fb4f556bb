"""validate's arithmetic: point, shape and level errors, summaries, and the closed form."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

import latencykernel as lk
from latencykernel import Batch, Resource
from latencykernel.errors import LatencyKernelError
from latencykernel.validation import (
    Deployment,
    Point,
    Prediction,
    Stat,
    closed_form_prediction,
    concurrency_band,
    score_points,
    serving_prediction,
    summarise,
    validate,
)
from latencykernel.validation.tables import headline, report_json

DATA = Path(__file__).parent / "data" / "validate"
DEP = Deployment(scenario="x.yaml")


def _pt(sweep: str, c: int, tpot_ms: float, ttft_ms: float, chip: str = "h100") -> Point:
    return Point(
        sweep,
        DEP,
        100,
        100,
        concurrency=c,
        tpot=Stat(mean=tpot_ms / 1e3),
        ttft=Stat(mean=ttft_ms / 1e3),
        chip=chip,
        model="m",
    )


def _fake(pred_tpot_ms: dict[int, float]) -> Any:
    def predict(model: Any, p: Point) -> Prediction:
        t = pred_tpot_ms[p.concurrency or 0] / 1e3
        return Prediction(ttft=Stat(mean=0.1), tpot=Stat(mean=t), itl=Stat(), method="fake")

    return predict


def test_point_shape_and_level_errors_by_hand() -> None:
    """Guards the definitions: e = pred/meas − 1; level = the anchor's e; shape =
    (pred/pred0)/(meas/meas0) − 1, and (1 + e) = (1 + level)(1 + shape)."""
    pts = [_pt("s", 1, 10.0, 100.0), _pt("s", 4, 12.0, 50.0), _pt("s", 16, 20.0, 200.0)]
    rep = score_points(pts, _fake({1: 11.0, 4: 12.1, 16: 16.5}), lambda d: object())
    a, b, c = rep.scored
    assert a.anchor and not b.anchor
    assert a.errors["tpot mean"] == pytest.approx(0.1)
    assert b.errors["tpot mean"] == pytest.approx(12.1 / 12 - 1)
    assert c.shape["tpot mean"] == pytest.approx((16.5 / 11) / (20 / 10) - 1)  # -0.25
    assert "tpot mean" not in a.shape
    for s in (b, c):
        assert 1 + s.errors["tpot mean"] == pytest.approx((1 + s.level["tpot mean"]) * (1 + s.shape["tpot mean"]))
    assert b.errors["ttft mean"] == pytest.approx(1.0)  # 0.1 s against 50 ms
    assert "itl mean" not in b.errors  # neither side has it


def test_summaries_mean_median_worst_signed_and_groups() -> None:
    """Guards the summary arithmetic, grouping, and level counted once per sweep."""
    pts = [_pt("s", 1, 10, 1), _pt("s", 4, 10, 1), _pt("t", 1, 10, 1, chip="b200"), _pt("t", 64, 10, 1, chip="b200")]
    rep = score_points(pts, _fake({1: 11.0, 4: 8.0, 64: 13.0}), lambda d: object())
    rows = dict(summarise(rep.scored, "tpot mean", "point"))
    errs = [0.1, -0.2, 0.1, 0.3]
    assert rows["all"].n == 4
    assert rows["all"].mae == pytest.approx(sum(abs(e) for e in errs) / 4)
    assert rows["all"].signed == pytest.approx(sum(errs) / 4)
    assert rows["all"].worst == pytest.approx(0.3)
    assert rows["all"].median == pytest.approx(0.15)  # of 0.1, 0.1, 0.2, 0.3
    assert rows["chip b200"].n == 2 and rows["band 1-4"].n == 3 and rows["band 17-64"].n == 1
    level = dict(summarise(rep.scored, "tpot mean", "level"))
    assert level["all"].n == 2 and level["all"].mae == pytest.approx(0.1)
    shape = dict(summarise(rep.scored, "tpot mean", "shape"))
    assert shape["all"].n == 2
    assert shape["all"].signed == pytest.approx(((0.8 / 1.1) - 1 + (1.3 / 1.1) - 1) / 2)
    assert "TPOT shape MAE" in headline(rep.scored)
    assert report_json(rep)["summaries"]["tpot mean point"]["all"]["n"] == 4


def test_bands() -> None:
    """Guards the concurrency band edges."""
    assert [concurrency_band(c) for c in (1, 4, 5, 16, 17, 64, 65, 256, 257, 4096)] == [
        "1-4",
        "1-4",
        "5-16",
        "5-16",
        "17-64",
        "17-64",
        "65-256",
        "65-256",
        "257+",
        "257+",
    ]


def test_unopenable_deployment_is_reported_not_raised() -> None:
    """Guards that one bad deployment is listed as not priced, and the rest still score."""

    def opener(d: Deployment) -> Any:
        raise LatencyKernelError("no such scenario")

    rep = score_points([_pt("s", 1, 10, 1)], _fake({1: 10.0}), opener)
    assert rep.unpriced() and rep.unpriced()[0].error == "no such scenario" and not rep.priced()


K = "examples/llama-3.1-8b-instruct-h100-bf16-tp1.yaml"


def test_closed_form_at_one_request_is_the_decode_step_plus_host() -> None:
    """Guards the closed form's TPOT at concurrency 1: one decode step at isl + osl/2 plus
    the per-output-token host cost, with no prefill interleaving term."""
    k = lk.open(K)
    p = Point("x", Deployment(scenario=K), 1000, 200, concurrency=1)
    pred = closed_form_prediction(k, p)
    step = k.step_time(Batch.decode(1, 1100)).no_overlap + k.output_token_overhead()
    assert pred.tpot.mean == pytest.approx(step, rel=1e-12)
    prefill = k.step_time(Batch.from_columns([1000], [0], decode_threshold=8)).no_overlap
    assert pred.ttft.mean == pytest.approx(k.admission_overhead(1000) + step / 2 + prefill, rel=1e-12)


def test_closed_form_rises_with_concurrency_and_prompt() -> None:
    """Guards the interleaving term's direction: more clients or longer prompts slow TPOT."""
    k = lk.open(K)
    dep = Deployment(scenario=K)
    t = [closed_form_prediction(k, Point("x", dep, 1024, 256, concurrency=c)).tpot.mean for c in (1, 4, 16, 64)]
    assert t == sorted(t) and t[0] < t[-1]
    short = closed_form_prediction(k, Point("x", dep, 256, 256, concurrency=16)).tpot.mean
    long = closed_form_prediction(k, Point("x", dep, 4096, 256, concurrency=16)).tpot.mean
    assert short is not None and long is not None and short < long


def test_validate_end_to_end_on_shipped_csv() -> None:
    """Guards the whole path on a shipped file: every point of an embedded scenario and a
    build() deployment is priced."""
    rep = validate([DATA / "native.csv"])
    assert len(rep.priced()) == 4, [s.error for s in rep.unpriced()]
    assert all("tpot mean" in s.errors for s in rep.priced())


@pytest.mark.parametrize(
    ("twin", "admission_s"),
    [
        ("aisimulate/glm-5-b300-fp8-sglang-tp8.yaml", 0.06),
        ("aisimulate/glm-5-b200-fp8-sglang-tp8.yaml", 0.15),
        ("aisimulate/glm-5-h200-fp8-sglang-tp8.yaml", 0.15),
    ],
)
def test_sglang_on_b300_takes_its_own_admission(twin: str, admission_s: float) -> None:
    """Guards the B300 entry of the SGLang set (fix 40) being ignored, or reaching the other
    parts: a B300 SGLang twin is admitted in 60 ms, the same model on B200 and H200 in 150
    ms, each with the generic 0.35 us per prompt token, and the provenance names the part."""
    k = lk.new(lk.open_inputs(twin))
    assert k.admission_overhead(1000) == pytest.approx(admission_s + 0.35e-6 * 1000, abs=2e-9)
    origin = {o.name: o for o in k.provenance()}["host_admission_per_request"]
    assert origin.set == "cost-model-host-overheads-sglang"
    chip = twin.split("-")[2]
    assert origin.scope.startswith(f"hardware: {chip}") and origin.scope.endswith("engine: sglang")


def test_an_sglang_scenario_takes_the_sglang_admission_and_nothing_else() -> None:
    """Guards the engine-scoped set: a scenario stating engine sglang (and listing
    cost-model-host-overheads-sglang) keeps every step price and limit of the same inputs
    with no engine stated but whose scheduler it runs (``limits().engine``); only its admission comes from the SGLang set, its provenance names
    that set, and validate prices with that same kernel (no adapter of its own)."""
    sg_file = "aisimulate/deepseek-v3-b200-fp4-sglang-tp4.yaml"
    inputs = lk.open_inputs(sg_file)
    assert inputs.scenario.engine == "sglang"
    sg = lk.new(inputs)
    inputs.scenario.engine = None
    vl = lk.new(inputs)
    assert sg.admission_overhead(1000) == pytest.approx(0.15 + 0.35e-6 * 1000, abs=2e-9)  # whole nanoseconds
    assert vl.admission_overhead(1000) == pytest.approx(0.04 + 0.35e-6 * 1000, rel=1e-9)
    b = Batch.decode(8, 2048)
    assert sg.step_time(b) == vl.step_time(b)
    # the limits differ in whose scheduler runs it alone (SGLang's runs prefill batches alone)
    assert sg.limits().engine == "sglang" and vl.limits().engine == "vllm"
    assert dataclasses.replace(sg.limits(), engine="vllm") == vl.limits()
    assert sg.output_token_overhead() == vl.output_token_overhead()
    origin = {o.name: o for o in sg.provenance()}["host_admission_per_request"]
    assert origin.set == "cost-model-host-overheads-sglang" and origin.scope.endswith("engine: sglang")
    assert "engine" in [n for n, _, _ in vl.assumptions()]
    assert "engine" not in [n for n, _, _ in sg.assumptions()]
    dep = Deployment(scenario=sg_file)
    rep = validate(
        points=[Point("x", dep, 1000, 200, concurrency=1, engine="sglang")], predictor=closed_form_prediction
    )
    (s,) = rep.priced()
    assert s.prediction is not None
    assert s.prediction.ttft.mean == closed_form_prediction(sg, Point("x", dep, 1000, 200, concurrency=1)).ttft.mean


def test_prefill_queue_is_zero_alone_a_burst_when_all_send_at_once_and_rises_with_load() -> None:
    """Guards the closed form's prompt queue: one resident waits for no one, a window of 0
    is a burst whose j-th prompt waits j M (mean (b - 1) / 2 M), and the wait rises as the
    same prompts arrive over a shorter window."""
    from latencykernel.validation.predict import prefill_queue_s

    assert prefill_queue_s(1, 0.3, 0.0) == 0.0
    assert prefill_queue_s(9, 0.1, 0.0) == pytest.approx(0.4, rel=1e-12)
    waits = [prefill_queue_s(9, 0.1, w) for w in (100.0, 20.0, 5.0, 1.2, 0.5)]
    assert waits == sorted(waits) and waits[0] > 0
    rho = 8 / 20.0 * 0.1  # M/D/1 below rho 0.9
    assert prefill_queue_s(9, 0.1, 20.0) == pytest.approx(rho * 0.1 / (2 * (1 - rho)), rel=1e-12)


def test_wave_queue_round_zero_is_the_first_wave_burst_and_spread_lowers_it() -> None:
    """Guards the closed loop's rounds: one round is the old first-wave term
    (b - 1) / 2 M; more rounds average in the later, spread rounds, which wait less than
    the burst; a wider length spread never raises the wait."""
    from latencykernel.validation.predict import wave_queue_s

    assert wave_queue_s(16, 0.05, 30.0, 3.0, 1) == pytest.approx(15 / 2 * 0.05, rel=1e-12)
    ten = wave_queue_s(16, 0.05, 30.0, 3.0, 10)
    assert 15 / 2 * 0.05 / 10 < ten < 15 / 2 * 0.05
    assert wave_queue_s(16, 0.05, 30.0, 6.0, 10) <= ten
    assert wave_queue_s(1, 0.05, 30.0, 3.0, 10) == 0.0


def test_batch_wait_holds_a_lone_prompt_the_timeout_and_nothing_without_decodes() -> None:
    """Guards TensorRT-LLM's batch-waiting hold (py_executor ``_waiting_requests``): no
    other request decoding, or the setting off, holds nothing; a prompt alone in its window
    waits the whole timeout in decode steps; prompts that join a window wait less, so the
    mean falls as the other residents send faster; a token threshold the held prompts
    already pass releases at once."""
    from latencykernel.validation.predict import batch_wait_s

    assert batch_wait_s(1, 1000, 1000, 0.02, 20, 0.9, 16384) == 0.0
    assert batch_wait_s(8, 1000, 1000, 0.02, 0, 0.9, 16384) == 0.0
    lam = 1 / (1000 + 20)
    assert batch_wait_s(2, 1000, 1000, 0.02, 20, 0.0, 16384) == pytest.approx(
        (20 + lam * 400 / 2) / (1 + lam * 20) * 0.02, rel=1e-12
    )
    holds = [batch_wait_s(b, 1000, 1000, 0.02, 20, 0.0, 16384) / 0.02 for b in (2, 8, 32, 128)]
    assert holds == sorted(holds, reverse=True) and holds[0] < 20 and holds[-1] > 10
    assert batch_wait_s(8, 16000, 1000, 0.02, 20, 0.9, 16384) == 0.0


def test_closed_form_adds_the_batch_wait_to_ttft_only() -> None:
    """Guards where the hold lands: a point stating batch waiting has the same TPOT and a
    TTFT larger by the hold (before the queue terms), at one client no hold at all."""
    k = lk.open(K)
    dep = Deployment(scenario=K)
    off = closed_form_prediction(k, Point("x", dep, 1024, 1024, concurrency=4))
    on = closed_form_prediction(
        k,
        Point("x", dep, 1024, 1024, concurrency=4, batch_wait_timeout_iters=20, batch_wait_max_tokens_ratio=0.9),
    )
    assert on.tpot.mean == off.tpot.mean
    assert on.ttft.mean is not None and off.ttft.mean is not None
    assert on.ttft.mean - off.ttft.mean > 15 * (off.tpot.mean or 0) * 0.5
    one_off = closed_form_prediction(k, Point("x", dep, 1024, 1024, concurrency=1))
    one_on = closed_form_prediction(k, Point("x", dep, 1024, 1024, concurrency=1, batch_wait_timeout_iters=20))
    assert one_on.ttft.mean == one_off.ttft.mean


def test_async_scheduling_adds_one_decided_step_only_when_others_run() -> None:
    """Guards fixes 11 and 15: with asynchronous scheduling a new prompt waits one more step
    (the step already decided), never when it runs alone or when the engine schedules
    synchronously; the closed form's TTFT at 4 clients differs by exactly one mean step
    (its TPOT, which carries the other residents' interleaved prefills and so exceeds the
    pure decode step) and its TPOT not at all."""
    import dataclasses

    from latencykernel.validation.predict import closed_form_parts, decided_step_wait_s

    assert decided_step_wait_s(1, 0.02, True) == 0.0
    assert decided_step_wait_s(4, 0.02, False) == 0.0
    assert decided_step_wait_s(4, 0.02, True) == 0.02

    k = lk.open(K)
    lim = k.limits()

    class Sync:
        def __init__(self, inner: Any) -> None:
            self._inner = inner

        def limits(self) -> Any:
            return dataclasses.replace(lim, async_scheduling=False)

        def __getattr__(self, name: str) -> Any:
            return getattr(self._inner, name)

    assert lim.async_scheduling
    p = Point("x", Deployment(scenario=K), 1024, 256, concurrency=4)
    on, off = closed_form_prediction(k, p), closed_form_prediction(Sync(k), p)
    d = closed_form_parts(k, 1024, 256, 4)[0]
    assert on.ttft.mean is not None and off.ttft.mean is not None and on.tpot.mean is not None
    assert on.ttft.mean - off.ttft.mean == pytest.approx(on.tpot.mean, rel=1e-9)
    assert on.tpot.mean > d  # the decided step is a mean step of the mix, not a pure decode
    assert on.tpot.mean == off.tpot.mean
    alone = Point("x", Deployment(scenario=K), 1024, 256, concurrency=1)
    assert closed_form_prediction(k, alone).ttft.mean == closed_form_prediction(Sync(k), alone).ttft.mean


def test_a_queued_prompt_is_served_in_its_marginal_plus_its_share_of_the_decodes() -> None:
    """Guards fix 12: the prompt queue serves each prompt in M plus its share of the step
    it runs in (the other residents' decodes run first, vLLM Scheduler.schedule): nothing
    extra alone, base / k when k prompts of isl tokens fit beside the decodes, one base per
    chunk step when the prompt needs more than one."""
    from latencykernel.validation.predict import prompt_service_s

    k = lk.open(K)
    lim = k.limits()
    room = lim.max_num_batched_tokens - 7
    base = k.step_time(Batch.decode(7, 1024 + 128)).no_overlap
    assert prompt_service_s(k, 1024, 256, 1, 0.02) == 0.02
    fits = room // 1024
    assert fits >= 2
    assert prompt_service_s(k, 1024, 256, 8, 0.02) == pytest.approx(0.02 + base / min(fits, 8), rel=1e-9)
    long_isl = room + 1
    base_long = k.step_time(Batch.decode(7, long_isl + 128)).no_overlap
    assert prompt_service_s(k, long_isl, 256, 8, 0.02) == pytest.approx(0.02 + 2 * base_long, rel=1e-9)


@pytest.mark.parametrize(
    ("twin", "engine", "per_request_s", "per_token_s", "set_name", "per_kernel_s"),
    [
        ("aisimulate/llama-3.1-70b-instruct-h200-fp8-vllm-tp1.yaml", "vllm", 0.017, 4e-6, "-vllm", 3.5e-6),
        ("aisimulate/llama-3.1-70b-instruct-h200-fp8-trt-tp1.yaml", "trt", 0.029, 0.35e-6, "-trt", 2.0e-6),
    ],
)
def test_vllm_and_trt_twins_take_their_fitted_admission_and_nothing_else(
    twin: str, engine: str, per_request_s: float, per_token_s: float, set_name: str, per_kernel_s: float
) -> None:
    """Guards the engine-scoped host sets fitted on the InferenceX fit half: a vLLM or
    TensorRT-LLM twin takes its set's admission (per request and per prompt token) and keeps
    every step price (but its set's per-kernel dispatch, fixes 26 and 33, and its host time
    per scheduled request, fix 39: its host time alone differs, by the step's kernel count x
    (3.2 us - the set's) less 6 us per request), limit (but TensorRT-LLM's KV
    reservation to completion, its engine's own scheduler rule, and whose scheduler runs it,
    ``limits().engine``) and per-token host cost of
    the same inputs on an engine the set is not scoped to, which take the generic set's 40
    ms and 0.35 us per token (as the Go guide's deployment, listing only the generic set,
    does)."""
    inputs = lk.open_inputs(twin)
    assert inputs.scenario.engine == engine
    assert f"cost-model-host-overheads{set_name}" in inputs.scenario.coefficients
    fitted = lk.new(inputs)
    inputs.scenario.engine = "sglang"  # the set is listed but scoped to its engine alone
    generic = lk.new(inputs)
    for n in (1000, 8000):
        # admission is held to whole nanoseconds
        assert fitted.admission_overhead(n) == pytest.approx(per_request_s + per_token_s * n, abs=2e-9)
        assert generic.admission_overhead(n) == pytest.approx(0.04 + 0.35e-6 * n, abs=2e-9)
    b = Batch.decode(8, 2048)
    fs, gs = fitted.step_time(b), generic.step_time(b)
    assert {r: t for r, t in fs.per_resource.items() if r != Resource.HOST} == {
        r: t for r, t in gs.per_resource.items() if r != Resource.HOST
    }
    # and the set's host time per scheduled request (fix 39), which the generic set has not
    assert fitted.constants.host_per_request_s == pytest.approx(6e-6)
    assert generic.constants.host_per_request_s == 0.0
    per_requests_s = 8 * 6e-6
    kernels = (gs.per_resource[Resource.HOST] - fs.per_resource[Resource.HOST] + per_requests_s) / (
        3.2e-6 - per_kernel_s
    )
    assert kernels > 100 and kernels == pytest.approx(fitted.constants.plan.total_kernels, abs=0.01)  # ns edges
    origin = {o.name: o for o in fitted.provenance()}["host_launch_per_kernel"]
    assert origin.set == f"cost-model-host-overheads{set_name}" and origin.scope.endswith(f"engine: {engine}")
    assert fitted.limits().kv_reservation == ("to_completion" if engine == "trt" else "on_demand")
    assert generic.limits().engine == "sglang"  # the engine whose scheduler runs it
    assert dataclasses.replace(fitted.limits(), kv_reservation="on_demand", engine="sglang") == generic.limits()
    assert fitted.output_token_overhead() == generic.output_token_overhead()
    origin = {o.name: o for o in fitted.provenance()}["host_admission_per_request"]
    assert origin.set == f"cost-model-host-overheads{set_name}" and origin.scope.endswith(f"engine: {engine}")
    assert origin.method == "measured"


VLLM_TWIN = "aisimulate/llama-3.1-70b-instruct-h200-fp8-vllm-tp1.yaml"


def test_tokenisation_is_the_admissions_per_token_part() -> None:
    """Guards fix 16: the front end's per-prompt work is host_admission_per_token x isl
    (the vLLM set's fitted 4 us per token), without the per-request part."""
    from latencykernel.validation.predict import tokenisation_s

    k = lk.open(VLLM_TWIN)
    assert tokenisation_s(k, 1000) == pytest.approx(4e-6 * 1000, abs=2e-9)
    assert tokenisation_s(k, 8000) == pytest.approx(4e-6 * 8000, abs=2e-9)


def test_prompts_queue_at_the_tokeniser_only_when_clients_share_it() -> None:
    """Guards fix 16: against the same deployment whose admission has no per-token part,
    one client pays only its own tokenisation, while at 16 and 64 clients the TTFT gap
    grows past it (the prompts of the round's other clients are tokenised first), and
    TPOT never moves."""
    from latencykernel.validation.predict import tokenisation_s

    k = lk.open(VLLM_TWIN)

    class Untokenised:
        def __init__(self, inner: Any) -> None:
            self._inner = inner

        def admission_overhead(self, n: int) -> float:
            return float(self._inner.admission_overhead(n)) - 4e-6 * n

        def __getattr__(self, name: str) -> Any:
            return getattr(self._inner, name)

    plain = Untokenised(k)
    assert tokenisation_s(plain, 1000) == pytest.approx(0.0, abs=2e-9)
    dep = Deployment(scenario=VLLM_TWIN)
    gaps = []
    for c in (1, 16, 64):
        p = Point("x", dep, 1000, 1000, concurrency=c, range_ratio=1 / 9)
        on, off = closed_form_prediction(k, p), closed_form_prediction(plain, p)
        assert on.tpot.mean == off.tpot.mean
        assert on.ttft.mean is not None and off.ttft.mean is not None
        gaps.append(on.ttft.mean - off.ttft.mean)
    assert gaps[0] == pytest.approx(4e-6 * 1000, abs=1e-8)
    assert gaps[0] < gaps[1] < gaps[2]


def test_closed_form_holds_as_many_residents_as_the_runs_max_num_seqs() -> None:
    """Guards fix 20: a point's max_num_seqs replaces the deployment's cap on residents.
    Where the clients of a rank fit under both caps nothing changes; above the
    deployment's 256, a run's larger cap admits them (no closed-loop wait for a free slot,
    so TTFT falls), and once the cap covers every client, raising it further changes
    nothing; a smaller cap than the deployment's makes TTFT longer."""
    sc = "aisimulate/minimax-m2.5-b300-fp4-vllm-tp2-ep4-dp2.yaml"
    k = lk.open(sc)
    dep = Deployment(scenario=sc)
    assert k.limits().max_num_seqs == 256 and k.limits().data_parallel == 2

    def ttft(c: int, seqs: int) -> float:
        got = closed_form_prediction(k, Point("x", dep, 1000, 1000, concurrency=c, max_num_seqs=seqs)).ttft.mean
        assert got is not None
        return got

    assert ttft(400, 1024) == ttft(400, 0) == ttft(400, 256)  # 200 clients a rank: no cap binds
    assert ttft(1000, 1024) < ttft(1000, 0) / 5  # 500 a rank against 256 slots
    assert ttft(1000, 500) == ttft(1000, 1024) == ttft(1000, 4096)
    assert ttft(1000, 128) > ttft(1000, 0)
    with pytest.raises(LatencyKernelError, match="max_num_seqs"):
        Point("x", dep, 1000, 1000, concurrency=4, max_num_seqs=-1)
    budget = k.limits().max_num_batched_tokens  # vLLM will not start with more seqs than tokens
    with pytest.raises(LatencyKernelError, match="max_num_seqs"):
        closed_form_prediction(k, Point("x", dep, 1000, 1000, concurrency=4, max_num_seqs=budget + 1))


def test_closed_form_schedules_prompts_under_the_runs_token_budget() -> None:
    """Guards a point's max_num_batched_tokens (the run's token budget, e.g. TensorRT-LLM's
    --max_num_tokens 16384 in InferenceX's Llama-3.1-70B scripts) replacing the
    deployment's in the closed form. The deployment's own value changes nothing; a budget
    that splits an 8k prompt into more chunks costs TTFT at one client (more steps of the
    prompt's own), and one that holds two prompts beside the decodes drains the prompt
    queue faster at 32 clients; a budget vLLM would not start with is refused naming the
    setting."""
    sc = "aisimulate/llama-3.1-70b-instruct-h200-fp8-trt-tp8.yaml"
    k = lk.open(sc)
    dep = Deployment(scenario=sc)
    own = int(k.limits().max_num_batched_tokens)
    assert own == 8192

    def ttft(c: int, budget: int) -> float:
        got = closed_form_prediction(k, Point("x", dep, 7400, 900, concurrency=c, max_num_batched_tokens=budget))
        assert got.ttft.mean is not None
        return got.ttft.mean

    assert ttft(32, own) == ttft(32, 0)
    assert ttft(1, 2048) > ttft(1, 0)
    assert ttft(32, 16384) < ttft(32, 0)
    with pytest.raises(LatencyKernelError, match="max_num_batched_tokens"):
        Point("x", dep, 1000, 1000, concurrency=4, max_num_batched_tokens=-5)
    with pytest.raises(LatencyKernelError, match="max_num_batched_tokens"):
        closed_form_prediction(k, Point("x", dep, 1000, 1000, concurrency=4, max_num_batched_tokens=100))


def _record_estimate(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Replace ``serving.estimate`` by a stand-in recording each call's engine settings."""
    import latencykernel.serving as serving

    seen: list[dict[str, Any]] = []

    def fake(model: Any, **kw: Any) -> Any:
        seen.append(kw)
        d = type("D", (), {"mean": 1.0, "median": 1.0, "p99": 1.0})()
        return type("R", (), {"ttft": d, "tpot": d, "itl": d})()

    monkeypatch.setattr(serving, "estimate", fake)
    return seen


def test_serving_prediction_passes_the_runs_token_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """Guards the serving predictor handing a point's max_num_batched_tokens (and nothing
    when the point states none) to the simulation as the engine setting of that name."""
    seen = _record_estimate(monkeypatch)
    dep = Deployment(scenario="aisimulate/llama-3.1-70b-instruct-h200-fp8-trt-tp8.yaml")
    serving_prediction(None, Point("x", dep, 1000, 1000, concurrency=4, max_num_batched_tokens=16384))
    serving_prediction(None, Point("x", dep, 1000, 1000, concurrency=4))
    assert seen[0]["max_num_batched_tokens"] == 16384
    assert "max_num_batched_tokens" not in seen[1]


def test_a_runs_kv_reservation_replaces_the_deployments(monkeypatch: pytest.MonkeyPatch) -> None:
    """Guards a point's kv_reservation (e.g. InferenceX's MiniMax TensorRT-LLM runs setting
    capacity_scheduler_policy MAX_UTILIZATION) overriding the TRT twin's to_completion: the
    closed form's resident cap moves from isl + osl to isl + osl/2 blocks a request (a
    1k8k closed loop past the cap waits for whole requests: TTFT falls), the serving
    predictor passes the setting by name, and a bad value is refused naming it."""
    sc = "aisimulate/llama-3.1-70b-instruct-h200-fp8-trt-tp1.yaml"
    k = lk.open(sc)
    dep = Deployment(scenario=sc)
    assert k.limits().kv_reservation == "to_completion"

    def ttft(resv: str) -> float:
        got = closed_form_prediction(k, Point("x", dep, 922, 7373, concurrency=64, kv_reservation=resv))
        assert got.ttft.mean is not None
        return got.ttft.mean

    assert ttft("") == ttft("to_completion") > 10 * ttft("on_demand")
    seen = _record_estimate(monkeypatch)
    serving_prediction(None, Point("x", dep, 1000, 1000, concurrency=4, kv_reservation="on_demand"))
    serving_prediction(None, Point("x", dep, 1000, 1000, concurrency=4))
    assert seen[0]["kv_reservation"] == "on_demand" and "kv_reservation" not in seen[1]
    with pytest.raises(LatencyKernelError, match="kv_reservation"):
        Point("x", dep, 1000, 1000, concurrency=4, kv_reservation="guaranteed_no_evict")


def test_a_runs_recv_interval_reaches_both_predictors(monkeypatch: pytest.MonkeyPatch) -> None:
    """Guards a point's scheduler_recv_interval (InferenceX's SGLang recipes set 10 or 30):
    the closed form adds (N - 1) / 2 decode steps to TTFT with others decoding and nothing
    for a lone request, TPOT unmoved; the serving predictor passes it by name, and not at
    all when unset."""
    sc = "aisimulate/glm-5-b200-fp4-sglang-tp4.yaml"
    k = lk.open(sc)
    dep = Deployment(scenario=sc)

    def pred(c: int, n: int) -> tuple[float, float]:
        got = closed_form_prediction(k, Point("x", dep, 922, 922, concurrency=c, scheduler_recv_interval=n))
        assert got.ttft.mean is not None and got.tpot.mean is not None
        return got.ttft.mean, got.tpot.mean

    (t1, p1), (t30, p30) = pred(16, 0), pred(16, 30)
    assert p30 == p1 and t30 > t1 + 0.1  # 14.5 decode steps of about 14 ms
    assert pred(1, 30) == pred(1, 0)
    seen = _record_estimate(monkeypatch)
    serving_prediction(None, Point("x", dep, 1000, 1000, concurrency=4, scheduler_recv_interval=10))
    serving_prediction(None, Point("x", dep, 1000, 1000, concurrency=4))
    assert seen[0]["scheduler_recv_interval"] == 10 and "scheduler_recv_interval" not in seen[1]


# -- prefix cache hits and the context window ---------------------------------------------


@pytest.mark.parametrize(
    ("isl", "rate", "block", "cached"),
    [
        (1, 0.0, 1, 0),
        (1, 0.999, 1, 0),  # a one-token prompt computes its only token
        (2, 0.5, 1, 1),
        (17, 0.1, 1, 1),  # floor(1.7)
        (1000, 0.999, 1, 999),  # floor(999.0) = isl - 1: the last token is computed
        (8015, 0.999, 1, 8006),
        (8015, 0.538, 1, 4312),  # floor(4312.07): the Granite-5 H200 series at 2 clients
        (8015, 0.538, 16, 4304),  # whole 16-token blocks: 269 of them
        (1000, 0.9, 16, 896),  # 900 cached tokens hold 56 whole blocks
        (17, 0.1, 16, 0),  # one token is no whole block
        (8015, 0.999, 16, 8000),
    ],
)
def test_cached_prompt_tokens_whole_blocks_below_the_prompt(isl: int, rate: float, block: int, cached: int) -> None:
    """Guards the cached count against the serving simulation's and vLLM's rule: the
    workload's floor(isl x rate) tokens, kept in whole KV blocks (vLLM's hit is whole
    blocks), never the prompt's last token (computed for its logits)."""
    from latencykernel.validation.predict import cached_prompt_tokens

    assert cached_prompt_tokens(isl, rate, block) == cached


def test_no_cached_prompt_tokens_with_prefix_caching_off() -> None:
    """Guards a measured hit rate applied to a deployment that does not cache prefixes
    (the serving simulation admits no hit then)."""
    from latencykernel.validation.predict import cached_prompt_tokens

    assert cached_prompt_tokens(8015, 0.9, 16, caching=False) == 0
    assert cached_prompt_tokens(8015, 0.9, 16, caching=True) == 7200


def test_prefix_hits_shorten_the_prompt_the_closed_form_computes() -> None:
    """Guards a measured prefix hit rate being ignored (the Granite-5 report points hit
    54-91 % of prompt tokens): the prompt's steps start after the cached tokens, so TTFT and
    the interleaved prefill in TPOT fall as the rate rises, and rate 0 is the old answer."""
    sc = "aisimulate/llama-3.1-70b-instruct-h200-fp8-vllm-tp8.yaml"
    k = lk.open(sc)
    dep = Deployment(scenario=sc)
    for c in (1, 4, 16):
        got = [
            closed_form_prediction(k, Point("x", dep, 8000, 500, concurrency=c, prefix_hit_rate=h))
            for h in (0.0, 0.25, 0.5, 0.9)
        ]
        ttft = [g.ttft.mean for g in got]
        tpot = [g.tpot.mean for g in got]
        assert ttft == sorted(ttft, reverse=True) and ttft[0] > ttft[-1], c
        assert tpot == sorted(tpot, reverse=True), c
        assert got[0] == closed_form_prediction(k, Point("x", dep, 8000, 500, concurrency=c))
    # at one request the prompt's own steps are the chunks after the cached prefix
    p = closed_form_prediction(k, Point("x", dep, 8000, 500, concurrency=1, prefix_hit_rate=0.5))
    step = k.step_time(Batch.decode(1, 8250)).no_overlap + k.output_token_overhead()
    rest = k.step_time(Batch.from_columns([4000], [4000], decode_threshold=8)).no_overlap
    assert p.ttft.mean == pytest.approx(k.admission_overhead(8000) + step / 2 + rest, rel=1e-9)


@pytest.mark.parametrize("rate", [-0.1, 1.0, 1.5])
def test_a_prefix_hit_rate_outside_zero_to_one_is_refused(rate: float) -> None:
    with pytest.raises(LatencyKernelError, match="prefix_hit_rate"):
        Point("x", DEP, 1000, 100, concurrency=1, prefix_hit_rate=rate)


def test_serving_prediction_serves_the_runs_prefix_hits() -> None:
    """Guards the serving predictor dropping a point's prefix hit rate: the simulated
    requests carry it as cached prompt tokens, so TTFT falls."""
    sc = "aisimulate/llama-3.1-70b-instruct-h200-fp8-vllm-tp8.yaml"
    k = lk.open(sc)
    dep = Deployment(scenario=sc)
    cold = serving_prediction(k, Point("x", dep, 8000, 64, concurrency=2))
    warm = serving_prediction(k, Point("x", dep, 8000, 64, concurrency=2, prefix_hit_rate=0.75))
    assert cold.ttft.mean is not None and warm.ttft.mean is not None
    assert warm.ttft.mean < 0.7 * cold.ttft.mean


def test_the_closed_form_refuses_a_request_longer_than_max_model_len() -> None:
    """Guards the closed form pricing a point vLLM would reject (the serving simulation
    refuses it): prompt + output beyond max_model_len is refused naming the setting."""
    sc = "aisimulate/llama-3.1-70b-instruct-h200-fp8-vllm-tp8.yaml"
    k = lk.open(sc)
    mml = int(k.limits().max_model_len)
    dep = Deployment(scenario=sc)
    assert closed_form_prediction(k, Point("x", dep, mml - 100, 100, concurrency=1)).tpot.mean
    with pytest.raises(LatencyKernelError, match="max_model_len") as e:
        closed_form_prediction(k, Point("x", dep, mml - 100, 101, concurrency=1))
    assert getattr(e.value, "setting", None) == "max_model_len"
    scored = score_points([Point("x", dep, mml, 200, concurrency=1)], closed_form_prediction, lambda d: k)
    assert scored.scored[0].prediction is None and "max_model_len" in (scored.scored[0].error or "")


def test_an_sglang_run_loses_a_decode_step_to_each_other_prefill() -> None:
    """Guards SGLang's prefill batch run alone (fixes 36 and 38): the same point measured on
    SGLang prices each other prompt's prefill at its step alone P instead of its marginal M
    in the others' mixed step (D + (b - 1) P / osl against D + (b - 1) M / osl), P and M
    priced here from the kernel's own steps; a lone request is unchanged (TPOT and TTFT),
    and vLLM and TensorRT-LLM runs pay nothing."""
    k = lk.open(K)
    dep = Deployment(scenario=K)
    isl, osl, c = 1024, 256, 8
    vl = closed_form_prediction(k, Point("x", dep, isl, osl, concurrency=c, engine="vllm"))
    sg = closed_form_prediction(k, Point("x", dep, isl, osl, concurrency=c, engine="sglang"))
    trt = closed_form_prediction(k, Point("x", dep, isl, osl, concurrency=c, engine="trt"))
    thr = k.limits().decode_threshold
    assert k.limits().max_num_batched_tokens >= isl + c  # one chunk, alone or mixed
    ctx = isl + osl // 2
    others = k.step_time(Batch.decode(c - 1, ctx)).no_overlap
    mixed = k.step_time(Batch.from_columns([1] * (c - 1) + [isl], [ctx - 1] * (c - 1) + [0], decode_threshold=thr))
    alone = k.step_time(Batch.from_columns([isl], [0], decode_threshold=thr)).no_overlap
    marginal = mixed.no_overlap - others
    assert alone > marginal  # the decodes' step no longer hides inside the prompt's
    assert vl.tpot.mean is not None and sg.tpot.mean is not None
    assert sg.tpot.mean - vl.tpot.mean == pytest.approx((c - 1) * (alone - marginal) / osl, rel=1e-6)
    assert trt.tpot.mean == vl.tpot.mean
    one_vl = closed_form_prediction(k, Point("x", dep, isl, osl, concurrency=1, engine="vllm"))
    one_sg = closed_form_prediction(k, Point("x", dep, isl, osl, concurrency=1, engine="sglang"))
    assert one_sg.tpot.mean == one_vl.tpot.mean and one_sg.ttft.mean == one_vl.ttft.mean
    # the label is matched in any case, as a user's CSV may write it
    cased = closed_form_prediction(k, Point("x", dep, isl, osl, concurrency=c, engine="SGLang"))
    assert cased.tpot.mean == sg.tpot.mean

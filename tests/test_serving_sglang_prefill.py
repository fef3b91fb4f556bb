"""SGLang runs a prefill batch alone (serving.scheduler.schedule with engine sglang, its
``enable_mixed_chunk`` off) and the closed form's matching pause (validation.predict)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from latencykernel.errors import LatencyKernelError
from latencykernel.serving import ClosedLoop, Poisson, RandomRange, Trace, simulate
from latencykernel.validation.points import Deployment, Point
from latencykernel.validation.predict import closed_form_prediction, serving_prediction
from test_serving_sim import Affine, _same
from test_serving_stream import Summed

STEP_S = 0.01


def _two_requests(**engine: object) -> tuple[float, float]:
    """A: a 4-token prompt at 0 s, then 399 decodes; B: a 128-token prompt arriving at 55.5
    ms, 2 output tokens; every step lasts 10 ms and takes 64 tokens. Returns (A's e2e, B's
    TTFT)."""
    m = Affine(a=STEP_S, b=0.0, c=0.0)
    r = simulate(m, Trace([(0.0, 4, 400), (0.0555, 128, 2)]), skip_ahead=False, **engine)
    return float(r.per_request["e2el"][0]), float(r.per_request["ttft"][1])


def test_sglang_prefill_pauses_the_decodes_by_hand() -> None:
    """Guards the rule against a hand count. vLLM: B's chunks of 63 tokens ride in A's decode
    steps at 60, 70 and 80 ms (A's decode takes one token of the 64), B's first token at 90
    ms; A never loses a step (400 steps, 4.00 s). SGLang: B's two chunks of 64 run alone at
    60 and 70 ms (first token at 80 ms), A waits both steps (4.02 s)."""
    a_v, b_v = _two_requests()
    a_s, b_s = _two_requests(engine="sglang")
    assert a_v == pytest.approx(4.00, abs=1e-9)
    assert b_v == pytest.approx(0.090 - 0.0555, abs=1e-9)
    assert a_s == pytest.approx(4.02, abs=1e-9)
    assert b_s == pytest.approx(0.080 - 0.0555, abs=1e-9)


def test_mixed_chunk_is_vllms_rule() -> None:
    """Guards --enable-mixed-chunk: SGLang with it mixes chunks into the decodes' step, as
    vLLM does, and gives vLLM's result exactly."""
    assert _two_requests(engine="sglang", enable_mixed_chunk=True) == _two_requests()


def test_mixed_chunk_outside_sglang_is_refused() -> None:
    """Guards bad input: the SGLang flag on a vLLM engine is this package's error naming it."""
    m = Affine(a=STEP_S, b=0.0, c=0.0)
    with pytest.raises(LatencyKernelError, match="enable_mixed_chunk"):
        simulate(m, Trace([(0.0, 4, 4)]), enable_mixed_chunk=True)
    with pytest.raises(LatencyKernelError, match="enable_mixed_chunk"):
        simulate(m, Trace([(0.0, 4, 4)]), engine="sglang", enable_mixed_chunk="yes")


def test_sglang_default_is_recorded() -> None:
    """Guards the recorded default: an SGLang run states that prefills are not mixed."""
    m = Affine(a=STEP_S, b=0.0, c=0.0)
    r = simulate(m, Trace([(0.0, 4, 4)]), engine="sglang")
    notes = {name: value for name, value, _ in r.assumptions}
    assert notes.get("enable_mixed_chunk") == "False"
    assert "alone" in dict((n, why) for n, _, why in r.assumptions)["engine"]


@settings(max_examples=30, deadline=None)
@given(
    prompt=st.integers(min_value=9, max_value=200),
    outs=st.lists(st.integers(min_value=1, max_value=40), min_size=2, max_size=12),
    gaps_ms=st.lists(st.integers(min_value=0, max_value=80), min_size=12, max_size=12),
    async_scheduling=st.booleans(),
)
def test_no_sglang_step_mixes_prefill_and_decode(
    prompt: int, outs: list[int], gaps_ms: list[int], async_scheduling: bool
) -> None:
    """Guards the rule over random traces: with one prompt length L, a step's entry is a
    prompt chunk when it starts below L computed tokens and a decode otherwise; under SGLang
    no step holds both, every request still gets all its tokens, and a lone request is
    priced as under vLLM."""
    t, rows = 0.0, []
    for o, g in zip(outs, gaps_ms):
        t += g * 1e-3
        rows.append((t, prompt, o))
    m = Affine(a=STEP_S, b=1e-5, c=1e-7, async_scheduling=async_scheduling)
    r = simulate(m, Trace(rows), engine="sglang", skip_ahead=False)
    assert list(r.per_request["output"]) == outs
    for scheduled, computed in m.batches:
        kinds = {c >= prompt for c in computed}
        assert len(kinds) == 1, (scheduled, computed)


@settings(max_examples=15, deadline=None)
@given(
    clients=st.integers(min_value=1, max_value=12),
    isl=st.integers(min_value=8, max_value=300),
    osl=st.integers(min_value=2, max_value=60),
    rate=st.floats(min_value=2.0, max_value=40.0),
    async_scheduling=st.booleans(),
)
def test_skip_ahead_keeps_the_sglang_rule(
    clients: int, isl: int, osl: int, rate: float, async_scheduling: bool
) -> None:
    """Guards the fast paths (the stream of stream.py, the vectorised decode runs of runs.py):
    with skip-ahead on, an SGLang closed loop and open loop give the step-by-step loop's
    result exactly, on a step model the stream could price."""
    loads = (
        ClosedLoop(clients, RandomRange(isl, 0.5), RandomRange(osl, 0.5), num_prompts=3 * clients),
        Poisson(rate, RandomRange(isl, 0.5), RandomRange(osl, 0.5), num_prompts=40),
    )
    for w in loads:
        a = simulate(Summed(async_scheduling=async_scheduling), w, engine="sglang", seed=3)
        b = simulate(Summed(async_scheduling=async_scheduling), w, engine="sglang", skip_ahead=False, seed=3)
        _same(a, b)


@settings(max_examples=40, deadline=None)
@given(
    prompts=st.lists(st.integers(min_value=8, max_value=48), min_size=1, max_size=6),
    outs=st.lists(st.integers(min_value=1, max_value=3), min_size=6, max_size=6),
    gaps_steps=st.lists(st.integers(min_value=8, max_value=30), min_size=6, max_size=6),
)
def test_each_prompt_alone_costs_the_decodes_one_fixed_step_part(
    prompts: list[int], outs: list[int], gaps_steps: list[int]
) -> None:
    """Guards the pause's size. On a step price a + b·tokens + c·context, a prompt that fits
    one chunk beside the decodes costs them, mixed, b·p in their step; run alone, a + b·p
    in a step of its own, the decodes' step keeping its b·n + c·context. So each other
    prompt, arriving alone while A decodes, delays A's end by exactly a under SGLang."""
    a_s = 0.01
    t, rows = 0.0, [(0.0, 4, 600)]
    for p, o, g in zip(prompts, outs, gaps_steps):
        t += g * a_s + 0.0037  # off the step grid; each one ends before the next arrives
        rows.append((t, p, o))
    ends = []
    for engine in ("vllm", "sglang"):
        m = Affine(a=a_s, b=1e-4, c=1e-6)
        r = simulate(m, Trace(rows), engine=engine, skip_ahead=False)
        ends.append(float(r.per_request["e2el"][0]))
    assert ends[1] - ends[0] == pytest.approx(len(prompts) * a_s, abs=1e-9)


def test_a_lone_client_pays_no_pause() -> None:
    """Guards the lone request: with nothing else decoding there is nothing to pause, and an
    SGLang closed loop of one client gives vLLM's latencies exactly."""
    w = ClosedLoop(1, 200, 50, num_prompts=4)
    v = simulate(Affine(), w, seed=1)
    s = simulate(Affine(), w, engine="sglang", seed=1)
    for key in ("ttft", "tpot", "e2el"):
        assert list(s.per_request[key]) == pytest.approx(list(v.per_request[key]), rel=1e-12), key


def test_validate_takes_the_runs_engine_and_the_scenarios() -> None:
    """Guards the plumbing: an SGLang scenario is simulated by SGLang's rule with no label,
    a point's engine label picks the rule for both predictors, and the closed form and the
    simulation agree on the direction (SGLang's TPOT above vLLM's at 16 clients)."""
    import latencykernel as lk

    sg_file = "aisimulate/deepseek-v3-b200-fp4-sglang-tp4.yaml"
    model = lk.open(sg_file)
    assert model.limits().engine == "sglang"
    dep = Deployment(scenario=sg_file)
    unlabelled = Point("x", dep, 1024, 128, concurrency=16)
    sglang = Point("x", dep, 1024, 128, concurrency=16, engine="sglang")
    vllm = Point("x", dep, 1024, 128, concurrency=16, engine="vllm")
    for predict in (closed_form_prediction, serving_prediction):
        u, s, v = (predict(model, p).tpot.mean for p in (unlabelled, sglang, vllm))
        assert u == pytest.approx(s, rel=1e-12)
        assert s is not None and v is not None and s > v

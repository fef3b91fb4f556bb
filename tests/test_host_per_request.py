"""The host time a step spends per request it schedules (``host_step_per_request``, the vLLM
and TensorRT-LLM host sets; ``price.host.step_requests_host_s``), fix 39 of docs/accuracy.md."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import latencykernel as lk
from latencykernel import Batch
from latencykernel.errors import LatencyKernelError
from latencykernel.price.host import step_requests_host_s

VLLM_TWIN = "aisimulate/llama-3.1-70b-instruct-h200-fp8-vllm-tp8.yaml"
TRT_TWIN = "aisimulate/llama-3.1-70b-instruct-h200-fp8-trt-tp8.yaml"
SGLANG_TWIN = "aisimulate/glm-5-h200-fp8-sglang-tp8.yaml"
GUIDE = "aisimulate/deepseek-v3-h200-fp8-sglang-tp8.yaml"  # no engine stated, generic sets only
PER_REQUEST_S = 6e-6  # the vLLM and TensorRT-LLM sets' fitted value, written out


def _inputs_without(scenario: str, name: str) -> lk.Inputs:
    """The scenario's inputs with every entry called ``name`` dropped from its sets."""
    inputs = lk.open_inputs(scenario)
    for s in inputs.coefficients:
        s.coefficients = [c for c in s.coefficients if name not in c]
    return inputs


def _host_s(k: lk.Kernel, scheduled: list[int], computed: list[int]) -> float:
    est = k.step_time(Batch.from_columns(scheduled, computed))
    return next((v for r, v in est.per_resource.items() if str(r) == "host"), 0.0)


@given(st.integers(0, 1 << 20), st.floats(0, 1e-3, allow_nan=False))
def test_the_law_is_requests_times_the_per_request_time(requests: int, per_request_s: float) -> None:
    """Guards a law that does not scale with the requests: t = requests x per_request."""
    assert step_requests_host_s(requests, per_request_s) == requests * per_request_s
    assert step_requests_host_s(requests + 1, per_request_s) >= step_requests_host_s(requests, per_request_s)
    assert step_requests_host_s(0, per_request_s) == 0.0


@pytest.mark.parametrize("scenario", [VLLM_TWIN, TRT_TWIN])
def test_each_scheduled_request_adds_the_sets_per_request_time(scenario: str) -> None:
    """Guards the fitted coefficient being ignored or charged per token: a uniform decode
    step's host time (one graph replay, whatever the batch) rises by exactly 6 us per added
    request, and a prompt chunk of 1,024 tokens counts once, as a request."""
    k = lk.new(lk.open_inputs(scenario))
    assert k.constants.host_per_request_s == pytest.approx(PER_REQUEST_S)
    for n in (1, 7, 64):
        step = _host_s(k, [1] * (n + 1), [3000] * (n + 1)) - _host_s(k, [1] * n, [3000] * n)
        assert step == pytest.approx(PER_REQUEST_S, abs=2e-9)  # integer-nanosecond edges
    without = lk.new(_inputs_without(scenario, "host_step_per_request"))
    assert without.constants.host_per_request_s == 0.0
    mixed = ([1024, 1, 1, 1], [0, 3000, 3000, 3000])
    assert _host_s(k, *mixed) - _host_s(without, *mixed) == pytest.approx(4 * PER_REQUEST_S, abs=2e-9)


def test_a_request_scheduling_no_tokens_pays_nothing() -> None:
    """Guards counting rows rather than scheduled requests: a row with 0 tokens scheduled
    (a request waiting in the batch) adds no host time, on the fast and the reference path,
    in one step and in the vectorised ``step_times``."""
    k = lk.new(lk.open_inputs(VLLM_TWIN))
    with_idle = Batch.from_columns([1, 1, 0, 512], [100, 200, 300, 0])
    busy = Batch.from_columns([1, 1, 512], [100, 200, 0])
    host = _host_s(k, [1, 1, 512], [100, 200, 0])
    assert _host_s(k, [1, 1, 0, 512], [100, 200, 300, 0]) == host
    ref = k._reference_step(with_idle)
    assert next(v for r, v in ref.per_resource.items() if str(r) == "host") == host
    assert ref.no_overlap == k.step_time(with_idle).no_overlap
    times = k.step_times(
        [0, 0, 0, 0, 1, 1, 1], [1, 1, 0, 512, 1, 1, 512], [100, 200, 300, 0, 100, 200, 0], decode_threshold=8
    )
    assert float(times.per_resource[lk.Resource.HOST][0]) == pytest.approx(host, abs=1e-12)
    assert float(times.per_resource[lk.Resource.HOST][1]) == pytest.approx(host, abs=1e-12)
    assert float(times.no_overlap[0]) == k.step_time(with_idle).no_overlap
    assert float(times.no_overlap[1]) == k.step_time(busy).no_overlap


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2048), st.integers(0, 8192)), min_size=1, max_size=40))
def test_every_path_prices_the_per_request_time_alike(rows: list[tuple[int, int]]) -> None:
    """Guards a path that forgets the term (the fast path, the vectorised ``step_times``,
    the aggregate decode price): each equals the reference on random batches."""
    k = lk.new(lk.open_inputs(VLLM_TWIN))
    scheduled, computed = [s for s, _ in rows], [c for _, c in rows]
    batch = Batch.from_columns(scheduled, computed)
    ref = k._reference_step(batch)
    assert k.step_time(batch).no_overlap == ref.no_overlap
    times = k.step_times([0] * len(rows), scheduled, computed, decode_threshold=batch.decode_threshold)
    assert float(times.no_overlap[0]) == ref.no_overlap  # step_times equals step_time, bit for bit
    n = len(rows)
    plain = k._reference_step(Batch.from_columns([1] * n, computed)).no_overlap
    agg = k.aggregate_step_time(n, 1, sum(computed), decode_threshold=8)
    assert agg is not None and agg.no_overlap == plain  # this twin has no per-request read law
    dec = k.decode_step_times(1, [n], [sum(computed)], decode_threshold=8)
    assert dec is not None and float(dec.no_overlap[0]) == plain


def test_more_requests_never_price_a_step_lower() -> None:
    """Guards the metamorphic relation on a twin with the term: adding a decode never lowers
    the step's price."""
    k = lk.new(lk.open_inputs(TRT_TWIN))
    prev = 0.0
    for n in range(1, 130):
        t = k.step_time(Batch.from_columns([1] * n, [2000] * n)).no_overlap
        assert t >= prev
        prev = t


def test_an_engine_set_without_it_records_the_default_and_the_go_guide_does_not() -> None:
    """Guards a silent default: a scenario stating its engine whose sets hold no
    ``host_step_per_request`` (SGLang's, by the fit) records that it is priced at zero; the
    Go guide's deployment, which states no engine, is priced with the Go kernel's law (no
    such term) and records nothing, so its pinned evidence counts hold."""
    sg = lk.new(lk.open_inputs(SGLANG_TWIN))
    assert sg.constants.host_per_request_s == 0.0
    assert "host_step_per_request" in [n for n, _, _ in sg.assumptions()]
    guide = lk.new(lk.open_inputs(GUIDE))
    assert guide.constants.host_per_request_s == 0.0
    assert "host_step_per_request" not in [n for n, _, _ in guide.assumptions()]
    vllm = lk.new(lk.open_inputs(VLLM_TWIN))
    assert "host_step_per_request" not in [n for n, _, _ in vllm.assumptions()]


def test_a_negative_per_request_time_is_refused_by_name() -> None:
    """Guards a negative host time reaching the step: the coefficient is refused with its
    name and value."""
    inputs = lk.open_inputs(VLLM_TWIN)
    bad = copy.deepcopy(inputs)
    hit = False
    for s in bad.coefficients:
        for c in s.coefficients:
            if "host_step_per_request" in c:
                c["host_step_per_request"] = c["host_step_per_request"].model_copy(update={"value": -1.0})
                hit = True
    assert hit
    with pytest.raises(LatencyKernelError, match="host_step_per_request"):
        lk.new(bad)

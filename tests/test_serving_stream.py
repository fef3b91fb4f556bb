"""The stream (serving/stream.py): an engine's steps taken one at a time with its decodes
kept as sums, against the step-by-step loop. Every latency, gap, KV sample, step count,
preemption and the peak of requests in flight must be equal exactly, and the stream must
have taken steps in each case, so that the equality is not vacuous."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from latencykernel.batch import Batch, Resource, StepEstimate
from latencykernel.serving import ClosedLoop, Poisson, RandomRange, Trace, simulate
from test_serving_sim import Affine, _same


class Summed(Affine):
    """``Affine`` with ``aggregate_step_time`` (the same closed form from the sums), counting
    the steps priced that way."""

    def __init__(self, *args: Any, **limits: Any) -> None:
        super().__init__(*args, **limits)
        self.summed = 0

    def aggregate_step_time(
        self, decodes: int, width: int, computed_sum: int, rows: Batch | None = None, *, decode_threshold: int
    ) -> StepEstimate:
        self.summed += 1
        tok = decodes * width + (sum(rows.scheduled) if rows is not None else 0)
        ctx = computed_sum + (sum(rows.computed) if rows is not None else 0)
        d = self.price(float(tok), float(ctx))
        return StepEstimate(d, d, Resource.HBM, {Resource.HBM: d})


def same(a: Any, b: Any) -> None:
    _same(a, b)  # latencies, gaps, steps, preemptions, KV samples
    assert a.max_concurrent_requests == b.max_concurrent_requests


def check(engine: dict[str, Any], wl: Any, seed: int = 1, **limits: Any) -> Summed:
    m = Summed(**limits)
    m.adm, m.otpt, m.comp = 0.004, 0.0002, 0.003
    a = simulate(m, wl, seed=seed, **engine)
    assert m.summed > 0, "the stream never took a step"
    ref = Summed(**limits)
    ref.adm, ref.otpt, ref.comp = m.adm, m.otpt, m.comp
    b = simulate(ref, wl, seed=seed, skip_ahead=False, **engine)
    assert ref.summed == 0
    same(a, b)
    return m


CASES = [
    # open loop: arrivals join the stream, requests leave it
    ("poisson", {}, Poisson(6.0, RandomRange(30, 0.5), RandomRange(60, 0.9), num_prompts=60), {}),
    ("poisson-async", {"async_scheduling": True}, Poisson(6.0, RandomRange(30, 0.5), RandomRange(60, 0.9), 60), {}),
    # one-token answers: a prompt that ends its request at its first token
    ("one-token", {}, Poisson(20.0, 12, [1, 1, 2, 3], num_prompts=60), {}),
    ("one-token-async", {"async_scheduling": True}, Poisson(20.0, 12, [1, 1, 2, 3], num_prompts=60), {}),
    # seats held (max_num_seqs), the queue's head waits inside the stream
    ("seats", {}, Poisson(40.0, 20, 40, num_prompts=60), {"max_num_seqs": 4}),
    ("seats-async", {"async_scheduling": True}, Poisson(40.0, 20, 40, num_prompts=60), {"max_num_seqs": 4}),
    # blocks run short: the stream stops before the step that preempts
    ("tight-kv", {"num_gpu_blocks": 60}, Poisson(30.0, 40, 60, num_prompts=40), {}),
    ("tight-kv-async", {"num_gpu_blocks": 60, "async_scheduling": True}, Poisson(30.0, 40, 60, 40), {}),
    # prompts longer than the budget's room: chunks stop the stream
    ("chunks", {}, Poisson(10.0, RandomRange(50, 0.9), 30, num_prompts=40), {}),
    ("chunks-async", {"async_scheduling": True}, Poisson(10.0, RandomRange(50, 0.9), 30, num_prompts=40), {}),
    # prefix hits stop it; contexts reaching max_model_len exactly (prompt + output = 100)
    ("prefix", {"enable_prefix_caching": True}, Poisson(8.0, 40, 30, num_prompts=30, prefix_hit_rate=0.5), {}),
    ("max-model-len", {}, Poisson(8.0, 40, 60, num_prompts=30), {"max_model_len": 100}),
    # a closed loop: completions send the next requests inside the stream
    ("closed", {}, ClosedLoop(5, RandomRange(30, 0.5), RandomRange(60, 0.9), num_prompts=40), {}),
    ("closed-async", {"async_scheduling": True}, ClosedLoop(5, RandomRange(30, 0.5), RandomRange(60, 0.9), 40), {}),
    # data-parallel replicas: the stream takes every engine's steps, earliest launch first,
    # and arrivals go to the least loaded; idle replicas wake outside it
    ("dp", {"data_parallel_size": 3}, Poisson(12.0, RandomRange(30, 0.5), RandomRange(60, 0.9), 60), {}),
    ("dp-async", {"data_parallel_size": 2, "async_scheduling": True}, Poisson(8.0, 30, RandomRange(60, 0.9), 60), {}),
    ("dp-closed", {"data_parallel_size": 2}, ClosedLoop(6, RandomRange(30, 0.5), RandomRange(60, 0.9), 40), {}),
    ("dp-sparse", {"data_parallel_size": 4}, Poisson(1.0, 20, 30, num_prompts=30), {}),
    # TensorRT-LLM's reservation to completion: admission takes the whole request's blocks,
    # none fall due after; with a tight cache the queue's head waits for completions
    ("reserve", {"kv_reservation": "to_completion"}, Poisson(6.0, RandomRange(30, 0.5), RandomRange(60, 0.9), 60), {}),
    (
        "reserve-tight-async",
        {"kv_reservation": "to_completion", "num_gpu_blocks": 100, "async_scheduling": True},
        Poisson(30.0, 40, 60, num_prompts=40),
        {},
    ),
    (
        "reserve-closed-tight",
        {"kv_reservation": "to_completion", "num_gpu_blocks": 100},
        ClosedLoop(6, RandomRange(30, 0.5), RandomRange(60, 0.9), 40),
        {},
    ),
    # without chunked prefill a prompt the budget cannot take waits whole
    (
        "no-chunking",
        {"enable_chunked_prefill": False},
        Poisson(30.0, RandomRange(30, 0.3), 20, 40),
        {"max_model_len": 64},
    ),
]


@pytest.mark.parametrize("name,engine,wl,limits", CASES, ids=[c[0] for c in CASES])
def test_stream_equals_step_by_step(name: str, engine: dict[str, Any], wl: Any, limits: dict[str, Any]) -> None:
    """Guards the stream's replay of the scheduler (admissions, last tokens, blocks, the
    async order of decisions and outputs, the client's sends and the routing of arrivals)
    against the step-by-step loop, in each regime it enters and each reason it stops."""
    check(engine, wl, **limits)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.lists(
        st.tuples(st.floats(0, 3, allow_nan=False), st.integers(1, 70), st.integers(1, 90)), min_size=1, max_size=40
    ),
    asy=st.booleans(),
    blocks=st.sampled_from([1000, 90, 45]),
    seqs=st.sampled_from([8, 3]),
    dp=st.sampled_from([1, 1, 2, 3]),
    resv=st.sampled_from(["on_demand", "on_demand", "to_completion"]),
)
def test_stream_equals_step_by_step_on_random_traces(
    rows: list[tuple[float, int, int]], asy: bool, blocks: int, seqs: int, dp: int, resv: str
) -> None:
    """Guards the same over random traces: arrivals at any times (ties included), prompts up
    to past the 64-token budget, answers of one token up, a KV cache from ample to tight,
    two seat limits, both scheduling modes, one to three data-parallel replicas, KV
    allocated on demand or reserved to completion."""
    rows = sorted(rows)
    m = Summed(max_num_seqs=seqs)
    m.adm, m.otpt, m.comp = 0.004, 0.0002, 0.003
    if max(p + (o if resv == "to_completion" else 0) for _, p, o in rows) > (blocks - 1) * 4:
        return  # a request no cache holds is refused (tested elsewhere)
    engine = {"async_scheduling": asy, "num_gpu_blocks": blocks, "data_parallel_size": dp, "kv_reservation": resv}
    a = simulate(m, Trace(rows), **engine)
    ref = Summed(max_num_seqs=seqs)
    ref.adm, ref.otpt, ref.comp = m.adm, m.otpt, m.comp
    b = simulate(ref, Trace(rows), skip_ahead=False, **engine)
    same(a, b)


def test_stream_is_used_on_an_open_loop_and_prices_each_step_once() -> None:
    """Guards the stream falling out of use (every step taken the ordinary way): on an open
    loop of short requests most steps are priced from sums, one call a step."""
    m = check({}, Poisson(6.0, 20, 40, num_prompts=80))
    ref = Summed()
    simulate(ref, Poisson(6.0, 20, 40, num_prompts=80), seed=1, skip_ahead=False)
    assert m.summed > 0.5 * len(ref.batches)
    assert len(m.batches) < 0.5 * len(ref.batches)


def test_stream_equals_step_by_step_on_the_kernel() -> None:
    """Guards the stream on the kernel's own prices (``aggregate_step_time``): an open loop on
    the guide deployment, in both scheduling modes, and over two replicas."""
    from test_serving_kernel import guide

    k = guide()
    for asy, dp in ((False, 1), (True, 1), (True, 2)):
        wl = Poisson(4.0 * dp, RandomRange(512, 0.9), RandomRange(128, 0.9), num_prompts=80)
        kw = {"async_scheduling": asy, "data_parallel_size": dp, "lockstep_data_parallel": False}
        a = simulate(k, wl, **kw)
        b = simulate(k, wl, skip_ahead=False, **kw)
        same(a, b)


def test_an_idle_replica_woken_inside_the_stream_launches_before_later_arrivals() -> None:
    """Guards the routing order across replicas: replica 0 streams three long requests,
    replica 1 has fallen idle, and two prompts arrive 0.5 ms apart within one of replica 0's
    steps. The first wakes replica 1, which launches at once (admitting it: load score 1);
    the second then goes to replica 1 (1 < 3). Routed together, before replica 1 launched, it
    went to replica 0 (replica 1's score 4 with the first still waiting)."""
    rows = [(0.0, 10, 300), (0.0, 10, 2), (0.0, 10, 300), (0.0, 10, 2), (0.0, 10, 300)]
    rows += [(0.5, 10, 5), (0.5005, 10, 5)]
    check({"data_parallel_size": 2}, Trace(rows))

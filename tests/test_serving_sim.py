"""The serving simulation against a step model whose price is a closed form, so every step
and every latency can be computed by hand; and the skip-ahead against the step-by-step loop."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from latencykernel.batch import Batch, Resource, StepEstimate
from latencykernel.errors import LatencyKernelError, RefusedError
from latencykernel.serving import (
    ClosedLoop,
    Disaggregated,
    Distribution,
    Poisson,
    RandomRange,
    Trace,
    simulate,
)
from latencykernel.step_model import EngineLimits, StepModel


@dataclasses.dataclass
class _Times:
    overlap: np.ndarray
    no_overlap: np.ndarray
    bottleneck: np.ndarray


class Affine:
    """step = a + b·(scheduled tokens) + c·(computed tokens), seconds; records every batch."""

    def __init__(self, a: float = 0.01, b: float = 1e-4, c: float = 1e-6, **limits: Any) -> None:
        self.a, self.b, self.c = a, b, c
        base = dict(
            max_num_seqs=8,
            max_num_batched_tokens=64,
            max_model_len=4096,
            block_size=4,
            kv_blocks=1000,
            enable_prefix_caching=False,
            async_scheduling=False,
            num_speculative_tokens=0,
            decode_threshold=8,
            gpus=2,
            data_parallel=1,
        )
        base.update(limits)
        self._limits = EngineLimits(**base)  # type: ignore[arg-type]
        self.batches: list[tuple[list[int], list[int]]] = []
        self.adm = 0.0
        self.otpt = 0.0
        self.comp = 0.0

    def price(self, tokens: float, ctx: float) -> float:
        return self.a + self.b * tokens + self.c * ctx

    def step_time(self, batch: Batch) -> StepEstimate:
        self.batches.append((list(batch.scheduled), list(batch.computed)))
        d = self.price(float(sum(batch.scheduled)), float(sum(batch.computed)))
        return StepEstimate(d, d, Resource.HBM, {Resource.HBM: d})

    def step_times(self, step: Any, scheduled: Any, computed: Any, *, decode_threshold: int, **_: Any) -> _Times:
        step = np.asarray(step)
        n = int(step.max()) + 1 if len(step) else 0
        tok = np.bincount(step, weights=np.asarray(scheduled, dtype=np.float64), minlength=n)
        ctx = np.bincount(step, weights=np.asarray(computed, dtype=np.float64), minlength=n)
        d = self.a + self.b * tok + self.c * ctx
        return _Times(d, d, np.array([Resource.HBM] * n, dtype=object))

    def limits(self) -> EngineLimits:
        return self._limits

    def sequence_variable_bytes(self, tokens: int) -> int:
        return -(-tokens // self._limits.block_size) * 1000

    def admission_overhead(self, prompt_tokens: int) -> float:
        return self.adm

    def output_token_overhead(self) -> float:
        return self.otpt

    def completion_overhead(self) -> float:
        return self.comp


def test_stub_keeps_the_protocol() -> None:
    """Guards the test double itself: it must be a StepModel for the tests to mean anything."""
    assert isinstance(Affine(), StepModel)


def test_one_request_hand_computed() -> None:
    """Guards chunking by the token budget, the first token at the last chunk, decode steps
    at growing context, and every overhead landing where docs/serving.md says."""
    m = Affine(max_num_batched_tokens=8)
    m.adm, m.otpt, m.comp = 0.5, 0.01, 0.1
    r = simulate(m, ClosedLoop(1, 10, 3), skip_ahead=False)
    # 10 prompt tokens, budget 8: chunk 8 at 0, chunk 2 at 8 (samples token 1), decodes at 10, 11
    assert m.batches == [([8], [0]), ([2], [8]), ([1], [10]), ([1], [11])] * 10
    d1, d2, d3, d4 = m.price(8, 0), m.price(2, 8), m.price(1, 10), m.price(1, 11)
    ttft = 0.5 + d1 + d2 + 0.01
    e2el = 0.5 + d1 + d2 + d3 + d4 + 3 * 0.01 + 0.1
    assert r.ttft.median == pytest.approx(ttft, rel=1e-12)
    assert r.e2el.median == pytest.approx(e2el, rel=1e-12)
    assert r.tpot.median == pytest.approx((e2el - ttft) / 2, rel=1e-12)
    assert r.itl.min == pytest.approx(min(d3, d4) + 0.01, rel=1e-12)
    assert r.itl.max == pytest.approx(max(d3, d4) + 0.01, rel=1e-12)
    assert r.completed == 10 and r.total_output_tokens == 30 and r.itl.count == 20


def test_two_requests_share_the_budget_running_first() -> None:
    """Guards vLLM's order: running requests first (a partial prefill continues), then the
    waiting ones take what budget is left; max_num_seqs caps admission."""
    m = Affine(max_num_batched_tokens=8, max_num_seqs=2)
    simulate(m, Trace([(0.0, 10, 2), (0.0, 6, 2), (0.0, 3, 1)]), skip_ahead=False)
    assert m.batches == [
        ([8], [0]),  # A's first chunk takes the whole budget; B waits
        ([2, 6], [8, 0]),  # A finishes its prompt (token 1), B admitted with the rest of the budget
        ([1, 1], [10, 6]),  # both decode; C waits: max_num_seqs = 2
        ([3], [0]),  # A and B done; C admitted
    ]


def test_preemption_recomputes_the_newest() -> None:
    """Guards preemption by recompute of the last running request when blocks run out, and
    that it re-enters at the head of the waiting queue and still finishes."""
    # 3 usable blocks of 4 tokens (num_gpu_blocks 4 minus the null block)
    m = Affine(kv_blocks=4, block_size=4, max_num_batched_tokens=64)
    r = simulate(m, Trace([(0.0, 4, 4), (0.0, 4, 4)]), skip_ahead=False)
    # step 1: both prefill 4 tokens (1 block each; 1 free). step 2: A decodes at 4 -> needs a
    # 2nd block (takes the free one); B needs one too: none left -> B (newest) preempted.
    assert m.batches[0] == ([4, 4], [0, 0])
    assert m.batches[1] == ([1], [4])
    assert r.preemptions >= 1
    assert r.completed == 2 and r.total_output_tokens == 8


def test_refusals_name_the_setting() -> None:
    """Guards the refusals: a request longer than max_model_len, a request larger than the
    whole KV cache, an unknown setting, speculative decoding without an acceptance."""
    m = Affine(max_model_len=100)
    with pytest.raises(RefusedError) as e:
        simulate(m, ClosedLoop(1, 90, 20))
    assert e.value.setting == "max_model_len"
    with pytest.raises(RefusedError) as e:
        simulate(Affine(kv_blocks=10, block_size=4), ClosedLoop(1, 40, 10))
    assert e.value.setting == "num_gpu_blocks"
    with pytest.raises(LatencyKernelError, match="max_num_seq"):
        simulate(Affine(), ClosedLoop(1, 10, 10), max_num_seq=4)
    with pytest.raises(LatencyKernelError, match="acceptance_rate"):
        simulate(Affine(), ClosedLoop(1, 10, 10), num_speculative_tokens=2)
    with pytest.raises(LatencyKernelError, match="concurrency"):
        simulate(Affine(), ClosedLoop(0, 10, 10))
    with pytest.raises(LatencyKernelError, match="range_ratio"):
        RandomRange(100, 1.0)


def test_every_request_completes_and_every_token_counted() -> None:
    """Guards lost or double-counted tokens: a chunk gap per output token after the first,
    and throughputs that are the token sums over the duration."""
    m = Affine(max_num_batched_tokens=32, kv_blocks=60, block_size=4)
    wl = ClosedLoop(6, RandomRange(40, 0.5), RandomRange(20, 0.5), num_prompts=40)
    r = simulate(m, wl, seed=3)
    out = r.per_request["output"]
    assert r.completed == 40
    assert r.total_output_tokens == int(out.sum())
    assert r.itl.count == int((out - 1).sum())
    assert r.output_throughput == pytest.approx(r.total_output_tokens / r.duration, rel=1e-12)
    assert r.max_concurrent_requests == 6


def test_littles_law_closed_loop() -> None:
    """Guards latency/throughput consistency: the mean number in flight, request throughput
    × mean E2EL, is the client's concurrency except while the last requests drain."""
    m = Affine()
    for c in (1, 3, 8):
        r = simulate(m, ClosedLoop(c, 30, 20, num_prompts=20 * c))
        L = r.request_throughput * r.e2el.mean
        assert 0.9 * c <= L <= c * (1 + 1e-9)


def test_monotone_in_concurrency_and_prompt_length() -> None:
    """Guards queueing and batching effects pointing the right way."""
    m = Affine(max_num_seqs=64, max_num_batched_tokens=256, kv_blocks=100000)
    rs = [simulate(m, ClosedLoop(c, 100, 50)) for c in (1, 2, 4, 8, 16)]
    tp = [r.output_throughput for r in rs]
    tpot = [r.tpot.median for r in rs]
    ttft = [r.ttft.median for r in rs]
    assert tp == sorted(tp) and tpot == sorted(tpot) and ttft == sorted(ttft)
    ls = [simulate(m, ClosedLoop(4, p, 50)) for p in (10, 100, 400, 1600)]
    assert [x.ttft.median for x in ls] == sorted(x.ttft.median for x in ls)
    assert [x.e2el.median for x in ls] == sorted(x.e2el.median for x in ls)


def test_deterministic_for_a_seed() -> None:
    """Guards hidden global randomness."""
    m = Affine()
    wl = Poisson(5.0, RandomRange(50, 0.3), RandomRange(30, 0.3), num_prompts=50)
    a = simulate(m, wl, seed=7).as_vllm_bench()
    b = simulate(m, wl, seed=7).as_vllm_bench()
    c = simulate(m, wl, seed=8).as_vllm_bench()
    assert a == b and a != c


def test_random_range_is_vllm_bench_interval() -> None:
    """Guards the length draw: integers on [floor(L(1-r)), ceil(L(1+r))], outputs at least 1."""
    rng = np.random.default_rng(0)
    from latencykernel.serving.workload import lengths

    x = lengths("isl", RandomRange(1024, 0.2), 20000, rng, output=False)
    assert x.min() == 819 and x.max() == 1229
    y = lengths("osl", RandomRange(1, 0.9), 100, rng, output=True)
    assert y.min() >= 1
    assert lengths("isl", [5, 7], 5, rng, output=False).tolist() == [5, 7, 5, 7, 5]


def test_saturation_reported() -> None:
    """Guards open-loop overload being reported as saturated with the sustained rate, not as
    latencies that only reflect the run's length."""
    m = Affine(max_num_seqs=4)
    light = simulate(m, Poisson(0.5, 20, 20, num_prompts=200))
    assert not light.saturated
    heavy = simulate(m, Poisson(500.0, 20, 20, num_prompts=400))
    assert heavy.saturated
    assert heavy.sustained_request_rate < 0.5 * heavy.offered_request_rate


@given(
    st.lists(st.floats(0, 10, allow_nan=False), min_size=1, max_size=30),
    st.lists(st.integers(0, 5), min_size=30, max_size=30),
)
@settings(max_examples=60, deadline=None)
def test_weighted_distribution_equals_numpy(vals: list[float], wts: list[int]) -> None:
    """Guards the weighted statistics against numpy's on the expanded samples."""
    w = np.array(wts[: len(vals)])
    if w.sum() == 0:
        w[0] = 1
    d = Distribution.of(vals, w)
    x = np.repeat(np.array(vals), w)
    assert d.count == len(x)
    for got, want in [
        (d.mean, x.mean()),
        (d.median, np.median(x)),
        (d.p90, np.percentile(x, 90)),
        (d.p99, np.percentile(x, 99)),
        (d.std, x.std()),
    ]:
        assert got == pytest.approx(want, rel=1e-9, abs=1e-12)


def _same(a: Any, b: Any) -> None:
    for key in ("ttft", "e2el", "tpot"):
        assert np.array_equal(a.per_request[key], b.per_request[key]), key
    assert a.itl == b.itl
    assert a.steps == b.steps
    assert a.preemptions == b.preemptions
    assert np.array_equal(a.kv_usage, b.kv_usage)
    assert np.array_equal(a.kv_usage_time_s, b.kv_usage_time_s)


CASES = [
    ("closed", {}, ClosedLoop(5, RandomRange(60, 0.5), RandomRange(80, 0.5), num_prompts=30)),
    ("async", {"async_scheduling": True}, ClosedLoop(5, RandomRange(60, 0.5), RandomRange(80, 0.5), num_prompts=30)),
    ("poisson", {}, Poisson(3.0, RandomRange(60, 0.5), RandomRange(80, 0.5), num_prompts=40)),
    ("poisson-async", {"async_scheduling": True}, Poisson(3.0, 60, RandomRange(80, 0.5), num_prompts=40)),
    ("tight-kv", {"num_gpu_blocks": 80}, ClosedLoop(6, 60, 60, num_prompts=24)),
    ("tight-kv-async", {"num_gpu_blocks": 80, "async_scheduling": True}, ClosedLoop(6, 60, 60, num_prompts=24)),
    ("spec", {"num_speculative_tokens": 3, "acceptance_rate": 0.6}, ClosedLoop(4, 40, 90, num_prompts=16)),
    (
        "spec-async",
        {"num_speculative_tokens": 2, "mean_accepted_length": 2.3, "async_scheduling": True},
        ClosedLoop(4, 40, 90, num_prompts=16),
    ),
    ("dp", {"data_parallel_size": 3}, Poisson(4.0, 50, RandomRange(60, 0.5), num_prompts=40)),
    (
        "attention-dp",
        {"data_parallel_size": 2, "lockstep_data_parallel": True},
        ClosedLoop(5, 50, RandomRange(60, 0.5), num_prompts=25),
    ),
    ("prefix", {"enable_prefix_caching": True}, ClosedLoop(4, 64, 40, num_prompts=16, prefix_hit_rate=0.5)),
    # requests of very different lengths: runs pass completions, ranks fall idle mid-run
    ("poisson-spread", {}, Poisson(2.0, 40, RandomRange(100, 0.9), num_prompts=40)),
    (
        "attention-dp-spread",
        {"data_parallel_size": 3, "lockstep_data_parallel": True, "async_scheduling": True},
        Poisson(2.0, 40, RandomRange(100, 0.9), num_prompts=30),
    ),
    ("closed-spread", {"max_num_seqs": 16}, ClosedLoop(6, 40, RandomRange(100, 0.9), num_prompts=40)),
    # TensorRT-LLM's reservation to completion: runs must charge decodes no block and see a
    # queue's head held by its whole request's blocks
    (
        "reserve-tight",
        {"num_gpu_blocks": 120, "kv_reservation": "to_completion"},
        ClosedLoop(6, 60, 60, num_prompts=24),
    ),
    (
        "reserve-spec-async",
        {
            "kv_reservation": "to_completion",
            "num_speculative_tokens": 2,
            "acceptance_rate": 0.5,
            "async_scheduling": True,
        },
        ClosedLoop(4, 40, 90, num_prompts=16),
    ),
    # SGLang's receive interval: runs must stop before the decision that takes routed
    # requests in, and count their decisions on every rank's counter
    ("recv", {"scheduler_recv_interval": 7}, ClosedLoop(5, RandomRange(60, 0.5), RandomRange(80, 0.5), num_prompts=30)),
    (
        "recv-async",
        {"scheduler_recv_interval": 10, "async_scheduling": True},
        Poisson(3.0, RandomRange(60, 0.5), RandomRange(80, 0.5), num_prompts=40),
    ),
    (
        "recv-attention-dp",
        {"scheduler_recv_interval": 5, "data_parallel_size": 2, "lockstep_data_parallel": True},
        Poisson(2.0, 40, RandomRange(100, 0.9), num_prompts=30),
    ),
    ("recv-tight-kv", {"scheduler_recv_interval": 30, "num_gpu_blocks": 80}, ClosedLoop(6, 60, 60, num_prompts=24)),
]


@pytest.mark.parametrize("name,engine,wl", CASES, ids=[c[0] for c in CASES])
def test_skip_ahead_equals_step_by_step(
    name: str, engine: dict[str, Any], wl: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Guards the vectorised runs: every latency, gap, KV sample and step count equal the
    step-by-step loop's exactly; and (review D27) that the skip-ahead actually committed runs
    in this case, so the equality is not vacuous."""
    import latencykernel.serving.runs as runs_mod

    committed = [0]
    real_run = runs_mod.run

    def counting(*args: Any) -> bool:
        ok = real_run(*args)
        committed[0] += ok
        return ok

    monkeypatch.setattr(runs_mod, "run", counting)
    a = simulate(Affine(), wl, seed=1, skip_ahead=True, **engine)
    assert committed[0] > 0, "the skip-ahead never ran"
    committed[0] = 0
    b = simulate(Affine(), wl, seed=1, skip_ahead=False, **engine)
    assert committed[0] == 0
    _same(a, b)


@pytest.mark.parametrize("async_scheduling", [False, True])
def test_runs_pass_completions_exactly(async_scheduling: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Guards the runs that go on past a request's last token (nobody waiting: open loop, or
    a closed loop's tail once every request is sent): the finished request leaves the batch
    and frees its blocks and its client's seat at the right times. Equal to the step-by-step
    loop, and such runs did happen (the equality is not vacuous)."""
    import latencykernel.serving.runs as runs_mod
    from latencykernel.serving.sim import Simulation

    finished: list[float] = []
    real_finish = Simulation._finish

    def record(self: Any, rk: Any, r: int, t: float) -> None:
        finished.append(t)
        real_finish(self, rk, r, t)

    inside = [0]
    real_commit = runs_mod._commit

    def commit(sim: Any, eng: Any, *args: Any) -> None:
        before = len(finished)
        real_commit(sim, eng, *args)
        inside[0] += sum(1 for t in finished[before:] if t < eng.t - 1e-12)

    monkeypatch.setattr(Simulation, "_finish", record)
    monkeypatch.setattr(runs_mod, "_commit", commit)

    def model() -> Affine:
        m = Affine(async_scheduling=async_scheduling, max_num_seqs=16)
        m.adm, m.otpt, m.comp = 0.02, 0.0005, 0.03
        return m

    for wl in (
        ClosedLoop(6, 40, RandomRange(100, 0.9), num_prompts=40),
        Poisson(3.0, 40, RandomRange(100, 0.9), num_prompts=40),
    ):
        inside[0] = 0
        a = simulate(model(), wl, seed=3, skip_ahead=True)
        assert inside[0] > 0, f"no run passed a completion ({wl})"
        b = simulate(model(), wl, seed=3, skip_ahead=False)
        _same(a, b)
        assert a.completed == b.completed == 40


@pytest.mark.parametrize("skip_ahead", [False, True])
def test_prefix_hit_blocks_are_not_charged_twice(skip_ahead: bool) -> None:
    """Guards the decode allocation after a prefix-cache hit: vLLM's allocate_slots counts
    the shared cached blocks in the request's block table, so a request of 64 prompt tokens
    (32 of them cached: 8 blocks of 4) and 40 output tokens ends holding 26 blocks in all
    (ceil(104 / 4)), 8 shared and 18 its own. The decode steps re-allocated the 8 shared
    blocks as its own (34 in use)."""
    r = simulate(
        Affine(),
        ClosedLoop(1, 64, 40, num_prompts=3, prefix_hit_rate=0.5),
        enable_prefix_caching=True,
        skip_ahead=skip_ahead,
    )
    assert round(max(r.kv_usage) * 999) == 26  # 1,000 blocks less the null block


def test_skip_ahead_prices_fewer_calls() -> None:
    """Guards that the skip-ahead actually skips (one call per run, not per step)."""
    m1, m2 = Affine(), Affine()
    simulate(m1, ClosedLoop(4, 20, 200), skip_ahead=True)
    simulate(m2, ClosedLoop(4, 20, 200), skip_ahead=False)
    assert len(m1.batches) * 10 < len(m2.batches)


def test_speculative_decoding_emits_accepted_tokens() -> None:
    """Guards k + 1 tokens scheduled per decode and 1 + accepted emitted: with every draft
    accepted a request of 1 + 4·n tokens takes n decode steps."""
    m = Affine()
    r = simulate(
        m, ClosedLoop(1, 10, 41, num_prompts=1), num_speculative_tokens=3, acceptance_rate=1.0, skip_ahead=False
    )
    dec = [b for b in m.batches if b[0] == [4]]
    assert len(dec) == 10
    assert [c[0] for _, c in dec] == [10 + 4 * i for i in range(10)]
    assert r.itl.count == 10 and r.total_output_tokens == 41


def test_dp_router_lowest_score() -> None:
    """Guards the DP load balancer: a new request goes to the rank with the lowest
    waiting·4 + running, ties to the lowest rank."""
    m = Affine()
    from latencykernel.serving.config import resolve_engine
    from latencykernel.serving.sim import Pool, Simulation
    from latencykernel.serving.workload import Requests

    cfg, _ = resolve_engine(m, {"data_parallel_size": 3})
    z = np.zeros(3)
    reqs = Requests(z, np.array([10, 10, 10]), np.array([5, 5, 5]), np.zeros(3, dtype=np.int64))
    sim = Simulation([Pool("c", m, cfg, 3, 1)], reqs, admission_s=lambda p: 0.0, output_token_s=0.0, completion_s=0.0)
    sim.engines[0].ranks[0].running.extend([100])  # score 1
    sim.engines[1].ranks[0].waiting.extend([101])  # score 4
    sim._route(0, 0.0)
    assert sim.rank_of[0] == 2
    sim._route(1, 0.0)  # scores 1, 4, 1: the lowest rank of the tie
    assert sim.rank_of[1] == 0


def test_disaggregated_adds_the_transfer() -> None:
    """Guards the P/D path: at concurrency 1 the TTFT grows by exactly the KV transfer time,
    and TPOT is the decode pool's."""
    p, d = Affine(), Affine()
    r0 = simulate(Disaggregated(p, d, transfer_s=lambda t: 0.0), ClosedLoop(1, 50, 20, num_prompts=3))
    r1 = simulate(Disaggregated(Affine(), Affine(), transfer_s=lambda t: 0.25), ClosedLoop(1, 50, 20, num_prompts=3))
    assert r1.ttft.median - r0.ttft.median == pytest.approx(0.25, rel=1e-9)
    assert r1.tpot.median == pytest.approx(r0.tpot.median, rel=1e-12)
    # the decode pool computes the last prompt token (49 tokens arrived as KV)
    assert ([1], [49]) in d.batches


def test_async_scheduling_decides_one_step_ahead() -> None:
    """Guards async scheduling: step n+1 is planned when step n launches, so a request arriving
    during step 1 joins step 3 (sync: step 2)."""
    d1 = Affine().price(4, 0)
    rows = [(0.0, 4, 10), (0.5 * d1, 4, 3)]
    sync, asy = Affine(), Affine()
    simulate(sync, Trace(rows), skip_ahead=False, async_scheduling=False)
    simulate(asy, Trace(rows), skip_ahead=False, async_scheduling=True)
    assert sync.batches[:2] == [([4], [0]), ([1, 4], [4, 0])]
    assert asy.batches[:3] == [([4], [0]), ([1], [4]), ([1, 4], [5, 0])]


def test_attention_dp_step_lasts_as_its_slowest_rank() -> None:
    """Guards lockstep DP: both ranks step together and the step is the longer rank's price."""
    m = Affine()
    r = simulate(
        m,
        Trace([(0.0, 40, 1), (0.0, 8, 1)]),
        skip_ahead=False,
        data_parallel_size=2,
        lockstep_data_parallel=True,
    )
    assert sorted(m.batches) == sorted([([40], [0]), ([8], [0])])  # one step, one batch a rank
    slow = m.price(40, 0)
    assert r.e2el.max == pytest.approx(slow, rel=1e-12) and r.e2el.min == pytest.approx(slow, rel=1e-12)


def test_goodput_counts_requests_meeting_every_slo() -> None:
    """Guards goodput as vllm bench serve --goodput counts it (limits in ms)."""
    r = simulate(Affine(), ClosedLoop(4, RandomRange(60, 0.5), 30, num_prompts=40), seed=5)
    ttft_ms = r.per_request["ttft"] * 1e3
    cut = float(np.median(ttft_ms))
    want = int((ttft_ms <= cut).sum()) / r.duration
    assert r.goodput({"ttft": cut}) == pytest.approx(want)
    assert r.goodput({"ttft": 1e9, "tpot": 1e9}) == pytest.approx(r.request_throughput)
    with pytest.raises(LatencyKernelError, match="ttft, tpot and e2el"):
        r.goodput({"itl": 5})


@pytest.mark.parametrize("name,engine,wl", CASES, ids=[c[0] for c in CASES])
def test_vectorised_decode_prefix_equals_the_loop(
    name: str, engine: dict[str, Any], wl: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Guards the numpy shortcuts (the running loop's leading decodes, a large step's outputs):
    the same run as the request-by-request loops (forced on for every batch size, then off)."""
    import latencykernel.serving.scheduler as sched
    import latencykernel.serving.sim as sim

    monkeypatch.setattr(sched, "FAST_MIN", 1)
    monkeypatch.setattr(sim, "FAST_OUTPUTS", 1)
    a = simulate(Affine(), wl, seed=2, skip_ahead=False, **engine)
    monkeypatch.setattr(sched, "FAST_MIN", 10**9)
    monkeypatch.setattr(sim, "FAST_OUTPUTS", 10**9)
    b = simulate(Affine(), wl, seed=2, skip_ahead=False, **engine)
    _same(a, b)


def test_idle_rank_empty_step_priced_once() -> None:
    """Guards review B19: an idle attention-DP rank re-priced an empty batch on every step
    (work that does not depend on the batch); it is priced once per engine, and the run is
    the same as pricing it every step (an empty step's price never changes)."""
    m = Affine()
    wl = ClosedLoop(1, 20, 300, num_prompts=2)  # one request in flight: the other rank idles
    r = simulate(m, wl, data_parallel_size=2, lockstep_data_parallel=True)
    empties = [b for b in m.batches if not b[0]]
    assert len(empties) == 1
    assert r.completed == 2 and r.steps > 300

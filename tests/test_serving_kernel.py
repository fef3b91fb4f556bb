"""The serving simulation on a real kernel (the guide's deployment)."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import latencykernel as lk
from latencykernel.batch import Batch
from latencykernel.errors import RefusedError
from latencykernel.serving import ClosedLoop, Poisson, RandomRange, estimate, simulate

GUIDE = "aisimulate/deepseek-v3-h200-fp8-sglang-tp8.yaml"

VLLM_KEYS = {
    "duration",
    "completed",
    "total_input_tokens",
    "total_output_tokens",
    "request_throughput",
    "output_throughput",
    "total_token_throughput",
    "max_concurrent_requests",
} | {f"{s}_{m}_ms" for s in ("mean", "median", "std", "p90", "p95", "p99") for m in ("ttft", "tpot", "itl", "e2el")}


@functools.cache
def guide() -> lk.Kernel:
    return lk.open(GUIDE)


def test_concurrency_one_tpot_is_the_decode_step_plus_host_time() -> None:
    """Guards the per-token accounting: alone, a request's TPOT is its decode steps (one per
    token after the first, at growing context) plus the per-token host time, plus the
    completion overhead spread over the gaps, exactly."""
    k = guide()
    isl, osl = 512, 33
    r = simulate(k, ClosedLoop(1, isl, osl, num_prompts=2))
    steps = [
        k.step_time(Batch.from_columns([1], [isl + t - 2], decode_threshold=8)).no_overlap for t in range(2, osl + 1)
    ]
    want = (sum(steps) + (osl - 1) * k.output_token_overhead() + k.completion_overhead()) / (osl - 1)
    assert r.tpot.median == pytest.approx(want, rel=1e-12)
    prefill = k.step_time(Batch.from_columns([isl], [0], decode_threshold=8)).no_overlap
    ttft = k.admission_overhead(isl) + prefill + k.output_token_overhead()
    assert r.ttft.median == pytest.approx(ttft, rel=1e-12)


KERNEL_RUNS = [
    ("closed", {}, ClosedLoop(24, 300, 120, num_prompts=48)),
    ("closed-async", {"async_scheduling": True}, ClosedLoop(24, 300, 120, num_prompts=48)),
    # requests of spread lengths: runs go past completions, the batch shrinks mid-run
    ("open-spread", {}, Poisson(4.0, 60, RandomRange(200, 0.9), num_prompts=40)),
    (
        "attention-dp-spread",
        {"data_parallel_size": 3, "lockstep_data_parallel": True},
        Poisson(4.0, 60, RandomRange(200, 0.9), num_prompts=40),
    ),
    ("drafts", {"num_speculative_tokens": 2, "acceptance_rate": 0.6}, ClosedLoop(8, 200, 90, num_prompts=16)),
]


@pytest.mark.parametrize("name,engine,wl", KERNEL_RUNS, ids=[c[0] for c in KERNEL_RUNS])
def test_skip_ahead_equals_step_by_step_on_the_kernel(
    name: str, engine: dict[str, object], wl: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Guards the vectorised runs on the kernel's own prices (``decode_step_times`` from each
    step's count and context sum, with requests leaving mid-run, attention-DP ranks and
    drafts): the same latencies, gaps, KV samples and steps as the step-by-step loop; and
    the aggregate price did run (the equality is not vacuous)."""
    k = guide()
    calls = [0]
    real = lk.Kernel.decode_step_times

    def counting(self: lk.Kernel, *a: object, **kw: object) -> object:
        calls[0] += 1
        return real(self, *a, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(lk.Kernel, "decode_step_times", counting)
    a = simulate(k, wl, skip_ahead=True, **engine)  # type: ignore[arg-type]
    assert calls[0] > 0
    b = simulate(k, wl, skip_ahead=False, **engine)  # type: ignore[arg-type]
    for key in ("ttft", "tpot", "e2el"):
        assert np.array_equal(a.per_request[key], b.per_request[key]), key
    assert a.itl == b.itl and a.steps == b.steps
    assert np.array_equal(a.kv_usage, b.kv_usage) and np.array_equal(a.kv_usage_time_s, b.kv_usage_time_s)


def test_estimate_reports_vllm_bench_keys_and_assumptions() -> None:
    """Guards the result's public shape: every vllm bench serve key, per-GPU throughput over
    the deployment's GPUs, bottleneck shares summing to one, recorded assumptions."""
    k = guide()
    r = estimate(k, isl=256, osl=64, concurrency=8)
    b = r.as_vllm_bench()
    assert VLLM_KEYS <= set(b)
    assert b["completed"] == 80 and b["total_output_tokens"] == 80 * 64
    assert r.gpus == 8
    assert r.output_throughput_per_gpu == pytest.approx(r.output_throughput / 8)
    assert sum(r.bottleneck_shares.values()) == pytest.approx(1.0)
    names = {a[0] for a in r.assumptions}
    assert {"num_prompts", "max_num_seqs", "num_gpu_blocks", "output_token_overhead"} <= names
    assert 0 < r.kv_usage.max() <= 1


def test_limits_carry_the_scheduler_settings() -> None:
    """Guards the fields serving reads from Kernel.limits()."""
    lim = guide().limits()
    assert lim.enable_chunked_prefill and lim.long_prefill_token_threshold == 0
    assert lim.scheduling_policy == "fcfs" and lim.engine == "vllm"
    assert not lim.lockstep_data_parallel  # dp = 1


def test_max_model_len_override_held_to_the_models_derived_limit() -> None:
    """Guards simulate(max_model_len=…) raised past the model: DeepSeek-V3's config.json
    states yarn RoPE scaling, factor 40 over original_max_position_embeddings 4,096, so vLLM
    derives 163,840 tokens; one more is refused naming the argument."""
    assert guide().limits().model_max_model_len == 4096 * 40
    with pytest.raises(RefusedError) as e:
        estimate(guide(), isl=1024, osl=16, concurrency=1, max_model_len=163841)
    assert e.value.setting == "max_model_len" and "163840 tokens the model supports" in str(e.value)


def test_kernel_refuses_a_prompt_beyond_max_model_len() -> None:
    """Guards the refusal on the kernel's own max_model_len (32,768 on the guide)."""
    with pytest.raises(RefusedError) as e:
        estimate(guide(), isl=32000, osl=1024, concurrency=1)
    assert e.value.setting == "max_model_len"


def test_open_loop_below_capacity_tracks_the_offered_rate() -> None:
    """Guards the open loop: below capacity the deployment serves what is offered. Exactly (review
    D28 replaced a rel=0.2 band): each request is sent at its drawn arrival, the served rate is
    n / (last completion - first send), every request takes at least what it takes alone, and
    no queue builds (no request takes twice that), so the rate lies between n / (span + the
    longest latency) and n / span."""
    import numpy as np

    wl = Poisson(2.0, 256, 64, num_prompts=200)
    r = simulate(guide(), wl, seed=2)
    assert not r.saturated
    arrival = wl.requests(np.random.default_rng(2)).arrival_s
    sent, e2el = r.per_request["sent"], r.per_request["e2el"]
    assert np.array_equal(sent, arrival)
    done = sent + e2el
    assert r.request_throughput == pytest.approx(200 / float(done.max() - sent.min()), rel=1e-12)
    alone = estimate(guide(), isl=256, osl=64, concurrency=1, num_prompts=1).e2el.median
    assert float(e2el.min()) >= alone * (1 - 1e-12)
    assert float(e2el.max()) < 2 * alone
    span = float(arrival[-1] - arrival[0])
    assert 200 / (span + float(e2el.max())) <= r.request_throughput <= 200 / span


def test_blocks_come_from_the_kernels_count() -> None:
    """Guards the KV pool: num_gpu_blocks is the kernel's kv_blocks(), and a smaller pool
    forces the preemptions a larger one avoids."""
    k = guide()
    r = estimate(k, isl=256, osl=32, concurrency=4)
    blocks = dict((a[0], a[1]) for a in r.assumptions)["num_gpu_blocks"]
    assert int(blocks) == k.kv_blocks() == k.limits().kv_blocks
    tight = estimate(k, isl=1024, osl=256, concurrency=32, num_gpu_blocks=1500)
    assert tight.preemptions > 0 and tight.completed == 320
    assert estimate(k, isl=1024, osl=256, concurrency=32).preemptions == 0


def test_disaggregated_pools_move_kv_by_the_kernels_transfer() -> None:
    """Guards the P/D path on kernels: TTFT holds the prefill pool's step, the transfer and
    the decode pool's first step; TPOT the decode pool's steps."""
    from latencykernel import Placement
    from latencykernel.serving import Disaggregated

    p = lk.open_pool("examples/deepseek-v3-h200-disagg.yaml", pool=0)
    d = lk.open_pool("examples/deepseek-v3-h200-disagg.yaml", pool=1)
    move = p.pd_transfer_time(512, Placement(0), Placement(1))
    r = simulate(
        Disaggregated(p, d, transfer_s=lambda t: p.pd_transfer_time(t, Placement(0), Placement(1))),
        ClosedLoop(1, 512, 17, num_prompts=1),
    )
    pre = p.step_time(Batch.from_columns([512], [0], decode_threshold=8)).no_overlap
    first = d.step_time(Batch.from_columns([1], [511], decode_threshold=8)).no_overlap
    want = p.admission_overhead(512) + pre + move + first + d.output_token_overhead()
    assert r.ttft.median == pytest.approx(want, rel=1e-12)
    assert r.gpus == 16

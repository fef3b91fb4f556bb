"""Rules around the scheduler: the API server's tokeniser queue (serving/frontend.py),
TensorRT-LLM's batch waiting (scheduler._batch_wait), and a request preempted under async
scheduling while the step with its last token runs."""

from __future__ import annotations

from typing import Any

import pytest

from latencykernel.errors import LatencyKernelError, RefusedError
from latencykernel.serving import ClosedLoop, Poisson, Trace, simulate
from latencykernel.serving.frontend import tokenisation_s
from test_serving_sim import Affine, _same


class PerToken(Affine):
    """``Affine`` whose admission is 10 ms + 1 ms per prompt token."""

    def admission_overhead(self, prompt_tokens: int) -> float:
        return 0.010 + 0.001 * prompt_tokens if prompt_tokens > 0 else 0.0


def test_tokenisation_is_the_admissions_per_token_part() -> None:
    """Guards the per-request part leaking into the queue: admission(2p) - admission(p)."""
    m = PerToken()
    assert tokenisation_s(m.admission_overhead, 100) == pytest.approx(0.100, rel=1e-12)
    assert tokenisation_s(Affine().admission_overhead, 100) == 0.0  # a flat admission has none


def test_prompts_sent_together_queue_at_the_tokeniser() -> None:
    """Guards the front end's one tokeniser: two 100-token prompts sent at 0 s reach the
    engine at 0.11 s (the first: 10 ms + 100 ms alone) and 0.21 s (after the first's 100 ms
    of tokenising). The first's TTFT is its arrival plus its own prefill step (0.01 + 1e-4 x
    100 s) = 0.13 s, the second's at least 0.21 s; without the queue both arrive at 0.11 s
    and share one prefill step (equal TTFTs)."""
    big = {"max_num_batched_tokens": 1024, "max_num_seqs": 8}
    wl = Trace([(0.0, 100, 3), (0.0, 100, 3)])
    off = simulate(PerToken(**big), wl, tokeniser_queue=False)
    assert off.per_request["ttft"][0] == off.per_request["ttft"][1]
    on = simulate(PerToken(**big), wl)
    t0, t1 = on.per_request["ttft"]
    assert t0 == pytest.approx(0.13, rel=1e-12)
    assert t1 >= 0.21
    assert ("tokeniser_queue", "True") in [(a, b) for a, b, _ in on.assumptions]


def test_the_queue_does_not_touch_a_lone_request_or_a_flat_admission() -> None:
    """Guards the queue charging what it should not: one client's prompts never overlap at
    the tokeniser (each is sent after the last finished), and a flat admission has no
    per-token part."""
    wl = ClosedLoop(1, 50, 4, num_prompts=5)
    assert _ttfts(PerToken(), wl, True) == _ttfts(PerToken(), wl, False)
    wl2 = Poisson(50.0, 30, 10, num_prompts=40)
    assert _ttfts(Affine(), wl2, True) == _ttfts(Affine(), wl2, False)


def _ttfts(m: Affine, wl: Any, queue: bool) -> list[float]:
    return simulate(m, wl, tokeniser_queue=queue).per_request["ttft"].tolist()


def _prefill_step(m: Affine, prompt: int) -> int:
    """The index of the first priced batch that holds a ``prompt``-token chunk."""
    return next(i for i, (s, _) in enumerate(m.batches) if prompt in s)


@pytest.mark.parametrize(
    ("prompt", "iters", "held"),
    [
        (10, 3, 3),  # 10 + 1 decode tokens < 0.9 x 64: held the 3 steps
        (10, 0, 0),  # batch waiting off
        (60, 3, 0),  # 60 + 1 >= 57.6: released at once
    ],
)
def test_batch_waiting_holds_a_prompt_while_others_decode(prompt: int, iters: int, held: int) -> None:
    """Guards TensorRT-LLM's batch waiting (PyExecutor._schedule): a prompt arriving while
    another request decodes is held ``batch_wait_timeout_iters`` steps, unless its tokens
    plus the decodes reach batch_wait_max_tokens_ratio x the budget."""
    wl = Trace([(0.0, 8, 60), (0.05, prompt, 4)])
    base = Affine()
    simulate(base, wl, skip_ahead=False)
    m = Affine()
    simulate(m, wl, skip_ahead=False, batch_wait_timeout_iters=iters, batch_wait_max_tokens_ratio=0.9)
    assert _prefill_step(m, prompt) - _prefill_step(base, prompt) == held


def test_batch_waiting_never_holds_a_prompt_nobody_decodes_beside() -> None:
    """Guards a hold with nothing decoding (TensorRT-LLM releases at once then)."""
    wl = Trace([(0.0, 10, 4)])
    a = simulate(Affine(), wl, batch_wait_timeout_iters=5, batch_wait_max_tokens_ratio=0.9)
    b = simulate(Affine(), wl)
    assert a.per_request["ttft"].tolist() == b.per_request["ttft"].tolist()


@pytest.mark.parametrize("asy", [False, True])
def test_batch_waiting_equals_step_by_step(asy: bool) -> None:
    """Guards the vectorised runs passing a hold: with batch waiting on, the skip-ahead
    gives the step-by-step loop's results exactly."""
    wl = ClosedLoop(5, 20, 40, num_prompts=30)
    kw = {"batch_wait_timeout_iters": 4, "batch_wait_max_tokens_ratio": 0.9, "async_scheduling": asy}
    _same(simulate(Affine(), wl, **kw), simulate(Affine(), wl, skip_ahead=False, **kw))


@pytest.mark.parametrize(
    ("kw", "word"),
    [
        ({"batch_wait_timeout_iters": -1}, "batch_wait_timeout_iters"),
        ({"batch_wait_timeout_iters": 2.5}, "batch_wait_timeout_iters"),
        ({"batch_wait_max_tokens_ratio": 1.5}, "batch_wait_max_tokens_ratio"),
        ({"tokeniser_queue": "yes"}, "tokeniser_queue"),
    ],
)
def test_bad_settings_are_refused_naming_them(kw: dict[str, Any], word: str) -> None:
    """Guards a raw exception or a silent default for bad front-end and batch-wait settings."""
    with pytest.raises(LatencyKernelError, match=word):
        simulate(Affine(), Trace([(0.0, 10, 4)]), **kw)


@pytest.mark.parametrize("skip_ahead", [False, True])
def test_a_request_preempted_with_its_last_token_in_flight_finishes(
    skip_ahead: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Guards a crash (array.remove: x not in array): under async scheduling a request
    preempted while the step that emits its last token runs still gets that token and
    leaves the waiting queue, as vLLM's update_from_output removes stopped_preempted_reqs.
    Two requests of 78 and 98 tokens need more than the 44 usable blocks of 4; at the end
    no request is left in any queue and every block is back in the pool."""
    from latencykernel.serving.sim import Simulation

    sims: list[Simulation] = []
    real_run = Simulation.run

    def run(self: Simulation) -> None:
        sims.append(self)
        real_run(self)

    monkeypatch.setattr(Simulation, "run", run)
    r = simulate(
        Affine(max_num_seqs=8),
        Trace([(0.4375, 23, 55), (0.6171875, 63, 35)]),
        async_scheduling=True,
        num_gpu_blocks=45,
        skip_ahead=skip_ahead,
    )
    assert r.completed == 2 and r.preemptions == 1
    assert r.total_output_tokens == 90
    (rk,) = [rk for e in sims[0].engines for rk in e.ranks]
    assert not rk.waiting and not rk.running and rk.free == rk.usable


def test_batch_waiting_holds_each_chunk_and_counts_whole_prompts() -> None:
    """Guards batch waiting's reading of TensorRT-LLM's rule (PyExecutor._waiting_requests):
    every scheduled context request is held, a prompt's later chunks included, and its whole
    token count is weighed against the ratio, not the chunk's. With chunks capped at 16 tokens,
    a 40-token prompt (16 + 16 + 8; 41 tokens with the decode, below 0.9 x 64) has each of its
    three chunks held 3 steps: its last chunk runs 9 steps later. A 60-token prompt (61 tokens
    with the decode) is released at once although its 16-token chunk alone is below the ratio."""
    kw = {"skip_ahead": False, "long_prefill_token_threshold": 16}
    bw = {"batch_wait_timeout_iters": 3, "batch_wait_max_tokens_ratio": 0.9}
    wl = Trace([(0.0, 6, 80), (0.05, 40, 4)])
    base, held = Affine(), Affine()
    simulate(base, wl, **kw)
    simulate(held, wl, **kw, **bw)
    assert _prefill_step(held, 8) - _prefill_step(base, 8) == 9
    wl = Trace([(0.0, 8, 80), (0.05, 60, 4)])
    base, held = Affine(), Affine()
    simulate(base, wl, **kw)
    simulate(held, wl, **kw, **bw)
    assert _prefill_step(held, 16) == _prefill_step(base, 16)


class StepAdmission(Affine):
    """``Affine`` whose admission is 0.6 s for a prompt over 50 tokens, else 20 ms (not affine)."""

    def admission_overhead(self, prompt_tokens: int) -> float:
        return 0.6 if prompt_tokens > 50 else 0.02


@pytest.mark.parametrize("queue", [False, True])
def test_runs_stop_for_a_later_send_that_arrives_first(queue: bool) -> None:
    """Guards the bound a vectorised run stops at: two requests sent together at 0.5 s, the
    first with a 0.6 s admission and the second with 20 ms, so the second arrives first.
    The run used to stop only at the first's arrival and passed the second's (its TTFT came
    out 0.62 s instead of 38 ms). Equal to the step-by-step loop, with the tokeniser queue
    on and off."""
    wl = Trace([(0.0, 8, 200), (0.5, 60, 5), (0.5, 2, 5)])
    a = simulate(StepAdmission(), wl, tokeniser_queue=queue)
    b = simulate(StepAdmission(), wl, tokeniser_queue=queue, skip_ahead=False)
    _same(a, b)
    assert a.per_request["ttft"][2] < 0.1


@pytest.mark.parametrize("asy", [False, True])
def test_a_request_the_resident_prefix_blocks_leave_no_room_for_is_refused(asy: bool) -> None:
    """Guards a hang (async scheduling) and an 'internal error' stall: the first request's 40
    cached prefix blocks stay resident (divergence S1), and the second, alone on the rank,
    cannot get its blocks beside them; every retry would preempt it again. It is refused,
    naming num_gpu_blocks."""
    with pytest.raises(RefusedError) as e:
        simulate(
            Affine(block_size=1),
            Trace([(0.0, 40, 1, 40), (1.0, 30, 1, 0)]),
            num_gpu_blocks=50,
            enable_prefix_caching=True,
            long_prefill_token_threshold=8,
            async_scheduling=asy,
            skip_ahead=False,
        )
    assert e.value.setting == "num_gpu_blocks" and "prefix-cache" in str(e.value)


def test_progress_reports_each_hundredth_once() -> None:
    """Guards duplicate progress calls (the stream and the main loop both reported): the
    calls strictly increase and end at the total."""
    from test_serving_stream import Summed

    seen: list[int] = []
    simulate(
        Summed(), Poisson(20.0, 20, 30, num_prompts=300), data_parallel_size=2, progress=lambda d, n: seen.append(d)
    )
    assert seen == sorted(set(seen)) and seen[-1] == 300

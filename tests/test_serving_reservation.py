"""KV reserved to completion (``kv_reservation="to_completion"``, TensorRT-LLM's default
GUARANTEED_NO_EVICT capacity scheduler) against allocation as requests grow (vLLM's)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import latencykernel as lk
from latencykernel.errors import LatencyKernelError, RefusedError
from latencykernel.serving import ClosedLoop, Poisson, RandomRange, Trace, simulate
from latencykernel.validation.predict import resident_cap
from test_serving_sim import Affine, _same
from test_serving_stream import Summed


def test_reservation_admits_only_what_runs_to_completion() -> None:
    """Guards the admission rule: 10 usable blocks of 4 tokens, three requests of 8 prompt +
    8 output tokens (4 blocks each to completion). Reserved to completion, two are admitted
    and the third waits for one to finish, with no preemption; allocated as they grow, all
    three start at once (2 blocks each) and the newest is preempted when blocks run out."""
    trace = Trace([(0.0, 8, 8), (0.0, 8, 8), (0.0, 8, 8)])
    m = Affine(kv_blocks=11, block_size=4, max_num_batched_tokens=64, max_num_seqs=8)
    r = simulate(m, trace, skip_ahead=False, kv_reservation="to_completion")
    assert m.batches[0] == ([8, 8], [0, 0])
    # A and B decode their 7 remaining tokens alone; C's prompt is scheduled only after
    third = next(i for i, (s, _) in enumerate(m.batches) if 8 in s and i > 0)
    assert third == 8 and m.batches[third] == ([8], [0])
    assert r.preemptions == 0 and r.completed == 3
    m2 = Affine(kv_blocks=11, block_size=4, max_num_batched_tokens=64, max_num_seqs=8)
    r2 = simulate(m2, trace, skip_ahead=False, kv_reservation="on_demand")
    assert m2.batches[0] == ([8, 8, 8], [0, 0, 0])
    assert r2.preemptions >= 1 and r2.completed == 3


@settings(max_examples=40, deadline=None)
@given(
    blocks=st.integers(30, 200),
    conc=st.integers(1, 12),
    isl=st.integers(4, 60),
    osl=st.integers(2, 60),
    asy=st.booleans(),
)
def test_reservation_never_preempts_and_finishes_every_request(
    blocks: int, conc: int, isl: int, osl: int, asy: bool
) -> None:
    """Guards the invariant the rule exists for: a request admitted with its whole length
    reserved never runs short of a block, so nothing is preempted and every request
    completes, whatever the pool, load and lengths (a request larger than the pool is
    refused instead)."""
    m = Affine(kv_blocks=blocks, block_size=4, max_num_batched_tokens=64, max_num_seqs=16)
    wl = ClosedLoop(conc, RandomRange(isl * 2, 0.5), RandomRange(osl * 2, 0.5), num_prompts=3 * conc)
    try:
        r = simulate(m, wl, seed=1, kv_reservation="to_completion", async_scheduling=asy)
    except RefusedError as e:
        assert e.setting == "num_gpu_blocks"
        # refused only when the longest request the ranges can draw (1.5x each length) needs
        # more blocks than the pool's usable ones
        assert -(-(3 * isl + 3 * osl) // 4) > blocks - 1
        return
    assert r.preemptions == 0
    assert r.completed == 3 * conc
    assert max(r.kv_usage) <= 1.0


def test_the_stream_takes_a_reserving_engines_steps_exactly() -> None:
    """Guards the vectorised stream under a reservation (it must admit by the whole
    request's blocks and charge decodes none): it takes steps of such an engine, and the run
    equals the step-by-step loop, preemption-free."""
    wl = Poisson(30.0, 40, 60, num_prompts=40)
    m = Summed()
    a = simulate(m, wl, seed=2, num_gpu_blocks=100, kv_reservation="to_completion")
    assert m.summed > 0
    b = simulate(Summed(), wl, seed=2, num_gpu_blocks=100, kv_reservation="to_completion", skip_ahead=False)
    _same(a, b)
    assert a.preemptions == 0


def test_a_request_the_free_pool_can_never_hold_is_refused_not_stalled() -> None:
    """Guards a hang and an internal error: 9 usable blocks of 4 tokens; the first request
    leaves 5 prefix-cache blocks resident (never evicted, divergence S1), so the second,
    alone with nothing running, finds 4 free. Reserved to completion it needs 8 (24 + 8
    tokens) and would wait for ever; allocated on demand its first chunk needs 6; both are
    refused naming num_gpu_blocks, and a bad kv_reservation names the setting."""
    trace = Trace([(0.0, 24, 4, 20), (10.0, 24, 8, 0)])
    for mode, text in (
        ("to_completion", "needs 8 KV blocks reserved to completion"),
        ("on_demand", "cannot be served"),
    ):
        m = Affine(kv_blocks=10, block_size=4, max_num_batched_tokens=64, enable_prefix_caching=True)
        with pytest.raises(RefusedError, match=text) as e:
            simulate(m, trace, kv_reservation=mode)
        assert e.value.setting == "num_gpu_blocks"
    with pytest.raises(LatencyKernelError, match="kv_reservation must be on_demand or to_completion"):
        simulate(Affine(), ClosedLoop(1, 10, 10), kv_reservation="guaranteed")


def test_a_trt_scenario_reserves_to_completion_and_says_so() -> None:
    """Guards where the rule comes from: a scenario stating ``engine: trt`` resolves
    limits().kv_reservation to to_completion with the assumption recorded; a vLLM one
    allocates on demand."""
    trt = lk.open("aisimulate/llama-3.1-70b-instruct-h200-fp8-trt-tp8.yaml")
    assert trt.limits().kv_reservation == "to_completion"
    assert any(a[0] == "kv_reservation" for a in trt.assumptions())
    vllm = lk.open("aisimulate/llama-3.1-70b-instruct-h200-fp8-vllm-tp8.yaml")
    assert vllm.limits().kv_reservation == "on_demand"
    assert not any(a[0] == "kv_reservation" for a in vllm.assumptions())


def test_closed_form_cap_counts_the_whole_length_when_reserved() -> None:
    """Guards the closed form's resident cap: the KV blocks over ceil((isl + osl/2) / block)
    when allocated as requests grow, over ceil((isl + osl) / block) when reserved."""
    lim = SimpleNamespace(max_num_seqs=1024, block_size=16, kv_blocks=22339, kv_reservation="on_demand")
    assert resident_cap(lim, 922, 7373) == 22339 // -(-(922 + 7373 / 2) // 16)
    lim.kv_reservation = "to_completion"
    assert resident_cap(lim, 922, 7373) == 22339 // -(-(922 + 7373) // 16) == 43

"""The GEMM weight-read overlap, the served linears' half point and the recurrent prefill law
(issue 11 fixes 1, 28 and 5)."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

import latencykernel as lk
from latencykernel import Batch, Resource
from latencykernel.kernel.step import price_step
from latencykernel.price.ramp import gemm_read_beyond_compute_s
from latencykernel.price.recurrent import chunked_recurrent_flops_per_token, rank_decode_rate, recurrent_update_s

pos = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)


@given(pos, pos)
def test_gemm_compute_plus_extra_read_is_the_larger(compute: float, read: float) -> None:
    """Guards the overlap law: compute + extra = max(compute, read), extra never negative."""
    extra = gemm_read_beyond_compute_s(compute, read)
    assert extra >= 0.0
    assert compute + extra == pytest.approx(max(compute, read), abs=1e-15)


def test_chunked_recurrent_flops_by_hand() -> None:
    """Guards the FLOP count n_heads·(6·dk·dv + 4·C·dk), and 0 without geometry."""
    assert chunked_recurrent_flops_per_token(64, 128, 128) == 64 * (6 * 128 * 128 + 4 * 64 * 128)
    assert chunked_recurrent_flops_per_token(0, 128, 128) == 0.0


def test_recurrent_update_decode_prefill_and_fallback() -> None:
    """Guards: decodes at the decode rate, prompt tokens at GEMM efficiency, the floor once,
    an empty step free, and prompt tokens at the decode rate when no geometry is stated."""
    assert recurrent_update_s(0, 0, 5e-6, 1e6, 1e6, 1e15, 0.5) == 0.0
    assert recurrent_update_s(10, 0, 5e-6, 1e6, 1e6, 1e15, 0.5) == pytest.approx(5e-6 + 10e-6)
    assert recurrent_update_s(0, 1000, 5e-6, 1e6, 1e6, 1e15, 0.5) == pytest.approx(5e-6 + 1000 * 1e6 / 5e14)
    assert recurrent_update_s(0, 1000, 5e-6, 1e6, 0.0, 1e15, 0.5) == pytest.approx(5e-6 + 1000e-6)


DENSE = "aisimulate/llama-3.1-70b-instruct-h200-fp8-vllm-tp1.yaml"
MOE = "aisimulate/deepseek-v3-h200-fp8-sglang-tp8.yaml"
HYBRID = "aisimulate/qwen3.5-397b-a17b-b200-bf16-sglang-tp8.yaml"


def test_overlap_applies_to_dense_plans_only() -> None:
    """Guards the scope of D10: a plan without routed experts overlaps, a MoE plan does not."""
    assert lk.open(DENSE).constants.gemm_read_overlap
    assert not lk.open(MOE).constants.gemm_read_overlap


def test_dense_decode_step_is_bounded_by_the_larger_of_compute_and_read() -> None:
    """Guards the double count: at one decode a dense 70B model's step (without host) is
    no longer GEMM ramp plus weight read; its SM + HBM stays below their sum by the
    hidden part, which is positive at small batch and shrinks as compute grows."""
    k = lk.open(DENSE)
    c = k.constants
    small = k.step_time(Batch.decode(1, 1536)).per_resource
    # weight read alone, the whole model's dense weights at HBM bandwidth
    read = sum(lp.count * lp.dense_weight_bytes for lp in c.plan.layers) / c.tp / c.hbm_bytes_per_s
    assert small[Resource.HBM] < read  # part of the read is hidden under the ramp's compute
    assert small[Resource.SM] + small[Resource.HBM] >= read  # but the step is never below the read


def test_recurrent_prefill_is_not_priced_at_the_decode_rate() -> None:
    """Guards hypothesis 5: an 8,192-token prefill of a hybrid GDN model prices its
    recurrent layers far below tokens / decode rate, and a decode step is unchanged by the
    prefill law (decode tokens still at the decode rate)."""
    k = lk.open(HYBRID)
    c = k.constants
    prompt = Batch.from_columns([8192], [0], decode_threshold=8)
    args = (prompt.scheduled, prompt.computed, prompt.decode_threshold, prompt.sm_budget)
    recurrent_share = price_step(c, *args)[0][0] - price_step(dataclasses.replace(c, recurrent_by_kind={}), *args)[0][0]
    rec_layers = sum(lp.count for lp in c.plan.layers if lp.recurrent_kind)
    floor, rate = next(iter(c.recurrent_by_kind.values()))  # per rank (fix 14)
    at_decode_rate = rec_layers * (floor + 8192 / rate)
    assert 0.0 < recurrent_share < 0.25 * at_decode_rate
    d1 = k.step_time(Batch.decode(4, 2048))
    d2 = k._reference_step(Batch.decode(4, 2048))
    assert d1.no_overlap == d2.no_overlap


def test_rank_decode_rate_splits_the_layer_over_tensor_parallel_ranks() -> None:
    """Guards fix 14: a rank holding 1/tp of a recurrent layer's heads updates a decode
    token tp times faster than the whole layer; tp below 1 counts as one rank."""
    assert rank_decode_rate(0.5e6, 1) == 0.5e6
    assert rank_decode_rate(0.5e6, 8) == 4.0e6
    assert rank_decode_rate(0.5e6, 0) == 0.5e6


QWEN_TP4 = "aisimulate/qwen3.5-397b-a17b-b300-bf16-sglang-tp4.yaml"
QWEN_TP8 = "aisimulate/qwen3.5-397b-a17b-b300-bf16-sglang-tp8.yaml"
B300_GDN_RATE = 0.726e6  # cost-model-recurrent recurrent_decode_rate_gdn, b300, tokens/s (whole layer)
B300_GDN_FLOOR = 5.1e-6  # recurrent_decode_floor_gdn, b300


@pytest.mark.parametrize(("scenario", "tp"), [(QWEN_TP4, 4), (QWEN_TP8, 8)])
def test_recurrent_decode_is_priced_per_rank(scenario: str, tp: int) -> None:
    """Guards fix 14: the per-rank decode rate is the registry's whole-layer rate times tp,
    the floor the registry's; an added decoding request costs each recurrent layer
    1 / (rate x tp) of SM time on top of whatever the rest of the step adds."""
    c = lk.open(scenario).constants
    floor, rate = c.recurrent_by_kind["gdn"]
    assert floor == pytest.approx(B300_GDN_FLOOR)
    assert rate == pytest.approx(B300_GDN_RATE * tp)


@pytest.mark.parametrize(("scenario", "tp"), [(QWEN_TP4, 4), (QWEN_TP8, 8)])
def test_recurrent_decode_share_of_a_step_follows_the_heads_per_rank(scenario: str, tp: int) -> None:
    """Guards fix 14 through the step price: what the recurrent layers add to a decode
    step of 64 requests (the reference step's SM time minus the same step with no
    recurrent coefficients) is 45 GDN layers x (floor + 64 / (whole-layer rate x tp)),
    the registry's B300 values: at TP8 half the per-token part it is at TP4."""
    c = lk.open(scenario).constants
    batch = Batch.decode(64, 2048)
    args = (batch.scheduled, batch.computed, batch.decode_threshold, batch.sm_budget)
    with_rec = price_step(c, *args)[0][0]
    without = price_step(dataclasses.replace(c, recurrent_by_kind={}), *args)[0][0]
    layers = 45  # Qwen3.5-397B: 15 x (3 GDN + 1 full attention)
    assert with_rec - without == pytest.approx(layers * (B300_GDN_FLOOR + 64 / (B300_GDN_RATE * tp)), rel=1e-9)


LINEAR_RAMP_SCENARIOS = (
    "aisimulate/llama-3.1-70b-instruct-b200-fp4-vllm-tp2.yaml",  # dense GEMMs only
    "aisimulate/deepseek-v3-b200-fp4-sglang-tp4.yaml",  # routed and shared experts, dense layers
    "aisimulate/gpt-oss-120b-b200-fp4-vllm-tp1.yaml",  # routed experts with their own dtype
)


@pytest.mark.parametrize("scenario", LINEAR_RAMP_SCENARIOS)
@given(requests=st.integers(1, 512), context=st.integers(1, 32768), prompt=st.integers(0, 8192))
def test_the_dense_linears_take_their_own_half_point(scenario: str, requests: int, context: int, prompt: int) -> None:
    """Guards gemm_m_half_linear_nvfp4 (fix 28) reaching the routed experts, or missing a dense
    GEMM, a shared expert or the head: with the ramp eff(T) = eps·T/(T + m), T·F/(peak·eff)
    = F·(T + m)/(peak·eps), so moving the linears' half point from m to m' moves a step's SM
    time by exactly F_linear·(m' − m)/(peak·eps) whatever the batch, F_linear the dense,
    shared-expert and head FLOPs per token per rank; the routed experts and prefill attention
    do not move."""
    c = lk.open(scenario).constants
    assert (c.m_half, c.linear_m_half) == (174.0, 400.0)  # B200's sweep knee, and the served linears'
    assert not c.shape_aware
    base = dataclasses.replace(c, linear_m_half=c.m_half)
    scheduled = [1] * requests + ([prompt] if prompt > 8 else [])
    computed = [context] * requests + ([0] if prompt > 8 else [])
    args = (scheduled, computed, 8, 0)
    moved_sm = price_step(c, *args)[0][0] - price_step(base, *args)[0][0]
    linear_flops = sum(
        lp.count
        * (lp.dense_flops_per_token + (lp.shared_expert_flops_per_token if lp.expert_flops_per_token_per_expert else 0))
        for lp in c.plan.layers
    )
    linear_flops = (linear_flops + c.plan.head.dense_flops_per_token) / c.tp
    want = linear_flops * (400.0 - 174.0) / (c.peak_flops_per_s * c.eps_max)
    assert moved_sm == pytest.approx(want, rel=1e-9)


def test_chips_without_a_served_linear_half_point_keep_the_sweeps() -> None:
    """Guards the half point leaking beyond the part it was fitted on: B300 (no fit-half sweep
    serves a dense fp4 linear there) and fp8 on H200 price every GEMM on the sweep's ramp."""
    for scenario in (
        "aisimulate/kimi-k2.5-b300-fp4-vllm-tp4.yaml",
        "aisimulate/llama-3.1-70b-instruct-h200-fp8-vllm-tp2.yaml",
        "aisimulate/llama-3.1-70b-instruct-b200-fp8-vllm-tp2.yaml",
    ):
        c = lk.open(scenario).constants
        assert c.linear_m_half == c.m_half, scenario

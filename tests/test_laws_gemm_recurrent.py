"""The GEMM weight-read overlap and the recurrent prefill law (issue 11 fixes 1 and 5)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import latencykernel as lk
from latencykernel import Batch, Resource
from latencykernel.price.ramp import gemm_read_beyond_compute_s
from latencykernel.price.recurrent import chunked_recurrent_flops_per_token, recurrent_update_s

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
    e = k.step_time(Batch.from_columns([8192], [0], decode_threshold=8))
    rec_layers = sum(lp.count for lp in c.plan.layers if lp.recurrent_kind)
    floor, rate = next(iter(c.recurrent_by_kind.values()))
    at_decode_rate = rec_layers * (floor + 8192 / rate)
    assert e.per_resource[Resource.SM] < 0.25 * at_decode_rate
    d1 = k.step_time(Batch.decode(4, 2048))
    d2 = k._reference_step(Batch.decode(4, 2048))
    assert d1.no_overlap == d2.no_overlap

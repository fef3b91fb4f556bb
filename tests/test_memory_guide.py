"""The guide's memory figures on the embedded data (Go guide, "Read the memory"), KV
geometry, capacity."""

from __future__ import annotations

import pytest

import latencykernel as lk

GUIDE = "aisimulate/deepseek-v3-h200-fp8-sglang-tp8.yaml"
GIB = float(1 << 30)
MIB = float(1 << 20)


@pytest.fixture(scope="module")
def kernel() -> lk.Kernel:
    return lk.open(GUIDE)


def test_fixed_memory_prints_as_the_guide_prints_it(kernel: lk.Kernel) -> None:
    m = kernel.fixed_bytes()
    printed = [
        f"{x / GIB:5.1f}"
        for x in (m.weights, m.activation_peak, m.cuda_graph, m.comm_buffers, m.eplb_redundant, m.total)
    ]
    assert printed == [" 78.2", "  1.1", "  0.8", "  0.0", "  0.0", " 80.1"]
    assert f"{kernel.pre_snapshot_bytes() / GIB:4.1f}" == " 3.9"


def test_fixed_memory_matches_the_guide(kernel: lk.Kernel) -> None:
    m = kernel.fixed_bytes()
    assert m.weights / GIB == pytest.approx(78.2, rel=0.01)
    assert m.activation_peak / GIB == pytest.approx(1.1, abs=0.05)
    assert m.cuda_graph / GIB == pytest.approx(0.8, abs=0.05)
    assert m.comm_buffers == 0
    assert m.eplb_redundant == 0
    assert m.total / GIB == pytest.approx(80.1, rel=0.01)
    assert m.total == m.weights + m.activation_peak + m.cuda_graph + m.comm_buffers + m.eplb_redundant
    assert kernel.pre_snapshot_bytes() / GIB == pytest.approx(3.9, abs=0.05)


def test_a_4096_token_request_holds_137_mib(kernel: lk.Kernel) -> None:
    assert kernel.sequence_variable_bytes(4096) == 4096 * 35136
    assert round(kernel.sequence_variable_bytes(4096) / MIB) == 137


def test_kv_per_token_fp8_then_bf16_after_editing_the_inputs() -> None:
    inputs = lk.open_inputs(GUIDE)
    base = lk.new(inputs)
    inputs.deployment.pools[0].engine.cache_dtype = "bfloat16"
    wide = lk.new(inputs)
    assert base.sequence_variable_bytes(64) // 64 == 35136
    assert wide.sequence_variable_bytes(64) // 64 == 70272
    assert base.sequence_variable_bytes(64) // 64 == 35136  # base unchanged by the edit


@pytest.mark.parametrize("tokens", [1, 15, 16, 17, 1000, 4096, 4097])
def test_kv_is_allocated_in_whole_pages(kernel: lk.Kernel, tokens: int) -> None:
    pages = -(-tokens // 16)
    assert kernel.sequence_variable_bytes(tokens) == pages * 16 * 35136


def test_pure_attention_model_holds_no_fixed_sequence_state(kernel: lk.Kernel) -> None:
    assert kernel.sequence_fixed_bytes() == 0
    assert kernel.sequence_variable_bytes(0) == 0


def test_kv_budget_and_capacity(kernel: lk.Kernel) -> None:
    total = 141 * GIB
    budget = kernel.kv_budget_bytes()
    expected = int(total * 0.9) - kernel.fixed_bytes().total - kernel.pre_snapshot_bytes()
    assert budget == expected
    assert kernel.kv_budget_bytes(0.85) < budget
    # issue 10: at 0.5 the fixed memory exceeds the chip's share; refused, never negative
    with pytest.raises(lk.RefusedError, match="gpu_memory_utilization 0.5"):
        kernel.kv_budget_bytes(0.5)
    per_seq = kernel.sequence_variable_bytes(4096)
    assert kernel.max_sequences(4096) == budget // per_seq
    assert kernel.kv_blocks() == budget // (16 * 35136)
    assert kernel.max_sequences(8192) <= kernel.max_sequences(4096)
    with pytest.raises(ValueError, match="gpu_memory_utilization"):
        kernel.kv_budget_bytes(1.5)

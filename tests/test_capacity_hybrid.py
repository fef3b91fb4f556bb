"""Capacity under vLLM's hybrid KV-cache manager, and the memory helpers' refusals (issue 10).

Each test failed before: gpt-oss-120b (18 of 36 layers windowed at 128) was charged the
whole context in every layer (32,768 × 73,728 bytes at 32,768 tokens); ``kv_budget_bytes(1e-9)``
was negative; ``max_sequences(0)`` and ``(-5)`` returned 2,147,483,647; ``tier_time`` read
"sideways" as from-tier, queue depth 0 or -3 as 1, negative or NaN bytes as zero;
``pd_transfer_time(nan, ...)`` returned 6.5 µs.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import latencykernel as lk
from latencykernel import LatencyKernelError
from latencykernel.price.hybrid_kv import hybrid_blocks_per_request, hybrid_group_size, window_blocks

GPT_OSS = "examples/gpt-oss-120b-b200-mxfp4-tp1.yaml"


@pytest.fixture(scope="module")
def oss() -> lk.Kernel:
    return lk.open(GPT_OSS)


def test_windowed_layers_hold_only_their_window(oss: lk.Kernel) -> None:
    """At 32,768 tokens the 18 full layers hold 2,048 blocks and the 18 windowed layers
    ceil(127/16) + 1 = 9, each block a 16-token page in 18 layers (group size 18)."""
    per_layer_token = oss.kv_bytes_per_token() / 36
    assert oss.kv_bytes_per_token() == 73728
    slot = int(per_layer_token * 16 * 18)
    assert oss.blocks_for(32768) == 2048 + 9
    assert oss.sequence_variable_bytes(32768) == (2048 + 9) * slot
    assert oss.sequence_variable_bytes(32768) < 32768 * 73728 * 0.51
    assert oss.kv_blocks() == oss.kv_budget_bytes() // slot
    assert oss.max_sequences(32768) == oss.kv_budget_bytes() // ((2048 + 9) * slot)
    assert ("hybrid_kv_cache_manager", "on") in [(n, v) for n, v, _ in oss.assumptions()]


def test_short_requests_are_charged_every_layer_in_full(oss: lk.Kernel) -> None:
    """Below the window, a windowed layer holds the whole context like a full one."""
    assert oss.blocks_for(100) == 2 * 7
    assert oss.sequence_variable_bytes(100) == oss.blocks_for(100) * int(73728 / 36 * 16 * 18)


@pytest.mark.parametrize(
    "edit",
    [
        {"disable_hybrid_kv_cache_manager": True},
    ],
)
def test_where_vllm_disables_the_manager_every_layer_holds_the_context(edit: dict[str, Any]) -> None:
    """--disable-hybrid-kv-cache-manager: vLLM charges windowed layers as full ones."""
    inputs = lk.open_inputs(GPT_OSS)
    for key, v in edit.items():
        setattr(inputs.deployment.pools[0].engine, key, v)
    k = lk.new(inputs)
    assert k.sequence_variable_bytes(32768) == 32768 * 73728
    assert ("hybrid_kv_cache_manager", "off") in [(n, v) for n, v, _ in k.assumptions()]


def test_under_a_kv_connector_the_manager_is_off_and_recorded() -> None:
    """vLLM turns the hybrid manager off under a KV connector that does not declare support
    for it (taken here for any connector): windowed layers are charged the whole context."""
    from latencykernel.documents.scenario import Deployment

    inputs = lk.open_inputs(GPT_OSS)
    data = inputs.deployment.model_dump(by_alias=True, exclude_none=True)
    data["pd_transfer"] = {"connector": "NixlConnector"}
    inputs.deployment = Deployment.model_validate(data)
    k = lk.new(inputs)
    assert k.sequence_variable_bytes(32768) == 32768 * 73728
    reasons = {n: r for n, _, r in k.assumptions()}
    assert "NixlConnector" in reasons["hybrid_kv_cache_manager"]


def test_a_full_attention_model_is_unchanged() -> None:
    """The twin: Llama (no windowed layers) keeps whole-context pages and no new assumption."""
    k = lk.open("examples/llama-3.1-8b-instruct-h100-bf16-tp1.yaml")
    assert k.sequence_variable_bytes(1000) == 63 * 16 * k.kv_bytes_per_token()
    assert "hybrid_kv_cache_manager" not in [n for n, _, _ in k.assumptions()]


@given(
    n_full=st.integers(0, 80),
    n_swa=st.integers(0, 80),
    window=st.integers(1, 8192),
    block=st.sampled_from([16, 32, 64, 128]),
    tokens=st.integers(1, 1 << 22),
)
@settings(max_examples=200, deadline=None)
def test_hybrid_blocks_properties(n_full: int, n_swa: int, window: int, block: int, tokens: int) -> None:
    """The law: never more than charging every layer in full, monotone in tokens, and a
    windowed group's blocks bounded by its window."""
    kinds = [(n, w) for n, w in ((n_full, 0), (n_swa, window)) if n]
    if not kinds:
        assert hybrid_blocks_per_request(tokens, block, kinds) == 0
        return
    gs = hybrid_group_size([n for n, _ in kinds])
    got = hybrid_blocks_per_request(tokens, block, kinds)
    full = sum(-(-n // gs) for n, _ in kinds) * -(-tokens // block)
    assert 0 < got <= full
    assert hybrid_blocks_per_request(tokens + block, block, kinds) >= got
    assert window_blocks(tokens, block, window) <= -(-(window - 1) // block) + 1


def test_group_size_follows_vllm() -> None:
    """_get_kv_cache_groups_uniform_page_size: the fewest layers, or the most when under 1.25x."""
    assert hybrid_group_size([18, 18]) == 18
    assert hybrid_group_size([10, 12]) == 12
    assert hybrid_group_size([10, 40]) == 10


# ----- memory helpers ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def llama() -> lk.Kernel:
    return lk.open("examples/llama-3.1-8b-instruct-h100-bf16-tp1.yaml")


def test_a_utilization_leaving_no_budget_is_refused(llama: lk.Kernel) -> None:
    with pytest.raises(lk.RefusedError) as info:
        llama.kv_budget_bytes(1e-9)
    assert info.value.setting == "gpu_memory_utilization"
    assert llama.kv_budget_bytes(0.9) > 0


@pytest.mark.parametrize("tokens", [0, -5])
def test_max_sequences_of_no_tokens_is_refused(llama: lk.Kernel, tokens: int) -> None:
    with pytest.raises(LatencyKernelError, match="tokens"):
        llama.max_sequences(tokens)
    assert 0 < llama.max_sequences(1) < 2**31 - 1


@pytest.mark.parametrize(
    ("kw", "words"),
    [
        ({"direction": "sideways"}, "direction"),
        ({"queue_depth": 0}, "queue_depth"),
        ({"queue_depth": -3}, "queue_depth"),
        ({"nbytes": -1}, "nbytes"),
        ({"nbytes": math.nan}, "nbytes"),
    ],
)
def test_tier_time_refuses_nonsense(kw: dict[str, Any], words: str) -> None:
    k = lk.open("examples/llama-3.1-8b-instruct-h100-bf16-tp1.yaml")
    tiers = list(k._tiers) or ["cpu"]
    args: dict[str, Any] = {"tier": tiers[0], "direction": "to_tier", "nbytes": 1 << 20, "queue_depth": 1}
    k.tier_time(**args)
    with pytest.raises(LatencyKernelError, match=words):
        k.tier_time(**{**args, **kw})


def test_pd_transfer_of_nan_tokens_is_refused(llama: lk.Kernel) -> None:
    with pytest.raises(LatencyKernelError, match="tokens"):
        llama.pd_transfer_time(math.nan, lk.Placement(0), lk.Placement(1))  # type: ignore[arg-type]
    assert llama.pd_transfer_time(100, lk.Placement(0), lk.Placement(1)) > 0

"""Decode- and prefill-context parallelism at kernel level (blis-kernel-spec §4.4, §6.3,
§14): capacity is sharded token-then-page, and inflating one collective's floor ×10 raises
the step by exactly nine floors per launch of that collective, and moves nothing else."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import latencykernel as lk
from latencykernel import Batch, Resource
from latencykernel.documents.chip import load_chip

GUIDE = "aisimulate/deepseek-v3-h200-fp8-sglang-tp8.yaml"  # DeepSeek-V3: 61 MLA layers, TP 8
R1 = "examples/deepseek-r1-b200-fp8-tp8.yaml"
LAYERS = 61
NS = 1e-9


def dcp8(inputs: lk.Inputs) -> None:
    inputs.deployment.pools[0].parallel.dcp = 8


def pcp2_on_b300(inputs: lk.Inputs) -> None:
    inputs.chip = load_chip(lk.Repos.default().chip_path("b300"))
    inputs.scenario.cluster.hardware = "b300"
    par = inputs.deployment.pools[0].parallel
    par.tp, par.pcp = 4, 2


def kernel(scenario: str, edit: Callable[[lk.Inputs], None], inflate: str | None = None) -> lk.Kernel:
    inputs = lk.open_inputs(scenario)
    edit(inputs)
    if inflate:
        for s in inputs.coefficients:
            for item in s.coefficients:
                if inflate in item:
                    item[inflate].value *= 10
    return lk.new(inputs)


def floor_s(k: lk.Kernel, name: str) -> float:
    return next(r.value for r in k._coeffs.origins() if r.name == name) * 1e-6


def resources(e: lk.StepEstimate) -> dict[Resource, float]:
    return {r: e.per_resource.get(r, 0.0) for r in Resource}


def assert_only_nvlink_moves(base: lk.Kernel, big: lk.Kernel, batch: Batch, expected_s: float) -> None:
    a, b = resources(base.step_time(batch)), resources(big.step_time(batch))
    assert b[Resource.NVLINK] - a[Resource.NVLINK] == pytest.approx(expected_s, abs=4 * NS)
    for r in (Resource.SM, Resource.HBM, Resource.NIC, Resource.HOST):
        assert b[r] == a[r]


def test_dcp_shards_capacity_by_tokens_before_pages() -> None:
    k = kernel(GUIDE, dcp8)
    assert k.sequence_variable_bytes(128) == 16 * 35136  # 16 tokens per rank: one 16-token page
    assert k.sequence_variable_bytes(129) == 32 * 35136  # 17 tokens: two pages
    assert k.sequence_variable_bytes(8) == 16 * 35136  # one token per rank still takes a page


def test_dcp_decode_combine_is_one_reduce_scatter_per_layer() -> None:
    name = "collective_floor_reduce_scatter_fp16_8rank_h200"
    base, big = kernel(GUIDE, dcp8), kernel(GUIDE, dcp8, name)
    assert_only_nvlink_moves(base, big, Batch.decode(1, 4096), 9 * floor_s(base, name) * LAYERS)


def test_dcp_decode_gathers_the_query_and_the_log_sum_exp() -> None:
    name = "collective_floor_all_gather_fp16_8rank_h200"
    base, big = kernel(GUIDE, dcp8), kernel(GUIDE, dcp8, name)
    assert_only_nvlink_moves(base, big, Batch.decode(1, 4096), 9 * floor_s(base, name) * 2 * LAYERS)


def test_dcp_prefill_with_a_prefix_gathers_the_latent_context_once_per_layer() -> None:
    name = "collective_floor_all_gather_fp16_8rank_h200"
    base, big = kernel(GUIDE, dcp8), kernel(GUIDE, dcp8, name)
    with_prefix = Batch.from_columns([64], [20], 8)  # one chunk after a 20-token prefix, no decodes
    assert_only_nvlink_moves(base, big, with_prefix, 9 * floor_s(base, name) * LAYERS)
    without_prefix = Batch.from_columns([64], [0], 8)
    assert_only_nvlink_moves(base, big, without_prefix, 0.0)


def test_pcp_prefill_gathers_latent_and_rope_separately() -> None:
    name = "collective_floor_all_gather_fp16_2rank_b300"
    base, big = kernel(R1, pcp2_on_b300), kernel(R1, pcp2_on_b300, name)
    assert base.resolved().prefill_context_parallel == 2
    prefill = Batch.from_columns([16], [0], 8)
    # kv_lora_rank 512 < d_h 576: the latent and the rope part are two gathers per layer
    assert_only_nvlink_moves(base, big, prefill, 9 * floor_s(base, name) * 2 * LAYERS)
    decode = Batch.decode(4, 1000)  # decodes are replicated across PCP ranks: nothing gathered
    assert_only_nvlink_moves(base, big, decode, 0.0)


def test_pcp_splits_a_prefill_over_ranks() -> None:
    one, two = lk.open(R1), None
    two = kernel(R1, pcp2_on_b300)
    prefill = Batch.from_columns([4096], [0], 8)
    assert (
        two.step_time(prefill).per_resource[Resource.SM]
        < kernel(R1, lambda i: (pcp2_on_b300(i), setattr(i.deployment.pools[0].parallel, "pcp", 1)))
        .step_time(prefill)
        .per_resource[Resource.SM]
    )
    assert one.resolved().prefill_context_parallel == 1

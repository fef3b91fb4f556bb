"""KV-cache geometry, paging, and vLLM's decode-context-parallel (DCP) token dealing
(blis-kernel-spec §4.1, §6.3, §8.5, §17), checked against oracles written here."""

from __future__ import annotations

import math
import random
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from latencykernel.errors import RefusedError
from latencykernel.price.kv import kv_bytes_per_token, kv_heads_per_rank, paged_bytes
from latencykernel.resolve.context import dcp_rank_tokens, dcp_shards_kv
from latencykernel.resolve.dtypes import cache_dtype_bytes

# --------------------------------------------------------------------------------------
# DCP interleave
# --------------------------------------------------------------------------------------


def test_dcp_rank_tokens_matches_dealing_oracle_over_grid() -> None:
    """vLLM deals a sequence in runs of ``interleave`` tokens round-robin over the DCP
    ranks from rank 0. Simulated token by token for every L ≤ 5,000."""
    checked = 0
    for dcp in (1, 2, 4, 8, 16):
        for interleave in (1, 2, 3, 16, 32, 64):
            held = [0] * dcp
            for t in range(5000):
                held[(t // interleave) % dcp] += 1
                length = t + 1
                assert dcp_rank_tokens(length, dcp, interleave) == max(held), (length, dcp, interleave)
                checked += 1
    assert checked == 150_000


@settings(max_examples=300, deadline=None)
@given(length=st.integers(1, 3000), dcp=st.integers(2, 32), interleave=st.integers(1, 200))
def test_dcp_rank_tokens_matches_oracle_hypothesis(length: int, dcp: int, interleave: int) -> None:
    held = [0] * dcp
    for t in range(length):
        held[(t // interleave) % dcp] += 1
    assert dcp_rank_tokens(length, dcp, interleave) == max(held)
    assert held[0] == max(held)  # the first rank is always (one of) the busiest


def test_dcp_rank_tokens_spec_numbers() -> None:
    """§17: interleave 32, dcp 8, L 1000 -> 128 (vs 125); interleave 64, L 100 -> 64 (vs 13);
    interleave 1 -> ceil(L/dcp)."""
    assert dcp_rank_tokens(1000, 8, 32) == 128
    assert math.ceil(1000 / 8) == 125
    assert dcp_rank_tokens(100, 8, 64) == 64
    assert math.ceil(100 / 8) == 13
    for length in range(1, 2000):
        for dcp in (2, 3, 4, 8, 16):
            assert dcp_rank_tokens(length, dcp, 1) == -(-length // dcp)


def test_dcp_rank_tokens_edges() -> None:
    assert dcp_rank_tokens(0, 8, 1) == 0
    assert dcp_rank_tokens(-3, 8, 1) == 0
    assert dcp_rank_tokens(777, 1, 64) == 777
    assert dcp_rank_tokens(777, 0, 64) == 777
    # a non-positive interleave deals one token at a time
    assert dcp_rank_tokens(100, 8, 0) == 13


def test_dcp_shards_full_and_latent_attention_only() -> None:
    assert dcp_shards_kv("gqa") and dcp_shards_kv("mla") and dcp_shards_kv("sparse_mla")
    assert not dcp_shards_kv("swa")
    assert not dcp_shards_kv("mamba2")


# --------------------------------------------------------------------------------------
# KV bytes per token
# --------------------------------------------------------------------------------------


def heads_on_each_rank(n_kv: int, tp: int) -> list[int]:
    """vLLM's assignment of KV heads to TP ranks: with at least as many heads as ranks each
    rank takes a contiguous n_kv/tp slice; with fewer, each rank holds a replica of the one
    head it shares with tp/n_kv neighbours (a head is never split)."""
    tp = max(tp, 1)
    counts = []
    for rank in range(tp):
        if n_kv >= tp:
            per = n_kv // tp
            owned = [h for h in range(n_kv) if h // per == rank]
        else:
            owned = [rank * n_kv // tp]
        counts.append(len(owned))
    return counts


def kv_bytes_oracle(n_kv: int, tp: int, head_dim: int, layers: int, dtype_bytes: Fraction, latent: bool) -> Fraction:
    counts = heads_on_each_rank(n_kv, tp)
    assert len(set(counts)) == 1  # admissible geometries split evenly
    per_layer = Fraction(0)
    for _ in range(counts[0]):
        for _tensor in ("latent",) if latent else ("k", "v"):
            per_layer += head_dim * dtype_bytes
    return per_layer * layers


DTYPE_BYTES = [Fraction(4), Fraction(2), Fraction(1), Fraction(1, 2), Fraction(9, 16)]


def test_kv_bytes_per_token_matches_oracle_20k_geometries() -> None:
    rnd = random.Random(11)
    done = 0
    while done < 20_000:
        latent = rnd.random() < 0.25
        tp = rnd.choice([1, 2, 4, 8, 16, 32, 3, 6, 12])
        if latent:
            n_kv, head_dim = 1, rnd.choice([576, 512, 656, 320])
        else:
            n_kv = rnd.choice([1, 2, 4, 8, 16, 32, 64, 128, 3, 6, 12, 24])
            head_dim = rnd.choice([64, 80, 96, 128, 192, 256])
            # vLLM accepts only geometries where one of n_kv, tp divides the other
            if not (n_kv % tp == 0 or tp % n_kv == 0):
                continue
        layers = rnd.randint(1, 128)
        dtype = rnd.choice(DTYPE_BYTES)
        got = kv_bytes_per_token(n_kv, tp, head_dim, layers, float(dtype), latent)
        assert got == kv_bytes_oracle(n_kv, tp, head_dim, layers, dtype, latent), (
            n_kv,
            tp,
            head_dim,
            layers,
            dtype,
            latent,
        )
        done += 1


def test_kv_heads_never_split_below_one_per_rank() -> None:
    """§6.3: 8 KV heads at tp 16 still hold one per rank."""
    assert kv_heads_per_rank(8, 16) == 1
    assert kv_heads_per_rank(8, 8) == 1
    assert kv_heads_per_rank(8, 4) == 2
    assert kv_heads_per_rank(8, 1) == 8
    assert kv_heads_per_rank(8, 0) == 8
    assert kv_bytes_per_token(8, 16, 128, 1, 2, False) == kv_bytes_per_token(8, 8, 128, 1, 2, False) == 2 * 128 * 2


def test_mla_stores_one_latent_that_no_tp_shrinks() -> None:
    """§17: DeepSeek-V3 (61 layers, latent 576): fp8 cache 35,136 B/token, bf16 70,272 B."""
    for tp in (1, 2, 8, 16):
        assert kv_bytes_per_token(1, tp, 576, 61, cache_dtype_bytes("fp8", "fp8"), True) == 35_136
        assert kv_bytes_per_token(1, tp, 576, 61, cache_dtype_bytes("bfloat16", "fp8"), True) == 70_272
    # a GQA cache of the same width stores K and V
    assert kv_bytes_per_token(1, 1, 576, 61, 1, False) == 2 * 35_136


@pytest.mark.parametrize(
    "bad", [(0, 1, 128, 4, 2), (8, 1, 0, 4, 2), (8, 1, 128, 0, 2), (8, 1, 128, 4, 0), (-1, 1, 128, 4, 2)]
)
def test_kv_bytes_zero_for_empty_geometry(bad) -> None:
    n_kv, tp, d, layers, b = bad
    assert kv_bytes_per_token(n_kv, tp, d, layers, b, False) == 0.0
    assert kv_bytes_per_token(n_kv, tp, d, layers, b, True) == 0.0


# --------------------------------------------------------------------------------------
# Cache dtype width (§8.5)
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "declared,served,expected",
    [
        ("fp8", "bf16", 1),  # an fp8 cache is one byte even for a bf16 model
        ("fp8_e5m2", "bf16", 1),
        ("fp8_ds_mla", "fp8", 1),
        ("auto", "fp8", 2),  # auto follows the compute dtype (bf16), not the fp8 storage
        ("", "nvfp4", 2),
        (None, "int4", 2),
        ("auto", "bf16", 2),
        ("auto", "fp32", 4),
        ("bfloat16", "fp8", 2),
        ("float16", "fp8", 2),
        ("nvfp4", "nvfp4", 0.5625),  # 0.5 + an fp8 scale per 16 elements
        ("nvfp4_4over6", "bf16", 0.5625),
        ("nvfp4_ds_mla", "nvfp4", 0.5),
    ],
)
def test_cache_dtype_bytes(declared, served, expected) -> None:
    assert cache_dtype_bytes(declared, served) == expected


@pytest.mark.parametrize("declared", ["int8", "turboquant_k8v4", "fp8_per_token_head", "e4m3", "float32"])
def test_cache_dtype_bytes_refuses_unknown(declared) -> None:
    with pytest.raises(RefusedError):
        cache_dtype_bytes(declared, "bf16")


# --------------------------------------------------------------------------------------
# Paging
# --------------------------------------------------------------------------------------


def paged_oracle(tokens: int, block: int, bpt: Fraction) -> int:
    """Allocate whole blocks one at a time until the tokens fit; bytes truncated."""
    if tokens <= 0 or bpt <= 0:
        return 0
    if block <= 1:
        return math.floor(tokens * bpt)
    blocks = 0
    capacity = 0
    while capacity < tokens:
        blocks += 1
        capacity += block
    return math.floor(blocks * block * bpt)


def test_paged_bytes_matches_block_allocation_oracle() -> None:
    rnd = random.Random(5)
    for i in range(8000):
        if i % 10:
            tokens, block = rnd.randint(0, 3000), rnd.choice([0, 1, 2, 3, 16, 32, 64, 128, 256])
        else:  # long sequences (block by block is slow with small pages)
            tokens, block = rnd.randint(0, 200_000), rnd.choice([64, 128, 256])
        bpt = Fraction(rnd.randint(0, 200_000), rnd.choice([1, 2, 16]))
        assert paged_bytes(tokens, block, float(bpt)) == paged_oracle(tokens, block, bpt), (tokens, block, bpt)


def test_paged_bytes_whole_pages() -> None:
    assert paged_bytes(1, 16, 100) == 1600
    assert paged_bytes(16, 16, 100) == 1600
    assert paged_bytes(17, 16, 100) == 3200
    assert paged_bytes(17, 1, 100) == 1700
    assert paged_bytes(17, 0, 100) == 1700
    assert paged_bytes(0, 16, 100) == 0
    assert paged_bytes(5, 16, 0) == 0
    assert paged_bytes(3, 1, 0.5) == 1  # truncated toward zero


def test_sequence_variable_bytes_figure() -> None:
    """§17: SequenceVariableBytes(4096) = 4096 × 35,136 B = 143,917,056 B (block 16)."""
    assert paged_bytes(4096, 16, 35_136) == 143_917_056


def test_dcp_capacity_shards_tokens_then_pages() -> None:
    """§17: dividing bytes instead of tokens understates by 8× at 16 tokens with dcp 8, 2× at
    64, exact from 128 (block 16)."""
    bpt = 35_136
    for tokens, factor in [(16, 8), (64, 2), (128, 1), (4096, 1)]:
        per_rank_tokens = dcp_rank_tokens(tokens, 8, 1)
        token_then_page = paged_bytes(per_rank_tokens, 16, bpt)
        bytes_then_divide = Fraction(paged_bytes(tokens, 16, bpt), 8)
        # token-then-page: whole blocks of the rank's own ceil(tokens/8) tokens
        assert token_then_page == math.ceil(math.ceil(tokens / 8) / 16) * 16 * bpt
        assert token_then_page == factor * bytes_then_divide


@pytest.mark.parametrize(
    ("dtype", "bf16", "fp8", "fp4", "want"),
    [
        ("nvfp4", 989.0, 1979.0, 9000.0, ("nvfp4", 9000.0)),
        ("mxfp4", 2250.0, 4500.0, 9000.0, ("nvfp4", 9000.0)),
        ("nvfp4", 989.0, 1979.0, 0.0, ("bf16", 989.0)),
        ("mxfp4", 989.0, 1979.0, 0.0, ("bf16", 989.0)),
        ("int4", 989.0, 1979.0, 9000.0, ("bf16", 989.0)),
        ("fp8", 989.0, 1979.0, 0.0, ("fp8", 1979.0)),
        ("fp8", 312.0, 0.0, 0.0, ("bf16", 312.0)),
    ],
)
def test_four_bit_weights_without_fp4_tensor_cores_compute_at_bf16(
    dtype: str, bf16: float, fp8: float, fp4: float, want: tuple[str, float]
) -> None:
    """Guards the served compute rate (divergences V13): fp4 weights take the fp4 peak only
    where the chip has one; on Hopper vLLM runs them W4A16 (Marlin FP4, MXFP4 BF16
    backends), so they price at the bf16 peak with bf16 coefficients, not at fp8."""
    from latencykernel.resolve.dtypes import dtype_fit

    assert dtype_fit(dtype, bf16, fp8, fp4) == want

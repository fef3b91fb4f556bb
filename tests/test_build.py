"""``build``: a deployment made in memory from catalog names, validated like a file."""

from __future__ import annotations

import pytest

import latencykernel as lk
from latencykernel import Batch


def test_build_by_hugging_face_id_matches_the_catalog_name() -> None:
    by_id = lk.build(
        "meta-llama/Llama-3.1-8B-Instruct",
        "h100",
        tp=1,
        cache_dtype="auto",
        block_size=16,
        max_num_seqs=256,
        max_num_batched_tokens=8192,
        max_model_len=8192,
        cudagraph_mode="PIECEWISE",
    )
    by_name = lk.build(
        "llama-3.1-8b-instruct",
        "h100",
        tp=1,
        cache_dtype="auto",
        block_size=16,
        max_num_seqs=256,
        max_num_batched_tokens=8192,
        max_model_len=8192,
        cudagraph_mode="PIECEWISE",
    )
    b = Batch.decode(16, 2048)
    assert by_id.step_time(b) == by_name.step_time(b)
    assert by_id.model == "llama-3.1-8b-instruct"
    assert by_id.kv_bytes_per_token() == 2 * 8 * 128 * 2 * 32  # K and V, 8 heads, bf16, 32 layers


def test_deepseek_r1_is_served_by_its_own_catalog_entry() -> None:
    k = lk.build("deepseek-ai/DeepSeek-R1", "h200", tp=8, quantization="fp8", cache_dtype="fp8")
    assert k.model == "deepseek-r1"
    assert k.kv_bytes_per_token() == 35136


def test_build_records_the_defaults_it_assumes() -> None:
    k = lk.build("qwen3-32b", "h200", tp=2)
    names = {n for n, _, _ in k.assumptions()}
    assert {
        "block_size",
        "max_num_seqs",
        "max_num_batched_tokens",
        "cudagraph_mode",
        "max_cudagraph_capture_size",
        "gpu_memory_utilization",
    } <= names
    assert "engine_version" not in names  # build states the release the kernel prices


def test_build_takes_a_chip_by_unique_prefix() -> None:
    assert lk.build("llama-3.1-8b-instruct", "gb200", tp=1).chip == "gb200-nvl72"


@pytest.mark.parametrize(
    ("kwargs", "key"),
    [
        ({"tp": 0}, "tp"),
        ({"cache_dtpye": "fp8"}, "cache_dtpye"),
        ({"block_size": "sixteen"}, "block_size"),
    ],
)
def test_build_rejects_bad_settings_like_a_file_would(kwargs: dict[str, object], key: str) -> None:
    with pytest.raises(lk.DocumentError) as info:
        lk.build("llama-3.1-8b-instruct", "h100", **kwargs)
    assert key in str(info.value)


def test_build_names_an_unknown_model_and_chip() -> None:
    with pytest.raises(lk.DocumentError, match="llama-9"):
        lk.build("llama-9", "h100")
    with pytest.raises(lk.DocumentError, match="h900"):
        lk.build("llama-3.1-8b-instruct", "h900")


def test_build_refuses_what_vllm_would_not_start() -> None:
    with pytest.raises(lk.RefusedError) as info:
        lk.build("llama-3.1-70b-instruct", "h100", tp=1)
    assert info.value.setting == "parallel.tp"

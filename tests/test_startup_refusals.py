"""Deployments vLLM would not start (issue 10), each refused beside a twin that opens.

Every test here failed on the code before issue 10: each of these deployments opened and
was priced (``build("llama-3.1-8b-instruct", "h100", tp=3)`` held 2 of 8 KV heads per rank).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import latencykernel as lk
from latencykernel import RefusedError

LLAMA = "llama-3.1-8b-instruct"


def refused(setting: str, make: Callable[[], Any], *words: str) -> RefusedError:
    with pytest.raises(RefusedError) as info:
        make()
    err = info.value
    assert err.setting == setting, (err.setting, str(err))
    msg = str(err)
    assert "\n" not in msg
    for w in words:
        assert w in msg, (w, msg)
    return err


def edited(model: str, chip: str, edit: Callable[[lk.Inputs], None], **kw: Any) -> lk.Kernel:
    inputs = lk.build_inputs(model, chip, **kw)
    edit(inputs)
    return lk.new(inputs)


def set_nodes(op: str, **values: int) -> Callable[[lk.Inputs], None]:
    def f(i: lk.Inputs) -> None:
        for lk_ in i.model.layer_kinds:
            for n in lk_.nodes:
                if n.op == op and (op != "Attention" or n.role is None):
                    for k, v in values.items():
                        setattr(n, k, v)

    return f


@pytest.mark.parametrize(("model", "bad", "good"), [(LLAMA, 3, 4), (LLAMA, 5, 8), ("gpt2-xl", 2, 1)])
def test_tp_not_dividing_the_attention_heads_is_refused(model: str, bad: int, good: int) -> None:
    """Defect: tp=3, tp=5 on Llama-3.1-8B and tp=2 on GPT-2 XL (25 heads) opened."""
    assert lk.build(model, "h100", tp=good).resolved().tensor_parallel == good
    refused("parallel.tp", lambda: lk.build(model, "h100", tp=bad), f"parallel.tp {bad}", "attention heads")


def test_tp_not_dividing_the_kv_heads_is_refused() -> None:
    """Defect: 12 KV heads at tp=8 (below the heads, not dividing them) opened, flooring the
    per-rank KV to 1 head."""
    edited(LLAMA, "h100", set_nodes("Attention", n_kv=12), tp=4)
    refused(
        "parallel.tp",
        lambda: edited(LLAMA, "h100", set_nodes("Attention", n_kv=12), tp=8),
        "12 KV heads",
    )


def test_tp_above_the_kv_heads_must_replicate_them_evenly() -> None:
    """Defect: 32 query heads, 16 ... a tp above the KV heads that is not a multiple of them
    opened; a multiple replicates each head and per-rank KV counts one head per rank."""
    k = lk.build(LLAMA, "h100", tp=16, nodes=2, fabric="ib-400g")
    # 8 KV heads over 16 ranks: each rank keeps one replicated head (2 x 128 x 2 B x 32 layers)
    assert k.kv_bytes_per_token() == 2 * 1 * 128 * 2 * 32
    refused(
        "parallel.tp",
        lambda: edited(LLAMA, "h100", set_nodes("Attention", n_kv=3, n_q=24), tp=8),
        "not a multiple",
    )
    edited(LLAMA, "h100", set_nodes("Attention", n_kv=4, n_q=24), tp=8)


def test_recurrent_heads_not_divided_by_tp_are_refused() -> None:
    """Defect: a gated-delta-net mixer whose heads tp does not divide opened."""
    model, chip = "qwen3.5-397b-a17b", "b200"
    k = lk.build(model, chip, tp=8)
    assert k.resolved().tensor_parallel == 8
    refused(
        "parallel.tp",
        lambda: edited(model, chip, set_nodes("RecurrentUpdate", n_heads=36), tp=8),
        "36 gdn heads",
    )
    edited(model, chip, set_nodes("RecurrentUpdate", n_heads=40), tp=8)


def test_moe_intermediate_not_divided_by_the_tensor_slices_is_refused() -> None:
    """Defect: experts whose intermediate size tp does not divide (EP off) opened."""
    model = "mixtral-8x7b-v0.1"
    edited(model, "h100", set_nodes("GroupedGEMM", n=14336), tp=4)
    refused(
        "parallel.tp",
        lambda: edited(model, "h100", set_nodes("GroupedGEMM", n=14338), tp=4),
        "intermediate size 14338",
    )
    # with expert parallelism on, experts are whole on each rank: no slicing, no refusal
    edited(model, "h100", set_nodes("GroupedGEMM", n=14338), tp=4, enable_expert_parallel=True)


def test_eplb_needs_experts_divisible_over_the_ep_ranks() -> None:
    """Defect: EPLB with 256 + 3 physical experts over 8 EP ranks opened (vLLM asserts)."""
    kw: dict[str, Any] = dict(tp=8, enable_expert_parallel=True)
    lk.build("deepseek-v3", "h200", eplb={"enable_eplb": True, "num_redundant_experts": 8}, **kw)
    refused(
        "engine.eplb.num_redundant_experts",
        lambda: lk.build("deepseek-v3", "h200", eplb={"enable_eplb": True, "num_redundant_experts": 3}, **kw),
        "259 physical experts",
    )
    refused(
        "engine.eplb.num_redundant_experts",
        lambda: lk.build("deepseek-v3", "h200", eplb={"num_redundant_experts": 8}, **kw),
        "only under EPLB",
    )


@pytest.mark.parametrize(
    ("model", "chip", "method", "tp"),
    [("deepseek-v3", "h200", "gptq", 8), ("deepseek-v3", "h200", "bitsandbytes", 8), (LLAMA, "h100", "awq", 1)],
)
def test_quantization_conflicting_with_the_checkpoint_is_refused(model: str, chip: str, method: str, tp: int) -> None:
    """Defect: gptq or bitsandbytes on DeepSeek-V3's fp8 checkpoint was priced as fp8; awq on
    bf16 Llama opened."""
    lk.build(model, chip, tp=tp)  # the checkpoint as stored
    refused("engine.quantization", lambda: lk.build(model, chip, tp=tp, quantization=method), repr(method))


def test_bitsandbytes_quantizes_an_unquantized_checkpoint_in_flight() -> None:
    """The twin of the bitsandbytes refusal: on bf16 Llama vLLM quantizes in flight."""
    assert lk.build(LLAMA, "h100", quantization="bitsandbytes").info["served_dtype"] == "bf16"


def test_max_model_len_above_the_models_positions_is_refused() -> None:
    """Defect: max_model_len 200,000 on Llama-3.1-8B (131,072 positions) opened."""
    assert lk.build(LLAMA, "h100", max_model_len=131072).limits().max_model_len == 131072
    refused("engine.max_model_len", lambda: lk.build(LLAMA, "h100", max_model_len=200000), "131072")


def test_a_stated_rope_scaling_override_lifts_the_limit() -> None:
    """vLLM derives the limit from the RoPE scaling in force: a yarn block stated in
    hf_overrides (factor 2 over 131,072 positions) admits 200,000 tokens."""
    rope = {"rope_type": "yarn", "factor": 2.0, "original_max_position_embeddings": 131072}
    k = lk.build(LLAMA, "h100", max_model_len=200000, hf_overrides={"rope_scaling": rope})
    assert k.limits().max_model_len == 200000
    refused(
        "engine.max_model_len",
        lambda: lk.build(LLAMA, "h100", max_model_len=300000, hf_overrides={"rope_scaling": rope}),
        "262144",
    )


def test_unstated_max_model_len_is_the_models_own_and_recorded() -> None:
    """Defect: ``limits().max_model_len`` was 0 when the deployment did not state it; vLLM
    takes the model's limit (gpt-oss-120b: yarn factor 32 over 4,096 = 131,072)."""
    k = lk.build(LLAMA, "h100")
    assert k.limits().max_model_len == 131072
    got = {n: v for n, v, _ in k.assumptions()}
    assert got["max_model_len"] == "131072"
    assert lk.build("gpt-oss-120b", "h200").limits().max_model_len == 131072


def test_max_num_batched_tokens_below_max_num_seqs_is_refused() -> None:
    """Defect: 100 batched tokens with 256 sequences opened (SchedulerConfig.verify_max_model_len)."""
    lk.build(LLAMA, "h100", max_num_batched_tokens=256, max_num_seqs=256)
    refused(
        "engine.max_num_batched_tokens",
        lambda: lk.build(LLAMA, "h100", max_num_batched_tokens=100, max_num_seqs=256),
        "max_num_seqs 256",
    )


def test_max_num_batched_tokens_below_max_model_len_needs_chunked_prefill() -> None:
    """With chunked prefill off, vLLM refuses a step budget below max_model_len; on (its
    default), it starts and shows the default in ``info``."""
    kw: dict[str, Any] = dict(max_num_batched_tokens=4096, max_model_len=8192)
    k = lk.build(LLAMA, "h100", **kw)
    assert k.info["enable_chunked_prefill"] is True
    refused(
        "engine.max_num_batched_tokens",
        lambda: lk.build(LLAMA, "h100", enable_chunked_prefill=False, **kw),
        "chunked prefill off",
    )
    lk.build(LLAMA, "h100", enable_chunked_prefill=False, max_num_batched_tokens=8192, max_model_len=8192)


def test_chunked_prefill_off_reaches_the_scheduler() -> None:
    """Defect: a deployment stating enable_chunked_prefill false opened with the setting in
    ``info`` but ``limits()`` said True, so the serving simulation chunked its prompts."""
    off = lk.build(LLAMA, "h100", enable_chunked_prefill=False, max_num_batched_tokens=8192, max_model_len=8192)
    assert off.info["enable_chunked_prefill"] is False
    assert off.limits().enable_chunked_prefill is False
    assert lk.build(LLAMA, "h100").limits().enable_chunked_prefill is True


@pytest.mark.parametrize("bad", [8, 24, 1])
def test_block_sizes_the_attention_backends_reject_are_refused(bad: int) -> None:
    """Defect: block_size 8, 24 or 1 opened; CUDA backends page in multiples of 16."""
    lk.build(LLAMA, "h100", block_size=48)
    refused("engine.block_size", lambda: lk.build(LLAMA, "h100", block_size=bad), f"block_size {bad}")


def test_an_empty_cache_dtype_is_refused_not_read_as_auto() -> None:
    """Defect: cache_dtype '' was read as auto."""
    lk.build(LLAMA, "h100", cache_dtype="auto")
    refused("engine.cache_dtype", lambda: lk.build(LLAMA, "h100", cache_dtype=""), "''")


def test_absurd_gpus_per_node_is_refused() -> None:
    """Defect: gpus_per_node 2**63 opened."""
    lk.build(LLAMA, "h100", gpus_per_node=8)
    refused("cluster.gpus_per_node", lambda: lk.build(LLAMA, "h100", gpus_per_node=2**63), "gpus_per_node")


def test_expert_parallel_on_a_dense_model_is_ignored_and_recorded() -> None:
    """Defect: EP stated on dense Llama at tp=2 reported expert_parallel == 2."""
    k = lk.build(LLAMA, "h100", tp=2, enable_expert_parallel=True)
    r = k.resolved()
    assert r.expert_parallel == 1
    assert [o.field for o in r.overrides if o.field == "enable_expert_parallel"] == ["enable_expert_parallel"]
    twin = lk.build(LLAMA, "h100", tp=2)
    assert k.step_time(lk.Batch.decode(8, 1000)) == twin.step_time(lk.Batch.decode(8, 1000))
    assert lk.build("mixtral-8x7b-v0.1", "h100", tp=4, enable_expert_parallel=True).resolved().expert_parallel == 4


def test_an_unstated_max_model_len_must_fit_the_cache_as_vllm_checks() -> None:
    """vLLM (check_enough_kv_cache_memory) refuses when one request of the model's own
    context does not fit the KV budget, stated or not: Qwen3-32B on one H100 at 40,960 tokens.
    Before issue 10 the unstated limit was 0 and never checked."""
    lk.build("qwen3-32b", "h100", max_model_len=8192)
    refused("engine.max_model_len", lambda: lk.build("qwen3-32b", "h100"), "40960", "unstated")

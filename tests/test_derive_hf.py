"""The Hugging Face config.json -> graph deriver: dispatch, errors, per-family shapes,
weight formats, stack factoring and determinism."""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from latencykernel.derive import SUPPORTED_ARCHITECTURES, derive_graph, derive_graph_from_bytes
from latencykernel.derive.catalog import models_dir
from latencykernel.derive.hf import factor_stack, render_graph_yaml
from latencykernel.errors import DocumentError

SHA = "0" * 64

LLAMA_TINY: dict[str, Any] = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 2048,
    "intermediate_size": 5504,
    "num_hidden_layers": 4,
    "num_attention_heads": 16,
    "num_key_value_heads": 2,
    "vocab_size": 32000,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
}


def embedded_config(name: str) -> dict[str, Any]:
    return json.loads((models_dir() / name / "config.json").read_text())


def derive(config: dict[str, Any], name: str = "m") -> dict[str, Any]:
    return derive_graph(config, name=name, sha256=SHA)


def kind(graph: dict[str, Any], kid: str) -> list[dict[str, Any]]:
    return next(k["nodes"] for k in graph["layer_kinds"] if k["id"] == kid)


def role(nodes: list[dict[str, Any]], r: str) -> dict[str, Any]:
    return next(n for n in nodes if n.get("role") == r)


def primary(nodes: list[dict[str, Any]]) -> dict[str, Any]:
    return next(n for n in nodes if n["op"] == "Attention" and not n.get("role"))


# -- dispatch and errors ------------------------------------------------------------------


def test_unknown_architecture_names_it_and_the_supported_list() -> None:
    with pytest.raises(DocumentError) as e:
        derive({**LLAMA_TINY, "architectures": ["FrobnicatorForCausalLM"], "model_type": "frob"})
    msg = str(e.value)
    assert "FrobnicatorForCausalLM" in msg
    assert "LlamaForCausalLM" in msg and "DeepseekV3ForCausalLM" in msg
    assert e.value.key == "architectures"
    assert set(SUPPORTED_ARCHITECTURES) >= {
        "LlamaForCausalLM",
        "Qwen3ForCausalLM",
        "Qwen3MoeForCausalLM",
        "MixtralForCausalLM",
        "MistralForCausalLM",
        "DeepseekV3ForCausalLM",
        "KimiK25ForConditionalGeneration",
        "GlmMoeDsaForCausalLM",
        "GptOssForCausalLM",
        "MiniMaxM2ForCausalLM",
        "MiniMaxM3SparseForConditionalGeneration",
        "DeepseekV4ForCausalLM",
        "GPT2LMHeadModel",
        "Qwen3_5MoeForConditionalGeneration",
        "Qwen3NextForCausalLM",
    }


def test_model_type_dispatches_when_the_architecture_is_an_alias() -> None:
    g = derive({**LLAMA_TINY, "architectures": ["MyLlamaVariantForCausalLM"]})
    assert [k["id"] for k in g["layer_kinds"]] == ["dense"]


@pytest.mark.parametrize("bad", [{}, {"architectures": []}, {"architectures": "Llama"}])
def test_missing_architectures_is_a_document_error(bad: dict[str, Any]) -> None:
    with pytest.raises(DocumentError):
        derive({**{k: v for k, v in LLAMA_TINY.items() if k != "architectures"}, **bad} if bad else {})


def test_missing_required_key_is_named() -> None:
    cfg = {k: v for k, v in LLAMA_TINY.items() if k != "num_attention_heads"}
    with pytest.raises(DocumentError, match="num_attention_heads"):
        derive(cfg)


def test_ill_typed_key_is_named() -> None:
    with pytest.raises(DocumentError, match="intermediate_size"):
        derive({**LLAMA_TINY, "intermediate_size": "big"})


def test_invalid_json_and_bad_digest() -> None:
    with pytest.raises(DocumentError, match="not valid JSON"):
        derive_graph_from_bytes(b"{not json", name="x")
    with pytest.raises(DocumentError, match="sha256"):
        derive_graph(LLAMA_TINY, name="x", sha256="abc")


def test_tiny_llm_testdata_config_is_incomplete(shared_dir: Path) -> None:
    """blis-schemas' validate-catalog testdata pairs a four-key config.json with a graph; the
    config alone does not determine the graph (no MLP width, no head counts), and the
    deriver names the first key it misses."""
    cfg = shared_dir / "reference/blis-schemas/cmd/validate-catalog/testdata/catalog-ok/models/tiny-llm/config.json"
    with pytest.raises(DocumentError, match="missing required key 'intermediate_size'"):
        derive_graph_from_bytes(cfg.read_bytes(), name="tiny-llm")


# -- document shape -------------------------------------------------------------------------


def test_llama_layer_follows_the_catalog_conventions() -> None:
    g = derive(LLAMA_TINY, name="tiny")
    assert list(g) == ["kind", "name", "derived_from", "global", "layer_kinds", "stack", "head"]
    assert g["derived_from"] == {"format": "hf_config_json", "path": "config.json", "sha256": SHA, "deriver_version": 1}
    assert g["global"] == {
        "hidden_size": 2048,
        "vocab_size": 32000,
        "tie_word_embeddings": False,
        "weight_dtype": "bf16",
    }
    nodes = kind(g, "dense")
    assert [(n["op"], n.get("role")) for n in nodes] == [
        ("Elementwise", "input_norm"),
        ("GEMM", "qkv_proj"),
        ("Attention", None),
        ("GEMM", "o_proj"),
        ("AllReduce", "attn_out"),
        ("Elementwise", "post_attn_norm"),
        ("GEMM", "mlp_gate_up"),
        ("GEMM", "mlp_down"),
        ("AllReduce", "mlp_out"),
    ]
    assert role(nodes, "qkv_proj") == {"op": "GEMM", "role": "qkv_proj", "n": (16 + 4) * 128, "k": 2048}
    assert role(nodes, "mlp_gate_up")["n"] == 2 * 5504
    assert role(nodes, "attn_out")["emit"] == "tensor_parallel"
    assert role(nodes, "mlp_out")["emit"] == "tensor_parallel_unless_sp_moe"
    assert g["layer_kinds"][0]["edges"] == [[i, i + 1] for i in range(8)]
    assert g["stack"] == {"pattern": ["dense"], "repeat": 4}
    assert g["head"] == [
        {"op": "Elementwise", "role": "final_norm"},
        {"op": "GEMM", "role": "lm_head", "n": 32000, "k": 2048},
    ]


def test_mistral_sliding_window_applies_only_when_it_binds() -> None:
    mistral = {
        **LLAMA_TINY,
        "architectures": ["MistralForCausalLM"],
        "model_type": "mistral",
        "sliding_window": 4096,
        "max_position_embeddings": 32768,
    }
    g = derive(mistral)
    assert primary(kind(g, "swa_dense")) == {
        "op": "Attention",
        "kind": "swa",
        "n_q": 16,
        "n_kv": 2,
        "d_h": 128,
        "window": 4096,
    }
    g = derive({**mistral, "sliding_window": 32768})
    assert primary(kind(g, "dense"))["kind"] == "gqa"
    g = derive({**mistral, "sliding_window": None})
    assert primary(kind(g, "dense"))["kind"] == "gqa"


def test_qwen2_sliding_window_follows_use_sliding_window_and_max_window_layers() -> None:
    qwen2 = {
        **LLAMA_TINY,
        "architectures": ["Qwen2ForCausalLM"],
        "model_type": "qwen2",
        "sliding_window": 1024,
        "max_position_embeddings": 32768,
        "use_sliding_window": False,
        "max_window_layers": 2,
    }
    assert derive(qwen2)["stack"] == {"pattern": ["dense"], "repeat": 4}
    g = derive({**qwen2, "use_sliding_window": True})
    assert g["stack"] == {"pattern": ["dense"], "repeat": 2, "epilogue": ["swa_dense", "swa_dense"]}


def test_mixtral_and_qwen3_moe() -> None:
    g = derive(embedded_config("mixtral-8x7b-v0.1"))
    assert role(kind(g, "attn_moe"), "experts") == {
        "op": "GroupedGEMM",
        "role": "experts",
        "n": 14336,
        "k": 4096,
        "experts": 8,
        "top_k": 2,
    }
    q = embedded_config("qwen3-30b-a3b")
    g = derive({**q, "mlp_only_layers": [0]})
    assert g["stack"] == {"prologue": ["dense"], "pattern": ["attn_moe"], "repeat": 47}
    assert role(kind(g, "attn_moe"), "o_proj") == {"op": "GEMM", "role": "o_proj", "n": 2048, "k": 4096}


def test_qwen_moe_shared_expert_width_is_written_when_it_differs() -> None:
    q = {**embedded_config("qwen3-30b-a3b"), "shared_expert_intermediate_size": 1536}
    experts = role(kind(derive(q), "attn_moe"), "experts")
    assert experts["shared_experts"] == 1 and experts["shared_intermediate_size"] == 1536


def test_gpt_oss_alternates_window_and_full_and_keeps_experts_mxfp4() -> None:
    g = derive(embedded_config("gpt-oss-120b"))
    assert g["stack"] == {"pattern": ["swa_moe", "full_moe"], "repeat": 18}
    assert primary(kind(g, "swa_moe"))["window"] == 128
    assert "window" not in primary(kind(g, "full_moe"))
    assert g["global"]["weight_dtype"] == "bf16"
    assert role(kind(g, "full_moe"), "experts")["weight_dtype"] == "mxfp4"
    assert role(kind(g, "full_moe"), "experts")["top_k"] == 4


def test_gpt2_is_mha_with_a_non_gated_mlp_and_tied_head() -> None:
    g = derive(embedded_config("gpt2-xl"))
    nodes = kind(g, "dense")
    att = primary(nodes)
    assert att["n_q"] == att["n_kv"] == 25 and att["d_h"] == 64
    assert role(nodes, "qkv_proj")["n"] == 3 * 1600
    assert role(nodes, "mlp_up") == {"op": "GEMM", "role": "mlp_up", "n": 6400, "k": 1600}
    assert role(nodes, "mlp_down") == {"op": "GEMM", "role": "mlp_down", "n": 1600, "k": 6400}
    assert not any(n.get("role") == "mlp_gate_up" for n in nodes)
    assert g["global"]["tie_word_embeddings"] is True
    assert g["stack"] == {"pattern": ["dense"], "repeat": 48}


def test_deepseek_v3_mla_and_mtp() -> None:
    cfg = embedded_config("deepseek-v3")
    g = derive(cfg)
    assert g["stack"] == {"prologue": ["attn_dense"] * 3, "pattern": ["attn_moe"], "repeat": 58}
    assert g["speculator"] == {
        "method": "deepseek_mtp",
        "num_spec_tokens": 1,
        "stack": {"pattern": ["attn_moe"], "repeat": 1},
    }
    assert "speculator" not in derive({**cfg, "num_nextn_predict_layers": 0})
    assert role(kind(g, "attn_moe"), "experts")["shared_experts"] == 1
    assert g["global"]["weight_dtype"] == "fp8"


def test_kimi_reads_the_nested_text_config() -> None:
    g = derive(embedded_config("kimi-k2.5"))
    assert g["modality"] == "text_decoder_of_multimodal"
    assert g["global"] == {
        "hidden_size": 7168,
        "vocab_size": 163840,
        "tie_word_embeddings": False,
        "weight_dtype": "int4",
    }
    assert "speculator" not in g
    assert g["stack"] == {"prologue": ["attn_dense"], "pattern": ["attn_moe"], "repeat": 60}


def test_glm5_sparse_mla_with_indexer() -> None:
    nodes = kind(derive(embedded_config("glm-5")), "attn_moe")
    assert role(nodes, "index_qk_proj") == {"op": "GEMM", "role": "index_qk_proj", "n": 32 * 128 + 128, "k": 6144}
    assert role(nodes, "block_index_scores")["kind"] == "gqa"
    att = primary(nodes)
    assert (att["kind"], att["index_topk"], att["d_h"], att["n_kv"]) == ("sparse_mla", 2048, 576, 1)


def test_deepseek_v4_compress_ratios() -> None:
    g = derive(embedded_config("deepseek-v4-pro"))
    assert g["stack"] == {"prologue": ["csa128_moe"], "pattern": ["csa128_moe", "csa4_moe"], "repeat": 30}
    csa4, csa128 = kind(g, "csa4_moe"), kind(g, "csa128_moe")
    assert primary(csa4) == {
        "op": "Attention",
        "kind": "sparse_mla",
        "n_q": 128,
        "n_kv": 1,
        "d_h": 512,
        "index_topk": 1024,
        "compress_ratio": 4,
    }
    assert primary(csa128)["compress_ratio"] == 128 and "index_topk" not in primary(csa128)
    assert not any(n.get("role") == "block_index_scores" for n in csa128)
    assert role(csa4, "experts")["weight_dtype"] == "mxfp4"
    assert g["global"]["weight_dtype"] == "fp8"


def test_deepseek_v4_window_only_layers() -> None:
    cfg = embedded_config("deepseek-v4-pro")
    g = derive({**cfg, "compress_ratios": [0, 0] + cfg["compress_ratios"][2:]})
    assert primary(kind(g, "swa_moe")) == {
        "op": "Attention",
        "kind": "swa",
        "n_q": 128,
        "n_kv": 1,
        "d_h": 512,
        "window": 128,
    }


def test_minimax_m3_block_sparse_layers() -> None:
    g = derive(embedded_config("minimax-m3"))
    nodes = kind(g, "sparse_attn_moe")
    assert primary(nodes)["window"] == (16 + 1) * 128
    assert role(nodes, "index_qk_proj")["n"] == 4 * 128 + 128
    assert role(nodes, "experts")["shared_experts"] == 1
    assert role(kind(g, "dense"), "mlp_gate_up")["n"] == 2 * 12288
    assert g["speculator"]["method"] == "minimax_m3_mtp" and g["speculator"]["num_spec_tokens"] == 7


def test_minimax_m2_rejects_lightning_attention_layers() -> None:
    cfg = embedded_config("minimax-m2.5")
    assert kind(derive(cfg), "attn_moe")
    with pytest.raises(DocumentError, match="attn_type_list"):
        derive({**cfg, "attn_type_list": [0] + [1] * 61})


def test_minimax_m2_cross_head_qk_norm_all_reduces_its_variances() -> None:
    """Guards a missing collective: MiniMax-M2's QK norm (qk_norm_type per_layer) spans
    every head of the tensor-sliced projection, so vLLM all-reduces the q and k variances
    (two fp32 a token) after qkv_proj on every layer; a per-head norm, or none, has no
    such collective."""
    cfg = embedded_config("minimax-m2.5")
    nodes = kind(derive(cfg), "attn_moe")
    at = [n.get("role") for n in nodes].index("qk_norm_variance")
    assert nodes[at - 1]["role"] == "qkv_proj" and nodes[at + 1]["op"] == "Attention"
    assert nodes[at] == {"op": "AllReduce", "role": "qk_norm_variance", "emit": "tensor_parallel", "bytes_per_token": 8}
    for variant in ({"qk_norm_type": "per_head"}, {"use_qk_norm": False}, {"use_qk_norm": None}):
        other = kind(derive({**cfg, **variant}), "attn_moe")
        assert "qk_norm_variance" not in [n.get("role") for n in other], variant
        assert len(other) == len(nodes) - 1


def test_unknown_qk_norm_type_is_refused_by_its_key() -> None:
    cfg = embedded_config("minimax-m2.5")
    with pytest.raises(DocumentError, match="qk_norm_type") as e:
        derive({**cfg, "qk_norm_type": "per_group"})
    assert e.value.key == "qk_norm_type" and e.value.value == "per_group"


def test_minimax_m3_per_head_qk_norm_has_no_variance_reduce() -> None:
    g = derive(embedded_config("minimax-m3"))
    for lk in g["layer_kinds"]:
        assert "qk_norm_variance" not in [n.get("role") for n in lk["nodes"]], lk["id"]


def test_qwen35_hybrid_gdn_and_gated_attention() -> None:
    g = derive(embedded_config("qwen3.5-397b-a17b"))
    assert g["stack"] == {"pattern": ["gdn_moe", "gdn_moe", "gdn_moe", "attn_moe"], "repeat": 15}
    gdn = kind(g, "gdn_moe")
    assert [n["op"] for n in gdn[:6]] == ["Elementwise", "GEMM", "GEMM", "RecurrentUpdate", "GEMM", "AllReduce"]
    rec = gdn[3]
    assert rec == {
        "op": "RecurrentUpdate",
        "recurrent_kind": "gdn",
        "n_heads": 64,
        "state_size": 128,
        "state_dtype": "fp32",
    }
    assert role(gdn, "in_proj_qkvz")["n"] == 2 * 16 * 128 + 2 * 64 * 128
    assert role(gdn, "mixer_out") == {"op": "GEMM", "role": "mixer_out", "n": 4096, "k": 64 * 128}
    assert gdn[5] == {"op": "AllReduce", "role": "mixer_out", "emit": "tensor_parallel"}
    attn = kind(g, "attn_moe")
    assert role(attn, "qkv_proj")["n"] == (2 * 32 + 2 * 2) * 256  # q_proj also emits the gate
    assert role(attn, "o_proj")["k"] == 32 * 256
    assert role(attn, "experts")["top_k"] == 10
    assert g["speculator"] == {
        "method": "qwen3_5_mtp",
        "num_spec_tokens": 1,
        "stack": {"pattern": ["attn_moe"], "repeat": 1},
    }
    assert g["modality"] == "text_decoder_of_multimodal"


def test_qwen3_next_speculator_method() -> None:
    cfg = embedded_config("qwen3.5-397b-a17b")
    text = {**cfg["text_config"], "model_type": "qwen3_next", "architectures": None}
    flat = {**text, "architectures": ["Qwen3NextForCausalLM"], "model_type": "qwen3_next"}
    assert derive(flat)["speculator"]["method"] == "qwen3_next_mtp"
    assert "modality" not in derive(flat)


# -- weight formats -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("quant", "dtype", "expert"),
    [
        ({"quant_method": "fp8", "weight_block_size": [128, 128]}, "fp8", None),
        ({"quant_method": "mxfp4"}, "bf16", "mxfp4"),
        ({"quant_method": "modelopt", "quant_algo": "NVFP4"}, "nvfp4", None),
        (
            {
                "quant_method": "compressed-tensors",
                "config_groups": {"g": {"weights": {"num_bits": 4, "type": "int", "group_size": 32}}},
            },
            "int4",
            None,
        ),
        (
            {
                "quant_method": "compressed-tensors",
                "config_groups": {"g": {"weights": {"num_bits": 8, "type": "float"}}},
            },
            "fp8",
            None,
        ),
    ],
)
def test_weight_dtype_from_quantization_config(quant: dict[str, Any], dtype: str, expert: str | None) -> None:
    cfg = {**embedded_config("mixtral-8x7b-v0.1"), "quantization_config": quant}
    g = derive(cfg)
    assert g["global"]["weight_dtype"] == dtype
    assert role(kind(g, "attn_moe"), "experts").get("weight_dtype") == expert


@pytest.mark.parametrize(("torch_dtype", "dtype"), [("float16", "fp16"), ("float32", "fp32"), (None, "bf16")])
def test_weight_dtype_from_torch_dtype(torch_dtype: str | None, dtype: str) -> None:
    assert derive({**LLAMA_TINY, "torch_dtype": torch_dtype})["global"]["weight_dtype"] == dtype


def test_unknown_quantization_is_refused() -> None:
    with pytest.raises(DocumentError, match="quant_method"):
        derive({**LLAMA_TINY, "quantization_config": {"quant_method": "awq"}})
    with pytest.raises(DocumentError, match="torch_dtype"):
        derive({**LLAMA_TINY, "torch_dtype": "float8"})


# -- stack factoring and determinism --------------------------------------------------------


@pytest.mark.parametrize(
    ("ids", "stack"),
    [
        (["a"] * 5, {"pattern": ["a"], "repeat": 5}),
        (["d", "d", "m", "m", "m"], {"prologue": ["d", "d"], "pattern": ["m"], "repeat": 3}),
        (["s", "f"] * 3 + ["s"], {"pattern": ["s", "f"], "repeat": 3, "epilogue": ["s"]}),
        (["a", "b", "c"], {"prologue": ["a", "b", "c"], "repeat": 0}),
        (["x"], {"prologue": ["x"], "repeat": 0}),
    ],
)
def test_factor_stack(ids: list[str], stack: dict[str, Any]) -> None:
    assert factor_stack(ids) == stack


def test_factor_stack_needs_a_layer() -> None:
    with pytest.raises(DocumentError):
        factor_stack([])


def test_derivation_is_deterministic_and_ignores_source_notes() -> None:
    raw = (models_dir() / "deepseek-v3" / "config.json").read_bytes()
    a = derive_graph_from_bytes(raw, name="deepseek-v3")
    b = derive_graph_from_bytes(raw, name="deepseek-v3")
    assert a == b and render_graph_yaml(a, "x") == render_graph_yaml(b, "x")
    assert a["derived_from"]["sha256"] == hashlib.sha256(raw).hexdigest()
    cfg = json.loads(raw)
    cfg["_source"] = "something else"
    c = derive(copy.deepcopy(cfg), name="deepseek-v3")
    assert {k: v for k, v in c.items() if k != "derived_from"} == {k: v for k, v in a.items() if k != "derived_from"}


def test_rendered_yaml_has_header_and_no_anchors() -> None:
    text = render_graph_yaml(derive(embedded_config("glm-5")), "models/glm-5/config.json")
    assert text.startswith("# Generated by `latencykernel graph from-hf` from models/glm-5/config.json")
    assert "&id" not in text and "*id" not in text
    assert yaml.safe_load(text)["name"] == "m"


def test_malformed_dtype_and_text_config_are_errors_not_defaults() -> None:
    import pytest

    from latencykernel.errors import DocumentError

    base = {
        "architectures": ["LlamaForCausalLM"],
        "hidden_size": 256,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "num_hidden_layers": 2,
        "intermediate_size": 512,
        "vocab_size": 1000,
    }
    for extra, key in (({"torch_dtype": 16}, "torch_dtype"), ({"text_config": [1, 2]}, "text_config")):
        with pytest.raises(DocumentError) as info:
            derive({**base, **extra})
        assert key in str(info.value)

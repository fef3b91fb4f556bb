"""Parameter counts of the embedded graphs against the vendors' published sizes, and the
other counts (layers, KV geometry), over the validated ModelGraph.

A graph counts only the matrices its GEMM/GroupedGEMM nodes stand for plus the embedding
table, so it runs below a published total by what it omits: norm weights (hidden-sized
vectors, ~0.01 %), biases, MoE router gates (experts·hidden per MoE layer), learned
position embeddings, convolution kernels, attention sinks, and the encoder of a
multimodal model.  Each tolerance below is sized from those omissions for that model plus
the rounding of the published figure; none is wider than that.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from latencykernel.derive.catalog import models_dir
from latencykernel.derive.counts import (
    KvGeometry,
    active_parameter_count,
    kv_geometry,
    kv_layers_by_kind,
    layer_count,
    parameter_count,
)
from latencykernel.documents.common import validate
from latencykernel.documents.graph import ModelGraph, Stack, load_graph
from latencykernel.errors import DocumentError


def graph(name: str) -> ModelGraph:
    return load_graph(models_dir() / name / "graph.yaml")


def plain(name: str) -> dict[str, Any]:
    """The graph.yaml as a plain dict, to edit before validating."""
    data: dict[str, Any] = yaml.safe_load((models_dir() / name / "graph.yaml").read_text())
    return data


def typed(doc: dict[str, Any]) -> ModelGraph:
    return validate(ModelGraph, doc, "<test>")


def rel(a: float, b: float) -> float:
    return abs(a - b) / b


B = 1e9

# (model, published total, relative tolerance, why)
TOTALS = [
    # Meta model card: 8.03 B.  Omitted: 65 RMSNorm vectors (0.27 M).  Published to 3 digits.
    ("llama-3.1-8b-instruct", 8.03e9, 0.001),
    # Meta model card: 70.6 B.  Omitted: norms (1.3 M); 70.55 rounds to 70.6.
    ("llama-3.1-70b-instruct", 70.6e9, 0.002),
    # DeepSeek-V3 README: 671 B main model, without the MTP module.  Omitted: routers
    # (58 x 256 x 7168 = 0.11 B), norms, the router bias.
    ("deepseek-v3", 671e9, 0.001),
    ("deepseek-r1", 671e9, 0.001),
    # gpt-oss model card: 116.8 B (117 B).  Omitted: attention/expert biases, sinks,
    # routers (36 x 128 x 2880 = 13 M).
    ("gpt-oss-120b", 116.8e9, 0.001),
    # GPT-2 XL: 1,557,611,200 parameters (transformers' count of gpt2-xl).  Omitted: learned
    # position embeddings 1024 x 1600 = 1.64 M, biases 48 x 14,400 = 0.69 M, LayerNorms
    # 48 x 6,400 + 3,200 = 0.31 M: 2.64 M in all, 0.17 % of 1.5576 B.
    ("gpt2-xl", 1_557_611_200, 0.0018),
    # Mistral AI: 46.7 B.  Omitted: routers (32 x 8 x 4096 = 1 M), norms.
    ("mixtral-8x7b-v0.1", 46.7e9, 0.001),
    # Qwen3 model cards: 30.5 B, 235 B, 32.8 B.  Omitted: routers, QK norms.  Rounded to 3 digits.
    ("qwen3-30b-a3b", 30.5e9, 0.002),
    ("qwen3-235b-a22b", 235e9, 0.002),
    ("qwen3-32b", 32.8e9, 0.002),
    # GLM-5: 744 B total.  The graph prices the lightning indexer's q/k projection as one
    # hidden-input GEMM of 32 x 128 + 128 outputs (26 M/layer; the checkpoint's wq_b reads the
    # 2048-wide q latent: 8.4 M + 0.8 M), 1.3 B over; routers and norms (0.1 B) under.
    ("glm-5", 744e9, 0.003),
    # MiniMax-M2.5: 229 B (model card, 228.7 B in the checkpoint index).  Omitted: routers
    # (62 x 256 x 3072 = 49 M), QK norms.
    ("minimax-m2.5", 229e9, 0.003),
    # Qwen3.5-397B-A17B: 397 B.  Omitted: the vision tower (27 layers of 1152: ~0.45 B), routers
    # (60 x 512 x 4096 = 0.13 B), shared-expert gates, GDN conv/decay vectors.
    ("qwen3.5-397b-a17b", 397e9, 0.004),
    # Kimi K2 technical report: 1.04 T total (Kimi-K2.5 keeps the K2 decoder).  The shipped
    # decoder's matrices sum to 1.026 T; the vision tower (MoonViT, ~0.4 B) and routers
    # (60 x 384 x 7168 = 0.17 B) are omitted, and the report's 1.04 T exceeds even their sum
    # by about one MoE layer (17 B), which the released config does not contain
    # (num_nextn_predict_layers 0).  1.5 % covers that documented gap and nothing more.
    ("kimi-k2.5", 1.04e12, 0.015),
    # MiniMax-M3: 428 B.  Omitted: the 32-layer ViT (~0.6 B) and routers/norms.
    ("minimax-m3", 428e9, 0.006),
    # DeepSeek-V4-Pro README: 1.6 T.  The catalog prices V4's low-rank query path and
    # grouped output LoRA as dense qkv_proj (66560 x 7168) and o_proj (7168 x 65536):
    # ~0.65 B/layer over the checkpoint's ~0.3 B; the compressors, indexer weights and
    # hyper-connection mixers (~0.2 B/layer) are omitted.  Net +0.8 % against a figure
    # given to two digits.
    ("deepseek-v4-pro", 1.6e12, 0.01),
]


@pytest.mark.parametrize(("model", "published", "tol"), TOTALS)
def test_total_parameters_match_published_size(model: str, published: float, tol: float) -> None:
    count = parameter_count(graph(model))
    assert rel(count, published) <= tol, f"{model}: {count / B:.3f} B vs {published / B:.3f} B"


ACTIVE = [
    # DeepSeek-V3: 37 B activated (embeddings and head included, as here).
    ("deepseek-v3", 37e9, 0.015),
    # Qwen3 cards: 3.3 B and 22 B activated.
    ("qwen3-30b-a3b", 3.3e9, 0.015),
    ("qwen3-235b-a22b", 22e9, 0.01),
    # Mixtral: 12.9 B active (two of eight experts).
    ("mixtral-8x7b-v0.1", 12.9e9, 0.005),
    # Kimi K2/K2.5: 32 B activated; the count here also holds the 2.35 B embedding and head.
    ("kimi-k2.5", 32e9, 0.025),
    # Qwen3.5-397B-A17B: 17 B activated.
    ("qwen3.5-397b-a17b", 17e9, 0.015),
]


@pytest.mark.parametrize(("model", "published", "tol"), ACTIVE)
def test_active_parameters_match_published_size(model: str, published: float, tol: float) -> None:
    count = active_parameter_count(graph(model))
    assert rel(count, published) <= tol, f"{model}: {count / B:.3f} B vs {published / B:.3f} B"


# Exact checkpoint parameter counts (transformers' num_parameters of the vendor model) and
# the exact size of what the graph leaves out: the difference must be exactly those terms.
EXACT = [
    # norms: 2 per layer + final; RMSNorm has one weight vector
    ("llama-3.1-8b-instruct", 8_030_261_248, (2 * 32 + 1) * 4096),
    ("llama-3.1-70b-instruct", 70_553_706_496, (2 * 80 + 1) * 8192),
    # + the routers (layers x experts x hidden)
    ("mixtral-8x7b-v0.1", 46_702_792_704, (2 * 32 + 1) * 4096 + 32 * 8 * 4096),
    # + the per-head q/k RMSNorms (2 x head_dim per layer)
    ("qwen3-30b-a3b", 30_532_122_624, (2 * 48 + 1) * 2048 + 48 * 128 * 2048 + 48 * 2 * 128),
    # position embeddings, biases (qkv 4800, proj 1600, fc 6400, proj 1600) and LayerNorms
    # (weight + bias, 2 per layer + final)
    ("gpt2-xl", 1_557_611_200, 1024 * 1600 + 48 * 14_400 + (2 * 48 + 1) * 2 * 1600),
]


@pytest.mark.parametrize(("model", "checkpoint", "omitted"), EXACT)
def test_count_plus_omitted_terms_is_the_checkpoint_count(model: str, checkpoint: int, omitted: int) -> None:
    assert parameter_count(graph(model)) + omitted == checkpoint


def test_deepseek_v3_with_its_mtp_layer() -> None:
    """README: 685 B = 671 B main model + 14 B MTP module.  The speculator stack adds one MoE
    layer (11.5 B); the checkpoint's MTP module also carries its own copies of the embedding
    and head (1.85 B) and the 2h->h eh_proj (0.1 B), which the graph shares with the main
    model, so the count lands 2.6 B (0.4 %) under."""
    g = graph("deepseek-v3")
    with_mtp = parameter_count(g, include_speculator=True)
    assert with_mtp - parameter_count(g) == 3 * 2048 * 7168 * 257 + (
        2112 * 7168 + 24576 * 1536 + 32768 * 512 + 7168 * 16384
    )
    assert rel(with_mtp, 685e9) <= 0.005


def test_dense_models_are_all_active() -> None:
    for model in ("llama-3.1-8b-instruct", "qwen3-32b", "gpt2-xl"):
        g = graph(model)
        assert active_parameter_count(g) == parameter_count(g)


def test_tied_head_is_not_counted_twice() -> None:
    g = plain("gpt2-xl")
    untied = {**g, "global": {**g["global"], "tie_word_embeddings": False}}
    assert parameter_count(typed(untied)) - parameter_count(typed(g)) == 50257 * 1600


def test_grouped_gemm_rules() -> None:
    """3 matrices per gated expert; shared width defaults to n (also when 0); latent_size
    narrows the routed experts' input only."""
    base = {
        "kind": "ModelGraph",
        "name": "t",
        "derived_from": {"format": "test", "path": "-", "sha256": "0" * 64, "deriver_version": 1},
        "global": {"hidden_size": 10, "vocab_size": 1, "tie_word_embeddings": True, "weight_dtype": "bf16"},
        "stack": {"pattern": ["m"], "repeat": 1},
        "head": [],
    }
    node = {"op": "GroupedGEMM", "n": 4, "k": 10, "experts": 8, "top_k": 2, "shared_experts": 1}

    def count(**extra: int) -> tuple[int, int]:
        g = typed({**base, "layer_kinds": [{"id": "m", "nodes": [{**node, **extra}]}]})
        return parameter_count(g) - 10, active_parameter_count(g) - 10

    assert count() == (8 * 3 * 4 * 10 + 3 * 4 * 10, 2 * 3 * 4 * 10 + 3 * 4 * 10)
    assert count(shared_intermediate_size=0) == count()
    assert count(shared_intermediate_size=6)[0] == 8 * 3 * 4 * 10 + 3 * 6 * 10
    assert count(latent_size=5)[0] == 8 * 3 * 4 * 5 + 3 * 4 * 10


def test_layer_count_and_stack_expansion() -> None:
    assert layer_count(graph("deepseek-v3")) == 61
    assert layer_count(graph("gpt-oss-120b")) == 36
    assert layer_count(graph("qwen3.5-397b-a17b")) == 60
    assert Stack(prologue=["a"], pattern=["b", "c"], repeat=2, epilogue=["d"]).expand() == [
        "a",
        "b",
        "c",
        "b",
        "c",
        "d",
    ]
    assert Stack(prologue=["a", "b"], repeat=0).expand() == ["a", "b"]


def test_kv_geometry() -> None:
    assert kv_geometry(graph("llama-3.1-8b-instruct")) == KvGeometry(8, 128, "gqa", 32)
    assert kv_geometry(graph("deepseek-v3")) == KvGeometry(1, 576, "mla", 61)
    assert kv_geometry(graph("glm-5")) == KvGeometry(1, 576, "sparse_mla", 78)
    # only the 15 full-attention layers of the hybrid hold KV; the indexer node (a role)
    # of the sparse models is not the primary attention
    assert kv_geometry(graph("qwen3.5-397b-a17b")) == KvGeometry(2, 256, "gqa", 15)
    assert kv_geometry(graph("minimax-m3")) == KvGeometry(4, 128, "swa", 60)
    assert kv_layers_by_kind(graph("minimax-m3")) == {"gqa": 3, "swa": 57}
    assert kv_layers_by_kind(graph("gpt-oss-120b")) == {"swa": 18, "gqa": 18}
    assert kv_geometry(graph("gpt-oss-120b")).kind == "swa"  # tie: first in layer order


def test_kv_geometry_refuses_mixed_or_missing_attention() -> None:
    g = plain("gpt-oss-120b")
    mixed = yaml.safe_load(yaml.safe_dump(g))
    mixed["layer_kinds"][0]["nodes"][2]["d_h"] = 128
    with pytest.raises(DocumentError, match="disagree"):
        kv_geometry(typed(mixed))
    no_attention = {
        **g,
        "layer_kinds": [
            {"id": k["id"], "nodes": [n for n in k["nodes"] if n["op"] != "Attention"]} for k in g["layer_kinds"]
        ],
    }
    with pytest.raises(DocumentError, match="no attention"):
        kv_geometry(typed(no_attention))


def test_undeclared_kind_in_stack_is_refused_before_counting() -> None:
    g = {**plain("gpt2-xl"), "stack": {"pattern": ["nope"], "repeat": 2}}
    with pytest.raises(DocumentError, match="'nope' is not a declared layer kind"):
        typed(g)

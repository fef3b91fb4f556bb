"""Model graph and model identity documents."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from latencykernel.documents.common import validate
from latencykernel.documents.graph import ModelGraph, Node, Stack, load_graph, load_model_identity
from latencykernel.errors import DocumentError

GRAPH = """\
kind: ModelGraph
name: tiny
derived_from:
  format: hf_config_json
  path: config.json
  sha256: dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd
  deriver_version: 1
global:
  hidden_size: 2048
  vocab_size: 32000
  weight_dtype: bf16
layer_kinds:
  - id: dense
    nodes:
      - {op: Elementwise, role: input_norm}
      - {op: GEMM, role: qkv_proj, n: 2560, k: 2048}
      - {op: Attention, kind: gqa, n_q: 16, n_kv: 2, d_h: 128}
      - {op: GEMM, role: o_proj, n: 2048, k: 2048}
      - {op: AllReduce, role: attn_out, emit: tensor_parallel}
    edges: [[0, 1], [1, 2], [2, 3], [3, 4]]
  - id: moe
    nodes:
      - &experts {op: GroupedGEMM, role: experts, n: 768, k: 2048, experts: 128, top_k: 8}
      - {op: All2All, role: moe_dispatch_combine, emit: expert_parallel}
    edges: [[0, 1]]
stack:
  prologue: [dense]
  pattern: [moe, dense]
  repeat: 3
head:
  - {op: Elementwise, role: final_norm}
  - {op: GEMM, role: lm_head, n: 32000, k: 2048}
"""


def graph_file(tmp_path: Path, text: str = GRAPH) -> Path:
    p = tmp_path / "models" / "tiny" / "graph.yaml"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


def error(tmp_path: Path, text: str) -> DocumentError:
    with pytest.raises(DocumentError) as ei:
        load_graph(graph_file(tmp_path, text))
    return ei.value


def test_minimal_graph_loads_and_expands(tmp_path: Path) -> None:
    g = load_graph(graph_file(tmp_path))
    assert g.global_.hidden_size == 2048 and g.global_.weight_dtype == "bf16"
    assert g.expand() == ["dense", "moe", "dense", "moe", "dense", "moe", "dense"]
    assert g.layer_counts() == {"dense": 4, "moe": 3}
    assert list(g.layer_counts()) == ["dense", "moe"]
    assert g.layer_kind("moe").nodes[0].experts == 128
    with pytest.raises(KeyError):
        g.layer_kind("nope")
    assert g.model_dump(by_alias=True, exclude_none=True)["global"]["vocab_size"] == 32000


@pytest.mark.parametrize(
    ("old", "new", "key", "text"),
    [
        ("n: 2560, k: 2048}", "n: 2560}", "layer_kinds[0].nodes[1].k", "missing required key 'k' for op GEMM"),
        (
            "{op: Elementwise, role: input_norm}",
            "{op: Elementwise, role: input_norm, n: 3}",
            "layer_kinds[0].nodes[0].n",
            "key 'n' is not used by op Elementwise; Elementwise takes bytes_per_token",
        ),
        (
            "kind: gqa",
            "kind: linear",
            "layer_kinds[0].nodes[2].kind",
            "'linear' is not one of gqa, mla, sparse_mla, swa",
        ),
        (
            "kind: gqa, n_q: 16, n_kv: 2",
            "kind: mla, n_q: 16, n_kv: 2",
            "layer_kinds[0].nodes[2].n_kv",
            "n_kv must be 1, got 2",
        ),
        ("kind: gqa", "kind: swa", "layer_kinds[0].nodes[2].window", "missing required key 'window' for swa"),
        (
            "kind: gqa, n_q: 16, n_kv: 2",
            "kind: sparse_mla, n_q: 16, n_kv: 1",
            "layer_kinds[0].nodes[2].index_topk",
            "needs index_topk or compress_ratio",
        ),
        ("n_kv: 2", "n_kv: 32", "layer_kinds[0].nodes[2].n_kv", "n_kv 32 exceeds n_q 16"),
        ("emit: tensor_parallel}", "}", "layer_kinds[0].nodes[4].emit", "missing required key 'emit' for op AllReduce"),
        ("emit: tensor_parallel}", "emit: always}", "layer_kinds[0].nodes[4].emit", "'always' is not one of"),
        (
            "emit: tensor_parallel}",
            "emit: tensor_parallel, bytes_per_token: 0}",
            "layer_kinds[0].nodes[4].bytes_per_token",
            "AllReduce bytes_per_token must be at least 1",
        ),
        (
            "emit: tensor_parallel}",
            "emit: tensor_parallel, bytes_per_token: -8}",
            "layer_kinds[0].nodes[4].bytes_per_token",
            "must be at least 0",
        ),
        ("top_k: 8", "top_k: 200", "layer_kinds[1].nodes[0].top_k", "top_k 200 exceeds experts 128"),
        (
            "op: GEMM, role: qkv_proj",
            "op: Gemm, role: qkv_proj",
            "layer_kinds[0].nodes[1].op",
            "'Gemm' is not one of GEMM, GroupedGEMM, Attention, RecurrentUpdate",
        ),
        (
            "weight_dtype: bf16",
            "weight_dtype: fp6",
            "global.weight_dtype",
            "'fp6' is not one of bf16, fp16, fp8, nvfp4, mxfp4, int8, int4, fp32",
        ),
        ("hidden_size: 2048", "hidden_size: 0", "global.hidden_size", "must be at least 1, got 0"),
        ("sha256: dddd", "sha256: xxdd", "derived_from.sha256", "must be 64 hexadecimal characters"),
        (
            "edges: [[0, 1]]",
            "edges: [[0, 2]]",
            "layer_kinds[1].edges[0]",
            "must join two different node indices in 0..1",
        ),
        ("edges: [[0, 1]]", "edges: [[0, 1], [1, 0]]", "layer_kinds[1].edges", "form a cycle"),
        ("edges: [[0, 1]]", "edges: [[0, 1, 2]]", "layer_kinds[1].edges[0]", "must list at most 2 item(s)"),
        ("- id: moe", "- id: dense", "layer_kinds[1].id", "'dense' is declared twice"),
        (
            "pattern: [moe, dense]",
            "pattern: [moe, dense2]",
            "stack.pattern[1]",
            "'dense2' is not a declared layer kind; declared ids are: dense, moe",
        ),
        ("  repeat: 3\n", "", "stack.repeat", "missing required key 'repeat'"),
        ("name: tiny\n", "name: tiny\n_comment: hi\n", "_comment", "unknown key '_comment'"),
        ("global:", "globals:", "globals", "did you mean 'global'?"),
    ],
)
def test_graph_defects(tmp_path: Path, old: str, new: str, key: str, text: str) -> None:
    assert old in GRAPH
    e = error(tmp_path, GRAPH.replace(old, new))
    assert e.key == key and text in str(e), str(e)
    assert str(e).startswith(str(graph_file(tmp_path, GRAPH.replace(old, new))) + ": ")


@pytest.mark.parametrize("op", ["AllReduce", "AllGather", "ReduceScatter", "All2All"])
def test_a_collective_states_its_message_per_token(op: str) -> None:
    """Guards a collective whose message is not the hidden state (a norm's variances) being
    refused or read as one: the key is accepted and kept."""
    node = validate(Node, {"op": op, "emit": "tensor_parallel", "bytes_per_token": 8}, "<memory>")
    assert node.bytes_per_token == 8


def test_stack_that_expands_to_nothing(tmp_path: Path) -> None:
    text = GRAPH.replace("  prologue: [dense]\n", "").replace("repeat: 3", "repeat: 0")
    e = error(tmp_path, text)
    assert e.key == "stack" and "expands to no layer" in str(e)


def test_speculator_and_recurrent_nodes(tmp_path: Path) -> None:
    text = (
        GRAPH.replace(
            "stack:\n",
            "  - id: mamba\n    nodes:\n      - {op: RecurrentUpdate, recurrent_kind: mamba2, n_heads: 64, state_size: 128,"
            " n_groups: 8, conv_kernel: 4, intermediate_size: 4096, state_dtype: fp32}\n"
            "  - id: kda\n    nodes:\n      - {op: RecurrentUpdate, recurrent_kind: kda, n_heads: 64, state_size: 128,"
            " conv_kernel: 4}\nstack:\n",
        )
        + "speculator:\n  method: mtp\n  num_spec_tokens: 1\n  stack: {pattern: [mamba, kda], repeat: 1}\n"
    )
    g = load_graph(graph_file(tmp_path, text))
    assert g.speculator is not None and g.speculator.stack.expand() == ["mamba", "kda"]
    bad = text.replace("conv_kernel: 4, intermediate_size: 4096, ", "")
    e = error(tmp_path, bad)
    assert e.key == "layer_kinds[2].nodes[0].conv_kernel" and "mamba2" in str(e)
    e = error(tmp_path, text.replace("pattern: [mamba, kda]", "pattern: [mamba, kdb]"))
    assert e.key == "speculator.stack.pattern[1]"


def test_anchors_shared_between_layer_kinds(tmp_path: Path) -> None:
    text = GRAPH.replace("      - {op: All2All", "      - *experts\n      - {op: All2All").replace(
        "edges: [[0, 1]]", "edges: [[0, 1], [1, 2]]"
    )
    g = load_graph(graph_file(tmp_path, text))
    moe = g.layer_kind("moe")
    assert moe.nodes[0] == moe.nodes[1] and moe.nodes[0] is not moe.nodes[1]


@settings(max_examples=80, deadline=None)
@given(
    pro=st.lists(st.sampled_from(["a", "b"]), max_size=4),
    pat=st.lists(st.sampled_from(["a", "b"]), max_size=4),
    rep=st.integers(0, 20),
    epi=st.lists(st.sampled_from(["a", "b"]), max_size=4),
)
def test_stack_expansion_length(pro: list[str], pat: list[str], rep: int, epi: list[str]) -> None:
    s = Stack(prologue=pro, pattern=pat, repeat=rep, epilogue=epi)
    out = s.expand()
    assert len(out) == len(pro) + len(pat) * rep + len(epi)
    assert out[: len(pro)] == pro and (not epi or out[-len(epi) :] == epi)


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from(["GEMM", "GroupedGEMM", "Attention", "RecurrentUpdate", "Elementwise", "AllReduce"]),
    st.sampled_from(["n", "k", "experts", "kind", "n_q", "recurrent_kind", "bytes_per_token", "window"]),
)
def test_keys_foreign_to_an_op_are_rejected(op: str, key: str) -> None:
    from latencykernel.documents.graph import OP_KEYS

    value: object = {"kind": "gqa", "recurrent_kind": "kda"}.get(key, 4)
    data = {"op": op, key: value}
    if key in OP_KEYS[op]:
        return
    with pytest.raises(DocumentError) as ei:
        validate(Node, data, "<memory>")
    assert ei.value.key == key and f"not used by op {op}" in str(ei.value)


def test_model_identity(tmp_path: Path) -> None:
    p = tmp_path / "model.yaml"
    p.write_text(
        "name: tiny\nsource:\n  provider: huggingface\n  repo: example/Tiny\n"
        "  revision: 0123456789abcdef0123456789abcdef01234567\n  retrieved: 2026-01-01\n"
        "  revision_verified: true\n"
    )
    m = load_model_identity(p)
    assert m.source.retrieved == "2026-01-01" and m.source.repo == "example/Tiny"
    p.write_text("name: tiny\n_comment: no\nsource: {provider: hf, repo: a/b, revision: r}\n")
    with pytest.raises(DocumentError, match="unknown key '_comment'"):
        load_model_identity(p)


def test_graph_is_assignable_and_models_are_strict() -> None:
    g = validate(
        ModelGraph,
        {
            "kind": "ModelGraph",
            "name": "x",
            "derived_from": {"format": "f", "path": "p", "sha256": "a" * 64, "deriver_version": 1},
            "global": {"hidden_size": 8, "vocab_size": 8, "weight_dtype": "bf16"},
            "layer_kinds": [{"id": "l", "nodes": [{"op": "Elementwise"}]}],
            "stack": {"prologue": ["l"]},
        },
        "<memory>",
    )
    g.global_.weight_dtype = "fp8"
    assert g.global_.weight_dtype == "fp8" and g.expand() == ["l"]

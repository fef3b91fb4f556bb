"""Node and block builders shared by the family handlers.

Every builder returns fresh dicts (never shared objects), with keys in the order the
BLIS catalog graphs print them, so the YAML a handler produces is stable and anchor-free.
The conventions (observations on the catalog's generated graphs, catalog-schemas §3.2):

* linear-chain layers; norms are ``Elementwise``;
* dense attention: ``qkv_proj`` n=(n_q+2 n_kv)·d_h, k=hidden; ``o_proj`` n=hidden,
  k=n_q·d_h; ``AllReduce attn_out`` emitted under tensor parallelism;
* a QK norm over the whole (tensor-sliced) projection rather than per head (MiniMax-M2's
  ``qk_norm_type: per_layer``): ``AllReduce qk_norm_variance`` of 8 bytes a token (the q
  and k variances in fp32) after ``qkv_proj``, emitted under tensor parallelism;
* dense gated MLP: ``mlp_gate_up`` n=2·inter, ``mlp_down``, ``AllReduce mlp_out`` emitted
  ``tensor_parallel_unless_sp_moe``;
* MoE: ``GroupedGEMM experts`` (n = per-expert inner width, k = hidden; one node stands for
  the gated expert's three matrices), ``All2All moe_dispatch_combine`` under expert
  parallelism, then ``AllReduce mlp_out``.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "Node",
    "norm",
    "gemm",
    "attention",
    "attn_out",
    "mlp_out",
    "mixer_out",
    "qk_norm_variance",
    "QK_NORM_VARIANCE_BYTES",
    "gqa_attention",
    "dense_mlp",
    "plain_mlp",
    "moe_mlp",
    "recurrent",
]

Node = dict[str, Any]


def norm(role: str, bytes_per_token: int | None = None) -> Node:
    node: Node = {"op": "Elementwise", "role": role}
    if bytes_per_token is not None:
        node["bytes_per_token"] = bytes_per_token
    return node


def gemm(role: str, n: int, k: int, weight_dtype: str | None = None) -> Node:
    node: Node = {"op": "GEMM", "role": role, "n": n, "k": k}
    if weight_dtype is not None:
        node["weight_dtype"] = weight_dtype
    return node


def attention(kind: str, n_q: int, n_kv: int, d_h: int, *, role: str | None = None, **extra: int | None) -> Node:
    """An Attention node; ``extra`` (kv_lora_rank, qk_rope_head_dim, window, index_topk,
    compress_ratio) is written in the given order, skipping ``None``."""
    node: Node = {"op": "Attention"}
    if role:
        node["role"] = role
    node.update({"kind": kind, "n_q": n_q, "n_kv": n_kv, "d_h": d_h})
    for key, value in extra.items():
        if value is not None:
            node[key] = value
    return node


def _collective(op: str, role: str, emit: str) -> Node:
    return {"op": op, "role": role, "emit": emit}


def attn_out() -> Node:
    return _collective("AllReduce", "attn_out", "tensor_parallel")


def mlp_out() -> Node:
    return _collective("AllReduce", "mlp_out", "tensor_parallel_unless_sp_moe")


def mixer_out() -> Node:
    return _collective("AllReduce", "mixer_out", "tensor_parallel")


QK_NORM_VARIANCE_BYTES = 8  # one fp32 mean square each for q and k, per token


def qk_norm_variance() -> Node:
    """The all-reduce a cross-head QK norm needs under tensor parallelism: each rank holds a
    slice of the q (and k) projection, so the mean square the norm divides by is summed over
    ranks first. vLLM (vllm/model_executor/layers/mamba/linear_attn.py,
    ``MiniMaxText01RMSNormTP.forward_qk``, called from minimax_m2.py
    ``MiniMaxM2Attention.forward``) reduces the two per-token variances in one
    ``tensor_model_parallel_all_reduce`` when TP > 1 (one call since vLLM PR #31493;
    SGLang's minimax_m2 likewise since sgl-project/sglang#14416)."""
    node = _collective("AllReduce", "qk_norm_variance", "tensor_parallel")
    node["bytes_per_token"] = QK_NORM_VARIANCE_BYTES
    return node


def gqa_attention(
    hidden: int,
    n_q: int,
    n_kv: int,
    d_h: int,
    *,
    kind: str = "gqa",
    window: int | None = None,
    q_width: int | None = None,
    cross_head_qk_norm: bool = False,
) -> list[Node]:
    """``input_norm, qkv_proj, [AllReduce qk_norm_variance,] Attention, o_proj, AllReduce attn_out``.

    ``q_width`` overrides the query projection's output width (n_q·d_h) for models whose
    q_proj also emits an output gate (Qwen3.5 / Qwen3-Next: 2·n_q·d_h).
    ``cross_head_qk_norm`` adds the variance all-reduce of a QK norm taken over all heads
    (``qk_norm_variance``); a per-head QK norm needs none and is not written.
    """
    q = n_q * d_h if q_width is None else q_width
    return [
        norm("input_norm"),
        gemm("qkv_proj", q + 2 * n_kv * d_h, hidden),
        *([qk_norm_variance()] if cross_head_qk_norm else []),
        attention(kind, n_q, n_kv, d_h, window=window if kind == "swa" else None),
        gemm("o_proj", hidden, n_q * d_h),
        attn_out(),
    ]


def dense_mlp(hidden: int, inter: int) -> list[Node]:
    """Gated (SwiGLU) MLP: gate and up fused into one GEMM of width 2·inter."""
    return [
        norm("post_attn_norm"),
        gemm("mlp_gate_up", 2 * inter, hidden),
        gemm("mlp_down", hidden, inter),
        mlp_out(),
    ]


def plain_mlp(hidden: int, inter: int) -> list[Node]:
    """Non-gated MLP (GPT-2): one up projection of width inter, one down projection."""
    return [
        norm("post_attn_norm"),
        gemm("mlp_up", inter, hidden),
        gemm("mlp_down", hidden, inter),
        mlp_out(),
    ]


def moe_mlp(
    hidden: int,
    inter: int,
    experts: int,
    top_k: int,
    *,
    shared: int = 0,
    shared_inter: int | None = None,
    weight_dtype: str | None = None,
) -> list[Node]:
    """``post_attn_norm, GroupedGEMM experts, All2All moe_dispatch_combine, AllReduce
    mlp_out``.  ``shared_intermediate_size`` is written only when it differs from n."""
    node: Node = {
        "op": "GroupedGEMM",
        "role": "experts",
        "n": inter,
        "k": hidden,
        "experts": experts,
        "top_k": top_k,
    }
    if shared:
        node["shared_experts"] = shared
        if shared_inter is not None and shared_inter != inter:
            node["shared_intermediate_size"] = shared_inter
    if weight_dtype is not None:
        node["weight_dtype"] = weight_dtype
    return [
        norm("post_attn_norm"),
        node,
        _collective("All2All", "moe_dispatch_combine", "expert_parallel"),
        mlp_out(),
    ]


def recurrent(kind: str, n_heads: int, state_size: int, *, state_dtype: str | None = None, **mamba: int) -> Node:
    """A RecurrentUpdate node (gdn/kda: n_heads, state_size; mamba2 adds n_groups,
    conv_kernel, intermediate_size)."""
    node: Node = {"op": "RecurrentUpdate", "recurrent_kind": kind, "n_heads": n_heads, "state_size": state_size}
    node.update(mamba)
    if state_dtype is not None:
        node["state_dtype"] = state_dtype
    return node

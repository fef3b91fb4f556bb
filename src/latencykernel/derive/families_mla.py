"""Family handlers for DeepSeek-style latent attention.

* DeepSeek-V2/V3 (and R1), Kimi-K2/K2.5 (a DeepSeek-V3 text decoder), GLM-5 and
  DeepSeek-V3.2 (MLA plus a lightning indexer: ``sparse_mla`` with ``index_topk``);
* DeepSeek-V4 (compressed sparse attention: one shared 512-wide KV head, compressed by
  ``compress_ratios[i]`` per layer, a top-k indexer on the ratio-4 layers).
"""

from __future__ import annotations

from latencykernel.derive.config_view import ConfigView
from latencykernel.derive.handler_io import Derived, HandlerInput, Layer, Speculator
from latencykernel.derive.nodes import (
    Node,
    attention,
    attn_out,
    dense_mlp,
    gemm,
    moe_mlp,
    norm,
)

__all__ = ["deepseek_mla", "deepseek_v4", "mla_attention"]


def mla_attention(c: ConfigView) -> list[Node]:
    """MLA attention nodes, as the catalog's deepseek-v3 graph lays them out.

    With a query LoRA (q_lora_rank set)::

        input_norm
        qkv_a_proj     n = q_lora + kv_lora + rope      k = hidden   (q_a and kv_a fused)
        q_a_layernorm  bytes_per_token = 4·q_lora      (2-byte read + write of q_lora)
        kv_a_layernorm bytes_per_token = 4·kv_lora
        q_b_proj       n = n_q·(nope + rope)           k = q_lora
        kv_b_proj      n = n_q·(nope + v)              k = kv_lora
    Without (DeepSeek-V2-Lite): kv_a_proj (kv_lora + rope), kv_a_layernorm, q_proj
    (n_q·(nope+rope), k = hidden), kv_b_proj.

    Then, when the config has an indexer (``index_topk``: GLM-5, DeepSeek-V3.2),
    ``index_qk_proj`` (n = index_heads·index_dim + index_dim) and its score attention
    (role ``block_index_scores``, gqa, one key head); the latent attention (``mla``, or
    ``sparse_mla`` with ``index_topk``; n_kv = 1, d_h = kv_lora + rope); ``o_proj``
    (k = n_q·v_head_dim) and ``AllReduce attn_out``.
    """
    hidden, n_q = c.hidden, c.n_q
    kv_lora, rope = c.pos("kv_lora_rank"), c.pos("qk_rope_head_dim")
    nope, v = c.pos("qk_nope_head_dim"), c.pos("v_head_dim")
    nodes: list[Node] = [norm("input_norm")]
    if c.has("q_lora_rank"):
        q_lora = c.pos("q_lora_rank")
        nodes += [
            gemm("qkv_a_proj", q_lora + kv_lora + rope, hidden),
            norm("q_a_layernorm", 4 * q_lora),
            norm("kv_a_layernorm", 4 * kv_lora),
            gemm("q_b_proj", n_q * (nope + rope), q_lora),
        ]
    else:
        nodes += [
            gemm("kv_a_proj", kv_lora + rope, hidden),
            norm("kv_a_layernorm", 4 * kv_lora),
            gemm("q_proj", n_q * (nope + rope), hidden),
        ]
    nodes.append(gemm("kv_b_proj", n_q * (nope + v), kv_lora))
    topk = c.get("index_topk")
    if topk is not None:
        idx_heads, idx_dim = c.pos("index_n_heads"), c.pos("index_head_dim")
        nodes += [
            gemm("index_qk_proj", idx_heads * idx_dim + idx_dim, hidden),
            attention("gqa", idx_heads, 1, idx_dim, role="block_index_scores"),
        ]
    nodes += [
        attention(
            "sparse_mla" if topk is not None else "mla",
            n_q,
            1,
            kv_lora + rope,
            kv_lora_rank=kv_lora,
            qk_rope_head_dim=rope,
            index_topk=c.pos("index_topk") if topk is not None else None,
        ),
        gemm("o_proj", hidden, n_q * v),
        attn_out(),
    ]
    return nodes


def _is_moe_layer(c: ConfigView, i: int) -> bool:
    """DeepSeek rule: routed experts from layer first_k_dense_replace on, every
    moe_layer_freq layers."""
    if c.count("n_routed_experts", 0) == 0:
        return False
    return i >= c.count("first_k_dense_replace", 0) and i % c.pos("moe_layer_freq", 1) == 0


def _moe(ctx: HandlerInput) -> list[Node]:
    c = ctx.cfg
    return moe_mlp(
        c.hidden,
        c.pos("moe_intermediate_size"),
        c.pos("n_routed_experts"),
        c.pos("num_experts_per_tok"),
        shared=c.count("n_shared_experts", 0),
        weight_dtype=ctx.expert_dtype,
    )


def deepseek_mla(ctx: HandlerInput) -> Derived:
    """DeepSeek-V2/V3/R1, Kimi-K2/K2.5, GLM-5, DeepSeek-V3.2.

    Dense gated MLP (intermediate_size) in the first ``first_k_dense_replace`` layers,
    routed + shared experts after.  ``num_nextn_predict_layers`` MTP layers become the
    speculator (method ``deepseek_mtp``, reusing the MoE layer kind).  A config with a
    vision tower (Kimi-K2.5) is a text decoder of a multimodal model.
    """
    c = ctx.cfg
    layers: list[Layer] = []
    for i in range(c.layers):
        if _is_moe_layer(c, i):
            layers.append(Layer("attn_moe", mla_attention(c) + _moe(ctx)))
        else:
            layers.append(Layer("attn_dense", mla_attention(c) + dense_mlp(c.hidden, c.pos("intermediate_size"))))
    spec = None
    mtp = c.count("num_nextn_predict_layers", 0)
    if mtp:
        spec = Speculator("deepseek_mtp", mtp, [layers[-1].id], mtp)
    return Derived(layers, speculator=spec, multimodal=c.is_multimodal)


def _v4_attention(c: ConfigView, ratio: int) -> tuple[str, list[Node]]:
    """DeepSeek-V4 attention for one compress ratio.

    The catalog prices V4's low-rank query path and grouped output projection as one
    dense ``qkv_proj`` (n = (n_q + 2·n_kv)·head_dim) and one ``o_proj`` (k = n_q·head_dim).
    ratio 0: plain sliding window (``swa``, window = sliding_window).
    ratio > 0: ``sparse_mla`` over a KV cache compressed ``ratio``-fold; the ratio-4
    (CSA) layers also run the lightning indexer (``index_qk_proj`` + score attention)
    and read only its ``index_topk`` selections; the ratio-128 (HCA) layers read every
    compressed entry and have no indexer (DeepSeek-V4 ``inference/model.py``).
    """
    hidden, n_q, n_kv, d_h = c.hidden, c.n_q, c.n_kv, c.head_dim
    nodes: list[Node] = [norm("input_norm"), gemm("qkv_proj", (n_q + 2 * n_kv) * d_h, hidden)]
    if ratio == 0:
        nodes.append(attention("swa", n_q, n_kv, d_h, window=c.pos("sliding_window")))
        kid = "swa_moe"
    else:
        indexed = ratio == 4
        if indexed:
            idx_heads, idx_dim = c.pos("index_n_heads"), c.pos("index_head_dim")
            nodes += [
                gemm("index_qk_proj", idx_heads * idx_dim + idx_dim, hidden),
                attention("gqa", idx_heads, 1, idx_dim, role="block_index_scores"),
            ]
        nodes.append(
            attention(
                "sparse_mla", n_q, 1, d_h, index_topk=c.pos("index_topk") if indexed else None, compress_ratio=ratio
            )
        )
        kid = f"csa{ratio}_moe"
    nodes += [gemm("o_proj", hidden, n_q * d_h), attn_out()]
    return kid, nodes


def deepseek_v4(ctx: HandlerInput) -> Derived:
    """DeepSeek-V4 (Pro/Flash): per-layer ``compress_ratios``, MoE in every layer (the
    first ``num_hash_layers`` route by token hash, which changes no shape), experts in
    ``expert_dtype``.  The MTP layer reuses the kind of layer 0 (as the catalog graph
    does); its own ratio (``compress_ratios[num_hidden_layers]``, 0) is not modelled.
    The hyper-connection mixing (hc_mult) is a few small matrices and is not priced."""
    c = ctx.cfg
    n = c.layers
    ratios = c.seq("compress_ratios") or [0] * n
    if len(ratios) < n:
        raise c._bad("compress_ratios", f"lists fewer than num_hidden_layers={n} ratios", ratios)
    layers: list[Layer] = []
    for ratio in ratios[:n]:
        if isinstance(ratio, bool) or not isinstance(ratio, int) or ratio < 0:
            raise c._bad("compress_ratios", "must hold non-negative integers", ratio)
        kid, attn = _v4_attention(c, ratio)
        layers.append(Layer(kid, attn + _moe(ctx)))
    spec = None
    mtp = c.count("num_nextn_predict_layers", 0)
    if mtp:
        spec = Speculator("deepseek_mtp", mtp, [layers[0].id], mtp)
    return Derived(layers, speculator=spec, multimodal=c.is_multimodal)

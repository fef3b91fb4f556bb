"""Family handlers for models with per-head (GQA/MHA/SWA) attention.

Llama, Mistral, Qwen2/Qwen3 dense; Mixtral and Qwen3-MoE; gpt-oss; MiniMax-M2/M2.5 and
MiniMax-M3; GPT-2; and the Qwen3-Next / Qwen3.5 hybrids of Gated DeltaNet and gated
full attention.  The MLA families (DeepSeek, Kimi, GLM-5, DeepSeek-V4) are in
:mod:`latencykernel.derive.families_mla`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from latencykernel.derive.config_view import TORCH_DTYPES, ConfigView
from latencykernel.derive.handler_io import Derived, HandlerInput, Layer, Speculator
from latencykernel.derive.nodes import (
    Node,
    attention,
    attn_out,
    dense_mlp,
    gemm,
    gqa_attention,
    mixer_out,
    moe_mlp,
    norm,
    plain_mlp,
    qk_norm_variance,
    recurrent,
)
from latencykernel.errors import DocumentError

__all__ = [
    "dense_gqa",
    "moe_gqa",
    "gpt_oss",
    "minimax_m2",
    "minimax_m3",
    "gpt2",
    "qwen_hybrid",
    "attention_kinds",
    "cross_head_qk_norm",
]


def attention_kinds(c: ConfigView) -> list[tuple[str, int | None]]:
    """Per layer ``(kind, window)``: ``("swa", w)`` where a sliding window applies,
    else ``("gqa", None)``.

    * ``layer_types`` (sliding_attention / full_attention), when the config lists it;
    * otherwise ``sliding_window``, when set and smaller than ``max_position_embeddings``;
      Qwen2/Qwen3 apply it only with ``use_sliding_window`` and only from layer
      ``max_window_layers`` on (transformers' Qwen2Config rule).
    """
    n = c.layers
    types = c.seq("layer_types")
    window = c.get("sliding_window")
    if types is not None:
        if len(types) < n:
            raise c._bad("layer_types", f"lists fewer than num_hidden_layers={n} layers", types)
        out: list[tuple[str, int | None]] = []
        for t in types[:n]:
            if t == "full_attention":
                out.append(("gqa", None))
            elif t == "sliding_attention":
                out.append(("swa", c.pos("sliding_window")))
            else:
                raise c._bad("layer_types", "holds a layer type this family does not have", t)
        return out
    if window is None:
        return [("gqa", None)] * n
    w = c.pos("sliding_window")
    max_pos = c.get("max_position_embeddings")
    if isinstance(max_pos, int) and w >= max_pos:
        return [("gqa", None)] * n  # the window never binds
    if "use_sliding_window" in c.raw or "use_sliding_window" in c.text:
        if not c.flag("use_sliding_window", False):
            return [("gqa", None)] * n
        first = c.count("max_window_layers", 0)
        return [("swa", w) if i >= first else ("gqa", None) for i in range(n)]
    return [("swa", w)] * n


def _attn(c: ConfigView, kind: str, window: int | None, cross_head_qk_norm: bool = False) -> list[Node]:
    return gqa_attention(
        c.hidden, c.n_q, c.n_kv, c.head_dim, kind=kind, window=window, cross_head_qk_norm=cross_head_qk_norm
    )


QK_NORM_TYPES = ("per_head", "per_layer")


def cross_head_qk_norm(c: ConfigView) -> bool:
    """True when the config's QK norm spans every head of the projection (MiniMax's
    ``use_qk_norm`` with ``qk_norm_type: per_layer``), which tensor parallelism splits, so
    the norm's variance is all-reduced (``nodes.qk_norm_variance``); ``per_head`` (absent:
    per head, as Qwen3's) normalises within a head and needs no collective."""
    if not c.flag("use_qk_norm", False):
        return False
    kind = c.get("qk_norm_type", "per_head")
    if kind not in QK_NORM_TYPES:
        raise c._bad("qk_norm_type", f"must be one of {', '.join(QK_NORM_TYPES)}", kind)
    return bool(kind == "per_layer")


def dense_gqa(ctx: HandlerInput) -> Derived:
    """Llama, Mistral, Qwen2, Qwen3: GQA (or SWA) attention and a gated MLP."""
    c = ctx.cfg
    inter = c.pos("intermediate_size")
    layers = [
        Layer("dense" if kind == "gqa" else "swa_dense", _attn(c, kind, window) + dense_mlp(c.hidden, inter))
        for kind, window in attention_kinds(c)
    ]
    return Derived(layers, multimodal=c.is_multimodal)


def _is_qwen_moe_layer(c: ConfigView, i: int) -> bool:
    """Qwen2/3-MoE: MoE unless listed in mlp_only_layers, every decoder_sparse_step."""
    if c.count("num_experts", 0) == 0:
        return False
    only = c.seq("mlp_only_layers") or []
    step = c.pos("decoder_sparse_step", 1)
    return i not in only and (i + 1) % step == 0


def moe_gqa(ctx: HandlerInput) -> Derived:
    """Mixtral and Granite-MoE (num_local_experts) and Qwen2/Qwen3-MoE (num_experts, optional shared
    expert, dense layers listed in mlp_only_layers)."""
    c = ctx.cfg
    hidden = c.hidden
    mixtral_style = c.has("num_local_experts")
    layers: list[Layer] = []
    for i, (kind, window) in enumerate(attention_kinds(c)):
        attn = _attn(c, kind, window)
        if mixtral_style:
            mlp = moe_mlp(
                hidden,
                c.pos("intermediate_size"),
                c.pos("num_local_experts"),
                c.pos("num_experts_per_tok"),
                weight_dtype=ctx.expert_dtype,
            )
            moe = True
        elif _is_qwen_moe_layer(c, i):
            shared_inter = c.count("shared_expert_intermediate_size", 0)
            mlp = moe_mlp(
                hidden,
                c.pos("moe_intermediate_size"),
                c.pos("num_experts"),
                c.pos("num_experts_per_tok"),
                shared=1 if shared_inter else 0,
                shared_inter=shared_inter or None,
                weight_dtype=ctx.expert_dtype,
            )
            moe = True
        else:
            mlp = dense_mlp(hidden, c.pos("intermediate_size"))
            moe = False
        prefix = "attn" if kind == "gqa" else "swa"
        layers.append(Layer(f"{prefix}_moe" if moe else ("dense" if kind == "gqa" else "swa_dense"), attn + mlp))
    return Derived(layers, multimodal=c.is_multimodal)


def gpt_oss(ctx: HandlerInput) -> Derived:
    """gpt-oss: layer_types alternate a 128-token sliding window and full attention;
    every layer routes to num_local_experts experts (top experts_per_token), stored
    MXFP4.  The per-head attention sinks are a few scalars and are not priced."""
    c = ctx.cfg
    top_k = c.pos("num_experts_per_tok") if c.has("num_experts_per_tok") else c.pos("experts_per_token")
    layers = []
    for kind, window in attention_kinds(c):
        mlp = moe_mlp(
            c.hidden, c.pos("intermediate_size"), c.pos("num_local_experts"), top_k, weight_dtype=ctx.expert_dtype
        )
        layers.append(Layer("swa_moe" if kind == "swa" else "full_moe", _attn(c, kind, window) + mlp))
    return Derived(layers)


def minimax_m2(ctx: HandlerInput) -> Derived:
    """MiniMax-M2 / M2.5 / M2.7: full GQA attention in every layer (attn_type_list all 1)
    and a 256-expert top-8 MoE without shared experts.  The config's MTP modules
    (use_mtp / num_mtp_modules) are not served by any engine's speculative method in the
    rules pack, so no speculator is written."""
    c = ctx.cfg
    types = c.seq("attn_type_list")
    if types is not None and any(t != 1 for t in types[: c.layers]):
        raise c._bad(
            "attn_type_list", "marks lightning-attention layers (MiniMax-01), which this deriver does not model", types
        )
    shared_inter = c.count("shared_intermediate_size", 0)
    qk_reduce = cross_head_qk_norm(c)
    layers = []
    for _ in range(c.layers):
        mlp = moe_mlp(
            c.hidden,
            c.pos("intermediate_size"),
            c.pos("num_local_experts"),
            c.pos("num_experts_per_tok"),
            shared=1 if shared_inter else 0,
            shared_inter=shared_inter or None,
            weight_dtype=ctx.expert_dtype,
        )
        layers.append(Layer("attn_moe", _attn(c, "gqa", None, qk_reduce) + mlp))
    return Derived(layers)


def _per_layer(c: ConfigView, key: str, value: object, n: int, default: int) -> list[int]:
    """A per-layer 0/1 schedule (a list of at least ``n`` flags, or one int for all)."""
    if value is None:
        return [default] * n
    if isinstance(value, int) and not isinstance(value, bool):
        return [value] * n
    if not isinstance(value, list) or len(value) < n:
        raise c._bad(key, f"must be a list of at least {n} per-layer flags", value)
    return [int(x) for x in value[:n]]


def _sac(c: ConfigView, sac: Mapping[str, Any], key: str, default: int | None = None) -> int:
    v = sac.get(key, default)
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise c._bad(f"sparse_attention_config.{key}", "must be a non-negative integer", v)
    return v


def minimax_m3(ctx: HandlerInput) -> Derived:
    """MiniMax-M3 (MSA): the first layers are dense GQA + gated MLP; the rest read a
    block-sparse selection (the indexer scores 128-token blocks and each query reads its
    top-k blocks plus the local block), priced as ``swa`` with window
    (topk + local + init blocks) x block_size, plus the indexer's q/k projection and its
    small score attention; MoE with one shared expert.  ``num_mtp_modules`` MTP modules
    draft that many tokens (method ``minimax_m3_mtp``)."""
    c = ctx.cfg
    n, hidden = c.layers, c.hidden
    sac = c.mapping("sparse_attention_config") or {}
    moe_flags = _per_layer(c, "moe_layer_freq", c.get("moe_layer_freq"), n, 1)
    if sac.get("use_sparse_attention", False):
        sparse_flags = _per_layer(
            c, "sparse_attention_config.sparse_attention_freq", sac.get("sparse_attention_freq"), n, 1
        )
    else:
        sparse_flags = [0] * n
    qk_reduce = cross_head_qk_norm(c)
    layers: list[Layer] = []
    for i in range(n):
        if sparse_flags[i]:
            idx_heads, idx_dim = _sac(c, sac, "sparse_num_index_heads"), _sac(c, sac, "sparse_index_dim")
            blocks = (
                _sac(c, sac, "sparse_topk_blocks")
                + _sac(c, sac, "sparse_local_block", 0)
                + _sac(c, sac, "sparse_init_block", 0)
            )
            window = blocks * _sac(c, sac, "sparse_block_size")
            attn = [
                norm("input_norm"),
                gemm("qkv_proj", (c.n_q + 2 * c.n_kv) * c.head_dim, hidden),
                *([qk_norm_variance()] if qk_reduce else []),
                gemm("index_qk_proj", idx_heads * idx_dim + idx_dim, hidden),
                attention("gqa", idx_heads, 1, idx_dim, role="block_index_scores"),
                attention("swa", c.n_q, c.n_kv, c.head_dim, window=window),
                gemm("o_proj", hidden, c.n_q * c.head_dim),
                attn_out(),
            ]
        else:
            attn = _attn(c, "gqa", None, qk_reduce)
        if moe_flags[i]:
            shared = c.count("n_shared_experts", 0)
            mlp = moe_mlp(
                hidden,
                c.pos("intermediate_size"),
                c.pos("num_local_experts"),
                c.pos("num_experts_per_tok"),
                shared=shared,
                shared_inter=c.count("shared_intermediate_size", 0) or None,
                weight_dtype=ctx.expert_dtype,
            )
        else:
            mlp = dense_mlp(hidden, c.pos("dense_intermediate_size"))
        kind = ("sparse_attn_" if sparse_flags[i] else "attn_") + ("moe" if moe_flags[i] else "dense")
        layers.append(Layer("dense" if kind == "attn_dense" else kind, attn + mlp))
    spec = None
    mtp = c.count("num_mtp_modules", 0)
    if mtp:
        spec = Speculator("minimax_m3_mtp", mtp, [layers[-1].id])
    return Derived(layers, speculator=spec, multimodal=c.is_multimodal)


def gpt2(ctx: HandlerInput) -> Derived:
    """GPT-2: multi-head attention (n_kv = n_q, priced as gqa), a non-gated GELU MLP of
    width n_inner (4·n_embd by default), tied embeddings.  The learned position
    embeddings (n_positions x n_embd) have no graph node."""
    c = ctx.cfg
    hidden = c.hidden
    inter = c.pos("n_inner") if c.has("n_inner") else 4 * hidden
    n_q = c.n_q
    layers = [
        Layer("dense", gqa_attention(hidden, n_q, n_q, c.head_dim) + plain_mlp(hidden, inter)) for _ in range(c.layers)
    ]
    return Derived(layers)


def _hybrid_layer_types(c: ConfigView) -> list[str]:
    n = c.layers
    types = c.seq("layer_types")
    if types is not None:
        if len(types) < n:
            raise c._bad("layer_types", f"lists fewer than num_hidden_layers={n} layers", types)
        bad = [t for t in types[:n] if t not in ("linear_attention", "full_attention")]
        if bad:
            raise c._bad("layer_types", "holds a layer type this family does not have", bad[0])
        return [str(t) for t in types[:n]]
    interval = c.pos("full_attention_interval", 4)
    return ["full_attention" if (i + 1) % interval == 0 else "linear_attention" for i in range(n)]


def qwen_hybrid(ctx: HandlerInput) -> Derived:
    """Qwen3-Next and Qwen3.5: Gated DeltaNet linear attention in three of every four
    layers, gated full attention (q_proj also emits the output gate: 2·n_q·d_h) in the
    fourth; MoE with one shared expert in every layer (dense MLP for the dense Qwen3.5
    checkpoints).

    GDN layer: ``in_proj_qkvz`` (q, k: linear_num_key_heads x key_head_dim each; v, z:
    linear_num_value_heads x value_head_dim each), ``in_proj_ba`` (a beta and a decay per
    value head), ``RecurrentUpdate gdn`` (state per value head: key_head_dim x
    value_head_dim, in ``mamba_ssm_dtype``), ``mixer_out`` projection and its all-reduce.
    The depthwise causal conv (a few kB) is not priced.
    """
    c = ctx.cfg
    hidden = c.hidden
    nk, nv = c.pos("linear_num_key_heads"), c.pos("linear_num_value_heads")
    dk, dv = c.pos("linear_key_head_dim"), c.pos("linear_value_head_dim")
    if dk != dv:
        raise c._bad(
            "linear_value_head_dim",
            "differs from linear_key_head_dim; the gdn state size is priced as state_size^2",
            dv,
        )
    ssm = c.get("mamba_ssm_dtype")
    state_dtype = TORCH_DTYPES.get(str(ssm).lower()) if ssm is not None else None
    if ssm is not None and state_dtype is None:
        raise c._bad("mamba_ssm_dtype", f"is not one of {sorted(TORCH_DTYPES)}", ssm)
    gated = c.flag("attn_output_gate", True)
    n_q, n_kv, d_h = c.n_q, c.n_kv, c.head_dim
    moe = c.count("num_experts", 0) > 0
    layers: list[Layer] = []
    for i, t in enumerate(_hybrid_layer_types(c)):
        if t == "linear_attention":
            mixer: list[Node] = [
                norm("input_norm"),
                gemm("in_proj_qkvz", 2 * nk * dk + 2 * nv * dv, hidden),
                gemm("in_proj_ba", 2 * nv, hidden),
                recurrent("gdn", nv, dk, state_dtype=state_dtype),
                gemm("mixer_out", hidden, nv * dv),
                mixer_out(),
            ]
        else:
            mixer = gqa_attention(hidden, n_q, n_kv, d_h, q_width=(2 if gated else 1) * n_q * d_h)
        layer_moe = moe and _is_qwen_moe_layer(c, i)
        if layer_moe:
            shared_inter = c.count("shared_expert_intermediate_size", 0)
            mlp = moe_mlp(
                hidden,
                c.pos("moe_intermediate_size"),
                c.pos("num_experts"),
                c.pos("num_experts_per_tok"),
                shared=1 if shared_inter else 0,
                shared_inter=shared_inter or None,
                weight_dtype=ctx.expert_dtype,
            )
        else:
            mlp = dense_mlp(hidden, c.pos("intermediate_size"))
        prefix = "gdn" if t == "linear_attention" else "attn"
        kid = f"{prefix}_moe" if layer_moe else ("dense" if prefix == "attn" else "gdn_dense")
        layers.append(Layer(kid, mixer + mlp))
    spec = None
    mtp = c.count("mtp_num_hidden_layers", 0) or c.count("num_nextn_predict_layers", 0)
    if mtp:
        full = [layer.id for layer in layers if not layer.id.startswith("gdn")]
        if not full:
            raise DocumentError(
                "MTP layers need a full-attention layer kind to reuse",
                file=c.file,
                key="mtp_num_hidden_layers",
                value=mtp,
            )
        method = "qwen3_next_mtp" if c.text_model_type.startswith("qwen3_next") else "qwen3_5_mtp"
        spec = Speculator(method, mtp, [full[-1]], mtp)
    return Derived(layers, speculator=spec, multimodal=c.is_multimodal)

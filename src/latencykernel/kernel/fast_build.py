"""Building the fast step price's plan (``kernel/fast.py``): ``build_fast_plan`` folds a
deployment's ``StepConstants`` into each layer kind's coefficients, calling the laws in
``price/`` to fold them (a linear law at one token and a zero floor gives its per-token
coefficient exactly), or returns None for a deployment the fused price does not cover."""

from __future__ import annotations

import math

from latencykernel.kernel.constants import CollectiveCost, StepConstants
from latencykernel.kernel.fast import (
    T_DCP,
    T_GENERIC,
    T_TOPK,
    T_WINDOW,
    AttentionCoefficients,
    CollectiveCoefficients,
    DcpCoefficients,
    ExpertCoefficients,
    FastPlan,
    KindCoefficients,
    ReadLaw,
    SecondaryCoefficients,
)
from latencykernel.kernel.step import host_dispatch_s
from latencykernel.plan import LATENT_KINDS, PlannedAttention
from latencykernel.price.attention import (
    decode_attention_s,
    layer_kv_bytes_per_token,
    secondary_kv_bytes_per_token,
)
from latencykernel.price.context import dcp_decode_payload_bytes_per_row
from latencykernel.price.experts import expert_miss_probability, routed_expert_flops
from latencykernel.price.host import graph_dispatch_s
from latencykernel.price.ramp import saturation
from latencykernel.resolve.context import dcp_shards_kv
from latencykernel.resolve.layout import Group, Op

__all__ = ["build_fast_plan"]


class _Uncovered(Exception):
    """Raised while building: this deployment is left to the reference."""


def _coll(cost: CollectiveCost | None, per_unit: float) -> CollectiveCoefficients:
    """One charge of ``price.collective.collective_time_s``, folded."""
    if cost is None or cost.peak_bytes_per_s <= 0 or cost.floor_s < 0:
        raise _Uncovered("a collective without a price")
    itr = 1.0 / cost.transition_bytes_per_s if cost.transition_bytes_per_s > 0 else 0.0
    mult = per_unit * cost.span if cost.crosses_nodes else per_unit
    return CollectiveCoefficients(cost.floor_s, 1.0 / cost.peak_bytes_per_s, itr, mult, bool(cost.crosses_nodes))


def _dcp_charges(c: StepConstants, a: PlannedAttention) -> tuple[CollectiveCoefficients, ...]:
    """The DCP decode collectives of one layer as charges per row (the same rule as
    ``step._dcp_decode_collectives``, payloads from ``dcp_decode_payload_bytes_per_row``)."""
    query, tp_query, a2a, lse, reduce = dcp_decode_payload_bytes_per_row(
        a.q_heads, a.head_dim, a.kv_lora_rank, a.kind in LATENT_KINDS, c.tp, c.dcp, c.pcp
    )
    get = c.collectives.get
    out = []
    if c.pcp <= 1:
        out.append(_coll(get((Op.ALL_GATHER, Group.DCP)), query))
    elif c.dcp > c.pcp:
        out.append(_coll(get((Op.ALL_GATHER, Group.TP)), tp_query))
    if c.dcp_combine == "a2a":
        out.append(_coll(get((Op.ALL2ALL, Group.DCP)), a2a))
        return tuple(out)
    out.append(_coll(get((Op.ALL_GATHER, Group.DCP)), lse))
    op = Op.ALL_REDUCE if c.pcp > 1 else Op.REDUCE_SCATTER
    out.append(_coll(get((op, Group.DCP)), reduce))
    return tuple(out)


def _spec(c: StepConstants, a: PlannedAttention) -> ReadLaw | None:
    """The decode-read law of a primary attention (None: the raw context sum), with the same
    bounds as ``step.decode_kv_tokens``."""
    topk = a.read_top_k
    dcp = c.dcp if c.dcp > 1 and dcp_shards_kv(a.kind) else 1
    window = a.read_window
    if topk <= 0 and dcp <= 1 and window <= 0:
        return None
    if topk > 0:
        law = T_TOPK if (a.compress_ratio <= 0 and dcp <= 1) else T_GENERIC
    elif dcp > 1:
        law = T_DCP if window <= 0 else T_GENERIC
    else:
        law = T_WINDOW
    return ReadLaw(law, topk, window, a.compress_ratio, dcp, c.dcp_interleave)


def build_fast_plan(c: StepConstants) -> FastPlan | None:
    """Fold ``c`` into a ``FastPlan``, or None when the deployment is left to the reference."""
    try:
        return _build(c)
    except _Uncovered:
        return None


def _build(c: StepConstants) -> FastPlan:
    peak, hbm_bw, tp, eps = c.peak_flops_per_s, c.hbm_bytes_per_s, c.tp, c.eps_max
    if not (peak > 0 and hbm_bw > 0 and eps > 0 and tp > 0 and c.uniform_decode_width >= 1):
        raise _Uncovered("no compute peak, bandwidth or ramp")
    layout = c.layout
    # KNOWN DIVERGENCE D3: under PCP the funnel multiplies routed tokens by DP, not PCP (as step.py).
    funnel = layout.dp if (layout.moe_group > 1 and layout.dp > 1) else 1
    dp_slice = c.expert_tensor_shards / tp if layout.expert_width <= 1 else 1.0
    routed_a2a = layout.routed_all2all()
    pe = peak * eps
    kvpt = layer_kv_bytes_per_token(c.kv_bytes_per_token, c.kv_layers)

    colls: list[CollectiveCoefficients] = []
    coll_index: dict[CollectiveCoefficients, int] = {}
    specs: list[ReadLaw] = []
    windows: set[int] = set()
    kinds: list[KindCoefficients] = []
    needs_ndecode = dcp_prefill_fallback = False
    for lp in c.plan.layers:
        # Dense GEMMs (and shared experts), in units of Y.
        G = lp.shared_expert_flops_per_token / tp if lp.expert_flops_per_token_per_expert > 0 else 0.0
        if c.shape_aware:
            for g in lp.gemms:
                nn, kk = (g.n / tp, g.k) if g.shard_n else (g.n, g.k / tp)
                # price.ramp.shape_efficiency = efficiency(T) · saturation(K) · saturation(N)
                f = saturation(kk, c.k_half) * saturation(nn, c.n_half)
                G += g.flops_per_token / tp / f
        else:
            G += lp.dense_flops_per_token / tp
        weight = lp.dense_weight_bytes / tp
        R = 0.0
        expert = None
        if lp.expert_flops_per_token_per_expert > 0:
            weight += lp.shared_expert_weight_bytes / tp
            # KNOWN DIVERGENCE D1: routed FLOPs not divided by the TP slice (as step.py).
            R = (
                routed_expert_flops(
                    1, lp.top_k, c.local_expert_share, lp.expert_flops_per_token_per_expert, c.moe_imbalance, dp_slice
                )
                * funnel
            )
            local = c.experts_per_rank
            alpha = miss_rate = 0.0
            if local <= 0:
                Z, q = 0.0, 0.0
            else:  # price.experts.experts_touched: local · (1 − miss(tokens)), bytes per expert folded
                Z = lp.expert_weight_bytes_per_expert / c.expert_tensor_shards * local / hbm_bw
                q = expert_miss_probability(c.total_experts, lp.top_k)
                if q > 0.0 and c.moe_concentration > 0.0:  # expert_miss_fraction's skewed form
                    alpha = c.moe_concentration
                    miss_rate = -math.log(q) / alpha
            expert = ExpertCoefficients(q, Z, alpha, miss_rate)
        rf = rinv = 0.0
        if lp.recurrent_kind and lp.recurrent_kind in c.recurrent_by_kind:
            rf, rr = c.recurrent_by_kind[lp.recurrent_kind]
            rinv = 1.0 / rr

        attn = None
        dcp = None
        a = lp.primary
        if a is not None and a.q_heads > 0:
            floor, rate = c.attention_pair(a.kind)
            sp = _spec(c, a)
            spec = -1
            if sp is not None:
                if sp not in specs:
                    specs.append(sp)
                spec = specs.index(sp)
            qhd = a.q_heads * a.head_dim / tp
            ps = c.prefill_scale
            launch = 0
            if a.kind not in LATENT_KINDS and c.dcp <= 1 and not c.nvfp4_native and rate > 0 and ps > 0:
                launch = 1 if floor < c.prefill_floor_s else 2
            secs = []
            for s2 in lp.attentions:
                if s2.holds_kv:
                    continue
                f2, r2 = c.attention_pair(s2.kind)
                if r2 <= 0 or a.kv_heads * a.head_dim <= 0:
                    continue
                per_tok = secondary_kv_bytes_per_token(kvpt, s2.kv_heads, s2.head_dim, a.kv_heads, a.head_dim)
                dcp2 = c.dcp if c.dcp > 1 and dcp_shards_kv(s2.kind) else 1
                secs.append(
                    SecondaryCoefficients(
                        f2,
                        decode_attention_s(1, per_tok, 0.0, r2),
                        s2.window,
                        s2.compress_ratio,
                        dcp2,
                        c.dcp_interleave,
                    )
                )
                needs_ndecode = needs_ndecode or s2.window > 0
            if a.window > 0:
                windows.add(a.window)
            attn = AttentionCoefficients(
                floor,
                decode_attention_s(1, kvpt, 0.0, rate) if rate > 0 else 0.0,
                None if rate > 0 else kvpt / hbm_bw,
                spec,
                qhd,
                qhd / ps if ps > 0 else 0.0,
                a.window,
                launch,
                c.prefill_floor_s,
                tuple(secs),
            )
            if c.dcp > 1 and dcp_shards_kv(a.kind):
                latent = a.kind in LATENT_KINDS
                dcp = DcpCoefficients(latent, _dcp_charges(c, a))
                dcp_prefill_fallback = dcp_prefill_fallback or latent

        nv_idx: list[int] = []
        nic_idx: list[int] = []
        for coll in lp.collectives:
            per_token = coll.bytes_per_token
            if coll.routed_by_top_k and lp.top_k > 0 and routed_a2a:
                per_token *= lp.top_k
            ch = _coll(c.collectives.get((coll.op, coll.group)), per_token)
            if ch not in coll_index:
                coll_index[ch] = len(colls)
                colls.append(ch)
            (nic_idx if ch.to_nic else nv_idx).append(coll_index[ch])
        kinds.append(
            KindCoefficients(
                lp.count,
                G,
                R,
                weight / hbm_bw,
                lp.elementwise_bytes_per_token / tp / hbm_bw,
                rf,
                rinv,
                expert,
                attn,
                tuple(nv_idx),
                tuple(nic_idx),
                dcp,
                lp.recurrent_prefill_flops_per_token / tp if rinv > 0 or rf > 0 else 0.0,
                c.gemm_read_overlap,
            )
        )

    head = c.plan.head
    fp = object.__new__(FastPlan)
    fp.kinds = tuple(kinds)
    fp.colls = tuple(colls)
    fp.specs = tuple(specs)
    fp.windows = tuple(sorted(windows))
    fp.head_g = head.dense_flops_per_token / tp if head.dense_flops_per_token else 0.0
    fp.head_h = head.dense_weight_bytes / tp / hbm_bw
    fp.inv_pe = 1.0 / pe
    fp.m_half = c.m_half if c.m_half > 0 else 0.0
    fp.linear_m_half = c.linear_m_half if c.linear_m_half > 0 else 0.0
    fp.sm_count = c.sm_count
    fp.width = c.uniform_decode_width
    fp.capture = c.capture_tokens
    fp.funnel = funnel
    launch_s = c.host_launch_per_kernel_s * c.plan.total_kernels
    plan = c.plan

    def dispatch(mode: str) -> float:
        return (
            graph_dispatch_s(
                mode, c.host_replay_s, c.host_eager_per_layer_s, plan.piecewise_segments, plan.total_layers
            )
            + launch_s
        )

    # The same floats the reference adds (host_dispatch_s + the launch term).
    fp.host = (dispatch(c.graph_decode), dispatch(c.graph_other), dispatch("eager"))
    fp.empty_host = (host_dispatch_s(c, [], 0), host_dispatch_s(c, [0], 0))
    fp.per_request = c.host_per_request_s  # lifting.usable refused a negative one
    fp.needs_ndecode = needs_ndecode
    fp.pcp_prefill_fallback = c.pcp > 1
    fp.dcp_prefill_fallback = dcp_prefill_fallback
    fp.hot = (
        fp.width,
        fp.capture,
        *fp.host,
        fp.specs,
        fp.windows,
        fp.sm_count,
        fp.m_half,
        fp.inv_pe,
        fp.funnel,
        fp.pcp_prefill_fallback or fp.dcp_prefill_fallback,
        needs_ndecode,
        fp.linear_m_half,
    )  # one unpack per call
    fp._stages = {}
    fp._frozen = True
    return fp

"""Pricing one step: the reference implementation of spec §4 (plan walk per layer kind).

All terms are per rank, in seconds. ``price_step`` returns the five resource totals
(untruncated) and the overlapped layer sum; ``Kernel.step_time`` turns them into a
``StepEstimate`` with integer-nanosecond edges as the Go kernel does.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from latencykernel.kernel.constants import StepConstants
from latencykernel.plan import LATENT_KINDS, LayerPlan, PlannedAttention
from latencykernel.price.attention import (
    causal_flops_per_qk_dim,
    decode_attention_s,
    layer_kv_bytes_per_token,
    pcp_causal_flops_per_qk_dim,
    pcp_local_tokens,
    pcp_rank_chunks,
    prefill_attention_s,
    secondary_kv_bytes_per_token,
    secondary_read_tokens,
    windowed_causal_flops_per_qk_dim,
)
from latencykernel.price.collective import collective_time_s
from latencykernel.price.context import (
    ACTIVATION_BYTES,
    dcp_decode_payload_bytes_per_row,
    dcp_rank_tokens,
    decode_rank_read_tokens,
    latent_context_gather_bytes,
    pcp_kv_gather_bytes,
)
from latencykernel.price.experts import experts_touched, routed_expert_flops
from latencykernel.price.host import graph_dispatch_s, step_requests_host_s
from latencykernel.price.overlap import layer_stage_s
from latencykernel.price.ramp import efficiency, gemm_read_beyond_compute_s, shape_efficiency, sm_budget_derate
from latencykernel.price.recurrent import recurrent_update_s
from latencykernel.resolve.context import dcp_shards_kv
from latencykernel.resolve.layout import Group, Op

__all__ = ["price_step", "host_dispatch_s", "decode_kv_tokens", "SM", "HBM", "NVLINK", "NIC", "HOST"]

SM, HBM, NVLINK, NIC, HOST = 0, 1, 2, 3, 4


def host_dispatch_s(c: StepConstants, scheduled: Sequence[int], tokens: int) -> float:
    """CPU dispatch of the step's graph (no per-kernel term): the decode graph for an empty
    or uniform-decode batch, the other mode otherwise; eager above the capture ceiling."""
    w = c.uniform_decode_width
    uniform = len(scheduled) == 0 or all(s == w for s in scheduled)
    mode = c.graph_decode if uniform else c.graph_other
    if tokens > c.capture_tokens:
        mode = "eager"
    return graph_dispatch_s(
        mode, c.host_replay_s, c.host_eager_per_layer_s, c.plan.piecewise_segments, c.plan.total_layers
    )


def _charge(c: StepConstants, op: Op, group: Group, nbytes: float, acc: list[float], times: int = 1) -> None:
    """Charge ``times`` launches of one collective of ``nbytes`` to its link."""
    cost = c.collectives.get((op, group))
    if cost is None:
        acc[NVLINK] = math.inf
        return
    if cost.crosses_nodes:
        t = collective_time_s(nbytes * cost.span, cost.transition_bytes_per_s, cost.peak_bytes_per_s, cost.floor_s)
        acc[NIC] += t if times == 1 else times * t
    else:
        t = collective_time_s(nbytes, cost.transition_bytes_per_s, cost.peak_bytes_per_s, cost.floor_s)
        acc[NVLINK] += t if times == 1 else times * t


def decode_kv_tokens(c: StepConstants, a: PlannedAttention, contexts: Sequence[int]) -> float:
    """Cached tokens one layer's primary decode attention reads on the busiest rank, summed
    over decodes (``price.context.decode_rank_read_tokens``), or −1 when no per-request
    bound applies (the caller uses the raw context sum).

    The bounds, by the attention's kind (``PlannedAttention.read_top_k`` / ``read_window``):
    a sparse selection, a sliding window, and the DCP shard where DCP shards this cache.
    """
    topk = a.read_top_k
    dcp = c.dcp if c.dcp > 1 and dcp_shards_kv(a.kind) else 1
    window = a.read_window
    if topk <= 0 and dcp <= 1 and window <= 0:
        return -1.0
    return decode_rank_read_tokens(contexts, topk, window, a.compress_ratio, dcp, c.dcp_interleave)


def _dcp_decode_collectives(c: StepConstants, lp: LayerPlan, rows: int, acc: list[float]) -> None:
    """The DCP decode collectives of one layer (payloads: ``dcp_decode_payload_bytes_per_row``;
    which collective carries each is vLLM's DCP attention's rule)."""
    a = lp.primary
    assert a is not None
    query, tp_query, a2a, lse, reduce = dcp_decode_payload_bytes_per_row(
        a.q_heads, a.head_dim, a.kv_lora_rank, a.kind in LATENT_KINDS, c.tp, c.dcp, c.pcp
    )
    if c.pcp <= 1:
        _charge(c, Op.ALL_GATHER, Group.DCP, rows * query, acc)  # query gather
    elif c.dcp > c.pcp:
        _charge(c, Op.ALL_GATHER, Group.TP, rows * tp_query, acc)
    if c.dcp_combine == "a2a":
        _charge(c, Op.ALL2ALL, Group.DCP, rows * a2a, acc)  # output + fp32 LSE
        return
    _charge(c, Op.ALL_GATHER, Group.DCP, rows * lse, acc)  # fp32 log-sum-exp
    _charge(c, Op.ALL_REDUCE if c.pcp > 1 else Op.REDUCE_SCATTER, Group.DCP, rows * reduce, acc)


def _dcp_prefill_gathers(c: StepConstants, lp: LayerPlan, prefills: list[tuple[int, int]], acc: list[float]) -> None:
    """A latent cache under DCP is gathered back for each run of prefills with a prefix
    (``price.context.latent_context_gather_bytes``)."""
    a = lp.primary
    assert a is not None
    for count, nbytes in latent_context_gather_bytes(prefills, a.head_dim * ACTIVATION_BYTES, c.mla_context_chunk):
        _charge(c, Op.ALL_GATHER, Group.DCP, nbytes, acc, count)


def _pcp_gathers(c: StepConstants, lp: LayerPlan, prefill_tokens: int, acc: list[float]) -> None:
    """The PCP all-gathers of one layer's new KV (``price.context.pcp_kv_gather_bytes``)."""
    a = lp.primary
    assert a is not None
    indexers = [s.kv_heads * s.head_dim for s in lp.attentions if not s.holds_kv and s.kv_heads > 0 and s.head_dim > 0]
    for nbytes in pcp_kv_gather_bytes(prefill_tokens, c.pcp, a.head_dim, a.kv_lora_rank, indexers):
        _charge(c, Op.ALL_GATHER, Group.PCP, nbytes, acc)


def price_step(
    c: StepConstants, scheduled: Sequence[int], computed: Sequence[int], decode_threshold: int, sm_budget: int
) -> tuple[list[float], float]:
    """([sm, hbm, nvlink, nic, host] seconds, overlapped seconds without host) for one step."""
    per = [0.0, 0.0, 0.0, 0.0, 0.0]
    batch_tokens = sum(scheduled)
    if batch_tokens == 0:
        per[HOST] = host_dispatch_s(c, scheduled, 0)
        return per, 0.0

    # Classify requests.
    # Each prefill's attention: (causal FLOPs per qk dim, the ramp of its own query tokens,
    # its chunks on every PCP rank).
    attention: list[tuple[float, float, list[list[tuple[int, int]]]]] = []
    ranks = max(c.pcp, 1)
    decode_ctx_tokens = 0
    contexts: list[int] = []
    prefills: list[tuple[int, int]] = []
    n_prefill = n_decode = decode_tokens = prefill_tokens = withheld = 0
    any_context = False
    for s, comp in zip(scheduled, computed):
        ctx = comp + s
        if ctx <= 0:
            continue
        any_context = any_context or comp > 0
        if s > decode_threshold:
            n_prefill += 1
            pairs = causal_flops_per_qk_dim(s, comp)
            local = s
            lt = pcp_local_tokens(s, c.pcp, c.dcp)
            if lt >= 0:
                local = lt
                pairs = pcp_causal_flops_per_qk_dim(s, comp, c.pcp, c.dcp)
            attention.append((pairs, efficiency(local, c.eps_max, c.m_half), pcp_rank_chunks(s, comp, c.pcp, c.dcp)))
            prefill_tokens += local
            withheld += s - local
            prefills.append((s, comp))
        else:
            n_decode += 1
            decode_tokens += s
            decode_ctx_tokens += ctx
            contexts.append(ctx)
    T = batch_tokens - withheld

    sm_derate = sm_budget_derate(c.sm_count, sm_budget)
    peak, hbm_bw, tp = c.peak_flops_per_s, c.hbm_bytes_per_s, c.tp
    ramp = efficiency(T, c.eps_max, c.m_half)
    # The dense linear layers (every GEMM but the routed experts, and the head) at their own
    # half point where the coefficients state one (``gemm_m_half_linear_<dtype>``).
    linear_ramp = ramp if c.linear_m_half == c.m_half else efficiency(T, c.eps_max, c.linear_m_half)
    layout = c.layout
    # KNOWN DIVERGENCE D3: under PCP the funnel multiplies routed tokens by DP, not PCP.
    funnel = layout.dp if (layout.moe_group > 1 and layout.dp > 1) else 1
    routed_tokens = T * funnel
    dp_slice = c.expert_tensor_shards / tp if layout.expert_width <= 1 else 1.0
    routed_a2a = layout.routed_all2all()
    layer_kv = layer_kv_bytes_per_token(c.kv_bytes_per_token, c.kv_layers)
    overlap = 0.0

    for li, lp in enumerate(c.plan.layers):
        flops = dense_shaped = weight_bytes = kv_bytes = 0.0
        attn_sm = attn_hbm = recurrent_sm = 0.0
        saved_sm = saved_hbm = 0.0  # floors the one-launch merge drops (mixed batches)
        routed_flops = routed_bytes = 0.0
        acc = [0.0, 0.0, 0.0, 0.0, 0.0]

        if c.shape_aware:
            for g in lp.gemms:
                n, k = (g.n / tp, g.k) if g.shard_n else (g.n, g.k / tp)
                eff = shape_efficiency(T, n, k, c.eps_max, c.linear_m_half, c.n_half, c.k_half)
                if eff > 0:
                    dense_shaped += T * g.flops_per_token / tp / (peak * eff)
        else:
            flops += T * lp.dense_flops_per_token / tp
        weight_bytes += lp.dense_weight_bytes / tp

        if lp.expert_flops_per_token_per_expert > 0:
            # KNOWN DIVERGENCE D1: routed-expert FLOPs are not divided by the tensor-parallel
            # slice (vLLM splits each expert's matrices over TP). Kept from the Go kernel,
            # where dividing scored worse end to end; see docs/divergences.md.
            routed_flops += routed_expert_flops(
                routed_tokens,
                lp.top_k,
                c.local_expert_share,
                lp.expert_flops_per_token_per_expert,
                c.moe_imbalance,
                dp_slice,
            )
            routed_bytes += (
                lp.expert_weight_bytes_per_expert
                / c.expert_tensor_shards
                * experts_touched(
                    int(routed_tokens + 0.5), c.total_experts, lp.top_k, c.experts_per_rank, c.moe_concentration
                )
            )
            flops += T * lp.shared_expert_flops_per_token / tp
            weight_bytes += lp.shared_expert_weight_bytes / tp

        a = lp.primary
        if a is not None and a.q_heads > 0:
            floor, rate = c.primary_pairs[li]
            kv_fallback = False
            tok = 0.0
            if n_decode > 0:
                tok = decode_kv_tokens(c, a, contexts)
                if tok < 0:
                    tok = decode_ctx_tokens
                if rate > 0:
                    attn_hbm += decode_attention_s(tok, layer_kv, floor, rate)
                else:
                    kv_fallback = True
            if (
                n_decode > 0
                and n_prefill > 0
                and a.kind not in LATENT_KINDS
                and c.dcp <= 1
                and not c.nvfp4_native
                and rate > 0
                and c.prefill_scale > 0
            ):
                # FlashAttention runs a mixed batch as one varlen launch: keep the larger floor.
                # The merge lowers the resource totals; the overlapped stage is taken over the
                # floors before it, so that adding a request never lowers the overlap (moving a
                # floor off the bottleneck resource would).
                if floor < c.prefill_floor_s:
                    attn_hbm -= floor
                    saved_hbm = floor
                else:
                    attn_sm -= c.prefill_floor_s
                    saved_sm = c.prefill_floor_s
            if n_prefill > 0:
                # Each prefill at the efficiency of its own query tokens (scaled by the
                # registry's prefill-attention scale; the plain ramp without one).
                ps = c.prefill_scale if c.prefill_scale > 0 else 1.0
                if a.window > 0:  # the slowest PCP rank under the window (one rank without PCP)
                    work = max(
                        sum(
                            prefill_attention_s(
                                windowed_causal_flops_per_qk_dim(chunks[r], a.window),
                                a.q_heads,
                                a.head_dim,
                                tp,
                                peak,
                                eff * ps,
                            )
                            for _, eff, chunks in attention
                        )
                        for r in range(ranks)
                    )
                else:
                    work = sum(
                        prefill_attention_s(pairs, a.q_heads, a.head_dim, tp, peak, eff * ps)
                        for pairs, eff, _ in attention
                    )
                if c.prefill_scale > 0:
                    attn_sm += c.prefill_floor_s + work * sm_derate
                else:
                    attn_sm += work * sm_derate
            if n_decode > 0:
                for s2, (f2, r2) in zip((x for x in lp.attentions if not x.holds_kv), c.secondary_pairs[li]):
                    if r2 <= 0 or a.kv_heads * a.head_dim <= 0:
                        continue
                    per_tok = secondary_kv_bytes_per_token(layer_kv, s2.kv_heads, s2.head_dim, a.kv_heads, a.head_dim)
                    t2 = secondary_read_tokens(decode_ctx_tokens, n_decode, s2.window, s2.compress_ratio)
                    if c.dcp > 1 and dcp_shards_kv(s2.kind):
                        t2 = dcp_rank_tokens(int(t2 + 0.5), c.dcp, c.dcp_interleave)
                    attn_hbm += decode_attention_s(t2, per_tok, f2, r2)
            if kv_fallback:  # no decode rate: the raw KV bytes at HBM bandwidth, no floor
                kv_bytes = tok * layer_kv

        elementwise = T * lp.elementwise_bytes_per_token / tp
        if lp.recurrent_kind and lp.recurrent_kind in c.recurrent_by_kind:
            rf, rr = c.recurrent_by_kind[lp.recurrent_kind]
            recurrent_sm += recurrent_update_s(
                decode_tokens,
                T - decode_tokens,
                rf,
                rr,
                lp.recurrent_prefill_flops_per_token / tp,
                peak,
                ramp / sm_derate if sm_derate > 0 else ramp,
            )

        gemm_sm = (flops / (peak * linear_ramp) * sm_derate if flops > 0 else 0.0) + dense_shaped * sm_derate
        weight_s = weight_bytes / hbm_bw
        hidden_read_s = 0.0  # weight read under the GEMM's own compute: in the stage, not the total
        if c.gemm_read_overlap:
            extra_s = gemm_read_beyond_compute_s(gemm_sm, weight_s)
            hidden_read_s = weight_s - extra_s
            weight_s = extra_s
        dense_sm = gemm_sm + recurrent_sm + attn_sm
        dense_hbm = weight_s + (kv_bytes + elementwise) / hbm_bw + attn_hbm
        routed_sm = routed_flops / (peak * ramp) * sm_derate if routed_flops > 0 else 0.0
        routed_hbm = routed_bytes / hbm_bw
        sm = dense_sm + routed_sm
        hbm = dense_hbm + routed_hbm

        for coll in lp.collectives:
            nbytes = T * coll.bytes_per_token
            if coll.routed_by_top_k and lp.top_k > 0 and routed_a2a:
                nbytes *= lp.top_k
            _charge(c, coll.op, coll.group, nbytes, acc)
        if a is not None and a.q_heads > 0:
            if c.dcp > 1 and dcp_shards_kv(a.kind):
                latent = a.kind in LATENT_KINDS
                rows = decode_tokens if latent else (batch_tokens if any_context else 0)
                if rows > 0:
                    _dcp_decode_collectives(c, lp, rows, acc)
                if latent and n_prefill > 0:
                    _dcp_prefill_gathers(c, lp, prefills, acc)
            if prefill_tokens > 0 and c.pcp > 1:
                _pcp_gathers(c, lp, prefill_tokens, acc)

        nvlink, nic = acc[NVLINK], acc[NIC]
        n = lp.count
        overlap += n * layer_stage_s(sm + saved_sm, hbm + saved_hbm + hidden_read_s, nvlink, nic, routed_sm, routed_hbm)
        per[SM] += n * sm
        per[HBM] += n * hbm
        per[NVLINK] += n * nvlink
        per[NIC] += n * nic

    head = c.plan.head
    head_sm = (
        T * head.dense_flops_per_token / tp / (peak * linear_ramp) * sm_derate if head.dense_flops_per_token else 0.0
    )
    head_hbm = head.dense_weight_bytes / tp / hbm_bw
    per[SM] += head_sm
    per[HBM] += head_hbm
    overlap += max(head_sm, head_hbm)
    per[HOST] = host_dispatch_s(c, scheduled, batch_tokens) + c.host_launch_per_kernel_s * c.plan.total_kernels
    if c.host_per_request_s > 0:
        per[HOST] += step_requests_host_s(sum(1 for s in scheduled if s > 0), c.host_per_request_s)
    return per, overlap

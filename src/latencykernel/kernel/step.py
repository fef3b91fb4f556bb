"""Pricing one step: the reference implementation of spec §4 (plan walk per layer kind).

All terms are per rank, in seconds. ``price_step`` returns the five resource totals
(untruncated) and the overlapped layer sum; ``Kernel.step_time`` turns them into a
``StepEstimate`` with integer-nanosecond edges as the Go kernel does.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from latencykernel.kernel.constants import StepConstants
from latencykernel.plan import LATENT_KINDS, LayerPlan
from latencykernel.price.attention import (
    causal_flops_per_qk_dim,
    decode_read_tokens,
    pcp_causal_flops_per_qk_dim,
    pcp_local_tokens,
    pcp_rank_chunks,
    windowed_causal_flops_per_qk_dim,
)
from latencykernel.price.collective import collective_time_s
from latencykernel.price.experts import experts_touched
from latencykernel.price.host import graph_dispatch_s
from latencykernel.price.ramp import efficiency, shape_efficiency
from latencykernel.resolve.context import dcp_rank_tokens, dcp_shards_kv
from latencykernel.resolve.layout import Group, Op

__all__ = ["price_step", "host_dispatch_s", "SM", "HBM", "NVLINK", "NIC", "HOST"]

SM, HBM, NVLINK, NIC, HOST = 0, 1, 2, 3, 4
ACT = 2  # bf16 activations


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


def _charge(c: StepConstants, op: Op, group: Group, nbytes: float, acc: list[float]) -> None:
    cost = c.collectives.get((op, group))
    if cost is None:
        acc[NVLINK] = math.inf
        return
    if cost.crosses_nodes:
        acc[NIC] += collective_time_s(
            nbytes * cost.span, cost.transition_bytes_per_s, cost.peak_bytes_per_s, cost.floor_s
        )
    else:
        acc[NVLINK] += collective_time_s(nbytes, cost.transition_bytes_per_s, cost.peak_bytes_per_s, cost.floor_s)


def _decode_kv_tokens(
    c: StepConstants, kind: str, index_topk: int, window: int, compress_ratio: int, contexts: list[int]
) -> float:
    """Cached tokens one layer's primary decode attention reads on the busiest rank, summed
    over decodes, or −1 when no per-request bound applies (the caller uses the raw sum).

    Per request, selection first: a sparse layer reads its top-k T (index_topk, else its
    window) of the context, plus (ctx − T) / compress_ratio compressed entries beyond them;
    then the shard: under DCP the busiest rank holds its interleaved share of that count.
    """
    # KNOWN DIVERGENCE D9: a compressed sparse layer without top-k reads its whole context.
    topk = (index_topk if index_topk > 0 else window) if kind == "sparse_mla" else 0
    dcp_on = c.dcp > 1 and dcp_shards_kv(kind)
    # A sliding-window layer reads at most its window (vLLM's FlashAttention with
    # window_size; the registry's swa pair was fitted on min(context, window)). The Go
    # kernel reads the whole context here; we price the engine. See docs/divergences.md.
    windowed = kind == "swa" and window > 0
    if topk <= 0 and not dcp_on and not windowed:
        return -1.0
    total = 0.0
    for ctx in contexts:
        read = decode_read_tokens(ctx, topk, window if windowed else 0, compress_ratio)
        if dcp_on:
            read = dcp_rank_tokens(int(read + 0.5), c.dcp, c.dcp_interleave)
        total += read
    return total


def _dcp_decode_collectives(c: StepConstants, lp: LayerPlan, rows: int, acc: list[float]) -> None:
    a = lp.primary
    assert a is not None
    latent = a.kind in LATENT_KINDS
    h, qw = a.q_heads, a.head_dim
    ow = a.kv_lora_rank if latent and a.kv_lora_rank > 0 else a.head_dim
    if c.pcp <= 1:
        ah = h / c.tp * c.dcp
        _charge(c, Op.ALL_GATHER, Group.DCP, rows * ah * qw * ACT, acc)  # query gather
    else:
        ah = h / c.tp
        if c.dcp > c.pcp:
            ah = h
            _charge(c, Op.ALL_GATHER, Group.TP, rows * h * qw * ACT, acc)
    if c.dcp_combine == "a2a":
        _charge(c, Op.ALL2ALL, Group.DCP, rows * ah * (ow + 2) * ACT, acc)  # output + fp32 LSE
        return
    _charge(c, Op.ALL_GATHER, Group.DCP, c.dcp * rows * ah * 4, acc)  # fp32 log-sum-exp
    _charge(c, Op.ALL_REDUCE if c.pcp > 1 else Op.REDUCE_SCATTER, Group.DCP, rows * ah * ow * ACT, acc)


def _dcp_prefill_gathers(c: StepConstants, lp: LayerPlan, prefills: list[tuple[int, int]], acc: list[float]) -> None:
    """A latent cache under DCP is gathered back for each run of prefills with a prefix,
    in chunks of the MLA context-chunk size."""
    a = lp.primary
    assert a is not None
    width = a.head_dim * ACT

    def gather(run: int) -> None:
        if run <= 0:
            return
        chunks = math.ceil(run / c.mla_context_chunk)
        for _ in range(chunks):
            _charge(c, Op.ALL_GATHER, Group.DCP, run * width / chunks, acc)

    run = 0
    for _, computed in sorted(prefills, key=lambda p: p[0]):
        if computed <= 0:
            gather(run)
            run = 0
        else:
            run += computed
    gather(run)


def _pcp_gathers(c: StepConstants, lp: LayerPlan, prefill_tokens: int, acc: list[float]) -> None:
    a = lp.primary
    assert a is not None
    rows = c.pcp * prefill_tokens
    lora = a.kv_lora_rank
    if 0 < lora < a.head_dim:
        _charge(c, Op.ALL_GATHER, Group.PCP, rows * lora * ACT, acc)
        _charge(c, Op.ALL_GATHER, Group.PCP, rows * (a.head_dim - lora) * ACT, acc)
    else:
        _charge(c, Op.ALL_GATHER, Group.PCP, rows * a.head_dim * ACT, acc)
    for s in lp.attentions:
        if not s.holds_kv and s.kv_heads > 0 and s.head_dim > 0:
            _charge(c, Op.ALL_GATHER, Group.PCP, rows * s.kv_heads * s.head_dim * ACT, acc)


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
    causal = 0.0
    decode_kv_tokens = 0
    rank_chunks: list[list[tuple[int, int]]] = [[] for _ in range(max(c.pcp, 1))]
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
            causal += pairs
            prefill_tokens += local
            withheld += s - local
            for r, rc in enumerate(pcp_rank_chunks(s, comp, c.pcp, c.dcp)):
                rank_chunks[r].extend(rc)
            prefills.append((s, comp))
        else:
            n_decode += 1
            decode_tokens += s
            decode_kv_tokens += ctx
            contexts.append(ctx)
    T = batch_tokens - withheld

    budget = sm_budget if sm_budget > 0 and c.sm_count > 0 else c.sm_count
    sm_derate = c.sm_count / budget if 0 < budget < c.sm_count else 1.0
    peak, hbm_bw, tp = c.peak_flops_per_s, c.hbm_bytes_per_s, c.tp
    ramp = efficiency(T, c.eps_max, c.m_half)
    layout = c.layout
    # KNOWN DIVERGENCE D3: under PCP the funnel multiplies routed tokens by DP, not PCP.
    funnel = layout.dp if (layout.moe_group > 1 and layout.dp > 1) else 1
    routed_tokens = T * funnel
    dp_slice = c.expert_tensor_shards / tp if layout.expert_width <= 1 else 1.0
    routed_a2a = layout.routed_all2all()
    overlap = 0.0

    for li, lp in enumerate(c.plan.layers):
        flops = dense_shaped = weight_bytes = kv_bytes = 0.0
        attn_sm = attn_hbm = recurrent_sm = 0.0
        routed_flops = routed_bytes = 0.0
        acc = [0.0, 0.0, 0.0, 0.0, 0.0]

        if c.shape_aware:
            for g in lp.gemms:
                n, k = (g.n / tp, g.k) if g.shard_n else (g.n, g.k / tp)
                eff = shape_efficiency(T, n, k, c.eps_max, c.m_half, c.n_half, c.k_half)
                if eff > 0:
                    dense_shaped += T * g.flops_per_token / tp / (peak * eff)
        else:
            flops += T * lp.dense_flops_per_token / tp
        weight_bytes += lp.dense_weight_bytes / tp

        if lp.expert_flops_per_token_per_expert > 0:
            routed_per_rank = routed_tokens * lp.top_k * c.local_expert_share
            # KNOWN DIVERGENCE D1: routed-expert FLOPs are not divided by the tensor-parallel
            # slice (vLLM splits each expert's matrices over TP). Kept from the Go kernel,
            # where dividing scored worse end to end; see docs/divergences.md.
            routed_flops += routed_per_rank * lp.expert_flops_per_token_per_expert * c.moe_imbalance / dp_slice
            routed_bytes += (
                lp.expert_weight_bytes_per_expert
                / c.expert_tensor_shards
                * experts_touched(int(routed_tokens + 0.5), c.total_experts, lp.top_k, c.experts_per_rank)
            )
            flops += T * lp.shared_expert_flops_per_token / tp
            weight_bytes += lp.shared_expert_weight_bytes / tp

        a = lp.primary
        if a is not None and a.q_heads > 0:
            floor, rate = c.primary_pairs[li]
            kv_fallback = False
            tok = 0.0
            if n_decode > 0:
                tok = _decode_kv_tokens(c, a.kind, a.index_topk, a.window, a.compress_ratio, contexts)
                if tok < 0:
                    tok = decode_kv_tokens
                if rate > 0:
                    attn_hbm += floor + tok * c.kv_bytes_per_token / max(c.kv_layers, 1) / rate
                else:
                    kv_fallback = True
            if a.window > 0:  # the slowest PCP rank under the window (one rank without PCP)
                layer_causal = max(windowed_causal_flops_per_qk_dim(rc, a.window) for rc in rank_chunks)
            else:
                layer_causal = causal
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
                if floor < c.prefill_floor_s:
                    attn_hbm -= floor
                else:
                    attn_sm -= c.prefill_floor_s
            if n_prefill > 0:
                if c.prefill_scale > 0:
                    scale = ramp * c.prefill_scale
                    attn_sm += (
                        c.prefill_floor_s + layer_causal * a.q_heads * a.head_dim / tp / (peak * scale) * sm_derate
                    )
                else:
                    flops += layer_causal * a.q_heads * a.head_dim / tp
            if n_decode > 0:
                for s2, (f2, r2) in zip((x for x in lp.attentions if not x.holds_kv), c.secondary_pairs[li]):
                    if r2 <= 0 or a.kv_heads * a.head_dim <= 0:
                        continue
                    per_tok = (
                        c.kv_bytes_per_token
                        / max(c.kv_layers, 1)
                        * (s2.kv_heads * s2.head_dim)
                        / (a.kv_heads * a.head_dim)
                    )
                    t2: float = decode_kv_tokens
                    if s2.window > 0:
                        t2 = min(t2, s2.window * n_decode)
                    if s2.compress_ratio > 1:
                        t2 /= s2.compress_ratio
                    if c.dcp > 1 and dcp_shards_kv(s2.kind):
                        t2 = dcp_rank_tokens(int(t2 + 0.5), c.dcp, c.dcp_interleave)
                    attn_hbm += f2 + t2 * per_tok / r2
            if kv_fallback:
                kv_bytes = tok * c.kv_bytes_per_token / max(c.kv_layers, 1)

        elementwise = T * lp.elementwise_bytes_per_token / tp
        if lp.recurrent_kind and lp.recurrent_kind in c.recurrent_by_kind:
            rf, rr = c.recurrent_by_kind[lp.recurrent_kind]
            recurrent_sm += rf + T / rr

        dense_sm = (
            (flops / (peak * ramp) * sm_derate if flops > 0 else 0.0)
            + dense_shaped * sm_derate
            + recurrent_sm
            + attn_sm
        )
        dense_hbm = (weight_bytes + kv_bytes + elementwise) / hbm_bw + attn_hbm
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
        stage = max(sm - routed_sm, hbm - routed_hbm, nvlink, nic) + routed_sm + routed_hbm
        n = lp.count
        overlap += n * stage
        per[SM] += n * sm
        per[HBM] += n * hbm
        per[NVLINK] += n * nvlink
        per[NIC] += n * nic

    head = c.plan.head
    head_sm = T * head.dense_flops_per_token / tp / (peak * ramp) * sm_derate if head.dense_flops_per_token else 0.0
    head_hbm = head.dense_weight_bytes / tp / hbm_bw
    per[SM] += head_sm
    per[HBM] += head_hbm
    overlap += max(head_sm, head_hbm)
    per[HOST] = host_dispatch_s(c, scheduled, batch_tokens) + c.host_launch_per_kernel_s * c.plan.total_kernels
    return per, overlap

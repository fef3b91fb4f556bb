"""The fast step price: the reference walk (``step.py``) with everything batch-independent
folded into plain numbers at construction.

Why it can be fused. With the ramp eff(T) = eps·T/(T + m_half), every GEMM-like SM term
T·F/(peak·eff(T)) equals F·(T + m_half)/(peak·eps): linear in Y = (T + m_half)/(peak·eps).
Shape-aware ramps only add a constant factor per GEMM. Weight reads are constants,
elementwise bytes and recurrent updates are linear in T, a collective is
max(floor + b/r_transition, b/r_peak) of bytes linear in T, and the routed weight read is
local·(1 − q^T). So a layer kind is a handful of precomputed coefficients, and a batch
enters only through T = Σ scheduled, the decode context sum and counts — plus, for the kinds
that need it (sliding window, sparse top-k, DCP), a per-request transform of the decode
contexts, done with C builtins where the law allows.

What it covers: every deployment whose graph collectives all have a price; decode-only and
mixed batches. What it hands back to the reference (``None``): prefills under PCP (the
zigzag split) and prefills on a latent-attention layer under DCP (context gathers). ``build_fast_plan``
returns ``None`` for a deployment it does not cover at all (a missing collective, a zero
peak or ramp), and the kernel then always uses the reference.

Exactness. The fused arithmetic differs from the reference by a few ulps (observed below
1e-15 relative; the tests hold it to 1e-12). The Go kernel truncates each resource to whole
nanoseconds, and many values sit exactly on an integer nanosecond (the coefficients are
round numbers), so a difference of one ulp can move a truncation by 1 ns: the fast path is
within 1 ns per resource of the reference, and the tests say so. The vectorised path
(``vector.py``) repeats this module's arithmetic operation for operation, so
``step_times`` equals ``step_time`` bit for bit.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import compress, repeat
from operator import add, floordiv, ge, mod, neg
from typing import Any, NamedTuple

from latencykernel.batch import RESOURCES, StepEstimate
from latencykernel.price.attention import (
    causal_flops_per_qk_dim,
    secondary_read_tokens,
    windowed_causal_flops_per_qk_dim,
)
from latencykernel.price.collective import LARGE_MESSAGE_BYTES
from latencykernel.price.context import dcp_rank_tokens, decode_rank_read_tokens
from latencykernel.price.host import step_requests_host_s
from latencykernel.price.ramp import sm_budget_derate
from latencykernel.price.recurrent import chunked_prefill_share_s

__all__ = [
    "FastPlan",
    "KindCoefficients",
    "AttentionCoefficients",
    "SecondaryCoefficients",
    "ExpertCoefficients",
    "CollectiveCoefficients",
    "DcpCoefficients",
    "ReadLaw",
]

_NS = 1e-9
_STAGES = 1024  # batch shapes whose context-free part a plan keeps (FastPlan._stage; ~1 KB each)
_tuple_new = tuple.__new__
_SM, _HBM, _NVLINK, _NIC, _HOST = RESOURCES

# Decode-read transforms (how a layer's primary attention bounds each request's read).
T_WINDOW, T_DCP, T_TOPK, T_GENERIC = 1, 2, 3, 4


class ReadLaw(NamedTuple):
    """How one primary attention bounds each decode's read: ``law`` (T_WINDOW, T_DCP, T_TOPK
    or T_GENERIC) picks a C-speed form of ``price.context.decode_rank_read_tokens`` with
    these arguments."""

    law: int
    top_k: int
    window: int
    compress_ratio: int
    dcp: int
    interleave: int


class CollectiveCoefficients(NamedTuple):
    """One collective charge, ``price.collective.collective_time_s`` folded:
    t = max(floor + b·inv_transition, b·inv_peak), b = units × bytes_per_unit (× span when
    it crosses nodes, then charged to the NIC)."""

    floor_s: float
    inv_peak_s_per_byte: float
    inv_transition_s_per_byte: float
    bytes_per_unit: float
    to_nic: bool


class ExpertCoefficients(NamedTuple):
    """Routed weight read seconds = hbm_s · (1 − miss(routed_tokens)), ``experts_touched``
    folded: miss(n) = q ** n when alpha is 0, else (1 + n · rate) ** −alpha
    (``price.experts.expert_miss_fraction``); q = ``expert_miss_probability``, alpha the
    routing concentration, rate = −ln q / alpha; hbm_s = one expert's weight bytes per rank ×
    local experts / HBM bandwidth."""

    q: float
    hbm_s: float
    alpha: float
    rate: float


class SecondaryCoefficients(NamedTuple):
    """A secondary (indexer) attention's decode read: ``price.attention.decode_attention_s``
    with s_per_read_token = decode_attention_s(1, secondary_kv_bytes_per_token, 0, rate) and
    the read from ``secondary_read_tokens`` (then the DCP shard when dcp > 1)."""

    floor_s: float
    s_per_read_token: float
    window: int
    compress_ratio: int
    dcp: int
    interleave: int


class AttentionCoefficients(NamedTuple):
    """A layer kind's primary attention.

    floor_s, s_per_read_token   ``decode_attention_s`` folded (s_per_read_token =
                                decode_attention_s(1, layer_kv_bytes_per_token, 0, rate))
    hbm_s_per_read_token        without a decode rate: layer KV bytes / HBM bandwidth, else None
    read_law                    index into ``FastPlan.specs`` (a ``ReadLaw``), or −1 for the raw
                                context sum
    qk_dims, qk_dims_per_scale  n_q·d_h/tp and the same over the prefill-attention scale
                                (``prefill_attention_s`` folded; 0 without a scale)
    window                      sliding window of the prefill FLOPs, or 0
    launch                      FlashAttention's one varlen launch for a mixed batch: 0 none,
                                1 drop the decode floor, 2 drop the prefill floor
    prefill_floor_s             prefill-attention launch floor
    secondaries                 ``SecondaryCoefficients`` of the layer's indexers
    """

    floor_s: float
    s_per_read_token: float
    hbm_s_per_read_token: float | None
    read_law: int
    qk_dims: float
    qk_dims_per_scale: float
    window: int
    launch: int
    prefill_floor_s: float
    secondaries: tuple[SecondaryCoefficients, ...]


class DcpCoefficients(NamedTuple):
    """The DCP decode collectives of a layer, per query row (``dcp_decode_payload_bytes_per_row``)."""

    latent: bool
    charges: tuple[CollectiveCoefficients, ...]


class KindCoefficients(NamedTuple):
    """Everything a step needs of one layer kind, batch-independent.

    n_layers     layers of this kind
    dense_g      dense and shared-expert FLOPs per token per rank (shape-aware: each GEMM's
                 over its ``price.ramp.saturation`` factors of N and K); G·Y·derate is
                 seconds, Y = (T + m_half)/(peak·eps) (= T/(peak·``efficiency``(T)))
    routed_g     the same for routed experts (top-k, local share, imbalance, DP funnel folded in)
    weight_s     weight-read seconds
    elementwise_s_per_token
    rec_floor_s, rec_s_per_token   recurrent update: floor + T / tokens_per_s
    expert       ``ExpertCoefficients`` or None
    attn         ``AttentionCoefficients`` or None
    nv_idx, nic_idx   indices into ``FastPlan.colls`` (the distinct graph collectives)
    dcp          ``DcpCoefficients`` or None
    rec_prefill_g   chunked recurrent prefill FLOPs per prompt token per rank, in units of
                 Y over T (``price.recurrent.recurrent_update_s`` folded); 0: prompt tokens
                 at the decode rate
    read_overlap whether the weight read overlaps the GEMMs' compute
                 (``price.ramp.gemm_read_beyond_compute_s``)
    """

    n_layers: int
    dense_g: float
    routed_g: float
    weight_s: float
    elementwise_s_per_token: float
    rec_floor_s: float
    rec_s_per_token: float
    expert: ExpertCoefficients | None
    attn: AttentionCoefficients | None
    nv_idx: tuple[int, ...]
    nic_idx: tuple[int, ...]
    dcp: DcpCoefficients | None
    rec_prefill_g: float
    read_overlap: bool


class FastPlan:
    """Batch-independent numbers for the fused step price: one typed, immutable coefficient
    table per layer kind (``KindCoefficients``), built by ``build_fast_plan`` from the laws
    and frozen once built.

    kinds    one ``KindCoefficients`` per layer kind, in plan order
    colls    the distinct graph collectives (``CollectiveCoefficients``), charged per token
    specs    the distinct decode-read laws (``ReadLaw``) the kinds' attentions index
    windows  the distinct sliding windows of the prefill FLOPs
    head_g, head_h   the head's FLOPs per token per rank (in units of Y) and weight seconds
    host, empty_host host seconds by graph mode (uniform decode, other, eager; launch term
             included) and for an empty batch (no requests; requests but no tokens)
    per_request  host seconds per request that schedules tokens (price.host.step_requests_host_s)
    """

    __slots__ = (
        "kinds",
        "colls",
        "specs",
        "head_g",
        "head_h",
        "inv_pe",
        "m_half",
        "linear_m_half",
        "sm_count",
        "width",
        "capture",
        "host",
        "empty_host",
        "per_request",
        "funnel",
        "needs_ndecode",
        "pcp_prefill_fallback",
        "dcp_prefill_fallback",
        "windows",
        "hot",
        "_stages",
        "_frozen",
    )

    kinds: tuple[KindCoefficients, ...]
    colls: tuple[CollectiveCoefficients, ...]
    specs: tuple[ReadLaw, ...]
    head_g: float
    head_h: float
    inv_pe: float
    m_half: float
    linear_m_half: float
    sm_count: int
    width: int
    capture: int
    host: tuple[float, float, float]  # uniform decode, other, eager (launch term included)
    empty_host: tuple[float, float]  # no requests; requests but no tokens
    per_request: float  # host seconds per request scheduling tokens (0: no such term)
    funnel: int
    needs_ndecode: bool
    pcp_prefill_fallback: bool
    dcp_prefill_fallback: bool
    windows: tuple[int, ...]
    hot: tuple[Any, ...]  # the fields ``price`` reads, in one unpack
    _stages: dict[tuple[int, bool, int, bool], tuple[Any, ...]]  # _stage by batch shape (a bounded memo)

    def __setattr__(self, name: str, value: object) -> None:
        if hasattr(self, "_frozen"):  # frozen once built (_frozen is assigned last)
            raise AttributeError("FastPlan is immutable")
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        raise AttributeError("FastPlan is immutable")

    # ------------------------------------------------------------------ pricing
    def price(self, S: Sequence[int], C: Sequence[int], th: int, sm_budget: int) -> tuple[float, ...] | None:
        """(sm, hbm, nvlink, nic, host, overlap) seconds untruncated, as ``price_step`` gives
        them (to a few ulps), or None when this batch needs the reference."""
        n = len(S)
        if n == 0:
            return (0.0, 0.0, 0.0, 0.0, self.empty_host[0], 0.0)
        (
            w,
            capture,
            host_uniform,
            host_other,
            host_eager,
            specs,
            windows,
            smc,
            m_half,
            inv_pe,
            funnel,
            fallback,
            needs_ndecode,
            _,
        ) = self.hot
        uniform = S.count(w) == n
        pre = None
        if uniform and w <= th:
            T = w * n
        else:
            T = sum(S)
            if T == 0:
                return (0.0, 0.0, 0.0, 0.0, self.empty_host[1], 0.0)
            if max(S) > th:
                if fallback:  # a prefill under PCP, or one needing DCP context gathers
                    return None
                pre = [(s, c) for s, c in zip(S, C) if s > th]
        sumc = sum(C)
        r = self._priced(n, T, uniform, pre, sumc, S, C, th, sm_budget)
        if self.per_request:
            return _with_requests(r, n - S.count(0), self.per_request)
        return r

    def price_aggregate(
        self, n_dec: int, width: int, sumc_dec: int, S: list[int], C: list[int], th: int, sm_budget: int
    ) -> tuple[float, ...] | None:
        """``price`` of a batch of ``n_dec`` decodes of ``width`` tokens whose computed tokens
        sum to ``sumc_dec``, beside the rows ``S``/``C`` (scheduled, computed: a step's
        prefill chunks, in batch order): what ``price`` gives the whole batch, bit for bit,
        since outside the per-request decode-read laws every term reads the decodes only
        through their count and sums. None where such a law is on (``specs``), ``width`` is
        not a decode (1 <= width <= th), or ``price`` would hand the batch back."""
        if self.specs or not 1 <= width <= th:
            return None
        if not S and n_dec and not self.needs_ndecode:
            # plain decodes: straight to _priced's no-prefill branch (no per-request read law here)
            T = width * n_dec
            r = _finish(
                self._shape_stage(T, width == self.width, sm_budget, sumc_dec > 0), T + sumc_dec, T + sumc_dec, []
            )
            return _with_requests(r, n_dec, self.per_request) if self.per_request else r
        n = n_dec + len(S)
        if n == 0:
            return (0.0, 0.0, 0.0, 0.0, self.empty_host[0], 0.0)
        w = self.width
        uniform = (n_dec == 0 or width == w) and S.count(w) == len(S)
        pre = None
        if uniform and w <= th:
            T = w * n
        else:
            T = width * n_dec + sum(S)
            if T == 0:
                return (0.0, 0.0, 0.0, 0.0, self.empty_host[1], 0.0)
            if S and max(S) > th:  # the decodes are not above th
                if self.pcp_prefill_fallback or self.dcp_prefill_fallback:
                    return None
                pre = [(s, c) for s, c in zip(S, C) if s > th]
        r = self._priced(n, T, uniform, pre, sumc_dec + sum(C), S, C, th, sm_budget)
        if self.per_request:
            return _with_requests(r, n - S.count(0), self.per_request)
        return r

    def _priced(
        self,
        n: int,
        T: int,
        uniform: bool,
        pre: list[tuple[int, int]] | None,
        sumc: int,
        S: Sequence[int],
        C: Sequence[int],
        th: int,
        sm_budget: int,
    ) -> tuple[float, ...]:
        """``price`` from the batch's shape: ``n`` requests, ``T`` tokens, whether every
        request schedules the plan's width, the prefill rows ``pre``, the computed sum;
        ``S``/``C`` are read only by per-request decode-read laws and the count of requests
        with no context (rows not among them are decodes of the plan's width)."""
        _, _, _, _, _, specs, windows, _, m_half, inv_pe, _, _, needs_ndecode, _ = self.hot
        causal = 0.0
        wins: dict[int, float] = {}
        if pre:
            # Mixed: the prefills picked out; the decode aggregates by subtraction. Each
            # prefill's attention FLOPs over peak·efficiency of its own query tokens
            # (price.attention.prefill_attention_s; 1/(peak·efficiency(s)) = (s + m_half)·inv_pe/s).
            tp_ = cp_ = 0
            for s, cc in pre:
                causal += causal_flops_per_qk_dim(s, cc) * ((s + m_half) * inv_pe / s)
                tp_ += s
                cp_ += cc
            for wdw in windows:
                wsum = 0.0
                for s, cc in pre:
                    wsum += windowed_causal_flops_per_qk_dim([(s, cc)], wdw) * ((s + m_half) * inv_pe / s)
                wins[wdw] = wsum
            dec_tokens = T - tp_
            dec_kv = T + sumc - tp_ - cp_
        else:
            dec_tokens = T
            dec_kv = T + sumc
        # Decodes with any context (a request with none at all is skipped, as the reference
        # does): the exact count only where a windowed indexer reads it, else only whether
        # there is one, which is whether their contexts sum above zero.
        n_dec = dec_kv
        if needs_ndecode and dec_kv:
            n_dec = n - (len(pre) if pre else 0) - _zero_requests(S, C)

        # Per-request transforms of the decode contexts, once per distinct law.
        toks: list[float] = []
        if specs and n_dec:
            ctxs = list(map(add, S, C)) if not pre else list(compress(map(add, S, C), map(ge, repeat(th), S)))
            toks = [_transform(spec, ctxs) for spec in specs]

        if pre is None and not needs_ndecode:
            # no prefill: everything but the decode reads depends on T, the graph mode, the
            # budget and whether any context exists, so that part is priced once per shape
            stage = self._shape_stage(T, uniform, sm_budget, sumc > 0)
        else:
            stage = self._stage(T, uniform, pre, causal, wins, dec_tokens, bool(n_dec), sumc > 0, sm_budget)
        return _finish(stage, dec_kv, n_dec, toks)

    def _shape_stage(self, T: int, uniform: bool, sm_budget: int, any_ctx: bool) -> tuple[Any, ...]:
        """``_stage`` of a batch with no prefill, kept per shape (a memo of at most ``_STAGES``
        entries, cleared when full: a search meets many batch shapes)."""
        key = (T, uniform, sm_budget, any_ctx)
        stage = self._stages.get(key)
        if stage is None:
            if len(self._stages) >= _STAGES:
                self._stages.clear()
            stage = self._stages[key] = self._stage(T, uniform, None, 0.0, {}, T, True, any_ctx, sm_budget)
        return stage

    def _stage(
        self,
        T: int,
        uniform: bool,
        pre: list[tuple[int, int]] | None,
        causal: float,
        wins: dict[int, float],
        dec_tokens: int,
        has_dec: bool,
        any_ctx: bool,
        sm_budget: int,
    ) -> tuple[Any, ...]:
        """The part of ``_priced`` that does not read the decode contexts: every layer kind's
        SM, weight and elementwise reads, collectives and expert terms, with the prefills'
        attention (``pre``: causal and windowed FLOPs, decode tokens ``dec_tokens``), and the
        decode-read coefficients ``_finish`` applies (where there is a decode: ``has_dec``).
        ``any_ctx``: whether any request has context (DCP's context gathers)."""
        _, capture, host_uniform, host_other, host_eager, _, _, smc, m_half, inv_pe, funnel, _, _, m_lin = self.hot
        # Host: the graph mode by batch shape, eager above the capture ceiling.
        host = host_eager if T > capture else (host_uniform if uniform else host_other)
        d = sm_budget_derate(smc, sm_budget) if sm_budget else 1.0  # the law gives 1 without a budget
        Y = (T + m_half) * inv_pe  # T/(peak·efficiency(T)): price.ramp.efficiency folded
        Yd = Y * d
        Yl = Yd if m_lin == m_half else (T + m_lin) * inv_pe * d  # the dense linears' own half point

        ts = []
        for floor, ipk, itr, mult, _nic in self.colls:  # price.collective.collective_time_s
            b = T * mult
            if b > LARGE_MESSAGE_BYTES and itr > ipk:  # the peak beyond 8 MiB (same law)
                x = floor + LARGE_MESSAGE_BYTES * itr + (b - LARGE_MESSAGE_BYTES) * ipk
            else:
                x = floor + b * itr
            y = b * ipk
            ts.append(x if x > y else y)
        nroute = T * funnel

        p_sm = p_nv = p_nic = 0.0
        kinds = []
        for count, G, R, Wh, Eh, rf, rinv, expert, attn, nv_idx, nic_idx, dcp, Fp, ovr in self.kinds:
            g = G * Yl
            if Fp > 0.0 and dec_tokens < T:  # price.recurrent.recurrent_update_s
                sm = g + rf + rinv * dec_tokens + chunked_prefill_share_s(Fp, T - dec_tokens, T, Yd)
            else:
                sm = g + rf + rinv * T
            if ovr:  # price.ramp.gemm_read_beyond_compute_s; the hidden read stays in the stage
                hid = g if Wh > g else Wh
                hbm = Wh - hid + Eh * T
            else:
                hid = 0.0
                hbm = Wh + Eh * T
            if expert is not None:
                q, Z, a, r = expert
                rsm = R * Yd
                # price.experts.experts_touched (expert_miss_fraction folded)
                rhbm = Z * (1.0 - (q**nroute if a <= 0.0 else (1.0 + nroute * r) ** -a))
            else:
                rsm = rhbm = 0.0
            read = None
            merged = 0
            floor = pf = 0.0
            if attn is not None:
                floor, coef, fb, spec, qhd, qhd_ps, window, launch, pf, secs = attn
                if has_dec:
                    read = (coef, fb, spec, secs)
                if pre:
                    lc = wins[window] if window > 0 else causal
                    if qhd_ps > 0:  # price.attention.prefill_attention_s, efficiencies folded into lc
                        sm += pf + lc * qhd_ps * d
                    else:
                        sm += lc * qhd * d
                    if launch and has_dec:  # one varlen launch: the smaller floor dropped
                        merged = launch
                        if launch != 1:
                            sm -= pf  # (launch 1 drops the decode floor from the reads: _finish)
            nv = 0.0
            for i in nv_idx:
                nv += ts[i]
            nic = 0.0
            for i in nic_idx:
                nic += ts[i]
            if dcp is not None:
                latent, charges = dcp
                rows = dec_tokens if latent else (T if any_ctx else 0)
                if rows > 0:
                    for floor2, ipk, itr, mult, to_nic in charges:
                        b = rows * mult
                        if b > LARGE_MESSAGE_BYTES and itr > ipk:  # the peak beyond 8 MiB (same law)
                            x = floor2 + LARGE_MESSAGE_BYTES * itr + (b - LARGE_MESSAGE_BYTES) * ipk
                        else:
                            x = floor2 + b * itr
                        y = b * ipk
                        if to_nic:
                            nic += x if x > y else y
                        else:
                            nv += x if x > y else y
            p_sm += count * (sm + rsm)
            p_nv += count * nv
            p_nic += count * nic
            kinds.append((count, sm, hbm, hid, rsm, rhbm, nv, nic, read, merged, floor, pf))
        head_sm = self.head_g * Yl
        return (tuple(kinds), p_sm + head_sm, p_nv, p_nic, host, head_sm, self.head_h)

    def estimate(
        self, S: Sequence[int], C: Sequence[int], th: int, sm_budget: int, per: dict | None
    ) -> StepEstimate | None:
        """``Kernel.step_time_into`` on the fast path, or None to use the reference. The
        integer-nanosecond edges are the reference's (``Kernel._estimate``), inlined."""
        r = self.price(S, C, th, sm_budget)
        if r is None:
            return None
        return _estimate_of(r, per)

    def estimate_aggregate(
        self, n_dec: int, width: int, sumc_dec: int, S: list[int], C: list[int], th: int, sm_budget: int
    ) -> StepEstimate | None:
        """``estimate`` from ``price_aggregate``'s numbers (the same bits as ``estimate`` on the rows)."""
        r = self.price_aggregate(n_dec, width, sumc_dec, S, C, th, sm_budget)
        if r is None:
            return None
        return _estimate_of(r, None)


def _finish(stage: tuple[Any, ...], dec_kv: int, n_dec: int, toks: list[float]) -> tuple[float, ...]:
    """``_priced``'s numbers from its ``_stage`` and the decode reads: each kind's attention
    read over ``dec_kv`` decode KV tokens (or its per-request transform ``toks``), then
    price.overlap.layer_stage_s with the dense parts held apart, over the floors before the
    one-launch merge (as step.price_step)."""
    kinds, p_sm, p_nv, p_nic, host, head_sm, head_hbm = stage
    p_hbm = overlap = 0.0
    for count, sm, hbm, hid, rsm, rhbm, nv, nic, read, merged, floor, pf in kinds:
        if read is not None:
            coef, fb, spec, secs = read
            tok = toks[spec] if spec >= 0 else dec_kv
            if fb is None:  # price.attention.decode_attention_s
                hbm += floor + tok * coef
            else:  # no decode rate: the raw KV bytes are read at HBM speed, no floor
                hbm += tok * fb
            for f2, c2, w2, r2, dcp2, interleave in secs:
                t2 = secondary_read_tokens(dec_kv, n_dec, w2, r2)
                if dcp2 > 1:
                    t2 = dcp_rank_tokens(int(t2 + 0.5), dcp2, interleave)
                hbm += f2 + t2 * c2
            if merged == 1:
                hbm -= floor
        top = sm
        h = hbm + hid
        if merged:
            if merged == 1:
                h += floor
            else:
                top = sm + pf
        if h > top:
            top = h
        if nv > top:
            top = nv
        if nic > top:
            top = nic
        overlap += count * (top + rsm + rhbm)
        p_hbm += count * (hbm + rhbm)
    p_hbm += head_hbm
    overlap += head_sm if head_sm > head_hbm else head_hbm
    return (p_sm, p_hbm, p_nv, p_nic, host, overlap)


def _with_requests(r: tuple[float, ...], requests: int, per_request_s: float) -> tuple[float, ...]:
    """``price``'s numbers with the step's per-request host time added to its host seconds
    (after the dispatch, in the reference's order: the same float)."""
    sm, hbm, nv, nic, host, ov = r
    return (sm, hbm, nv, nic, host + step_requests_host_s(requests, per_request_s), ov)


def _estimate_of(r: tuple[float, ...], per: dict | None) -> StepEstimate:
    """A ``StepEstimate`` from ``price``'s seconds, with the reference's integer-nanosecond
    edges (``Kernel._estimate``), inlined."""
    sm, hbm, nv, nic, host, ov = r
    a = int(sm * 1e9)
    b = int(hbm * 1e9)
    c = int(nv * 1e9)
    d = int(nic * 1e9)
    h = int(host * 1e9)
    no = a + b + c + d + h
    best, top = _SM, a
    if b > top:
        best, top = _HBM, b
    if c > top:
        best, top = _NVLINK, c
    if d > top:
        best, top = _NIC, d
    if h > top:
        best = _HOST
    o = int(ov * 1e9) + h
    if o > no:
        o = no
    if per is None:
        per = {}
    else:
        per.clear()
    if a:
        per[_SM] = a * _NS
    if b:
        per[_HBM] = b * _NS
    if c:
        per[_NVLINK] = c * _NS
    if d:
        per[_NIC] = d * _NS
    if h:
        per[_HOST] = h * _NS
    return _tuple_new(StepEstimate, (o * _NS, no * _NS, best, per))  # StepEstimate(...), without its __new__


def _zero_requests(S: Sequence[int], C: Sequence[int]) -> int:
    """Requests with no context at all (scheduled = computed = 0): the reference skips them."""
    if not S.count(0):
        return 0
    return sum(1 for s, cc in zip(S, C) if s == 0 and cc == 0)


def _transform(spec: ReadLaw, ctxs: list[int]) -> float:
    """``price.context.decode_rank_read_tokens`` over the decode contexts, at C speed for
    the single-bound cases (each the law with one bound: min(ctx, window), min(ctx, top_k),
    ``dcp_rank_tokens``)."""
    law, topk, window, ratio, dcp, interleave = spec
    if law == T_WINDOW:
        return sum(map(min, ctxs, repeat(window)))
    if law == T_TOPK:
        return sum(map(min, ctxs, repeat(topk)))
    if law == T_DCP:
        i = max(interleave, 1)
        if i == 1:  # ceil(L / D)
            return -sum(map(floordiv, map(neg, ctxs), repeat(dcp)))
        cyc = i * dcp
        return sum(map(floordiv, ctxs, repeat(cyc))) * i + sum(map(min, map(mod, ctxs, repeat(cyc)), repeat(i)))
    return decode_rank_read_tokens(ctxs, topk, window, ratio, dcp, interleave)

"""The vectorised step price: ``price_steps`` (``FastPlan.price`` over arrays of steps) and
the result of ``Kernel.step_times``, ``StepTimes``. The call itself (checks, layouts, blocks)
is ``vector_layout.step_times``.

The arithmetic is ``fast.FastPlan.price`` repeated on arrays, operation for operation and in
the same order: numpy's elementwise +, −, × and ÷ round exactly as Python's floats do, sums
of floats that feed a price are taken with ``np.bincount`` (which adds row after row, as the
scalar loops do), integer sums are exact either way, and powers are taken with Python's own
``**`` on the distinct exponents. What depends only on a step's token count is priced once,
in Python floats, when every step has the same count; a term fast.py adds as an exact 0.0 is
left out, and maxima (which round nothing) are folded in any order. So every step's result
equals ``step_time`` on the same batch bit for bit.

This module only vectorises: every expression that mirrors a law names it in a comment
(``# price.<module>.<law>``), and tests/test_one_home.py checks them term by term against
the laws on random inputs.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from latencykernel.batch import Resource, StepEstimate
from latencykernel.kernel.fast import T_DCP, T_GENERIC, T_TOPK, T_WINDOW, FastPlan, ReadLaw
from latencykernel.price.collective import LARGE_MESSAGE_BYTES
from latencykernel.price.ramp import sm_budget_derate
from latencykernel.price.recurrent import chunked_prefill_share_s

__all__ = ["StepTimes", "price_steps", "MAX_EMPTY_STEPS"]

MAX_EMPTY_STEPS = 2**20  # gaps beyond the rows, at most (about 70 MB of results)
_MIN = np.minimum.reduce  # bound once (cheaper to call than a.min())


@dataclass(frozen=True, eq=False)  # arrays: compare fields with numpy
class StepTimes:
    """The prices of many steps (one entry per step, seconds).

    overlap, no_overlap: float arrays, as ``StepEstimate``
    bottleneck:          object array of ``Resource``
    per_resource:        every ``Resource`` to a float array (0 where a step does not use it)

    The float arrays are rows of one allocation (``step_times`` fills them in place): each
    may be changed or kept on its own.
    """

    overlap: np.ndarray
    no_overlap: np.ndarray
    bottleneck: np.ndarray
    per_resource: dict[Resource, np.ndarray]

    def __len__(self) -> int:
        return len(self.overlap)

    def __getitem__(self, i: int) -> StepEstimate:
        """Step ``i`` as the ``StepEstimate`` ``step_time`` returns for it."""
        per = {r: float(a[i]) for r, a in self.per_resource.items() if a[i] > 0}
        return StepEstimate(float(self.overlap[i]), float(self.no_overlap[i]), self.bottleneck[i], per)

    def __iter__(self) -> Iterator[StepEstimate]:
        return (self[i] for i in range(len(self)))


def _coll_x(floor: float, b: Any, itr: float, ipk: float) -> Any:
    """floor + b·inv_transition, each byte beyond 8 MiB at the peak rate
    (``price.collective.collective_time_s``'s first term, over arrays)."""
    x = floor + b * itr
    if itr > ipk:
        x = np.where(b > LARGE_MESSAGE_BYTES, floor + LARGE_MESSAGE_BYTES * itr + (b - LARGE_MESSAGE_BYTES) * ipk, x)
    return x


def _collective_s(floor: float, ipk: float, itr: float, b: Any) -> Any:
    """``price.collective.collective_time_s`` of ``b`` bytes (a float or an array), as
    fast.py folds it: max(floor + b·inv_transition (the peak beyond 8 MiB), b·inv_peak)."""
    if isinstance(b, np.ndarray):
        return np.maximum(_coll_x(floor, b, itr, ipk), b * ipk)
    if b > LARGE_MESSAGE_BYTES and itr > ipk:
        x = floor + LARGE_MESSAGE_BYTES * itr + (b - LARGE_MESSAGE_BYTES) * ipk
    else:
        x = floor + b * itr
    y = b * ipk
    return x if x > y else y


def _mx(a: Any, b: Any) -> Any:
    """The larger of two floats or arrays (fast.py's ``b if b > a else a``)."""
    if type(a) is float and type(b) is float:
        return b if b > a else a
    return np.maximum(a, b)


def _largest(*xs: Any) -> Any:
    """The largest of floats and arrays (None: left out). Taking a maximum rounds nothing,
    so the floats are folded first, in Python, and the arrays after."""
    top: Any = None
    arrays = []
    for x in xs:
        if x is None:
            continue
        if isinstance(x, np.ndarray):
            arrays.append(x)
        elif top is None or x > top:
            top = x
    for x in arrays:
        top = x if top is None else np.maximum(top, x)
    return top


def _pick(cond: Any, a: Any, b: Any) -> Any:
    """``a if cond else b`` for a bool, np.where for an array of them."""
    if type(cond) is bool:
        return a if cond else b
    return np.where(cond, a, b)


def _miss(q: float, a: float, r: float, k: float) -> float:
    """price.experts.expert_miss_fraction as fast.py folds it: q ** k, or (1 + k·r) ** −a."""
    return q**k if a <= 0.0 else (1.0 + k * r) ** -a


def _miss_table(q: float, a: float, r: float, n: np.ndarray) -> np.ndarray:
    """``_miss`` for every entry, with Python's float arithmetic (as the scalar path) on the
    distinct n."""
    top = int(n.max())
    if top <= 1 << 20:
        present = np.flatnonzero(np.bincount(n, minlength=top + 1))
        table = np.zeros(top + 1)
        table[present] = [_miss(q, a, r, k) for k in present.tolist()]
        return table[n]
    u, inv = np.unique(n, return_inverse=True)
    return np.array([_miss(q, a, r, k) for k in u.tolist()])[inv]


def price_steps(
    fp: FastPlan,
    st: np.ndarray,
    lo: int,
    s: np.ndarray,
    c: np.ndarray,
    T: Any,
    sumc: np.ndarray,
    nreq: Any,
    th: int,
    budget: int,
    seg_start: np.ndarray,
    per_step: Any,
    nsteps: int,
    smin: int,
    smax: int,
    out: np.ndarray,
) -> tuple[np.ndarray, Any]:
    """``FastPlan.price`` over arrays of steps: ``out``, a (6, nsteps) array, filled with
    (overlap, sm, hbm, nvlink, nic, host) seconds, and the steps to price one by one (or None).

    ``T`` and ``nreq`` are Python ints when every step has the same (then everything that
    depends on them only is priced once, in Python floats, as fast.py does), else arrays.
    A term fast.py adds as an exact 0.0 (no experts, no fabric, the first kind's 0.0 +) is
    left out: every term is a time, not negative, so adding 0.0 changes nothing. Step
    numbers in ``st`` count from ``lo`` (the block's first step)."""

    def rel(x: np.ndarray) -> np.ndarray:
        return x - lo if lo else x

    arr = isinstance(T, np.ndarray)
    empty: Any = False
    any_empty = False
    Tsafe: Any = T
    Tf: Any
    if not arr:
        Tf = float(T)
    else:
        empty = T == 0
        any_empty = bool(empty.any())
        Tsafe = np.where(empty, 1, T) if any_empty else T
        Tf = Tsafe.astype(np.float64)
    w = fp.width

    uniform: Any
    if smin == smax == w:
        uniform = nreq > 0
    elif smin >= w:
        # Every row schedules w or more: a step's sum is w·rows only when each row is w.
        uniform = T == nreq * w
    else:
        odd = np.flatnonzero(s != w)
        uniform = (nreq > 0) & (np.bincount(rel(st[odd]), minlength=nsteps) == 0)

    slow = None
    has_pre = None
    n_pre: Any = 0
    wins: dict[int, np.ndarray] = {}
    causal: Any = 0.0
    dec_tokens: Any
    dec_kv: Any
    if smax > th:
        pidx = np.flatnonzero(s > th)
        pst, ps, pc = rel(st[pidx]), s[pidx], c[pidx]
        n_pre = np.bincount(pst, minlength=nsteps)
        has_pre = n_pre > 0
        tp_ = np.bincount(pst, weights=ps, minlength=nsteps).astype(np.int64)
        cp_ = np.bincount(pst, weights=pc, minlength=nsteps).astype(np.int64)
        # Each prefill over peak·efficiency of its own query tokens, as fast.FastPlan.price.
        psf, pcf = ps.astype(np.float64), pc.astype(np.float64)
        inv_eff = (psf + fp.m_half) * fp.inv_pe / psf
        causal = np.bincount(pst, weights=_causal_flops(psf, pcf) * inv_eff, minlength=nsteps)
        for wdw in fp.windows:
            wins[wdw] = np.bincount(pst, weights=_windowed_causal_flops(psf, pcf, wdw) * inv_eff, minlength=nsteps)
        dec_tokens = T - tp_
        dec_kv = T + sumc - tp_ - cp_
        if fp.pcp_prefill_fallback or fp.dcp_prefill_fallback:
            slow = has_pre
    else:
        dec_tokens = T
        dec_kv = T + sumc
    # Decodes with any context. Only a windowed secondary reads their count (as fast.py);
    # otherwise whether there is one is whether their contexts sum above zero.
    n_dec: Any = dec_kv
    if fp.needs_ndecode:
        n_dec = nreq - n_pre
        if smin == 0:
            zidx = np.flatnonzero((s == 0) & (c == 0))
            if len(zidx):
                n_dec = n_dec - np.bincount(rel(st[zidx]), minlength=nsteps)
    has_dec: Any = None  # n_dec > 0, when needed
    if any_empty or fp.needs_ndecode:
        has_dec = n_dec > 0
        all_dec = bool((has_dec | empty).all())
    else:
        all_dec = int(_MIN(n_dec)) > 0

    # Host: the graph mode by batch shape, eager above the capture ceiling.
    eager: Any = T > fp.capture
    if arr and not eager.any():
        eager = False
    if not isinstance(uniform, bool) and uniform.all():
        uniform = True
    host: Any = _pick(eager, fp.host[2], _pick(uniform, fp.host[0], fp.host[1]))
    if fp.per_request:  # price.host.step_requests_host_s over the rows that schedule tokens
        busy: Any = nreq
        if smin == 0:
            zero = np.flatnonzero(s == 0)
            if len(zero):
                busy = nreq - np.bincount(rel(st[zero]), minlength=nsteps)
        host = host + busy * fp.per_request

    # Per-request transforms of the decode contexts.
    toks: list[np.ndarray] = []
    if fp.specs:
        ctx = s + c
        if has_pre is not None:
            ctx = np.where(s > th, 0, ctx)
        for read_law in fp.specs:
            toks.append(_transform(read_law, ctx, rel(st), seg_start, per_step, nsteps))

    d = sm_budget_derate(fp.sm_count, budget)
    Y = (Tf + fp.m_half) * fp.inv_pe  # T/(peak·efficiency(T)): price.ramp.efficiency folded
    Yd = Y * d if d != 1.0 else Y  # x·1.0 is x
    # the dense linears at their own half point (fast.py's Yl)
    Yl = Yd if fp.linear_m_half == fp.m_half else (Tf + fp.linear_m_half) * fp.inv_pe * d

    # price.collective.collective_time_s of each graph collective
    ts = [_collective_s(floor, ipk, itr, Tf * mult) for floor, ipk, itr, mult, _nic in fp.colls]
    pows: dict[tuple[float, float], Any] = {}
    nroute = Tsafe * fp.funnel
    rows_nonlatent = None
    dec_kvf: Any = None

    p_sm: Any = None  # None: nothing added yet (fast.py's 0.0)
    p_hbm: Any = None
    p_nv: Any = None
    p_nic: Any = None
    overlap: Any = None
    sm: Any
    hbm: Any
    rsm: Any
    rhbm: Any
    terms: dict[tuple[float, float, Any, int], Any] = {}  # decode reads of equal coefficients, once
    for count, G, R, Wh, Eh, rf, rinv, expert, attn, nv_idx, nic_idx, dcp, Fp, ovr in fp.kinds:
        top_sm: Any = None
        g = G * Yl
        if Fp > 0.0 and has_pre is not None:  # price.recurrent.recurrent_update_s, as fast.py
            sm = np.where(
                dec_tokens < T,
                g + rf + rinv * dec_tokens + chunked_prefill_share_s(Fp, T - dec_tokens, Tsafe, Yd),
                g + rf + rinv * Tf,
            )
        else:
            sm = g + rf + rinv * Tf
        hid: Any = None
        if ovr:  # price.ramp.gemm_read_beyond_compute_s, as fast.py (the hidden read stays in the stage)
            hid = np.minimum(g, Wh) if arr else (g if Wh > g else Wh)
            hbm = Wh - hid + Eh * Tf
        else:
            hbm = Wh + Eh * Tf
        rsm = rhbm = None
        if expert is not None:
            q, Z, a, r = expert
            mkey = (q, a)
            if mkey not in pows:
                pows[mkey] = _miss_table(q, a, r, nroute) if arr else _miss(q, a, r, nroute)
            rsm = R * Yd
            rhbm = Z * (1.0 - pows[mkey])  # price.experts.experts_touched
        merged_floor = None
        if attn is not None:
            floor, coef, fb, spec, qhd, qhd_ps, window, launch, pf, secs = attn
            key = (floor, coef, fb, spec)
            term = terms.get(key)
            if term is None:
                if spec >= 0:
                    tok = toks[spec]
                else:
                    if dec_kvf is None:
                        dec_kvf = dec_kv.astype(np.float64)
                    tok = dec_kvf
                # price.attention.decode_attention_s (or the raw KV bytes without a rate)
                term = terms[key] = floor + tok * coef if fb is None else tok * fb
            new = hbm + term
            for f2, c2, w2, r2, dcp2, interleave in secs:
                t2: Any = dec_kv  # price.attention.secondary_read_tokens
                if w2 > 0:
                    t2 = np.minimum(t2, w2 * n_dec)
                if r2 > 1:
                    t2 = t2 / r2
                if dcp2 > 1:
                    t2 = _dcp_rank_tokens((t2 + 0.5).astype(np.int64), dcp2, interleave)
                new = new + (f2 + t2 * c2)
            if not all_dec and has_dec is None:
                has_dec = n_dec > 0
            hbm = new if all_dec else np.where(has_dec, new, hbm)
            if has_pre is not None:
                lc = wins[window] if window > 0 else causal
                if qhd_ps > 0:  # price.attention.prefill_attention_s
                    new = sm + (pf + lc * qhd_ps * d)
                else:
                    new = sm + lc * qhd * d
                sm = np.where(has_pre, new, sm)
                if launch:  # one varlen launch: the smaller floor dropped from the totals
                    if has_dec is None:
                        has_dec = n_dec > 0
                    both = has_pre & has_dec
                    if launch == 1:
                        hbm = np.where(both, hbm - floor, hbm)
                        merged_floor = (both, floor)
                    else:
                        sm = np.where(both, sm - pf, sm)
                        top_sm = np.where(both, sm + pf, sm)
        nv: Any = None  # None: 0.0 (no fabric)
        for i in nv_idx:
            nv = ts[i] if nv is None else nv + ts[i]
        nic: Any = None
        for i in nic_idx:
            nic = ts[i] if nic is None else nic + ts[i]
        if dcp is not None:
            latent, charges = dcp
            if latent:
                rows = dec_tokens
            else:
                if rows_nonlatent is None:
                    rows_nonlatent = np.where(sumc > 0, T, 0)
                rows = rows_nonlatent
            some = rows > 0
            if isinstance(some, np.bool_):
                some = bool(some)
            for floor2, ipk, itr, mult, to_nic in charges:
                # price.collective.collective_time_s
                tc = _collective_s(floor2, ipk, itr, rows * mult)
                if to_nic:
                    nic = _pick(some, (0.0 if nic is None else nic) + tc, 0.0 if nic is None else nic)
                else:
                    nv = _pick(some, (0.0 if nv is None else nv) + tc, 0.0 if nv is None else nv)
        # price.overlap.layer_stage_s, over the floors before the one-launch merge (as fast.py)
        h = hbm if hid is None else hbm + hid
        if merged_floor is not None:
            h = np.where(merged_floor[0], h + merged_floor[1], h)
        top = _largest(sm if top_sm is None else top_sm, h, nv, nic)
        x_sm = sm
        x_hbm = hbm
        if rsm is not None:
            top = top + rsm + rhbm
            x_sm = sm + rsm
            x_hbm = hbm + rhbm
        if count != 1:  # 1·x is x
            top = count * top
            x_sm = count * x_sm
            x_hbm = count * x_hbm
            if nv is not None:
                nv = count * nv
            if nic is not None:
                nic = count * nic
        overlap = top if overlap is None else overlap + top
        p_sm = x_sm if p_sm is None else p_sm + x_sm
        p_hbm = x_hbm if p_hbm is None else p_hbm + x_hbm
        if nv is not None:
            p_nv = nv if p_nv is None else p_nv + nv
        if nic is not None:
            p_nic = nic if p_nic is None else p_nic + nic

    head_sm = fp.head_g * Yl
    head = _mx(head_sm, fp.head_h)
    for i, x, y in ((1, p_sm, head_sm), (2, p_hbm, fp.head_h), (0, overlap, head)):
        if x is None:
            out[i] = y
        elif isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            np.add(x, y, out=out[i])
        else:
            out[i] = x + y
    for i, x in ((3, p_nv), (4, p_nic), (5, host)):
        out[i] = 0.0 if x is None else x
    if any_empty:
        out[:5, empty] = 0.0
        eh = _pick(nreq == 0, fp.empty_host[0], fp.empty_host[1])
        out[5, empty] = eh[empty] if isinstance(eh, np.ndarray) else eh
    return out, slow


def _causal_flops(s: np.ndarray, c: np.ndarray) -> np.ndarray:
    """``price.attention.causal_flops_per_qk_dim`` on float arrays (whole numbers below 2**53:
    every product rounds once, as Python's exact integer product converted to float)."""
    return 4.0 * (s * c + s * s / 2.0)


def _windowed_causal_flops(s: np.ndarray, c: np.ndarray, window: int) -> np.ndarray:
    """``price.attention.windowed_causal_flops_per_qk_dim`` of each (s, c) on its own, on
    float arrays."""
    ns = np.maximum(0.0, np.minimum(s, window - c))
    return 4.0 * (ns * (c + 1) + ns * (ns - 1) / 2.0 - ns / 2.0 + (s - ns) * window)


def _dcp_rank_tokens(length: np.ndarray, dcp: int, interleave: int) -> np.ndarray:
    """``price.context.dcp_rank_tokens`` on an array."""
    i = max(interleave, 1)
    cyc = i * dcp
    return np.where(length <= 0, 0, (length // cyc) * i + np.minimum(length % cyc, i))


def _transform(
    spec: ReadLaw, ctx: np.ndarray, st: np.ndarray, seg_start: np.ndarray, per_step: Any, nsteps: int
) -> np.ndarray:
    """``fast._transform`` per step (``price.context.decode_rank_read_tokens``): integer reads
    summed exactly per segment, float reads added row after row."""
    law, topk, window, ratio, dcp, interleave = spec
    if law == T_WINDOW:
        return per_step(np.add.reduceat(np.minimum(ctx, window), seg_start))
    if law == T_TOPK:
        return per_step(np.add.reduceat(np.minimum(ctx, topk), seg_start))
    if law == T_DCP:
        return per_step(np.add.reduceat(_dcp_rank_tokens(ctx, dcp, interleave), seg_start))
    assert law == T_GENERIC
    # price.attention.decode_read_tokens
    read: Any = np.minimum(ctx, window) if window > 0 else ctx
    if topk > 0:
        read = np.minimum(ctx, topk)
        if ratio > 0:
            read = np.where(ctx > topk, read + (ctx - topk) / ratio, read)
    if dcp > 1:
        read = _dcp_rank_tokens((read + 0.5).astype(np.int64), dcp, interleave)
    return np.bincount(st, weights=read, minlength=nsteps)

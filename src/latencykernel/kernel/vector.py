"""Many steps in one call: ``Kernel.step_times`` and its result, ``StepTimes``.

The rows of three equal-length arrays are requests; ``step`` (non-decreasing integers from
0) says which step each belongs to. A step number with no rows (a gap) is an empty step:
host time only, as ``step_time`` prices an empty batch.

The arithmetic is ``fast.FastPlan.price`` repeated on arrays, operation for operation and in
the same order: numpy's elementwise +, −, × and ÷ round exactly as Python's floats do, sums
of floats that feed a price are taken with ``np.bincount`` (which adds row after row, as the
scalar loops do), integer sums are exact either way, and powers are taken with Python's own
``**`` on the distinct exponents. So every step's result equals ``step_time`` on the same
batch bit for bit. Steps the fast path does not cover (see ``fast.py``) are priced one by
one by the fallback the caller passes (``Kernel.step_time``).

This module only vectorises: every expression that mirrors a law names it in a comment
(``# price.<module>.<law>``), and tests/test_one_home.py checks them term by term against
the laws on random inputs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from latencykernel.batch import RESOURCES, Batch, Resource, StepEstimate
from latencykernel.errors import LatencyKernelError
from latencykernel.kernel.fast import T_DCP, T_GENERIC, T_TOPK, T_WINDOW, FastPlan, ReadLaw
from latencykernel.price.collective import LARGE_MESSAGE_BYTES
from latencykernel.price.ramp import sm_budget_derate
from latencykernel.price.recurrent import chunked_prefill_share_s

__all__ = ["StepTimes", "step_times"]

_NS = 1e-9
_EXACT_NS = float(2**53)
MAX_EMPTY_STEPS = 2**20  # gaps beyond the rows, at most (about 70 MB of results)
_RES = np.array(RESOURCES, dtype=object)


@dataclass(frozen=True, eq=False)  # arrays: compare fields with numpy
class StepTimes:
    """The prices of many steps (one entry per step, seconds).

    overlap, no_overlap: float arrays, as ``StepEstimate``
    bottleneck:          object array of ``Resource``
    per_resource:        every ``Resource`` to a float array (0 where a step does not use it)
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


def step_times(
    plan: FastPlan | None,
    fallback: Callable[[Batch], StepEstimate],
    step: Any,
    scheduled: Any,
    computed: Any,
    *,
    decode_threshold: int,
    prompt_len: Any = None,
    sm_budget: int = 0,
) -> StepTimes:
    """See ``Kernel.step_times``. ``plan`` is the kernel's fused plan (None: every step
    takes ``fallback``); ``fallback`` prices one batch (``Kernel.step_time``) for the steps
    the plan hands back. The columns come checked by ``Kernel.step_times``
    (``kernel.arrays.token_array``: int64, whole, in [0, MAX_TOKENS]; ``step`` may be
    negative and is checked here), and the settings are whole counts: nothing is converted
    or range-checked twice."""
    st, s, c = step, scheduled, computed
    n = len(st)
    for name, col in (("scheduled", s), ("computed", c)):
        if len(col) != n:
            raise LatencyKernelError(f"{name} has {len(col)} rows and step has {n}; they must be equal")
    if prompt_len is not None and len(prompt_len) != n:  # accepted for symmetry with ReqShape; not read
        raise LatencyKernelError(f"prompt_len has {len(prompt_len)} rows and step has {n}; they must be equal")
    th = decode_threshold
    budget = sm_budget
    # One pass when every row schedules the same tokens (a decode-only simulation), else two.
    smin = int(s[0]) if n else 0
    smax = smin
    if n and not (s == smin).all():
        smin, smax = int(s.min()), int(s.max())
    if n == 0:
        z = np.zeros(0)
        return StepTimes(z, z.copy(), np.zeros(0, dtype=object), {r: z.copy() for r in RESOURCES})
    if st[0] < 0:
        raise LatencyKernelError(f"step must count from 0; step[0] is {int(st[0])}")

    # Segments: runs of rows of one step. Steps of one width each (the common layout of a
    # simulator's batch) are recognised in one pass over ``step``.
    seg_start = _equal_segments(st, n)
    if seg_start is None:
        seg_start = np.flatnonzero(st[1:] != st[:-1]) + 1 if n > 1 else np.zeros(0, dtype=np.int64)
        seg_start = np.concatenate((np.zeros(1, dtype=np.int64), seg_start))
    seg_step = st[seg_start]
    if len(seg_step) > 1:
        down = np.diff(seg_step) < 0
        if down.any():
            j = int(seg_start[int(np.argmax(down)) + 1])
            raise LatencyKernelError(
                f"step must be non-decreasing; step[{j}] is {int(st[j])} after step[{j - 1}] = {int(st[j - 1])}"
            )
    nsteps = int(seg_step[-1]) + 1
    if nsteps > n + MAX_EMPTY_STEPS:
        # One entry per step number: a far step number would allocate entries for every
        # step before it (step [0, 10**9] asked for a billion).
        raise LatencyKernelError(
            f"step numbers must not exceed the number of rows ({n}) by more than {MAX_EMPTY_STEPS:,} "
            f"(empty steps); step[{n - 1}] is {nsteps - 1}. step_times returns one entry per step "
            "number, gaps included: number the steps densely"
        )
    seg_n = np.diff(np.append(seg_start, n))
    gaps = len(seg_step) != nsteps

    def per_step(v: np.ndarray) -> np.ndarray:
        if not gaps:
            return v
        out = np.zeros(nsteps, dtype=v.dtype)
        out[seg_step] = v
        return out

    T = per_step(seg_n * smin if smin == smax else np.add.reduceat(s, seg_start))
    sumc = per_step(np.add.reduceat(c, seg_start))
    nreq = per_step(seg_n)
    starts = per_step(seg_start)

    fp = plan
    if fp is not None:
        raw, slow = _price(fp, st, s, c, T, sumc, nreq, th, budget, seg_start, per_step, nsteps, smin, smax)
        # Whole nanoseconds as int64 are exact only below 2**53 ns (104 days): a step above
        # that (or not finite) is priced by the fallback, whose Python integers do not overflow.
        if not max(float(x.max()) for x in raw) * 1e9 < _EXACT_NS:
            huge = np.zeros(nsteps, dtype=bool)
            for x in raw:
                huge |= ~(x * 1e9 < _EXACT_NS)
            slow = huge if slow is None else (slow | huge)
            slow = huge if slow is None else (slow | huge)
            raw = tuple(np.where(huge, 0.0, x) for x in raw)
        ns = [(x * 1e9).astype(np.int64) for x in raw[:5]]
        o_ns = (raw[5] * 1e9).astype(np.int64) + ns[4]
    else:
        ns = [np.zeros(nsteps, dtype=np.int64) for _ in range(5)]
        o_ns = np.zeros(nsteps, dtype=np.int64)
        slow = np.ones(nsteps, dtype=bool)
    no = ns[0] + ns[1] + ns[2] + ns[3] + ns[4]
    np.minimum(o_ns, no, out=o_ns)
    best = np.zeros(nsteps, dtype=np.intp)  # the first of equal maxima, as step_time
    top = ns[0]
    for i in range(1, 5):
        more = ns[i] > top
        best[more] = i
        top = np.maximum(top, ns[i])
    overlap = o_ns * _NS
    no_overlap = no * _NS
    per = {r: x * _NS for r, x in zip(RESOURCES, ns)}
    bottleneck = _RES[best]

    if slow is not None and slow.any():
        # Steps the fast path leaves to the reference: priced one by one by step_time.
        for i in np.flatnonzero(slow).tolist():
            a = int(starts[i])
            b = a + int(nreq[i])
            e = fallback(Batch.from_columns(s[a:b].tolist(), c[a:b].tolist(), th, budget))
            overlap[i] = e.overlap
            no_overlap[i] = e.no_overlap
            bottleneck[i] = e.bottleneck
            for r in RESOURCES:
                per[r][i] = e.per_resource.get(r, 0.0)
    return StepTimes(overlap, no_overlap, bottleneck, per)


def _equal_segments(st: np.ndarray, n: int) -> np.ndarray | None:
    """Row offsets of the steps when ``st`` is 0, 0, …, 1, 1, … with every step the same
    number of rows and none missing, else None (the general path finds the runs)."""
    last = int(st[-1])
    if st[0] != 0 or last < 0 or n % (last + 1):
        return None
    steps = last + 1
    w = n // steps
    st2 = st.reshape(steps, w)
    every = np.arange(steps)
    # Non-decreasing, and each row starts and ends at its own step number: every row is one step.
    if not ((st2[:, 0] == every).all() and (st2[:, -1] == every).all() and (st[1:] >= st[:-1]).all()):
        return None
    return np.arange(0, n, w, dtype=np.int64)


def _pow_table(q: float, n: np.ndarray) -> np.ndarray:
    """q ** n for every entry, with Python's float power (as the scalar path) on the distinct n."""
    top = int(n.max())
    if top <= 1 << 20:
        present = np.flatnonzero(np.bincount(n, minlength=top + 1))
        table = np.zeros(top + 1)
        table[present] = [q**k for k in present.tolist()]
        return table[n]
    u, inv = np.unique(n, return_inverse=True)
    return np.array([q**k for k in u.tolist()])[inv]


def _price(
    fp: FastPlan,
    st: np.ndarray,
    s: np.ndarray,
    c: np.ndarray,
    T: np.ndarray,
    sumc: np.ndarray,
    nreq: np.ndarray,
    th: int,
    budget: int,
    seg_start: np.ndarray,
    per_step: Any,
    nsteps: int,
    smin: int,
    smax: int,
) -> tuple[tuple[Any, ...], Any]:
    """``FastPlan.price`` over arrays of steps: ((sm, hbm, nvlink, nic, host, overlap), the
    steps to price one by one, or None)."""
    empty = T == 0
    any_empty = bool(empty.any())
    w = fp.width

    if smin == smax == w:
        uniform = nreq > 0
    else:
        odd = np.flatnonzero(s != w)
        uniform = (nreq > 0) & (np.bincount(st[odd], minlength=nsteps) == 0)

    slow = None
    has_pre = None
    wins: dict[int, np.ndarray] = {}
    causal: Any = 0.0
    if smax > th:
        pidx = np.flatnonzero(s > th)
        pst, ps, pc = st[pidx], s[pidx], c[pidx]
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
        n_dec = nreq - n_pre
        if fp.pcp_prefill_fallback or fp.dcp_prefill_fallback:
            slow = has_pre
    else:
        dec_tokens = T
        dec_kv = T + sumc
        n_dec = nreq
    if smin == 0:
        zidx = np.flatnonzero((s == 0) & (c == 0))
        if len(zidx):
            n_dec = n_dec - np.bincount(st[zidx], minlength=nsteps)
    has_dec = n_dec > 0
    all_dec = bool((has_dec | empty).all())

    host: Any = np.where(T > fp.capture, fp.host[2], np.where(uniform, fp.host[0], fp.host[1]))

    # Per-request transforms of the decode contexts.
    toks: list[np.ndarray] = []
    if fp.specs:
        ctx = s + c
        if has_pre is not None:
            ctx = np.where(s > th, 0, ctx)
        for read_law in fp.specs:
            toks.append(_transform(read_law, ctx, st, seg_start, per_step, nsteps))

    d = sm_budget_derate(fp.sm_count, budget)
    Tsafe = np.where(empty, 1, T) if any_empty else T
    Y = (Tsafe + fp.m_half) * fp.inv_pe  # T/(peak·efficiency(T)): price.ramp.efficiency folded
    Yd = Y * d

    ts = []
    b: Any
    for floor, ipk, itr, mult, _nic in fp.colls:
        b = Tsafe * mult
        ts.append(np.maximum(_coll_x(floor, b, itr, ipk), b * ipk))  # price.collective.collective_time_s
    pows: dict[float, np.ndarray] = {}
    nroute = Tsafe * fp.funnel
    rows_nonlatent = None

    p_sm: Any = 0.0
    p_hbm: Any = 0.0
    p_nv: Any = 0.0
    p_nic: Any = 0.0
    overlap: Any = 0.0
    sm: Any
    hbm: Any
    rsm: Any
    rhbm: Any
    for count, G, R, Wh, Eh, rf, rinv, expert, attn, nv_idx, nic_idx, dcp, Fp, ovr in fp.kinds:
        top_sm: Any = None
        top_hbm: Any = None
        g = G * Yd
        if Fp > 0.0:  # price.recurrent.recurrent_update_s, as fast.py
            sm = np.where(
                dec_tokens < T,
                g + rf + rinv * dec_tokens + chunked_prefill_share_s(Fp, T - dec_tokens, Tsafe, Yd),
                g + rf + rinv * Tsafe,
            )
        else:
            sm = g + rf + rinv * Tsafe
        hid: Any = 0.0
        if ovr:  # price.ramp.gemm_read_beyond_compute_s, as fast.py (the hidden read stays in the stage)
            hid = np.minimum(g, Wh)
            hbm = Wh - hid + Eh * Tsafe
        else:
            hbm = Wh + Eh * Tsafe
        if expert is not None:
            q, Z = expert
            if q not in pows:
                pows[q] = _pow_table(q, nroute)
            rsm = R * Yd
            rhbm = Z * (1.0 - pows[q])  # price.experts.experts_touched
        else:
            rsm = rhbm = 0.0
        if attn is not None:
            floor, coef, fb, spec, qhd, qhd_ps, window, launch, pf, secs = attn
            tok = toks[spec] if spec >= 0 else dec_kv
            # price.attention.decode_attention_s (or the raw KV bytes without a rate)
            new = hbm + (floor + tok * coef) if fb is None else hbm + tok * fb
            for f2, c2, w2, r2, dcp2, interleave in secs:
                t2: Any = dec_kv  # price.attention.secondary_read_tokens
                if w2 > 0:
                    t2 = np.minimum(t2, w2 * n_dec)
                if r2 > 1:
                    t2 = t2 / r2
                if dcp2 > 1:
                    t2 = _dcp_rank_tokens((t2 + 0.5).astype(np.int64), dcp2, interleave)
                new = new + (f2 + t2 * c2)
            hbm = new if all_dec else np.where(has_dec, new, hbm)
            if has_pre is not None:
                lc = wins[window] if window > 0 else causal
                if qhd_ps > 0:  # price.attention.prefill_attention_s
                    new = sm + (pf + lc * qhd_ps * d)
                else:
                    new = sm + lc * qhd * d
                sm = np.where(has_pre, new, sm)
                if launch:  # one varlen launch: the smaller floor dropped from the totals
                    both = has_pre & has_dec
                    if launch == 1:
                        hbm = np.where(both, hbm - floor, hbm)
                        top_hbm = np.where(both, hbm + floor, hbm)
                    else:
                        sm = np.where(both, sm - pf, sm)
                        top_sm = np.where(both, sm + pf, sm)
        nv: Any = 0.0
        for i in nv_idx:
            nv = nv + ts[i]
        nic: Any = 0.0
        for i in nic_idx:
            nic = nic + ts[i]
        if dcp is not None:
            latent, charges = dcp
            if latent:
                rows = dec_tokens
            else:
                if rows_nonlatent is None:
                    rows_nonlatent = np.where(sumc > 0, T, 0)
                rows = rows_nonlatent
            some = rows > 0
            for floor2, ipk, itr, mult, to_nic in charges:
                b = rows * mult
                tc = np.maximum(_coll_x(floor2, b, itr, ipk), b * ipk)  # price.collective.collective_time_s
                if to_nic:
                    nic = np.where(some, nic + tc, nic)
                else:
                    nv = np.where(some, nv + tc, nv)
        # price.overlap.layer_stage_s, over the floors before the one-launch merge
        top = np.maximum(
            np.maximum(np.maximum(sm if top_sm is None else top_sm, (hbm if top_hbm is None else top_hbm) + hid), nv),
            nic,
        )
        overlap = overlap + count * (top + rsm + rhbm)
        p_sm = p_sm + count * (sm + rsm)
        p_hbm = p_hbm + count * (hbm + rhbm)
        p_nv = p_nv + count * nv
        p_nic = p_nic + count * nic

    head_sm = fp.head_g * Yd
    p_sm = p_sm + head_sm
    p_hbm = p_hbm + fp.head_h
    overlap = overlap + np.maximum(head_sm, fp.head_h)

    out = []
    for x in (p_sm, p_hbm, p_nv, p_nic):
        x = np.broadcast_to(np.asarray(x, dtype=float), (nsteps,))
        out.append(np.where(empty, 0.0, x) if any_empty else x)
    if any_empty:
        host = np.where(empty, np.where(nreq == 0, fp.empty_host[0], fp.empty_host[1]), host)
        overlap = np.where(empty, 0.0, overlap)
    return (out[0], out[1], out[2], out[3], host, overlap), slow


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

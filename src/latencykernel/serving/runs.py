"""The skip-ahead: a run of identical decode steps priced in one call and committed at once.

When every rank of an engine schedules exactly its running requests, each as a decode, with
nothing admissible waiting, the following steps differ only in their contexts until the
first of: a request's last token, a KV block the pool cannot give (the step that would
preempt), and the first step whose scheduling decision comes at or after the next event any
other part of the simulation may cause. With one token a step and no request waiting on any
rank (in open loop, or once a closed-loop client has sent every request), a run goes on past
a request's last token: the request leaves the batch and frees its blocks, which nobody
claims, until the last request's. ``run`` prices such a run (``step_times``, or
``step_time`` a step for a short one) and commits it; the result equals the step-by-step
loop's exactly (tests/test_serving_sim.py).
"""

from __future__ import annotations

import math
from itertools import chain
from operator import sub
from typing import TYPE_CHECKING, Any

import numpy as np

from latencykernel.serving.run_price import RunColumns, price_run
from latencykernel.serving.scheduler import Rank

if TYPE_CHECKING:
    from latencykernel.serving.sim import Engine, Plan, Simulation

__all__ = ["run", "uniform", "waiting_blocked"]

INF = math.inf


def waiting_blocked(sim: Simulation, rk: Rank, scheduled: int) -> bool:
    """Whether the head of ``rk``'s waiting queue cannot be admitted beside ``scheduled``
    decode tokens, by the checks of ``schedule``'s waiting loop (max_num_seqs, token
    budget, the block check with the free pool as it now stands). Each stays failed while
    a run lasts: running requests stay, the budget stays, the free pool only shrinks."""
    if not rk.waiting:
        return True
    cfg = sim.cfg[rk.engine]
    if len(rk.running) >= cfg.max_num_seqs:
        return True
    budget = cfg.max_num_batched_tokens - scheduled
    if budget <= 0:
        return True
    r = rk.waiting[0]
    bs = cfg.block_size
    ntok = sim.prompt[r] + sim.outs[r]
    hit = 0
    if cfg.enable_prefix_caching and sim.hit[r]:
        hit = min(sim.hit[r], ntok - 1) // bs * bs
    c = sim.ext[r] if sim.ext[r] > hit else hit
    new = ntok - c
    thr = cfg.long_prefill_token_threshold
    if 0 < thr < new:
        new = thr
    if not cfg.enable_chunked_prefill and new > budget:
        return True
    if new > budget:
        new = budget
    hb = hit // bs
    # blocks for the chunk, or under a reservation for the whole request (schedule's rule)
    tokens = sim.prompt[r] + sim.target[r] + cfg.lookahead if cfg.reserve_to_completion else c + new
    need = -(-min(tokens, sim.mml[rk.engine]) // bs) - hb
    extra_shared = hb - rk.shared if hb > rk.shared else 0
    return need + extra_shared > rk.free


def uniform(sim: Simulation, eng: Engine, plans: list[Plan], cols: list[list[tuple[Any, ...]]]) -> bool:
    """Every rank schedules exactly its running requests, each as a decode of 1 + k
    tokens (and the first chunk of a non-empty plan is not a stage change)."""
    anyp = False
    w = 1 + eng.cfg.num_speculative_tokens
    for rk, plan, col in zip(eng.ranks, plans, cols):
        n = len(plan)
        if n != len(rk.running):
            return False
        if not n:
            continue
        if col[1].count(w) != n or col[4].count(True) != n:  # in C over each column
            return False
        if sim.disagg and sim.stage[plan[0][0]] == 0:
            return False
        anyp = True
    return anyp


def run(
    sim: Simulation,
    eng: Engine,
    plans: list[Plan],
    t0: float,
    bound: float,
    others: float,
    d0: float,
    cols: list[list[tuple[Any, ...]]],
) -> bool:
    """Commit a run of decode steps starting with ``plans`` (already decided) at ``t0``.
    Returns False when the run is one step long (the caller takes the ordinary path).

    ``bound`` is the next event anywhere; ``others`` the next step end of another engine.
    With one engine of one rank whose waiting queue is blocked (its head cannot be
    admitted, and so no request behind it: FCFS), an arrival only joins the queue's tail
    and changes no decision, so the run may pass it: the arrivals are routed after."""
    cfg = eng.cfg
    k = cfg.num_speculative_tokens
    bs = cfg.block_size
    la = cfg.lookahead
    mml = sim.mml[eng.index]
    a = cfg.accepted_per_step
    asy = cfg.async_scheduling
    ranks = eng.ranks
    for rk, plan in zip(ranks, plans):
        if not waiting_blocked(sim, rk, len(plan) * (1 + k)):
            return False
    recv_n = cfg.recv_interval
    if len(sim.engines) == 1 and len(ranks) == 1 and ranks[0].waiting and recv_n <= 1:
        bound = others  # blocked (checked above), so arrivals cannot change a decision
    # step 1 is decided at t0 + d0 (sync) or t0 (async): too close to the bound, no run
    room = (bound - t0) / d0 if d0 > 0 else INF
    if room < 1.0:
        return False
    # the longest run possible: until the first request's last token; or, one token a step
    # with no request waiting anywhere (a finished request frees blocks nobody claims),
    # until the last one's, each request leaving the batch after its last token. Not while
    # a closed-loop client still has requests to send: the seat a finish frees brings the
    # next request a step or two later, so such a run would price more steps than it keeps.
    closed = bool(sim.max_in_flight) and sim.next_to_send < sim.n
    shrink = k == 0 and not closed and not any(rk.waiting or rk.inbox for rk in ranks)
    if k == 0:
        # the cheap refusals first, in C over the plan's request ids: a first token still in
        # flight (the ordinary path stamps it), and a last token in step 0 when the run
        # cannot go past it
        oute, outs, target = sim.oute, sim.outs, sim.target
        for col in cols:
            if col:
                rl = col[0]
                if min(map(oute.__getitem__, rl)) == 0:
                    return False
                if not shrink and min(map(sub, map(target.__getitem__, rl), map(outs.__getitem__, rl))) <= 0:
                    return False
    # the busy ranks' requests as one set of columns, in rank order then plan order
    busy = [i for i, plan in enumerate(plans) if plan]
    sizes = [len(plans[i]) for i in busy]
    # the plans' columns (one busy rank: its own; else joined rank after rank)
    pc = cols[busy[0]] if len(busy) == 1 else [tuple(chain.from_iterable(cols[i][j] for i in busy)) for j in range(4)]
    rid = np.array(pc[0], dtype=np.int64)
    if k and sim.oute_a[rid].min() == 0:
        return False  # a first token still in flight: the ordinary path stamps it
    c0 = np.array(pc[2], dtype=np.int64)
    e0 = np.array(pc[3], dtype=np.int64)
    o0 = sim.outs_a[rid]  # after step 0's placeholder
    left = sim.target_a[rid] - o0  # tokens still to schedule after step 0
    # the step of each request's last token (one token a step: step `left`)
    f = left if k == 0 else _spec_finish(sim, rid, left, a)
    m = int(f.max()) + 1 if shrink else int(f.min()) + 1
    if m <= 1:
        return False
    # a cap so a single call stays a bounded size, and one from the bound: decode steps
    # only lengthen as contexts grow, so about (bound - t0) / step-0 steps fit before it
    # (a wrong guess only shortens the run; the commit below cuts at the bound exactly)
    m = min(m, 4096)
    if recv_n > 1:
        # SGLang's receive interval (scheduler.receive): the decision of step j >= 1 adds a
        # decode step's weight, 1, to each rank's counter; the one reaching the interval
        # takes routed requests in, which the ordinary path does
        for rk in ranks:
            if rk.inbox:
                m = min(m, recv_n - rk.recv)
        if m <= 1:
            return False
    if room + 2 < m:
        m = int(room) + 2
    q = len(busy)
    offs = np.cumsum([0, *sizes])
    held = sim.blk_a[rid]  # after step 0
    table = held + sim.hitb_a[rid]  # block tables: held and shared prefix blocks
    blocks_ok = m
    spec = None
    if k == 0:
        # one token a step: request i computes c0 + j tokens before step j and first
        # needs block held + 1 at step s = held·bs − c0, then one more every bs steps
        # (while it is scheduled: through its last token at step f); new blocks by step
        # j, per busy rank
        seg = np.repeat(np.arange(q, dtype=np.int64), sizes)
        hops = (table * bs - c0)[:, None] + bs * np.arange(-(-m // bs) + 1, dtype=np.int64)[None, :]
        keep = (hops < m) & (hops <= f[:, None])
        slot = (seg[:, None] * m + hops)[keep]
        extra = np.cumsum(np.bincount(slot, minlength=q * m).reshape(q, m), axis=1)
        # the input position stays below max_model_len: a request at c0 + j = mml - 1
        # schedules nothing at step j (a change of batch), so the run ends before it
        near = mml - 1 - c0
        near = near[(near < m) & (near <= f)]
        if len(near):
            blocks_ok = min(blocks_ok, max(int(near.min()), 0))
    else:
        adv, emit = _spec_columns(sim, rid, e0, left, m, a)
        cb = np.empty((len(rid), m), dtype=np.int64)
        cb[:, 0] = c0
        if m > 1:
            np.cumsum(adv[:, :-1], axis=1, out=cb[:, 1:])
            cb[:, 1:] += c0[:, None]
        need_tok = np.minimum(cb + (1 + k) + la, mml)
        blocks = -(-need_tok // bs)  # blocks step j needs
        extra = np.add.reduceat(np.maximum(blocks - table[:, None], 0), offs[:-1], axis=0)  # new blocks by step j
        near_j = np.nonzero((cb + 1 + k > mml - 1).any(axis=0))[0]
        if len(near_j):
            blocks_ok = min(blocks_ok, int(near_j[0]))
        spec = (adv, emit, cb, blocks)
    free = np.array([ranks[i].free for i in busy], dtype=np.int64)
    over = np.nonzero((extra > free[:, None]).any(axis=0))[0]
    if len(over):
        blocks_ok = min(blocks_ok, int(over[0]))
    m = min(m, blocks_ok)
    if m <= 1:
        return False
    r = RunColumns(busy, offs.tolist(), rid, c0, o0, f, held, table - held, extra, spec)
    # price steps 0..m-1 of every rank; the engine's step is its slowest rank's
    dd_all, bb_all = price_run(eng, r, m, k)
    dur, bott = dd_all[0].copy(), bb_all[0].copy()
    for dd, bb in zip(dd_all[1:], bb_all[1:]):
        longer = dd > dur  # strictly: the first rank wins a tie, as the step-by-step loop
        dur[longer] = dd[longer]
        bott[longer] = bb[longer]
    if len(ranks) > q:
        # idle ranks run empty steps beside the busy ones
        if eng.empty is None:
            eng.empty = sim._empty(eng)
        ev, eb = eng.empty
        longer = ev > dur
        dur[longer] = ev
        bott[longer] = eb
    # times: t[j] = start of step j (t[m] = end of the last), summed in loop order
    times = np.cumsum(np.concatenate(([t0], dur)))
    # the scheduling decision of step j comes at t[j] (sync) or t[j-1] (async): stop
    # before the first decision at or after the bound
    dec = times[1:m] if not asy else times[0 : m - 1]
    late = np.nonzero(dec >= bound)[0]
    if len(late):
        m = 1 + int(late[0])
    if m <= 1:
        return False
    commit = m if not asy else m - 1  # async: the last decided step stays pending
    if commit < 1:
        return False
    _commit(sim, eng, r, m, commit, times, dur, bott)
    return True


def _spec_finish(sim: Simulation, rid: np.ndarray, left: np.ndarray, a: float) -> np.ndarray:
    """Steps after step 0 until each request's last token, under the acceptance carry."""
    out = np.empty(len(rid), dtype=np.int64)
    for i, r in enumerate(rid.tolist()):
        n0 = sim.nspec[r]
        ph = float(sim.phase[r])
        lft = int(left[i])
        j = 0
        got = 0
        while got < lft:
            n = n0 + j
            got += 1 + math.floor((n + 1) * a + ph) - math.floor(n * a + ph)
            j += 1
        out[i] = j
    return out


def _spec_columns(
    sim: Simulation, rid: np.ndarray, e0: np.ndarray, left: np.ndarray, m: int, a: float
) -> tuple[np.ndarray, np.ndarray]:
    nreq = len(rid)
    adv = np.empty((nreq, m), dtype=np.int64)
    emit = np.empty((nreq, m), dtype=np.int64)
    for i, r in enumerate(rid.tolist()):
        # step 0 already drew its acceptance: nspec counts it
        n0 = sim.nspec[r] - 1
        ph = float(sim.phase[r])
        lft = int(left[i])
        acc0 = int(e0[i]) - 1
        adv[i, 0] = 1 + math.floor((n0 + 1) * a + ph) - math.floor(n0 * a + ph)
        emit[i, 0] = e0[i]
        del acc0
        for j in range(1, m):
            n = n0 + j
            acc = math.floor((n + 1) * a + ph) - math.floor(n * a + ph)
            adv[i, j] = 1 + acc
            e = 1 + acc
            if e > lft:
                e = max(lft, 0)
            emit[i, j] = e
            lft -= e
    return adv, emit


def _commit(
    sim: Simulation,
    eng: Engine,
    r: RunColumns,
    m: int,
    commit: int,
    times: np.ndarray,
    dur: np.ndarray,
    bott: np.ndarray,
) -> None:
    """Apply decisions for steps 0..m-1 and the outputs of steps 0..commit-1, as the
    step-by-step loop takes them one by one."""
    k = eng.cfg.num_speculative_tokens
    bs = eng.cfg.block_size
    otpt = sim.otpt
    ranks = eng.ranks
    last = m - 1  # the last decided step
    rid, c0, f, held = r.rid, r.c0, r.f, r.held
    n = len(rid)
    # bookkeeping for every committed step (a rank's step each)
    sim.steps += commit * len(ranks)
    dc = dur[:commit]
    bc = bott[:commit]
    eng.busy_s += float(dc.sum())
    for res in set(bc.tolist()):
        sim.bottleneck[res] = sim.bottleneck.get(res, 0.0) + float(dc[bc == res].sum())
    tot = eng.usable
    used0 = tot - sum(rk.free for rk in ranks)
    extra_all = r.extra[:, :m].sum(axis=0)
    # KV samples at the ends of steps 0..commit-2 (the last one is taken from the state
    # after its outputs, below): decided through step j (sync) or j + 1 (async), less the
    # blocks requests finished by then have freed
    shift = 1 if eng.cfg.async_scheduling else 0
    kv_j = used0 + extra_all[shift : commit - 1 + shift]
    # decisions through step `last` (blocks are only ever added: a request keeps what
    # it holds when rolled-back drafts leave it more than the formula)
    if k == 0:
        # one token a step while scheduled: request i's last decision in the run is at
        # step min(f_i, last), and it emits at steps 0..min(f_i, commit - 1)
        lastd = np.minimum(f, last)
        first = (held + r.shared) * bs - c0
        comp_new = c0 + (lastd + 1)
        outs_new = r.o0 + lastd
        blk_new = held + np.where(lastd >= first, (lastd - first) // bs + 1, 0)
        em: Any = np.minimum(f + 1, commit)
        e0: Any = 1
    else:
        assert r.spec is not None
        adv, emit, cb, blocks = r.spec
        comp_new = cb[:, last] + adv[:, last]
        outs_new = r.o0 + emit[:, 1 : last + 1].sum(axis=1)
        blk_new = np.maximum(blocks[:, last] - r.shared, held)
        em = emit[:, :commit].sum(axis=1)
        e0 = emit[:, 0]
    for i, ri in enumerate(r.busy):
        ranks[ri].free -= int(r.extra[i, last])
    recv_n = eng.cfg.recv_interval
    if recv_n > 1:
        # the run's decisions of steps 1..m-1, a decode step's weight each (scheduler.receive:
        # the counter returns to 0 on reaching the interval; an idle rank's stays at 0)
        for rk in ranks:
            rk.recv = (rk.recv + last) % recv_n if (rk.running or rk.waiting) else 0
    sim.comp_a[rid] = comp_new
    sim.outs_a[rid] = outs_new
    sim.blk_a[rid] = blk_new
    if k:
        sim.nspec_a[rid] += last
    # outputs of steps 0..commit-1 at once: every request here has emitted before, so
    # each emission is a gap
    ends = times[1 : commit + 1]
    sim.itl_vals.append((ends[0] - sim.last_emit_a[rid]) + e0 * otpt)
    sim.itl_wts.append(np.ones(n, dtype=np.int64))
    if commit > 1:
        gaps = np.diff(ends)  # step j's end minus step j-1's end, j = 1..commit-1
        if k == 0:
            # every request sees the engine's step gaps: each once, weighted by the
            # requests emitting at it
            w = np.bincount(np.minimum(f, commit - 1), minlength=commit)[::-1].cumsum()[::-1][1:]
            sim.itl_vals.append(gaps + otpt)
            sim.itl_wts.append(w)
        else:
            sim.itl_vals.append((gaps[None, :] + emit[:, 1:commit] * otpt).reshape(-1))
            sim.itl_wts.append(np.ones(n * (commit - 1), dtype=np.int64))
    o = sim.oute_a[rid] + em
    sim.oute_a[rid] = o
    fin = np.flatnonzero(o >= sim.target_a[rid])
    seg = np.repeat(np.arange(len(r.busy)), np.diff(r.offs))
    if k == 0:
        at = np.minimum(f, commit - 1)  # the step each emits last
        sim.last_emit_a[rid] = ends[at]
        if len(fin):
            # finished requests leave in step order, rank and plan order within a step, as
            # the step-by-step loop takes them; their blocks return to the pool then
            fin = fin[np.argsort(at[fin], kind="stable")]
            if commit > 1:
                freed = np.bincount(at[fin], weights=blk_new[fin], minlength=commit)[: commit - 1]
                kv_j = kv_j - np.cumsum(freed).astype(np.int64)
            for i, q in zip(fin.tolist(), rid[fin].tolist()):
                sim._finish(ranks[r.busy[seg[i]]], q, float(ends[at[i]]))
    else:
        t_last = float(ends[-1])
        sim.last_emit_a[rid] = t_last
        for i, q in zip(fin.tolist(), rid[fin].tolist()):
            sim._finish(ranks[r.busy[seg[i]]], q, t_last)
    if commit > 1:
        sim.kv_samples(times[1:commit], kv_j / tot)
    eng.t = float(times[commit])
    sim.now = eng.t
    sim._kv_sample(eng, eng.t)
    if commit < m:
        # the last decided step stays pending (async): the requests still scheduled at it
        pending: list[Plan] = [[] for _ in ranks]
        if k == 0:
            keep = f >= last
            pend_c, pend_e = c0 + last, np.ones(n, dtype=np.int64)
        else:
            keep = np.ones(n, dtype=bool)
            pend_c, pend_e = cb[:, last], emit[:, last]
        for i, ri in enumerate(r.busy):
            lo, hi = r.offs[i], r.offs[i + 1]
            kk = keep[lo:hi]
            ids = rid[lo:hi][kk].tolist()
            nk = len(ids)
            pending[ri] = list(
                zip(ids, [1 + k] * nk, pend_c[lo:hi][kk].tolist(), pend_e[lo:hi][kk].tolist(), [True] * nk)
            )
        eng.pending = pending

"""The stream: an engine's steps taken one at a time, its decodes kept as sums.

Under an open loop's arrivals the batch changes every few steps (a prompt joins, a request
leaves), too often for the vectorised runs of ``runs.py`` to pay for themselves. Most of
those steps are still plain decodes and at most a whole new prompt or two. In a step like
that, a decode's state is known from two numbers fixed when it joins the batch: request r
has computed ``a_r + D`` tokens before decision D, and decision ``L_r`` schedules its last
token. Its next KV block falls due whenever ``a_r + D`` is a multiple of the block size. So
a step needs only the decodes' count and context sum (``n``, ``A + n·D``) and the block
count due at ``D mod block_size``; it is priced from those numbers by the step model's
``aggregate_step_time`` (optional beyond the StepModel protocol: the same bits as
``step_time`` on the rows). A step then costs O(1) work in the number of requests. Events
cost O(1) each too: an admission, a request's last token, a client's send, an arrival
routed.

Each rule is the scheduler's (``scheduler.schedule``), taken in the same order, at the same
moments as the step-by-step loop of ``sim.py``. The stream routes every client event and
arrival due by a decision before taking it, as the main loop does, and in async scheduling
it decides step D + 1 at step D's launch, before step D's outputs. The result is the
step-by-step loop's exactly (tests/test_serving_stream.py).

Where it applies: engines of one rank each (one replica, or data-parallel replicas that
step on their own; not attention-DP ranks in lockstep), no drafts, not a disaggregated pool,
no batch waiting, no prefill batch run alone (SGLang's default), skip-ahead on, and a step model with ``aggregate_step_time``. Replicas take
their steps in one loop, the earliest launch first (the lowest index on a tie, as the main
loop), and an arrival goes to the least loaded as the router sends it. It is entered at a
launch when every busy engine's running requests are plain decodes that emitted at the
previous step, with KV blocks exactly what their tokens fill (the allocator leaves them so),
or under a reservation to completion exactly their whole request's (admissions then take the
whole request's blocks, and no decode's block falls due).
It stops, writing the request columns back, before the first decision it cannot take as a
sum, or when an arrival wakes an idle replica (that replica launches at once, the ordinary
way):

- a decode the free pool cannot serve (the scheduler preempts there);
- an admission that is not a whole fresh prompt (a chunk, a prefix-cache hit, a re-admission
  after preemption, transferred KV);
- more decodes than the token budget;
- a step the step model has no aggregate price for;
- a request whose context would reach ``max_model_len``;
- an empty decision (the engine drains);
- with one engine only, a long stretch ahead: more than ``LONG`` steps to the next arrival
  with nobody waiting, or to the next last token while the queue's head is held. Then a
  vectorised run (``runs.py``) costs less.
"""

from __future__ import annotations

import heapq
import math
from typing import TYPE_CHECKING, Any

import numpy as np

from latencykernel.batch import Batch
from latencykernel.serving.run_price import bad_time

if TYPE_CHECKING:
    from latencykernel.serving.sim import Engine, Simulation
    from latencykernel.serving.state import Plan

__all__ = ["applies", "stream", "LONG"]

INF = math.inf
LONG = 48  # steps to the next arrival from which a vectorised run takes over
_NONE: list[Any] = []  # an empty list shared by the steps that have none (never appended to)


def applies(sim: Simulation, eng: Engine) -> bool:
    """Whether the stream may take ``eng``'s steps at all (fixed for a simulation)."""
    cfg = eng.cfg
    return (
        cfg.skip_ahead
        and eng.step1 is not None
        and len(eng.ranks) == 1
        and cfg.num_speculative_tokens == 0
        and cfg.lookahead == 0
        and not sim.disagg
        and not cfg.batch_wait_iters  # TensorRT-LLM's batch waiting holds prompts: the ordinary path
        and cfg.recv_interval <= 1  # SGLang's receive interval (scheduler.receive): the ordinary path
        and not cfg.prefill_alone  # SGLang's prefill batches run alone (scheduler.schedule): the ordinary path
    )


class _Lazy:
    """The decodes as sums. Members are the running requests in their decode phase: ``a[r]``
    (computed tokens before decision D are a[r] + D), ``last[L]`` (the members whose last
    token decision L schedules), ``first[r]`` (the first decision that schedules it as a
    decode). ``n``, ``A`` and ``due`` (members by the residue D mod block size at which a
    block falls due) describe the next decision's decodes."""

    __slots__ = ("a", "first", "end", "last", "ends", "n", "A", "due", "X")

    def __init__(self, bs: int) -> None:
        self.a: dict[int, int] = {}
        self.first: dict[int, int] = {}
        self.end: dict[int, int] = {}  # L[r]
        self.last: dict[int, list[int]] = {}
        self.ends: list[int] = []  # a heap of the members' last decisions (stale ones below X)
        self.n = 0
        self.A = 0
        self.due = [0] * bs
        self.X = -1  # the last decision taken

    def join(self, r: int, a: int, first: int, last: int, bs: int) -> None:
        self.a[r] = a
        self.first[r] = first
        self.end[r] = last
        heapq.heappush(self.ends, last)
        lst = self.last.get(last)
        if lst is None:
            self.last[last] = [r]
        else:
            lst.append(r)
        self.n += 1
        self.A += a
        self.due[-a % bs] += 1


class _Eng:
    """One engine in the stream (its next launch is ``eng.t``): its lazy state, the step whose
    outputs come next (async: decided at the previous launch: its decodes' count and context
    sum, its prompt rows and the requests it ends that are not members), the pending plan it
    entered with, and its last step's duration."""

    __slots__ = ("eng", "rk", "lz", "step", "orig", "d_last")

    def __init__(self, eng: Engine, lz: _Lazy, step: tuple[int, int, list, list], orig: Any) -> None:
        self.eng = eng
        self.rk = eng.ranks[0]
        self.lz = lz
        self.step = step
        self.orig = orig
        self.d_last = INF  # no stretch is long before a step is priced


def _enter(sim: Simulation, eng: Engine) -> _Eng | None:
    """``eng`` in the stream at its next launch, or None where it cannot enter."""
    cfg = eng.cfg
    lz = _Lazy(cfg.block_size)
    orig = eng.pending
    if cfg.async_scheduling:
        if orig is None:
            return None
        got = _enter_async(sim, eng, lz, eng.t)
        if got is None:
            return None
        return _Eng(eng, lz, got, orig)
    if not _enter_sync(sim, lz, eng.ranks[0], eng.t, cfg.block_size):
        return None
    return _Eng(eng, lz, (0, 0, _NONE, _NONE), None)


def stream(sim: Simulation) -> bool:
    """Take the engines' steps, earliest launch first (the lowest index on a tie, as the main
    loop), while the stream applies to every busy engine (see the module docstring). Returns
    whether it took any. On return, the simulation is where the step-by-step loop would have
    left it: every engine at its next launch, the columns written back, and under async
    scheduling each engine's next step decided as its ``pending``."""
    states: list[_Eng] = []
    for e in sim.engines:
        if e.t < INF:
            st = _enter(sim, e)
            if st is None:
                for o in states:  # nothing taken: as they were
                    o.eng.pending = o.orig
                return False
            states.append(st)
    if not states:
        return False
    one = len(states) == 1 and len(sim.engines) == 1  # a long stretch may go to a vectorised run
    otpt = sim.otpt
    target, prompt, outs, hit, ext = sim.target, sim.prompt, sim.outs, sim.hit, sim.ext
    vals: list[float] = []
    wts: list[int] = []
    kv_t, kv_u = sim.kv_t, sim.kv_u
    bneck = sim.bottleneck
    total = sim.n
    taken = 0
    nxt = _next_event(sim)
    cur = states[0]
    eng, rk, lz, t, d_last, step_n, step_s, step_rows, step_done = _state(cur)
    asy, bs, price, th, overlap, mnbt, mns, mml, thr, chunked, pc, waiting, running, usable, resv = _settings(sim, cur)
    while True:
        if sim.completed >= total:
            break  # the main loop stops here: nothing more is routed
        st = cur
        if not one:
            st = states[0]
            for o in states:
                if o.eng.t < st.eng.t:  # strictly: the first engine wins a tie, as the main loop
                    st = o
            if st is not cur:
                cur.step, cur.d_last = (step_n, step_s, step_rows, step_done), d_last
                cur = st
                eng, rk, lz, t, d_last, step_n, step_s, step_rows, step_done = _state(cur)
                asy, bs, price, th, overlap, mnbt, mns, mml, thr, chunked, pc, waiting, running, usable, resv = (
                    _settings(sim, cur)
                )
        if nxt <= t:
            woke = _route(sim, t)
            nxt = _next_event(sim)
            if woke:
                break  # an idle engine woke: it launches first, and the ordinary path takes that step
        D = lz.X + 1
        # --- decision D, tried without effect first: decodes, their blocks, admissions
        n = lz.n
        if n > mnbt:
            break
        newb = 0 if resv else lz.due[D % bs]  # reserved to completion: no block ever falls due
        free = rk.free - newb
        if free < 0:
            break
        adm: list[tuple[int, int, int]] = _NONE
        if waiting:
            adm = []
            budget = mnbt - n
            seats = mns - len(running)
            stop = False
            for r in waiting:
                if budget <= 0 or seats <= 0:
                    break
                if outs[r] or ext[r] or (pc and hit[r]):
                    stop = True  # a re-admission, transferred KV or a prefix hit
                    break
                new = prompt[r]
                if 0 < thr < new:
                    stop = True  # a chunk
                    break
                if new > budget:
                    stop = chunked  # a chunk; without chunking the head waits
                    break
                need = new + target[r] if resv else new  # the whole request reserved at admission
                need = -(-(need if need < mml else mml) // bs)
                if need > free:
                    break  # allocate_slots refuses: the head waits
                if target[r] > 1 and new + target[r] > mml:
                    stop = True  # its context would reach max_model_len
                    break
                free -= need
                budget -= new
                seats -= 1
                adm.append((r, new, need))
            if stop:
                break
        if not n and not adm:
            break  # an empty decision: the ordinary path takes it
        if asy:
            # the step launching now is the one decided before: price it
            rows_n, rows_s = step_n, step_s
            rows = step_rows
        else:
            rows_n, rows_s, rows = n, lz.A + n * D, [(r, new) for r, new, _ in adm] if adm else _NONE
        if one and not adm and not rows:
            # a long stretch of plain decodes ahead: a vectorised run costs less. With nobody
            # waiting it lasts until the next arrival (runs pass last tokens); with the
            # queue's head held (seats or blocks), until the next last token frees some
            if not waiting:
                if (nxt - t) > LONG * d_last:
                    break
            else:
                ends = lz.ends
                while ends and ends[0] < D:
                    heapq.heappop(ends)
                if ends and ends[0] - D > LONG:
                    break
        if rows:
            e = price(rows_n, 1, rows_s, Batch.trusted([x[1] for x in rows], [0] * len(rows), th), decode_threshold=th)
        else:
            e = price(rows_n, 1, rows_s, None, decode_threshold=th)
        if e is None:
            # no aggregate price for this step (a per-request read law, or a prefill the
            # kernel hands to its reference under PCP/DCP): the stream stays off for the rest
            # of the simulation, and the ordinary path prices the rows
            eng.step1 = None
            sim.streams = False
            break
        d = e.overlap if overlap else e.no_overlap
        if not 0.0 <= d < INF:
            raise bad_time(f"aggregate_step_time of a {rows_n + len(rows)}-request batch", d)
        # --- take decision D
        sim.now = t
        s_d = lz.A + n * D
        rk.free -= newb
        ending = lz.last.get(D)
        if ending:
            a_of = lz.a
            due = lz.due
            for r in ending:
                a = a_of[r]
                lz.n -= 1
                lz.A -= a
                due[-a % bs] -= 1
        extra_done: list[int] = _NONE
        if adm:
            extra_done = []
        for r, new, need in adm:
            waiting.popleft()
            running.append(r)
            rk.free -= need
            sim.blk[r] = need
            sim.hitb[r] = 0
            sim.comp[r] = new
            outs[r] = 1
            if sim.first_sched[r] < 0:
                sim.first_sched[r] = t
            tg = target[r]
            if tg > 1:
                lz.join(r, new - D - 1, D + 1, D + tg - 1, bs)
            else:
                extra_done.append(r)
        lz.X = D
        # --- the step launching now: its accounts and, at its end, its outputs
        sim.steps += 1
        eng.busy_s += d
        b = e.bottleneck
        bneck[b] = bneck.get(b, 0.0) + d
        t_end = t + d
        if asy:
            out_n, out_rows, out_done = step_n, step_rows, step_done
            step_n, step_s, step_rows = n, s_d, [(r, new) for r, new, _ in adm] if adm else _NONE
            step_done = extra_done
            out_last = D - 1
        else:
            out_n, out_rows, out_done, out_last = n, rows, extra_done, D
        if out_n:
            vals.append((t_end - t) + otpt)
            wts.append(out_n)
        for r, _new in out_rows:
            sim.oute[r] = 1
            sim.first_client[r] = t_end + otpt
            sim.last_emit[r] = t_end
        fin = lz.last.pop(out_last, None)
        if fin or out_done:
            if fin:
                _finish_members(sim, rk, lz, fin, out_last, t_end, bs)
            for r in out_done:
                sim.oute[r] = target[r]
                sim.last_emit[r] = t_end
                sim._finish(rk, r, t_end)
            sim.report()
            nxt = _next_event(sim)
        kv_t.append(t_end)  # sim._kv_sample for one rank
        kv_u.append((usable - rk.free) / usable)
        d_last = d
        t = t_end
        eng.t = t
        taken += 1
    cur.step, cur.d_last = (step_n, step_s, step_rows, step_done), d_last
    if vals:
        sim.itl_vals.append(np.array(vals, dtype=np.float64))
        sim.itl_wts.append(np.array(wts, dtype=np.int64))
    for st in states:
        e = st.eng
        sim.now = e.t
        if e.cfg.async_scheduling and st.lz.X == 0:
            e.pending = st.orig  # no decision taken: step 0 stays pending as it was decided
            continue
        n, _s, rows, _done = st.step
        _leave(sim, e, st.lz, e.t, e.cfg.block_size, (n, rows) if e.cfg.async_scheduling else None)
    return taken > 0


def _state(st: _Eng) -> tuple[Any, ...]:
    """An engine's mutable stream state as the loop holds it in locals."""
    return (st.eng, st.rk, st.lz, st.eng.t, st.d_last, *st.step)


def _settings(sim: Simulation, st: _Eng) -> tuple[Any, ...]:
    """An engine's fixed settings as the loop holds them in locals."""
    eng = st.eng
    cfg = eng.cfg
    return (
        cfg.async_scheduling,
        cfg.block_size,
        eng.step1,
        cfg.decode_threshold,
        cfg.overlap,
        cfg.max_num_batched_tokens,
        cfg.max_num_seqs,
        sim.mml[eng.index],
        cfg.long_prefill_token_threshold,
        cfg.enable_chunked_prefill,
        cfg.enable_prefix_caching,
        st.rk.waiting,
        st.rk.running,
        eng.usable,
        cfg.reserve_to_completion,
    )


def _next_event(sim: Simulation) -> float:
    """The earliest client event or arrival, as the main loop would next take one."""
    ts = sim._next_client_time()
    ta = sim.arrivals[0][0] if sim.arrivals else INF
    return ts if ts < ta else ta


def _route(sim: Simulation, t: float) -> bool:
    """Every client event and arrival due by ``t``, in the main loop's order (a client event
    first on a tie, then an arrival, then the engine). Returns whether an arrival woke an
    idle engine: it launches at that arrival's time, before anything later, so the routing
    stops there (after the events due at that same time, which the main loop takes first)."""
    arrivals = sim.arrivals
    engines = sim.engines
    woke = False
    while True:
        ts = sim._next_client_time()
        ta = arrivals[0][0] if arrivals else INF
        if ts <= ta and ts <= t and ts < INF:
            sim._client(ts)
            continue
        if ta <= t and ta < INF:
            ready, _, r = heapq.heappop(arrivals)
            idle = sum(1 for e in engines if e.t == INF)
            sim._route(r, ready)
            if sum(1 for e in engines if e.t == INF) < idle:
                woke = True
                t = ready
            continue
        return woke


def _finish_members(sim: Simulation, rk: Any, lz: _Lazy, fin: list[int], L: int, t: float, bs: int) -> None:
    """Members whose last token (decision ``L``) a step emitted at ``t``: their columns
    written as the scheduler left them, then each request ends (its blocks return)."""
    a_of, first, end = lz.a, lz.first, lz.end
    resv = sim.cfg[rk.engine].reserve_to_completion
    for r in fin:
        c = a_of.pop(r) + L + 1
        del first[r], end[r]
        tg = sim.target[r]
        sim.comp[r] = c
        sim.outs[r] = tg
        sim.oute[r] = tg
        if not resv:  # reserved to completion, it holds what it was admitted with
            sim.blk[r] = -(-c // bs) - sim.hitb[r]
        sim.last_emit[r] = t
        sim._finish(rk, r, t)


def _enter_sync(sim: Simulation, lz: _Lazy, rk: Any, t: float, bs: int) -> bool:
    """The lazy state of ``rk``'s running requests before decision 0 (synchronous
    scheduling), or False where one is not a plain decode that emitted at ``t`` with its
    blocks exactly filled (under a reservation: exactly its whole request's), or would reach
    max_model_len."""
    if not rk.running:
        return False
    run = np.array(rk.running, dtype=np.int64)
    c = sim.comp_a[run]
    o = sim.outs_a[run]
    tg = sim.target_a[run]
    mml = sim.mml[rk.engine]
    # blocks held: what the tokens fill, or under a reservation the whole request's
    filled = (
        -(-np.minimum(sim.prompt_a[run] + tg, mml) // bs) if sim.cfg[rk.engine].reserve_to_completion else -(-c // bs)
    )
    ok = (
        (o < tg)
        & (c == sim.prompt_a[run] + o - 1)
        & (sim.oute_a[run] == o)
        & (sim.last_emit_a[run] == t)
        & (sim.blk_a[run] + sim.hitb_a[run] == filled)
        & (c + (tg - o) + 1 <= mml)
    )
    if not ok.all():
        return False
    # decision D computes c + D; the last token is decision tg - o - 1
    for r, a, L in zip(run.tolist(), c.tolist(), (tg - o - 1).tolist()):
        lz.join(r, a, 0, L, bs)
    return True


def _enter_async(sim: Simulation, eng: Engine, lz: _Lazy, t: float) -> tuple[int, int, list, list] | None:
    """The lazy state under async scheduling at the launch of step 0, decided before as
    ``eng.pending``: members for decision 1 on, and step 0 as (decodes, their context sum,
    prompt rows, requests it ends that are not members); or None where the pending plan is
    not plain decodes and whole fresh prompts over every running request, or a decode did not
    emit at ``t``, holds other than exactly its blocks, or would reach max_model_len."""
    rk = eng.ranks[0]
    bs = eng.cfg.block_size
    assert eng.pending is not None
    plan = eng.pending[0]
    if not plan or len(plan) != len(rk.running):
        return None
    mml = sim.mml[eng.index]
    resv = eng.cfg.reserve_to_completion
    prompt, target, comp, outs, oute = sim.prompt, sim.target, sim.comp, sim.outs, sim.oute
    last = plan[-1]
    if not last[4] and (last[2] != 0 or last[1] != prompt[last[0]]):
        return None  # the plan ends in a chunk (its prompt rows come last): the common refusal, cheaply
    dec: list[int] = []
    rows: list[tuple[int, int]] = []
    done: list[int] = []
    s0 = 0
    for r, new, c, e, decoding in plan:
        tg = target[r]
        o = outs[r]
        if decoding:
            if new != 1 or e != 1 or comp[r] != c + 1 or oute[r] != o - 1 or sim.last_emit[r] != t:
                return None
            dec.append(r)
            s0 += c
        else:
            p = prompt[r]
            if c != 0 or new != p or e != 1 or o != 1 or oute[r] != 0 or comp[r] != p or sim.hitb[r]:
                return None
            rows.append((r, new))
        held = sim.blk[r] + sim.hitb[r]
        cc = comp[r]
        if resv:
            whole = prompt[r] + tg
            filled = -(-(whole if whole < mml else mml) // bs)
        else:
            filled = -(-cc // bs)
        if held != filled or cc + (tg - o) + 1 > mml:
            return None
    # after decision 0: a member computes comp + (D - 1) before decision D; its last token is
    # decision tg - o (o counts step 0's placeholder)
    for r in dec + [r for r, _ in rows]:
        L = target[r] - outs[r]
        if L >= 1:
            lz.join(r, comp[r] - 1, 1, L, bs)
        else:
            done.append(r)  # its last token is step 0's
    lz.X = 0
    eng.pending = None
    return len(dec), s0, rows, done


def _leave(sim: Simulation, eng: Engine, lz: _Lazy, t: float, bs: int, step: tuple[int, list] | None) -> None:
    """Write the members' columns back as the step-by-step loop holds them at ``t``:
    decisions through ``lz.X`` taken, outputs through step ``lz.X`` (sync) or ``lz.X - 1``
    (async) processed; under async the decided step as ``eng.pending``."""
    X = lz.X
    P = X if step is None else X - 1
    comp, outs, oute, blk, hitb, last_emit, target = (
        sim.comp, sim.outs, sim.oute, sim.blk, sim.hitb, sim.last_emit, sim.target,
    )  # fmt: skip
    first, end = lz.first, lz.end
    resv = eng.cfg.reserve_to_completion
    for r, a in lz.a.items():
        f = first[r]
        if X < f:
            continue  # admitted at X, its prompt not yet computed: as admission left it
        L = end[r]
        x = X if X < L else L
        c = a + x + 1
        comp[r] = c
        outs[r] = target[r] - (L - x)
        if not resv:  # reserved to completion, it holds what it was admitted with
            blk[r] = -(-c // bs) - hitb[r]
        if P >= f - 1:
            p = P if P < L else L
            oute[r] = target[r] - (L - p)
            last_emit[r] = t
    if step is None:
        return
    # async: the step launching at t, decided at the previous launch, stays pending
    n, rows = step
    plan: Plan = []
    adm = {r for r, _ in rows}
    for r in eng.ranks[0].running:
        if r in adm:
            continue
        fr = first.get(r)
        if fr is not None and fr <= X <= end[r]:
            plan.append((r, 1, lz.a[r] + X, 1, True))
    assert len(plan) == n, "the stream's pending decodes do not match the running list (internal error)"
    for r, new in rows:
        plan.append((r, new, 0, 1, False))
    eng.pending = [plan]

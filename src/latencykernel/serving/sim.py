"""The discrete-event loop: clients, router, engines stepping, and the skip-ahead over runs of
identical decode steps.

Time is one clock in seconds. Events are request arrivals (after the frontend's admission
overhead) and engine step ends. An engine is one replica, or a group of attention-DP ranks
that step together (a step lasts as long as its slowest rank). Each rank runs the scheduler
of ``scheduler.py``.

Host overheads, from the step model (values of the BLIS cost model):

- per step: inside the step price (the model's host resource);
- per admitted request: ``admission_overhead(prompt)`` between the client's send and the
  request reaching the engine's waiting queue (frontend work, concurrent with steps);
- per output token: ``output_token_overhead()`` added to every client-observed gap per token
  emitted, as the BLIS simulator charges it (its ITL entry is the step advance plus tokens ×
  OutputTokenProcessingTime); the engine clock does not wait for it;
- completion: ``completion_overhead()`` between the last token and the end of the request as
  the client sees it (its E2EL, and in closed loop when its slot frees).

Skip-ahead: when every rank of an engine schedules exactly its running requests, each as a
decode, with nothing admissible waiting, the following steps differ only in their contexts
until the first of: a request's last token, a KV block the pool cannot give (the step that
would preempt), and the first step whose scheduling decision comes at or after the next event
any other part of the simulation may cause (an arrival, another engine's step end). Such a
run is priced in one vectorised ``step_times`` call and committed at once; its results equal
the step-by-step loop's exactly (tested).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from latencykernel.batch import Batch
from latencykernel.errors import LatencyKernelError
from latencykernel.serving.config import EngineConfig
from latencykernel.serving.scheduler import Rank, schedule
from latencykernel.serving.workload import Requests
from latencykernel.step_model import StepModel

__all__ = ["Simulation", "Pool"]

INF = math.inf
SHORT_RUN = 24  # runs up to this many steps are priced step by step (see _run)
FAST_OUTPUTS = 32  # plans from this size have their outputs taken with numpy
Plan = list[tuple[int, int, int, int, bool]]


class Pool:
    """Engines of one role sharing a step model: ``engines`` lists, per engine, its ranks."""

    def __init__(self, name: str, model: StepModel, cfg: EngineConfig, engines: int, ranks_per_engine: int) -> None:
        self.name = name
        self.model = model
        self.cfg = cfg
        self.engines = engines
        self.ranks_per_engine = ranks_per_engine


class _Engine:
    __slots__ = ("index", "pool", "ranks", "t", "pending", "busy_s", "model", "cfg", "price_over")

    def __init__(self, index: int, pool: int, ranks: list[Rank], model: StepModel, cfg: EngineConfig) -> None:
        self.index = index
        self.pool = pool
        self.ranks = ranks
        self.t = INF  # when it next launches a step (INF: idle)
        self.pending: list[Plan] | None = None  # async scheduling: the plan decided for the next step
        self.busy_s = 0.0
        self.model = model
        self.cfg = cfg


class Simulation:
    """One run. Build, then ``run()``; read the columns and accumulators after."""

    def __init__(
        self,
        pools: list[Pool],
        reqs: Requests,
        *,
        admission_s: Callable[[int], float],
        output_token_s: float,
        completion_s: float,
        transfer_s: Callable[[int], float] | None = None,
        phase: np.ndarray | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> None:
        self.pools = pools
        n = len(reqs)
        self.n = n
        self.prompt: list[int] = reqs.prompt.tolist()
        self.osl: list[int] = reqs.output.tolist()
        self.hit: list[int] = reqs.cached.tolist()
        self.send_at: list[float] = reqs.arrival_s.tolist()
        self.max_in_flight = reqs.max_in_flight
        self.disagg = len(pools) == 2
        # per stage target: on a prefill pool a request samples one token (max_tokens=1)
        self.target: list[int] = [1] * n if self.disagg else list(self.osl)
        self.comp = [0] * n
        self.outs = [0] * n
        self.oute = [0] * n  # output tokens the client has seen
        self.blk = [0] * n
        self.ext = [0] * n
        self.nspec = [0] * n
        self.stage = [0] * n
        self.first_sched = [-1.0] * n
        self.sent = [0.0] * n
        self.first_client = [0.0] * n
        self.done_client = [0.0] * n
        self.last_emit = [0.0] * n
        self.preempted = [0] * n
        self.phase = phase if phase is not None else np.zeros(n)
        self.admission_s = admission_s
        self.otpt = output_token_s
        self.completion_s = completion_s
        self.transfer_s = transfer_s
        self.progress = progress
        # engines and ranks
        self.engines: list[_Engine] = []
        self.cfg: list[EngineConfig] = []  # per engine
        self.mml: list[int] = []
        self.pool_engines: list[list[_Engine]] = []
        rank_id = 0
        for pi, pool in enumerate(pools):
            group = []
            for _ in range(pool.engines):
                ei = len(self.engines)
                ranks = []
                for _ in range(pool.ranks_per_engine):
                    ranks.append(Rank(rank_id, pool.cfg.usable_blocks, ei))
                    rank_id += 1
                eng = _Engine(ei, pi, ranks, pool.model, pool.cfg)
                self.engines.append(eng)
                self.cfg.append(pool.cfg)
                self.mml.append(pool.cfg.max_model_len if pool.cfg.max_model_len > 0 else 2**62)
                group.append(eng)
            self.pool_engines.append(group)
        self.rank_of = [0] * n
        self.now = 0.0
        # accumulators
        self.itl_one: list[float] = []  # single gaps (weight 1)
        self.itl_vals: list[Any] = []  # arrays of gaps from runs
        self.itl_wts: list[Any] = []  # their weights
        self.kv_t: list[Any] = []
        self.kv_u: list[Any] = []
        self.bottleneck: dict[str, float] = {}
        self.steps = 0
        self.preemptions = 0
        self.completed = 0
        self.in_flight = 0
        self.max_in_flight_seen = 0
        self.arrivals: list[tuple[float, int, int]] = []  # (ready time, seq, request)
        self.frees: list[float] = []  # client-side completion times not yet processed
        self._seq = 0
        self.next_to_send = 0
        self.last_token_t = 0.0
        self.backlog_at: list[tuple[float, int]] = []

    # ------------------------------------------------------------------ clients
    def _send(self, r: int, t: float) -> None:
        self.sent[r] = t
        self.in_flight += 1
        if self.in_flight > self.max_in_flight_seen:
            self.max_in_flight_seen = self.in_flight
        self._push(t + self.admission_s(self.prompt[r]), r)

    def _push(self, ready: float, r: int) -> None:
        heapq.heappush(self.arrivals, (ready, self._seq, r))
        self._seq += 1

    def _client(self, t: float) -> None:
        """At ``t``: completions the client has seen free their slots, then it sends every
        request due by ``t`` that has a slot (at ``t``, or at its own send time if later)."""
        frees = self.frees
        while frees and frees[0] <= t:
            heapq.heappop(frees)
            self.in_flight -= 1
        cap = self.max_in_flight
        while self.next_to_send < self.n:
            r = self.next_to_send
            if cap and self.in_flight >= cap:
                return
            at = self.send_at[r]
            if at > t:
                return
            self._send(r, at if at > t else t)
            self.next_to_send += 1

    def _next_client_time(self) -> float:
        t = self.frees[0] if self.frees else INF
        if self.next_to_send < self.n and not (self.max_in_flight and self.in_flight >= self.max_in_flight):
            at = self.send_at[self.next_to_send]
            if at < t:
                t = at
        return t

    # ------------------------------------------------------------------ routing
    def _route(self, r: int, t: float) -> None:
        # KNOWN DIVERGENCE S2: the balancer reads every rank's counts as they stand; vLLM's
        # frontend reads counts the coordinator publishes every 100 ms, plus its own increments.
        pool = self.stage[r] if self.disagg else 0
        best = None
        best_score = 1 << 62
        for eng in self.pool_engines[pool]:
            for rk in eng.ranks:
                s = rk.load_score()
                if s < best_score:  # strict: the lowest index wins a tie
                    best, best_score = rk, s
        assert best is not None
        best.waiting.append(r)
        self.rank_of[r] = best.index
        eng = self.engines[best.engine]
        if eng.t == INF:
            eng.t = t

    # ------------------------------------------------------------------ scheduler hooks
    def preempt(self, rk: Rank, v: int) -> None:
        rk.free += self.blk[v]
        self.blk[v] = 0
        self.comp[v] = 0
        self.ext[v] = 0  # a transferred KV is lost with its blocks: recompute everything
        rk.waiting.appendleft(v)
        self.preempted[v] += 1
        self.preemptions += 1

    def accept(self, r: int) -> int:
        """Drafts accepted this decode step: the fractional carry floor((n+1)α + φ) − floor(nα + φ).

        KNOWN DIVERGENCE S3: acceptance is spread evenly (α accepted drafts a step on average,
        phase φ drawn once per request), not drawn per step as a real draft model's is."""
        a = self.engines[0].cfg.accepted_per_step if not self.disagg else self.cfg[-1].accepted_per_step
        n = self.nspec[r]
        ph = float(self.phase[r])
        self.nspec[r] = n + 1
        return math.floor((n + 1) * a + ph) - math.floor(n * a + ph)

    # ------------------------------------------------------------------ main loop
    def run(self) -> None:
        self._client(0.0)
        engines = self.engines
        total = self.n
        tick = max(total // 100, 1)
        while self.completed < total:
            ts = self._next_client_time()
            ta = self.arrivals[0][0] if self.arrivals else INF
            te = INF
            eng = None
            for e in engines:
                if e.t < te:
                    te, eng = e.t, e
            if ts <= ta and ts <= te and ts < INF:
                self._client(ts)
                continue
            if ta <= te and ta < INF:
                ready, _, r = heapq.heappop(self.arrivals)
                self._route(r, ready)
                continue
            if eng is None:
                raise LatencyKernelError(
                    "the simulation stalled: requests wait that no engine can schedule (internal error; please report)"
                )
            # the next moment anything else may change: another engine's step end (its
            # completions send new requests), and, unless they cannot matter, arrivals
            others = INF
            for e in engines:
                if e is not eng and e.t < others:
                    others = e.t
            before = self.completed
            self._act(eng, min(ta, ts, others), others)
            if self.progress is not None and self.completed // tick != before // tick:
                self.progress(self.completed, total)

    def _act(self, eng: _Engine, bound: float, others: float = INF) -> None:
        """Engine ``eng`` launches its next step (or run of steps) at ``eng.t``."""
        t = eng.t
        self.now = t
        cfg = eng.cfg
        asy = cfg.async_scheduling
        if eng.pending is not None:
            plans = eng.pending
            eng.pending = None
            pre = False
        else:
            plans, pre = self._decide(eng)
        if not any(plans):
            eng.t = INF
            return
        d, bott = self._price(eng, plans)
        if cfg.skip_ahead and not pre and self._uniform(eng, plans):
            if self._run(eng, plans, t, bound, others, d):
                return
        self.steps += len(plans)
        t_end = t + d
        if asy:
            nxt, _ = self._decide(eng)
            eng.pending = nxt if any(nxt) else None
        self._account(eng, d, bott)
        for rk, plan in zip(eng.ranks, plans):
            self._outputs(rk, plan, t_end)
        self._kv_sample(eng, t_end)
        eng.t = t_end

    def _decide(self, eng: _Engine) -> tuple[list[Plan], bool]:
        plans = []
        pre = False
        for rk in eng.ranks:
            p, q = schedule(self, rk)
            plans.append(p)
            pre = pre or q
        return plans, pre

    def _price(self, eng: _Engine, plans: list[Plan]) -> tuple[float, str]:
        dt = eng.cfg.decode_threshold
        best = -1.0
        bott = "host"
        for plan in plans:
            if not plan and len(plans) > 1:
                # an idle attention-DP rank runs a dummy batch alongside the others; taken as
                # an empty step (host time only), never longer than a busy rank's
                b = Batch.from_columns([], [], decode_threshold=dt)
            else:
                b = Batch.from_columns([p[1] for p in plan], [p[2] for p in plan], decode_threshold=dt)
            e = eng.model.step_time(b)
            d = e.overlap if eng.cfg.overlap else e.no_overlap
            if d > best:
                best, bott = d, str(e.bottleneck)
        return best, bott

    def _account(self, eng: _Engine, d: float, bott: str) -> None:
        eng.busy_s += d
        self.bottleneck[bott] = self.bottleneck.get(bott, 0.0) + d

    def _kv_sample(self, eng: _Engine, t: float) -> None:
        """KV-cache use of ``eng``'s ranks at the end of a step, once its outputs are
        processed (under async scheduling the next step's blocks are already allocated)."""
        used = sum(rk.usable - rk.free for rk in eng.ranks)
        tot = sum(rk.usable for rk in eng.ranks)
        self.kv_t.append(t)
        self.kv_u.append(used / tot)

    def _outputs(self, rk: Rank, plan: Plan, t: float) -> None:
        """The client-visible effect of a finished step (vLLM's update_from_output)."""
        if len(plan) >= FAST_OUTPUTS and not self.disagg:
            self._outputs_many(rk, plan, t)
            return
        otpt = self.otpt
        for r, _n, _c, e, _dec in plan:
            if e == 0:
                continue
            if self.disagg and self.stage[r] == 0:
                self.oute[r] += e
                if self.oute[r] >= 1:  # the prefill pool's one token: move the KV to decode
                    self._finish_prefill(rk, r, t)
                continue
            o = self.oute[r] + e
            self.oute[r] = o
            if o == e:  # first chunk
                self.first_client[r] = t + o * otpt
            else:
                self.itl_one.append((t - self.last_emit[r]) + e * otpt)
            self.last_emit[r] = t
            if o >= self.target[r]:
                self._finish(rk, r, t)

    def _outputs_many(self, rk: Rank, plan: Plan, t: float) -> None:
        """``_outputs`` with numpy for a large plan: the same stamps, gaps and finishes."""
        otpt = self.otpt
        rs = [p[0] for p in plan if p[3]]
        if not rs:
            return
        es = [p[3] for p in plan if p[3]]
        oute, last_emit = self.oute, self.last_emit
        o_old = np.fromiter(map(oute.__getitem__, rs), dtype=np.int64, count=len(rs))
        e = np.array(es, dtype=np.int64)
        o_new = o_old + e
        gap = o_old > 0
        if gap.all():
            le = np.fromiter(map(last_emit.__getitem__, rs), dtype=np.float64, count=len(rs))
            self.itl_vals.append((t - le) + e * otpt)
            self.itl_wts.append(np.ones(len(rs), dtype=np.int64))
        else:
            for r, o, ee, g in zip(rs, o_new.tolist(), es, gap.tolist()):
                if g:
                    self.itl_one.append((t - last_emit[r]) + ee * otpt)
                else:
                    self.first_client[r] = t + o * otpt
        target = self.target
        done = []
        for r, o in zip(rs, o_new.tolist()):
            oute[r] = o
            last_emit[r] = t
            if o >= target[r]:
                done.append(r)
        for r in done:
            self._finish(rk, r, t)

    def _release(self, rk: Rank, r: int) -> None:
        rk.running.remove(r)
        rk.free += self.blk[r]
        self.blk[r] = 0

    def _finish(self, rk: Rank, r: int, t: float) -> None:
        self._release(rk, r)
        done = t + self.osl[r] * self.otpt + self.completion_s
        self.done_client[r] = done
        if t > self.last_token_t:
            self.last_token_t = t
        self.completed += 1
        heapq.heappush(self.frees, done)

    def _finish_prefill(self, rk: Rank, r: int, t: float) -> None:
        self._release(rk, r)
        self.stage[r] = 1
        self.target[r] = self.osl[r]
        self.comp[r] = 0
        self.outs[r] = 0
        self.oute[r] = 0
        self.nspec[r] = 0
        self.ext[r] = self.prompt[r] - 1  # the decode pool loads the KV and computes the last token
        ts = self.transfer_s(self.prompt[r]) if self.transfer_s is not None else 0.0
        self._push(t + ts, r)

    # ------------------------------------------------------------------ skip-ahead
    def _waiting_blocked(self, rk: Rank, scheduled: int) -> bool:
        """Whether the head of ``rk``'s waiting queue cannot be admitted beside ``scheduled``
        decode tokens, by the checks of ``schedule``'s waiting loop (max_num_seqs, token
        budget, the block check with the free pool as it now stands). Each stays failed while
        a run lasts: running requests stay, the budget stays, the free pool only shrinks."""
        if not rk.waiting:
            return True
        cfg = self.cfg[rk.engine]
        if len(rk.running) >= cfg.max_num_seqs:
            return True
        budget = cfg.max_num_batched_tokens - scheduled
        if budget <= 0:
            return True
        r = rk.waiting[0]
        bs = cfg.block_size
        ntok = self.prompt[r] + self.outs[r]
        hit = 0
        if cfg.enable_prefix_caching and self.hit[r]:
            hit = min(self.hit[r], ntok - 1) // bs * bs
        c = self.ext[r] if self.ext[r] > hit else hit
        new = ntok - c
        thr = cfg.long_prefill_token_threshold
        if 0 < thr < new:
            new = thr
        if not cfg.enable_chunked_prefill and new > budget:
            return True
        if new > budget:
            new = budget
        hb = hit // bs
        need = -(-min(c + new, self.mml[rk.engine]) // bs) - hb
        extra_shared = hb - rk.shared if hb > rk.shared else 0
        return need + extra_shared > rk.free

    def _uniform(self, eng: _Engine, plans: list[Plan]) -> bool:
        """Every rank schedules exactly its running requests, each as a decode of 1 + k
        tokens (and the first chunk of a non-empty plan is not a stage change)."""
        anyp = False
        w = 1 + eng.cfg.num_speculative_tokens
        for rk, plan in zip(eng.ranks, plans):
            if len(plan) != len(rk.running):
                return False
            for p in plan:
                if not p[4] or p[1] != w:
                    return False
            if self.disagg and plan and self.stage[plan[0][0]] == 0:
                return False
            anyp = anyp or bool(plan)
        return anyp

    def _run(self, eng: _Engine, plans: list[Plan], t0: float, bound: float, others: float, d0: float) -> bool:
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
        mml = self.mml[eng.index]
        a = cfg.accepted_per_step
        asy = cfg.async_scheduling
        ranks = eng.ranks
        for rk, plan in zip(ranks, plans):
            if not self._waiting_blocked(rk, len(plan) * (1 + k)):
                return False
        if len(self.engines) == 1 and len(ranks) == 1 and ranks[0].waiting:
            bound = others  # blocked (checked above), so arrivals cannot change a decision
        # step 1 is decided at t0 + d0 (sync) or t0 (async): too close to the bound, no run
        room = (bound - t0) / d0 if d0 > 0 else INF
        if room < 1.0:
            return False
        # the longest run possible: until the first request's last token
        per: list[dict[str, Any]] = []
        m = 1 << 30
        for plan in plans:
            if not plan:
                per.append({})
                continue
            rid = np.fromiter((p[0] for p in plan), dtype=np.int64, count=len(plan))
            if min(self.oute[r] for r in rid.tolist()) == 0:
                return False  # a first token still in flight: the ordinary path stamps it
            c0 = np.fromiter((p[2] for p in plan), dtype=np.int64, count=len(plan))
            e0 = np.fromiter((p[3] for p in plan), dtype=np.int64, count=len(plan))
            tgt = np.array([self.target[r] for r in rid], dtype=np.int64)
            o0 = np.array([self.outs[r] for r in rid], dtype=np.int64)  # after step 0's placeholder
            left = tgt - o0  # tokens still to schedule after step 0
            if k == 0:
                f = left  # one token a step: the last token comes at step `left`
            else:
                f = self._spec_finish(rid, left, a)
            m = min(m, int(f.min()) + 1)
            per.append({"rid": rid, "c0": c0, "e0": e0, "o0": o0, "left": left, "tgt": tgt})
        if m <= 1:
            return False
        # a cap so a single call stays a bounded size, and one from the bound: decode steps
        # only lengthen as contexts grow, so about (bound - t0) / step-0 steps fit before it
        # (a wrong guess only shortens the run; the commit below cuts at the bound exactly)
        m = min(m, 4096)
        if room + 2 < m:
            m = int(room) + 2
        # per rank, the run's columns over steps 0..m-1
        blocks_ok = m
        for rk, d in zip(ranks, per):
            if not d:
                continue
            rid, c0 = d["rid"], d["c0"]
            held = np.array([self.blk[r] for r in rid.tolist()], dtype=np.int64)  # after step 0
            d["held"] = held
            if k == 0:
                # one token a step: request i computes c0 + j tokens before step j and first
                # needs block held + 1 at step s = held·bs − c0, then one more every bs steps
                first = held * bs - c0
                hops = first[:, None] + bs * np.arange(-(-m // bs) + 1, dtype=np.int64)[None, :]
                hops = hops[hops < m]
                extra = np.cumsum(np.bincount(hops, minlength=m)[:m])  # new blocks by step j
                d.update(first=first, extra=extra)
                # the input position stays below max_model_len
                near = mml - 1 - int(c0.max())
                if near < m:
                    blocks_ok = min(blocks_ok, max(near, 0))
            else:
                adv, emit = self._spec_columns(rid, d["e0"], d["left"], m, a)
                cb = np.empty((len(rid), m), dtype=np.int64)
                cb[:, 0] = c0
                if m > 1:
                    np.cumsum(adv[:, :-1], axis=1, out=cb[:, 1:])
                    cb[:, 1:] += c0[:, None]
                need_tok = np.minimum(cb + (1 + k) + la, mml)
                blocks = -(-need_tok // bs)  # blocks step j needs
                extra = np.maximum(blocks - held[:, None], 0).sum(axis=0)  # new blocks by step j
                near_j = np.nonzero((cb + 1 + k > mml - 1).any(axis=0))[0]
                if len(near_j):
                    blocks_ok = min(blocks_ok, int(near_j[0]))
                d.update(adv=adv, emit=emit, cb=cb, blocks=blocks, extra=extra)
            over = np.nonzero(extra > rk.free)[0]
            if len(over):
                blocks_ok = min(blocks_ok, int(over[0]))
        m = min(m, blocks_ok)
        if m <= 1:
            return False
        # price steps 0..m-1 of every rank; the engine's step is its slowest rank's
        dur = None
        bott = None
        for d in per:
            if not d:
                continue
            nreq = len(d["rid"])
            if k == 0:
                cols = np.arange(m, dtype=np.int64)[:, None] + d["c0"][None, :]  # step-major
            else:
                cols = np.ascontiguousarray(d["cb"][:, :m].T)
            if m <= SHORT_RUN:
                # a short run: one step_time a step costs less than step_times' set-up, and
                # equals it (the StepModel contract)
                dt = cfg.decode_threshold
                sched_l = [1 + k] * nreq
                ests = [eng.model.step_time(Batch.from_columns(sched_l, col, dt)) for col in cols]
                dd = np.array([e.overlap if cfg.overlap else e.no_overlap for e in ests], dtype=np.float64)
                bb = np.array([e.bottleneck for e in ests], dtype=object)
            else:
                step = np.repeat(np.arange(m, dtype=np.int64), nreq)
                sched = np.full(nreq * m, 1 + k, dtype=np.int64)
                st = eng.model.step_times(step, sched, cols.reshape(-1), decode_threshold=cfg.decode_threshold)
                dd = np.asarray(st.overlap if cfg.overlap else st.no_overlap, dtype=np.float64)
                bb = np.asarray(st.bottleneck)
            if dur is None:
                dur, bott = dd.copy(), bb.copy()
            else:
                assert bott is not None
                longer = dd > dur
                dur[longer] = dd[longer]
                bott[longer] = bb[longer]
        if len(ranks) > 1 and any(not d for d in per):
            # idle ranks run empty steps beside the busy ones
            empty = eng.model.step_time(Batch.from_columns([], [], decode_threshold=cfg.decode_threshold))
            ev = empty.overlap if cfg.overlap else empty.no_overlap
            assert dur is not None and bott is not None
            longer = ev > dur
            dur[longer] = ev
            bott[longer] = empty.bottleneck
        assert dur is not None and bott is not None
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
        self._commit(eng, plans, per, m, commit, times, dur, bott)
        return True

    def _spec_finish(self, rid: np.ndarray, left: np.ndarray, a: float) -> np.ndarray:
        """Steps after step 0 until each request's last token, under the acceptance carry."""
        out = np.empty(len(rid), dtype=np.int64)
        for i, r in enumerate(rid.tolist()):
            n0 = self.nspec[r]
            ph = float(self.phase[r])
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
        self, rid: np.ndarray, e0: np.ndarray, left: np.ndarray, m: int, a: float
    ) -> tuple[np.ndarray, np.ndarray]:
        nreq = len(rid)
        adv = np.empty((nreq, m), dtype=np.int64)
        emit = np.empty((nreq, m), dtype=np.int64)
        for i, r in enumerate(rid.tolist()):
            # step 0 already drew its acceptance: nspec counts it
            n0 = self.nspec[r] - 1
            ph = float(self.phase[r])
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
        self,
        eng: _Engine,
        plans: list[Plan],
        per: list[dict[str, Any]],
        m: int,
        commit: int,
        times: np.ndarray,
        dur: np.ndarray,
        bott: np.ndarray,
    ) -> None:
        """Apply decisions for steps 0..m-1 and the outputs of steps 0..commit-1."""
        k = eng.cfg.num_speculative_tokens
        otpt = self.otpt
        last = m - 1  # the last decided step
        pending: list[Plan] = []
        # bookkeeping for every committed step (a rank's step each)
        self.steps += commit * len(eng.ranks)
        dc = dur[:commit]
        bc = bott[:commit]
        eng.busy_s += float(dc.sum())
        for res in set(bc.tolist()):
            name = str(res)
            self.bottleneck[name] = self.bottleneck.get(name, 0.0) + float(dc[bc == res].sum())
        tot = sum(rk.usable for rk in eng.ranks)
        used0 = sum(rk.usable - rk.free for rk in eng.ranks)
        extra_all = np.zeros(m, dtype=np.int64)
        for d in per:
            if d:
                extra_all += d["extra"][:m]
        # KV samples at the ends of steps 0..commit-2 (the last one is taken from the state
        # after its outputs, below): decided through step j (sync) or j + 1 (async)
        shift = 1 if eng.cfg.async_scheduling else 0
        self.kv_t.extend(times[1:commit].tolist())
        self.kv_u.extend(((used0 + extra_all[shift : commit - 1 + shift]) / tot).tolist())
        for rk, d in zip(eng.ranks, per):
            if not d:
                pending.append([])
                continue
            rid = d["rid"]
            rl = rid.tolist()
            n = len(rl)
            held = d["held"]
            # decisions through step `last` (blocks are only ever added: a request keeps what
            # it holds when rolled-back drafts leave it more than the formula)
            if k == 0:
                c0 = d["c0"]
                comp_new = (c0 + (last + 1)).tolist()
                outs_new = (d["o0"] + last).tolist()
                first = d["first"]
                grown = np.where(last >= first, (last - first) // eng.cfg.block_size + 1, 0)
                blk_new = (held + grown).tolist()
                em_sum = [commit] * n  # one token a step
                pend_c = (c0 + last).tolist()
                pend_e = [1] * n
            else:
                emit, cb, adv, blocks = d["emit"], d["cb"], d["adv"], d["blocks"]
                comp_new = (cb[:, last] + adv[:, last]).tolist()
                outs_new = (d["o0"] + emit[:, 1 : last + 1].sum(axis=1)).tolist()
                blk_new = np.maximum(blocks[:, last], held).tolist()
                em_sum = emit[:, :commit].sum(axis=1).tolist()
                pend_c = cb[:, last].tolist()
                pend_e = emit[:, last].tolist()
            rk.free -= int(d["extra"][last])
            comp, outs, blk = self.comp, self.outs, self.blk
            for i, r in enumerate(rl):
                comp[r] = comp_new[i]
                outs[r] = outs_new[i]
                blk[r] = blk_new[i]
            if k:
                for r in rl:
                    self.nspec[r] += last
            # outputs of steps 0..commit-1 at once, as ``_outputs`` takes them one by one:
            # every request here has emitted before, so each emission is a gap
            ends = times[1 : commit + 1]
            le = np.array([self.last_emit[r] for r in rl])
            e0 = 1 if k == 0 else d["emit"][:, 0]
            self.itl_vals.append((ends[0] - le) + e0 * otpt)
            self.itl_wts.append(np.ones(n, dtype=np.int64))
            if commit > 1:
                gaps = np.diff(ends)  # step j's end minus step j-1's end, j = 1..commit-1
                if k == 0:
                    self.itl_vals.append(gaps + otpt)
                    self.itl_wts.append(np.full(len(gaps), n, dtype=np.int64))
                else:
                    em = d["emit"][:, 1:commit]
                    self.itl_vals.append((gaps[None, :] + em * otpt).reshape(-1))
                    self.itl_wts.append(np.ones(n * (commit - 1), dtype=np.int64))
            t_last = float(ends[-1])
            oute, last_emit, target = self.oute, self.last_emit, self.target
            done = []
            for r, e in zip(rl, em_sum):
                o = oute[r] + e
                oute[r] = o
                last_emit[r] = t_last
                if o >= target[r]:
                    done.append(r)
            for r in done:
                self._finish(rk, r, t_last)
            if commit < m:
                pending.append(list(zip(rl, [1 + k] * n, pend_c, pend_e, [True] * n)))
        eng.t = float(times[commit])
        self.now = eng.t
        self._kv_sample(eng, eng.t)
        if commit < m:
            eng.pending = pending

"""The discrete-event loop: clients, router, engines stepping, and the skip-ahead over runs of
identical decode steps.

Time is one clock in seconds. Events are request arrivals (after the frontend's admission
overhead) and engine step ends. An engine is one replica, or a group of attention-DP ranks
that step together (a step lasts as long as its slowest rank). Each rank runs the scheduler
of ``scheduler.py``.

Host overheads, from the step model (values of the BLIS cost model):

- per step: inside the step price (the model's host resource);
- per admitted request: ``admission_overhead(prompt)`` between the client's send and the
  request reaching the engine's waiting queue (frontend work, concurrent with steps), after
  any wait for the API server's tokeniser: the admission's per-prompt-token part is served
  one prompt at a time for every client (``frontend.py``);
- per output token: ``output_token_overhead()`` added to every client-observed gap per token
  emitted, as the BLIS simulator charges it (its ITL entry is the step advance plus tokens ×
  OutputTokenProcessingTime); the engine clock does not wait for it;
- completion: ``completion_overhead()`` between the last token and the end of the request as
  the client sees it (its E2EL, and in closed loop when its slot frees).

Skip-ahead: when every rank of an engine schedules exactly its running requests, each as a
decode, with nothing admissible waiting, the following steps differ only in their contexts
until the first of: a request's last token, a KV block the pool cannot give (the step that
would preempt), and the first step whose scheduling decision comes at or after the next event
any other part of the simulation may cause (an arrival, another engine's step end); with
nobody waiting, a run goes on past a request's last token (``runs.py``). Such a
run is priced in one vectorised ``step_times`` call and committed at once (``runs.py``); its results equal
the step-by-step loop's exactly (tested).

The stream: where engines of one rank each take steps of plain decodes beside at most whole
fresh prompts, it takes them one at a time with the decodes kept as sums, admissions and last
tokens included (``stream.py``); its results equal the step-by-step loop's exactly too
(tested).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from latencykernel.batch import Batch
from latencykernel.errors import LatencyKernelError
from latencykernel.serving import runs, stream
from latencykernel.serving.config import EngineConfig
from latencykernel.serving.run_price import bad_time
from latencykernel.serving.scheduler import PREFILL_RECV_WEIGHT, Rank, receive, schedule
from latencykernel.serving.state import Engine, Plan, Pool, floats_column, ints_column, view
from latencykernel.serving.workload import Requests

__all__ = ["Engine", "Pool", "Simulation"]

INF = math.inf
FAST_OUTPUTS = 32  # plans from this size have their outputs taken with numpy


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
        tokenise_s: Callable[[int], float] | None = None,
        phase: np.ndarray | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> None:
        self.pools = pools
        n = len(reqs)
        self.n = n
        # Request state: one column per field, indexed by request. Each is an ``array.array``
        # (Python-int access as fast as a list's for the scheduler's request-by-request loop)
        # with a numpy view over the same memory (``*_a``) for the steps and runs that touch
        # many requests at once. The columns are never resized, so the views stay valid.
        self.prompt = ints_column(reqs.prompt)
        self.osl = ints_column(reqs.output)
        self.hit = ints_column(reqs.cached)
        self.send_at = floats_column(reqs.arrival_s)
        self.max_in_flight = reqs.max_in_flight
        self.disagg = len(pools) == 2
        # per stage target: on a prefill pool a request samples one token (max_tokens=1)
        self.target = ints_column(np.ones(n, dtype=np.int64) if self.disagg else reqs.output)
        self.comp = ints_column(None, n)
        self.outs = ints_column(None, n)
        self.oute = ints_column(None, n)  # output tokens the client has seen
        self.blk = ints_column(None, n)  # KV blocks a request holds itself
        self.hitb = ints_column(None, n)  # prefix-cache blocks it shares (in its block table, charged once per rank)
        self.ext = ints_column(None, n)
        self.nspec = ints_column(None, n)
        self.stage = ints_column(None, n)
        self.first_sched = floats_column(np.full(n, -1.0))
        self.sent = floats_column(None, n)
        self.first_client = floats_column(None, n)
        self.done_client = floats_column(None, n)
        self.last_emit = floats_column(None, n)
        self.preempted = ints_column(None, n)
        self.prompt_a, self.target_a, self.comp_a = view(self.prompt), view(self.target), view(self.comp)
        self.outs_a, self.oute_a, self.blk_a = view(self.outs), view(self.oute), view(self.blk)
        self.hitb_a = view(self.hitb)
        self.nspec_a, self.last_emit_a = view(self.nspec), view(self.last_emit)
        self.first_client_a, self.osl_a = view(self.first_client), view(self.osl)
        self.phase = phase if phase is not None else np.zeros(n)
        self.admission_s = admission_s
        self.tokenise_s = tokenise_s  # the front end's one tokeniser (frontend.py); None: no queue
        self._tok: dict[int, float] = {}
        self.tok_free = 0.0  # when the tokeniser next falls idle
        self.otpt = output_token_s
        self.completion_s = completion_s
        self.transfer_s = transfer_s
        self.progress = progress
        # engines and ranks
        self.engines: list[Engine] = []
        self.cfg: list[EngineConfig] = []  # per engine
        self.mml: list[int] = []
        self.pool_engines: list[list[Engine]] = []
        rank_id = 0
        for pi, pool in enumerate(pools):
            group = []
            for _ in range(pool.engines):
                ei = len(self.engines)
                ranks = []
                for _ in range(pool.ranks_per_engine):
                    ranks.append(Rank(rank_id, pool.cfg.usable_blocks, ei))
                    rank_id += 1
                eng = Engine(ei, pi, ranks, pool.model, pool.cfg)
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
        # KV-cache use at step ends: single samples as floats, each run's as arrays, in order
        self.kv_t: list[float] = []
        self.kv_u: list[float] = []
        self.kv_parts: list[tuple[np.ndarray, np.ndarray]] = []
        self.bottleneck: dict[Any, float] = {}  # busy seconds by the step model's bottleneck (str in the result)
        self.steps = 0
        self.preemptions = 0
        self.completed = 0
        self.in_flight = 0
        self.max_in_flight_seen = 0
        self.arrivals: list[tuple[float, int, int]] = []  # (ready time, seq, request)
        self.frees: list[float] = []  # client-side completion times not yet processed
        self._seq = 0
        self._adm: dict[int, float] = {}  # admission overhead by prompt length
        self.next_to_send = 0
        self.last_token_t = 0.0
        self.backlog_at: list[tuple[float, int]] = []
        self.streams = all(stream.applies(self, e) for e in self.engines)  # stream.py may take steps
        self._reported = 0  # the hundredths of requests completed that progress() has been told of
        self._min_adm: list[float] = []  # the least admission from each request on (run)

    # ------------------------------------------------------------------ clients
    def _send(self, r: int, t: float) -> None:
        self.sent[r] = t
        self.in_flight += 1
        if self.in_flight > self.max_in_flight_seen:
            self.max_in_flight_seen = self.in_flight
        p = self.prompt[r]
        adm = self._admission(p)
        if self.tokenise_s is not None:
            # FCFS at the tokeniser: a request waits for the ones sent before it
            tok = self._tok.get(p)
            if tok is None:
                tok = _once(
                    self._tok, self.tokenise_s, p, f"admission_overhead's per-token part (at {p}, {2 * p} tokens)"
                )
            start = self.tok_free if self.tok_free > t else t
            self.tok_free = start + tok
            self._push(start + adm, r)
            return
        self._push(t + adm, r)

    def _admission(self, prompt: int) -> float:
        """The step model's admission overhead for a prompt length, asked once per length
        (the StepModel contract: deterministic)."""
        a = self._adm.get(prompt)
        return a if a is not None else _once(self._adm, self.admission_s, prompt, f"admission_overhead({prompt})")

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
        if self.engines[best.engine].cfg.recv_interval > 1:
            best.inbox.append(r)  # taken in at the rank's next receive (scheduler.receive)
        else:
            best.waiting.append(r)
        self.rank_of[r] = best.index
        eng = self.engines[best.engine]
        if eng.t == INF:
            eng.t = t

    # ------------------------------------------------------------------ scheduler hooks
    def preempt(self, rk: Rank, v: int) -> None:
        rk.free += self.blk[v]
        self.blk[v] = 0
        self.hitb[v] = 0  # re-admission looks the prefix up again
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
        # the earliest admission among the requests from each one on, for _send_bound
        adm = np.array([self._admission(p) for p in self.prompt], dtype=np.float64)
        self._min_adm = np.minimum.accumulate(adm[::-1])[::-1].tolist() if self.n else []
        self._client(0.0)
        engines = self.engines
        total = self.n
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
            self._act(eng, min(ta, self._send_bound(ts), others), others)
            self.report()

    def report(self) -> None:
        """``progress(done, total)``, once per hundredth of the requests completed."""
        if self.progress is not None:
            k = self.completed // max(self.n // 100, 1)
            if k != self._reported:
                self._reported = k
                self.progress(self.completed, self.n)

    def _send_bound(self, ts: float) -> float:
        """The earliest arrival a client event at ``ts`` can cause: it only sends, and a sent
        request reaches the engines at least its admission overhead later. Any request still
        to send may be sent at ``ts`` (several are when due together), so the bound takes the
        least admission among them, not the next one's: a later, shorter prompt can arrive
        first."""
        if ts < INF and self.next_to_send < self.n:
            return ts + self._min_adm[self.next_to_send]
        return INF

    def _act(self, eng: Engine, bound: float, others: float = INF) -> None:
        """Engine ``eng`` launches its next step (or run of steps) at ``eng.t``: through the
        stream while it applies (``stream.py``), then as one step or a vectorised run."""
        if self.streams and stream.stream(self):
            if self.completed >= self.n:
                return
            lead = eng
            for e in self.engines:
                if e.t < lead.t or (e.t == lead.t and e.index < lead.index):
                    lead = e
            if lead is not eng or eng.t == INF:
                return  # another engine launches first: the main loop takes it
            # the stream stopped at eng's launch, every event due by then routed: the bounds
            # from here
            others = min((e.t for e in self.engines if e is not eng), default=INF)
            ta = self.arrivals[0][0] if self.arrivals else INF
            bound = min(ta, self._send_bound(self._next_client_time()), others)
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
        cols = [list(zip(*p)) if p else [] for p in plans]  # each plan's columns, transposed once, in C
        d, bott = self._price(eng, plans, cols)
        if cfg.skip_ahead and not pre and runs.uniform(self, eng, plans, cols):
            if runs.run(self, eng, plans, t, bound, others, d, cols):
                return
        self.steps += len(plans)
        t_end = t + d
        if asy:
            nxt, _ = self._decide(eng)
            eng.pending = nxt if any(nxt) else None
        self._account(eng, d, bott)
        for rk, plan, col in zip(eng.ranks, plans, cols):
            self._outputs(rk, plan, t_end, col)
        self._kv_sample(eng, t_end)
        eng.t = t_end

    def _decide(self, eng: Engine) -> tuple[list[Plan], bool]:
        plans: list[Plan] = []
        pre = False
        n = eng.cfg.recv_interval
        for rk in eng.ranks:
            if n > 1:
                receive(n, rk)
                p, q = schedule(self, rk)
                if not p and rk.inbox:  # an idle pass: the loop spins to its receive at once
                    receive(n, rk, idle=True)
                    p, q = schedule(self, rk)
                rk.last_w = 1 if all(e[4] for e in p) else PREFILL_RECV_WEIGHT
            else:
                p, q = schedule(self, rk)
            plans.append(p)
            pre = pre or q
        return plans, pre

    def _price(self, eng: Engine, plans: list[Plan], cols: list[list[tuple[Any, ...]]]) -> tuple[float, Any]:
        dt = eng.cfg.decode_threshold
        best = -1.0
        bott: Any = None
        model = eng.model
        overlap = eng.cfg.overlap
        for plan, col in zip(plans, cols):
            if not plan:
                if len(plans) > 1:
                    # an idle attention-DP rank runs a dummy batch alongside the others; taken
                    # as an empty step (host time only), never longer than a busy rank's;
                    # priced once per engine (it does not depend on the batch)
                    if eng.empty is None:
                        eng.empty = self._empty(eng)
                    d, b = eng.empty
                    if d > best:
                        best, bott = d, b
                    continue
                sched: list[int] = []
                comp: list[int] = []
            else:
                sched, comp = list(col[1]), list(col[2])
            e = model.step_time(Batch.trusted(sched, comp, dt))
            d = e.overlap if overlap else e.no_overlap
            if not 0.0 <= d < INF:
                raise bad_time(f"step_time of a {len(plan)}-request batch", d)
            if d > best:
                best, bott = d, e.bottleneck
        return best, bott

    def _empty(self, eng: Engine) -> tuple[float, Any]:
        """The price of an empty step on ``eng``'s model (an idle attention-DP rank's dummy batch)."""
        e = eng.model.step_time(Batch.trusted([], [], eng.cfg.decode_threshold))
        d = e.overlap if eng.cfg.overlap else e.no_overlap
        if not 0.0 <= d < INF:
            raise bad_time("step_time of an empty batch", d)
        return d, e.bottleneck

    def _account(self, eng: Engine, d: float, bott: Any) -> None:
        eng.busy_s += d
        self.bottleneck[bott] = self.bottleneck.get(bott, 0.0) + d

    def _kv_sample(self, eng: Engine, t: float) -> None:
        """KV-cache use of ``eng``'s ranks at the end of a step, once its outputs are
        processed (under async scheduling the next step's blocks are already allocated)."""
        self.kv_t.append(t)
        self.kv_u.append((eng.usable - sum(rk.free for rk in eng.ranks)) / eng.usable)

    def kv_samples(self, t: np.ndarray, u: np.ndarray) -> None:
        """A run's KV samples (times, use), after the single ones taken so far."""
        if self.kv_t:
            self.kv_parts.append((np.array(self.kv_t), np.array(self.kv_u)))
            self.kv_t.clear()
            self.kv_u.clear()
        self.kv_parts.append((t, u))

    def kv_series(self) -> tuple[np.ndarray, np.ndarray]:
        """Every KV sample in the order taken: (times in s, use as a share of the blocks)."""
        parts = [*self.kv_parts, (np.array(self.kv_t, dtype=np.float64), np.array(self.kv_u, dtype=np.float64))]
        return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])

    def _outputs(self, rk: Rank, plan: Plan, t: float, col: list[tuple[Any, ...]]) -> None:
        """The client-visible effect of a finished step (vLLM's update_from_output);
        ``col``: the plan's columns."""
        if len(plan) >= FAST_OUTPUTS and not self.disagg:
            self._outputs_many(rk, col, t)
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

    def _outputs_many(self, rk: Rank, cols: list[tuple[Any, ...]], t: float) -> None:
        """``_outputs`` with numpy for a large plan (its columns): the same stamps, gaps and finishes."""
        otpt = self.otpt
        e = np.array(cols[3], dtype=np.int64)
        emits = e > 0
        if not emits.all():
            if not emits.any():
                return
            rs = np.array(cols[0], dtype=np.int64)[emits]
            e = e[emits]
        else:
            rs = np.array(cols[0], dtype=np.int64)
        o_old = self.oute_a[rs]
        o_new = o_old + e
        gap = o_old > 0
        if gap.all():
            self.itl_vals.append((t - self.last_emit_a[rs]) + e * otpt)
            self.itl_wts.append(np.ones(len(rs), dtype=np.int64))
        else:
            # first chunks stamp the first token; the others add a gap (the distributions
            # are of multisets: the order gaps are collected in does not matter)
            first = ~gap
            self.first_client_a[rs[first]] = t + o_new[first] * otpt
            if gap.any():
                rg = rs[gap]
                self.itl_vals.append((t - self.last_emit_a[rg]) + e[gap] * otpt)
                self.itl_wts.append(np.ones(len(rg), dtype=np.int64))
        self.oute_a[rs] = o_new
        self.last_emit_a[rs] = t
        done = rs[o_new >= self.target_a[rs]]
        if len(done):
            for r in done.tolist():
                self._finish(rk, r, t)

    def _release(self, rk: Rank, r: int) -> None:
        try:
            rk.running.remove(r)
        except ValueError:
            # preempted (async scheduling) while the step that emits its last token ran: that
            # output still counts and the request leaves the waiting queue, as vLLM's
            # Scheduler.update_from_output removes its stopped_preempted_reqs
            rk.waiting.remove(r)
        rk.free += self.blk[r]
        self.blk[r] = 0
        self.hitb[r] = 0

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
        if not 0.0 <= ts < INF:
            raise bad_time(f"Disaggregated transfer_s({self.prompt[r]})", ts)
        self._push(t + ts, r)


def _once(cache: dict[int, float], fn: Callable[[int], float], prompt: int, source: str) -> float:
    """``fn(prompt)`` asked once per prompt length (the StepModel contract: deterministic),
    refused (``bad_time``, naming ``source``) unless a finite time >= 0."""
    v = cache.get(prompt)
    if v is None:
        v = fn(prompt)
        if not 0.0 <= v < INF:
            raise bad_time(source, v)
        cache[prompt] = v
    return v

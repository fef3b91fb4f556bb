"""One engine core's scheduler, as vLLM v1 decides a step.

Every rule follows ``vllm/v1/core/sched/scheduler.py`` (``Scheduler.schedule``) and
``vllm/v1/core/kv_cache_manager.py`` (``KVCacheManager.allocate_slots``,
``get_computed_blocks``) at the engine version the kernel prices (see
``ENGINE_BEHAVIOUR_VERSION``); the site of each rule names the function it follows. The
source read was the public vLLM tree as stored for this project (the pinned commit itself was
not available; the rules below are the ones that version's scheduler shares with it).

State lives in the simulation's request columns (``array.array`` columns indexed by request,
each with a numpy view, ``*_a``, for the steps that touch many requests at once):
``comp`` (vLLM's ``num_computed_tokens``), ``outs`` (output tokens including the ones a step
in flight will sample: vLLM's output placeholders), ``blk`` (KV blocks the request holds
itself; prefix-cache hits are shared and charged once per rank), ``hitb`` (the shared
prefix blocks in its block table: ``allocate_slots`` counts both against what a step needs),
``hit`` (prompt tokens a prefix cache holds), ``ext`` (tokens whose KV arrived from another
pool).

A plan entry is ``(request, scheduled_tokens, computed_before, emitted_tokens, decoding)``.
"""

from __future__ import annotations

from array import array
from collections import deque
from typing import TYPE_CHECKING

import numpy as np

from latencykernel.errors import RefusedError

if TYPE_CHECKING:
    from latencykernel.serving.sim import Simulation

__all__ = ["Rank", "schedule"]

FAST_MIN = 32  # running requests from which the decode prefix is taken with numpy
_ALL, _SUM = np.logical_and.reduce, np.add.reduce  # bound once: cheaper to call than the methods


class Rank:
    """One scheduler: an engine core of a replica, or one attention-DP rank."""

    __slots__ = ("index", "running", "waiting", "free", "shared", "usable", "engine", "held", "inbox", "recv", "last_w")

    def __init__(self, index: int, usable_blocks: int, engine: int) -> None:
        self.index = index
        self.running: array[int] = array("q")  # admitted requests, oldest first
        self.waiting: deque[int] = deque()
        self.free = usable_blocks  # blocks in the free pool
        self.shared = 0  # prefix-cache blocks resident once for every request sharing them
        self.usable = usable_blocks
        self.engine = engine
        self.held = 0  # steps its prompts have been held by batch waiting since the last release
        # SGLang's --scheduler-recv-interval (receive): requests routed here but not yet
        # taken in, the receive counter, and the weight of the last decided step
        self.inbox: deque[int] = deque()
        self.recv = 0
        self.last_w = 1

    def load_score(self) -> int:
        """vLLM's DP load balancer score: waiting × 4 + running
        (vllm/v1/engine/core_client.py, ``DPLBAsyncMPClient.get_core_engine_for_request``)."""
        return (len(self.waiting) + len(self.inbox)) * 4 + len(self.running)


def _decode_prefix(
    sim: Simulation,
    rk: Rank,
    plan: list[tuple[int, int, int, int, bool]],
    budget: int,
    bs: int,
    mml: int,
    sampled: bool = False,
) -> tuple[int, int]:
    """The running loop below over its leading requests that are plain decodes or already
    fully scheduled (skipped), at once: each decode schedules one token and needs at most its
    next block; it stops where a request is neither, where the budget ends, and before the
    first decode the free pool cannot serve (the loop preempts from there). Returns where the
    loop resumes and the budget left; the effect equals the loop's own iterations.
    ``sampled``: a decode must have an output already (SGLang's decode pass: a request with
    one prompt token left is prompt work, not a decode)."""
    run = np.array(rk.running, dtype=np.int64)  # a copy (the column may grow later)
    n = len(run)
    c = sim.comp_a[run]
    o = sim.outs_a[run]
    p = sim.prompt_a[run]
    tg = sim.target_a[run]
    skip = o >= tg
    dec = (c == p + o - 1) & ~skip & (c + 1 <= mml - 1)
    if sampled:
        dec &= o > 0
    if n <= budget and _ALL(dec):
        # the common step: every running request a plain decode within the budget
        di: np.ndarray | None = None
        end = n
        ids_a, cd, od = run, c, o
    else:
        bad = np.flatnonzero(~(dec | skip))
        end = int(bad[0]) if len(bad) else n  # the loop takes over from here
        di = np.flatnonzero(dec[:end])  # positions of the decodes before it
        if len(di) > budget:
            di = di[:budget]
            end = int(di[-1]) + 1 if budget else 0
        if len(di) == 0:
            return end if budget else 0, budget
        ids_a, cd, od = run[di], c[di], o[di]
    b = sim.blk_a[ids_a]
    need = -(-(cd + 1) // bs) - b - sim.hitb_a[ids_a]
    np.maximum(need, 0, out=need)
    total = int(_SUM(need))
    if total > rk.free:
        q = int(np.flatnonzero(np.cumsum(need) > rk.free)[0])
        end = int(di[q]) if di is not None else q  # this decode cannot be served: the loop preempts from it
        ids_a, cd, od, b, need = ids_a[:q], cd[:q], od[:q], b[:q], need[:q]
        if not len(ids_a):
            return end, budget
        total = int(_SUM(need))
    rk.free -= total
    sim.comp_a[ids_a] = cd + 1
    sim.outs_a[ids_a] = od + 1
    sim.blk_a[ids_a] = b + need
    ids = ids_a.tolist()
    ones = [1] * len(ids)
    plan.extend(zip(ids, ones, cd.tolist(), ones, [True] * len(ids)))
    return end, budget - len(ids)


PREFILL_RECV_WEIGHT = 1000  # SGLang's default weight of a step that is not a pure decode


def receive(interval: int, rk: Rank, idle: bool = False) -> None:
    """Take routed requests into ``rk``'s waiting queue as SGLang's scheduler does under
    ``--scheduler-recv-interval`` N > 1, at the top of each scheduler iteration (before the
    step is decided).

    The rule (SGLang, python/sglang/srt/managers/scheduler_recv_skipper.py,
    ``SchedulerRecvSkipper.handle``, called by ``Scheduler.recv_requests``; v0.5.5 to
    v0.5.14): a counter grows by the weight of the last step run, 1 for a decode step or
    an idle iteration (env SGLANG_SCHEDULER_RECV_SKIPPER_WEIGHT_DECODE / _NONE) and 1000
    for any other (_DEFAULT: a prefill or mixed step); the scheduler polls its input socket
    only once the counter reaches N, then sets it to 0. While requests only decode, new
    ones are therefore taken in every N steps; after a prefill, at once. An idle scheduler
    loops without a step, a weight of 1 per pass in no time, so a rank with nothing running
    or waiting takes its requests at once. N <= 1 (SGLang's default, and vLLM's engine
    core, which drains its input queue every step) takes every request at once. ``idle``:
    the pass decided no step (the loop spins to the threshold at once)."""
    rk.recv += rk.last_w
    if idle or rk.recv >= interval or not (rk.running or rk.waiting):
        rk.recv = 0
        if rk.inbox:
            rk.waiting.extend(rk.inbox)
            rk.inbox.clear()


MIXED, PREFILL, DECODE = 0, 1, 2  # what a pass of _plan may schedule (see ``schedule``)


def schedule(sim: Simulation, rk: Rank) -> tuple[list[tuple[int, int, int, int, bool]], bool]:
    """One step's plan for rank ``rk``, and whether it preempted. Mutates the request state as
    vLLM does at schedule time (``_update_after_schedule`` advances ``num_computed_tokens``;
    the tokens the step will sample count as placeholders).

    vLLM (and SGLang launched with ``--enable-mixed-chunk``) mixes prompt chunks into the
    running decodes' step. SGLang by default runs a prefill batch alone (``prefill_alone``):
    its scheduler (python/sglang/srt/managers/scheduler.py, ``get_next_batch_to_run``, v0.5.5
    to v0.5.14) first tries to form a new prefill batch (``get_new_batch_prefill``: the
    request being chunked, then waiting requests, under the token budget) and runs it in
    place of the running batch; only when none can be formed does the running batch decode
    (``update_running_batch``). Here that is a pass that schedules prompt work only and,
    when it schedules nothing, a pass of decodes only. KNOWN DIVERGENCE S6: SGLang's
    admission (``PrefillAdder``: KV headroom after reserving ``new_token_ratio`` of every
    running request's remaining output) is taken as vLLM's block check."""
    if not rk.running and not rk.waiting:
        return [], False  # an idle rank: nothing to schedule
    if not sim.cfg[rk.engine].prefill_alone:
        return _plan(sim, rk, MIXED)
    if _prompt_work(sim, rk):
        plan, preempted = _plan(sim, rk, PREFILL)
        if plan:
            return plan, preempted
        decodes, again = _plan(sim, rk, DECODE)
        return decodes, preempted or again
    return _plan(sim, rk, DECODE)


def _prompt_work(sim: Simulation, rk: Rank) -> bool:
    """Whether a prefill pass could schedule anything: a waiting request, or a running one
    still short of its prompt (being chunked, or re-computing after preemption; one with no
    output yet has its last prompt token to compute, though it schedules one token like a
    decode)."""
    if rk.waiting:
        return True
    run = rk.running
    if len(run) >= FAST_MIN:
        idx = np.frombuffer(run, dtype=np.int64)
        o = sim.outs_a[idx]
        return not _ALL((sim.comp_a[idx] >= sim.prompt_a[idx] + o - 1) & (o > 0))
    comp, prompt, outs = sim.comp, sim.prompt, sim.outs
    return any(comp[r] < prompt[r] + outs[r] - 1 or outs[r] == 0 for r in run)


def _plan(sim: Simulation, rk: Rank, mode: int) -> tuple[list[tuple[int, int, int, int, bool]], bool]:
    """One pass of the scheduler (``schedule``): MIXED, vLLM's (running requests, then
    waiting ones); PREFILL, the running requests' prompt chunks and the waiting ones, no
    decodes; DECODE, the running requests' decodes alone."""
    cfg = sim.cfg[rk.engine]
    prompt, target, comp, outs, blk = sim.prompt, sim.target, sim.comp, sim.outs, sim.blk
    bs = cfg.block_size
    k = cfg.num_speculative_tokens
    la = cfg.lookahead
    mml = sim.mml[rk.engine]
    thr = cfg.long_prefill_token_threshold
    budget = cfg.max_num_batched_tokens
    plan: list[tuple[int, int, int, int, bool]] = []
    running = rk.running
    preempted = False

    # TensorRT-LLM's batch waiting (_batch_wait): each prompt chunk's state before this step
    bw = cfg.batch_wait_iters
    undo: list[tuple[int, int, int, int, float, int, int, bool]] = []

    # --- running requests first (Scheduler.schedule, "First, schedule the RUNNING requests")
    i = 0
    if k == 0 and la == 0 and len(running) >= FAST_MIN and mode != PREFILL:
        i, budget = _decode_prefix(sim, rk, plan, budget, bs, mml, mode == DECODE)
    while i < len(running) and budget > 0:
        r = running[i]
        o = outs[r]
        if o >= target[r]:
            # every output token is already scheduled (async scheduling's placeholders reach
            # max_tokens): no further step is needed for it
            i += 1
            continue
        c = comp[r]
        ntok = prompt[r] + o
        decoding = c == ntok - 1
        # SGLang's passes take one kind of work each; a request with no output yet is
        # prompt work even when one prompt token is left
        if mode and (decoding and o > 0) != (mode == DECODE):
            i += 1
            continue
        # num_new_tokens = num_tokens_with_spec + placeholders - num_computed_tokens; draft
        # tokens exist once the request decodes
        new = ntok - c + (k if decoding else 0)
        if 0 < thr < new:  # long_prefill_token_threshold caps a chunk
            new = thr
        if new > budget:
            new = budget
        if new > mml - 1 - c:  # the input position stays below max_model_len
            new = mml - 1 - c
        if new <= 0:
            i += 1
            continue
        # KVCacheManager.allocate_slots: blocks for min(computed + new + lookahead,
        # max_model_len) tokens, less the ones held; refused when the free pool is short
        need_tokens = c + new + la
        if need_tokens > mml:
            need_tokens = mml
        # (the request's block table: the blocks it holds and the prefix-cache blocks it shares)
        need = -(-need_tokens // bs) - blk[r] - sim.hitb[r]
        scheduled = True
        while need > rk.free:
            # preempt the lowest-priority request: under FCFS the last of the running list,
            # i.e. the newest admitted (Scheduler.schedule, ``self.running.pop()``), by
            # recompute (Scheduler._preempt_request frees its blocks, num_computed_tokens = 0)
            victim = running.pop()
            sim.preempt(rk, victim)
            preempted = True
            if victim == r:
                scheduled = False
                if not running:
                    _cannot_fit(sim, rk, r)
                break
        if not scheduled:
            break
        if bw and not decoding:
            undo.append((r, c, o, blk[r], sim.first_sched[r], need if need > 0 else 0, 0, False))
        if need > 0:
            blk[r] += need
            rk.free -= need
        if decoding:
            acc = sim.accept(r) if k else 0
            e = 1 + acc
            left = target[r] - o
            if e > left:
                e = left
            comp[r] = c + 1 + acc  # rejected drafts are rolled back (update_from_output)
        else:
            comp[r] = c + new
            e = 1 if c + new == ntok else 0  # the last prompt chunk samples a token
        outs[r] = o + e
        plan.append((r, new, c, e, decoding))
        budget -= new
        i += 1

    # --- then waiting requests, only when nothing was preempted this step
    if not preempted and mode != DECODE:
        waiting = rk.waiting
        pc = cfg.enable_prefix_caching
        chunked = cfg.enable_chunked_prefill
        mns = cfg.max_num_seqs
        resv = cfg.reserve_to_completion
        while waiting and budget > 0:
            if len(running) == mns:  # max_num_seqs
                break
            r = waiting[0]
            o = outs[r]
            ntok = prompt[r] + o
            # KVCacheManager.get_computed_blocks: whole cached blocks, at most num_tokens - 1
            # (the last token is recomputed for its logits)
            hit = 0
            if pc and sim.hit[r]:
                hit = min(sim.hit[r], ntok - 1) // bs * bs
            c = sim.ext[r] if sim.ext[r] > hit else hit
            new = ntok - c
            if 0 < thr < new:
                new = thr
            if not chunked and new > budget:
                break
            if new > budget:
                new = budget
            hb = hit // bs
            # KNOWN DIVERGENCE S1: cached prefix blocks are taken as resident and shared (charged
            # once per rank, never evicted); vLLM takes an evictable cached block out of the
            # free queue and may have evicted it. A preempted request re-hits only its prefix.
            need_tokens = c + new  # no lookahead for a request not yet computed
            if resv:
                # TensorRT-LLM's GUARANTEED_NO_EVICT (capacityScheduler.cpp,
                # GuaranteedNoEvictScheduler::impl; kvCacheManager.cpp,
                # getRemainingBlocksToCompletion): admitted only if the free blocks hold the
                # whole prompt + max_tokens. KNOWN DIVERGENCE S5: the reservation is taken from
                # the free pool at once, where TensorRT-LLM allocates as the request grows and
                # only counts the rest as reserved; admission and capacity are the same, the
                # KV use reported after each step is the reserved one.
                need_tokens = prompt[r] + target[r] + la
            if need_tokens > mml:
                need_tokens = mml
            need = -(-need_tokens // bs) - hb
            extra_shared = hb - rk.shared if hb > rk.shared else 0
            if need + extra_shared > rk.free:  # allocate_slots returns None: stop admitting
                if not running:  # nothing will free a block: it would wait for ever
                    if resv:
                        _cannot_reserve(rk, r, need + extra_shared, prompt[r], target[r])
                    _cannot_fit(sim, rk, r)
                break
            if bw:
                undo.append((r, comp[r], o, 0, sim.first_sched[r], need + extra_shared, extra_shared, True))
            waiting.popleft()
            running.append(r)
            rk.free -= need + extra_shared
            rk.shared += extra_shared
            blk[r] = need
            sim.hitb[r] = hb
            comp[r] = c + new
            e = 1 if c + new == ntok else 0
            outs[r] = o + e
            if sim.first_sched[r] < 0:
                sim.first_sched[r] = sim.now
            plan.append((r, new, c, e, False))
            budget -= new
    if undo:
        _batch_wait(sim, rk, plan, undo)
    return plan, preempted


def _cannot_fit(sim: Simulation, rk: Rank, r: int) -> None:
    """Refuse request ``r``: alone on its rank, it preempted itself for want of a block, or
    it heads the waiting queue with nothing running and the free pool short of its first chunk.
    Nothing else holds blocks but the resident prefix-cache ones, which this simulation never
    evicts (divergence S1, marked in ``schedule``'s waiting loop), so every retry would do the
    same (a loop under async scheduling, a stall without it). vLLM would evict cached blocks
    to serve it."""
    raise RefusedError(
        f"request {r} ({sim.prompt[r]} prompt + {sim.target[r]} output tokens) cannot be served: alone on its "
        f"rank it needs more KV blocks than the {rk.usable} usable ones hold beside the {rk.shared} resident "
        "prefix-cache blocks, which this simulation never evicts (divergence S1); raise num_gpu_blocks, lower the "
        "prefix hits, or turn off enable_prefix_caching",
        setting="num_gpu_blocks",
        value=rk.usable + 1,
    )


def _cannot_reserve(rk: Rank, r: int, need: int, prompt_tokens: int, output_tokens: int) -> None:
    """Refuse request ``r`` under ``kv_reservation="to_completion"``: with nothing running,
    the free pool still cannot hold its prompt + max_tokens, so it would wait for ever
    (TensorRT-LLM's GUARANTEED_NO_EVICT scheduler never admits it either)."""
    raise RefusedError(
        f"request {r} ({prompt_tokens} prompt + {output_tokens} output tokens) needs {need} KV blocks reserved to "
        f"completion, more than the {rk.free} free on its rank with nothing running (kv_reservation "
        "to_completion, TensorRT-LLM's GUARANTEED_NO_EVICT); raise num_gpu_blocks or shorten the requests",
        setting="num_gpu_blocks",
        value=rk.usable + 1,
    )


def _batch_wait(
    sim: Simulation,
    rk: Rank,
    plan: list[tuple[int, int, int, int, bool]],
    undo: list[tuple[int, int, int, int, float, int, int, bool]],
) -> None:
    """TensorRT-LLM's batch waiting over the step's prompt chunks (``undo``: each one's state
    before the step, whether it was admitted now). The rule (tensorrt_llm/_torch/pyexecutor/
    py_executor.py, ``PyExecutor._schedule`` and ``_waiting_requests``): with
    ``batch_wait_timeout_iters`` W > 0, when a step schedules both context (prompt) and
    generation requests and attention DP is off, every context request of the step is held
    (one step counted) unless the count has reached W or the scheduled tokens, each context
    request's whole token count plus 1 + drafts per generation request, reach
    ``batch_wait_max_tokens_ratio`` x max_num_tokens; then they all go and the count
    restarts. A held chunk gives its blocks back and an admitted request goes back to the
    head of the waiting queue (KNOWN DIVERGENCE S4: TensorRT-LLM keeps a held request's KV
    slot; here it is allocated again on release)."""
    cfg = sim.cfg[rk.engine]
    ndec = sum(1 for x in plan if x[4])
    if not ndec or cfg.lockstep:
        return  # nothing decodes beside them (or attention DP): TensorRT-LLM does not wait
    tokens = ndec * (1 + cfg.num_speculative_tokens) + sum(sim.prompt[r] + o for r, _, o, *_ in undo)
    if rk.held >= cfg.batch_wait_iters or tokens >= cfg.batch_wait_ratio * cfg.max_num_batched_tokens:
        rk.held = 0
        return
    rk.held += 1
    for r, c, o, b, fs, blocks, shared, admitted in reversed(undo):
        if admitted:
            rk.running.pop()
            rk.waiting.appendleft(r)
            sim.hitb[r] = 0
        rk.free += blocks
        rk.shared -= shared
        sim.blk[r] = b
        sim.comp[r] = c
        sim.outs[r] = o
        sim.first_sched[r] = fs
    plan[:] = [x for x in plan if x[4]]

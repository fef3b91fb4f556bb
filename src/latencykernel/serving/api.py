"""``simulate`` and ``estimate``: a workload through a deployment's scheduler, in
``vllm bench serve``'s terms."""

from __future__ import annotations

import math
import numbers
import operator
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from latencykernel.errors import LatencyKernelError, RefusedError
from latencykernel.serving.config import EngineConfig, resolve_engine
from latencykernel.serving.frontend import tokenisation_s
from latencykernel.serving.result import Distribution, ServingResult
from latencykernel.serving.run_price import bad_time
from latencykernel.serving.sim import Pool, Simulation
from latencykernel.serving.workload import ClosedLoop, Length, Poisson, Requests, Workload
from latencykernel.step_model import StepModel

__all__ = ["simulate", "estimate", "Disaggregated"]


@dataclass(frozen=True)
class Disaggregated:
    """A prefill pool and a decode pool (``lk.open_pool(scenario, pool=i)`` for each), in
    ``xPyD`` counts: ``num_prefill`` prefill engines and ``num_decode`` decode engines (each
    an engine of its pool's ``data_parallel`` ranks). ``transfer_s(tokens)`` is the time to
    move one request's KV from prefill to decode (e.g. the kernel's ``pd_transfer_time``)."""

    prefill: StepModel
    decode: StepModel
    num_prefill: int = 1
    num_decode: int = 1
    transfer_s: Callable[[int], float] | None = None


def _pool_layout(cfg: EngineConfig) -> tuple[int, int]:
    """(engines, ranks per engine): lockstep attention-DP ranks form one engine; independent
    replicas are one engine each."""
    if cfg.lockstep:
        return 1, cfg.data_parallel_size
    return cfg.data_parallel_size, 1


def _refuse_unservable(reqs: Requests, cfg: EngineConfig, pool: str) -> None:
    """Requests no engine of the pool could hold are refused, naming the setting."""
    total = reqs.prompt + reqs.output
    if cfg.max_model_len > 0:
        bad = np.nonzero(total > cfg.max_model_len)[0]
        if len(bad):
            i = int(bad[0])
            raise RefusedError(
                f"request {i} needs {int(reqs.prompt[i])} prompt + {int(reqs.output[i])} output tokens = "
                f"{int(total[i])}, more than max_model_len {cfg.max_model_len} ({pool} pool); vLLM rejects it",
                setting="max_model_len",
                value=cfg.max_model_len,
            )
    blocks = -(-(total + cfg.lookahead) // cfg.block_size)
    worst = int(np.argmax(blocks))
    if int(blocks[worst]) > cfg.usable_blocks:
        raise RefusedError(
            f"request {worst} needs {int(blocks[worst])} KV blocks of {cfg.block_size} tokens at its longest, more than "
            f"the whole cache holds ({cfg.usable_blocks} usable of num_gpu_blocks {cfg.num_gpu_blocks}, {pool} pool); "
            "it could never finish: raise gpu_memory_utilization or shorten the request",
            setting="num_gpu_blocks",
            value=cfg.num_gpu_blocks,
        )


def _time(source: str, v: Any) -> float:
    """A time the step model returned, checked once: a finite number of seconds >= 0."""
    if isinstance(v, bool) or not isinstance(v, numbers.Real) or not 0.0 <= float(v) < math.inf:
        raise bad_time(source, v)
    return float(v)


def _check_seed(seed: Any) -> None:
    """A seed is a whole number >= 0 (what numpy's ``default_rng`` takes), refused by name otherwise."""
    try:
        ok = not isinstance(seed, bool) and operator.index(seed) >= 0
    except TypeError:
        ok = False
    if not ok:
        raise LatencyKernelError(f"seed must be a whole number >= 0, got {seed!r}")


def simulate(
    step_model: StepModel | Disaggregated,
    workload: Workload,
    *,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
    **engine: Any,
) -> ServingResult:
    """Replay ``workload`` through the deployment's scheduler (vLLM v1's rules, see
    ``scheduler.py``) with step times from ``step_model``; ``engine`` overrides the step
    model's limits by vLLM's setting names (``config.ENGINE_KEYS``). Deterministic for a
    ``seed``. ``progress(done, total)`` is called as requests complete."""
    _check_seed(seed)
    if not hasattr(workload, "requests"):
        raise LatencyKernelError(f"workload must be a ClosedLoop, Poisson or Trace, got {type(workload).__name__}")
    rng = np.random.default_rng(seed)
    reqs = workload.requests(rng)
    notes: list[tuple[str, str, str]] = list(reqs.notes)
    pools: list[Pool] = []
    transfer = None
    if isinstance(step_model, Disaggregated):
        roles = [
            ("prefill", step_model.prefill, step_model.num_prefill),
            ("decode", step_model.decode, step_model.num_decode),
        ]
        for name, model, count in roles:
            if not isinstance(count, int) or count < 1:
                raise LatencyKernelError(f"num_{name} must be a whole number at least 1, got {count!r}")
            cfg, n = resolve_engine(model, engine)
            notes += [(f"{name}.{a}", b, c) for a, b, c in n]
            engines, ranks = _pool_layout(cfg)
            pools.append(Pool(name, model, cfg, engines * count, ranks))
        transfer = step_model.transfer_s
        if transfer is None:
            notes.append(("pd_transfer", "0 s", "no transfer time given: KV moves between pools for free"))
        notes.append(
            (
                "disaggregation",
                "prefill max_tokens=1, decode recomputes the last prompt token",
                "as vLLM's P/D proxy runs it: the prefill pool samples one token the client never sees; the decode "
                "pool loads the KV and computes the last prompt token for the first output",
            )
        )
        first = step_model.prefill
    else:
        if not hasattr(step_model, "step_time") or not hasattr(step_model, "limits"):
            raise LatencyKernelError(
                f"step_model must keep the StepModel protocol (step_time, step_times, limits, ...), got {type(step_model).__name__}"
            )
        cfg, n = resolve_engine(step_model, engine)
        notes += n
        engines, ranks = _pool_layout(cfg)
        pools.append(Pool("colocated", step_model, cfg, engines, ranks))
        first = step_model
    for pool in pools:
        _refuse_unservable(reqs, pool.cfg, pool.name)
    cfg0 = pools[-1].cfg
    if cfg0.data_parallel_size > 1 or len(pools) > 1:
        notes.append(
            (
                "router",
                "lowest waiting x 4 + running",
                "vLLM's DP load balancer (core_client.py DPLBAsyncMPClient.get_core_engine_for_request), ties to the "
                "lowest rank; the counts are taken as current (vLLM refreshes them every 100 ms)",
            )
        )
    if cfg0.lockstep:
        notes.append(
            ("attention_dp", "lockstep", "DP ranks of a MoE model step together; a step lasts as its slowest rank")
        )
    if cfg0.enable_prefix_caching and int(reqs.cached.max(initial=0)) > 0:
        notes.append(
            (
                "prefix_cache",
                "warm, shared",
                "cached prefix blocks are resident from the start and shared: charged once per rank, never evicted",
            )
        )
    if cfg0.async_scheduling:
        notes.append(
            (
                "step_order",
                "async",
                "step n+1 is decided when step n launches, before its outputs; tokens in flight count as placeholders",
            )
        )
    notes.append(
        (
            "output_token_overhead",
            "added per token to client-observed gaps",
            "as BLIS charges it (ITL = step advance + tokens x OutputTokenProcessingTime); the engine clock does not wait",
        )
    )
    notes.append(
        (
            "admission_overhead",
            "between send and the waiting queue",
            "frontend time before the scheduler sees a request; it does not hold the engine",
        )
    )
    if cfg0.scheduling_policy == "priority":
        notes.append(("scheduling_policy", "priority", "every request has priority 0: scheduled and preempted as FCFS"))
    phase = rng.random(len(reqs)) if cfg0.num_speculative_tokens else None
    # the front end's one tokeniser (frontend.py), shared by every pool's clients
    tokenise = partial(tokenisation_s, first.admission_overhead) if cfg0.tokeniser_queue else None

    last = pools[-1].model
    sim = Simulation(
        pools,
        reqs,
        admission_s=first.admission_overhead,
        tokenise_s=tokenise,
        output_token_s=_time("output_token_overhead()", last.output_token_overhead()),
        completion_s=_time("completion_overhead()", last.completion_overhead()),
        transfer_s=transfer,
        phase=phase,
        progress=progress,
    )
    sim.run()
    gpus = sum(p.engines * p.ranks_per_engine * p.cfg.gpus_per_replica for p in pools)
    return _result(sim, reqs, gpus, notes)


def _result(sim: Simulation, reqs: Requests, gpus: int, notes: list[tuple[str, str, str]]) -> ServingResult:
    sent = np.array(sim.sent)
    first = np.array(sim.first_client)
    done = np.array(sim.done_client)
    osl = reqs.output
    ttft = first - sent
    e2el = done - sent
    multi = osl > 1
    tpot = np.zeros(len(osl))
    tpot[multi] = (e2el[multi] - ttft[multi]) / (osl[multi] - 1)
    parts_v = [np.asarray(sim.itl_one, dtype=np.float64)] + [np.asarray(v, dtype=np.float64) for v in sim.itl_vals]
    parts_w = [np.ones(len(sim.itl_one), dtype=np.int64)] + [np.asarray(w, dtype=np.int64) for w in sim.itl_wts]
    itl = Distribution.of(np.concatenate(parts_v), np.concatenate(parts_w))
    start = float(sent.min())
    end = float(done.max())
    duration = end - start
    n = len(osl)
    tin = int(reqs.prompt.sum())
    tout = int(osl.sum())
    # saturation (open loop without a client cap): the deployment served less than offered
    saturated = False
    offered = 0.0
    sustained = n / duration if duration > 0 else 0.0
    if reqs.max_in_flight == 0 and n > 1:
        span = float(reqs.arrival_s[-1] - reqs.arrival_s[0])
        if span > 0:
            offered = (n - 1) / span
            t_last = float(reqs.arrival_s[-1])
            served_by = int((done <= t_last).sum())
            backlog = n - served_by
            rate_served = served_by / span
            if backlog > max(0.1 * n, 10) and rate_served < 0.95 * offered:
                saturated = True
                # the rate it sustains: completions per second once the queue has built up
                tail = np.sort(done)[n // 2 :]
                if len(tail) > 1 and tail[-1] > tail[0]:
                    sustained = (len(tail) - 1) / float(tail[-1] - tail[0])
    per = {"ttft": ttft, "tpot": tpot, "e2el": e2el, "prompt": reqs.prompt, "output": osl, "sent": sent}
    kv_t, kv_u = sim.kv_series()
    named: dict[str, float] = {}
    for res, s in sim.bottleneck.items():  # keyed by the step model's objects on the hot path
        named[str(res)] = named.get(str(res), 0.0) + s
    busy = sum(named.values())
    shares = {k: v / busy for k, v in sorted(named.items())} if busy > 0 else {}
    return ServingResult(
        ttft=Distribution.of(ttft),
        tpot=Distribution.of(tpot[multi]),
        itl=itl,
        e2el=Distribution.of(e2el),
        completed=n,
        total_input_tokens=tin,
        total_output_tokens=tout,
        duration=duration,
        request_throughput=n / duration if duration > 0 else 0.0,
        output_throughput=tout / duration if duration > 0 else 0.0,
        total_token_throughput=(tin + tout) / duration if duration > 0 else 0.0,
        output_throughput_per_gpu=tout / duration / gpus if duration > 0 else 0.0,
        gpus=gpus,
        max_concurrent_requests=sim.max_in_flight_seen,
        preemptions=sim.preemptions,
        kv_usage_time_s=kv_t,
        kv_usage=kv_u,
        bottleneck_shares=shares,
        steps=sim.steps,
        saturated=saturated,
        sustained_request_rate=sustained if saturated else n / duration if duration > 0 else 0.0,
        offered_request_rate=offered,
        assumptions=notes,
        per_request=per,
    )


def estimate(
    kernel: StepModel | Disaggregated,
    *,
    isl: Length,
    osl: Length,
    concurrency: int | None = None,
    request_rate: float | None = None,
    num_prompts: int | None = None,
    seed: int = 0,
    prefix_hit_rate: float = 0.0,
    **kw: Any,
) -> ServingResult:
    """The one-line form: a closed loop at ``concurrency`` (``num_prompts`` default 10 ×
    concurrency) or an open loop at ``request_rate`` (``num_prompts`` default 1,000);
    ``prefix_hit_rate`` the share of each prompt a prefix cache serves (the workloads'
    field, default 0); ``kw`` are engine settings as for ``simulate``."""
    _check_seed(seed)
    if (concurrency is None) == (request_rate is None):
        raise LatencyKernelError("give exactly one of concurrency or request_rate")
    wl: Workload
    if concurrency is not None:
        wl = ClosedLoop(concurrency, isl, osl, num_prompts, prefix_hit_rate=prefix_hit_rate)
    else:
        assert request_rate is not None
        ok = not isinstance(request_rate, bool) and isinstance(request_rate, numbers.Real)
        if not (ok and float(request_rate) > 0):
            raise LatencyKernelError(f"request_rate must be a positive number, got {request_rate!r}")
        n = 1000 if num_prompts is None else num_prompts
        wl = Poisson(float(request_rate), isl, osl, n, prefix_hit_rate=prefix_hit_rate)
    res = simulate(kernel, wl, seed=seed, **kw)
    if request_rate is not None and num_prompts is None:
        res.assumptions.append(("num_prompts", "1000", "estimate's default for an open loop"))
    return res

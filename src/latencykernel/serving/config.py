"""The engine settings a simulation runs with: the step model's ``EngineLimits``, overridden
by the caller's keyword arguments (named as vLLM names them), each default recorded.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from latencykernel.errors import LatencyKernelError, RefusedError
from latencykernel.resolve.startup import check_block_size, check_max_model_len, check_scheduler_limits
from latencykernel.serving.workload import real
from latencykernel.step_model import KV_RESERVATIONS, EngineLimits, StepModel

__all__ = ["EngineConfig", "resolve_engine", "ENGINE_KEYS"]

# the keyword arguments simulate() accepts, with what each means
ENGINE_KEYS: dict[str, str] = {
    "max_num_seqs": "requests a step may hold (--max-num-seqs)",
    "max_num_batched_tokens": "tokens a step may schedule (--max-num-batched-tokens)",
    "max_model_len": "longest prompt + output (--max-model-len)",
    "block_size": "tokens per KV block (--block-size)",
    "num_gpu_blocks": "KV blocks one rank holds (vLLM's num_gpu_blocks; default the step model's kv_blocks)",
    "enable_prefix_caching": "prefix caching (--enable-prefix-caching)",
    "async_scheduling": "schedule step n+1 while step n runs (--async-scheduling)",
    "enable_chunked_prefill": "split a prompt over steps (--enable-chunked-prefill)",
    "long_prefill_token_threshold": "cap on one request's prompt tokens per step (--long-prefill-token-threshold)",
    "max_num_partial_prefills": "--max-num-partial-prefills (derives the threshold above when > 1)",
    "scheduling_policy": "fcfs or priority (--scheduling-policy)",
    "num_speculative_tokens": "draft tokens per decode step",
    "acceptance_rate": "fraction of draft tokens accepted (vLLM's draft acceptance rate)",
    "mean_accepted_length": "tokens emitted per decode step, 1 + accepted drafts (vLLM's mean acceptance length)",
    "engine": "vllm or sglang: whose scheduler",
    "data_parallel_size": "schedulers (DP replicas or attention-DP ranks)",
    "lockstep_data_parallel": "the DP ranks step together (attention DP under a MoE layer)",
    "step_price": "which step time the clock advances by: no_overlap (default) or overlap",
    "skip_ahead": "price runs of identical decode steps in one vectorised call (default True)",
    "batch_wait_timeout_iters": "TensorRT-LLM's batch waiting: steps a prompt may be held while others decode (0: off)",
    "batch_wait_max_tokens_ratio": "TensorRT-LLM's batch waiting: release once held prompts + decodes reach this share of the budget",
    "tokeniser_queue": "the admission's per-prompt-token part queues at the API server's one tokeniser (default True)",
    "enable_mixed_chunk": "SGLang's --enable-mixed-chunk: prompt chunks run inside the running decodes' step, as "
    "vLLM's do (default False: SGLang runs a prefill batch alone and the decodes wait); engine sglang only",
    "scheduler_recv_interval": "SGLang's --scheduler-recv-interval N: while requests only decode, new ones are taken "
    "in every N steps (default 1: every step, as vLLM's engine core and SGLang's default)",
    "kv_reservation": "on_demand (vLLM, SGLang: blocks as a request grows) or to_completion (TensorRT-LLM's "
    "GUARANTEED_NO_EVICT: prompt + max_tokens reserved at admission)",
}


@dataclass(frozen=True)
class EngineConfig:
    """Resolved settings (see ``ENGINE_KEYS``); ``usable_blocks`` is ``num_gpu_blocks − 1``
    (vLLM's block pool keeps one null block: vllm/v1/core/block_pool.py, ``BlockPool.__init__``)."""

    max_num_seqs: int
    max_num_batched_tokens: int
    max_model_len: int
    block_size: int
    num_gpu_blocks: int
    usable_blocks: int
    enable_prefix_caching: bool
    async_scheduling: bool
    enable_chunked_prefill: bool
    long_prefill_token_threshold: int
    scheduling_policy: str
    num_speculative_tokens: int
    accepted_per_step: float
    lookahead: int
    engine: str
    data_parallel_size: int
    lockstep: bool
    gpus_per_replica: int
    decode_threshold: int
    overlap: bool
    skip_ahead: bool
    tokeniser_queue: bool = True
    batch_wait_iters: int = 0
    batch_wait_ratio: float = 0.0
    reserve_to_completion: bool = False
    recv_interval: int = 1
    prefill_alone: bool = False


def _int(name: str, v: Any, low: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int | float) or not float(v).is_integer():
        raise LatencyKernelError(f"{name} must be a whole number, got {v!r}")
    if v < low:
        raise LatencyKernelError(f"{name} must be at least {low}, got {v!r}")
    return int(v)


def _bool(name: str, v: Any) -> bool:
    if not isinstance(v, bool):
        raise LatencyKernelError(f"{name} must be true or false, got {v!r}")
    return v


def resolve_engine(model: StepModel, engine: dict[str, Any]) -> tuple[EngineConfig, list[tuple[str, str, str]]]:
    """The settings a run uses, and the assumptions behind them."""
    unknown = sorted(set(engine) - set(ENGINE_KEYS))
    if unknown:
        raise LatencyKernelError(
            f"unknown engine setting {unknown[0]!r}; the settings are: {', '.join(sorted(ENGINE_KEYS))}"
        )
    lim: EngineLimits = model.limits()
    notes: list[tuple[str, str, str]] = []

    def pick(key: str, default: Any, why: str) -> Any:
        if key in engine and engine[key] is not None:
            return engine[key]
        notes.append((key, str(default), why))
        return default

    src = "as the step model's limits() resolve it"
    mns = _int("max_num_seqs", pick("max_num_seqs", lim.max_num_seqs, src), 1)
    mnbt = _int("max_num_batched_tokens", pick("max_num_batched_tokens", lim.max_num_batched_tokens, src), 1)
    mml = _int("max_model_len", pick("max_model_len", lim.max_model_len, src + " (0: no stated limit)"), 0)
    bs = _int("block_size", pick("block_size", lim.block_size, src), 1)
    blocks = _int("num_gpu_blocks", pick("num_gpu_blocks", lim.kv_blocks, "the step model's kv_blocks"), 0)
    if blocks < 2:
        raise LatencyKernelError(
            f"num_gpu_blocks is {blocks}: the KV cache holds no usable block (vLLM keeps one null block), "
            "so no request can be served; lower the fixed memory or raise gpu_memory_utilization"
        )
    pc = _bool("enable_prefix_caching", pick("enable_prefix_caching", lim.enable_prefix_caching, src))
    asy = _bool("async_scheduling", pick("async_scheduling", lim.async_scheduling, src))
    chunked = _bool("enable_chunked_prefill", pick("enable_chunked_prefill", lim.enable_chunked_prefill, src))
    partial = _int("max_num_partial_prefills", pick("max_num_partial_prefills", lim.max_num_partial_prefills, src), 1)
    thr = _int(
        "long_prefill_token_threshold",
        pick("long_prefill_token_threshold", lim.long_prefill_token_threshold, src),
        0,
    )
    if partial > 1 and thr == 0:
        # vllm/config/scheduler.py, SchedulerConfig.__post_init__: with concurrent partial
        # prefills the threshold defaults to 4 % of max_model_len
        thr = int(mml * 0.04)
        notes.append(
            (
                "long_prefill_token_threshold",
                str(thr),
                "int(0.04 x max_model_len), vLLM's default when max_num_partial_prefills > 1",
            )
        )
    # Settings given here that vLLM would not start with are refused by the same rules the
    # kernel applies to a deployment (resolve/startup.py); the step model's own limits were
    # checked when it was built.
    if any(
        key in engine for key in ("max_num_seqs", "max_num_batched_tokens", "max_model_len", "enable_chunked_prefill")
    ):
        check_scheduler_limits(mnbt, mns, mml, chunked)
    if engine.get("max_model_len") is not None:
        # vllm/config/model.py, _get_and_verify_max_len, held to the limit the kernel derived
        check_max_model_len(mml, lim.model_max_model_len or None, None, False, setting="max_model_len")
    if mml > 0 and engine.get("max_model_len") is not None and engine.get("num_gpu_blocks") is None:
        need = -(-mml // bs)
        if need > blocks - 1:
            # vllm/v1/core/kv_cache_utils.py, check_enough_kv_cache_memory: one request of
            # max_model_len tokens must fit the KV memory (checked on the memory, before
            # --num-gpu-blocks-override applies: an override is not held to it)
            raise RefusedError(
                f"max_model_len {mml} needs {need} KV blocks of {bs} tokens, more than the {blocks - 1} the "
                "cache holds (num_gpu_blocks less vLLM's null block); vLLM refuses to start; lower "
                "max_model_len or give the cache more blocks",
                setting="max_model_len",
                value=mml,
            )
    check_block_size(bs, "block_size" in engine)
    policy = str(pick("scheduling_policy", lim.scheduling_policy, src))
    if policy not in ("fcfs", "priority"):
        raise LatencyKernelError(f"scheduling_policy must be fcfs or priority, got {policy!r}")
    k = _int("num_speculative_tokens", pick("num_speculative_tokens", lim.num_speculative_tokens, src), 0)
    acc_rate = engine.get("acceptance_rate")
    mal = engine.get("mean_accepted_length")
    if acc_rate is not None and mal is not None:
        raise LatencyKernelError("give acceptance_rate or mean_accepted_length, not both")
    accepted = 0.0
    if k > 0:
        if acc_rate is not None:
            a = real("acceptance_rate", acc_rate)
            if not 0.0 <= a <= 1.0:
                raise LatencyKernelError(f"acceptance_rate must be in [0, 1], got {acc_rate}")
            accepted = a * k
        elif mal is not None:
            m = real("mean_accepted_length", mal)
            if not 1.0 <= m <= k + 1:
                raise LatencyKernelError(
                    f"mean_accepted_length must be in [1, num_speculative_tokens + 1] = [1, {k + 1}], got {mal}"
                )
            accepted = m - 1.0
        else:
            raise LatencyKernelError(
                f"num_speculative_tokens is {k}: give acceptance_rate or mean_accepted_length (measured on your "
                "traffic); the simulation does not guess how many drafts are accepted"
            )
        notes.append(
            (
                "speculative_acceptance",
                f"{accepted:g} accepted drafts per decode step",
                "spread evenly over steps (a fractional carry per request), not drawn at random",
            )
        )
        notes.append(
            (
                "num_lookahead_tokens",
                str(k),
                "KV slots reserved for drafts as for EAGLE/MTP and draft models (Scheduler.__init__); n-gram reserves none",
            )
        )
    elif acc_rate is not None or mal is not None:
        raise LatencyKernelError("acceptance_rate / mean_accepted_length need num_speculative_tokens > 0")
    eng = str(pick("engine", lim.engine, src))
    if eng not in ("vllm", "sglang"):
        raise LatencyKernelError(f"engine must be vllm or sglang, got {eng!r}")
    mixed = engine.get("enable_mixed_chunk")
    if mixed is not None and eng != "sglang":
        raise LatencyKernelError(
            f"enable_mixed_chunk is SGLang's --enable-mixed-chunk, but the engine is {eng!r}; vLLM always mixes "
            "prompt chunks into the decodes' step (drop the setting or set engine: sglang)"
        )
    mixed = _bool("enable_mixed_chunk", mixed if mixed is not None else False)
    if eng == "sglang":
        notes.append(
            (
                "engine",
                "sglang",
                "a prefill batch runs alone and the decodes wait (SGLang's get_next_batch_to_run)"
                + (", unless mixed (enable_mixed_chunk)" if mixed else "")
                + "; otherwise vLLM v1's rules: SGLang's own policy (longest-prefix-first with the radix cache, "
                "new_token_ratio admission, retract-decode instead of recompute of the newest request) "
                "is not modelled",
            )
        )
        if "enable_mixed_chunk" not in engine:
            notes.append(
                (
                    "enable_mixed_chunk",
                    "False",
                    "SGLang's default: prompt chunks are not mixed into the decodes' step",
                )
            )
    dp = _int("data_parallel_size", pick("data_parallel_size", lim.data_parallel, src), 1)
    lock = _bool("lockstep_data_parallel", pick("lockstep_data_parallel", lim.lockstep_data_parallel, src))
    price = str(engine.get("step_price", "no_overlap"))
    if price not in ("no_overlap", "overlap"):
        raise LatencyKernelError(f"step_price must be no_overlap or overlap, got {price!r}")
    if "step_price" not in engine:
        notes.append(("step_price", "no_overlap", "the step model's one number (resources take turns)"))
    skip = _bool("skip_ahead", engine.get("skip_ahead", True))
    tokq = _bool("tokeniser_queue", engine.get("tokeniser_queue", True))
    bw = _int("batch_wait_timeout_iters", engine.get("batch_wait_timeout_iters", 0), 0)
    bwr = real("batch_wait_max_tokens_ratio", engine.get("batch_wait_max_tokens_ratio", 0.0))
    if not 0.0 <= bwr <= 1.0:
        raise LatencyKernelError(f"batch_wait_max_tokens_ratio must be in [0, 1], got {bwr!r}")
    if bw:
        notes.append(
            (
                "batch_wait_timeout_iters",
                str(bw),
                "TensorRT-LLM's batch waiting: while others decode, prompts are held up to this many steps, or until "
                f"held prompts + decodes reach {bwr:g} x max_num_batched_tokens (off under attention DP)",
            )
        )
    resv = str(pick("kv_reservation", lim.kv_reservation, src))
    if resv not in KV_RESERVATIONS:
        raise LatencyKernelError(f"kv_reservation must be on_demand or to_completion, got {resv!r}")
    recv = _int("scheduler_recv_interval", engine.get("scheduler_recv_interval", 1), 1)
    if "scheduler_recv_interval" not in engine:
        notes.append(
            (
                "scheduler_recv_interval",
                "1",
                "new requests are taken in at every step (vLLM's engine core; SGLang's default; SGLang launched "
                "with --scheduler-recv-interval N takes them in every N decode steps)",
            )
        )
    if "tokeniser_queue" not in engine:
        notes.append(
            (
                "tokeniser_queue",
                "True",
                "the admission's per-prompt-token part (admission(2p) - admission(p)) is served one prompt at a time "
                "for every client, as vLLM's API server tokenises in its one event loop (serving/frontend.py)",
            )
        )
    if not math.isfinite(accepted):
        raise LatencyKernelError("acceptance must be finite")
    cfg = EngineConfig(
        max_num_seqs=mns,
        max_num_batched_tokens=mnbt,
        max_model_len=mml,
        block_size=bs,
        num_gpu_blocks=blocks,
        usable_blocks=blocks - 1,
        enable_prefix_caching=pc,
        async_scheduling=asy,
        enable_chunked_prefill=chunked,
        long_prefill_token_threshold=thr,
        scheduling_policy=policy,
        num_speculative_tokens=k,
        accepted_per_step=accepted,
        lookahead=k,
        engine=eng,
        data_parallel_size=dp,
        lockstep=lock and dp > 1,
        gpus_per_replica=max(int(lim.gpus), 1),
        decode_threshold=int(lim.decode_threshold),
        overlap=price == "overlap",
        skip_ahead=skip,
        tokeniser_queue=tokq,
        batch_wait_iters=bw,
        batch_wait_ratio=bwr,
        reserve_to_completion=resv == "to_completion",
        recv_interval=recv,
        prefill_alone=eng == "sglang" and not mixed,
    )
    return cfg, notes

"""What one step may hold: a batch checked against the engine's limits.

``check_batch`` is pure (it reads ``EngineLimits`` and a ``Batch``, nothing else), so a
serving simulation can call the same rules ``Kernel.check`` applies, once per scheduled
step or once per admitted request, without a kernel. ``Kernel.step_time`` never calls it:
the hot path prices what it is given.

The rules, as vLLM's scheduler enforces them (``vllm/v1/core/sched/scheduler.py``
``Scheduler.schedule``: the token budget is ``max_num_batched_tokens``, running requests
are capped at ``max_num_seqs``; ``vllm/v1/engine/input_processor.py`` refuses a prompt
longer than ``max_model_len``; ``vllm/v1/core/kv_cache_manager.py``
``KVCacheManager.allocate_slots`` refuses a step whose blocks the pool cannot supply):

- every request's context (computed + scheduled) is at most ``max_model_len``;
- the step schedules at most ``max_num_batched_tokens`` tokens;
- it holds at most ``max_num_seqs`` requests;
- the blocks its requests hold fit ``kv_blocks``;
- a request's ``cached_tokens`` (prefix-cache hit) is not more than its ``computed``;
- ``prompt_len`` and ``cached_tokens`` are whole numbers, not negative.
"""

from __future__ import annotations

from collections.abc import Callable

from latencykernel.batch import Batch, whole_number
from latencykernel.errors import RefusedError
from latencykernel.step_model import EngineLimits

__all__ = ["check_batch", "blocks_for_tokens"]


def blocks_for_tokens(tokens: int, block_size: int) -> int:
    """KV blocks one request of ``tokens`` tokens holds in a single full-attention group:
    ceil(tokens / block_size)."""
    if tokens <= 0:
        return 0
    b = max(block_size, 1)
    return -(-tokens // b)


def _refuse(setting: str, value: int, text: str) -> RefusedError:
    return RefusedError(text, setting=setting, value=value)


def check_batch(limits: EngineLimits, batch: Batch, blocks_for: Callable[[int], int] | None = None) -> None:
    """Raise ``RefusedError`` (``setting`` the limit at fault, ``value`` the value that
    breaks it) for a batch no engine under ``limits`` would run; return None otherwise.

    ``blocks_for(tokens)`` gives the KV blocks one request of that context holds (a kernel's
    ``blocks_for``, which knows windowed and grouped layers); by default ceil(tokens /
    block_size). A limit of 0 (``max_model_len`` or ``kv_blocks`` unknown) is not checked.
    """
    sched, comp = batch.scheduled, batch.computed
    n = len(sched)
    if n > limits.max_num_seqs:
        raise _refuse(
            "max_num_seqs",
            n,
            f"the batch holds {n} requests, more than max_num_seqs {limits.max_num_seqs} lets one step hold",
        )
    tokens = sum(sched)
    if tokens > limits.max_num_batched_tokens:
        raise _refuse(
            "max_num_batched_tokens",
            tokens,
            f"the batch schedules {tokens} tokens, more than max_num_batched_tokens "
            f"{limits.max_num_batched_tokens} allows in one step",
        )
    longest = 0
    where = 0
    for i in range(n):
        c = sched[i] + comp[i]
        if c > longest:
            longest, where = c, i
    if limits.max_model_len > 0 and longest > limits.max_model_len:
        raise _refuse(
            "max_model_len",
            longest,
            f"request {where} reaches a context of {longest} tokens (computed {comp[where]} + scheduled "
            f"{sched[where]}), beyond max_model_len {limits.max_model_len}",
        )
    reqs = batch.reqs if batch._reqs is not None else ()
    for i, r in enumerate(reqs):
        prompt = whole_number(f"reqs[{i}].prompt_len", r.prompt_len, lo=0)
        cached = whole_number(f"reqs[{i}].cached_tokens", r.cached_tokens, lo=0)
        if cached > r.computed:
            raise _refuse(
                "cached_tokens",
                cached,
                f"request {i} states cached_tokens {cached}, more than the {r.computed} tokens it has computed "
                f"(a prefix-cache hit is part of what is computed)",
            )
        del prompt
    if limits.kv_blocks > 0:
        per = blocks_for or (lambda t: blocks_for_tokens(t, limits.block_size))
        need = 0
        for i in range(n):
            need += per(sched[i] + comp[i])
        if need > limits.kv_blocks:
            raise _refuse(
                "kv_blocks",
                need,
                f"the batch's requests hold {need} KV blocks, more than the {limits.kv_blocks} the cache holds "
                f"(block_size {limits.block_size})",
            )

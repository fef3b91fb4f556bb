"""The contract every step model keeps, and the engine limits a scheduler reads from it.

Serving, search, charts and the scenario bridge depend on ``StepModel`` rather than on the
concrete ``Kernel``, so a user can drive them with a step model of their own (a lookup table
of measured steps, a roofline, a learned model) as long as it keeps this contract:

- **units**: every time is seconds on one rank of one replica; every size is bytes on one
  rank; token counts are whole tokens.
- **immutable**: nothing a caller does to a step model, or to what it returns, changes a
  later answer.
- **thread-safe and deterministic**: the same batch gives the same estimate, from any
  thread, in any order.
- **empty batch**: a step over no requests costs host time only (``per_resource`` holds at
  most ``Resource.HOST``).
- **ordered**: ``0 <= overlap <= no_overlap``, and ``no_overlap`` is the sum of
  ``per_resource``.

A step model may also offer ``decode_step_times(width, requests, computed_sum, *,
decode_threshold)``: steps of plain decodes priced from each step's request count and the
sum of their computed tokens (numpy arrays), each equal to ``step_time`` on any batch of such
rows, or None where it cannot price from those sums. It is not part of the protocol: the
serving simulation uses it for runs of decode steps when present (``Kernel`` has it), and
prices the rows through ``step_times`` otherwise. Likewise ``aggregate_step_time(decodes,
width, computed_sum, rows=None, *, decode_threshold)``: one step of ``decodes`` decodes of
``width`` tokens whose computed tokens sum to ``computed_sum``, beside the requests of the
``Batch`` ``rows`` (a step's prefill chunks), equal to ``step_time`` on the whole batch, or
None where it cannot; the serving simulation's stream (``serving/stream.py``) takes an open
loop's steps through it when present, and steps the ordinary way otherwise.

This module imports nothing heavy: it is safe to import from anywhere above ``batch``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from latencykernel.batch import Batch, StepEstimate

__all__ = ["EngineLimits", "KV_RESERVATIONS", "StepModel"]

# How a scheduler holds a request's KV (``EngineLimits.kv_reservation``)
KV_RESERVATIONS = ("on_demand", "to_completion")


@dataclass(frozen=True, slots=True)
class EngineLimits:
    """The engine settings a scheduler obeys, as the deployment resolved them (each
    unstated one is vLLM's default, recorded by the kernel as an assumption).

    max_num_seqs:            requests a step may hold (vLLM ``--max-num-seqs``)
    max_num_batched_tokens:  tokens a step may schedule (``--max-num-batched-tokens``)
    max_model_len:           longest request context, prompt plus output (``--max-model-len``);
                             0 when neither the deployment nor the model states one
    block_size:              tokens per KV block (``--block-size``)
    kv_blocks:               KV blocks the cache holds on one rank (vLLM's num_gpu_blocks)
    enable_prefix_caching:   whether prefix caching is on (``--enable-prefix-caching``)
    async_scheduling:        whether the engine schedules step n+1 while step n runs
    num_speculative_tokens:  draft tokens per decode step (0 without speculative decoding)
    decode_threshold:        a request scheduling at most this many tokens is priced as a decode
    gpus:                    GPUs one replica of this pool occupies (tp x pp x pcp)
    data_parallel:           replicas (or attention-DP ranks) of this pool
    enable_chunked_prefill:  whether a prompt may be split over steps (``--enable-chunked-prefill``;
                             on by default in vLLM v1)
    long_prefill_token_threshold: the most prompt tokens one request schedules in a step
                             (``--long-prefill-token-threshold``; 0 = no cap)
    max_num_partial_prefills: ``--max-num-partial-prefills`` as resolved (vLLM v1's scheduler
                             reads it only to derive the threshold above)
    scheduling_policy:       ``fcfs`` or ``priority`` (``--scheduling-policy``)
    engine:                  ``vllm`` or ``sglang``: whose scheduler the deployment runs
    lockstep_data_parallel:  the data-parallel ranks step together (attention DP under a
                             shared MoE layer: vLLM syncs them every step), so a step lasts as
                             long as the slowest rank; False for independent replicas
    model_max_model_len:     the longest context the model's config supports as vLLM derives
                             it (0: unknown); a max_model_len given later is held to it
    kv_reservation:          ``on_demand`` (vLLM, SGLang: a request takes KV blocks as it
                             grows; short of blocks, the scheduler preempts) or
                             ``to_completion`` (TensorRT-LLM's default capacity scheduler,
                             GUARANTEED_NO_EVICT: a request is admitted only when the free
                             blocks, less those the running requests still need to finish,
                             hold its prompt plus its max_tokens; nothing is ever preempted)
    """

    max_num_seqs: int
    max_num_batched_tokens: int
    max_model_len: int
    block_size: int
    kv_blocks: int
    enable_prefix_caching: bool
    async_scheduling: bool
    num_speculative_tokens: int
    decode_threshold: int
    gpus: int
    data_parallel: int
    enable_chunked_prefill: bool = True
    long_prefill_token_threshold: int = 0
    max_num_partial_prefills: int = 1
    scheduling_policy: str = "fcfs"
    engine: str = "vllm"
    lockstep_data_parallel: bool = False
    model_max_model_len: int = 0
    kv_reservation: str = "on_demand"


@runtime_checkable
class StepModel(Protocol):
    """What serving, search and the scenario bridge need of a step model (see the module
    docstring for the contract)."""

    def step_time(self, batch: Batch) -> StepEstimate:
        """The price of one forward step over ``batch``, in seconds on one rank."""
        ...

    def step_times(
        self,
        step: Any,
        scheduled: Any,
        computed: Any,
        *,
        decode_threshold: int,
        prompt_len: Any = None,
        sm_budget: int = 0,
    ) -> Any:
        """Many steps in one call, each equal to ``step_time`` on the same batch: an object
        with numpy arrays ``overlap`` and ``no_overlap`` (seconds), one entry per step."""
        ...

    def limits(self) -> EngineLimits:
        """The engine limits a scheduler obeys for this deployment."""
        ...

    def sequence_variable_bytes(self, tokens: int) -> int:
        """One request's KV cache per rank at ``tokens`` tokens, in whole blocks."""
        ...

    def admission_overhead(self, prompt_tokens: int) -> float:
        """Host seconds before a request of ``prompt_tokens`` is first scheduled."""
        ...

    def output_token_overhead(self) -> float:
        """Host seconds per emitted token."""
        ...

    def completion_overhead(self) -> float:
        """Host seconds to retire a finished request."""
        ...

"""The kernel: an immutable, thread-safe price of one deployment pool."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from latencykernel.batch import (
    DEFAULT_DECODE_THRESHOLD,
    MAX_REQUESTS,
    MAX_SM_BUDGET,
    MAX_TOKENS,
    RESOURCES,
    Batch,
    Resource,
    StepEstimate,
    whole_count,
    whole_number,
)
from latencykernel.errors import LatencyKernelError
from latencykernel.kernel.capacity import KernelMemory
from latencykernel.kernel.constants import StepConstants
from latencykernel.kernel.fast import FastPlan
from latencykernel.kernel.fast_build import build_fast_plan
from latencykernel.kernel.memory import MemoryBreakdown
from latencykernel.kernel.step import price_step
from latencykernel.limits import check_batch
from latencykernel.price.collective import floor_and_rate_s
from latencykernel.resolve.coefficients import Coefficients
from latencykernel.resolve.layout import Group, Op, Override
from latencykernel.resolve.settings import Assumptions
from latencykernel.step_model import EngineLimits, StepModel

if TYPE_CHECKING:
    from latencykernel.kernel.vector import StepTimes

__all__ = ["Kernel", "CoefficientOrigin", "Resolution", "Placement", "KERNEL_ASSUMPTION_SET"]

KERNEL_ASSUMPTION_SET = "blis-latency-kernel"
EVIDENCED = ("measured", "literature", "vendor_spec")
NS = 1e-9
# step_times' two functions (kernel.arrays.token_columns, kernel.vector_layout.step_times),
# imported on its first call: they load numpy, which nothing else here needs.
_VECTORISED: tuple[Any, Any] | None = None


def _vectorised() -> tuple[Any, Any]:
    """``(token_columns, step_times)``, imported once (threads racing here bind equal tuples)."""
    global _VECTORISED
    if _VECTORISED is None:
        from latencykernel.kernel.arrays import token_columns
        from latencykernel.kernel.vector_layout import step_times

        _VECTORISED = (token_columns, step_times)
    return _VECTORISED


def _ns(seconds: float) -> int:
    """Seconds to whole nanoseconds as the Go kernel does: 0 for NaN or negative, a
    saturated value for +inf, else truncated."""
    if seconds != seconds or seconds < 0:
        return 0
    if math.isinf(seconds):
        return 2**63 - 1
    return int(seconds * 1e9)


@dataclass(frozen=True)
class CoefficientOrigin:
    """Where one value the kernel may use came from."""

    name: str
    set: str
    method: str
    scope: str


@dataclass(frozen=True)
class Resolution:
    """Widths and backends as resolved, and every setting resolved differently than asked."""

    tensor_parallel: int
    data_parallel: int
    expert_parallel: int
    decode_context_parallel: int
    prefill_context_parallel: int
    all_reduce_backend: str
    sequence_parallel_moe: bool
    async_scheduling: bool
    cascade_attention: bool
    overrides: tuple[Override, ...]


@dataclass(frozen=True)
class Placement:
    """Where a pool's rank sits: for choosing the link a KV transfer takes."""

    node: int
    rack: int = 0
    pool: str = ""


class Kernel(KernelMemory):
    """The price of one pool of one deployment. Build with ``new``, ``open`` or ``build``."""

    __slots__ = (
        "_c",
        "_coeffs",
        "_assumptions",
        "_overrides",
        "_memory",
        "_pre",
        "_inputs",
        "_pool",
        "_info",
        "_tiers",
        "_fast",
        "__weakref__",
    )
    _c: StepConstants
    _coeffs: Coefficients
    _assumptions: tuple[Any, ...]
    _overrides: tuple[Override, ...]
    _memory: MemoryBreakdown
    _pre: int
    _inputs: Any
    _pool: Any
    _info: dict[str, Any]
    _tiers: dict[str, Any]
    _fast: FastPlan | None

    @classmethod
    def _create(
        cls,
        *,
        inputs: Any,
        consts: StepConstants,
        coeffs: Coefficients,
        assumptions: Assumptions,
        overrides: list[Override],
        memory: MemoryBreakdown,
        pre_snapshot: int,
        **info: Any,
    ) -> Kernel:
        k = object.__new__(cls)
        k._c = consts
        k._coeffs = coeffs
        k._assumptions = tuple(assumptions.items)
        k._overrides = tuple(overrides)
        k._memory = memory
        k._pre = pre_snapshot
        k._inputs = inputs
        k._pool = inputs.deployment.pools[inputs.pool]
        k._info = dict(info)
        k._tiers = {name: dev for name, dev in (inputs.storage or {}).items()}
        k._fast = build_fast_plan(consts)  # None: every step takes the reference path
        return k

    # ----- identity -------------------------------------------------------------------
    @property
    def name(self) -> str:
        return str(self._inputs.scenario.name)

    @property
    def model(self) -> str:
        return str(self._inputs.model.name)

    @property
    def chip(self) -> str:
        return str(self._inputs.chip.name)

    @property
    def constants(self) -> StepConstants:
        """The batch-independent numbers a step uses: frozen, its mappings read-only views."""
        return self._c

    @property
    def info(self) -> dict[str, Any]:
        """Settings as resolved: served weight dtype, compute suffix, graph mode, limits."""
        return dict(self._info)

    def deployment(self) -> Any:
        """The pool exactly as the document stated it (unstated settings are None)."""
        return self._pool.model_copy(deep=True)

    def __repr__(self) -> str:
        lay = self._c.layout
        return (
            f"Kernel({self.model} on {self.chip}, tp={lay.tp} dp={lay.dp} ep={lay.expert_width}, "
            f"{self._info.get('served_dtype')})"
        )

    # ----- step ------------------------------------------------------------------------
    def step_time(self, batch: Batch) -> StepEstimate:
        """The price of one forward step over ``batch`` (seconds).

        Unchecked, by design: the hot path prices whatever batch it is given, including one
        no engine would run (a context beyond max_model_len, more tokens than the step
        budget, more KV than the cache). Call ``check(batch)`` first where that matters;
        ``Batch`` itself already refuses negative, fractional and absurd counts."""
        fast = self._fast
        if fast is not None:
            e = fast.estimate(batch.scheduled, batch.computed, batch.decode_threshold, batch.sm_budget, None)
            if e is not None:
                return e
        return self._reference_step(batch, None)

    def step_time_into(self, batch: Batch, per: dict[Resource, float] | None) -> StepEstimate:
        """``step_time``, filling (after clearing) a dict the caller reuses."""
        fast = self._fast
        if fast is not None:
            e = fast.estimate(batch.scheduled, batch.computed, batch.decode_threshold, batch.sm_budget, per)
            if e is not None:
                return e
        return self._reference_step(batch, per)

    def step_times(
        self,
        step: Any,
        scheduled: Any,
        computed: Any,
        *,
        decode_threshold: int,
        prompt_len: Any = None,
        sm_budget: int = 0,
    ) -> StepTimes:
        """Many steps in one call. ``step``, ``scheduled`` and ``computed`` hold one row per
        request (lists or numpy arrays of integers); ``step`` (non-decreasing, from 0) says
        which step each request belongs to, and a step number with no rows is an empty step.
        Returns a ``StepTimes`` of numpy arrays, one entry per step, each step's entry equal
        to ``step_time`` on the same batch. ``prompt_len`` is accepted and not read.

        The arrays and settings pass the same checks as a ``Batch`` (whole numbers in
        [0, ``MAX_TOKENS``]; ``decode_threshold`` and ``sm_budget`` whole and not negative)
        before the vectorised price runs."""
        token_columns, step_times = _VECTORISED or _vectorised()  # numpy loads on the first call
        th = whole_count("decode_threshold", decode_threshold)
        budget = whole_count("sm_budget", sm_budget, MAX_SM_BUDGET)
        cols = token_columns(step, scheduled, computed, prompt_len)
        return step_times(self._fast, self.step_time, cols, decode_threshold=th, sm_budget=budget)

    def decode_step_times(
        self, width: int, requests: Any, computed_sum: Any, *, decode_threshold: int, sm_budget: int = 0
    ) -> StepTimes | None:
        """Steps of plain decodes from their aggregates, for a simulator that knows them: step
        j holds ``requests[j]`` requests, each scheduling ``width`` tokens, whose computed
        tokens sum to ``computed_sum[j]``. Each entry equals ``step_time`` (and
        ``step_times``) on any batch of such rows with that sum, bit for bit; None when this
        deployment's price reads more of each request than the sum (a per-request read
        transform) or ``width`` is above ``decode_threshold``: then price the rows. An
        optional capability beyond the ``StepModel`` protocol (``serving`` uses it when a
        step model has it). Checked as ``step_times``' columns: whole counts, ``requests``
        at most ``MAX_REQUESTS``, a step's tokens (``requests`` x ``width``) at most
        ``MAX_TOKENS``, ``computed_sum`` at most ``requests`` x ``MAX_TOKENS``."""
        import numpy as np

        from latencykernel.kernel.arrays import token_array
        from latencykernel.kernel.vector_decode import decode_step_times

        th = whole_count("decode_threshold", decode_threshold)
        budget = whole_count("sm_budget", sm_budget, MAX_SM_BUDGET)
        w = whole_count("width", width, MAX_TOKENS)
        if w < 1:
            raise LatencyKernelError("width must be at least 1 (the tokens each decode schedules), got 0")
        n = token_array("requests", requests, MAX_REQUESTS)
        s = token_array("computed_sum", computed_sum, 1 << 62)
        if len(s) != len(n):
            raise LatencyKernelError(f"computed_sum has {len(s)} entries and requests has {len(n)}; they must be equal")
        big = n > MAX_TOKENS // w  # a step of more than MAX_TOKENS tokens (requests x width): no engine runs one
        if len(n) and bool(big.any()):
            j = int(np.flatnonzero(big)[0])
            raise LatencyKernelError(
                f"requests[{j}] = {int(n[j])} decodes of width {w} schedule more than {MAX_TOKENS:,} tokens in one step"
            )
        over = -(-s // MAX_TOKENS) > n  # s > n x MAX_TOKENS, without the product's overflow
        if len(n) and bool(over.any()):
            j = int(np.flatnonzero(over)[0])
            raise LatencyKernelError(
                f"computed_sum[{j}] is {int(s[j])}, more than requests[{j}] = {int(n[j])} requests of at most "
                f"{MAX_TOKENS:,} tokens each hold"
            )
        return decode_step_times(self._fast, w, n, s, th, budget)

    def aggregate_step_time(
        self,
        decodes: int,
        width: int,
        computed_sum: int,
        rows: Batch | None = None,
        *,
        decode_threshold: int,
    ) -> StepEstimate | None:
        """``step_time`` of a step of ``decodes`` decodes of ``width`` tokens each whose
        computed tokens sum to ``computed_sum``, beside the requests of ``rows`` (a step's
        prefill chunks; None: none), for a simulator that keeps decodes as sums: equal to
        ``step_time`` on the whole batch bit for bit, with no row per decode. None where this
        deployment's price reads more of each decode than the sum (a per-request read
        transform), ``width`` is not a decode (1 <= width <= ``decode_threshold``), or the
        batch takes the reference path; then price the rows. ``rows.decode_threshold`` is
        not read, and ``sm_budget`` is 0. An optional capability beyond the ``StepModel``
        protocol (``serving`` uses it when a step model has it); the counts are checked as a
        ``Batch``'s (whole, not negative, a step at most ``MAX_TOKENS`` tokens)."""
        if not (
            type(decodes) is int
            and type(width) is int
            and type(computed_sum) is int
            and type(decode_threshold) is int
            and 0 <= decodes <= MAX_REQUESTS
            and 0 < width <= MAX_TOKENS
            and 0 <= decode_threshold
            and decodes * width <= MAX_TOKENS
            and 0 <= computed_sum <= decodes * MAX_TOKENS
        ):
            decodes, width, computed_sum, decode_threshold = _aggregate_counts(
                decodes, width, computed_sum, decode_threshold
            )
        fast = self._fast
        if fast is None:
            return None
        if rows is None:
            return fast.estimate_aggregate(decodes, width, computed_sum, [], [], decode_threshold, 0)
        if not isinstance(rows, Batch):
            raise LatencyKernelError(f"rows must be a Batch or None, got {type(rows).__name__}")
        return fast.estimate_aggregate(decodes, width, computed_sum, rows.scheduled, rows.computed, decode_threshold, 0)

    def check(self, batch: Batch) -> None:
        """Refuse (``RefusedError`` naming the limit and the value) a batch no engine under
        this deployment's ``limits()`` would run: more requests than max_num_seqs, more
        tokens than max_num_batched_tokens, a context beyond max_model_len, cached_tokens
        above computed, or more KV blocks than the cache holds (counted per layer group, as
        ``blocks_for``). The rules are ``limits.check_batch``, callable without a kernel.
        ``step_time`` never calls this; the CLI does unless ``--unchecked``."""
        if not isinstance(batch, Batch):
            raise LatencyKernelError(f"check takes a Batch, got {type(batch).__name__}")
        check_batch(self.limits(), batch, self.blocks_for)

    def _reference_step(self, batch: Batch, per: dict[Resource, float] | None = None) -> StepEstimate:
        """``step_time_into`` on the reference path (``step.price_step``); the fast path
        (``kernel/fast.py``) must agree with it."""
        raw, overlap_s = price_step(self._c, batch.scheduled, batch.computed, batch.decode_threshold, batch.sm_budget)
        return self._estimate(raw, overlap_s, per)

    def _estimate(self, raw: Sequence[float], overlap_s: float, per: dict[Resource, float] | None) -> StepEstimate:
        ns = [_ns(x) for x in raw]
        no_overlap = sum(ns)
        best = 0
        for i in range(1, 5):
            if ns[i] > ns[best]:
                best = i
        overlap = min(_ns(overlap_s) + ns[4], no_overlap)
        if per is None:
            per = {}
        else:
            per.clear()
        for i, r in enumerate(RESOURCES):
            if ns[i] > 0:
                per[r] = ns[i] * NS
        return StepEstimate(overlap * NS, no_overlap * NS, RESOURCES[best], per)

    def limits(self) -> EngineLimits:
        """The engine limits a scheduler obeys (``StepModel.limits``), as resolved: each
        unstated one is vLLM's default, recorded in ``assumptions()``."""
        c = self._c
        lay = c.layout
        eng = self._pool.engine
        return EngineLimits(
            max_num_seqs=int(self._info["max_num_seqs"]),
            max_num_batched_tokens=int(self._info["max_batched_tokens"]),
            max_model_len=int(self._info.get("max_model_len", eng.max_model_len or 0)),
            model_max_model_len=int(self._info.get("model_max_model_len", 0)),
            block_size=c.block_size,
            kv_blocks=self.kv_blocks(),
            enable_prefix_caching=eng.enable_prefix_caching is not False,
            async_scheduling=eng.async_scheduling if eng.async_scheduling is not None else True,
            num_speculative_tokens=int(self._info.get("spec_tokens", 0)),
            decode_threshold=DEFAULT_DECODE_THRESHOLD,
            gpus=max(lay.tp, 1) * max(lay.pp, 1) * max(lay.pcp, 1),
            data_parallel=max(lay.dp, 1),
            scheduling_policy=str(eng.scheduling_policy or "fcfs"),
            enable_chunked_prefill=bool(self._info.get("enable_chunked_prefill", True)),
            # vLLM syncs data-parallel ranks of a MoE model every step (dummy batches on idle
            # ranks), so they step together; dense replicas run on their own.
            lockstep_data_parallel=lay.dp > 1 and c.plan.has_experts,
            # TensorRT-LLM reserves a request's KV to completion (its default capacity
            # scheduler, recorded by the build as an assumption); vLLM and SGLang allocate as
            # requests grow
            kv_reservation="to_completion" if self._inputs.scenario.engine == "trt" else "on_demand",
            # whose scheduler runs it: SGLang's runs a prefill batch alone (serving.scheduler);
            # TensorRT-LLM and vLLM mix prompt chunks into the decodes' step
            engine="sglang" if self._inputs.scenario.engine == "sglang" else "vllm",
        )

    # ----- transfers and per-request host time ------------------------------------------
    def tier_time(self, tier: str, direction: str, nbytes: int, queue_depth: int = 1) -> float:
        """Seconds to move ``nbytes`` to (``"to_tier"``) or from (``"from_tier"``) an offload
        tier: max(base latency, bytes / rate), the rate capped by the host link and shared by
        ``queue_depth`` transfers. An unknown tier is never free (+inf)."""
        if direction not in ("to_tier", "from_tier"):
            raise LatencyKernelError(f"direction must be 'to_tier' or 'from_tier', got {direction!r}")
        depth = whole_number("queue_depth", queue_depth, lo=1)
        size = whole_number("nbytes", nbytes, lo=0, hi=1 << 60)
        dev = self._tiers.get(tier)
        if dev is None:
            return math.inf
        rate = (dev.write_mb_per_s if direction == "to_tier" else dev.read_mb_per_s) * 1e6
        link = self._c.extra.get("host_link_bytes_per_s", 0.0)
        if link > 0 and rate > link:
            rate = link
        if depth > 1:
            rate /= depth
        return _ns(floor_and_rate_s(size, rate, dev.base_latency_us * 1e-6)) * NS

    def pd_transfer_time(self, tokens: int, src: Placement, dst: Placement) -> float:
        """Seconds to move one request's whole KV cache (``tokens`` tokens) between pools:
        NVLink on one node (or one rack-wide NVLink domain), else the fabric."""
        tokens = whole_number("tokens", tokens, lo=0)
        if not isinstance(src, Placement) or not isinstance(dst, Placement):
            raise LatencyKernelError(f"src and dst must be Placement, got {type(src).__name__}, {type(dst).__name__}")
        if tokens <= 0:
            return 0.0
        c = self._c
        nbytes = tokens * c.kv_bytes_per_token
        same_domain = src.node == dst.node or (c.layout.rack_gpus > 0 and src.rack == dst.rack)
        rate = c.nvlink_bytes_per_s if same_domain else c.nic_bytes_per_s
        cost = c.collectives.get((Op.ALL2ALL, Group.EXPERT))
        floor = cost.floor_s if cost is not None else 0.0
        return _ns(floor_and_rate_s(nbytes, rate, floor)) * NS

    def admission_overhead(self, prompt_tokens: int) -> float:
        """Host seconds before a request is scheduled (tokenisation and the like):
        host_admission_per_request + host_admission_per_token x prompt. The entries are the
        deployment's engine's (scope ``engine``: an SGLang scenario listing
        cost-model-host-overheads-sglang takes its per-request time)."""
        prompt_tokens = whole_number("prompt_tokens", prompt_tokens, lo=0)
        if prompt_tokens <= 0:
            return 0.0
        per_req = self._coeffs.get("host_admission_per_request") or 0.0
        per_tok = self._coeffs.get("host_admission_per_token") or 0.0
        return _ns((per_req + per_tok * prompt_tokens) * 1e-6) * NS

    def output_token_overhead(self) -> float:
        """Host seconds per emitted token (detokenise and stream)."""
        return _ns((self._coeffs.get("host_output_token") or 0.0) * 1e-6) * NS

    def completion_overhead(self) -> float:
        """Host seconds to retire a finished request."""
        return _ns((self._coeffs.get("host_completion") or 0.0) * 1e-6) * NS

    # ----- evidence ----------------------------------------------------------------------
    def provenance(self) -> list[CoefficientOrigin]:
        """Every registry value in scope (sorted by name), then the kernel's own assumptions
        (set ``KERNEL_ASSUMPTION_SET``, method ``assumed``, scope ``"<value>: <reason>"``)."""
        out = [CoefficientOrigin(r.name, r.set, r.method, r.scope) for r in self._coeffs.origins()]
        out += [
            CoefficientOrigin(a.name, KERNEL_ASSUMPTION_SET, "assumed", f"{a.value}: {a.reason}")
            for a in self._assumptions
        ]
        return out

    def assumptions(self) -> list[tuple[str, str, str]]:
        """The kernel's own assumptions as (name, value, reason)."""
        return [(a.name, a.value, a.reason) for a in self._assumptions]

    def fingerprint(self) -> str:
        """A key two kernels share only when they price every step alike, hold the same KV
        blocks under the same engine limits and charge the same host overheads: the resolved
        step constants, ``limits()`` and the host coefficients, floats written by ``repr``
        (which round-trips). A search simulates deployments that resolve alike (a setting
        stated at the value it defaults to) once. Conservative: expert parallel over one GPU
        keeps its own key (the layout records it), though it prices alike."""
        return repr((self._c, self.limits(), self._host_coeffs()))

    def fingerprint_parts(self) -> tuple[str, int]:
        """``fingerprint`` split for a caller that knows its load's bounds (a search's
        closed loop): a key over everything but the CUDA-graph capture ceiling and the three
        limits such a load may never reach (``max_num_seqs``, ``max_num_batched_tokens``,
        ``kv_blocks``: read them from ``limits()``), and that ceiling. The step price reads
        the ceiling only as whether a step's token count is above it (eager host time) or
        not (graph replay), so two kernels equal in the key price alike every step whose
        token count is on the same side of both ceilings."""
        c = replace(self._c, capture_tokens=0)
        lim = replace(self.limits(), max_num_seqs=0, max_num_batched_tokens=0, kv_blocks=0)
        return repr((c, lim, self._host_coeffs())), self._c.capture_tokens

    def _host_coeffs(self) -> tuple[Any, ...]:
        return tuple(
            self._coeffs.get(name)
            for name in (
                "host_admission_per_request",
                "host_admission_per_token",
                "host_output_token",
                "host_completion",
            )
        )

    def evidence(self) -> tuple[int, int, list[str]]:
        """(values resting on evidence, all values, names of assumed values)."""
        origins = self.provenance()
        measured = sum(1 for o in origins if o.method in EVIDENCED)
        assumed = [o.name for o in origins if o.method == "assumed"]
        return measured, len(origins), assumed

    def resolved(self) -> Resolution:
        lay = self._c.layout
        eng = self._pool.engine
        return Resolution(
            tensor_parallel=max(lay.tp, 1),
            data_parallel=max(lay.dp, 1),
            expert_parallel=max(lay.expert_width, 1),
            decode_context_parallel=lay.dcp,
            prefill_context_parallel=lay.pcp,
            all_reduce_backend="custom" if lay.custom_all_reduce else "nccl",
            sequence_parallel_moe=lay.sequence_parallel_moe,
            async_scheduling=eng.async_scheduling if eng.async_scheduling is not None else True,
            cascade_attention=(not eng.disable_cascade_attn) if eng.disable_cascade_attn is not None else False,
            overrides=self._overrides,
        )


# Kernel keeps the StepModel contract: mypy checks this assignment structurally.
_STEP_MODEL: type[StepModel] = Kernel


def _aggregate_counts(decodes: Any, width: Any, computed_sum: Any, decode_threshold: Any) -> tuple[int, int, int, int]:
    """``aggregate_step_time``'s counts as whole numbers, or its error naming the argument."""
    n = whole_count("decodes", decodes, MAX_REQUESTS)
    w = whole_count("width", width, MAX_TOKENS)
    th = whole_count("decode_threshold", decode_threshold)
    if w < 1:
        raise LatencyKernelError("width must be at least 1 (the tokens each decode schedules), got 0")
    if n * w > MAX_TOKENS:
        raise LatencyKernelError(f"decodes = {n} of width {w} schedule more than {MAX_TOKENS:,} tokens in one step")
    s = whole_count("computed_sum", computed_sum, 1 << 62)
    if s > n * MAX_TOKENS:
        raise LatencyKernelError(
            f"computed_sum is {s}, more than decodes = {n} requests of at most {MAX_TOKENS:,} tokens each hold"
        )
    return n, w, s, th

"""The bridge: KvDecodeBatchScenario's questions answered by the calibrated kernel.

``decode_batch(kernel, context_tokens, batch_sizes)`` returns a ``CalibratedDecodeBatch``:
``step_time(b)``, ``token_rate(b)``, ``max_batch_within(tpot)`` and ``max_batch_in_memory``
from the kernel (compute, collectives, host overhead and paging included), with ``floor``,
the bandwidth floor of the same deployment (a ``SparseKvDecodeBatchScenario``: what a step
reads, touched experts and attended tokens), so the two stand side by side.

The floor is built from the kernel's own facts, per rank: its stored weight bytes, its KV
bytes per token (the same KV law, ``latencykernel.price.kv``), the chip's datasheet
bandwidth. It can only be lower than the calibrated step: the kernel reads at least these
bytes, at a bandwidth no higher than the datasheet's, and adds compute and overheads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, runtime_checkable

import pint

from latencykernel.batch import DEFAULT_DECODE_THRESHOLD
from latencykernel.scenarios.base import InputDoc, Scenario
from latencykernel.scenarios.errors import ScenarioInputError
from latencykernel.scenarios.kv_decode import TPOT_SAMPLES, SparseKvDecodeBatchScenario
from latencykernel.scenarios.metadata import _largest_batch, output
from latencykernel.scenarios.units import Q_, as_quantity, count, int_list, nonnegative_int, quantity
from latencykernel.step_model import StepModel


@runtime_checkable
class CalibratedStepModel(StepModel, Protocol):
    """What the bridge needs: a ``StepModel`` that also names its catalog model and chip and
    reports its memory and layout (for the bandwidth floor, ``floor_of``). ``Kernel`` is one."""

    @property
    def model(self) -> str: ...

    @property
    def chip(self) -> str: ...

    def max_sequences(self, tokens: int, gpu_memory_utilization: float | None = None) -> int: ...

    def fixed_bytes(self) -> Any: ...

    def kv_bytes_per_token(self) -> float: ...

    def resolved(self) -> Any: ...


__all__ = ["CalibratedDecodeBatch", "decode_batch", "floor_of"]


def _batch_samples(s: CalibratedDecodeBatch) -> list[dict[str, Any]]:
    return [{"batch_size": b} for b in s.batch_sizes]


def _tpot_samples(_s: CalibratedDecodeBatch) -> list[dict[str, Any]]:
    return [{"tpot": Q_(t, "ms")} for t in TPOT_SAMPLES]


_CALIBRATED = "the kernel's calibrated coefficients for this chip, model and deployment"
_UNIFORM = "every sequence decodes one token against context_tokens tokens (a uniform decode batch)"


def floor_of(kernel: Any, context_tokens: int, batch_sizes: tuple[int, ...] = (1,)) -> SparseKvDecodeBatchScenario:
    """The bandwidth floor of the kernel's deployment, per rank.

    workload: the catalog graph of ``kernel.model``, one TP rank's share; weight bytes per
              parameter = the kernel's stored weight bytes per rank / parameters per rank;
    KV:       the rank's geometry at the cache width that gives the kernel's KV bytes per token;
    hardware: the catalog chip ``kernel.chip`` (datasheet bandwidth);
    context:  tokens per rank (divided by the decode-context-parallel width).
    The floor reads what the kernel reads: only the experts a batch touches (MoE), only the
    tokens sliding-window and sparse layers attend to (``SparseKvDecodeBatchScenario``).
    """
    from latencykernel.scenarios.hardware import Hardware
    from latencykernel.scenarios.workloads import Workload

    res = kernel.resolved()
    tp = int(res.tensor_parallel)
    dcp = max(int(getattr(res, "decode_context_parallel", 1) or 1), 1)
    whole = Workload.catalog(kernel.model)
    rank = whole.rank_share(tp)
    hw = Hardware.catalog(kernel.chip)
    weights = float(kernel.fixed_bytes().weights)
    kv_elements = rank.require_kv().bytes_per_token(1.0)  # elements per token per rank
    return SparseKvDecodeBatchScenario(
        name=f"bandwidth floor of {kernel!r}",
        description="The same deployment's memory floor: each rank reads its weights once and every "
        "sequence's cache per step, at the datasheet bandwidth.",
        sources=(
            f"workload: catalog graph {kernel.model!r}, one rank's share at tp={tp}; weight bytes as the kernel stores them",
            f"KV bytes per token: the kernel's, {kernel.kv_bytes_per_token():g} B per rank (same KV law)",
            f"hardware: {hw.source}",
        ),
        workload=rank,
        hardware=hw,
        weight_bytes_per_param=Q_(weights / rank.n_parameters, "B/param"),
        kv_bytes_per_value=Q_(kernel.kv_bytes_per_token() / kv_elements, "B"),
        context_tokens=math.ceil(context_tokens / dcp),
        batch_sizes=batch_sizes,
        prompt_tokens=0,
        prefill_efficiency=1.0,
        # the peak the kernel computes this deployment's GEMMs on (fp8 weights: the fp8 peak)
        peak_precision=f"{kernel.info.get('compute_suffix') or 'bf16'}_dense",
    )


@dataclass(frozen=True, kw_only=True)
class CalibratedDecodeBatch(Scenario):
    """KvDecodeBatchScenario's decode questions, answered by a calibrated kernel."""

    kernel: Any
    context_tokens: int
    batch_sizes: tuple[int, ...]
    decode_threshold: int = DEFAULT_DECODE_THRESHOLD

    family: ClassVar[str] = "bridge"
    summary: ClassVar[str] = (
        "The calibrated step time of a uniform decode batch on a deployment, beside the bandwidth floor "
        "of the same deployment."
    )
    equation: ClassVar[str] = (
        "t_step(B) = kernel.step_time(B decodes at context c).no_overlap: per layer, compute, HBM, collectives "
        "and host time, summed; floor(B) = (W + B·m) / BW ≤ t_step(B)."
    )
    assumptions: ClassVar[tuple[str, ...]] = (_UNIFORM, _CALIBRATED, "step time grows with the batch")
    excludes: ClassVar[tuple[str, ...]] = (
        "queueing and scheduling between steps",
        "prefill chunks sharing the step (a pure decode batch)",
    )
    inputs_doc: ClassVar[tuple[InputDoc, ...]] = (
        InputDoc("kernel", "latencykernel.Kernel", "a calibrated deployment (latencykernel.open or build)"),
        InputDoc("context_tokens", "int [tokens] ≥ 1", "tokens each sequence has in its cache"),
        InputDoc("batch_sizes", "list[int]", "batches to report"),
        InputDoc("decode_threshold", "int", "requests scheduling at most this many tokens price as decodes"),
    )
    examples: ClassVar[tuple[str, ...]] = (
        "import latencykernel",
        "from latencykernel.scenarios import decode_batch",
        "d = decode_batch(latencykernel.build('llama-3.1-8b-instruct', 'h100'), 4096, [1, 64])",
        "d.floor.step_time(64) <= d.step_time(64)",
        "d.max_batch_within('50 ms') <= d.floor.max_batch_within('50 ms')",
    )

    def _validate(self) -> None:
        if not isinstance(self.kernel, CalibratedStepModel):
            missing = [a for a in _NEEDED if not hasattr(self.kernel, a)]
            raise ScenarioInputError(
                f"kernel={self.kernel!r} is not a latencykernel Kernel (a CalibratedStepModel; "
                f"it has no {', '.join(missing)})",
                argument="kernel",
                value=self.kernel,
            )
        self._set("context_tokens", count("context_tokens", self.context_tokens, "token", minimum=1))
        self._set("batch_sizes", int_list("batch_sizes", self.batch_sizes))
        self._set("decode_threshold", count("decode_threshold", self.decode_threshold, "token", minimum=1))
        self._set("_floor", floor_of(self.kernel, self.context_tokens, self.batch_sizes))
        self._set("_cache", {})

    def symbols(self) -> dict[str, Any]:
        from latencykernel.batch import Batch

        s = super().symbols()
        s.update(Batch=Batch, second=Q_(1, "s"), floor_scenario=self._floor)  # type: ignore[attr-defined]
        return s

    @property
    def floor(self) -> SparseKvDecodeBatchScenario:
        """The bandwidth floor of the same deployment (see ``floor_of``)."""
        return self._floor  # type: ignore[attr-defined,no-any-return]

    def estimate(self, batch_size: int) -> Any:
        """The kernel's ``StepEstimate`` for ``batch_size`` decodes (seconds)."""
        from latencykernel.batch import Batch

        b = nonnegative_int("batch_size", batch_size)
        cache: dict[int, Any] = self._cache  # type: ignore[attr-defined]
        if b not in cache:
            cache[b] = self.kernel.step_time(Batch.decode(b, self.context_tokens, self.decode_threshold))
        return cache[b]

    def _step_s(self, b: int) -> float:
        return float(self.estimate(b).no_overlap)

    @output(
        equation="kernel.step_time(Batch.decode(batch_size, context_tokens, decode_threshold)).no_overlap * second",
        unit="ms",
        samples=_batch_samples,
        assumptions=(_UNIFORM, _CALIBRATED, "resources take turns within a step (no_overlap)"),
    )
    def step_time(self, batch_size: int) -> pint.Quantity:
        """Calibrated time of one decode step: compute, memory, collectives and host time."""
        return quantity(self._step_s(batch_size), "s", "ms")

    @output(
        equation="batch_size / step_time(batch_size)",
        unit="1/s",
        samples=_batch_samples,
        assumptions=("one output token per sequence per step",),
    )
    def token_rate(self, batch_size: int) -> pint.Quantity:
        """Aggregate output tokens per second at the calibrated step time."""
        b = nonnegative_int("batch_size", batch_size)
        return Q_(b / self._step_s(b) if b else 0.0, "1/s")

    @output(
        equation="largest_batch(lambda b: step_time(b) <= tpot, 0)",
        returns="int",
        samples=_tpot_samples,
        assumptions=("step time grows with the batch",),
        excludes=("the memory ceiling (compare max_batch_in_memory)",),
    )
    def max_batch_within(self, tpot: Any) -> int:
        """Largest batch whose calibrated step fits the TPOT; 0 when not even one sequence fits."""
        t = float(as_quantity("tpot", tpot, "s", nonnegative=True).to("s").magnitude)
        return _largest_batch(lambda b: self._step_s(b) <= t, 0)

    @output(
        equation="kernel.max_sequences(context_tokens)",
        returns="int",
        assumptions=("the engine's memory budget: chip memory × gpu_memory_utilization − fixed bytes",),
        excludes=("max_num_seqs, the engine's own cap",),
    )
    def max_batch_in_memory(self) -> int:
        """Sequences of context_tokens tokens the KV budget holds at once (paged, per rank)."""
        return int(self.kernel.max_sequences(self.context_tokens))

    @output(equation="floor_scenario.step_time(batch_size)", unit="ms", samples=_batch_samples)
    def floor_step_time(self, batch_size: int) -> pint.Quantity:
        """The same deployment's bandwidth floor."""
        return self.floor.step_time(batch_size).to("ms")  # type: ignore[no-any-return]

    @output(equation="step_time(batch_size) / floor_step_time(batch_size)", returns="float", samples=_batch_samples)
    def over_floor(self, batch_size: int) -> float:
        """How many times the floor the calibrated step takes."""
        b = nonnegative_int("batch_size", batch_size)
        return self._step_s(b) / float(self.floor.step_time(b).to("s").magnitude)

    @output(
        equation="str(kernel.step_time(Batch.decode(batch_size, context_tokens, decode_threshold)).bottleneck)",
        returns="text",
        samples=_batch_samples,
    )
    def bottleneck(self, batch_size: int) -> str:
        """The resource with the largest share of the calibrated step."""
        return str(self.estimate(batch_size).bottleneck)


def decode_batch(
    kernel: Any,
    context_tokens: int,
    batch_sizes: Any = (1, 8, 32, 64, 128),
    *,
    decode_threshold: int = DEFAULT_DECODE_THRESHOLD,
) -> CalibratedDecodeBatch:
    """Answer KvDecodeBatchScenario's decode questions for ``kernel``'s deployment.

    >>> import latencykernel
    >>> from latencykernel.scenarios import decode_batch
    >>> d = decode_batch(latencykernel.build("llama-3.1-8b-instruct", "h100"), 4096, [1, 64])
    >>> d.floor.step_time(64) <= d.step_time(64)
    True
    """
    return CalibratedDecodeBatch(
        name=f"decode batches on {kernel!r} at {context_tokens}-token contexts",
        kernel=kernel,
        context_tokens=context_tokens,
        batch_sizes=batch_sizes,  # validated (and made a tuple) by the scenario
        decode_threshold=decode_threshold,
    )


# CalibratedStepModel's members, to name the missing ones in the refusal.
_NEEDED = (
    "step_time",
    "step_times",
    "limits",
    "sequence_variable_bytes",
    "admission_overhead",
    "output_token_overhead",
    "completion_overhead",
    "model",
    "chip",
    "max_sequences",
    "fixed_bytes",
    "kv_bytes_per_token",
    "resolved",
)

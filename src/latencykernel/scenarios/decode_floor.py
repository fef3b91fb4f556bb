"""Per-token floors of one decode step, and what they add up to over a call.

``DecodeScenario``: the weight-streaming roofline of one step (weights over bandwidth
against FLOPs over peak). ``ModelCallScenario``, ``StreamCancelScenario`` and
``ReasoningLatencyScenario`` multiply those floors out over a call's tokens.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import pint

from latencykernel.errors import NotApplicableError, ScenarioInputError
from latencykernel.scenarios import registry
from latencykernel.scenarios.base import InputDoc, Scenario
from latencykernel.scenarios.hardware import Hardware
from latencykernel.scenarios.metadata import output
from latencykernel.scenarios.units import (
    Q_,
    as_quantity,
    count,
    fraction,
    magnitude_in,
    mapping,
    positive_int,
    quantity,
    value_bytes,
)
from latencykernel.scenarios.workloads import Workload

__all__ = ["DecodeScenario", "ModelCallScenario", "StreamCancelScenario", "ReasoningLatencyScenario"]

_WEIGHTS_ONLY = "the KV cache reads (see KvDecodeBatchScenario)"
_NO_OVERHEAD = "collectives, kernel launches and host overhead"
_ALL_WEIGHTS = "every weight is read once per step (all experts of an MoE model)"


@dataclass(frozen=True, kw_only=True)
class DecodeScenario(Scenario):
    """One decode step of ``workload`` on ``hardware``: weight streaming against arithmetic."""

    workload: Workload
    hardware: Hardware
    precision: Any = "fp16"
    batch_size: int = 1
    peak_precision: str | None = None
    tp_size: int = 1

    family: ClassVar[str] = "decode_floor"
    mlsysim_type: ClassVar[str | None] = "DecodeScenario"
    summary: ClassVar[str] = (
        "One decode step as a roofline: streaming each rank's weight shard from memory against "
        "the step's linear-layer FLOPs at peak."
    )
    equation: ClassVar[str] = (
        "t_mem = (P·b/tp) / BW, t_compute = (2·P_active·B/tp) / peak; the step is bound by the larger; "
        "intensity = FLOPs / weight bytes."
    )
    assumptions: ClassVar[tuple[str, ...]] = (
        _ALL_WEIGHTS,
        "tensor parallelism splits weights and FLOPs evenly over tp_size ranks",
        "registered peak bandwidth and FLOP/s",
    )
    excludes: ClassVar[tuple[str, ...]] = (_WEIGHTS_ONLY, "attention FLOPs over the context", _NO_OVERHEAD)
    inputs_doc: ClassVar[tuple[InputDoc, ...]] = (
        InputDoc("workload", "Workload | str", "the model"),
        InputDoc("hardware", "Hardware | str", "one accelerator (each rank)"),
        InputDoc("precision", "str | Quantity [B]", "weight storage: a precision name or bytes per parameter"),
        InputDoc("batch_size", "int ≥ 1", "sequences decoding one token each"),
        InputDoc("peak_precision", "str | None", "peak key for the FLOP rate (None: the headline peak)"),
        InputDoc("tp_size", "int ≥ 1", "tensor-parallel ranks sharing the weights"),
    )
    examples: ClassVar[tuple[str, ...]] = (
        "from latencykernel.scenarios import Scenarios",
        "s = Scenarios.Llama3_70B_DecodeH100Batch64",
        "print(f'{s.memory_time:.3f~P}', f'{s.compute_time:.3f~P}', s.bottleneck)",
    )

    def _validate(self) -> None:
        self._set("workload", registry.workload(self.workload))
        self._set("hardware", registry.hardware(self.hardware))
        wb = value_bytes("precision", self.precision)
        self._set("batch_size", positive_int("batch_size", self.batch_size))
        self._set("tp_size", positive_int("tp_size", self.tp_size))
        if self.peak_precision is not None and not isinstance(self.peak_precision, str):
            raise ScenarioInputError(
                f"peak_precision={self.peak_precision!r} must be a precision key or None",
                argument="peak_precision",
                value=self.peak_precision,
            )
        self._set("_wb", magnitude_in(wb, "B"))

    def symbols(self) -> dict[str, Any]:
        s = super().symbols()
        s["weight_bytes_per_param"] = Q_(self._wb, "B/param")  # type: ignore[attr-defined]
        return s

    # floats
    def _mem_s(self) -> float:
        return self.workload.n_parameters * self._wb / self.tp_size / self.hardware.bandwidth_bytes_per_s  # type: ignore[attr-defined,no-any-return]

    def _flops(self) -> float:
        return 2.0 * self.workload.n_active_parameters * self.batch_size / self.tp_size

    def _compute_s(self) -> float:
        return self._flops() / self.hardware.peak_flops_per_s(self.peak_precision)

    @output(equation="workload.parameters * weight_bytes_per_param / tp_size", unit="B", assumptions=(_ALL_WEIGHTS,))
    def weight_bytes(self) -> pint.Quantity:
        """Weight bytes one rank streams per step."""
        return Q_(self.workload.n_parameters * self._wb / self.tp_size, "B")  # type: ignore[attr-defined]

    @output(
        equation="workload.flops_per_token * batch_size * token / tp_size",
        unit="flop",
        assumptions=("2 FLOPs per active parameter per token",),
        excludes=("attention FLOPs over the context",),
    )
    def flops_per_step(self) -> pint.Quantity:
        """Linear-layer FLOPs one rank runs per step."""
        return Q_(self._flops(), "flop")

    @output(equation="flops_per_step / hardware.peak(peak_precision)", unit="ms", excludes=(_NO_OVERHEAD,))
    def compute_time(self) -> pint.Quantity:
        """Arithmetic floor of the step at the registered peak."""
        return quantity(self._compute_s(), "s", "ms")

    @output(equation="weight_bytes / hardware.memory_bandwidth", unit="ms", excludes=(_WEIGHTS_ONLY,))
    def memory_time(self) -> pint.Quantity:
        """Weight-streaming floor of the step at the registered bandwidth."""
        return quantity(self._mem_s(), "s", "ms")

    @output(equation="memory_time / (memory_time + compute_time)", returns="float")
    def memory_share(self) -> float:
        """Share of the two floors' sum that is memory time."""
        m, c = self._mem_s(), self._compute_s()
        return m / (m + c)

    @output(equation="memory_time / compute_time", returns="float")
    def bound_ratio(self) -> float:
        """Memory floor over compute floor (above 1: memory-bound)."""
        return self._mem_s() / self._compute_s()

    @output(equation="flops_per_step / weight_bytes", unit="flop/B")
    def intensity(self) -> pint.Quantity:
        """Arithmetic intensity of the step against its weight traffic."""
        return Q_(self._flops() / (self.workload.n_parameters * self._wb / self.tp_size), "flop/B")  # type: ignore[attr-defined]

    @output(equation="min(hardware.peak(peak_precision), hardware.memory_bandwidth * intensity)", unit="flop/s")
    def attainable_flops(self) -> pint.Quantity:
        """Roofline rate: the peak, or bandwidth times intensity when that is lower."""
        i = self._flops() / (self.workload.n_parameters * self._wb / self.tp_size)  # type: ignore[attr-defined]
        return Q_(
            min(self.hardware.peak_flops_per_s(self.peak_precision), self.hardware.bandwidth_bytes_per_s * i), "flop/s"
        )

    @output(equation="attainable_flops / hardware.peak(peak_precision)", returns="float")
    def peak_fraction(self) -> float:
        """Attainable rate as a fraction of the peak."""
        return magnitude_in(self.attainable_flops, "flop/s") / self.hardware.peak_flops_per_s(self.peak_precision)

    @output(equation="'Memory' if memory_time > compute_time else 'Compute'", returns="text")
    def bottleneck(self) -> str:
        """The larger floor: Memory or Compute."""
        return "Memory" if self._mem_s() > self._compute_s() else "Compute"


@dataclass(frozen=True, kw_only=True)
class ModelCallScenario(Scenario):
    """One model call at per-token floors: prompt tokens at the compute floor, output tokens at the memory floor."""

    floors: DecodeScenario
    prompt_tokens: int
    output_tokens: int
    instruction_tokens: int = 0
    shared_prefix_tokens: int = 0
    deadline: pint.Quantity | None = None
    stage_success: Mapping[str, float] | None = None

    optional_inputs: ClassVar[frozenset[str]] = frozenset({"deadline", "stage_success"})
    family: ClassVar[str] = "decode_floor"
    mlsysim_type: ClassVar[str | None] = "ModelCallScenario"
    summary: ClassVar[str] = (
        "One call of prompt (+ instruction) tokens in and output tokens out, at a DecodeScenario's "
        "batch-one floors: each prompt token costs the compute floor, each output token the memory floor."
    )
    equation: ClassVar[str] = "T = (prompt + instructions)·t_compute + output·t_mem"
    assumptions: ClassVar[tuple[str, ...]] = (
        "prefill runs at the floors' compute time per token (peak FLOP/s, no attention term)",
        "each output token costs one batch-one weight-streaming step",
    )
    excludes: ClassVar[tuple[str, ...]] = (
        "KV cache reads during decode",
        "queueing, batching with other requests",
        _NO_OVERHEAD,
    )
    inputs_doc: ClassVar[tuple[InputDoc, ...]] = (
        InputDoc(
            "floors", "DecodeScenario", "batch-one floors (compute_time per prompt token, memory_time per output token)"
        ),
        InputDoc("prompt_tokens", "int [tokens]", "prompt length"),
        InputDoc("output_tokens", "int [tokens]", "reply length"),
        InputDoc("instruction_tokens", "int [tokens]", "added format instructions"),
        InputDoc("shared_prefix_tokens", "int [tokens]", "prompt tokens a prefix cache could serve"),
        InputDoc("deadline", "Quantity [time] | None", "the call's deadline"),
        InputDoc("stage_success", "dict[str, float] | None", "probability each acceptance stage passes"),
    )

    examples: ClassVar[tuple[str, ...]] = (
        "from latencykernel.scenarios import Scenarios",
        "c = Scenarios.CodingAgentWholeFileEdit",
        "print(f'{c.prefill_time:.3f~P}', f'{c.decode_time:.2f~P}', f'{c.deadline_margin:.3f}')",
    )

    def _validate(self) -> None:
        if not isinstance(self.floors, DecodeScenario):
            raise ScenarioInputError(
                f"floors={self.floors!r} must be a DecodeScenario", argument="floors", value=self.floors
            )
        for name in ("prompt_tokens", "output_tokens", "instruction_tokens", "shared_prefix_tokens"):
            self._set(name, count(name, getattr(self, name), "token"))
        if self.shared_prefix_tokens > self.prompt_tokens + self.instruction_tokens:
            raise ScenarioInputError(
                f"shared_prefix_tokens={self.shared_prefix_tokens} exceeds the prompt",
                argument="shared_prefix_tokens",
                value=self.shared_prefix_tokens,
            )
        if self.deadline is not None:
            self._set("deadline", as_quantity("deadline", self.deadline, "s", positive=True))
        if self.stage_success is not None:
            stages = {
                k: fraction(f"stage_success[{k!r}]", v, low_open=False)
                for k, v in mapping("stage_success", self.stage_success).items()
            }
            self._set("stage_success", stages)

    def symbols(self) -> dict[str, Any]:
        s = super().symbols()
        for name in ("prompt_tokens", "output_tokens", "instruction_tokens", "shared_prefix_tokens"):
            s[name] = Q_(getattr(self, name), "token")
        s["per_token"] = Q_(1, "1/token")
        return s

    def _prefill_s(self) -> float:
        return (self.prompt_tokens + self.instruction_tokens) * self.floors._compute_s()

    def _decode_s(self) -> float:
        return self.output_tokens * self.floors._mem_s()

    @output(equation="prompt_tokens + instruction_tokens", unit="token")
    def total_prompt_tokens(self) -> pint.Quantity:
        """Tokens the call prefills (mlsysim's result.prompt_tokens)."""
        return Q_(self.prompt_tokens + self.instruction_tokens, "token")

    @output(equation="(prompt_tokens + instruction_tokens) * per_token * floors.compute_time", unit="s")
    def prefill_time(self) -> pint.Quantity:
        """Prefill of the whole prompt at the compute floor per token."""
        return Q_(self._prefill_s(), "s")

    @output(equation="output_tokens * per_token * floors.memory_time", unit="s", excludes=("KV cache reads",))
    def decode_time(self) -> pint.Quantity:
        """Decode of the reply at the memory floor per token."""
        return Q_(self._decode_s(), "s")

    @output(equation="prefill_time + decode_time", unit="s")
    def total_time(self) -> pint.Quantity:
        """Prefill plus decode (a cached prefix is not subtracted; see fresh_prefill_time)."""
        return Q_(self._prefill_s() + self._decode_s(), "s")

    @output(equation="output_tokens / (total_prompt_tokens + output_tokens)", returns="float")
    def output_token_share(self) -> float:
        """Share of the call's tokens that are output."""
        n = self.prompt_tokens + self.instruction_tokens + self.output_tokens
        return self.output_tokens / n if n else 0.0

    @output(equation="decode_time / total_time", returns="float")
    def output_time_share(self) -> float:
        """Share of the call's time spent decoding."""
        t = self._prefill_s() + self._decode_s()
        return self._decode_s() / t if t else 0.0

    @output(
        equation="(total_prompt_tokens - shared_prefix_tokens) * per_token * floors.compute_time",
        unit="s",
        assumptions=("a cached prefix is served without compute",),
    )
    def fresh_prefill_time(self) -> pint.Quantity:
        """Prefill of the prompt tokens a prefix cache would not serve."""
        fresh = self.prompt_tokens + self.instruction_tokens - self.shared_prefix_tokens
        return Q_(fresh * self.floors._compute_s(), "s")

    @output(equation="1 / floors.memory_time", unit="1/s")
    def decode_rate(self) -> pint.Quantity:
        """Output tokens per second at the memory floor."""
        return Q_(1.0 / self.floors._mem_s(), "1/s")

    @output(equation="deadline / total_time", returns="float")
    def deadline_margin(self) -> float:
        """Deadline over total time (above 1: the call fits)."""
        if self.deadline is None:
            raise NotApplicableError("deadline_margin needs the input deadline")
        return magnitude_in(self.deadline, "s") / (self._prefill_s() + self._decode_s())

    @output(equation="product(stage_success.values())", returns="float", assumptions=("stages pass independently",))
    def acceptance(self) -> float:
        """Probability the call's result passes every stage."""
        if self.stage_success is None:
            raise NotApplicableError("acceptance needs the input stage_success")
        return math.prod(self.stage_success.values())


@dataclass(frozen=True, kw_only=True)
class StreamCancelScenario(Scenario):
    """A streamed reply with ``output_allowance`` tokens, rejected and canceled at ``reject_step``."""

    floors: DecodeScenario
    output_allowance: int
    reject_step: int

    family: ClassVar[str] = "decode_floor"
    mlsysim_type: ClassVar[str | None] = "StreamCancelScenario"
    summary: ClassVar[str] = (
        "Decode time an honoured cancel saves: the steps left after the rejection, at the memory floor."
    )
    equation: ClassVar[str] = "saved = (allowance − reject_step)·t_mem"
    assumptions: ClassVar[tuple[str, ...]] = ("each step costs the floors' batch-one memory time",)
    excludes: ClassVar[tuple[str, ...]] = ("KV cache reads", _NO_OVERHEAD)
    inputs_doc: ClassVar[tuple[InputDoc, ...]] = (
        InputDoc("floors", "DecodeScenario", "batch-one floors"),
        InputDoc("output_allowance", "int [tokens]", "tokens the reply may run to"),
        InputDoc("reject_step", "int [tokens]", "step at which the monitor rejects"),
    )

    examples: ClassVar[tuple[str, ...]] = (
        "from latencykernel.scenarios import Scenarios",
        "s = Scenarios.CanceledStreamDecodeSavings",
        "s.skipped_steps, f'{s.decode_time_avoided:.1f~P}'",
    )

    def _validate(self) -> None:
        if not isinstance(self.floors, DecodeScenario):
            raise ScenarioInputError(
                f"floors={self.floors!r} must be a DecodeScenario", argument="floors", value=self.floors
            )
        a = count("output_allowance", self.output_allowance, "token")
        r = count("reject_step", self.reject_step, "token")
        if r > a:
            raise ScenarioInputError(f"reject_step={r} exceeds output_allowance={a}", argument="reject_step", value=r)
        self._set("output_allowance", a)
        self._set("reject_step", r)

    @output(equation="output_allowance - reject_step", returns="int")
    def skipped_steps(self) -> int:
        """Decode steps the cancel skips."""
        return self.output_allowance - self.reject_step

    @output(equation="skipped_steps * floors.memory_time", unit="s")
    def decode_time_avoided(self) -> pint.Quantity:
        """Decode time the cancel saves."""
        return Q_((self.output_allowance - self.reject_step) * self.floors._mem_s(), "s")

    @output(equation="output_allowance * floors.memory_time", unit="s")
    def allowance_decode_time(self) -> pint.Quantity:
        """Decode time of the whole allowance."""
        return Q_(self.output_allowance * self.floors._mem_s(), "s")


@dataclass(frozen=True, kw_only=True)
class ReasoningLatencyScenario(Scenario):
    """Serial reasoning tokens before the answer, at a fixed time per token."""

    per_token_time: pint.Quantity
    reasoning_tokens: int

    family: ClassVar[str] = "decode_floor"
    mlsysim_type: ClassVar[str | None] = "ReasoningLatencyScenario"
    summary: ClassVar[str] = "Hidden reasoning tokens decode one after another before the answer starts."
    equation: ClassVar[str] = "T = N_reasoning · t_token"
    assumptions: ClassVar[tuple[str, ...]] = ("a fixed time per token",)
    excludes: ClassVar[tuple[str, ...]] = ("prefill", "the answer's own tokens")
    inputs_doc: ClassVar[tuple[InputDoc, ...]] = (
        InputDoc("per_token_time", "Quantity [time]", "time per decoded token"),
        InputDoc("reasoning_tokens", "int [tokens]", "serial reasoning tokens"),
    )

    examples: ClassVar[tuple[str, ...]] = (
        "from latencykernel.scenarios import Scenarios",
        "f'{Scenarios.ReasoningTokenLatency.reasoning_time:~P}'",
    )

    def _validate(self) -> None:
        self._set("per_token_time", as_quantity("per_token_time", self.per_token_time, "s", positive=True))
        self._set("reasoning_tokens", count("reasoning_tokens", self.reasoning_tokens, "token"))

    @output(equation="reasoning_tokens * per_token_time", unit="s")
    def reasoning_time(self) -> pint.Quantity:
        """Time before the first answer token."""
        return (self.reasoning_tokens * self.per_token_time).to("s")

    @output(equation="reasoning_tokens", returns="int")
    def expansion(self) -> int:
        """Latency multiple against a one-token answer."""
        return self.reasoning_tokens

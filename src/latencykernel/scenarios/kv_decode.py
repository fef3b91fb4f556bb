"""Decode batches on a single device, as a memory-bandwidth floor (mlsysim's contract).

``KvDecodeBatchScenario``: each step streams the weights a single time plus every
sequence's full cache; no step is shorter than (W + B·m) / BW. ``SparseKvDecodeBatchScenario``: the same
floor from what a step actually reads: the routed experts its batch touches (MoE), and the
tokens sliding-window and sparse attention layers attend to.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import pint

from latencykernel.errors import ScenarioInputError
from latencykernel.scenarios import registry
from latencykernel.scenarios.base import InputDoc, Scenario
from latencykernel.scenarios.hardware import Hardware
from latencykernel.scenarios.metadata import output
from latencykernel.scenarios.units import (
    Q_,
    as_quantity,
    count,
    factor,
    fraction,
    int_list,
    magnitude_in,
    nonnegative_int,
    quantity,
)
from latencykernel.scenarios.workloads import Workload

__all__ = ["KvDecodeBatchScenario", "SparseKvDecodeBatchScenario", "TPOT_SAMPLES"]

# TPOT budgets ``explain`` and the docs evaluate ``max_batch_within`` at.
TPOT_SAMPLES: tuple[float, ...] = (1.0, 5.0, 20.0, 50.0, 100.0)  # ms


def _batch_samples(s: KvDecodeBatchScenario) -> list[dict[str, Any]]:
    return [{"batch_size": b} for b in s.batch_sizes]


def _tpot_samples(_s: KvDecodeBatchScenario) -> list[dict[str, Any]]:
    return [{"tpot": Q_(t, "ms")} for t in TPOT_SAMPLES]


_FULL_CACHE = "every sequence reads a full cache of context_tokens tokens"
_PEAK_BW = "memory moves at the registered peak bandwidth (no sustained-efficiency derate)"
_NO_COMPUTE = "decode compute (linear layers and attention FLOPs)"
_NO_OVERHEAD = "collectives, kernel launches and host overhead"


@dataclass(frozen=True, kw_only=True)
class KvDecodeBatchScenario(Scenario):
    """A decode batch on a single device, each sequence streaming its own KV cache besides the shared weights."""

    workload: Workload
    hardware: Hardware
    weight_bytes_per_param: pint.Quantity
    kv_bytes_per_value: pint.Quantity
    context_tokens: int
    batch_sizes: tuple[int, ...]
    prompt_tokens: int
    prefill_efficiency: float
    peak_precision: str = "fp16_dense"

    family: ClassVar[str] = "kv_decode"
    mlsysim_type: ClassVar[str | None] = "KvDecodeBatchScenario"
    summary: ClassVar[str] = (
        "A decode batch on a single device where each sequence streams its own KV cache besides the shared "
        "weights: the step can be no faster than the time to move those bytes at peak bandwidth."
    )
    equation: ClassVar[str] = (
        "Each step reads W + B·m bytes (weights once, a full cache per sequence): "
        "t_step(B) = (W + B·m) / BW, rate = B / t_step → BW / m as caches dominate; "
        "a TPOT t caps B at floor((t·BW − W) / m), memory M at floor((M − W) / m)."
    )
    assumptions: ClassVar[tuple[str, ...]] = (
        _FULL_CACHE,
        "the weights are read once per step for the whole batch",
        _PEAK_BW,
    )
    excludes: ClassVar[tuple[str, ...]] = (
        _NO_COMPUTE,
        _NO_OVERHEAD,
        "activation and workspace memory",
        "sequences at different lengths (continuous batching averages about half the cache)",
        "MoE sparsity: every expert is read (SparseKvDecodeBatchScenario reads the touched ones)",
        "sliding-window and sparse attention: every layer reads the whole cache (SparseKvDecodeBatchScenario "
        "reads what they attend to)",
    )
    inputs_doc: ClassVar[tuple[InputDoc, ...]] = (
        InputDoc("workload", "Workload | str", "the model (KV geometry, parameters, FLOPs per token)"),
        InputDoc("hardware", "Hardware | str", "the accelerator (bandwidth, capacity, peaks)"),
        InputDoc("weight_bytes_per_param", "Quantity [B or B/param]", "storage width of one weight"),
        InputDoc("kv_bytes_per_value", "Quantity [B]", "storage width of one cached K, V or latent element"),
        InputDoc("context_tokens", "int [tokens] ≥ 1", "tokens cached per sequence (every sequence full)"),
        InputDoc("batch_sizes", "list[int] ≥ 0", "batches to report"),
        InputDoc("prompt_tokens", "int [tokens] ≥ 0", "prompt length for the prefill estimate"),
        InputDoc("prefill_efficiency", "float in (0, 1]", "fraction of peak FLOP/s prefill sustains"),
        InputDoc("peak_precision", "str", "precision key of the hardware peak prefill runs at"),
    )
    examples: ClassVar[tuple[str, ...]] = (
        "from latencykernel.scenarios import Scenarios",
        "s = Scenarios.Gpt2XlChatDecodeBatchesH100",
        "str(s.weights.units)",
        "print(f'{s.step_time(8):.4f~P}')",
        "print(f'{s.token_rate(128):.1f~P}')",
        "s.max_batch_within('20 ms'), s.max_batch_in_memory",
    )

    # ------------------------------------------------------------------ validation
    def _validate(self) -> None:
        w = registry.workload(self.workload)
        kv = w.require_kv("workload")
        h = registry.hardware(self.hardware)
        wb = as_quantity("weight_bytes_per_param", self.weight_bytes_per_param, "B", per="param", positive=True)
        kb = as_quantity("kv_bytes_per_value", self.kv_bytes_per_value, "B", positive=True)
        ctx = count("context_tokens", self.context_tokens, "token", minimum=1)
        batches = int_list("batch_sizes", self.batch_sizes)
        prompt = count("prompt_tokens", self.prompt_tokens, "token", minimum=0)
        eff = fraction("prefill_efficiency", self.prefill_efficiency)
        if not isinstance(self.peak_precision, str):
            raise ScenarioInputError(
                f"peak_precision={self.peak_precision!r} must be a precision key (a str)",
                argument="peak_precision",
                value=self.peak_precision,
            )
        # The float core: SI magnitudes, computed once. (One update of the frozen instance's
        # state, as object.__setattr__ would do field by field.)
        kv_token = kv.bytes_per_token(magnitude_in(kb, "B"))
        self.__dict__.update(
            workload=w,
            hardware=h,
            weight_bytes_per_param=wb,
            kv_bytes_per_value=kb,
            context_tokens=ctx,
            batch_sizes=batches,
            prompt_tokens=prompt,
            prefill_efficiency=eff,
            _W=w.n_parameters * magnitude_in(wb, "B/param"),
            _m=kv_token * ctx,
            _kv_token=kv_token,
            _bw=h.bandwidth_bytes_per_s,
            _cap=h.capacity_bytes,
        )

    def symbols(self) -> dict[str, Any]:
        s = super().symbols()
        s.update(
            context_tokens=Q_(self.context_tokens, "token"),
            prompt_tokens=Q_(self.prompt_tokens, "token"),
        )
        return s

    # ------------------------------------------------------------------ helpers
    @staticmethod
    def _b(batch_size: Any) -> int:
        return nonnegative_int("batch_size", batch_size)

    @staticmethod
    def _tpot_s(tpot: Any) -> float:
        q = as_quantity("tpot", tpot, "s", nonnegative=True)
        return float(q.magnitude) * factor(str(q.units), "s")

    def _weights_read(self, b: int) -> float:
        """Weight bytes one step over ``b`` sequences reads."""
        return self._W  # type: ignore[attr-defined,no-any-return]

    def _step_bytes(self, b: int) -> float:
        return self._weights_read(b) + b * self._m  # type: ignore[attr-defined,no-any-return]

    def _peak(self) -> float:
        return self.hardware.peak_flops_per_s(self.peak_precision)

    # ------------------------------------------------------------------ properties
    @output(
        equation="workload.parameters * weight_bytes_per_param",
        unit="GB",
        assumptions=("parameters as the workload's basis states them (see sources)",),
        excludes=("quantization scales and zero points",),
    )
    def weights(self) -> pint.Quantity:
        """Bytes the weights occupy (decimal GB): the workload's parameters times the chosen width per parameter."""
        return quantity(self._W, "B", "GB")  # type: ignore[attr-defined]

    @output(
        equation="workload.kv_bytes_per_token(kv_bytes_per_value) * token",
        unit="B",
        assumptions=("the model's real cache geometry: K and V per KV head (MHA/GQA/MQA), one latent vector for MLA",),
        excludes=("paging: a cache allocated in whole blocks holds up to a block more",),
    )
    def kv_per_token(self) -> pint.Quantity:
        """Cache bytes one token of context costs one sequence, from the model's KV layout."""
        return quantity(self._kv_token, "B")  # type: ignore[attr-defined]

    @output(
        equation="workload.kv_bytes_per_token(kv_bytes_per_value) * context_tokens",
        unit="MB",
        assumptions=(_FULL_CACHE,),
    )
    def kv_per_sequence(self) -> pint.Quantity:
        """One sequence's whole cache (decimal MB) with its context filled to context_tokens."""
        return quantity(self._m, "B", "MB")  # type: ignore[attr-defined]

    @output(equation="hardware.memory_bandwidth", unit=None, returns="quantity", assumptions=(_PEAK_BW,))
    def bandwidth(self) -> pint.Quantity:
        """The device's stated peak memory bandwidth, not derated to a sustained figure (in the hardware's own unit)."""
        return self.hardware.memory_bandwidth

    @output(equation="bandwidth / kv_per_sequence", unit="1/s", assumptions=(_FULL_CACHE, _PEAK_BW))
    def rate_ceiling(self) -> pint.Quantity:
        """The batch-wide token rate the floor tends to as the batch grows and cache reads outweigh the weights."""
        return quantity(self._bw / self._m, "1/s")  # type: ignore[attr-defined]

    @output(
        equation="floor((hardware.memory_capacity - weights) / kv_per_sequence)",
        returns="int",
        assumptions=("all of the registered memory holds weights and caches",),
        excludes=("activations, workspaces, CUDA graphs and the runtime's reserve",),
    )
    def max_batch_in_memory(self) -> int:
        """Most full-context sequences whose caches fit beside the weights in device memory (below zero: the weights alone do not fit)."""
        return math.floor((self._cap - self._W) / self._m)  # type: ignore[attr-defined]

    @output(
        equation="hardware.peak(peak_precision)",
        unit=None,
        returns="quantity",
        assumptions=("the registered peak, with no efficiency adjustment",),
    )
    def peak_rate(self) -> pint.Quantity:
        """The device's stated FLOP/s for peak_precision, taken at face value."""
        return self.hardware.peak(self.peak_precision)

    @output(equation="peak_rate / bandwidth", unit="flop/B")
    def ridge(self) -> pint.Quantity:
        """Arithmetic intensity (FLOP/B) at which the peak rate and the bandwidth balance."""
        return quantity(self._peak() / self._bw, "flop/B")  # type: ignore[attr-defined]

    @output(
        equation="workload.flops_per_token * prompt_tokens",
        unit="flop",
        assumptions=("2 FLOPs per active parameter per prompt token",),
        excludes=("attention over the prompt (the quadratic term)",),
    )
    def prefill_ops(self) -> pint.Quantity:
        """Linear-layer FLOPs to prefill the prompt: the per-token forward cost times prompt_tokens (no attention term)."""
        return quantity(2.0 * self.workload.n_active_parameters * self.prompt_tokens, "flop")

    @output(
        equation="prefill_ops / (peak_rate * prefill_efficiency)",
        unit="ms",
        assumptions=("prefill is compute-bound at prefill_efficiency of the peak",),
        excludes=("weight and cache traffic", _NO_OVERHEAD),
    )
    def prefill_time(self) -> pint.Quantity:
        """Prefill time (ms) if the prompt ran at prefill_efficiency of the peak rate and nothing else cost time."""
        ops = 2.0 * self.workload.n_active_parameters * self.prompt_tokens
        return quantity(ops / (self._peak() * self.prefill_efficiency), "s", "ms")

    # ------------------------------------------------------------------ methods
    @output(
        equation="weights + batch_size * kv_per_sequence",
        unit="GB",
        samples=_batch_samples,
        assumptions=(_FULL_CACHE, "weights read once per step"),
    )
    def step_bytes(self, batch_size: int) -> pint.Quantity:
        """Bytes one decode step moves (decimal GB): the weights a single time, then each sequence's full cache."""
        return quantity(self._step_bytes(self._b(batch_size)), "B", "GB")

    @output(
        equation="step_bytes(batch_size) / bandwidth",
        unit="ms",
        samples=_batch_samples,
        assumptions=(_PEAK_BW,),
        excludes=(_NO_COMPUTE, _NO_OVERHEAD),
    )
    def step_time(self, batch_size: int) -> pint.Quantity:
        """Time (ms) to move step_bytes at peak bandwidth; arithmetic and launch overheads are not counted."""
        return quantity(self._step_bytes(self._b(batch_size)) / self._bw, "s", "ms")  # type: ignore[attr-defined]

    @output(
        equation="batch_size / step_time(batch_size)",
        unit="1/s",
        samples=_batch_samples,
        assumptions=("each sequence emits one token per step",),
    )
    def token_rate(self, batch_size: int) -> pint.Quantity:
        """Batch-wide tokens per second, each sequence emitting one token per floor-length step."""
        b = self._b(batch_size)
        return quantity(b * self._bw / self._step_bytes(b), "1/s")  # type: ignore[attr-defined]

    @output(equation="batch_size * kv_per_sequence / step_bytes(batch_size)", returns="float", samples=_batch_samples)
    def cache_share(self, batch_size: int) -> float:
        """Share of a step's bytes that are cache reads, the rest being weights."""
        b = self._b(batch_size)
        return b * self._m / self._step_bytes(b)  # type: ignore[attr-defined,no-any-return]

    @output(
        equation="floor((tpot * bandwidth - weights) / kv_per_sequence)",
        returns="int",
        samples=_tpot_samples,
        assumptions=(_FULL_CACHE, _PEAK_BW),
        excludes=("the memory ceiling (compare max_batch_in_memory)", _NO_COMPUTE, _NO_OVERHEAD),
    )
    def max_batch_within(self, tpot: Any) -> int:
        """Largest batch whose floor step fits within a per-token latency budget (below zero: not even one sequence fits)."""
        return math.floor((self._tpot_s(tpot) * self._bw - self._W) / self._m)  # type: ignore[attr-defined]


@dataclass(frozen=True, kw_only=True)
class SparseKvDecodeBatchScenario(KvDecodeBatchScenario):
    """The decode floor from what a step actually reads: the routed experts its batch touches, and the cached tokens each attention layer attends to."""

    family: ClassVar[str] = "kv_decode"
    mlsysim_type: ClassVar[str | None] = None
    summary: ClassVar[str] = (
        "KvDecodeBatchScenario reading only what a step reads: for a mixture-of-experts model the dense "
        "weights and the routed experts the batch touches (all experts stay resident); for sliding-window "
        "and sparse-attention layers the tokens they attend to. A dense, full-attention model reads the same "
        "as KvDecodeBatchScenario."
    )
    equation: ClassVar[str] = (
        "Step bytes = W_dense + E·(1 − (1 − k/E)^B)·w_expert + B·m_read: each of B sequences routes its token "
        "to k of E experts per layer; m_read sums, over KV layers, the tokens each reads (a window's "
        "min(c, w), a sparse layer's top-k) times the bytes per token per layer."
    )
    assumptions: ClassVar[tuple[str, ...]] = KvDecodeBatchScenario.assumptions + (
        "uniform, independent routing (no expert popularity skew)",
        "all routed experts the same size; shared experts and attention count as dense",
    )
    excludes: ClassVar[tuple[str, ...]] = tuple(
        e for e in KvDecodeBatchScenario.excludes if not e.startswith(("MoE sparsity", "sliding-window"))
    ) + ("routing imbalance and expert-parallel all-to-all", "a sparse layer's indexer cache")
    examples: ClassVar[tuple[str, ...]] = (
        "from latencykernel.scenarios import SparseKvDecodeBatchScenario, Scenarios",
        "s = SparseKvDecodeBatchScenario.from_scenario(Scenarios.Gpt2XlChatDecodeBatchesH100.variant(workload='Mixtral_8x7B'))",
        "print(f'{s.weights_read(1):.2f~P}', f'{s.weights_read(64):.2f~P}', f'{s.weights:.2f~P}')",
        "g = SparseKvDecodeBatchScenario.from_scenario(s.variant(workload='gpt-oss-120b', context_tokens=32768))",
        "print(f'{g.kv_per_sequence:.0f~P}', f'{g.kv_read_per_sequence:.0f~P}')",
    )

    def _validate(self) -> None:
        super()._validate()
        w = self.workload
        bpp = magnitude_in(self.weight_bytes_per_param, "B/param")
        self._set("_bpp", bpp)
        self._set("_dense", w.weights_read_parameters(0) * bpp)  # no token routed: the dense part alone
        kv = w.require_kv()
        self._set("_m_read", kv.bytes_read(self.context_tokens, magnitude_in(self.kv_bytes_per_value, "B")))

    @classmethod
    def from_scenario(cls, scenario: KvDecodeBatchScenario) -> SparseKvDecodeBatchScenario:
        """The read-aware variant of a ``KvDecodeBatchScenario``."""
        return cls(
            **scenario.inputs(),
            name=scenario.name,
            description=scenario.description,
            sources=scenario.sources,
            variant_of=scenario.key or scenario.variant_of,
        )

    def _weights_read(self, b: int) -> float:
        return self.workload.weights_read_parameters(b) * self._bpp  # type: ignore[attr-defined,no-any-return]

    def _step_bytes(self, b: int) -> float:
        return self._weights_read(b) + b * self._m_read  # type: ignore[attr-defined,no-any-return]

    @output(
        equation="workload.kv_bytes_read(kv_bytes_per_value, context_tokens)",
        unit="MB",
        assumptions=("a sliding-window layer reads min(context, window); a sparse layer its top-k",),
    )
    def kv_read_per_sequence(self) -> pint.Quantity:
        """Cache bytes one sequence's decode step reads (the whole cache unless layers are windowed or sparse)."""
        return quantity(self._m_read, "B", "MB")  # type: ignore[attr-defined]

    @output(equation="bandwidth / kv_read_per_sequence", unit="1/s", assumptions=(_PEAK_BW,))
    def rate_ceiling(self) -> pint.Quantity:
        """The batch-wide token rate the floor tends to as the batch grows and attended-cache reads outweigh the weights."""
        return quantity(self._bw / self._m_read, "1/s")  # type: ignore[attr-defined]

    @output(
        equation="workload.weights_read(weight_bytes_per_param, batch_size)",
        unit="GB",
        samples=_batch_samples,
        assumptions=("uniform, independent routing", "equal-sized routed experts"),
    )
    def weights_read(self, batch_size: int) -> pint.Quantity:
        """Weight bytes one step reads: the dense part plus the expected distinct routed experts the batch touches."""
        return quantity(self._weights_read(self._b(batch_size)), "B", "GB")

    @output(
        equation="weights_read(batch_size) + batch_size * kv_read_per_sequence",
        unit="GB",
        samples=_batch_samples,
        assumptions=("only touched experts and attended tokens are read",),
    )
    def step_bytes(self, batch_size: int) -> pint.Quantity:
        """Bytes one decode step moves (decimal GB): dense weights, the experts the batch touches, and each sequence's attended cache."""
        return quantity(self._step_bytes(self._b(batch_size)), "B", "GB")

    @output(
        equation="batch_size * kv_read_per_sequence / step_bytes(batch_size)", returns="float", samples=_batch_samples
    )
    def cache_share(self, batch_size: int) -> float:
        """Share of a step's bytes that are cache reads, the rest being weights (touched experts only)."""
        b = self._b(batch_size)
        return b * self._m_read / self._step_bytes(b)  # type: ignore[attr-defined,no-any-return]

    @output(
        equation="largest_batch(lambda b: step_time(b) <= tpot, "
        "floor((tpot * bandwidth - weights_read(1)) / kv_read_per_sequence))",
        returns="int",
        samples=_tpot_samples,
        assumptions=(_PEAK_BW, "step time grows with the batch"),
        excludes=("the memory ceiling (compare max_batch_in_memory)", _NO_COMPUTE, _NO_OVERHEAD),
    )
    def max_batch_within(self, tpot: Any) -> int:
        """Largest batch whose step fits the TPOT; when not even one sequence fits, the (non-positive) floor at batch 1."""
        t = self._tpot_s(tpot)
        budget = t * self._bw  # type: ignore[attr-defined]
        if self._step_bytes(1) > budget:
            return math.floor((budget - self._weights_read(1)) / self._m_read)  # type: ignore[attr-defined]
        lo = 1
        hi = max(2, math.floor((budget - self._dense) / self._m_read) + 1)  # type: ignore[attr-defined]
        while hi - lo > 1:  # step bytes grow with b: the largest b with bytes <= budget
            mid = (lo + hi) // 2
            if self._step_bytes(mid) <= budget:
                lo = mid
            else:
                hi = mid
        return lo

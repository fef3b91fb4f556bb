"""Prefill at a sustained FLOP rate: rebuilding a cached prefix, and chunking a long prompt among decodes."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import pint

from latencykernel.errors import NotApplicableError, ScenarioInputError
from latencykernel.scenarios import registry
from latencykernel.scenarios.base import InputDoc, Scenario
from latencykernel.scenarios.hardware import Hardware
from latencykernel.scenarios.metadata import output
from latencykernel.scenarios.units import Q_, as_quantity, count, fraction, magnitude_in, positive_int, quantity
from latencykernel.scenarios.workloads import Workload

__all__ = ["PrefixRebuildScenario", "ChunkedPrefillScenario"]

_SUSTAINED = "prefill sustains utilization × peak on every accelerator of the node"
_HIDDEN_WIDTH = "attention width = hidden size (query heads × head width)"


@dataclass(frozen=True, kw_only=True)
class PrefixRebuildScenario(Scenario):
    """A cached prefix on a node: the prefill a miss rebuilds against one short suffix pass on a hit."""

    workload: Workload
    hardware: Hardware
    accelerators: int
    weight_bytes_per_param: pint.Quantity
    kv_bytes_per_value: pint.Quantity
    prefix_tokens: int
    suffix_tokens: int
    utilization: float
    peak_precision: str | None = None

    family: ClassVar[str] = "prefill"
    mlsysim_type: ClassVar[str | None] = "PrefixRebuildScenario"
    summary: ClassVar[str] = (
        "A prefix-cache miss rebuilds the prefix (linear plus causal attention FLOPs at the sustained rate); "
        "a hit runs only the suffix, no faster than one weight read."
    )
    equation: ClassVar[str] = (
        "T_rebuild = (2·P·S + 2·L·d·S²) / R with R = n·peak·u; T_hit = max(W / (n·BW), 2·P·S_suffix / R)"
    )
    assumptions: ClassVar[tuple[str, ...]] = (_SUSTAINED, "causal attention (half the square)", _HIDDEN_WIDTH)
    excludes: ClassVar[tuple[str, ...]] = (
        "attention FLOPs of the suffix over the prefix",
        "collectives between the node's accelerators",
        "launch and host overhead",
    )
    inputs_doc: ClassVar[tuple[InputDoc, ...]] = (
        InputDoc("workload", "Workload | str", "the model"),
        InputDoc("hardware", "Hardware | str", "one accelerator of the node"),
        InputDoc("accelerators", "int ≥ 1", "accelerators sharing the work"),
        InputDoc("weight_bytes_per_param", "Quantity [B]", "weight width"),
        InputDoc("kv_bytes_per_value", "Quantity [B]", "cache element width"),
        InputDoc("prefix_tokens", "int [tokens]", "the cached prefix"),
        InputDoc("suffix_tokens", "int [tokens]", "the new tokens after it"),
        InputDoc("utilization", "float in (0, 1]", "sustained share of peak"),
        InputDoc("peak_precision", "str | None", "peak key (None: the headline peak)"),
    )

    examples: ClassVar[tuple[str, ...]] = (
        "from latencykernel.scenarios import Scenarios",
        "s = Scenarios.InvariantPrefixRebuildDgxH100",
        "print(f'{s.rebuild_time:.1f~P}', f'{s.weight_read_time:.2f~P}', round(s.rebuild_over_hit, 1))",
    )

    def _validate(self) -> None:
        self._set("workload", registry.workload(self.workload))
        self.workload.require_kv()
        if not self.workload.hidden:
            raise NotApplicableError(f"workload={self.workload.name} states no hidden size")
        self._set("hardware", registry.hardware(self.hardware))
        self._set("accelerators", positive_int("accelerators", self.accelerators))
        self._set(
            "weight_bytes_per_param",
            as_quantity("weight_bytes_per_param", self.weight_bytes_per_param, "B", per="param", positive=True),
        )
        self._set("kv_bytes_per_value", as_quantity("kv_bytes_per_value", self.kv_bytes_per_value, "B", positive=True))
        self._set("prefix_tokens", count("prefix_tokens", self.prefix_tokens, "token"))
        self._set("suffix_tokens", count("suffix_tokens", self.suffix_tokens, "token"))
        self._set("utilization", fraction("utilization", self.utilization))
        self.hardware.peak(self.peak_precision)  # refuse an unknown key now: every output needs it

    def symbols(self) -> dict[str, Any]:
        s = super().symbols()
        s["prefix_tokens"] = Q_(self.prefix_tokens, "token")
        s["suffix_tokens"] = Q_(self.suffix_tokens, "token")
        s["flop_per_mac_pair"] = Q_(2, "flop/token**2")
        return s

    # floats
    def rate(self) -> float:
        """Sustained FLOP/s of the node."""
        return self.accelerators * self.hardware.peak_flops_per_s(self.peak_precision) * self.utilization

    def linear_s(self, tokens: int) -> float:
        """Seconds of linear-layer FLOPs for ``tokens`` tokens at the sustained rate."""
        return 2.0 * self.workload.n_active_parameters * tokens / self.rate()

    def weight_read_s(self) -> float:
        bpp = magnitude_in(self.weight_bytes_per_param, "B/param")
        return self.workload.n_parameters * bpp / (self.accelerators * self.hardware.bandwidth_bytes_per_s)

    def _attn_ops(self) -> float:
        return 2.0 * self.workload.layers * self.workload.hidden * self.prefix_tokens**2  # type: ignore[operator]

    def _rebuild_s(self) -> float:
        return self.linear_s(self.prefix_tokens) + self._attn_ops() / self.rate()

    @output(equation="workload.parameters", unit="param")
    def n_params(self) -> pint.Quantity:
        """Parameters the linear FLOPs count."""
        return self.workload.parameters

    @output(equation="workload.kv_bytes_per_token(kv_bytes_per_value) * prefix_tokens", unit="B")
    def state(self) -> pint.Quantity:
        """The prefix's KV cache, what a hit keeps."""
        return Q_(self.workload.kv_bytes(magnitude_in(self.kv_bytes_per_value, "B")) * self.prefix_tokens, "B")

    @output(equation="workload.flops_per_token * prefix_tokens", unit="flop")
    def linear_ops(self) -> pint.Quantity:
        """Linear-layer FLOPs of rebuilding the prefix."""
        return Q_(2.0 * self.workload.n_active_parameters * self.prefix_tokens, "flop")

    @output(
        equation="flop_per_mac_pair * workload.layers * workload.hidden * prefix_tokens ** 2",
        unit="flop",
        assumptions=("causal: each token attends to the ones before it", _HIDDEN_WIDTH),
    )
    def attention_ops(self) -> pint.Quantity:
        """Attention FLOPs of rebuilding the prefix (QKᵀ and AV, causal)."""
        return Q_(self._attn_ops(), "flop")

    @output(
        equation="accelerators * hardware.peak(peak_precision) * utilization",
        unit="TFLOPs/s",
        assumptions=(_SUSTAINED,),
    )
    def sustained_rate(self) -> pint.Quantity:
        """FLOP/s the node sustains in prefill."""
        return quantity(self.rate(), "flop/s", "TFLOPs/s")

    @output(equation="(linear_ops + attention_ops) / sustained_rate", unit="ms")
    def rebuild_time(self) -> pint.Quantity:
        """Time a miss spends rebuilding the prefix."""
        return quantity(self._rebuild_s(), "s", "ms")

    @output(
        equation="workload.parameters * weight_bytes_per_param / (accelerators * hardware.memory_bandwidth)",
        unit="ms",
        assumptions=("weights split evenly over the accelerators",),
    )
    def weight_read_time(self) -> pint.Quantity:
        """One pass's weight read, the floor of any step."""
        return quantity(self.weight_read_s(), "s", "ms")

    @output(
        equation="workload.flops_per_token * suffix_tokens / sustained_rate",
        unit="ms",
        excludes=("the suffix's attention over the prefix",),
    )
    def suffix_ops_time(self) -> pint.Quantity:
        """Linear FLOPs of the suffix at the sustained rate."""
        return quantity(self.linear_s(self.suffix_tokens), "s", "ms")

    @output(equation="rebuild_time / max(weight_read_time, suffix_ops_time)", returns="float")
    def rebuild_over_hit(self) -> float:
        """How much longer a miss takes than a hit."""
        return self._rebuild_s() / max(self.weight_read_s(), self.linear_s(self.suffix_tokens))


@dataclass(frozen=True, kw_only=True)
class ChunkedPrefillScenario(Scenario):
    """A long prompt advanced ``chunk_tokens`` per iteration beside running decodes."""

    prompt_tokens: int
    chunk_tokens: int
    prefill: PrefixRebuildScenario | None = None
    decodes: int | None = None

    optional_inputs: ClassVar[frozenset[str]] = frozenset({"prefill", "decodes"})
    family: ClassVar[str] = "prefill"
    mlsysim_type: ClassVar[str | None] = "ChunkedPrefillScenario"
    summary: ClassVar[str] = (
        "Prefilling a prompt whole stalls every running decode for the whole prefill; in chunks, each "
        "iteration runs one chunk plus the decodes, no faster than one weight read."
    )
    equation: ClassVar[str] = "gap_whole = 2·P·N/R + T_w; iteration_chunked = max(T_w, 2·P·(chunk + decodes)/R)"
    assumptions: ClassVar[tuple[str, ...]] = (
        _SUSTAINED,
        "an iteration is bound by its linear FLOPs or one weight read",
    )
    excludes: ClassVar[tuple[str, ...]] = ("attention FLOPs", "KV cache reads of the decodes", "launch overhead")
    inputs_doc: ClassVar[tuple[InputDoc, ...]] = (
        InputDoc("prompt_tokens", "int [tokens] ≥ 1", "the long prompt"),
        InputDoc("chunk_tokens", "int [tokens] ≥ 1", "prompt tokens per iteration"),
        InputDoc("prefill", "PrefixRebuildScenario | None", "model, node and sustained rate"),
        InputDoc("decodes", "int | None", "decodes running beside the prefill"),
    )

    examples: ClassVar[tuple[str, ...]] = (
        "from latencykernel.scenarios import Scenarios",
        "s = Scenarios.ChunkedPrefillAmongDecodes",
        "print(f'{s.monolithic_gap:.1f~P}', f'{s.chunked_iteration:.1f~P}', s.chunks)",
    )

    def _validate(self) -> None:
        self._set("prompt_tokens", count("prompt_tokens", self.prompt_tokens, "token", minimum=1))
        self._set("chunk_tokens", count("chunk_tokens", self.chunk_tokens, "token", minimum=1))
        if self.prefill is not None and not isinstance(self.prefill, PrefixRebuildScenario):
            raise ScenarioInputError(
                f"prefill={self.prefill!r} must be a PrefixRebuildScenario", argument="prefill", value=self.prefill
            )
        if self.decodes is not None:
            self._set("decodes", count("decodes", self.decodes, "sequence"))

    def symbols(self) -> dict[str, Any]:
        s = super().symbols()
        s["prompt_tokens"] = Q_(self.prompt_tokens, "token")
        s["chunk_tokens"] = Q_(self.chunk_tokens, "token")
        s["decode_tokens"] = Q_(self.decodes or 0, "token")
        return s

    def _p(self) -> PrefixRebuildScenario:
        if self.prefill is None or self.decodes is None:
            raise NotApplicableError("the step times need the inputs prefill and decodes")
        return self.prefill

    def _iter_s(self) -> float:
        p = self._p()
        return max(p.weight_read_s(), p.linear_s(self.chunk_tokens + (self.decodes or 0)))

    @output(equation="ceil(prompt_tokens / chunk_tokens)", returns="int")
    def iterations(self) -> int:
        """Iterations to prefill the prompt in chunks."""
        return math.ceil(self.prompt_tokens / self.chunk_tokens)

    @output(equation="prefill.weight_read_time", unit="ms")
    def decode_step(self) -> pint.Quantity:
        """A decode-only step: one weight read."""
        return quantity(self._p().weight_read_s(), "s", "ms")

    @output(equation="prefill.workload.flops_per_token * prompt_tokens / prefill.sustained_rate", unit="ms")
    def monolithic_prefill(self) -> pint.Quantity:
        """The prompt prefilled whole."""
        return quantity(self._p().linear_s(self.prompt_tokens), "s", "ms")

    @output(equation="monolithic_prefill + decode_step", unit="ms")
    def monolithic_gap(self) -> pint.Quantity:
        """The longest wait of a running decode when the prompt is prefilled whole."""
        p = self._p()
        return quantity(p.linear_s(self.prompt_tokens) + p.weight_read_s(), "s", "ms")

    @output(equation="iterations", returns="int")
    def chunks(self) -> int:
        """Chunks the prompt is cut into."""
        return math.ceil(self.prompt_tokens / self.chunk_tokens)

    @output(
        equation="max(decode_step, prefill.workload.flops_per_token * (chunk_tokens + decode_tokens) / prefill.sustained_rate)",
        unit="ms",
    )
    def chunked_iteration(self) -> pint.Quantity:
        """One iteration of a chunk plus the decodes (a decode's longest wait)."""
        return quantity(self._iter_s(), "s", "ms")

    @output(equation="chunks * chunked_iteration", unit="ms")
    def chunked_done(self) -> pint.Quantity:
        """Time until the chunked prompt is prefilled."""
        return quantity(self.chunks * self._iter_s(), "s", "ms")

    @output(equation="monolithic_gap / chunked_iteration", returns="float")
    def gap_ratio(self) -> float:
        """How much chunking shortens a decode's longest wait."""
        p = self._p()
        return (p.linear_s(self.prompt_tokens) + p.weight_read_s()) / self._iter_s()

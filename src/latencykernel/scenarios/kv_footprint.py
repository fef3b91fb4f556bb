"""How big a KV cache is, and how many requests a memory budget holds.

Every figure here comes from one KV law, ``latencykernel.price.kv.kv_bytes_per_token``,
through ``Workload.kv_bytes``: the model's real cache geometry (GQA and MQA share KV
heads; MLA stores one latent vector; a TP rank holds at least one KV head). mlsysim's
admission and dividend models took ``head_dim`` from hidden // heads and had no MLA
branch (25x too large for DeepSeek-V3); here they read the same geometry as the kernel.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, ClassVar

import pint

from latencykernel.scenarios import registry
from latencykernel.scenarios.base import InputDoc, Scenario
from latencykernel.scenarios.errors import NotApplicableError, ScenarioInputError
from latencykernel.scenarios.hardware import Hardware
from latencykernel.scenarios.metadata import output
from latencykernel.scenarios.named import register
from latencykernel.scenarios.units import Q_, as_quantity, count, fraction, nonnegative_int, quantity, value_bytes
from latencykernel.scenarios.workloads import Workload

__all__ = [
    "KvFootprintScenario",
    "KvAdmissionScenario",
    "KvAttentionDesignScenario",
    "ContextMemoryCrossingScenario",
    "PrecisionDividendScenario",
]

_GEOMETRY = "the model's real cache geometry (K and V per KV head; one latent vector for MLA)"
_FULL = "every request holds its full context"
_NO_PAGING = "page rounding (a cache allocated in blocks holds up to one block more per request)"
_NO_RUNTIME = "activations, workspaces and CUDA graphs beyond the stated reserve"


@dataclass(frozen=True, kw_only=True)
class KvFootprintScenario(Scenario):
    """``workload``'s KV cache for ``tokens`` kept tokens, and how many such requests a memory share holds."""

    workload: Workload
    tokens: int
    bytes_per_value: pint.Quantity
    hardware: Hardware | None = None
    kv_share: float | None = None
    kv_width_factor: float = 1.0

    optional_inputs: ClassVar[frozenset[str]] = frozenset({"hardware", "kv_share"})
    family: ClassVar[str] = "kv_footprint"
    mlsysim_type: ClassVar[str | None] = "KvFootprintScenario"
    summary: ClassVar[str] = "One request's KV cache at a token count, beside the weights and a device's cache budget."
    equation: ClassVar[str] = "KV = kv_bytes_per_token(geometry, b) · f_width · tokens; requests = floor(M·share / KV)"
    assumptions: ClassVar[tuple[str, ...]] = (_GEOMETRY,)
    excludes: ClassVar[tuple[str, ...]] = (_NO_PAGING,)
    inputs_doc: ClassVar[tuple[InputDoc, ...]] = (
        InputDoc("workload", "Workload | str", "the model"),
        InputDoc("tokens", "int [tokens]", "tokens kept"),
        InputDoc("bytes_per_value", "Quantity [B] | str", "width of a cached element (and of a weight)"),
        InputDoc("hardware", "Hardware | str | None", "device whose memory the budget is a share of"),
        InputDoc("kv_share", "float in (0, 1] | None", "share of the device memory given to the cache"),
        InputDoc("kv_width_factor", "float > 0", "scales the KV width (0.5: half the KV heads), a what-if"),
    )

    def _validate(self) -> None:
        self._set("workload", registry.workload(self.workload))
        self.workload.require_kv()
        self._set("tokens", count("tokens", self.tokens, "token"))
        self._set("bytes_per_value", value_bytes("bytes_per_value", self.bytes_per_value))
        if self.hardware is not None:
            self._set("hardware", registry.hardware(self.hardware))
        if self.kv_share is not None:
            self._set("kv_share", fraction("kv_share", self.kv_share))
        f = self.kv_width_factor
        if isinstance(f, bool) or not isinstance(f, (int, float)) or not f > 0:
            raise ScenarioInputError(f"kv_width_factor={f!r} must be a positive number", argument="kv_width_factor", value=f)

    def symbols(self) -> dict[str, Any]:
        s = super().symbols()
        s["tokens"] = Q_(self.tokens, "token")
        s["bytes_per_param"] = self.bytes_per_value / Q_(1, "param")
        return s

    def _per_token(self) -> float:
        return self.workload.kv_bytes(float(self.bytes_per_value.to("B").magnitude)) * float(self.kv_width_factor)

    def _budget(self) -> float:
        if self.hardware is None or self.kv_share is None:
            raise NotApplicableError("the cache budget needs the inputs hardware and kv_share")
        return self.hardware.capacity_bytes * self.kv_share

    @output(equation="workload.kv_bytes_per_token(bytes_per_value) * kv_width_factor * token", unit="B",
            assumptions=(_GEOMETRY,))
    def per_token(self) -> pint.Quantity:
        """Cache bytes one token holds."""
        return Q_(self._per_token(), "B")

    @output(equation="workload.kv_bytes_per_token(bytes_per_value) * kv_width_factor * tokens", unit="GB")
    def total(self) -> pint.Quantity:
        """Cache bytes of all the kept tokens."""
        return quantity(self._per_token() * self.tokens, "B", "GB")

    @output(equation="workload.parameters * bytes_per_param", unit="GB",
            assumptions=("weights stored at the same width as the cache",))
    def weights(self) -> pint.Quantity:
        """The model's weights at the same width, for scale."""
        return quantity(self.workload.n_parameters * float(self.bytes_per_value.to("B").magnitude), "B", "GB")

    @output(equation="hardware.memory_capacity * kv_share", unit="GB",
            assumptions=("the device's registered memory (binary GiB for HBM)",))
    def kv_budget(self) -> pint.Quantity:
        """The device memory given to the cache."""
        return quantity(self._budget(), "B", "GB")

    @output(equation="floor(kv_budget / per_token)", returns="int")
    def tokens_in_budget(self) -> int:
        """Tokens the budget holds."""
        return math.floor(self._budget() / self._per_token())

    @output(equation="floor(kv_budget / total)", returns="int", assumptions=(_FULL,), excludes=(_NO_PAGING,))
    def requests(self) -> int:
        """Requests of ``tokens`` tokens the budget holds."""
        return math.floor(self._budget() / (self._per_token() * self.tokens))


@dataclass(frozen=True, kw_only=True)
class KvAdmissionScenario(Scenario):
    """A replica's KV budget against one context length: how many requests it admits."""

    workload: Workload
    accelerators: int
    hbm_per_accelerator: pint.Quantity
    weight_bytes_per_param: pint.Quantity
    reserve: pint.Quantity
    context_tokens: int
    kv_bytes_per_elem: pint.Quantity
    requests: int | None = None

    optional_inputs: ClassVar[frozenset[str]] = frozenset({"requests"})
    family: ClassVar[str] = "kv_footprint"
    mlsysim_type: ClassVar[str | None] = "KvAdmissionScenario"
    summary: ClassVar[str] = (
        "The memory a replica has left for the cache after weights and a reserve, over one request's cache."
    )
    equation: ClassVar[str] = "budget = n·HBM − P·b_w − reserve; max_requests = floor(budget / (kv_per_token·context))"
    assumptions: ClassVar[tuple[str, ...]] = (_GEOMETRY, _FULL, "the whole replica's memory is pooled")
    excludes: ClassVar[tuple[str, ...]] = (_NO_PAGING, _NO_RUNTIME)
    inputs_doc: ClassVar[tuple[InputDoc, ...]] = (
        InputDoc("workload", "Workload | str", "the model"),
        InputDoc("accelerators", "int ≥ 1", "devices in the replica"),
        InputDoc("hbm_per_accelerator", "Quantity [B]", "memory per device (GiB as registered)"),
        InputDoc("weight_bytes_per_param", "Quantity [B]", "weight width"),
        InputDoc("reserve", "Quantity [B]", "runtime reserve (activations, graphs) over the replica"),
        InputDoc("context_tokens", "int [tokens] ≥ 1", "tokens each request keeps"),
        InputDoc("kv_bytes_per_elem", "Quantity [B]", "cache element width"),
        InputDoc("requests", "int | None", "a request count for context_fit()"),
    )

    def _validate(self) -> None:
        self._set("workload", registry.workload(self.workload))
        self.workload.require_kv()
        self._set("accelerators", count("accelerators", self.accelerators, "sequence", minimum=1))
        self._set("hbm_per_accelerator", as_quantity("hbm_per_accelerator", self.hbm_per_accelerator, "B", positive=True))
        self._set("weight_bytes_per_param",
                  as_quantity("weight_bytes_per_param", self.weight_bytes_per_param, "B", per="param", positive=True))
        self._set("reserve", as_quantity("reserve", self.reserve, "B", nonnegative=True))
        self._set("context_tokens", count("context_tokens", self.context_tokens, "token", minimum=1))
        self._set("kv_bytes_per_elem", as_quantity("kv_bytes_per_elem", self.kv_bytes_per_elem, "B", positive=True))
        if self.requests is not None:
            self._set("requests", count("requests", self.requests, "sequence", minimum=1))

    def symbols(self) -> dict[str, Any]:
        s = super().symbols()
        s["context_tokens"] = Q_(self.context_tokens, "token")
        return s

    def _per_token(self) -> float:
        return self.workload.kv_bytes(float(self.kv_bytes_per_elem.to("B").magnitude))

    def _weights(self) -> float:
        return self.workload.n_parameters * float(self.weight_bytes_per_param.to("B/param").magnitude)

    def _budget(self) -> float:
        hbm = self.accelerators * float(self.hbm_per_accelerator.to("B").magnitude)
        return hbm - self._weights() - float(self.reserve.to("B").magnitude)

    @output(equation="workload.kv.head_dim", returns="int", assumptions=(_GEOMETRY,))
    def head_dim(self) -> int:
        """Width of one cached vector, from the geometry (not hidden // heads)."""
        return self.workload.require_kv().head_dim

    @output(equation="workload.parameters * weight_bytes_per_param", unit="GB")
    def weights(self) -> pint.Quantity:
        """Weights of the whole replica."""
        return quantity(self._weights(), "B", "GB")

    @output(equation="accelerators * hbm_per_accelerator", unit="GiB")
    def hbm_total(self) -> pint.Quantity:
        """Memory of the replica."""
        return (self.accelerators * self.hbm_per_accelerator).to("GiB")

    @output(equation="hbm_total - weights - reserve", unit="GB", excludes=(_NO_RUNTIME,))
    def kv_budget(self) -> pint.Quantity:
        """Memory left for the cache (negative: the weights do not fit)."""
        return quantity(self._budget(), "B", "GB")

    @output(equation="workload.kv_bytes_per_token(kv_bytes_per_elem) * token", unit="B", assumptions=(_GEOMETRY,))
    def kv_per_token(self) -> pint.Quantity:
        """Cache bytes per token over the whole replica."""
        return Q_(self._per_token(), "B")

    @output(equation="workload.kv_bytes_per_token(kv_bytes_per_elem) * context_tokens", unit="GB")
    def kv_per_request(self) -> pint.Quantity:
        """One request's cache at the context length."""
        return quantity(self._per_token() * self.context_tokens, "B", "GB")

    @output(equation="floor(kv_budget / kv_per_request)", returns="int", assumptions=(_FULL,), excludes=(_NO_PAGING,))
    def max_requests(self) -> int:
        """Requests the budget admits (negative: the weights do not fit)."""
        return math.floor(self._budget() / (self._per_token() * self.context_tokens))

    @output(equation="kv_budget / (requests * kv_per_token) * token", unit="token",
            samples=lambda s: [{"requests": r} for r in (1, 8, 32, 64)])
    def context_fit(self, requests: int | None = None) -> pint.Quantity:
        """Tokens each of ``requests`` requests can keep (default: the input ``requests``)."""
        if requests is None:
            if self.requests is None:
                raise NotApplicableError("context_fit needs a request count (argument or input requests)")
            requests = self.requests
        n = count("requests", requests, "sequence", minimum=1)
        return Q_(self._budget() / (n * self._per_token()), "token")


@dataclass(frozen=True, kw_only=True)
class KvAttentionDesignScenario(Scenario):
    """Bytes per token across models, with one MHA, one GQA and one MLA reference."""

    models: tuple[Workload, ...]
    mha: Workload
    gqa: Workload
    mla: Workload
    precision: Any = "fp16"
    session_tokens: int = 131072

    family: ClassVar[str] = "kv_footprint"
    mlsysim_type: ClassVar[str | None] = "KvAttentionDesignScenario"
    summary: ClassVar[str] = "KV bytes per token by attention design: multi-head, grouped-query and latent."
    equation: ClassVar[str] = "MHA/GQA/MQA: 2·n_kv·d_h·L·b; MLA: (r_kv + d_rope)·L·b"
    assumptions: ClassVar[tuple[str, ...]] = (_GEOMETRY,)
    excludes: ClassVar[tuple[str, ...]] = (_NO_PAGING,)
    inputs_doc: ClassVar[tuple[InputDoc, ...]] = (
        InputDoc("models", "list[Workload | str]", "models to compare"),
        InputDoc("mha", "Workload | str", "the multi-head reference"),
        InputDoc("gqa", "Workload | str", "the grouped-query reference"),
        InputDoc("mla", "Workload | str", "the latent-attention reference"),
        InputDoc("precision", "str | Quantity [B]", "cache element width"),
        InputDoc("session_tokens", "int [tokens]", "one long session's tokens"),
    )

    def _validate(self) -> None:
        self._set("models", tuple(registry.workload(m, "models") for m in self.models))
        for m in self.models:
            m.require_kv("models")
        for name in ("mha", "gqa", "mla"):
            self._set(name, registry.workload(getattr(self, name), name))
            getattr(self, name).require_kv(name)
        self._set("_b", float(value_bytes("precision", self.precision).to("B").magnitude))
        self._set("session_tokens", count("session_tokens", self.session_tokens, "token"))

    def symbols(self) -> dict[str, Any]:
        s = super().symbols()
        s["b"] = Q_(self._b, "B")  # type: ignore[attr-defined]
        s["session_tokens"] = Q_(self.session_tokens, "token")
        return s

    def _pt(self, w: Workload) -> float:
        return w.kv_bytes(self._b)  # type: ignore[attr-defined]

    @output(equation="{m.name: m.kv_bytes_per_token(b) * token for m in models}", unit="B", returns="mapping")
    def per_token(self) -> dict[str, pint.Quantity]:
        """Cache bytes per token, per model."""
        return {m.name: Q_(self._pt(m), "B") for m in self.models}

    @output(equation="{m.name: m.kv.design for m in models}", returns="mapping")
    def design(self) -> dict[str, str]:
        """Each model's attention design, from its geometry."""
        return {m.name: m.require_kv().design for m in self.models}

    @output(equation="mha.kv_bytes_per_token(b) / mla.kv_bytes_per_token(b)", returns="float")
    def mha_over_mla(self) -> float:
        """Cache per token of the MHA reference over the MLA reference."""
        return self._pt(self.mha) / self._pt(self.mla)

    @output(equation="gqa.kv_bytes_per_token(b) / mla.kv_bytes_per_token(b)", returns="float")
    def gqa_over_mla(self) -> float:
        """Cache per token of the GQA reference over the MLA reference."""
        return self._pt(self.gqa) / self._pt(self.mla)

    @output(equation="gqa.kv_bytes_per_token(b) * session_tokens", unit="B")
    def gqa_session(self) -> pint.Quantity:
        """One session's cache on the GQA reference."""
        return Q_(self._pt(self.gqa) * self.session_tokens, "B")

    @output(equation="mla.kv_bytes_per_token(b) * session_tokens", unit="B")
    def mla_session(self) -> pint.Quantity:
        """One session's cache on the MLA reference."""
        return Q_(self._pt(self.mla) * self.session_tokens, "B")


@dataclass(frozen=True, kw_only=True)
class ContextMemoryCrossingScenario(Scenario):
    """Three memories as context grows: fixed weights, a cache linear in tokens, one layer's scores quadratic in tokens."""

    workload: Workload
    hardware: Hardware
    bytes_per_value: pint.Quantity

    family: ClassVar[str] = "kv_footprint"
    mlsysim_type: ClassVar[str | None] = "ContextMemoryCrossingScenario"
    summary: ClassVar[str] = (
        "Where the linear KV cache and one layer's quadratic attention scores (all heads, stored whole) "
        "cross the weights and the device memory."
    )
    equation: ClassVar[str] = "KV(T) = kv·T = W at T = W/kv; scores(T) = H·b·T² = M at T = sqrt(M/(H·b)); equal at T = kv/(H·b)"
    assumptions: ClassVar[tuple[str, ...]] = (_GEOMETRY, "scores stored whole (no tiled attention)")
    excludes: ClassVar[tuple[str, ...]] = ("FlashAttention-style tiling, which never stores the scores",)
    inputs_doc: ClassVar[tuple[InputDoc, ...]] = (
        InputDoc("workload", "Workload | str", "the model (query heads, KV geometry)"),
        InputDoc("hardware", "Hardware | str", "the device (memory capacity)"),
        InputDoc("bytes_per_value", "Quantity [B]", "width of weights, cache and scores"),
    )

    def _validate(self) -> None:
        self._set("workload", registry.workload(self.workload))
        self.workload.require_kv()
        if not self.workload.heads:
            raise NotApplicableError(f"workload={self.workload.name} states no query heads")
        self._set("hardware", registry.hardware(self.hardware))
        self._set("bytes_per_value", as_quantity("bytes_per_value", self.bytes_per_value, "B", positive=True))

    def symbols(self) -> dict[str, Any]:
        s = super().symbols()
        s["bytes_per_param"] = self.bytes_per_value / Q_(1, "param")
        s["per_token"] = Q_(1, "1/token")
        return s

    def _b(self) -> float:
        return float(self.bytes_per_value.to("B").magnitude)

    @output(equation="workload.parameters * bytes_per_param", unit="GB")
    def weights(self) -> pint.Quantity:
        """The model's weights."""
        return quantity(self.workload.n_parameters * self._b(), "B", "GB")

    @output(equation="workload.kv_bytes_per_token(bytes_per_value) * token", unit="B", assumptions=(_GEOMETRY,))
    def kv_per_token(self) -> pint.Quantity:
        """Cache bytes per token."""
        return Q_(self.workload.kv_bytes(self._b()), "B")

    @output(equation="workload.heads * bytes_per_value", unit="B")
    def score_bytes_per_pair(self) -> pint.Quantity:
        """Bytes of one (query, key) score over all heads of one layer."""
        return Q_(self.workload.heads * self._b(), "B")  # type: ignore[operator]

    @output(equation="weights / kv_per_token * token", unit="token")
    def kv_crossing(self) -> pint.Quantity:
        """Context at which one request's cache equals the weights."""
        return Q_(self.workload.n_parameters * self._b() / self.workload.kv_bytes(self._b()), "token")

    @output(equation="sqrt(hardware.memory_capacity / score_bytes_per_pair) * token", unit="token")
    def score_crossing(self) -> pint.Quantity:
        """Context at which one layer's stored scores fill the device memory."""
        return Q_(math.sqrt(self.hardware.capacity_bytes / (self.workload.heads * self._b())), "token")  # type: ignore[operator]

    @output(equation="kv_per_token / score_bytes_per_pair * token", unit="token")
    def kv_score_crossing(self) -> pint.Quantity:
        """Context at which one layer's scores equal the whole cache."""
        return Q_(self.workload.kv_bytes(self._b()) / (self.workload.heads * self._b()), "token")  # type: ignore[operator]


@dataclass(frozen=True, kw_only=True)
class PrecisionDividendScenario(Scenario):
    """The largest batch before and after lower-precision weights and cache, on a tensor-parallel group."""

    workload: Workload
    tp_size: int
    hbm_per_accelerator: pint.Quantity
    context_tokens: int
    kv_heads: int | None = None
    weight_bytes: pint.Quantity = dataclasses.field(default_factory=lambda: Q_(2, "B"))
    weight_bytes_low: pint.Quantity = dataclasses.field(default_factory=lambda: Q_(0.5, "B"))
    kv_bytes: pint.Quantity = dataclasses.field(default_factory=lambda: Q_(2, "B"))
    kv_bytes_low: pint.Quantity = dataclasses.field(default_factory=lambda: Q_(1, "B"))

    family: ClassVar[str] = "kv_footprint"
    mlsysim_type: ClassVar[str | None] = "PrecisionDividendScenario"
    summary: ClassVar[str] = "Lower-precision weights free memory for cache and lower-precision cache shrinks each request: the batch grows by both."
    equation: ClassVar[str] = "B_max = floor((HBM − P·b_w/tp) / (kv_rank(b_kv)·context)), at base and low precision"
    assumptions: ClassVar[tuple[str, ...]] = (
        _GEOMETRY,
        "each TP rank holds max(1, n_kv // tp) KV heads (a head is never split)",
        _FULL,
    )
    excludes: ClassVar[tuple[str, ...]] = (_NO_PAGING, _NO_RUNTIME)
    inputs_doc: ClassVar[tuple[InputDoc, ...]] = (
        InputDoc("workload", "Workload | str", "the model"),
        InputDoc("tp_size", "int ≥ 1", "tensor-parallel ranks"),
        InputDoc("hbm_per_accelerator", "Quantity [B]", "memory per rank as the budget states it"),
        InputDoc("context_tokens", "int [tokens] ≥ 1", "tokens each request keeps"),
        InputDoc("kv_heads", "int | None", "a what-if KV head count (None: the model's)"),
        InputDoc("weight_bytes, weight_bytes_low", "Quantity [B]", "weight width at base and low precision"),
        InputDoc("kv_bytes, kv_bytes_low", "Quantity [B]", "cache width at base and low precision"),
    )

    def _validate(self) -> None:
        self._set("workload", registry.workload(self.workload))
        kv = self.workload.require_kv()
        self._set("tp_size", count("tp_size", self.tp_size, "sequence", minimum=1))
        self._set("hbm_per_accelerator", as_quantity("hbm_per_accelerator", self.hbm_per_accelerator, "B", positive=True))
        self._set("context_tokens", count("context_tokens", self.context_tokens, "token", minimum=1))
        if self.kv_heads is not None:
            n = count("kv_heads", self.kv_heads, "sequence", minimum=1)
            self._set("kv_heads", n)
            kv = dataclasses.replace(kv, n_kv=n)
        self._set("_kv", kv)
        for name in ("weight_bytes", "weight_bytes_low", "kv_bytes", "kv_bytes_low"):
            self._set(name, as_quantity(name, getattr(self, name), "B", positive=True))

    def symbols(self) -> dict[str, Any]:
        s = super().symbols()
        s["context_tokens"] = Q_(self.context_tokens, "token")
        s["geometry"] = self._kv  # type: ignore[attr-defined]
        s["per_param"] = Q_(1, "1/param")
        return s

    def _w(self, low: bool) -> float:
        b = self.weight_bytes_low if low else self.weight_bytes
        return self.workload.n_parameters * float(b.to("B").magnitude) / self.tp_size

    def _budget(self, low: bool) -> float:
        return float(self.hbm_per_accelerator.to("B").magnitude) - self._w(low)

    def _kv_req(self, low: bool, tp: int) -> float:
        b = self.kv_bytes_low if low else self.kv_bytes
        return self._kv.bytes_per_token(float(b.to("B").magnitude), tp) * self.context_tokens  # type: ignore[attr-defined,no-any-return]

    @output(equation="workload.parameters * weight_bytes * per_param / tp_size", unit="B")
    def weights_per_device(self) -> pint.Quantity:
        """Weight bytes per rank at base precision."""
        return Q_(self._w(False), "B")

    @output(equation="workload.parameters * weight_bytes_low * per_param / tp_size", unit="B")
    def weights_per_device_low(self) -> pint.Quantity:
        """Weight bytes per rank at low precision."""
        return Q_(self._w(True), "B")

    @output(equation="hbm_per_accelerator - weights_per_device", unit="GB", excludes=(_NO_RUNTIME,))
    def kv_budget_per_device(self) -> pint.Quantity:
        """Cache budget per rank at base precision."""
        return quantity(self._budget(False), "B", "GB")

    @output(equation="hbm_per_accelerator - weights_per_device_low", unit="GB")
    def kv_budget_per_device_low(self) -> pint.Quantity:
        """Cache budget per rank at low precision."""
        return quantity(self._budget(True), "B", "GB")

    @output(equation="geometry.kv_bytes_per_token(kv_bytes) * context_tokens", unit="B")
    def kv_per_request(self) -> pint.Quantity:
        """One request's cache over the whole group, base precision."""
        return Q_(self._kv_req(False, 1), "B")

    @output(equation="geometry.kv_bytes_per_token(kv_bytes_low) * context_tokens", unit="B")
    def kv_per_request_low(self) -> pint.Quantity:
        """One request's cache over the whole group, low precision."""
        return Q_(self._kv_req(True, 1), "B")

    @output(equation="geometry.kv_bytes_per_token(kv_bytes, tp_size) * context_tokens",
            unit="B", assumptions=("each rank holds max(1, n_kv // tp) KV heads",))
    def kv_per_request_per_device(self) -> pint.Quantity:
        """One request's cache on one rank, base precision."""
        return Q_(self._kv_req(False, self.tp_size), "B")

    @output(equation="geometry.kv_bytes_per_token(kv_bytes_low, tp_size) * context_tokens",
            unit="B")
    def kv_per_request_per_device_low(self) -> pint.Quantity:
        """One request's cache on one rank, low precision."""
        return Q_(self._kv_req(True, self.tp_size), "B")

    @output(equation="floor(kv_budget_per_device / kv_per_request_per_device)", returns="int")
    def max_batch(self) -> int:
        """Largest batch at base precision."""
        return math.floor(self._budget(False) / self._kv_req(False, self.tp_size))

    @output(equation="floor(kv_budget_per_device_low / kv_per_request_per_device_low)", returns="int")
    def max_batch_low(self) -> int:
        """Largest batch at low precision."""
        return math.floor(self._budget(True) / self._kv_req(True, self.tp_size))

    @output(equation="max_batch_low / max_batch", returns="float")
    def dividend(self) -> float:
        """Batch growth from the lower precision."""
        return self.max_batch_low / self.max_batch

    @output(equation="kv_budget_per_device_low / kv_budget_per_device", returns="float")
    def budget_gain(self) -> float:
        """Cache budget growth from the lighter weights."""
        return self._budget(True) / self._budget(False)


# ---------------------------------------------------------------------------- named scenarios
def _rec_src(*keys: str) -> tuple[str, ...]:
    return tuple(f"workload: {Workload.recorded(k).name} as mlsysim 0.3.0 records it" for k in keys)


@register("Gpt2XlKvFullWindow")
def _gpt2_kv() -> KvFootprintScenario:
    return KvFootprintScenario(
        key="Gpt2XlKvFullWindow", name="GPT-2 XL's FP16 KV cache at its 1,024-token window",
        description="2 x 48 layers x 1,600 x 2 bytes per kept token.", sources=_rec_src("GPT2"),
        workload=Workload.recorded("GPT2"), tokens=1024, bytes_per_value=Q_(2, "B"),
    )


@register("Llama2_7BKvAt2048Tokens")
def _llama2_kv() -> KvFootprintScenario:
    return KvFootprintScenario(
        key="Llama2_7BKvAt2048Tokens", name="Llama 2 7B's FP16 KV cache for one 2,048-token request",
        description="32 layers, 32 key-value heads of 128, FP16.", sources=_rec_src("Llama2_7B"),
        workload=Workload.recorded("Llama2_7B"), tokens=2048, bytes_per_value=Q_(2, "B"),
    )


def _admission(key: str, name: str, description: str, model: str, n: int, wb: str, reserve: str, ctx: int,
               requests: int | None = None) -> KvAdmissionScenario:
    return KvAdmissionScenario(
        key=key, name=name, description=description,
        sources=_rec_src(model) + ("memory: 80 GiB per H100, as mlsysim registers it",),
        workload=Workload.recorded(model), accelerators=n, hbm_per_accelerator=Q_(80, "GiB"),
        weight_bytes_per_param=Q_(wb), reserve=Q_(reserve), context_tokens=ctx, kv_bytes_per_elem=Q_(2, "B"),
        requests=requests,
    )


_ADMISSIONS: dict[str, tuple[Any, ...]] = {
    "Llama3_70BAgentContextAdmissionDgxH100": (
        "32,768-token agent requests on the 70B GQA replica (8 H100s)",
        "The repair request's 32,768 retained tokens per request, same replica and reserve.",
        "Llama3_70B", 8, "2 B", "20 GB", 32768),
    "Llama3_70BInt4KvBudgetH100": (
        "A 70B-class model with 4-bit weights on one H100: the 16-bit cache budget",
        "Llama 3 70B geometry (80 layers, 8 key-value heads of 128); 4-bit weights.",
        "Llama3_70B", 1, "0.5 B", "0 GB", 8192, 32),
    "Llama3_70BLongContextAdmissionDgxH100": (
        "128K-token requests on the 70B GQA replica (8 H100s)",
        "FP16 weights and KV cache; HBM at the registered byte capacity, less a 20 GB runtime reserve.",
        "Llama3_70B", 8, "2 B", "20 GB", 131072),
    "Llama3_70BShortContextAdmissionDgxH100": (
        "8,192-token requests on the 70B GQA replica (8 H100s)",
        "A short session of 8,192 retained tokens per request, same replica and reserve.",
        "Llama3_70B", 8, "2 B", "20 GB", 8192),
    "Llama3_8BFp16ConversationsH100": (
        "Llama 3 8B conversations of 8,192 tokens on one H100, 16-bit weights and cache",
        "The H100's memory after the weights, over each conversation's cache; no runtime reserve.",
        "Llama3_8B", 1, "2 B", "0 GB", 8192),
}

for _key, _args in _ADMISSIONS.items():
    register(_key)(lambda _k=_key, _a=_args: _admission(_k, *_a))


@register("KvBytesPerTokenByAttentionDesign")
def _design() -> KvAttentionDesignScenario:
    keys = ("GPT3", "Llama3_405B", "Llama3_70B", "Llama2_70B", "Mixtral_8x7B", "DeepSeek_V3")
    return KvAttentionDesignScenario(
        key="KvBytesPerTokenByAttentionDesign",
        name="KV bytes per token across multi-head, grouped-query, and latent attention",
        description="Six registry geometries at 16 bits; GPT-3 (MHA), Llama 3 70B (GQA), and DeepSeek-V3 (MLA) as "
        "references, with one 131,072-token session.",
        sources=_rec_src(*keys),
        models=tuple(Workload.recorded(k) for k in keys), mha=Workload.recorded("GPT3"),
        gqa=Workload.recorded("Llama3_70B"), mla=Workload.recorded("DeepSeek_V3"), precision="fp16",
        session_tokens=131072,
    )


@register("Gpt2XlContextMemoryOnH100")
def _crossing() -> ContextMemoryCrossingScenario:
    return ContextMemoryCrossingScenario(
        key="Gpt2XlContextMemoryOnH100",
        name="GPT-2 XL's weights, KV cache, and one layer's scores against one H100",
        description="FP16 throughout; where the linear cache and the quadratic scores cross fixed budgets.",
        sources=_rec_src("GPT2") + ("hardware: NVIDIA H100 as mlsysim 0.3.0 records it (80 GiB)",),
        workload=Workload.recorded("GPT2"), hardware=Hardware.recorded("H100"), bytes_per_value=Q_(2, "B"),
    )


def _dividend(key: str, name: str, description: str, kv_heads: int) -> PrecisionDividendScenario:
    return PrecisionDividendScenario(
        key=key, name=name, description=description,
        sources=_rec_src("Llama2_70B") + ("memory: a decimal 80 GB per GPU, as the scenario states its budget",),
        workload=Workload.recorded("Llama2_70B"), tp_size=8, hbm_per_accelerator=Q_(80, "GB"), context_tokens=4096,
        kv_heads=kv_heads,
    )


register("Llama2_70BPrecisionDividendGqaTp8")(lambda: _dividend(
    "Llama2_70BPrecisionDividendGqaTp8", "Precision dividend of a 70B GQA model on 8 H100s",
    "INT4 weights and an INT8 KV cache against FP16 for both, at a 4,096-token context, with a decimal 80 GB "
    "budget per GPU.", 8))
register("Llama2_70BPrecisionDividendMhaTp8")(lambda: _dividend(
    "Llama2_70BPrecisionDividendMhaTp8", "Precision dividend of the same 70B model with 64-head attention",
    "INT4 weights and an INT8 KV cache against FP16 for both, at a 4,096-token context, with a decimal 80 GB "
    "budget per GPU.", 64))

"""How big a KV cache is: per token, per request, by attention design, against the
weights and the device memory.

Every figure here comes from one KV law, ``latencykernel.price.kv.kv_bytes_per_token``,
through ``Workload.kv_bytes``: the model's real cache geometry (GQA and MQA share KV
heads; MLA stores one latent vector; a TP rank holds at least one KV head).
"""

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
from latencykernel.scenarios.units import (
    Q_,
    as_quantity,
    count,
    fraction,
    items,
    magnitude_in,
    number,
    quantity,
    value_bytes,
)
from latencykernel.scenarios.workloads import Workload

__all__ = ["KvFootprintScenario", "KvAttentionDesignScenario", "ContextMemoryCrossingScenario"]

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

    examples: ClassVar[tuple[str, ...]] = (
        "from latencykernel.scenarios import Scenarios",
        "s = Scenarios.Gpt2XlKvFullWindow.variant(hardware='H100', kv_share=0.5)",
        "print(f'{s.total:.4f~P}', s.requests)",
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
            raise ScenarioInputError(
                f"kv_width_factor={f!r} must be a positive number", argument="kv_width_factor", value=f
            )
        self._set("kv_width_factor", number("kv_width_factor", f, above=0))  # finite (issue 10: inf gave inf GB)

    def symbols(self) -> dict[str, Any]:
        s = super().symbols()
        s["tokens"] = Q_(self.tokens, "token")
        s["bytes_per_param"] = self.bytes_per_value / Q_(1, "param")
        return s

    def _per_token(self) -> float:
        return self.workload.kv_bytes(magnitude_in(self.bytes_per_value, "B")) * float(self.kv_width_factor)

    def _budget(self) -> float:
        if self.hardware is None or self.kv_share is None:
            raise NotApplicableError("the cache budget needs the inputs hardware and kv_share")
        return self.hardware.capacity_bytes * self.kv_share

    @output(
        equation="workload.kv_bytes_per_token(bytes_per_value) * kv_width_factor * token",
        unit="B",
        assumptions=(_GEOMETRY,),
    )
    def per_token(self) -> pint.Quantity:
        """Cache bytes one token holds."""
        return Q_(self._per_token(), "B")

    @output(equation="workload.kv_bytes_per_token(bytes_per_value) * kv_width_factor * tokens", unit="GB")
    def total(self) -> pint.Quantity:
        """Cache bytes of all the kept tokens."""
        return quantity(self._per_token() * self.tokens, "B", "GB")

    @output(
        equation="workload.parameters * bytes_per_param",
        unit="GB",
        assumptions=("weights stored at the same width as the cache",),
    )
    def weights(self) -> pint.Quantity:
        """The model's weights at the same width, for scale."""
        return quantity(self.workload.n_parameters * magnitude_in(self.bytes_per_value, "B"), "B", "GB")

    @output(
        equation="hardware.memory_capacity * kv_share",
        unit="GB",
        assumptions=("the device's registered memory (binary GiB for HBM)",),
    )
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

    examples: ClassVar[tuple[str, ...]] = (
        "from latencykernel.scenarios import Scenarios",
        "s = Scenarios.KvBytesPerTokenByAttentionDesign",
        "s.design['DeepSeek-V3'], round(s.mha_over_mla, 2)",
    )

    def _validate(self) -> None:
        self._set("models", tuple(registry.workload(m, "models") for m in items("models", self.models, "workloads")))
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
    equation: ClassVar[str] = (
        "KV(T) = kv·T = W at T = W/kv; scores(T) = H·b·T² = M at T = sqrt(M/(H·b)); equal at T = kv/(H·b)"
    )
    assumptions: ClassVar[tuple[str, ...]] = (_GEOMETRY, "scores stored whole (no tiled attention)")
    excludes: ClassVar[tuple[str, ...]] = ("FlashAttention-style tiling, which never stores the scores",)
    inputs_doc: ClassVar[tuple[InputDoc, ...]] = (
        InputDoc("workload", "Workload | str", "the model (query heads, KV geometry)"),
        InputDoc("hardware", "Hardware | str", "the device (memory capacity)"),
        InputDoc("bytes_per_value", "Quantity [B]", "width of weights, cache and scores"),
    )

    examples: ClassVar[tuple[str, ...]] = (
        "from latencykernel.scenarios import Scenarios",
        "s = Scenarios.Gpt2XlContextMemoryOnH100",
        "print(f'{s.kv_crossing:.1f~P}', f'{s.score_crossing:.0f~P}')",
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
        return magnitude_in(self.bytes_per_value, "B")

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

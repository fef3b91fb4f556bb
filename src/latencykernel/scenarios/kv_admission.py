"""How many requests a memory budget admits: a replica's cache budget, and the batch that
lower-precision weights and cache buy.

mlsysim's admission and dividend models took ``head_dim`` from hidden // heads and had no
MLA branch (25x too large for DeepSeek-V3); here they read the model's real geometry
through the one KV law the kernel sizes its cache with.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, ClassVar

import pint

from latencykernel.errors import NotApplicableError
from latencykernel.scenarios import registry
from latencykernel.scenarios.base import InputDoc, Scenario
from latencykernel.scenarios.kv_footprint import _FULL, _GEOMETRY, _NO_PAGING, _NO_RUNTIME
from latencykernel.scenarios.metadata import output
from latencykernel.scenarios.units import Q_, as_quantity, count, magnitude_in, positive_int, quantity
from latencykernel.scenarios.workloads import Workload

__all__ = ["KvAdmissionScenario", "PrecisionDividendScenario"]


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
    family: ClassVar[str] = "kv_admission"
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

    examples: ClassVar[tuple[str, ...]] = (
        "from latencykernel.scenarios import Scenarios",
        "s = Scenarios.Llama3_70BShortContextAdmissionDgxH100",
        "s.max_requests, f'{s.context_fit(64):.0f~P}'",
    )

    def _validate(self) -> None:
        self._set("workload", registry.workload(self.workload))
        self.workload.require_kv()
        self._set("accelerators", positive_int("accelerators", self.accelerators))
        self._set(
            "hbm_per_accelerator", as_quantity("hbm_per_accelerator", self.hbm_per_accelerator, "B", positive=True)
        )
        self._set(
            "weight_bytes_per_param",
            as_quantity("weight_bytes_per_param", self.weight_bytes_per_param, "B", per="param", positive=True),
        )
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
        return self.workload.kv_bytes(magnitude_in(self.kv_bytes_per_elem, "B"))

    def _weights(self) -> float:
        return self.workload.n_parameters * magnitude_in(self.weight_bytes_per_param, "B/param")

    def _budget(self) -> float:
        hbm = self.accelerators * magnitude_in(self.hbm_per_accelerator, "B")
        return hbm - self._weights() - magnitude_in(self.reserve, "B")

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

    @output(
        equation="kv_budget / (requests * kv_per_token) * token",
        unit="token",
        samples=lambda s: [{"requests": r} for r in (1, 8, 32, 64)],
    )
    def context_fit(self, requests: int | None = None) -> pint.Quantity:
        """Tokens each of ``requests`` requests can keep (default: the input ``requests``)."""
        if requests is None:
            if self.requests is None:
                raise NotApplicableError("context_fit needs a request count (argument or input requests)")
            requests = self.requests
        n = count("requests", requests, "sequence", minimum=1)
        return Q_(self._budget() / (n * self._per_token()), "token")


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

    family: ClassVar[str] = "kv_admission"
    mlsysim_type: ClassVar[str | None] = "PrecisionDividendScenario"
    summary: ClassVar[str] = (
        "Lower-precision weights free memory for cache and lower-precision cache shrinks each request: the batch grows by both."
    )
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

    examples: ClassVar[tuple[str, ...]] = (
        "from latencykernel.scenarios import Scenarios",
        "s = Scenarios.Llama2_70BPrecisionDividendGqaTp8",
        "s.max_batch, s.max_batch_low, round(s.dividend, 3)",
    )

    def _validate(self) -> None:
        self._set("workload", registry.workload(self.workload))
        kv = self.workload.require_kv()
        self._set("tp_size", positive_int("tp_size", self.tp_size))
        self._set(
            "hbm_per_accelerator", as_quantity("hbm_per_accelerator", self.hbm_per_accelerator, "B", positive=True)
        )
        self._set("context_tokens", count("context_tokens", self.context_tokens, "token", minimum=1))
        if self.kv_heads is not None:
            n = positive_int("kv_heads", self.kv_heads)
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
        return self.workload.n_parameters * magnitude_in(b, "B") / self.tp_size

    def _budget(self, low: bool) -> float:
        return magnitude_in(self.hbm_per_accelerator, "B") - self._w(low)

    def _kv_req(self, low: bool, tp: int) -> float:
        b = self.kv_bytes_low if low else self.kv_bytes
        return self._kv.bytes_per_token(magnitude_in(b, "B"), tp) * self.context_tokens  # type: ignore[attr-defined,no-any-return]

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

    @output(
        equation="geometry.kv_bytes_per_token(kv_bytes, tp_size) * context_tokens",
        unit="B",
        assumptions=("each rank holds max(1, n_kv // tp) KV heads",),
    )
    def kv_per_request_per_device(self) -> pint.Quantity:
        """One request's cache on one rank, base precision."""
        return Q_(self._kv_req(False, self.tp_size), "B")

    @output(equation="geometry.kv_bytes_per_token(kv_bytes_low, tp_size) * context_tokens", unit="B")
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

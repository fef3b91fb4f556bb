"""Every weight read once per token (or frame): the batch-one memory floor, its energy,
and what a full KV cache and a separate unpack pass add."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import pint

from latencykernel.errors import NotApplicableError
from latencykernel.scenarios import registry
from latencykernel.scenarios.base import InputDoc, Scenario
from latencykernel.scenarios.hardware import Hardware
from latencykernel.scenarios.metadata import output
from latencykernel.scenarios.units import Q_, as_quantity, count, magnitude_in, quantity
from latencykernel.scenarios.workloads import Workload

__all__ = ["WeightReadScenario"]

_PEAK_BW = "memory moves at the registered peak bandwidth"


@dataclass(frozen=True, kw_only=True)
class WeightReadScenario(Scenario):
    """Every weight of ``workload`` read once from ``hardware``'s memory at ``bytes_per_weight``."""

    workload: Workload
    hardware: Hardware
    bytes_per_weight: pint.Quantity
    energy_per_byte: pint.Quantity | None = None
    context_tokens: int | None = None
    kv_bytes_per_value: pint.Quantity | None = None
    unpacked_bytes_per_weight: pint.Quantity | None = None

    optional_inputs: ClassVar[frozenset[str]] = frozenset(
        {"energy_per_byte", "context_tokens", "kv_bytes_per_value", "unpacked_bytes_per_weight"}
    )
    family: ClassVar[str] = "weight_read"
    mlsysim_type: ClassVar[str | None] = "WeightReadScenario"
    summary: ClassVar[str] = (
        "Batch-one decoding reads every weight once per token: the memory floor of a token, its DRAM "
        "energy, and the extra bytes of a full KV cache or of unpacking packed weights in a separate pass."
    )
    equation: ClassVar[str] = "t = (P·b + KV(context)) / BW; E = P·b·e_byte; unpack pass: P·b + 2·P·b_unpacked + KV"
    assumptions: ClassVar[tuple[str, ...]] = ("batch one: nothing shares a weight read", _PEAK_BW)
    excludes: ClassVar[tuple[str, ...]] = ("compute", "activations", "kernel launches and host overhead")
    inputs_doc: ClassVar[tuple[InputDoc, ...]] = (
        InputDoc("workload", "Workload | str", "the model"),
        InputDoc("hardware", "Hardware | str", "the device"),
        InputDoc("bytes_per_weight", "Quantity [B]", "stored width of one weight"),
        InputDoc("energy_per_byte", "Quantity [J/B] | None", "DRAM read energy per byte"),
        InputDoc("context_tokens", "int [tokens] | None", "tokens in the KV cache each token reads"),
        InputDoc("kv_bytes_per_value", "Quantity [B] | None", "width of one cached element"),
        InputDoc("unpacked_bytes_per_weight", "Quantity [B] | None", "width after a separate unpack pass"),
    )
    examples: ClassVar[tuple[str, ...]] = (
        "from latencykernel.scenarios import Scenarios",
        "s = Scenarios.Gpt2XlInt4DecodeFullContextPhone",
        "print(f'{s.token_time:.2f~P}', f'{s.separate_unpack_time:.2f~P}')",
    )

    def _validate(self) -> None:
        self._set("workload", registry.workload(self.workload))
        self._set("hardware", registry.hardware(self.hardware))
        self._set("bytes_per_weight", as_quantity("bytes_per_weight", self.bytes_per_weight, "B", positive=True))
        if self.energy_per_byte is not None:
            self._set("energy_per_byte", as_quantity("energy_per_byte", self.energy_per_byte, "J/B", nonnegative=True))
        if self.context_tokens is not None:
            self._set("context_tokens", count("context_tokens", self.context_tokens, "token"))
        if self.kv_bytes_per_value is not None:
            self._set(
                "kv_bytes_per_value", as_quantity("kv_bytes_per_value", self.kv_bytes_per_value, "B", positive=True)
            )
        if self.unpacked_bytes_per_weight is not None:
            self._set(
                "unpacked_bytes_per_weight",
                as_quantity("unpacked_bytes_per_weight", self.unpacked_bytes_per_weight, "B", positive=True),
            )

    def symbols(self) -> dict[str, Any]:
        s = super().symbols()
        s["bytes_per_weight"] = self.bytes_per_weight / Q_(1, "param")
        if self.unpacked_bytes_per_weight is not None:
            s["unpacked_bytes_per_weight"] = self.unpacked_bytes_per_weight / Q_(1, "param")
        if self.context_tokens is not None:
            s["context_tokens"] = Q_(self.context_tokens, "token")
        return s

    # floats
    def _w(self) -> float:
        return self.workload.n_parameters * magnitude_in(self.bytes_per_weight, "B")

    def _kv(self) -> float:
        if self.context_tokens is None or self.kv_bytes_per_value is None:
            raise NotApplicableError("the KV cache needs the inputs context_tokens and kv_bytes_per_value")
        return self.workload.kv_bytes(magnitude_in(self.kv_bytes_per_value, "B")) * self.context_tokens

    def _e(self) -> float:
        if self.energy_per_byte is None:
            raise NotApplicableError("read energy needs the input energy_per_byte")
        return magnitude_in(self.energy_per_byte, "J/B")

    @output(equation="workload.parameters * bytes_per_weight", unit="B")
    def weight_bytes(self) -> pint.Quantity:
        """Bytes of every weight at the stored width."""
        return Q_(self._w(), "B")

    @output(equation="weight_bytes / hardware.memory_bandwidth", unit="ms", assumptions=(_PEAK_BW,))
    def read_time(self) -> pint.Quantity:
        """Time to read every weight once."""
        return quantity(self._w() / self.hardware.bandwidth_bytes_per_s, "s", "ms")

    @output(equation="weight_bytes * energy_per_byte", unit="J", excludes=("compute and static power",))
    def read_energy(self) -> pint.Quantity:
        """DRAM energy of reading every weight once."""
        return Q_(self._w() * self._e(), "J")

    @output(equation="read_energy / read_time", unit="W")
    def read_power(self) -> pint.Quantity:
        """Average DRAM power while the weights stream."""
        return Q_(self._e() * self.hardware.bandwidth_bytes_per_s, "W")

    @output(
        equation="workload.kv_bytes_per_token(kv_bytes_per_value) * context_tokens",
        unit="B",
        assumptions=("the model's real cache geometry",),
    )
    def kv_cache_bytes(self) -> pint.Quantity:
        """The KV cache one token reads at a full context."""
        return Q_(self._kv(), "B")

    @output(equation="weight_bytes + kv_cache_bytes", unit="B")
    def token_bytes(self) -> pint.Quantity:
        """Bytes one token reads: every weight and the whole cache."""
        return Q_(self._w() + self._kv(), "B")

    @output(equation="token_bytes / hardware.memory_bandwidth", unit="ms", assumptions=(_PEAK_BW,))
    def token_time(self) -> pint.Quantity:
        """Memory floor of one token at a full context."""
        return quantity((self._w() + self._kv()) / self.hardware.bandwidth_bytes_per_s, "s", "ms")

    @output(equation="1 / token_time", unit="1/s")
    def token_rate(self) -> pint.Quantity:
        """Tokens per second at that floor."""
        return Q_(self.hardware.bandwidth_bytes_per_s / (self._w() + self._kv()), "1/s")

    @output(
        equation="weight_bytes + 2 * workload.parameters * unpacked_bytes_per_weight + kv_cache_bytes",
        unit="B",
        assumptions=("a separate pass reads the packed weights, writes them unpacked, and the matmul rereads them",),
    )
    def separate_unpack_bytes(self) -> pint.Quantity:
        """Bytes per token when packed weights are unpacked in a separate pass before use."""
        if self.unpacked_bytes_per_weight is None:
            raise NotApplicableError("the unpack pass needs the input unpacked_bytes_per_weight")
        unpacked = self.workload.n_parameters * magnitude_in(self.unpacked_bytes_per_weight, "B")
        return Q_(self._w() + 2 * unpacked + self._kv(), "B")

    @output(equation="separate_unpack_bytes / hardware.memory_bandwidth", unit="ms")
    def separate_unpack_time(self) -> pint.Quantity:
        """Memory floor of one token with the separate unpack pass."""
        b = magnitude_in(self.separate_unpack_bytes, "B")
        return quantity(b / self.hardware.bandwidth_bytes_per_s, "s", "ms")

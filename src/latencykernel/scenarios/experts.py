"""Mixture-of-experts weight traffic: resident, read per token, and read per batch."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import pint

from latencykernel.errors import ScenarioInputError
from latencykernel.scenarios import registry
from latencykernel.scenarios.base import InputDoc, Scenario
from latencykernel.scenarios.metadata import output
from latencykernel.scenarios.units import as_quantity, magnitude_in, nonnegative_int, quantity
from latencykernel.scenarios.workloads import Workload

__all__ = ["ExpertWeightTrafficScenario"]


@dataclass(frozen=True, kw_only=True)
class ExpertWeightTrafficScenario(Scenario):
    """Weight bytes of a mixture-of-experts model, resident and read, against a dense model that reads every weight."""

    workload: Workload
    dense_parameters: pint.Quantity
    bytes_per_param: pint.Quantity

    family: ClassVar[str] = "experts"
    mlsysim_type: ClassVar[str | None] = "ExpertWeightTrafficScenario"
    summary: ClassVar[str] = (
        "All experts stay resident, but one token reads only its active parameters and a batch only the "
        "experts it touches; a dense model reads every weight each step. Payload counts, not latencies."
    )
    equation: ClassVar[str] = "resident = P·b; active = P_active·b; batch B reads dense + E·(1 − (1 − k/E)^B)·expert"
    assumptions: ClassVar[tuple[str, ...]] = (
        "uniform, independent routing",
        "all routed experts the same size; attention and shared experts count as dense",
    )
    excludes: ClassVar[tuple[str, ...]] = ("KV cache traffic", "routing imbalance")
    inputs_doc: ClassVar[tuple[InputDoc, ...]] = (
        InputDoc("workload", "Workload | str", "the MoE model"),
        InputDoc("dense_parameters", "Quantity [param]", "a dense model to compare with"),
        InputDoc("bytes_per_param", "Quantity [B]", "weight width"),
    )
    examples: ClassVar[tuple[str, ...]] = (
        "from latencykernel.scenarios import Scenarios",
        "s = Scenarios.DeepSeekV3WeightTraffic",
        "[f'{s.batch_bytes(b):.0f~P}' for b in (1, 8, 64, 512)]",
    )

    def _validate(self) -> None:
        self._set("workload", registry.workload(self.workload))
        if self.workload.experts is None:
            raise ScenarioInputError(
                f"workload={self.workload.name} routes no experts", argument="workload", value=self.workload.name
            )
        self._set("dense_parameters", as_quantity("dense_parameters", self.dense_parameters, "param", positive=True))
        self._set(
            "bytes_per_param", as_quantity("bytes_per_param", self.bytes_per_param, "B", per="param", positive=True)
        )

    def _b(self) -> float:
        return magnitude_in(self.bytes_per_param, "B/param")

    @output(equation="workload.parameters * bytes_per_param", unit="GB")
    def resident_bytes(self) -> pint.Quantity:
        """Bytes of every expert, all resident in memory."""
        return quantity(self.workload.n_parameters * self._b(), "B", "GB")

    @output(equation="workload.active_parameters * bytes_per_param", unit="GB")
    def active_bytes(self) -> pint.Quantity:
        """Bytes one token's forward pass reads (its k experts plus the dense part)."""
        return quantity(self.workload.n_active_parameters * self._b(), "B", "GB")

    @output(equation="dense_parameters * bytes_per_param", unit="GB")
    def dense_bytes(self) -> pint.Quantity:
        """Bytes the dense comparison model reads every step."""
        return quantity(magnitude_in(self.dense_parameters, "param") * self._b(), "B", "GB")

    @output(equation="resident_bytes / active_bytes", returns="float")
    def resident_to_active(self) -> float:
        """Resident over read per token."""
        return self.workload.n_parameters / self.workload.n_active_parameters

    @output(equation="dense_bytes / active_bytes", returns="float")
    def dense_to_active(self) -> float:
        """Dense model's reads over the MoE's reads per token."""
        return magnitude_in(self.dense_parameters, "param") / self.workload.n_active_parameters

    @output(
        equation="workload.weights_read(bytes_per_param, batch_size)",
        unit="GB",
        samples=lambda s: [{"batch_size": b} for b in (1, 8, 64, 512)],
        assumptions=("each sequence of the batch routes one token",),
    )
    def batch_bytes(self, batch_size: int) -> pint.Quantity:
        """Weight bytes a decode step over ``batch_size`` sequences reads: dense part plus the expected distinct experts."""
        b = nonnegative_int("batch_size", batch_size)
        return quantity(self.workload.weights_read_parameters(b) * self._b(), "B", "GB")

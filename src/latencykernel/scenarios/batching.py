"""Where batching stops paying: a fixed cost per batch plus a cost per request."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import pint

from latencykernel.errors import ScenarioInputError
from latencykernel.scenarios.base import InputDoc, Scenario
from latencykernel.scenarios.metadata import output
from latencykernel.scenarios.units import Q_, as_quantity, int_list, magnitude_in, nonnegative_int, quantity

__all__ = ["BatchingKneeScenario"]


def _samples(s: BatchingKneeScenario) -> list[dict[str, Any]]:
    return [{"batch_size": b} for b in (s.batch_sizes or (1, 8, 64))]


@dataclass(frozen=True, kw_only=True)
class BatchingKneeScenario(Scenario):
    """Batch service time S(B) = t_0 + B·t_req: where throughput turns over."""

    fixed_time: pint.Quantity
    per_request_time: pint.Quantity
    batch_sizes: tuple[int, ...] = ()

    family: ClassVar[str] = "batching"
    mlsysim_type: ClassVar[str | None] = "BatchingKneeScenario"
    summary: ClassVar[str] = (
        "A batch costs a fixed time (a weight read, launches) plus a time per request (its own cache): "
        "throughput rises towards 1/t_req and the knee B = t_0/t_req is where half of it is reached."
    )
    equation: ClassVar[str] = "S(B) = t_0 + B·t_req; X(B) = B / S(B) → 1/t_req; knee = t_0 / t_req"
    assumptions: ClassVar[tuple[str, ...]] = ("service time linear in the batch",)
    excludes: ClassVar[tuple[str, ...]] = ("compute saturation at large batches", "memory capacity")
    inputs_doc: ClassVar[tuple[InputDoc, ...]] = (
        InputDoc("fixed_time", "Quantity [time]", "cost of a batch whatever its size"),
        InputDoc("per_request_time", "Quantity [time]", "cost each request adds"),
        InputDoc("batch_sizes", "list[int]", "batches to report"),
    )

    examples: ClassVar[tuple[str, ...]] = (
        "from latencykernel.scenarios import Scenarios",
        "s = Scenarios.LlmDecodeBatchingKnee",
        "s.knee, f'{s.throughput(80):.1f~P}', s.throughput_share(80)",
    )

    def _validate(self) -> None:
        self._set("fixed_time", as_quantity("fixed_time", self.fixed_time, "s", nonnegative=True))
        self._set("per_request_time", as_quantity("per_request_time", self.per_request_time, "s", positive=True))
        self._set("batch_sizes", int_list("batch_sizes", self.batch_sizes))
        self._set("_t0", magnitude_in(self.fixed_time, "s"))
        self._set("_tr", magnitude_in(self.per_request_time, "s"))

    def _s(self, batch_size: Any) -> tuple[int, float]:
        b = nonnegative_int("batch_size", batch_size)
        return b, self._t0 + b * self._tr  # type: ignore[attr-defined]

    @output(equation="fixed_time / per_request_time", returns="float")
    def knee(self) -> float:
        """Batch at which the per-request work equals the fixed cost (half the asymptotic throughput)."""
        return self._t0 / self._tr  # type: ignore[attr-defined,no-any-return]

    @output(equation="fixed_time + batch_size * per_request_time", unit="ms", samples=_samples)
    def service_time(self, batch_size: int) -> pint.Quantity:
        """Time to serve one batch."""
        return quantity(self._s(batch_size)[1], "s", "ms")

    @output(equation="batch_size / service_time(batch_size)", unit="1/s", samples=_samples)
    def throughput(self, batch_size: int) -> pint.Quantity:
        """Requests per second at back-to-back batches."""
        b, s = self._s(batch_size)
        return Q_(b / s, "1/s")

    @output(equation="service_time(batch_size) / batch_size", unit="ms", samples=_samples)
    def time_per_request(self, batch_size: int) -> pint.Quantity:
        """Batch time shared over its requests."""
        b, s = self._s(batch_size)
        if b == 0:
            raise ScenarioInputError("time_per_request needs batch_size >= 1", argument="batch_size", value=b)
        return quantity(s / b, "s", "ms")

    @output(equation="fixed_time / service_time(batch_size)", returns="float", samples=_samples)
    def fixed_share(self, batch_size: int) -> float:
        """Share of the batch time that is fixed cost."""
        return self._t0 / self._s(batch_size)[1]  # type: ignore[attr-defined,no-any-return]

    @output(equation="throughput(batch_size) * per_request_time", returns="float", samples=_samples)
    def throughput_share(self, batch_size: int) -> float:
        """Throughput as a share of its ceiling 1/t_req."""
        b, s = self._s(batch_size)
        return b * self._tr / s  # type: ignore[attr-defined,no-any-return]

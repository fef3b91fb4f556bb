"""An accelerator as an M/M/1 server: time in system against utilization, what a faster
service buys, and how many accelerators a tail-latency budget needs."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import pint

from latencykernel.errors import NotApplicableError, ScenarioInputError
from latencykernel.scenarios.base import InputDoc, Scenario
from latencykernel.scenarios.metadata import output
from latencykernel.scenarios.units import as_quantity, fraction, items, magnitude_in, number, positive_int, quantity

__all__ = ["MM1ServiceSpeedupScenario", "MM1CapacityPlanScenario"]

_MM1 = "Poisson arrivals and exponential service times on one server (M/M/1)"


def _s(q: pint.Quantity) -> float:
    return magnitude_in(q, "s")


@dataclass(frozen=True, kw_only=True)
class MM1ServiceSpeedupScenario(Scenario):
    """The same traffic on an M/M/1 server before and after its service time falls."""

    slow_service: pint.Quantity
    fast_service: pint.Quantity
    utilization: float

    family: ClassVar[str] = "queueing"
    mlsysim_type: ClassVar[str | None] = "MM1ServiceSpeedupScenario"
    summary: ClassVar[str] = (
        "A faster service also lowers utilization, so time in system falls by more than the service speedup, "
        "and queueing delay by more still."
    )
    equation: ClassVar[str] = "T = S / (1 − ρ), ρ = λ·S; W = T − S"
    assumptions: ClassVar[tuple[str, ...]] = (_MM1, "the same arrival rate before and after")
    excludes: ClassVar[tuple[str, ...]] = ("batching", "more than one server")
    inputs_doc: ClassVar[tuple[InputDoc, ...]] = (
        InputDoc("slow_service, fast_service", "Quantity [time]", "mean service time before and after"),
        InputDoc("utilization", "float in (0, 1)", "utilization at the slow service time"),
    )
    examples: ClassVar[tuple[str, ...]] = (
        "from latencykernel.scenarios import Scenarios",
        "s = Scenarios.ResNet50FasterModelAt80PctH100",
        "round(s.service_gain, 2), round(s.time_gain, 2), round(s.wait_gain, 2)",
    )

    def _validate(self) -> None:
        self._set("slow_service", as_quantity("slow_service", self.slow_service, "s", positive=True))
        self._set("fast_service", as_quantity("fast_service", self.fast_service, "s", positive=True))
        self._set("utilization", fraction("utilization", self.utilization, high=0.999999999))
        rho_fast = self.utilization * _s(self.fast_service) / _s(self.slow_service)
        if not rho_fast < 1.0:
            # issue 10: a saturated M/M/1 server has no steady state; 1/(1 - rho) turned negative
            raise ScenarioInputError(
                f"fast_service={self.fast_service:~P} saturates the server: at the request rate that loads "
                f"slow_service={self.slow_service:~P} to utilization={self.utilization:g}, it runs at "
                f"utilization {rho_fast:.4g} >= 1, where an M/M/1 queue grows without bound (no time in system)",
                argument="fast_service",
                value=self.fast_service,
            )

    def _lam(self) -> float:
        return self.utilization / _s(self.slow_service)

    def _rho_fast(self) -> float:
        return self._lam() * _s(self.fast_service)

    def _t(self, service: float, rho: float) -> float:
        return service / (1.0 - rho)

    @output(equation="utilization / slow_service", unit="1/s")
    def arrival_rate(self) -> pint.Quantity:
        """Request rate that loads the slow server to ``utilization``."""
        return quantity(self._lam(), "1/s")

    @output(equation="arrival_rate * fast_service", returns="float")
    def fast_utilization(self) -> float:
        """Utilization of the fast server at the same traffic."""
        return self._rho_fast()

    @output(equation="slow_service / (1 - utilization)", unit="ms", assumptions=(_MM1,))
    def slow_time(self) -> pint.Quantity:
        """Mean time in system before."""
        return quantity(self._t(_s(self.slow_service), self.utilization), "s", "ms")

    @output(equation="fast_service / (1 - fast_utilization)", unit="ms", assumptions=(_MM1,))
    def fast_time(self) -> pint.Quantity:
        """Mean time in system after."""
        return quantity(self._t(_s(self.fast_service), self._rho_fast()), "s", "ms")

    @output(equation="slow_time - slow_service", unit="ms")
    def slow_wait(self) -> pint.Quantity:
        """Mean queueing delay before."""
        return quantity(self._t(_s(self.slow_service), self.utilization) - _s(self.slow_service), "s", "ms")

    @output(equation="fast_time - fast_service", unit="ms")
    def fast_wait(self) -> pint.Quantity:
        """Mean queueing delay after."""
        return quantity(self._t(_s(self.fast_service), self._rho_fast()) - _s(self.fast_service), "s", "ms")

    @output(equation="slow_service / fast_service", returns="float")
    def service_gain(self) -> float:
        """Service speedup."""
        return _s(self.slow_service) / _s(self.fast_service)

    @output(equation="slow_time / fast_time", returns="float")
    def time_gain(self) -> float:
        """Speedup of the time in system."""
        return self._t(_s(self.slow_service), self.utilization) / self._t(_s(self.fast_service), self._rho_fast())

    @output(equation="slow_wait / fast_wait", returns="float")
    def wait_gain(self) -> float:
        """Speedup of the queueing delay."""
        slow = self._t(_s(self.slow_service), self.utilization) - _s(self.slow_service)
        fast = self._t(_s(self.fast_service), self._rho_fast()) - _s(self.fast_service)
        return slow / fast


@dataclass(frozen=True, kw_only=True)
class MM1CapacityPlanScenario(Scenario):
    """Accelerators for ``peak_rate`` when each is an M/M/1 server whose tail must meet ``tail_budget``."""

    service_time: pint.Quantity
    tail_factor: float
    tail_quantile: float
    tail_budget: pint.Quantity
    peak_rate: pint.Quantity
    headroom: float
    utilization_points: tuple[float, ...]
    example_utilization: float
    batched_rate: pint.Quantity
    accelerator_price: pint.Quantity

    family: ClassVar[str] = "queueing"
    mlsysim_type: ClassVar[str | None] = "MM1CapacityPlanScenario"
    summary: ClassVar[str] = (
        "A tail budget caps each server's utilization (its p-quantile is k times its mean time in system); the "
        "fleet is the peak rate over the capped per-server rate, plus headroom for a failure."
    )
    equation: ClassVar[str] = (
        "ρ_max = 1 − k·S / budget; n = ceil(peak / (ρ_max·μ)), μ = 1/S; planned = ceil(n · headroom)"
    )
    assumptions: ClassVar[tuple[str, ...]] = (
        _MM1,
        "traffic splits evenly over the servers",
        "the tail factor k stands for −ln(1 − q) (exact for M/M/1)",
    )
    excludes: ClassVar[tuple[str, ...]] = ("batching within a server (the batched re-plan uses the same ρ_max)",)
    inputs_doc: ClassVar[tuple[InputDoc, ...]] = (
        InputDoc("service_time", "Quantity [time]", "mean service time S"),
        InputDoc("tail_factor", "float > 0", "p-quantile over mean time in system (k)"),
        InputDoc("tail_quantile", "float in (0, 1)", "the quantile q"),
        InputDoc("tail_budget", "Quantity [time]", "the tail latency target"),
        InputDoc("peak_rate", "Quantity [1/time]", "peak traffic"),
        InputDoc("headroom", "float ≥ 1", "fleet multiplier"),
        InputDoc("utilization_points", "list[float in (0, 1)]", "utilizations to report"),
        InputDoc("example_utilization", "float in (0, 1)", "a utilization to quote"),
        InputDoc("batched_rate", "Quantity [1/time]", "a server's rate when batching"),
        InputDoc("accelerator_price", "Quantity [dollar/time]", "hourly price of one server"),
    )
    examples: ClassVar[tuple[str, ...]] = (
        "from latencykernel.scenarios import Scenarios",
        "s = Scenarios.ResNet50FleetPlanH100",
        "round(s.max_utilization, 4), s.accelerators, s.accelerators_planned, s.batched_accelerators",
    )

    def _validate(self) -> None:
        self._set("service_time", as_quantity("service_time", self.service_time, "s", positive=True))
        self._set("tail_factor", number("tail_factor", self.tail_factor, above=0))
        self._set("tail_quantile", fraction("tail_quantile", self.tail_quantile, high=0.999999999))
        self._set("tail_budget", as_quantity("tail_budget", self.tail_budget, "s", positive=True))
        self._set("peak_rate", as_quantity("peak_rate", self.peak_rate, "1/s", positive=True))
        self._set("headroom", number("headroom", self.headroom, minimum=1))
        self._set(
            "utilization_points",
            tuple(
                fraction(f"utilization_points[{i}]", u, high=0.999999999)
                for i, u in enumerate(items("utilization_points", self.utilization_points, "utilizations"))
            ),
        )
        self._set("example_utilization", fraction("example_utilization", self.example_utilization, high=0.999999999))
        self._set("batched_rate", as_quantity("batched_rate", self.batched_rate, "1/s", positive=True))
        self._set(
            "accelerator_price", as_quantity("accelerator_price", self.accelerator_price, "dollar/s", nonnegative=True)
        )
        rho_max = 1.0 - self.tail_factor * _s(self.service_time) / _s(self.tail_budget)
        if not rho_max > 0.0:
            # issue 10: the budget cannot be met at any load; the utilization cap came out negative
            raise ScenarioInputError(
                f"service_time={self.service_time:~P} times tail_factor={self.tail_factor:g} is at least "
                f"tail_budget={self.tail_budget:~P}: even an idle server misses the tail budget, so no "
                f"utilization meets it",
                argument="service_time",
                value=self.service_time,
            )

    def _mu(self) -> float:
        return 1.0 / _s(self.service_time)

    def _rho_max(self) -> float:
        return 1.0 - self.tail_factor * _s(self.service_time) / _s(self.tail_budget)

    def _peak(self) -> float:
        return magnitude_in(self.peak_rate, "1/s")

    def _n(self) -> int:
        return math.ceil(self._peak() / (self._rho_max() * self._mu()))

    def _planned(self) -> int:
        return math.ceil(self._n() * self.headroom)

    def _batched(self) -> int:
        return math.ceil(self._peak() / (magnitude_in(self.batched_rate, "1/s") * self._rho_max()))

    @output(equation="1 / service_time", unit="1/s")
    def service_rate(self) -> pint.Quantity:
        """One server's rate at full utilization."""
        return quantity(self._mu(), "1/s")

    @output(equation="-ln(1 - tail_quantile)", returns="float", assumptions=(_MM1,))
    def exact_tail_factor(self) -> float:
        """The M/M/1 quantile over mean: time in system is exponential."""
        return -math.log(1.0 - self.tail_quantile)

    @output(equation="1 - tail_factor * service_time / tail_budget", returns="float")
    def max_utilization(self) -> float:
        """Highest utilization whose tail meets the budget."""
        return self._rho_max()

    @output(equation="peak_rate / max_utilization", unit="1/s")
    def required_rate(self) -> pint.Quantity:
        """Service capacity the peak needs at that utilization."""
        return quantity(self._peak() / self._rho_max(), "1/s")

    @output(equation="required_rate / service_rate", returns="float")
    def accelerators_exact(self) -> float:
        """Servers, fractional."""
        return self._peak() / (self._rho_max() * self._mu())

    @output(equation="ceil(accelerators_exact)", returns="int")
    def accelerators(self) -> int:
        """Servers, whole."""
        return self._n()

    @output(equation="ceil(accelerators * headroom)", returns="int")
    def accelerators_planned(self) -> int:
        """Servers with headroom."""
        return self._planned()

    @output(equation="peak_rate / ((accelerators_planned - 1) * service_rate)", returns="float")
    def utilization_after_failure(self) -> float:
        """Utilization when one planned server fails."""
        if self._planned() <= 1:
            raise NotApplicableError("with one planned server a failure leaves none: raise peak_rate or headroom")
        return self._peak() / ((self._planned() - 1) * self._mu())

    @output(equation="peak_rate / service_rate", returns="float")
    def saturated_accelerators_exact(self) -> float:
        """Servers at full utilization (no tail budget)."""
        return self._peak() / self._mu()

    @output(
        equation="ceil(peak_rate / (batched_rate * max_utilization))",
        returns="int",
        assumptions=("the batched server keeps the batch-one utilization cap",),
    )
    def batched_accelerators(self) -> int:
        """Servers when each batches."""
        return self._batched()

    @output(equation="ceil(batched_accelerators * headroom)", returns="int")
    def batched_accelerators_planned(self) -> int:
        """Batching servers with headroom."""
        return math.ceil(self._batched() * self.headroom)

    @output(
        equation="service_time / (1 - utilization)",
        unit="ms",
        samples=lambda s: [{"utilization": u} for u in s.utilization_points],
    )
    def time_in_system(self, utilization: float) -> pint.Quantity:
        """Mean time in system at a utilization."""
        u = fraction("utilization", utilization, high=0.999999999)
        return quantity(_s(self.service_time) / (1.0 - u), "s", "ms")

    @output(
        equation="tail_factor * time_in_system(utilization)",
        unit="ms",
        samples=lambda s: [{"utilization": u} for u in s.utilization_points],
    )
    def tail_time(self, utilization: float) -> pint.Quantity:
        """Tail latency at a utilization."""
        u = fraction("utilization", utilization, high=0.999999999)
        return quantity(self.tail_factor * _s(self.service_time) / (1.0 - u), "s", "ms")

    @output(
        equation="accelerators * accelerator_price / peak_rate * 1e6",
        unit="dollar",
        samples=lambda s: [
            {"accelerators": n} for n in (s.batched_accelerators_planned, s.accelerators, s.accelerators_planned)
        ],
    )
    def cost_per_million(self, accelerators: int) -> pint.Quantity:
        """Cost of a million requests at the peak rate on a fleet of ``accelerators``."""
        n = positive_int("accelerators", accelerators)
        return quantity(n * magnitude_in(self.accelerator_price, "dollar/s") / self._peak() * 1e6, "dollar")

    def symbols(self) -> dict[str, Any]:
        s = super().symbols()
        s["ln"] = math.log
        return s

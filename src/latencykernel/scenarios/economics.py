"""Serving economics: cost per request from a price and a rate, the latency left outside the
model, serving against training, and energy per token. Money is ``dollar``, energy ``J``/``Wh``."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import pint

from latencykernel.errors import ScenarioInputError
from latencykernel.scenarios.base import InputDoc, Scenario
from latencykernel.scenarios.batching import BatchingKneeScenario
from latencykernel.scenarios.metadata import output
from latencykernel.scenarios.units import (
    Q_,
    as_quantity,
    count,
    fraction,
    int_list,
    magnitude_in,
    mapping,
    nonnegative_int,
    positive_int,
    quantity,
    text,
)

__all__ = [
    "BatchServingCostScenario",
    "ServingInstanceCostScenario",
    "ServingTaxScenario",
    "ServingCostScenario",
    "ServingCrossoverScenario",
    "TokenEnergyScenario",
]

_SATURATED = "the accelerator is busy all the time it is rented"


def _v(q: pint.Quantity, unit: str) -> float:
    return float(q.to(unit).magnitude)


@dataclass(frozen=True, kw_only=True)
class BatchServingCostScenario(Scenario):
    """One accelerator rented at ``price``, serving batches back to back: cost per request by batch size."""

    service: BatchingKneeScenario
    price: pint.Quantity
    batch_sizes: tuple[int, ...]

    family: ClassVar[str] = "economics"
    mlsysim_type: ClassVar[str | None] = "BatchServingCostScenario"
    summary: ClassVar[str] = "Cost per million requests of a rented accelerator serving batches back to back."
    equation: ClassVar[str] = "cost / request = price · S(B) / B"
    assumptions: ClassVar[tuple[str, ...]] = (_SATURATED, "the batch service time of a BatchingKneeScenario")
    excludes: ClassVar[tuple[str, ...]] = ("idle time waiting for a batch to fill", "host and network costs")
    inputs_doc: ClassVar[tuple[InputDoc, ...]] = (
        InputDoc("service", "BatchingKneeScenario", "batch service time S(B)"),
        InputDoc("price", "Quantity [dollar/time]", "rental price"),
        InputDoc("batch_sizes", "list[int] ≥ 1", "batches compared (first against last)"),
    )
    examples: ClassVar[tuple[str, ...]] = (
        "from latencykernel.scenarios import Scenarios",
        "s = Scenarios.ResNet50BatchOneVersusEightCostH100",
        "print(f'{s.cost_per_million(1):.2f~P}', f'{s.cost_per_million(8):.2f~P}', round(s.cost_ratio, 2))",
    )

    def _validate(self) -> None:
        if not isinstance(self.service, BatchingKneeScenario):
            raise ScenarioInputError(
                f"service={self.service!r} must be a BatchingKneeScenario", argument="service", value=self.service
            )
        self._set("price", as_quantity("price", self.price, "dollar/s", nonnegative=True))
        batches = int_list("batch_sizes", self.batch_sizes, minimum=1, unit="sequence")
        if not batches:
            raise ScenarioInputError("batch_sizes must name at least one batch", argument="batch_sizes", value=batches)
        self._set("batch_sizes", batches)

    def _cpm(self, b: int) -> float:
        return _v(self.price, "dollar/s") * _v(self.service.service_time(b), "s") / b * 1e6

    @output(
        equation="price * service.service_time(batch_size) / batch_size * 1e6",
        unit="dollar",
        samples=lambda s: [{"batch_size": b} for b in s.batch_sizes],
        assumptions=(_SATURATED,),
    )
    def cost_per_million(self, batch_size: int) -> pint.Quantity:
        """Cost of a million requests at one batch size."""
        return quantity(self._cpm(count("batch_size", batch_size, "sequence", minimum=1)), "dollar")

    @output(equation="cost_per_million(batch_sizes[0]) / cost_per_million(batch_sizes[-1])", returns="float")
    def cost_ratio(self) -> float:
        """How much cheaper the last batch size is than the first."""
        return self._cpm(self.batch_sizes[0]) / self._cpm(self.batch_sizes[-1])

    @output(equation="service.service_time(batch_sizes[-1]) - service.service_time(batch_sizes[0])", unit="ms")
    def added_time(self) -> pint.Quantity:
        """Latency the larger batch adds."""
        return (self.service.service_time(self.batch_sizes[-1]) - self.service.service_time(self.batch_sizes[0])).to(
            "ms"
        )


@dataclass(frozen=True, kw_only=True)
class ServingInstanceCostScenario(Scenario):
    """Instances with an hourly price and a saturated request rate: cost per request, and when the ``small``
    instance sized to the load undercuts one ``large`` instance."""

    prices: Mapping[str, pint.Quantity]
    rates: Mapping[str, pint.Quantity]
    small: str
    large: str

    family: ClassVar[str] = "economics"
    mlsysim_type: ClassVar[str | None] = "ServingInstanceCostScenario"
    summary: ClassVar[str] = (
        "Cost per request of instances at their saturated rates, and the load above which one large instance "
        "is cheaper than enough small ones."
    )
    equation: ClassVar[str] = "cost / request = price / rate; break-even load = rate_small · price_large / price_small"
    assumptions: ClassVar[tuple[str, ...]] = (_SATURATED, "small instances scale in fractions (break-even)")
    excludes: ClassVar[tuple[str, ...]] = ("latency differences between the instances",)
    inputs_doc: ClassVar[tuple[InputDoc, ...]] = (
        InputDoc("prices", "dict[str, Quantity [dollar/time]]", "hourly price per instance"),
        InputDoc("rates", "dict[str, Quantity [1/time]]", "saturated request rate per instance"),
        InputDoc("small, large", "str", "the two instances compared"),
    )
    examples: ClassVar[tuple[str, ...]] = (
        "from latencykernel.scenarios import Scenarios",
        "s = Scenarios.ResNet50CloudInstanceCost",
        "print(f'{s.cost_per_million(\"T4\"):.3f~P}', f'{s.breakeven_rate:.0f~P}')",
    )

    def _validate(self) -> None:
        prices = {
            k: as_quantity(f"prices[{k!r}]", v, "dollar/s", nonnegative=True)
            for k, v in mapping("prices", self.prices).items()
        }
        rates = {
            k: as_quantity(f"rates[{k!r}]", v, "1/s", positive=True) for k, v in mapping("rates", self.rates).items()
        }
        if set(prices) != set(rates):
            raise ScenarioInputError(
                "prices and rates must name the same instances", argument="rates", value=sorted(rates)
            )
        for name in ("small", "large"):
            if text(name, getattr(self, name), "an instance name") not in prices:
                raise ScenarioInputError(
                    f"{name}={getattr(self, name)!r} is not among {sorted(prices)}",
                    argument=name,
                    value=getattr(self, name),
                )
        self._set("prices", prices)
        self._set("rates", rates)

    def _name(self, name: str) -> str:
        if name not in self.prices:
            raise ScenarioInputError(f"name={name!r} is not among {sorted(self.prices)}", argument="name", value=name)
        return name

    @output(
        equation="prices[name] / rates[name] * 1e6", unit="dollar", samples=lambda s: [{"name": n} for n in s.prices]
    )
    def cost_per_million(self, name: str) -> pint.Quantity:
        """Cost of a million requests on one instance."""
        n = self._name(name)
        return quantity(_v(self.prices[n], "dollar/s") / _v(self.rates[n], "1/s") * 1e6, "dollar")

    @output(equation="rates[name] * 3600 * second", returns="float", samples=lambda s: [{"name": n} for n in s.prices])
    def requests_per_hour(self, name: str) -> float:
        """Requests one instance serves in an hour."""
        return _v(self.rates[self._name(name)], "1/s") * 3600.0

    @output(equation="prices[large] / prices[small]", returns="float")
    def price_ratio(self) -> float:
        """Large instance's price over the small one's."""
        return _v(self.prices[self.large], "dollar/s") / _v(self.prices[self.small], "dollar/s")

    @output(equation="rates[small] * prices[large] / prices[small]", unit="1/s")
    def breakeven_rate(self) -> pint.Quantity:
        """Load at which small instances cost as much as one large instance."""
        return quantity(_v(self.rates[self.small], "1/s") * self.price_ratio, "1/s")

    @output(equation="floor(prices[large] / prices[small])", returns="int")
    def small_within_large_price(self) -> int:
        """Small instances one large instance's price buys."""
        return math.floor(self.price_ratio)

    @output(equation="small_within_large_price * rates[small]", unit="1/s")
    def small_fleet_rate(self) -> pint.Quantity:
        """Rate of that many small instances."""
        return quantity(self.small_within_large_price * _v(self.rates[self.small], "1/s"), "1/s")

    def symbols(self) -> dict[str, Any]:
        s = super().symbols()
        s["second"] = Q_(1, "s")
        return s


@dataclass(frozen=True, kw_only=True)
class ServingTaxScenario(Scenario):
    """A request's latency target split between model execution and everything outside it."""

    latency_target: pint.Quantity
    model_time: pint.Quantity
    exchanges: int
    exchange_low: pint.Quantity
    exchange_high: pint.Quantity

    family: ClassVar[str] = "economics"
    mlsysim_type: ClassVar[str | None] = "ServingTaxScenario"
    summary: ClassVar[str] = (
        "Routing, network, serialization and queueing share what the model leaves of a latency target."
    )
    equation: ClassVar[str] = "outside = target − model; exchanges cost n · [t_low, t_high]"
    assumptions: ClassVar[tuple[str, ...]] = ("exchanges run one after another",)
    excludes: ClassVar[tuple[str, ...]] = ("queueing variance",)
    inputs_doc: ClassVar[tuple[InputDoc, ...]] = (
        InputDoc("latency_target", "Quantity [time]", "the request's target"),
        InputDoc("model_time", "Quantity [time]", "model execution"),
        InputDoc("exchanges", "int", "sequential service exchanges"),
        InputDoc("exchange_low, exchange_high", "Quantity [time]", "range of one exchange"),
    )
    examples: ClassVar[tuple[str, ...]] = (
        "from latencykernel.scenarios import Scenarios",
        "s = Scenarios.InteractiveRequestServingTax",
        "print(f'{s.outside_model:~P}', f'{s.exchanges_high:~P}')",
    )

    def _validate(self) -> None:
        for name in ("latency_target", "model_time", "exchange_low", "exchange_high"):
            self._set(name, as_quantity(name, getattr(self, name), "s", nonnegative=True))
        self._set("exchanges", nonnegative_int("exchanges", self.exchanges))
        if magnitude_in(self.model_time, "s") > magnitude_in(self.latency_target, "s"):
            # issue 10: outside_model (the time left for the rest of the request) came out negative
            raise ScenarioInputError(
                f"model_time={self.model_time:~P} exceeds latency_target={self.latency_target:~P}: the model "
                f"alone misses the target, so no time is left outside it",
                argument="model_time",
                value=self.model_time,
            )

    @output(equation="latency_target - model_time", unit="ms")
    def outside_model(self) -> pint.Quantity:
        """Latency left for everything outside the model (negative: the model alone misses)."""
        return (self.latency_target - self.model_time).to("ms")

    @output(equation="exchanges * exchange_low", unit="ms")
    def exchanges_low(self) -> pint.Quantity:
        """The exchanges at their fastest."""
        return (self.exchanges * self.exchange_low).to("ms")

    @output(equation="exchanges * exchange_high", unit="ms")
    def exchanges_high(self) -> pint.Quantity:
        """The exchanges at their slowest."""
        return (self.exchanges * self.exchange_high).to("ms")


@dataclass(frozen=True, kw_only=True)
class ServingCostScenario(Scenario):
    """One model version's training spend against its first year of serving."""

    training_cost: pint.Quantity
    daily_users: int
    requests_per_user_per_day: int
    cost_per_request: pint.Quantity
    efficiency_gain: float
    days_per_year: int = 365

    family: ClassVar[str] = "economics"
    mlsysim_type: ClassVar[str | None] = "ServingCostScenario"
    summary: ClassVar[str] = (
        "A year of serving usually costs more than training: when serving overtakes training, and what an efficiency gain saves."
    )
    equation: ClassVar[str] = "annual = users · requests/day · days · cost/request; crossover = training / daily cost"
    assumptions: ClassVar[tuple[str, ...]] = ("constant traffic and cost per request",)
    excludes: ClassVar[tuple[str, ...]] = ("traffic growth", "retraining")
    inputs_doc: ClassVar[tuple[InputDoc, ...]] = (
        InputDoc("training_cost", "Quantity [dollar]", "one training run"),
        InputDoc("daily_users", "int ≥ 1", "users per day"),
        InputDoc("requests_per_user_per_day", "int ≥ 1", "requests each user sends a day"),
        InputDoc("cost_per_request", "Quantity [dollar]", "serving cost of one request"),
        InputDoc("efficiency_gain", "float in [0, 1]", "share of serving cost an optimisation removes"),
        InputDoc("days_per_year", "int ≥ 1", "days of serving"),
    )
    examples: ClassVar[tuple[str, ...]] = (
        "from latencykernel.scenarios import Scenarios",
        "s = Scenarios.LlmServingFirstYear",
        "print(f'{s.annual_serving_cost:.3g~P}', round(s.crossover_weeks, 2))",
    )

    def _validate(self) -> None:
        self._set("training_cost", as_quantity("training_cost", self.training_cost, "dollar", nonnegative=True))
        self._set("cost_per_request", as_quantity("cost_per_request", self.cost_per_request, "dollar", positive=True))
        for name in ("daily_users", "requests_per_user_per_day", "days_per_year"):
            self._set(name, positive_int(name, getattr(self, name)))
        self._set("efficiency_gain", fraction("efficiency_gain", self.efficiency_gain, low_open=False))

    def _daily_cost(self) -> float:
        return self.daily_requests * _v(self.cost_per_request, "dollar")

    @output(equation="daily_users * requests_per_user_per_day", returns="int")
    def daily_requests(self) -> int:
        """Requests a day."""
        return self.daily_users * self.requests_per_user_per_day

    @output(equation="daily_requests * days_per_year", returns="int")
    def annual_requests(self) -> int:
        """Requests a year."""
        return self.daily_requests * self.days_per_year

    @output(equation="annual_requests * cost_per_request", unit="dollar")
    def annual_serving_cost(self) -> pint.Quantity:
        """A year of serving."""
        return quantity(self.annual_requests * _v(self.cost_per_request, "dollar"), "dollar")

    @output(equation="annual_serving_cost / training_cost", returns="float")
    def serving_to_training(self) -> float:
        """A year of serving over one training run."""
        return self.annual_requests * _v(self.cost_per_request, "dollar") / _v(self.training_cost, "dollar")

    @output(equation="annual_serving_cost * efficiency_gain", unit="dollar")
    def efficiency_savings(self) -> pint.Quantity:
        """What the efficiency gain saves in a year."""
        return quantity(self.annual_requests * _v(self.cost_per_request, "dollar") * self.efficiency_gain, "dollar")

    @output(equation="annual_serving_cost / 12", unit="dollar")
    def monthly_serving_cost(self) -> pint.Quantity:
        """A month of serving (a twelfth of a year)."""
        return quantity(self.annual_requests * _v(self.cost_per_request, "dollar") / 12.0, "dollar")

    @output(equation="training_cost / monthly_serving_cost", returns="float")
    def crossover_months(self) -> float:
        """Months of serving that cost as much as training."""
        return _v(self.training_cost, "dollar") / (self.annual_requests * _v(self.cost_per_request, "dollar") / 12.0)

    @output(equation="training_cost / (daily_requests * cost_per_request) / 7", returns="float")
    def crossover_weeks(self) -> float:
        """Weeks of serving that cost as much as training."""
        return _v(self.training_cost, "dollar") / self._daily_cost() / 7.0


@dataclass(frozen=True, kw_only=True)
class ServingCrossoverScenario(Scenario):
    """Serving ``requests_per_day`` at ``energy_per_request`` against a one-time energy."""

    one_time_energy: pint.Quantity
    requests_per_day: pint.Quantity
    energy_per_request: pint.Quantity

    family: ClassVar[str] = "economics"
    mlsysim_type: ClassVar[str | None] = "ServingCrossoverScenario"
    summary: ClassVar[str] = "Days of serving whose energy equals a one-time energy such as a training run."
    equation: ClassVar[str] = "days = E_once / (requests/day · E_request)"
    assumptions: ClassVar[tuple[str, ...]] = ("constant traffic and energy per request",)
    excludes: ClassVar[tuple[str, ...]] = ("facility overhead unless included in the inputs",)
    inputs_doc: ClassVar[tuple[InputDoc, ...]] = (
        InputDoc("one_time_energy", "Quantity [energy]", "e.g. a training run's facility energy"),
        InputDoc("requests_per_day", "Quantity [1/day]", "traffic"),
        InputDoc("energy_per_request", "Quantity [energy]", "energy of one request"),
    )
    examples: ClassVar[tuple[str, ...]] = (
        "from latencykernel.scenarios import Scenarios",
        "s = Scenarios.TenMillionQueriesAgainstLab64Training",
        "print(f'{s.daily_energy:~P}', round(s.crossover_days, 3))",
    )

    def _validate(self) -> None:
        self._set("one_time_energy", as_quantity("one_time_energy", self.one_time_energy, "J", nonnegative=True))
        self._set("requests_per_day", as_quantity("requests_per_day", self.requests_per_day, "1/day", positive=True))
        self._set("energy_per_request", as_quantity("energy_per_request", self.energy_per_request, "J", positive=True))

    @output(equation="requests_per_day * energy_per_request * day", unit="MWh")
    def daily_energy(self) -> pint.Quantity:
        """Serving energy of one day."""
        return (self.requests_per_day * self.energy_per_request * Q_(1, "day")).to("MWh")

    @output(equation="one_time_energy / daily_energy", returns="float")
    def crossover_days(self) -> float:
        """Days of serving that equal the one-time energy."""
        return float((self.one_time_energy / (self.requests_per_day * self.energy_per_request * Q_(1, "day"))).to(""))

    def symbols(self) -> dict[str, Any]:
        s = super().symbols()
        s["day"] = Q_(1, "day")
        return s


@dataclass(frozen=True, kw_only=True)
class TokenEnergyScenario(Scenario):
    """Joules per generated token: node power over aggregate token rate, well used and poorly used."""

    accelerator_power: pint.Quantity
    host_power: pint.Quantity
    low_use_accelerator_power: pint.Quantity
    concurrent_requests: int
    per_request_rate: pint.Quantity
    response_tokens: int
    low_use_fraction: float

    family: ClassVar[str] = "economics"
    mlsysim_type: ClassVar[str | None] = "TokenEnergyScenario"
    summary: ClassVar[str] = (
        "Energy per token is power over token rate: a poorly used accelerator still draws most of its power."
    )
    equation: ClassVar[str] = "J/token = (P_accelerator + P_host) / (requests · rate per request)"
    assumptions: ClassVar[tuple[str, ...]] = ("steady power at each load",)
    excludes: ClassVar[tuple[str, ...]] = ("facility overhead (PUE)", "prefill energy")
    inputs_doc: ClassVar[tuple[InputDoc, ...]] = (
        InputDoc("accelerator_power, host_power", "Quantity [W]", "power when well used"),
        InputDoc("low_use_accelerator_power", "Quantity [W]", "accelerator power when poorly used"),
        InputDoc("concurrent_requests", "int", "requests decoding at once"),
        InputDoc("per_request_rate", "Quantity [1/time]", "tokens per second per request"),
        InputDoc("response_tokens", "int [tokens]", "tokens of one response"),
        InputDoc("low_use_fraction", "float in (0, 1]", "poor use as a share of the well-used token rate"),
    )
    examples: ClassVar[tuple[str, ...]] = (
        "from latencykernel.scenarios import Scenarios",
        "s = Scenarios.H100ChatEnergyPerToken",
        "print(f'{s.joules_per_token:.3f~P}', f'{s.low_use_joules_per_token:.3f~P}')",
    )

    def _validate(self) -> None:
        for name in ("accelerator_power", "host_power", "low_use_accelerator_power"):
            self._set(name, as_quantity(name, getattr(self, name), "W", nonnegative=True))
        self._set("concurrent_requests", count("concurrent_requests", self.concurrent_requests, "sequence", minimum=1))
        self._set("per_request_rate", as_quantity("per_request_rate", self.per_request_rate, "1/s", positive=True))
        self._set("response_tokens", count("response_tokens", self.response_tokens, "token"))
        self._set("low_use_fraction", fraction("low_use_fraction", self.low_use_fraction))

    def _power(self, low: bool) -> float:
        acc = self.low_use_accelerator_power if low else self.accelerator_power
        return _v(acc, "W") + _v(self.host_power, "W")

    def _rate(self) -> float:
        return self.concurrent_requests * _v(self.per_request_rate, "1/s")

    @output(equation="accelerator_power + host_power", unit="W")
    def node_power(self) -> pint.Quantity:
        """Power when well used."""
        return quantity(self._power(False), "W")

    @output(equation="low_use_accelerator_power + host_power", unit="W")
    def low_use_power(self) -> pint.Quantity:
        """Power when poorly used."""
        return quantity(self._power(True), "W")

    @output(equation="concurrent_requests * per_request_rate", unit="1/s")
    def token_rate(self) -> pint.Quantity:
        """Aggregate tokens per second when well used."""
        return quantity(self._rate(), "1/s")

    @output(equation="node_power / token_rate", unit="J")
    def joules_per_token(self) -> pint.Quantity:
        """Energy per token when well used."""
        return quantity(self._power(False) / self._rate(), "J")

    @output(equation="joules_per_token * response_tokens", unit="J")
    def response_energy(self) -> pint.Quantity:
        """Energy of one response when well used."""
        return quantity(self._power(False) / self._rate() * self.response_tokens, "J")

    @output(equation="token_rate * low_use_fraction", unit="1/s")
    def low_use_token_rate(self) -> pint.Quantity:
        """Aggregate tokens per second when poorly used."""
        return quantity(self._rate() * self.low_use_fraction, "1/s")

    @output(equation="low_use_power / low_use_token_rate", unit="J")
    def low_use_joules_per_token(self) -> pint.Quantity:
        """Energy per token when poorly used."""
        return quantity(self._power(True) / (self._rate() * self.low_use_fraction), "J")

    @output(equation="low_use_joules_per_token / joules_per_token", returns="float")
    def low_use_ratio(self) -> float:
        """How much more energy a poorly used token costs."""
        return (self._power(True) / (self._rate() * self.low_use_fraction)) / (self._power(False) / self._rate())

    @output(
        equation="(low_use_power if low_use else node_power) / token_rate",
        unit="J",
        samples=lambda s: [{"token_rate": Q_(r, "1/s"), "low_use": u} for r in (100.0, 1000.0) for u in (False, True)],
    )
    def energy_per_token(self, token_rate: Any, low_use: bool = False) -> pint.Quantity:
        """Energy per token at any token rate, at the well-used or poorly used power."""
        rate = _v(as_quantity("token_rate", token_rate, "1/s", positive=True), "1/s")
        return quantity(self._power(bool(low_use)) / rate, "J")

"""Context windows: how their cost grows, and what a request may put in them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import pint

from latencykernel.errors import ScenarioInputError
from latencykernel.scenarios.base import InputDoc, Scenario
from latencykernel.scenarios.metadata import output
from latencykernel.scenarios.units import Q_, count

__all__ = ["ContextGrowthScenario", "ContextAdmissionScenario"]


@dataclass(frozen=True, kw_only=True)
class ContextGrowthScenario(Scenario):
    """A context window grown from ``base_tokens`` to ``tokens``."""

    base_tokens: int
    tokens: int

    family: ClassVar[str] = "context"
    mlsysim_type: ClassVar[str | None] = "ContextGrowthScenario"
    summary: ClassVar[str] = (
        "A kept cache grows with the length ratio; attention's score work and stored scores with its square."
    )
    equation: ClassVar[str] = "r = T / T_0; cache × r; scores × r²"
    assumptions: ClassVar[tuple[str, ...]] = ("full (not windowed or sparse) attention",)
    excludes: ClassVar[tuple[str, ...]] = ("the weights, which do not grow",)
    inputs_doc: ClassVar[tuple[InputDoc, ...]] = (
        InputDoc("base_tokens", "int [tokens] ≥ 1", "the original window"),
        InputDoc("tokens", "int [tokens] ≥ 1", "the grown window"),
    )

    examples: ClassVar[tuple[str, ...]] = (
        "from latencykernel.scenarios import Scenarios",
        "s = Scenarios.BertWindowToFourK",
        "s.ratio, s.score_ratio",
    )

    def _validate(self) -> None:
        self._set("base_tokens", count("base_tokens", self.base_tokens, "token", minimum=1))
        self._set("tokens", count("tokens", self.tokens, "token", minimum=1))

    @output(equation="tokens / base_tokens", returns="float")
    def ratio(self) -> float:
        """Growth of the window (and of a kept cache)."""
        return self.tokens / self.base_tokens

    @output(equation="(tokens / base_tokens) ** 2", returns="float")
    def score_ratio(self) -> float:
        """Growth of attention's score work and stored scores."""
        return (self.tokens / self.base_tokens) ** 2


@dataclass(frozen=True, kw_only=True)
class ContextAdmissionScenario(Scenario):
    """A serialized request (text plus an image charge) against a window with a reserved reply."""

    window: int
    output_reserve: int
    text_tokens: int
    image_tokens: int = 0

    family: ClassVar[str] = "context"
    mlsysim_type: ClassVar[str | None] = "ContextAdmissionScenario"
    summary: ClassVar[str] = "Whether a request's text and image positions fit the window once the reply is reserved."
    equation: ClassVar[str] = "admitted ⇔ text + image ≤ window − reply reserve"
    assumptions: ClassVar[tuple[str, ...]] = ("the image costs a fixed number of positions",)
    excludes: ClassVar[tuple[str, ...]] = ("truncation or summarisation policies",)
    inputs_doc: ClassVar[tuple[InputDoc, ...]] = (
        InputDoc("window", "int [tokens]", "the model's context window"),
        InputDoc("output_reserve", "int [tokens]", "positions kept for the reply"),
        InputDoc("text_tokens", "int [tokens]", "the serialized text"),
        InputDoc("image_tokens", "int [tokens]", "positions the vision front end charges"),
    )

    examples: ClassVar[tuple[str, ...]] = (
        "from latencykernel.scenarios import Scenarios",
        "s = Scenarios.MultimodalContextAdmission",
        "s.admitted, f'{s.excess:~P}'",
    )

    def _validate(self) -> None:
        for name in ("window", "output_reserve", "text_tokens", "image_tokens"):
            self._set(name, count(name, getattr(self, name), "token"))
        if self.output_reserve > self.window:
            # issue 10: input_ceiling (window - output_reserve) came out negative
            raise ScenarioInputError(
                f"output_reserve={self.output_reserve} exceeds window={self.window}: no position is left for the input",
                argument="output_reserve",
                value=self.output_reserve,
            )

    def symbols(self) -> dict[str, object]:
        s = super().symbols()
        for name in ("window", "output_reserve", "text_tokens", "image_tokens"):
            s[name] = Q_(getattr(self, name), "token")
        return s

    @output(equation="window - output_reserve", unit="token")
    def input_ceiling(self) -> pint.Quantity:
        """Positions left for the input."""
        return Q_(self.window - self.output_reserve, "token")

    @output(equation="input_ceiling - text_tokens", unit="token")
    def headroom(self) -> pint.Quantity:
        """Positions left after the text alone (negative: the text alone overflows the input ceiling)."""
        return Q_(self.window - self.output_reserve - self.text_tokens, "token")

    @output(equation="text_tokens + image_tokens + output_reserve", unit="token")
    def total_demand(self) -> pint.Quantity:
        """Positions the whole request needs, the reserved reply included."""
        return Q_(self.text_tokens + self.image_tokens + self.output_reserve, "token")

    @output(equation="total_demand - window", unit="token")
    def excess(self) -> pint.Quantity:
        """Positions over the window (negative: room to spare)."""
        return Q_(self.text_tokens + self.image_tokens + self.output_reserve - self.window, "token")

    @output(equation="total_demand <= window", returns="bool")
    def admitted(self) -> bool:
        """Whether the request fits."""
        return self.text_tokens + self.image_tokens <= self.window - self.output_reserve

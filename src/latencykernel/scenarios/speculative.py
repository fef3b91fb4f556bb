"""Speculative decoding: a draft proposes tokens, the target verifies them in one step."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import pint

from latencykernel.errors import ScenarioInputError
from latencykernel.scenarios.base import InputDoc, Scenario
from latencykernel.scenarios.metadata import output
from latencykernel.scenarios.units import as_quantity, count, fraction, magnitude_in, quantity

__all__ = ["SpeculativeRoundScenario"]


@dataclass(frozen=True, kw_only=True)
class SpeculativeRoundScenario(Scenario):
    """A draft proposes ``draft_length`` tokens; the target verifies them in one step."""

    acceptance: float
    draft_length: int
    verify_time: pint.Quantity
    draft_time: pint.Quantity | None = None
    draft_step: pint.Quantity | None = None

    family: ClassVar[str] = "speculative"
    mlsysim_type: ClassVar[str | None] = "SpeculativeRoundScenario"
    summary: ClassVar[str] = (
        "One speculative round: K draft tokens, one verification step, and the expected tokens it keeps "
        "when each draft token is accepted independently with probability α."
    )
    equation: ClassVar[str] = "E[tokens] = (1 − α^(K+1)) / (1 − α); t_token = (t_draft + t_verify) / E[tokens]"
    assumptions: ClassVar[tuple[str, ...]] = (
        "each draft token is accepted independently with the same probability α",
        "verifying K+1 positions costs one target step",
    )
    excludes: ClassVar[tuple[str, ...]] = (
        "rejection sampling overhead",
        "KV cache rollback",
        "batching with other requests",
    )
    inputs_doc: ClassVar[tuple[InputDoc, ...]] = (
        InputDoc("acceptance", "float in [0, 1]", "probability α a draft token is accepted"),
        InputDoc("draft_length", "int ≥ 1", "draft tokens K per round"),
        InputDoc("verify_time", "Quantity [time]", "one target step"),
        InputDoc("draft_time", "Quantity [time] | None", "the whole draft's time (or give draft_step)"),
        InputDoc("draft_step", "Quantity [time] | None", "one draft token's time"),
    )

    examples: ClassVar[tuple[str, ...]] = (
        "from latencykernel.scenarios import Scenarios",
        "s = Scenarios.Gpt2XlSpeculativeGpt2SmallH100",
        "round(s.expected_tokens, 4), round(s.tpot_gain, 3)",
    )

    def _validate(self) -> None:
        self._set("acceptance", fraction("acceptance", self.acceptance, low_open=False))
        self._set("draft_length", count("draft_length", self.draft_length, "token", minimum=1))
        self._set("verify_time", as_quantity("verify_time", self.verify_time, "s", positive=True))
        if (self.draft_time is None) == (self.draft_step is None):
            raise ScenarioInputError(
                "give exactly one of draft_time (the whole draft) and draft_step (one draft token)",
                argument="draft_time",
                value=self.draft_time,
            )
        if self.draft_time is not None:
            self._set("draft_time", as_quantity("draft_time", self.draft_time, "s", nonnegative=True))
        if self.draft_step is not None:
            self._set("draft_step", as_quantity("draft_step", self.draft_step, "s", nonnegative=True))

    def _draft_s(self) -> float:
        if self.draft_time is not None:
            return magnitude_in(self.draft_time, "s")
        return self.draft_length * magnitude_in(self.draft_step, "s")  # type: ignore[union-attr]

    def _expected(self) -> float:
        a, k = self.acceptance, self.draft_length
        return float(k + 1) if a == 1.0 else (1.0 - a ** (k + 1)) / (1.0 - a)

    def _round_s(self) -> float:
        return self._draft_s() + magnitude_in(self.verify_time, "s")

    @output(equation="draft_time if draft_time is not None else draft_length * draft_step", unit="ms")
    def draft_cost(self) -> pint.Quantity:
        """Time the draft spends proposing one round."""
        return quantity(self._draft_s(), "s", "ms")

    @output(
        equation="(1 - acceptance ** (draft_length + 1)) / (1 - acceptance)",
        returns="float",
        assumptions=("independent acceptance; the round stops at the first rejection and keeps the target's token",),
    )
    def expected_tokens(self) -> float:
        """Expected tokens one round emits (accepted drafts plus the target's own token)."""
        return self._expected()

    @output(equation="draft_cost + verify_time", unit="ms")
    def round_time(self) -> pint.Quantity:
        """Draft plus verification."""
        return quantity(self._round_s(), "s", "ms")

    @output(equation="round_time / expected_tokens", unit="ms")
    def per_token_time(self) -> pint.Quantity:
        """Time per emitted token."""
        return quantity(self._round_s() / self._expected(), "s", "ms")

    @output(equation="verify_time / per_token_time", returns="float")
    def tpot_gain(self) -> float:
        """Plain decode's time per token over speculative decoding's."""
        return magnitude_in(self.verify_time, "s") * self._expected() / self._round_s()

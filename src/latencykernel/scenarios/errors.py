"""Errors of the scenario library (part of the package's one error tree)."""

from __future__ import annotations

from typing import Any

from latencykernel.errors import LatencyKernelError

__all__ = ["ScenarioInputError", "UnknownPrecisionError", "UnknownScenarioError", "NotApplicableError"]


class ScenarioInputError(LatencyKernelError):
    """A scenario input or method argument is refused: ``argument`` names it, ``value`` is it."""

    def __init__(self, message: str, *, argument: str, value: Any) -> None:
        super().__init__(message)
        self.argument = argument
        self.value = value


class UnknownPrecisionError(ScenarioInputError):
    """A precision key the hardware does not register; ``available`` lists the keys it has."""

    def __init__(self, message: str, *, argument: str, value: Any, available: tuple[str, ...]) -> None:
        super().__init__(message, argument=argument, value=value)
        self.available = available


class UnknownScenarioError(LatencyKernelError):
    """No named scenario, workload or hardware by that name."""


class NotApplicableError(LatencyKernelError):
    """An output that the scenario's inputs do not define (a CNN has no KV cache; an optional
    input was not given). The message says which input would define it."""

"""The scenario library's errors, kept importable here for compatibility; they live in
``latencykernel.errors`` with the rest of the package's one error tree."""

from __future__ import annotations

from latencykernel.errors import (
    NotApplicableError,
    ScenarioInputError,
    UnknownPrecisionError,
    UnknownScenarioError,
)

__all__ = ["ScenarioInputError", "UnknownPrecisionError", "UnknownScenarioError", "NotApplicableError"]

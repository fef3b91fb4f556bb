"""The analytical scenario library: first-principles serving numbers with units, equations
and what they leave out.

    >>> from latencykernel.scenarios import Scenarios
    >>> s = Scenarios.Gpt2XlChatDecodeBatchesH100
    >>> str(s.weights.units)
    'GB'

Every output is declared with its equation, assumptions and exclusions
(``KvDecodeBatchScenario.step_time.equation``); ``latencykernel explain NAME`` prints them
with the values. ``decode_batch(kernel, context_tokens, batch_sizes)`` answers the same
decode questions with the calibrated kernel.
"""

from __future__ import annotations

from latencykernel.errors import (
    NotApplicableError,
    ScenarioInputError,
    UnknownPrecisionError,
    UnknownScenarioError,
)
from latencykernel.scenarios import golden
from latencykernel.scenarios.bridge import CalibratedDecodeBatch, decode_batch, floor_of
from latencykernel.scenarios.hardware import Hardware
from latencykernel.scenarios.kv_decode import KvDecodeBatchScenario, SparseKvDecodeBatchScenario
from latencykernel.scenarios.metadata import Formula, evaluate_equation, output
from latencykernel.scenarios.named import LEFT_OUT, Scenarios
from latencykernel.scenarios.units import Q_, ureg
from latencykernel.scenarios.workloads import KvGeometry, Workload

__all__ = [
    "Scenarios",
    "KvDecodeBatchScenario",
    "SparseKvDecodeBatchScenario",
    "Workload",
    "KvGeometry",
    "Hardware",
    "Formula",
    "output",
    "evaluate_equation",
    "decode_batch",
    "floor_of",
    "CalibratedDecodeBatch",
    "LEFT_OUT",
    "golden",
    "Q_",
    "ureg",
    "ScenarioInputError",
    "UnknownPrecisionError",
    "UnknownScenarioError",
    "NotApplicableError",
]

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

Names are exported lazily (PEP 562): ``import latencykernel.scenarios`` loads no pint and no
scenario family; the first name used loads its module (pint's registry and the families
load with the first scenario, workload, hardware or unit).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    "Scenarios": "latencykernel.scenarios.named",
    "LEFT_OUT": "latencykernel.scenarios.reference_data",
    "KvDecodeBatchScenario": "latencykernel.scenarios.kv_decode",
    "SparseKvDecodeBatchScenario": "latencykernel.scenarios.kv_decode",
    "Workload": "latencykernel.scenarios.workloads",
    "KvGeometry": "latencykernel.scenarios.workloads",
    "Hardware": "latencykernel.scenarios.hardware",
    "Formula": "latencykernel.scenarios.metadata",
    "output": "latencykernel.scenarios.metadata",
    "evaluate_equation": "latencykernel.scenarios.metadata",
    "decode_batch": "latencykernel.scenarios.bridge",
    "floor_of": "latencykernel.scenarios.bridge",
    "CalibratedDecodeBatch": "latencykernel.scenarios.bridge",
    "Q_": "latencykernel.scenarios.units",
    "ureg": "latencykernel.scenarios.units",
    "ScenarioInputError": "latencykernel.errors",
    "UnknownPrecisionError": "latencykernel.errors",
    "UnknownScenarioError": "latencykernel.errors",
    "NotApplicableError": "latencykernel.errors",
}
_SUBMODULES = frozenset({"golden"})

__all__ = [
    "Scenarios",
    "LEFT_OUT",
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
    "Q_",
    "ureg",
    "ScenarioInputError",
    "UnknownPrecisionError",
    "UnknownScenarioError",
    "NotApplicableError",
    "golden",
]


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"latencykernel.scenarios.{name}")
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'latencykernel.scenarios' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


if TYPE_CHECKING:  # for type checkers and IDEs only
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
    from latencykernel.scenarios.named import Scenarios
    from latencykernel.scenarios.reference_data import LEFT_OUT
    from latencykernel.scenarios.units import Q_, ureg
    from latencykernel.scenarios.workloads import KvGeometry, Workload

"""Name resolution shared by every scenario: workload and hardware by name.

* A recorded mlsysim key (``GPT2``, ``H100``) gives the figures mlsysim registers.
* Any other name is looked up in the shared catalog (``gpt2-xl``, ``h100``): the same
  chip and graph documents the kernel prices.
"""

from __future__ import annotations

from typing import Any

from latencykernel.errors import ScenarioInputError
from latencykernel.scenarios.hardware import Hardware
from latencykernel.scenarios.reference_data import RECORDED_HARDWARE, RECORDED_WORKLOADS
from latencykernel.scenarios.workloads import Workload

__all__ = ["workload", "hardware"]


def workload(value: Any, argument: str = "workload") -> Workload:
    """A ``Workload``, or a name: a recorded mlsysim key, else a catalog model."""
    if isinstance(value, Workload):
        return value
    if isinstance(value, str):
        if value in RECORDED_WORKLOADS:
            return RECORDED_WORKLOADS[value]
        return Workload.catalog(value, setting=argument)
    raise ScenarioInputError(f"{argument}={value!r} must be a Workload or a model name", argument=argument, value=value)


def hardware(value: Any, argument: str = "hardware") -> Hardware:
    """A ``Hardware``, or a name: a recorded mlsysim key, else a catalog chip."""
    if isinstance(value, Hardware):
        return value
    if isinstance(value, str):
        if value in RECORDED_HARDWARE:
            return RECORDED_HARDWARE[value]
        return Hardware.catalog(value, setting=argument)
    raise ScenarioInputError(f"{argument}={value!r} must be a Hardware or a chip name", argument=argument, value=value)

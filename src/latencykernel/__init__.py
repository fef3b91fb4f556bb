"""latencykernel: price one forward step of an LLM inference engine, and the GPU memory a
deployment holds, from declared facts (BLIS documents) and calibrated coefficients.

Names are exported lazily (PEP 562), so ``import latencykernel`` stays cheap: pydantic and
the document models load only when a document is first read.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    # documents and inputs
    "Repos": "latencykernel.repos",
    "Inputs": "latencykernel.inputs",
    "open_inputs": "latencykernel.inputs",
    "build_inputs": "latencykernel.inputs",
    "validate_inputs": "latencykernel.inputs",
    # errors
    "LatencyKernelError": "latencykernel.errors",
    "DocumentError": "latencykernel.errors",
    "RefusedError": "latencykernel.errors",
    "ScenarioInputError": "latencykernel.errors",
    "UnknownPrecisionError": "latencykernel.errors",
    "UnknownScenarioError": "latencykernel.errors",
    "NotApplicableError": "latencykernel.errors",
    # batch and result types
    "ReqShape": "latencykernel.batch",
    "Batch": "latencykernel.batch",
    "Resource": "latencykernel.batch",
    "StepEstimate": "latencykernel.batch",
    "DEFAULT_DECODE_THRESHOLD": "latencykernel.batch",
    "MAX_TOKENS": "latencykernel.batch",
    # the step-model contract
    "StepModel": "latencykernel.step_model",
    "EngineLimits": "latencykernel.step_model",
    "check_batch": "latencykernel.limits",
    # ---- kernel exports (latencykernel.kernel, written separately; fail until it exists) ----
    "open": "latencykernel.kernel",
    "open_pool": "latencykernel.kernel",
    "new": "latencykernel.kernel",
    "build": "latencykernel.kernel",
    "Kernel": "latencykernel.kernel",
    "MemoryBreakdown": "latencykernel.kernel",
    "CoefficientOrigin": "latencykernel.kernel",
    "Resolution": "latencykernel.kernel",
    "Placement": "latencykernel.kernel",
    "KERNEL_ASSUMPTION_SET": "latencykernel.kernel",
    "StepTimes": "latencykernel.kernel.vector",
    "ENGINE_BEHAVIOUR_VERSION": "latencykernel.resolve.settings",
    "ENGINE_BEHAVIOUR_COMMIT": "latencykernel.resolve.settings",
    # ---- end of kernel exports ----
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'latencykernel' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public names only: the exports and ``__version__`` (not this module's own helpers
    such as ``importlib``, ``Any`` or ``TYPE_CHECKING``, nor submodules already imported)."""
    return sorted([*_EXPORTS, "__version__"])


if TYPE_CHECKING:  # for type checkers and IDEs only
    from latencykernel.batch import DEFAULT_DECODE_THRESHOLD, MAX_TOKENS, Batch, ReqShape, Resource, StepEstimate
    from latencykernel.errors import (
        DocumentError,
        LatencyKernelError,
        NotApplicableError,
        RefusedError,
        ScenarioInputError,
        UnknownPrecisionError,
        UnknownScenarioError,
    )
    from latencykernel.inputs import Inputs, build_inputs, open_inputs, validate_inputs
    from latencykernel.kernel import (
        KERNEL_ASSUMPTION_SET,
        CoefficientOrigin,
        Kernel,
        MemoryBreakdown,
        Placement,
        Resolution,
        build,
        new,
        open,
        open_pool,
    )
    from latencykernel.kernel.vector import StepTimes
    from latencykernel.limits import check_batch
    from latencykernel.repos import Repos
    from latencykernel.step_model import EngineLimits, StepModel

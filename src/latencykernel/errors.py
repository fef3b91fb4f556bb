"""Every error this package raises, as one tree.

    LatencyKernelError (ValueError)   anything this package refuses to do with its input
    ├── DocumentError                 a document cannot be read: missing file, bad YAML,
    │                                 unknown or misspelled key, wrong type, out-of-range value
    ├── RefusedError                  the documents are well formed, but the deployment is one
    │                                 the engine would not start, one the kernel cannot price
    │                                 truthfully, or one missing a coefficient it needs
    ├── ScenarioInputError            a scenario-library input or argument is refused
    │   └── UnknownPrecisionError     a precision key the hardware does not register
    ├── UnknownScenarioError          no named scenario, workload or hardware by that name
    └── NotApplicableError            a scenario output its inputs do not define

Messages are plain sentences that name the setting by its YAML key, its value and what
would be accepted. Errors of the libraries underneath (pydantic, PyYAML, OSError) are
translated into these in ``documents/yaml_loader.py`` and ``documents/validation.py`` and
never escape raw.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "LatencyKernelError",
    "DocumentError",
    "RefusedError",
    "ScenarioInputError",
    "UnknownPrecisionError",
    "UnknownScenarioError",
    "NotApplicableError",
]


class LatencyKernelError(ValueError):
    """Base of every error raised by latencykernel."""


class DocumentError(LatencyKernelError):
    """A document (scenario, graph, chip, fabric, storage, coefficient set) cannot be loaded.

    ``file`` is the path read (or ``"<memory>"`` for documents built in code), ``key`` the
    dotted key path inside it (``"pools[0].engine.cache_dtype"``), ``value`` the offending
    value (``None`` when the key is missing).
    """

    def __init__(self, message: str, *, file: str = "", key: str = "", value: Any = None) -> None:
        super().__init__(message)
        self.file = file
        self.key = key
        self.value = value


class RefusedError(LatencyKernelError):
    """The kernel will not be built for this deployment.

    ``setting`` is the YAML key at fault (``"parallel.pp"``, ``"engine.cache_dtype"``, or a
    coefficient name for a missing coefficient) and ``value`` its value.
    """

    def __init__(self, message: str, *, setting: str, value: Any) -> None:
        super().__init__(message)
        self.setting = setting
        self.value = value


class ScenarioInputError(LatencyKernelError):
    """A scenario-library input or method argument is refused: ``argument`` names it, ``value`` is it."""

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

"""Engine-specific host coefficients for points measured on an engine other than vLLM.

A measurement states its engine (``Point.engine``); the kernel prices vLLM. Where the
registry holds an engine-specific coefficient set (``ENGINE_SETS``), the step model a point
is priced with keeps every step price and replaces only the per-request host time before a
first token (``admission_overhead``) with that set's entries for the deployment's chip. The
set is applied here, on the measured engine, rather than named by the scenario files, whose
coefficient lists the Go guide pins.
"""

from __future__ import annotations

from typing import Any

from latencykernel.documents import load_coefficient_set
from latencykernel.errors import LatencyKernelError

__all__ = ["ENGINE_SETS", "EngineHost", "engine_step_model"]

# engine label -> coefficient set (registry/coefficients/<name>.yaml)
ENGINE_SETS = {"sglang": "cost-model-host-overheads-sglang"}
_NS = 1e-9


class EngineHost:
    """A step model with another engine's admission: every other attribute is the wrapped
    model's (``StepModel`` contract kept; seconds)."""

    def __init__(self, model: Any, per_request_us: float, per_token_us: float, engine: str) -> None:
        self._model = model
        self._per_request_us = per_request_us
        self._per_token_us = per_token_us
        self.engine = engine

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)

    def admission_overhead(self, prompt_tokens: int) -> float:
        """Host seconds before a request of ``prompt_tokens`` is first scheduled, by the
        engine's own coefficients (whole nanoseconds, as the kernel rounds)."""
        if prompt_tokens <= 0:
            return 0.0
        return int((self._per_request_us + self._per_token_us * prompt_tokens) * 1e3) * _NS


def _entry(path: Any, name: str, chip: str) -> float | None:
    found = None
    for key, e in load_coefficient_set(path).entries():
        hw = e.scope.hardware
        if key == name and (hw is None or chip.lower() in {h.lower() for h in hw}):
            found = float(e.value)
    return found


def engine_step_model(model: Any, engine: str, repos: Any = None) -> Any:
    """``model`` with ``engine``'s admission when the registry has a set for it, else itself."""
    name = ENGINE_SETS.get(engine.lower())
    if not name:
        return model
    from latencykernel.repos import Repos

    r = repos or Repos.default()
    path = r.coefficient_path(name)
    chip = str(getattr(model, "chip", ""))
    per_req = _entry(path, "host_admission_per_request", chip)
    if per_req is None:
        raise LatencyKernelError(f"coefficient set {name!r} has no host_admission_per_request for hardware {chip!r}")
    per_tok = _entry(path, "host_admission_per_token", chip)
    if per_tok is None:  # the vLLM set's per-token term, recovered from the model itself
        per_tok = (model.admission_overhead(1001) - model.admission_overhead(1)) / 1000 * 1e6
    return EngineHost(model, per_req, per_tok, engine.lower())

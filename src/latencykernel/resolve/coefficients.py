"""Coefficient scoping: which registry entries apply to this deployment.

An entry applies when every scope dimension it states lists the deployment's value
(hardware and model compared without case); unstated dimensions admit anything. The
``engine`` dimension compares the scenario's ``engine`` (unstated: vllm), so an
engine-specific set listed after the generic one replaces its entries on that engine only. Sets are
read in scenario order and entries in file order; the last applicable entry of a name wins.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from latencykernel.errors import RefusedError

__all__ = ["DeploymentScope", "Resolved", "Coefficients", "resolve_coefficients"]


@dataclass(frozen=True)
class DeploymentScope:
    hardware: str
    model: str
    tp: int
    ep: int
    nodes_spanned: int
    engine: str = "vllm"


@dataclass(frozen=True)
class Resolved:
    """One registry value in force for this deployment."""

    name: str
    value: float
    set: str
    method: str
    scope: str  # "hardware: h200", "model: x" or "unscoped"


def _applies(scope: Any, d: DeploymentScope) -> bool:
    hw = getattr(scope, "hardware", None)
    if hw is not None and d.hardware.lower() not in {h.lower() for h in hw}:
        return False
    models = getattr(scope, "model", None)
    if models is not None and d.model.lower() not in {m.lower() for m in models}:
        return False
    for dim, val in (("tp", d.tp), ("ep", d.ep), ("nodes_spanned", d.nodes_spanned)):
        listed = getattr(scope, dim, None)
        if listed is not None and val not in listed:
            return False
    # KNOWN DIVERGENCE D11: an engine-scoped entry needs the scenario to state that engine;
    # one that states none (the Go guide's SGLang deployment) is priced with vLLM's entries.
    engines = getattr(scope, "engine", None)
    return engines is None or d.engine in engines


def _scope_label(scope: Any, d: DeploymentScope) -> str:
    """The scope dimension that admitted the entry, naming the deployment's own value
    (the Go kernel names the first listed value, which misleads for shared entries)."""
    hw = getattr(scope, "hardware", None)
    engine = f"; engine: {d.engine}" if getattr(scope, "engine", None) else ""
    if hw:
        others = len(hw) - 1
        return f"hardware: {d.hardware}" + (f" (and {others} more)" if others else "") + engine
    if engine:
        return engine[2:]
    models = getattr(scope, "model", None)
    if models:
        others = len(models) - 1
        return f"model: {d.model}" + (f" (and {others} more)" if others else "")
    return "unscoped"


_COLLECTIVE = re.compile(r"^collective_(floor|peak_rate|transition_rate)_([a-z_]+?)_fp16_(\d+)rank_([a-z0-9_]+)$")


class Coefficients:
    """The registry values in force, by name."""

    def __init__(self, values: dict[str, Resolved]) -> None:
        self._values = values
        widths: dict[tuple[str, str], dict[int, set[str]]] = {}
        for name in values:
            m = _COLLECTIVE.match(name)
            if m:
                param, op, n, chip = m.groups()
                widths.setdefault((op, chip), {}).setdefault(int(n), set()).add(param)
        self._measured_widths = {
            key: sorted(n for n, params in by_n.items() if len(params) == 3) for key, by_n in widths.items()
        }

    def __contains__(self, name: str) -> bool:
        return name in self._values

    def get(self, name: str) -> float | None:
        r = self._values.get(name)
        return None if r is None else r.value

    def names(self) -> list[str]:
        return sorted(self._values)

    def origins(self) -> list[Resolved]:
        """Every value in force, sorted by name."""
        return [self._values[n] for n in sorted(self._values)]

    def require(self, name: str, needed_for: str) -> float:
        """A value the kernel cannot price without; refuses when absent."""
        r = self._values.get(name)
        if r is None:
            raise RefusedError(
                f"{needed_for} needs the coefficient {name}, which no listed coefficient set "
                f"provides for this deployment; add it to a set the scenario lists ({self.near(name)})",
                setting="coefficients",
                value=name,
            )
        return r.value

    def near(self, name: str) -> str:
        """A short description of the values in force that resemble ``name``."""
        import difflib

        close = difflib.get_close_matches(name, self._values, n=6, cutoff=0.6)
        stem = name.rsplit("_", 1)[0]
        close += [n for n in self.names() if n.startswith(stem) and n not in close][: 6 - len(close)]
        listed = f"close names in force: {', '.join(close)}" if close else "no close name is in force"
        return f"{listed}; {len(self._values)} values in force in all"

    def measured_widths(self, op: str, chip_key: str) -> list[int]:
        """Rank widths with all three collective parameters for (op, chip)."""
        return self._measured_widths.get((op, chip_key), [])


def resolve_coefficients(sets: Iterable[tuple[str, Iterable[tuple[str, Any]]]], scope: DeploymentScope) -> Coefficients:
    """Apply the scope to ``(set name, [(entry name, entry)])`` in scenario order."""
    values: dict[str, Resolved] = {}
    set_names: list[str] = []
    for set_name, entries in sets:
        set_names.append(set_name)
        for name, entry in entries:
            if _applies(entry.scope, scope):
                values[name] = Resolved(
                    name, float(entry.value), set_name, entry.method, _scope_label(entry.scope, scope)
                )
    if not values:
        raise RefusedError(
            f"no coefficient in the listed sets ({', '.join(set_names)}) applies to hardware "
            f"{scope.hardware!r}, model {scope.model!r}, tp {scope.tp}, ep {scope.ep}; list sets "
            f"that cover this chip",
            setting="coefficients",
            value=set_names,
        )
    return Coefficients(values)

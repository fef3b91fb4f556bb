"""Latency targets: ``{"tpot": 0.05, "ttft_p99": 2.0}``.

A key is a metric (``ttft``, ``tpot``, ``itl``, ``e2el``) optionally followed by a statistic
(``_mean``, ``_median``, ``_p90``, ``_p95``, ``_p99``); a bare metric means its mean, as
``vllm bench serve --goodput`` reads a bare metric. A value is seconds when it is a number
(``0.05``), or a string with a unit (``"50ms"``, ``"2s"``, ``"1500us"``); a string without a
unit (``"50"``) is refused (``latencykernel.durations.parse_seconds``, the parser the CLI
uses too). A target is met when the figure is at most the limit.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from latencykernel.durations import parse_seconds
from latencykernel.errors import LatencyKernelError

__all__ = ["Target", "Slo", "parse_slo", "parse_seconds", "METRICS", "STATISTICS"]

METRICS = ("ttft", "tpot", "itl", "e2el")
STATISTICS = ("mean", "median", "p90", "p95", "p99")


@dataclass(frozen=True, slots=True)
class Target:
    """One limit: ``metric`` at ``statistic`` must be at most ``limit_s`` seconds."""

    metric: str
    statistic: str
    limit_s: float

    @property
    def key(self) -> str:
        """The figure's name in a candidate row, e.g. ``ttft_p99_s``."""
        return f"{self.metric}_{self.statistic}_s"

    def __str__(self) -> str:
        return f"{self.metric} {self.statistic} <= {self.limit_s * 1e3:g} ms"


@dataclass(frozen=True, slots=True)
class Slo:
    """Every target a deployment must meet (empty: every deployment meets it)."""

    targets: tuple[Target, ...] = ()

    def misses(self, figures: Mapping[str, float]) -> tuple[str, ...]:
        """The targets ``figures`` fail (keys as ``Target.key``); a missing or NaN figure fails."""
        out = []
        for t in self.targets:
            v = figures.get(t.key)
            if v is None or not v <= t.limit_s:
                out.append(str(t))
        return tuple(out)

    def as_dict(self) -> dict[str, float]:
        return {f"{t.metric}_{t.statistic}": t.limit_s for t in self.targets}


def parse_slo(slo: Mapping[str, Any] | Slo | None) -> Slo:
    """An ``Slo`` from a mapping of ``metric[_statistic]`` to a limit (see the module docstring)."""
    if slo is None:
        return Slo()
    if isinstance(slo, Slo):
        return slo
    if not isinstance(slo, Mapping):
        raise LatencyKernelError(f"slo: expected a mapping like {{'tpot': 0.05, 'ttft_p99': 2.0}}, got {slo!r}")
    targets = []
    for key, value in slo.items():
        metric, _, stat = str(key).partition("_")
        stat = stat or "mean"
        if metric not in METRICS or stat not in STATISTICS:
            raise LatencyKernelError(
                f"slo: {key!r} is not a target; use a metric ({', '.join(METRICS)}) optionally followed by "
                f"_{'/_'.join(STATISTICS)}, e.g. 'ttft_p99'"
            )
        targets.append(Target(metric, stat, parse_seconds(value, f"slo.{key}")))
    keys = [(t.metric, t.statistic) for t in targets]
    if len(set(keys)) != len(keys):
        raise LatencyKernelError(f"slo: a target is given twice ({', '.join(map(str, slo))})")
    return Slo(tuple(sorted(targets, key=lambda t: (METRICS.index(t.metric), STATISTICS.index(t.statistic)))))

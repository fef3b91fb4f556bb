"""What a search returns: candidates (deployment × load point), refusals grouped by reason,
the Pareto fronts, the best deployment, and the run's provenance."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from latencykernel.search.evaluate import LoadPoint
from latencykernel.search.space import Deployment

__all__ = ["Candidate", "Refusal", "RefusalGroup", "SearchResult", "Sizing", "pareto", "group_refusals"]


@dataclass(frozen=True)
class Candidate:
    """One deployment at one load point.

    figures:      ``ttft|tpot|itl|e2el`` × ``mean|median|p90|p95|p99`` (``_s``, seconds),
                  ``request_throughput_per_s``, ``output_tokens_per_s`` (whole deployment),
                  ``tokens_per_s_per_gpu``, ``tokens_per_s_per_user`` (1 / mean TPOT)
    cost:         ``usd_per_gpu_hour``, ``cost_per_hour_usd``, ``gpu_hours_per_mtok``,
                  ``usd_per_mtok`` (None when the price table has no entry for the chip)
    meets_slo:    every target met and the run not saturated; ``misses`` names the failures
    provenance:   which figures rest on what: ``latency`` and ``throughput`` list the assumed
                  values (``Kernel.evidence()``) the step prices behind them rest on, ``cost``
                  the price table entry's source and date; ``evidenced`` is (values resting on
                  evidence, all values) of the deployment's kernels; ``assumptions`` the
                  (name, value, reason) defaults the simulation took (``ServingResult.assumptions``)
    """

    index: int
    load_index: int
    deployment: Deployment
    load: LoadPoint
    figures: Mapping[str, float]
    cost: Mapping[str, float | None]
    meets_slo: bool
    misses: tuple[str, ...]
    saturated: bool
    provenance: Mapping[str, Any]

    @property
    def gpus(self) -> int:
        return self.deployment.gpus

    def __getitem__(self, key: str) -> Any:
        if key in self.figures:
            return self.figures[key]
        return self.cost[key]

    def as_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "deployment": self.deployment.as_dict(),
            "load": {
                "isl": self.load.isl,
                "osl": self.load.osl,
                "concurrency": self.load.concurrency,
                "request_rate": self.load.request_rate,
                "num_prompts": self.load.num_prompts,
            },
            "gpus": self.gpus,
            "figures": dict(self.figures),
            "cost": dict(self.cost),
            "meets_slo": self.meets_slo,
            "misses": list(self.misses),
            "saturated": self.saturated,
            "provenance": {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.provenance.items()},
        }


@dataclass(frozen=True)
class Refusal:
    """A deployment that would not start (``load`` None), or a load point it cannot take."""

    deployment: Deployment
    load: LoadPoint | None
    setting: str
    reason: str


@dataclass(frozen=True)
class RefusalGroup:
    """Refusals with the same setting and the same reason up to its numbers (``pattern``,
    numbers shown as ``#``); ``example`` is the first one's full message."""

    setting: str
    pattern: str
    example: str
    count: int
    deployments: tuple[int, ...]


@dataclass(frozen=True)
class Sizing:
    """The answer to "fewest GPUs for a request rate": ``replicas`` copies of ``deployment``
    (``gpus`` in all), each at ``request_rate / replicas``; ``figures`` are one replica's at that
    share (latencies) with throughputs scaled to the whole; ``provenance`` as a
    ``Candidate``'s, its ``assumptions`` those of the simulation at that share."""

    deployment: Deployment
    replicas: int
    gpus: int
    request_rate: float
    figures: Mapping[str, float]
    cost: Mapping[str, float | None]
    provenance: Mapping[str, Any]


@dataclass(frozen=True)
class SearchResult:
    """Everything a search found; ``candidates`` in space order then load order."""

    candidates: tuple[Candidate, ...]
    refusals: tuple[Refusal, ...]
    refused: tuple[RefusalGroup, ...]
    front: tuple[Candidate, ...]
    front_ttft: tuple[Candidate, ...]
    best: Candidate | None
    deployments: int
    provenance: Mapping[str, Any]
    sizing: tuple[Sizing, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-able data; ``front``, ``front_ttft`` and ``best`` are positions in
        ``candidates``."""
        at = {id(c): i for i, c in enumerate(self.candidates)}
        return {
            "deployments": self.deployments,
            "built": self.deployments - sum(1 for r in self.refusals if r.load is None),
            "candidates": [c.as_dict() for c in self.candidates],
            "refused": [
                {"setting": g.setting, "pattern": g.pattern, "example": g.example, "count": g.count}
                for g in self.refused
            ],
            "front": [at[id(c)] for c in self.front],
            "front_ttft": [at[id(c)] for c in self.front_ttft],
            "best": at[id(self.best)] if self.best is not None else None,
            "sizing": [
                {
                    "deployment": s.deployment.as_dict(),
                    "replicas": s.replicas,
                    "gpus": s.gpus,
                    "request_rate": s.request_rate,
                    "figures": dict(s.figures),
                    "cost": dict(s.cost),
                    "provenance": {k: (list(v) if isinstance(v, tuple) else v) for k, v in s.provenance.items()},
                }
                for s in self.sizing
            ],
            "provenance": dict(self.provenance),
        }


_NUMBER = re.compile(r"(?<![A-Za-z_])\d+(?:\.\d+)?")


def group_refusals(refusals: Iterable[Refusal]) -> tuple[RefusalGroup, ...]:
    """Refusals grouped by (setting, reason with its numbers as ``#``), largest group first,
    then in order of first appearance."""
    groups: dict[tuple[str, str], list[Refusal]] = {}
    for r in refusals:
        groups.setdefault((r.setting, _NUMBER.sub("#", r.reason)), []).append(r)
    out = [
        RefusalGroup(s, p, rs[0].reason, len(rs), tuple(dict.fromkeys(x.deployment.index for x in rs)))
        for (s, p), rs in groups.items()
    ]
    order = {k: i for i, k in enumerate(groups)}
    out.sort(key=lambda g: (-g.count, order[(g.setting, g.pattern)]))
    return tuple(out)


def pareto(
    items: Sequence[Candidate], x: Callable[[Candidate], float], y: Callable[[Candidate], float]
) -> tuple[Candidate, ...]:
    """The candidates no other beats on both ``x`` and ``y`` (both maximised), ordered by ``x``
    descending; of points with equal (x, y) the first in ``items`` is kept."""
    ranked = sorted(range(len(items)), key=lambda i: (-x(items[i]), -y(items[i]), i))
    out: list[Candidate] = []
    best_y = float("-inf")
    for i in ranked:
        yi = y(items[i])
        if yi > best_y:
            out.append(items[i])
            best_y = yi
    return tuple(out)

"""Score predictions against measured points: per point, per sweep (shape and level), and
summaries by chip, engine, model and concurrency band.

Definitions (all errors are ratios minus one; "absolute" is its magnitude):

    point error  e    = predicted / measured − 1
    sweep level  e_L  = the point error at the sweep's anchor (its lowest load)
    shape error  e_S  = (pred(c) / pred(c0)) / (meas(c) / meas(c0)) − 1,  c ≠ c0
    so that (1 + e) = (1 + e_L)(1 + e_S): a point's error splits into the sweep's level
    and the curve's shape. MAPE is the mean absolute point error; shape MAE the mean
    absolute shape error over non-anchor points (the anchor's is 0 by construction).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from latencykernel.errors import LatencyKernelError
from latencykernel.validation.points import Deployment, Point
from latencykernel.validation.predict import Prediction, Predictor

__all__ = [
    "Scored",
    "Summary",
    "Report",
    "score_points",
    "summarise",
    "concurrency_band",
    "BANDS",
]

BANDS = ((1, 4), (5, 16), (17, 64), (65, 256), (257, 1 << 30))


def concurrency_band(c: float) -> str:
    """The band label of a load: 1-4, 5-16, 17-64, 65-256, 257+ (request rates: 'rate')."""
    for lo, hi in BANDS:
        if lo <= c <= hi:
            return f"{lo}+" if hi >= 1 << 30 else f"{lo}-{hi}"
    return "rate"


@dataclass(slots=True)
class Scored:
    """One point with its prediction and errors (``None`` where one side is missing)."""

    point: Point
    prediction: Prediction | None
    error: str = ""  # why it was not priced
    engine: str = ""
    chip: str = ""
    model: str = ""
    errors: dict[str, float] = field(default_factory=dict)  # "tpot mean" -> point error
    shape: dict[str, float] = field(default_factory=dict)  # "tpot mean" -> shape error (non-anchor)
    level: dict[str, float] = field(default_factory=dict)  # "tpot mean" -> its sweep's level error
    anchor: bool = False

    @property
    def band(self) -> str:
        return concurrency_band(self.point.load) if self.point.concurrency is not None else "rate"


@dataclass(frozen=True, slots=True)
class Summary:
    """Errors of one group: count, mean absolute, median absolute, worst absolute, signed mean."""

    n: int
    mae: float
    median: float
    worst: float
    signed: float

    @classmethod
    def of(cls, xs: Sequence[float]) -> Summary:
        if not xs:
            raise LatencyKernelError("cannot summarise an empty group")
        a = [abs(x) for x in xs]
        return cls(len(xs), statistics.fmean(a), statistics.median(a), max(a), statistics.fmean(xs))


@dataclass(slots=True)
class Report:
    scored: list[Scored]
    method: str

    def priced(self) -> list[Scored]:
        return [s for s in self.scored if s.prediction is not None]

    def unpriced(self) -> list[Scored]:
        return [s for s in self.scored if s.prediction is None]


def _labels(model: Any, point: Point) -> tuple[str, str, str]:
    chip = point.chip or str(getattr(model, "chip", "") or "")
    name = point.model or str(getattr(model, "model", "") or "")
    engine = point.engine or "vllm"
    return engine, chip, name


def score_points(
    points: Iterable[Point],
    predictor: Predictor,
    open_model: Callable[[Deployment], Any],
    method: str = "",
) -> Report:
    """Price every point (opening each deployment once) and compute its errors."""
    models: dict[str, Any] = {}
    failures: dict[str, str] = {}
    scored: list[Scored] = []
    methods: set[str] = set()
    for p in points:
        key = p.deployment.key()
        if key not in models and key not in failures:
            try:
                models[key] = open_model(p.deployment)
            except LatencyKernelError as e:
                failures[key] = str(e)
        if key in failures:
            scored.append(Scored(p, None, error=failures[key], engine=p.engine or "vllm", chip=p.chip, model=p.model))
            continue
        m = models[key]
        engine, chip, name = _labels(m, p)
        try:
            pred = predictor(m, p)
        except LatencyKernelError as e:
            scored.append(Scored(p, None, error=str(e), engine=engine, chip=chip, model=name))
            continue
        methods.add(pred.method)
        s = Scored(p, pred, engine=engine, chip=chip, model=name)
        for metric in ("ttft", "tpot", "itl"):
            for st in ("mean", "median", "p99"):
                meas = getattr(p, metric).get(st)
                pr = getattr(pred, metric).get(st)
                if meas is not None and pr is not None:
                    s.errors[f"{metric} {st}"] = pr / meas - 1.0
        scored.append(s)
    _sweeps(scored)
    return Report(scored, method or "; ".join(sorted(methods)))


def _sweeps(scored: list[Scored]) -> None:
    groups: dict[str, list[Scored]] = defaultdict(list)
    for s in scored:
        if s.prediction is not None:
            groups[s.point.sweep].append(s)
    for members in groups.values():
        members.sort(key=lambda s: s.point.load)
        a = members[0]
        a.anchor = True
        for key, e0 in a.errors.items():
            for s in members:
                e = s.errors.get(key)
                if e is None:
                    continue
                s.level[key] = e0
                if s is not a:
                    s.shape[key] = (1.0 + e) / (1.0 + e0) - 1.0


def summarise(
    scored: Sequence[Scored], key: str, kind: str = "point", by: Sequence[str] = ("chip", "engine", "model", "band")
) -> list[tuple[str, Summary]]:
    """Summary rows ("all" first, then one per value of each grouping) of one error kind
    ("point", "shape" or "level") for one metric key such as "tpot mean".

    The level rows count each sweep once (its anchor), so a long sweep does not weigh more."""
    rows: dict[str, list[float]] = defaultdict(list)
    for s in scored:
        src = {"point": s.errors, "shape": s.shape, "level": s.level if s.anchor else {}}[kind]
        if key not in src:
            continue
        v = src[key]
        rows["all"].append(v)
        for g in by:
            rows[f"{g} {getattr(s, g)}"].append(v)
    order = sorted(rows, key=lambda k: (k != "all", k))
    return [(k, Summary.of(rows[k])) for k in order]

"""Validate predictions against measured serving runs (``latencykernel validate``).

``read_measurements`` reads the supported formats into ``Point``s (vLLM's metric
definitions), ``validate`` prices each with the chosen predictor and scores it:
per point, per sweep (shape over the lowest-load point, and level) and summarised by chip,
engine, model and concurrency band.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from latencykernel.validation.points import Deployment, Point, Stat
from latencykernel.validation.predict import (
    PREDICTOR,
    Prediction,
    Predictor,
    closed_form_prediction,
    serving_prediction,
)
from latencykernel.validation.readers import detect, read_measurements, read_text
from latencykernel.validation.score import Report, Scored, Summary, concurrency_band, score_points, summarise

__all__ = [
    "Deployment",
    "Point",
    "Stat",
    "Prediction",
    "Predictor",
    "PREDICTOR",
    "closed_form_prediction",
    "serving_prediction",
    "detect",
    "read_measurements",
    "read_text",
    "Report",
    "Scored",
    "Summary",
    "concurrency_band",
    "score_points",
    "summarise",
    "open_deployment",
    "validate",
]


def open_deployment(dep: Deployment, repos: Any = None) -> Any:
    """The step model of a deployment: ``latencykernel.open`` on its scenario (its first
    pool's widths replaced by ``dep.parallel`` and its engine settings by ``dep.settings``,
    then built as a file is: ``new`` re-validates and refuses what vLLM would not start),
    else ``latencykernel.build`` on its arguments."""
    from latencykernel.inputs import open_inputs
    from latencykernel.kernel import build, new, open

    if dep.scenario and (dep.parallel or dep.settings):
        inputs = open_inputs(dep.scenario, repos)
        pool = inputs.deployment.pools[inputs.pool]
        for k, v in dep.parallel:
            setattr(pool.parallel, k, v)
        for k, v in dep.settings:
            setattr(pool.engine, k, list(v) if isinstance(v, tuple) else v)
        return new(inputs)
    if dep.scenario:
        return open(dep.scenario, repos)
    args = dict(dep.build)
    model, hardware = args.pop("model"), args.pop("hardware")
    return build(str(model), str(hardware), **args)


def validate(
    paths: Sequence[str | Path] | None = None,
    *,
    points: Sequence[Point] | None = None,
    deployment: Deployment | None = None,
    predictor: Predictor | None = None,
    repos: Any = None,
) -> Report:
    """Read (or take) measured points, price each and score them."""
    pts = list(points or []) + (read_measurements(paths, deployment) if paths else [])
    pred = predictor or PREDICTOR()
    # Each point is priced with its deployment exactly as opened: an engine's own
    # coefficients (e.g. SGLang's admission) come from the scenario's `engine`, as they do for
    # `latencykernel serve`.
    return score_points(pts, pred, lambda d: open_deployment(d, repos))

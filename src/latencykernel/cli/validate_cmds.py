"""``latencykernel validate``: score predictions against measured serving runs."""

from __future__ import annotations

from pathlib import Path

import typer

from latencykernel.cli import app
from latencykernel.cli.common import CatalogDir, Json, RegistryDir, ScenariosDir, print_json, repos_from

_MEASUREMENTS = typer.Argument(
    ..., help="Measurement files: native CSV/JSON, vllm bench serve JSON, AIPerf or GuideLLM exports."
)
_BUILD = typer.Option(
    [], "--build", help="Build argument KEY=VALUE (model, hardware, tp, ...), instead of --scenario; repeatable."
)


@app.command("validate")
def validate_cmd(
    measurements: list[Path] = _MEASUREMENTS,
    scenario: str | None = typer.Option(
        None, "--scenario", help="Deployment for points whose file names none (a deployment in the file wins)."
    ),
    build: list[str] = _BUILD,
    points: bool = typer.Option(False, "--points", help="Print every point, not only the summaries."),
    as_json: bool = Json,
    scenarios_dir: Path | None = ScenariosDir,
    catalog: Path | None = CatalogDir,
    registry: Path | None = RegistryDir,
) -> None:
    """Score the price against measured serving runs: per point, per sweep, by group.

    Per-point error, per-sweep shape and level error, and summaries by chip, engine,
    model and concurrency band (signed and absolute).

    \b
    Examples:
      latencykernel validate measurements.csv
      latencykernel validate vllm-bench-result.json --json
    """
    from latencykernel.errors import LatencyKernelError
    from latencykernel.validation import Deployment, validate
    from latencykernel.validation.readers import _build_value
    from latencykernel.validation.tables import headline, point_table, report_json, summary_table

    dep = None
    if build:
        args = []
        for item in build:
            if "=" not in item:
                raise LatencyKernelError(f"--build takes KEY=VALUE, got {item!r}")
            k, v = item.split("=", 1)
            args.append((k.strip(), _build_value(k.strip(), v)))
        dep = Deployment(build=tuple(sorted(args)))
    elif scenario:
        dep = Deployment(scenario=scenario)
    rep = validate(measurements, deployment=dep, repos=repos_from(scenarios_dir, catalog, registry))
    if not rep.priced():  # a score over nothing must not pass silently (in CI, say)
        first = rep.unpriced()[0].error if rep.unpriced() else "the files hold no measured point"
        raise LatencyKernelError(f"no point could be priced ({len(rep.scored)} read): {first}")
    if as_json:
        print_json(report_json(rep))
        return
    typer.echo(f"method: {rep.method or 'none (no point priced)'}")
    typer.echo(f"points {len(rep.scored)}, priced {len(rep.priced())}")
    for s in rep.unpriced():
        typer.echo(f"not priced: {s.point.sweep} at {s.point.load:g}: {s.error}")
    typer.echo(headline(rep.scored))
    typer.echo("")
    if points:
        typer.echo(point_table(rep.scored))
    for key in ("tpot mean", "tpot median", "tpot p99", "itl mean", "ttft mean", "ttft median", "ttft p99"):
        for kind, title in (("point", "error"), ("shape", "shape error"), ("level", "sweep level error")):
            if any(
                key in (s.errors if kind == "point" else s.shape if kind == "shape" else s.level) for s in rep.scored
            ):
                typer.echo(summary_table(rep.scored, key, kind, f"{key.upper()} {title}"))

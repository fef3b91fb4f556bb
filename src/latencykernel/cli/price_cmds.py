"""``latencykernel price``: one step over a batch of decodes (and optionally a prefill)."""

from __future__ import annotations

from pathlib import Path

import typer

from latencykernel.batch import DEFAULT_DECODE_THRESHOLD
from latencykernel.cli import app
from latencykernel.cli.common import CatalogDir, Json, RegistryDir, ScenariosDir, console, open_kernel, print_json


@app.command("price")
def price_cmd(
    scenario: str = typer.Argument(..., help="Scenario path, relative to the scenarios directory or a file."),
    requests: int = typer.Option(32, "--requests", min=0, help="Decoding requests in the batch."),
    context: int = typer.Option(4096, "--context", min=1, help="Tokens of context each decode reads."),
    prefill: int = typer.Option(0, "--prefill", min=0, help="Add one prefill of this many new tokens."),
    decode_threshold: int = typer.Option(
        DEFAULT_DECODE_THRESHOLD,
        "--decode-threshold",
        min=0,
        help="A request scheduling at most this many tokens is a decode.",
    ),
    pool: int = typer.Option(0, "--pool", help="Pool index of a disaggregated deployment."),
    as_json: bool = Json,
    scenarios_dir: Path | None = ScenariosDir,
    catalog: Path | None = CatalogDir,
    registry: Path | None = RegistryDir,
) -> None:
    """Price one step: overlap and no-overlap, the bottleneck, and a row per resource."""
    from latencykernel.batch import RESOURCES, Batch

    k = open_kernel(scenario, pool, scenarios_dir, catalog, registry)
    scheduled = [1] * requests + ([prefill] if prefill else [])
    computed = [context - 1] * requests + ([0] if prefill else [])
    e = k.step_time(Batch.from_columns(scheduled, computed, decode_threshold))
    what = f"{requests} decodes at {context:,} tokens of context" + (
        f" + a {prefill:,}-token prefill" if prefill else ""
    )
    if as_json:
        print_json(
            {
                "scenario": k.name,
                "requests": requests,
                "context": context,
                "prefill": prefill,
                "decode_threshold": decode_threshold,
                "overlap_s": e.overlap,
                "no_overlap_s": e.no_overlap,
                "bottleneck": e.bottleneck.value,
                "per_resource_s": {r.value: v for r, v in e.per_resource.items()},
            }
        )
        return
    from rich.table import Table

    c = console()
    c.print(f"[bold]{k.name}[/bold]: {what}")
    c.print(f"between {e.overlap * 1e3:.1f} and {e.no_overlap * 1e3:.1f} ms, bottleneck {e.bottleneck.value}")
    t = Table()
    t.add_column("resource")
    t.add_column("ms", justify="right")
    t.add_column("share", justify="right")
    for r in RESOURCES:
        v = e.per_resource.get(r)
        if v:
            t.add_row(r.value, f"{v * 1e3:.1f}", f"{v / e.no_overlap:.0%}")
    t.add_row("[bold]no overlap[/bold]", f"{e.no_overlap * 1e3:.1f}", "100%")
    t.add_row("overlap", f"{e.overlap * 1e3:.1f}", "")
    c.print(t)

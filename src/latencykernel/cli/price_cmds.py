"""``latencykernel price``: one step over a batch of decodes (and optionally a prefill)."""

from __future__ import annotations

import typer

from latencykernel.batch import DEFAULT_DECODE_THRESHOLD
from latencykernel.cli import app
from latencykernel.cli.common import (
    MAX_TOKENS,
    Context,
    Deployment,
    Json,
    Requests,
    Unchecked,
    check_batch,
    console,
    print_json,
    seconds,
    takes_deployment,
)


@app.command("price")
@takes_deployment
def price_cmd(
    dep: Deployment,
    requests: int = Requests(32),
    context: int = Context(4096),
    prefill: int = typer.Option(0, "--prefill", min=0, max=MAX_TOKENS, help="Add one prefill of this many new tokens."),
    decode_threshold: int = typer.Option(
        DEFAULT_DECODE_THRESHOLD,
        "--decode-threshold",
        min=0,
        max=MAX_TOKENS,
        help="A request scheduling at most this many tokens is a decode.",
    ),
    unchecked: bool = Unchecked,
    as_json: bool = Json,
) -> None:
    """Price one step: overlap and no-overlap, the bottleneck, and a row per resource.

    \b
    Examples:
      latencykernel price aisimulate/deepseek-v3-h200-fp8-sglang-tp8.yaml --requests 32 --context 4096
      latencykernel price --model deepseek-v3 --hardware h200 --tp 8 --requests 32 --prefill 2048 --json
    """
    from latencykernel.batch import RESOURCES, Batch

    if requests == 0 and prefill == 0:
        from latencykernel.cli.common import usage

        raise usage("--requests 0 and no --prefill: the batch is empty; give --requests 1 or more, or --prefill")
    k = dep.kernel()
    scheduled = [1] * requests + ([prefill] if prefill else [])
    computed = [context - 1] * requests + ([0] if prefill else [])
    batch = Batch.from_columns(scheduled, computed, decode_threshold)
    check_batch(k, batch, unchecked)
    e = k.step_time(batch)
    what = f"{requests} decodes at {context:,} tokens of context" + (
        f" + a {prefill:,}-token prefill" if prefill else ""
    )
    if as_json:
        parts = {r.value: seconds(v) for r, v in e.per_resource.items()}
        print_json(
            {
                "scenario": k.name,
                "requests": requests,
                "context": context,
                "prefill": prefill,
                "decode_threshold": decode_threshold,
                "overlap_s": seconds(e.overlap),
                "no_overlap_s": seconds(sum(parts.values())),  # the sum of the rows, to the nanosecond
                "bottleneck": e.bottleneck.value,
                "per_resource_s": parts,
                "checked": not unchecked,
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
    if unchecked:
        c.print("[dim]unchecked: the engine's limits (Kernel.check) were not applied[/dim]")

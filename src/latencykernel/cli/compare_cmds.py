"""``latencykernel compare A B``: two deployments side by side."""

from __future__ import annotations

from pathlib import Path

import typer

from latencykernel.cli import app
from latencykernel.cli.common import (
    MAX_REQUESTS,
    MAX_TOKENS,
    CatalogDir,
    Context,
    Json,
    Output,
    RegistryDir,
    Requests,
    ScenariosDir,
    Unchecked,
    check_batch,
    console,
    parse_deployment,
    parse_seconds,
    print_json,
    saved,
)


@app.command("compare")
def compare_cmd(
    a: str = typer.Argument(..., metavar="A", help="A scenario file, or MODEL@HARDWARE[:tp=8,dp=2,...]."),
    b: str = typer.Argument(..., metavar="B", help="A scenario file, or MODEL@HARDWARE[:tp=8,dp=2,...]."),
    requests: int = Requests(32, least=1),
    context: int = Context(4096),
    tpot: str | None = typer.Option(
        None, "--tpot", help="Also compare the largest batch meeting this TPOT, with a unit (50ms)."
    ),
    decode_threshold: int = typer.Option(8, "--decode-threshold", min=0, max=MAX_TOKENS, help="Decode threshold."),
    concurrency: int | None = typer.Option(
        None, "--concurrency", min=1, max=MAX_REQUESTS, help="Also simulate serving both at this concurrency."
    ),
    isl: int = typer.Option(
        1024, "--isl", min=1, max=MAX_TOKENS, help="Prompt tokens per request (with --concurrency)."
    ),
    osl: int = typer.Option(
        256, "--osl", min=1, max=MAX_TOKENS, help="Output tokens per request (with --concurrency)."
    ),
    output: Path | None = Output,
    unchecked: bool = Unchecked,
    as_json: bool = Json,
    scenarios_dir: Path | None = ScenariosDir,
    catalog: Path | None = CatalogDir,
    registry: Path | None = RegistryDir,
) -> None:
    """Two deployments side by side: step per resource, memory, capacity.

    Both price the same batch (--requests decodes against --context tokens); with
    --concurrency both are also served (TTFT, TPOT, throughput per GPU). Rows that differ by
    more than 5 % are highlighted, with B's figure over A's.

    \b
    Examples:
      latencykernel compare aisimulate/deepseek-v3-h200-fp8-sglang-tp8.yaml aisimulate/deepseek-v3-b200-fp8-sglang-tp8.yaml
      latencykernel compare llama-3.1-8b-instruct@h100 llama-3.1-8b-instruct@h100:tp=2 --tpot 20ms -o compare.png
      latencykernel compare llama-3.1-8b-instruct@h100 llama-3.1-8b-instruct@h200 --concurrency 32 --isl 1024 --osl 256
    """
    from latencykernel.batch import Batch
    from latencykernel.charts.compare import compare_deployments, differs

    roots = {"scenarios_dir": scenarios_dir, "catalog": catalog, "registry": registry}
    da, db = parse_deployment(a, "A", **roots), parse_deployment(b, "B", **roots)
    ka, kb = da.kernel(), db.kernel()
    for k in (ka, kb):
        check_batch(k, Batch.decode(requests, context, decode_threshold), unchecked)
    tpot_s = parse_seconds(tpot, "--tpot") if tpot is not None else None
    c = compare_deployments(
        ka,
        kb,
        requests,
        context,
        labels=(da.label(), db.label()),
        tpot_s=tpot_s,
        decode_threshold=decode_threshold,
        serve=None if concurrency is None else {"isl": isl, "osl": osl, "concurrency": concurrency},
    )
    if output is not None:
        from latencykernel.charts.compare import compare_figure

        saved(compare_figure(c), output, as_json)
    if as_json:
        print_json(c.as_dict())
        return
    from rich.table import Table

    out = console()
    out.print(f"[bold]A[/bold] {c.a.label}\n[bold]B[/bold] {c.b.label}")
    t = Table(title=f"{requests} decodes at {context:,} tokens of context, per rank")
    for col in ("", "A", "B", "B / A"):
        t.add_column(col, justify="left" if not col else "right")

    def show(name: str, v: float) -> str:
        if name.endswith("(s)"):
            return f"{v * 1e3:.2f} ms"
        if "bytes" in name and "per token" not in name:
            return f"{v / (1 << 30):.1f} GiB"
        return f"{v:,.0f}" if float(v).is_integer() or abs(v) >= 100 else f"{v:,.3g}"

    for name, x, y in c.rows:
        label = name.replace(" (s)", "").replace(" (bytes)", "")
        ratio = f"{y / x:.2f}×" if x else "—"
        if differs(x, y):
            ratio = f"[bold]{ratio}[/bold]"
            label = f"[bold]{label}[/bold]"
        t.add_row(label, show(name, x), show(name, y), ratio)
    t.add_row(
        "bottleneck", c.a.bottleneck, c.b.bottleneck, "" if c.a.bottleneck == c.b.bottleneck else "[bold]differs[/bold]"
    )
    out.print(t)

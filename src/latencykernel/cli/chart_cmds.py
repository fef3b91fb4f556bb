"""``latencykernel anatomy`` and ``latencykernel capacity``: a deployment's step and capacity
as tables, JSON or charts (``-o chart.png``)."""

from __future__ import annotations

from pathlib import Path

import typer

from latencykernel.cli import app
from latencykernel.cli.common import (
    MAX_REQUESTS,
    MAX_TOKENS,
    Context,
    Deployment,
    Json,
    Output,
    Unchecked,
    check_batch,
    console,
    parse_range,
    parse_seconds,
    print_json,
    progress,
    saved,
    takes_deployment,
)


@app.command("anatomy")
@takes_deployment
def anatomy_cmd(
    dep: Deployment,
    context: int = Context(4096),
    requests: str = typer.Option("1..256", "--requests", help="Batch sizes: N..M (powers of two between), or N,M,..."),
    decode_threshold: int = typer.Option(8, "--decode-threshold", min=0, max=MAX_TOKENS, help="Decode threshold."),
    output: Path | None = Output,
    unchecked: bool = Unchecked,
    as_json: bool = Json,
) -> None:
    """Step time per resource against batch size, with the bottleneck marked.

    Each batch is that many requests decoding one token against --context tokens; the chart
    stacks the time per resource and draws the overlap and no-overlap lines.

    \b
    Examples:
      latencykernel anatomy aisimulate/deepseek-v3-h200-fp8-sglang-tp8.yaml --context 4096 --requests 1..256 -o anatomy.png
      latencykernel anatomy --model llama-3.1-8b-instruct --hardware h100 --requests 1,8,64 --json
    """
    from latencykernel.batch import Batch
    from latencykernel.charts.anatomy import anatomy_sweep

    sizes = parse_range(requests, "--requests", lo=1, hi=MAX_REQUESTS)
    k = dep.kernel()
    for b in sizes:
        check_batch(k, Batch.decode(b, context, decode_threshold), unchecked)
    sweep = anatomy_sweep(k, context, sizes, decode_threshold=decode_threshold, label=k.name)
    if output is not None:
        from latencykernel.charts.anatomy import anatomy_figure

        saved(anatomy_figure(sweep), output, as_json)
    if as_json:
        print_json(sweep.as_dict())
        return
    from rich.table import Table

    names = sweep.resources()
    t = Table(title=f"{k.name}: decodes at {context:,} tokens of context (ms)")
    for col in ("batch", *names, "no overlap", "overlap", "bottleneck", "tokens/s"):
        t.add_column(col, justify="right")
    for row in sweep.as_dict()["steps"]:
        per = row["per_resource_s"]
        t.add_row(
            f"{row['batch_size']:,}",
            *(f"{per.get(n, 0.0) * 1e3:.2f}" for n in names),
            f"{row['no_overlap_s'] * 1e3:.2f}",
            f"{row['overlap_s'] * 1e3:.2f}",
            row["bottleneck"],
            f"{row['tokens_per_s']:,.0f}",
        )
    console().print(t)


@app.command("capacity")
@takes_deployment
def capacity_cmd(
    dep: Deployment,
    tpot: str = typer.Option("50ms", "--tpot", help="Time-per-output-token target, with a unit: 50ms, 0.05s, 200us."),
    context: str = typer.Option(
        "1024..32768", "--context", help="Context lengths: N..M (powers of two between), or N,M,..."
    ),
    output: Path | None = Output,
    as_json: bool = Json,
) -> None:
    """Largest batch that fits KV memory and meets a TPOT target, against context.

    From the kernel (the KV budget as vLLM allocates it, the calibrated decode step) with
    the first-principles floor of the same deployment beside it (datasheet memory and
    bandwidth), and the engine's max_num_seqs cap.

    \b
    Examples:
      latencykernel capacity aisimulate/deepseek-v3-h200-fp8-sglang-tp8.yaml --tpot 50ms -o capacity.png
      latencykernel capacity --model llama-3.1-8b-instruct --hardware h100 --tpot 20ms --context 1024,8192 --json
    """
    from latencykernel.charts.capacity import capacity_table

    tpot_s = parse_seconds(tpot, "--tpot")
    contexts = parse_range(context, "--context", lo=1, hi=MAX_TOKENS)
    k = dep.kernel()
    limit = k.limits().max_model_len
    if limit and contexts[-1] > limit:
        from latencykernel.cli.common import usage

        raise usage(f"--context {contexts[-1]:,} is beyond this deployment's max_model_len {limit:,}")
    table = capacity_table(k, tpot_s, contexts, label=k.name, each=lambda xs: progress(xs, "capacity", quiet=as_json))
    if output is not None:
        from latencykernel.charts.capacity import capacity_figure

        saved(capacity_figure(table), output, as_json)
    if as_json:
        print_json(table.as_dict())
        return
    from rich.table import Table

    def n(v: int) -> str:
        return f"{v:,}" if v > 0 else "does not fit"

    t = Table(title=f"{k.name}: largest batch at TPOT ≤ {tpot_s * 1e3:g} ms (max_num_seqs {table.max_num_seqs})")
    for col in ("context", "fits KV", "meets TPOT", "servable", "floor: fits", "floor: meets TPOT"):
        t.add_column(col, justify="right")
    for r in table.as_dict()["rows"]:
        t.add_row(
            f"{r['context_tokens']:,}",
            n(r["kv_max_batch"]),
            n(r["tpot_max_batch"]),
            n(r["servable_batch"]),
            n(r["floor_kv_max_batch"]),
            n(r["floor_tpot_max_batch"]),
        )
    console().print(t)

"""``latencykernel scenarios`` and ``latencykernel show``."""

from __future__ import annotations

from pathlib import Path

import typer

from latencykernel.cli import app
from latencykernel.cli.common import (
    CatalogDir,
    Deployment,
    Json,
    RegistryDir,
    ScenariosDir,
    console,
    print_json,
    repos_from,
    takes_deployment,
)


@app.command("scenarios")
def scenarios_cmd(
    scenarios_dir: Path | None = ScenariosDir,
    catalog: Path | None = CatalogDir,
    registry: Path | None = RegistryDir,
) -> None:
    """List the scenario files (embedded ones by default).

    \b
    Example:
      latencykernel scenarios | grep h200
    """
    repos = repos_from(scenarios_dir, catalog, registry)
    for name in repos.list_scenarios():
        typer.echo(name)


@app.command("show")
@takes_deployment
def show_cmd(dep: Deployment, as_json: bool = Json) -> None:
    """The deployment as resolved: model, chip, widths, dtypes, layer kinds, parameters.

    \b
    Examples:
      latencykernel show aisimulate/deepseek-v3-h200-fp8-sglang-tp8.yaml
      latencykernel show --model path/to/config.json --hardware h100 --tp 2 --json
    """
    from latencykernel.derive.counts import active_parameter_count, parameter_count

    k = dep.kernel()
    pool = dep.pool
    inp = k._inputs
    res = k.resolved()
    info = k.info
    kinds = [(lp.id, lp.count) for lp in k.constants.plan.layers]
    data = {
        "scenario": k.name,
        "model": k.model,
        "chip": k.chip,
        "pool": {"index": pool, "role": inp.deployment.pools[pool].role},
        "widths": {
            "tp": res.tensor_parallel,
            "dp": res.data_parallel,
            "ep": res.expert_parallel,
            "dcp": res.decode_context_parallel,
            "pcp": res.prefill_context_parallel,
        },
        "all_reduce_backend": res.all_reduce_backend,
        "weights": {
            "checkpoint": inp.model.global_.weight_dtype,
            "served": info["served_dtype"],
            "compute": info["compute_suffix"],
        },
        "kv_cache": {"bytes_per_token_per_rank": k.kv_bytes_per_token(), "block_size": k.constants.block_size},
        "cudagraph_mode": info["cudagraph_mode"],
        "layer_kinds": [{"id": i, "count": n} for i, n in kinds],
        "layers": k.constants.plan.total_layers,
        "parameters": parameter_count(inp.model),
        "active_parameters": active_parameter_count(inp.model),
        "overrides": [o.__dict__ for o in res.overrides],
    }
    if as_json:
        print_json(data)
        return
    from rich.table import Table

    c = console()
    c.print(f"[bold]{k.name}[/bold]: {k.model} on {k.chip}, pool {pool} ({data['pool']['role']})")
    w = data["widths"]
    c.print(
        f"widths: tp {w['tp']}, dp {w['dp']}, ep {w['ep']}, dcp {w['dcp']}, pcp {w['pcp']}; "
        f"all-reduce {res.all_reduce_backend}"
    )
    wt = data["weights"]
    c.print(f"weights: {wt['checkpoint']} checkpoint served as {wt['served']}, computed on the {wt['compute']} peak")
    c.print(f"KV cache: {k.kv_bytes_per_token():,.0f} bytes per token per rank, blocks of {k.constants.block_size}")
    c.print(f"CUDA graphs: {info['cudagraph_mode']}")
    c.print(f"parameters: {data['parameters'] / 1e9:,.2f} B ({data['active_parameters'] / 1e9:,.2f} B active)")
    t = Table(title=f"{data['layers']} layers by kind")
    t.add_column("layer kind")
    t.add_column("count", justify="right")
    for i, n in kinds:
        t.add_row(i, str(n))
    c.print(t)
    for o in res.overrides:
        c.print(f"override: {o.field} {o.requested} -> {o.resolved} ({o.reason})")

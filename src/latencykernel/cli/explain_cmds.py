"""``latencykernel explain``: a scenario's equations, assumptions and exclusions with its values.

latencykernel explain --list
latencykernel explain Gpt2XlChatDecodeBatchesH100          # floor, and the calibrated kernel beside it
latencykernel explain examples/llama-3.1-8b-instruct-h100-bf16-tp1.yaml --context 8192
                                                            # a deployment: calibrated answer and its floor
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from latencykernel.cli import app
from latencykernel.cli.common import CatalogDir, Json, RegistryDir, ScenariosDir, console, print_json, repos_from


def _batches(text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:
        return [int(x) for x in text.replace(" ", "").split(",") if x]
    except ValueError:
        raise typer.BadParameter(f"--batch {text!r} must be a comma-separated list of ints") from None


@app.command("explain")
def explain_cmd(
    name: str | None = typer.Argument(
        None, help="A named scenario (see --list), or a deployment scenario file whose decode batches to explain."
    ),
    list_: bool = typer.Option(False, "--list", help="List the named scenarios and the mlsysim ones left out."),
    context: int | None = typer.Option(None, "--context", min=1, help="Tokens per sequence (decode batches)."),
    batch: str | None = typer.Option(None, "--batch", help="Batch sizes, comma-separated (decode batches)."),
    calibrated: bool = typer.Option(
        True, "--calibrated/--no-calibrated", help="Show the calibrated kernel beside a decode floor."
    ),
    tp: int = typer.Option(1, "--tp", min=1, help="Tensor parallelism of the calibrated counterpart."),
    pool: int = typer.Option(0, "--pool", help="Pool index of a disaggregated deployment."),
    as_json: bool = Json,
    scenarios_dir: Path | None = ScenariosDir,
    catalog: Path | None = CatalogDir,
    registry: Path | None = RegistryDir,
) -> None:
    """Print a scenario's equations, assumptions and exclusions with its values."""
    from latencykernel.scenarios import explain as ex
    from latencykernel.scenarios.named import LEFT_OUT, NAMED, Scenarios, keys

    if list_ or name is None:
        _list(as_json)
        return
    known = set(keys())
    if name in known:
        scenario: Any = Scenarios.get(name)
        if context is not None or batch is not None:
            changes: dict[str, Any] = {}
            if context is not None:
                changes["context_tokens"] = context
            if batch is not None:
                changes["batch_sizes"] = _batches(batch)
            if not all(hasattr(scenario, k) for k in changes):
                raise typer.BadParameter(f"{name} has no context_tokens/batch_sizes inputs")
            scenario = scenario.variant(**changes)
        cal, why = ex.calibrated_for(scenario, tp) if calibrated else (None, "")
        _show(ex.report(scenario), ex.side_by_side(cal) if cal is not None else None, why, as_json)
        return
    if name in LEFT_OUT:
        type_name, reason = LEFT_OUT[name]
        from latencykernel.errors import UnknownScenarioError

        raise UnknownScenarioError(f"mlsysim's {name} ({type_name}) is left out: {reason}")
    # A deployment: the calibrated kernel's decode batches and the same deployment's floor.
    from latencykernel.errors import DocumentError
    from latencykernel.kernel import open_pool
    from latencykernel.repos import _listing  # the package's one "did you mean" list
    from latencykernel.scenarios.bridge import decode_batch

    repos = repos_from(scenarios_dir, catalog, registry)
    try:
        repos.scenario_path(name)
    except DocumentError as e:  # only a name that is no file is re-worded; errors inside a file pass unchanged
        from latencykernel.errors import UnknownScenarioError

        raise UnknownScenarioError(
            f"{name!r} is neither a named scenario nor a deployment scenario file. Named scenarios "
            f"(closest first): {_listing(name, list(NAMED), limit=5)}. {e}"
        ) from None
    kernel = open_pool(name, repos, pool)
    cal = decode_batch(kernel, context or 4096, _batches(batch) or [1, 8, 32, 64, 128])
    _show(ex.report(cal), ex.side_by_side(cal), "", as_json, floor=ex.report(cal.floor))


def _list(as_json: bool) -> None:
    from latencykernel.scenarios.named import LEFT_OUT, Scenarios, keys

    shipped = [(k, type(Scenarios.get(k)).__name__, Scenarios.get(k).title) for k in keys()]
    if as_json:
        print_json(
            {
                "named": [dict(zip(("key", "class", "title"), r)) for r in shipped],
                "left_out": [{"key": k, "mlsysim_type": t, "reason": r} for k, (t, r) in LEFT_OUT.items()],
            }
        )
        return
    from rich.table import Table

    c = console()
    t = Table(title=f"named scenarios ({len(shipped)})")
    for col in ("key", "class", "title"):
        t.add_column(col)
    for row in shipped:
        t.add_row(*row)
    c.print(t)
    c.print(f"[bold]left out[/bold] ({len(LEFT_OUT)} mlsysim serving scenarios; `latencykernel explain KEY` says why)")
    c.print(", ".join(LEFT_OUT))


def _show(rep: Any, comparison: Any, why: str, as_json: bool, floor: Any = None) -> None:
    if as_json:
        print_json(
            {
                "scenario": rep.as_dict(),
                "floor": floor.as_dict() if floor is not None else None,
                "calibrated": comparison.as_dict() if comparison is not None else None,
                "calibrated_unavailable": why or None,
            }
        )
        return
    from rich.table import Table

    c = console()
    for r in (rep, floor) if floor is not None else (rep,):
        head = f"[bold]{r.title}[/bold]" + (f"  ({r.key})" if r.key else "")
        c.print(head)
        c.print(f"{r.cls}" + (f", mlsysim's {r.mlsysim_type}" if r.mlsysim_type else "") + f": {r.summary}")
        if r.description:
            c.print(r.description)
        c.print(f"[bold]equation[/bold]  {r.equation}")
        for label, items in (("assumes", r.assumptions), ("leaves out", r.excludes), ("figures", r.sources)):
            if items:
                c.print(f"[bold]{label}[/bold]")
                for item in items:
                    c.print(f"  - {item}")
        c.print("[bold]inputs[/bold]  " + "; ".join(f"{k} = {v}" for k, v in r.inputs))
        t = Table(show_lines=False)
        for col, just in (("output", "left"), ("at", "right"), ("value", "right"), ("equation", "left")):
            t.add_column(col, justify=just)  # type: ignore[arg-type]
        for row in r.rows:
            value = row.value if row.error is None else f"[dim]{row.error.split(': ', 1)[-1]}[/dim]"
            t.add_row(row.name, row.args, value, row.equation)
        c.print(t)
        notes = [(f.name, f.assumptions, f.excludes) for f in r.formulas if f.assumptions or f.excludes]
        if notes:
            c.print("[bold]per output[/bold]")
            for n, a, e in notes:
                parts = ([f"assumes {'; '.join(a)}"] if a else []) + ([f"leaves out {'; '.join(e)}"] if e else [])
                c.print(f"  {n}: " + " | ".join(parts))
        c.print()
    if comparison is not None:
        c.print(
            f"[bold]bandwidth floor beside the calibrated kernel[/bold]: {comparison.deployment}, "
            f"{comparison.context_tokens:,}-token contexts"
        )
        for s in comparison.floor_sources:
            c.print(f"  floor {s}")
        t = Table()
        for col in ("batch", "floor step", "calibrated step", "× floor", "bottleneck"):
            t.add_column(col, justify="right")
        for row in comparison.step:
            t.add_row(*(str(x) for x in row))
        c.print(t)
        t = Table()
        for col in ("TPOT", "floor max batch", "calibrated max batch"):
            t.add_column(col, justify="right")
        for row in comparison.tpot:
            t.add_row(*(str(x) for x in row))
        t.add_row("memory", str(comparison.memory[0]), str(comparison.memory[1]))
        c.print(t)
    elif why:
        c.print(f"[dim]no calibrated counterpart: {why}[/dim]")

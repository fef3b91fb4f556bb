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
from latencykernel.cli.common import (
    MAX_TOKENS,
    CatalogDir,
    Json,
    RegistryDir,
    ScenariosDir,
    console,
    print_json,
    repos_from,
    usage,
)


def _batches(text: str | None) -> list[int] | None:
    if text is None:
        return None
    from latencykernel.cli.common import MAX_REQUESTS, parse_ints

    return parse_ints(text, "--batch", lo=1, hi=MAX_REQUESTS)


@app.command("explain")
def explain_cmd(
    name: str | None = typer.Argument(
        None, help="A named scenario (see --list), or a deployment scenario file whose decode batches to explain."
    ),
    list_: bool = typer.Option(False, "--list", help="List the named scenarios and the mlsysim ones left out."),
    context: int | None = typer.Option(
        None, "--context", min=1, max=MAX_TOKENS, help="Tokens per sequence (decode batches)."
    ),
    batch: str | None = typer.Option(None, "--batch", help="Batch sizes, comma-separated (decode batches)."),
    calibrated: bool = typer.Option(
        True, "--calibrated/--no-calibrated", help="Show the calibrated kernel beside a decode floor."
    ),
    tp: int | None = typer.Option(
        None, "--tp", min=1, max=1 << 16, help="Tensor parallelism of a named decode scenario's calibrated counterpart."
    ),
    pool: int = typer.Option(0, "--pool", help="Pool index of a disaggregated deployment."),
    as_json: bool = Json,
    scenarios_dir: Path | None = ScenariosDir,
    catalog: Path | None = CatalogDir,
    registry: Path | None = RegistryDir,
) -> None:
    """Print a scenario's equations, assumptions and exclusions with its values.

    \b
    Examples:
      latencykernel explain --list
      latencykernel explain Gpt2XlChatDecodeBatchesH100 --tp 1
      latencykernel explain examples/llama-3.1-8b-instruct-h100-bf16-tp1.yaml --context 8192 --batch 1,64,256
    """
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
        if tp is not None:
            from latencykernel.scenarios.kv_decode import KvDecodeBatchScenario

            if not calibrated:
                raise usage("--tp sets the calibrated counterpart's parallelism, but --no-calibrated turns it off")
            if not isinstance(scenario, KvDecodeBatchScenario):
                raise usage(
                    f"--tp applies to a decode-batch scenario's calibrated counterpart; {name} "
                    f"({type(scenario).__name__}) has none, so --tp would change nothing"
                )
        cal, why = ex.calibrated_for(scenario, tp or 1) if calibrated else (None, "")
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
    if tp is not None:
        raise usage(
            f"--tp applies to a named decode scenario; {name!r} is a deployment file that states its own "
            f"widths (for another width, use `latencykernel explain` on a file, or --model/--hardware/--tp "
            f"with `latencykernel capacity`)"
        )
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
    t.add_column("key", no_wrap=True, overflow="fold")  # a key is what the user types: never cut
    t.add_column("class", overflow="fold")
    t.add_column("title", overflow="fold")
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
            if row.error is None and row.name.startswith("max_batch") and row.value.lstrip().startswith("-"):
                value = f"{row.value} (does not fit)"
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
        if comparison.floor_peak_precision:
            c.print(f"  floor computes at the chip's {comparison.floor_peak_precision} peak")
        t = Table()
        for col in ("batch", "floor step", "calibrated step", "× floor", "bottleneck"):
            t.add_column(col, justify="right")
        for row in comparison.step:
            t.add_row(
                str(row.batch),
                f"{row.floor_step_s * 1e3:.4g} ms",
                f"{row.calibrated_step_s * 1e3:.4g} ms",
                "—" if row.over_floor is None else f"{row.over_floor:.2f}",
                row.bottleneck,
            )
        c.print(t)

        def fits(n: int) -> str:
            return f"{n:,}" if n > 0 else "does not fit"

        t = Table()
        for col in ("TPOT", "floor max batch", "calibrated max batch"):
            t.add_column(col, justify="right")
        for tr in comparison.tpot:
            t.add_row(f"{tr.tpot_s * 1e3:g} ms", fits(tr.floor_max_batch), fits(tr.calibrated_max_batch))
        t.add_row("memory", fits(comparison.memory[0]), fits(comparison.memory[1]))
        c.print(t)
    elif why:
        c.print(f"[dim]no calibrated counterpart: {why}[/dim]")

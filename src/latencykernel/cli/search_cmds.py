"""``latencykernel search``: the deployments of a space that meet an SLO, the front, the best."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from latencykernel.cli import app
from latencykernel.cli.common import Json, console, parse_ints, parse_names, parse_reals, parse_seconds, print_json
from latencykernel.errors import LatencyKernelError

SLO_OPT = typer.Option([], "--slo", help="More targets as KEY=VALUE with a unit, e.g. ttft_p99=2s (repeatable).")
SPACE_OPT = typer.Option(None, "--space", help="A space YAML (see docs/search.md).")
PRICES_OPT = typer.Option(None, "--prices", help="A price table YAML over the default.")
OUT_OPT = typer.Option(None, "-o", "--output", help="Save the chart (.png or .svg).")
HTML_OPT = typer.Option(None, "--html", help="Write a self-contained HTML page of the search.")


def _space(
    space_file: Path | None,
    hardware: str | None,
    tp: str | None,
    dp: str | None,
    gpus: str | None,
    expert_parallel: str | None,
) -> dict[str, Any]:
    from latencykernel.search import load_space

    base: dict[str, Any] = {}
    if space_file is not None:
        base = load_space(space_file).model_dump(exclude_unset=True)
    if hardware is not None:
        base["hardware"] = parse_names(hardware, "--hardware")
    for key, text in (("tp", tp), ("dp", dp), ("gpus", gpus)):
        if text is not None:
            base[key] = parse_ints(text, f"--{key}")
    if expert_parallel is not None:
        choice = {"off": [False], "on": [True], "both": [False, True]}.get(expert_parallel)
        if choice is None:
            raise LatencyKernelError(f"--expert-parallel {expert_parallel!r}: use off, on or both")
        base["expert_parallel"] = choice
    if "hardware" not in base:
        raise LatencyKernelError("--hardware: name at least one chip (e.g. h200,b200), or give --space FILE")
    return base


def _targets(tpot: str | None, ttft: str | None, slo: list[str]) -> dict[str, float]:
    """The SLO in seconds, each value read by the CLI's one duration parser (a unit is
    required: ``--tpot 50`` is refused, as in ``capacity`` and ``compare``)."""
    targets: dict[str, float] = {}
    if tpot is not None:
        targets["tpot"] = parse_seconds(tpot, "--tpot")
    if ttft is not None:
        targets["ttft"] = parse_seconds(ttft, "--ttft")
    for item in slo:
        key, sep, value = item.partition("=")
        if not sep:
            raise LatencyKernelError(f"--slo {item!r}: write KEY=VALUE, e.g. ttft_p99=2s")
        targets[key.strip()] = parse_seconds(value.strip(), f"--slo {key.strip()}")
    return targets


def _ms(v: float) -> str:
    return f"{v * 1e3:,.1f}"


def _front_table(result: Any, top: int) -> Any:
    from rich.table import Table

    t = Table(title=f"Pareto front: output tokens/s per GPU against tokens/s per user ({len(result.front)} points)")
    for col in (
        "deployment",
        "load",
        "GPUs",
        "tok/s/GPU",
        "tok/s/user",
        "TTFT p99 ms",
        "TPOT mean ms",
        "$/M tok",
        "SLO",
    ):
        t.add_column(
            col, justify="left" if col in ("deployment", "load", "SLO") else "right", no_wrap=col == "deployment"
        )
    for c in result.front[:top]:
        f = c.figures
        cost = c.cost.get("usd_per_mtok")
        t.add_row(
            c.deployment.label(),
            c.load.label(),
            str(c.gpus),
            f"{f['tokens_per_s_per_gpu']:,.1f}",
            f"{f['tokens_per_s_per_user']:,.1f}",
            _ms(f["ttft_p99_s"]),
            _ms(f["tpot_mean_s"]),
            f"{cost:,.3f}" if cost is not None else "—",
            "[green]meets[/green]" if c.meets_slo else "[red]misses[/red]",
            style="bold" if c is result.best else None,
        )
    return t


def _refused_table(result: Any) -> Any:
    from rich.table import Table

    t = Table(title=f"Refused ({sum(g.count for g in result.refused)})")
    t.add_column("count", justify="right")
    t.add_column("setting")
    t.add_column("reason (first of the group)")
    for g in result.refused:
        t.add_row(str(g.count), g.setting, g.example)
    return t


def _print_notes(con: Any, result: Any) -> None:
    """What the answer rests on that the table does not show: no SLO, chips without a price."""
    note = result.provenance.get("slo_note")
    if note:
        con.print(f"[yellow]{note}[/yellow]")
    for chip, why in result.provenance.get("unpriced", {}).items():
        con.print(f"[yellow]{chip}: {why}[/yellow]")


def _print_assumed(con: Any, result: Any) -> None:
    """The defaults the search took, and those the simulation of its answer took (``--json``
    gives each with its reason, and every candidate's)."""
    taken = [a for a in result.provenance.get("assumptions", ()) if a[0] != "slo"]
    if taken:
        con.print("assumed: " + "; ".join(f"{a[0]} = {a[1]}" for a in taken), markup=False)
    answer = result.best if result.best is not None else (result.sizing[0] if result.sizing else None)
    sim = answer.provenance.get("assumptions", ()) if answer is not None else ()
    if sim:
        pairs = ", ".join(f"{a[0]}={a[1]}" for a in dict((a[0], a) for a in sim).values())
        what = "the best's" if result.best is not None else "the first sizing's"
        con.print(f"{what} simulation assumed: {pairs} (--json: each with its reason)", markup=False)


def _print_sizing(con: Any, result: Any, rate: float, as_json: bool, top: int) -> None:
    from rich.table import Table

    if as_json:
        print_json(json.loads(json.dumps(result.as_dict(), default=str)))
        return
    t = Table(title=f"Fewest GPUs serving {rate:g} requests/s within the SLO")
    for col in ("deployment", "replicas", "GPUs", "TTFT p99 ms", "TPOT mean ms", "$/hour", "$/M tok"):
        t.add_column(col, justify="left" if col == "deployment" else "right", no_wrap=col == "deployment")
    for s in result.sizing[:top]:
        f, cost = s.figures, s.cost
        t.add_row(
            s.deployment.label(),
            str(s.replicas),
            str(s.gpus),
            _ms(f["ttft_p99_s"]),
            _ms(f["tpot_mean_s"]),
            f"{cost['cost_per_hour_usd']:,.2f}" if cost["cost_per_hour_usd"] is not None else "—",
            f"{cost['usd_per_mtok']:,.3f}" if cost["usd_per_mtok"] is not None else "—",
        )
    con.print(t)
    _print_notes(con, result)
    if not result.sizing:
        con.print("[red]no deployment of the space serves that rate within the SLO[/red]")
    _print_assumed(con, result)
    if result.refused:
        con.print(_refused_table(result))


@app.command("search")
def search_cmd(
    model: str = typer.Option(..., "--model", help="Catalog name or Hugging Face id."),
    hardware: str | None = typer.Option(None, "--hardware", help="Chips, comma-separated (e.g. h200,b200)."),
    isl: int = typer.Option(..., "--isl", min=1, help="Prompt tokens per request."),
    osl: int = typer.Option(..., "--osl", min=1, help="Output tokens per request."),
    concurrency: str | None = typer.Option(
        None, "--concurrency", help="Closed-loop concurrencies, comma-separated (default 1,4,16,64,256)."
    ),
    request_rate: str | None = typer.Option(None, "--request-rate", help="Open-loop request rates (req/s) instead."),
    num_prompts: int | None = typer.Option(None, "--num-prompts", min=1, help="Requests per load point."),
    tpot: str | None = typer.Option(None, "--tpot", help="Mean TPOT limit, with a unit: 50ms or 0.05s."),
    ttft: str | None = typer.Option(None, "--ttft", help="Mean TTFT limit, with a unit: 2s or 2000ms."),
    slo: list[str] = SLO_OPT,
    space_file: Path | None = SPACE_OPT,
    tp: str | None = typer.Option(None, "--tp", help="Tensor-parallel widths, comma-separated."),
    dp: str | None = typer.Option(None, "--dp", help="Data-parallel widths, comma-separated."),
    gpus: str | None = typer.Option(None, "--gpus", help="Total GPU counts, comma-separated."),
    expert_parallel: str | None = typer.Option(None, "--expert-parallel", help="off, on or both."),
    prices: Path | None = PRICES_OPT,
    workers: int | None = typer.Option(None, "--workers", min=1, help="Processes (default: every core)."),
    ray: str | None = typer.Option(None, "--ray", help="Run on Ray: 'local' starts one, 'auto' or ADDRESS joins one."),
    out: Path | None = OUT_OPT,
    html_out: Path | None = HTML_OPT,
    top: int = typer.Option(20, "--top", min=1, help="Front rows to show."),
    fewest_gpus: float | None = typer.Option(
        None, "--fewest-gpus", help="Instead: the fewest GPUs serving this many requests/s within the SLO."
    ),
    max_replicas: int = typer.Option(64, "--max-replicas", min=1, help="With --fewest-gpus: replicas to try at most."),
    simulator: str | None = typer.Option(
        None, "--simulator", hidden=True, help="MODULE:FUNCTION simulating one load point (default: serving)."
    ),
    as_json: bool = Json,
) -> None:
    """Find the deployment that meets a latency target at the lowest cost.

    Every deployment of a space, simulated at every load point: the front, the cheapest
    deployment meeting the SLO, and the refused ones with their reasons.

    Example: latencykernel search --model deepseek-v3 --hardware h200,b200 --isl 1024
    --osl 1024 --tpot 50ms --ttft 2s --tp 4,8 --dp 1,2 --expert-parallel both -o front.png
    """
    from latencykernel.search import run

    sp = _space(space_file, hardware, tp, dp, gpus, expert_parallel)
    workload: dict[str, Any] = {"isl": isl, "osl": osl, "num_prompts": num_prompts}
    if request_rate is not None:
        if concurrency is not None:
            raise LatencyKernelError("--concurrency and --request-rate: give one of them")
        workload["request_rate"] = parse_reals(request_rate, "--request-rate")
    else:
        workload["concurrency"] = parse_ints(concurrency or "1,4,16,64,256", "--concurrency")
    targets = _targets(tpot, ttft, slo)
    executor, address = "local", None
    if ray is not None:
        executor = "ray"
        address = None if ray == "local" else ray
        if address is not None:
            from latencykernel.search.executors import check_ray_address

            check_ray_address(address, "--ray")
    for path, what in ((out, "-o"), (html_out, "--html")):
        if path is not None and not path.parent.is_dir():
            raise LatencyKernelError(f"{what} {str(path)!r}: the directory {str(path.parent)!r} does not exist")
    if out is not None and out.suffix.lower() not in (".png", ".svg"):
        raise LatencyKernelError(f"-o {str(out)!r}: a chart is saved as .png or .svg")

    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    con = console()
    with Progress(
        TextColumn("searching"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=con,
        transient=True,
        disable=as_json,
    ) as bar:
        task = bar.add_task("search", total=None)

        def progress(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        common: dict[str, Any] = dict(
            executor=executor,
            workers=workers,
            ray_address=address,
            prices=prices,
            progress=progress,
            simulator=simulator,
        )
        if fewest_gpus is not None:
            from latencykernel.search import fewest_gpus as size

            sized = size(
                model,
                fewest_gpus,
                targets,
                sp,
                isl=isl,
                osl=osl,
                max_replicas=max_replicas,
                num_prompts=num_prompts,
                **common,
            )
        else:
            result = run(model, workload, targets, sp, **common)
    if fewest_gpus is not None:
        _print_sizing(con, sized, fewest_gpus, as_json, top)
        return
    if out is not None:
        from latencykernel.charts.search import search_figure

        fig = search_figure(result)
        try:
            fig.savefig(out, format=out.suffix.lower()[1:], dpi=120)
        except OSError as e:
            raise LatencyKernelError(f"-o {str(out)!r}: cannot be written ({e.strerror or e})") from None
    if html_out is not None:
        from latencykernel.search.report import html_report

        try:
            html_out.write_text(html_report(result), encoding="utf-8")
        except OSError as e:
            raise LatencyKernelError(f"--html {str(html_out)!r}: cannot be written ({e.strerror or e})") from None
    if as_json:
        print_json(json.loads(json.dumps(result.as_dict(), default=str)))
        return
    built = result.deployments - sum(1 for r in result.refusals if r.load is None)
    con.print(
        f"{result.deployments} deployments ({built} built), {len(result.candidates)} candidates; "
        f"engine rules vLLM {result.provenance['engine_behaviour_version']}"
    )
    con.print(_front_table(result, top))
    _print_notes(con, result)
    b = result.best
    if b is None:
        con.print("[red]no deployment meets the SLO[/red]")
    else:
        f = b.figures
        con.print(
            f"best: [bold]{b.deployment.label()}[/bold] at {b.load.label()}: {b.gpus} GPUs, "
            f"${b.cost['usd_per_mtok']:.3f} per million output tokens, {f['tokens_per_s_per_gpu']:,.1f} tok/s/GPU, "
            f"TTFT p99 {_ms(f['ttft_p99_s'])} ms, TPOT mean {_ms(f['tpot_mean_s'])} ms "
            f"(price: {b.provenance['cost']})"
        )
    _print_assumed(con, result)
    if result.refused:
        con.print(_refused_table(result))
    for path in (out, html_out):
        if path is not None:
            con.print(f"wrote {path}")

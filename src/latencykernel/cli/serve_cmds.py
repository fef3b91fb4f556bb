"""``latencykernel serve``: a benchmark run replayed through the deployment's scheduler, printed
in ``vllm bench serve``'s terms."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

import typer

from latencykernel.cli import app
from latencykernel.cli.common import Deployment, Json, console, print_json, saved, takes_deployment
from latencykernel.errors import LatencyKernelError


def _numbers(name: str, text: str, kind: type) -> list[Any]:
    """A comma-separated list of positive numbers (whole ones for ``kind`` int); an empty item
    (``1,,4``) is refused rather than dropped."""
    out = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            raise LatencyKernelError(f"--{name} has an empty item in {text!r}; give a comma-separated list of numbers")
        try:
            v = kind(part)
        except ValueError:
            if kind is int:
                try:
                    float(part)
                except ValueError:
                    pass
                else:
                    raise LatencyKernelError(f"--{name} values must be whole numbers, got {part}") from None
            raise LatencyKernelError(f"--{name} takes a comma-separated list of numbers, got {text!r}") from None
        if not v > 0:
            raise LatencyKernelError(f"--{name} values must be positive, got {part}")
        out.append(v)
    return out


PLOT = typer.Option(
    None, "--plot", help="Save the serving chart (TTFT, TPOT against load; throughput per GPU): .png or .svg."
)


@app.command("serve")
@takes_deployment
def serve_cmd(
    dep: Deployment,
    isl: int = typer.Option(1024, "--isl", min=1, help="Prompt tokens per request."),
    osl: int = typer.Option(1024, "--osl", min=1, help="Output tokens per request."),
    concurrency: str | None = typer.Option(
        None, "--concurrency", help="Closed loop: requests in flight, one or a comma-separated sweep (e.g. 1,4,16,64)."
    ),
    request_rate: str | None = typer.Option(
        None, "--request-rate", help="Open loop: Poisson requests per second, one or a comma-separated sweep."
    ),
    num_prompts: int | None = typer.Option(
        None, "--num-prompts", min=1, help="Requests per run (default 10 x concurrency; 1000 for a request rate)."
    ),
    range_ratio: float = typer.Option(
        0.0, "--random-range-ratio", min=0.0, max=0.999, help="Lengths drawn as vllm bench serve's random dataset."
    ),
    seed: int = typer.Option(0, "--seed", min=0, help="Seed of the length and arrival draws."),
    num_prefill: int = typer.Option(1, "--num-prefill", min=1, help="Disaggregated: prefill engines (the x of xPyD)."),
    num_decode: int = typer.Option(1, "--num-decode", min=1, help="Disaggregated: decode engines (the y of xPyD)."),
    recv_interval: int | None = typer.Option(
        None,
        "--scheduler-recv-interval",
        min=1,
        help="SGLang's --scheduler-recv-interval: new requests taken in every N decode steps (default 1: every step).",
    ),
    mixed_chunk: bool = typer.Option(
        False,
        "--enable-mixed-chunk",
        help="SGLang's --enable-mixed-chunk: prompt chunks ride in the decodes' step (default off: an SGLang "
        "prefill batch runs alone and the decodes wait). SGLang deployments only.",
    ),
    plot: Path | None = PLOT,
    as_json: bool = Json,
) -> None:
    """Simulate serving: TTFT and TPOT at a concurrency or request rate.

    Replays a benchmark client (closed loop at a concurrency, or Poisson at a rate) through
    vLLM v1's scheduler (an SGLang deployment's prefill batches run alone, as SGLang's
    scheduler runs them) on this deployment's step price: TTFT, TPOT, ITL, E2EL and
    throughputs as vllm bench serve reports them. With a sweep, --plot draws them.

    \b
    Examples:
      latencykernel serve aisimulate/deepseek-v3-h200-fp8-sglang-tp8.yaml --isl 1024 --osl 256 --concurrency 1,8,64
      latencykernel serve --model llama-3.1-8b-instruct --hardware h100 --concurrency 1,4,16,64 --plot serving.png
    """
    from latencykernel.serving import ClosedLoop, Poisson, RandomRange

    if (concurrency is None) == (request_rate is None):
        raise LatencyKernelError("give exactly one of --concurrency or --request-rate")
    k = dep.kernel()
    model: Any = k
    if k.deployment().role != "colocated":
        if dep.scenario is None:
            raise LatencyKernelError("a disaggregated deployment is a scenario file with a prefill and a decode pool")
        other = dataclasses.replace(dep, pool=1 - dep.pool if dep.pool in (0, 1) else 0).kernel()
        model = _disaggregated(k, other, num_prefill, num_decode)
    lin: Any = RandomRange(isl, range_ratio) if range_ratio > 0 else isl
    lout: Any = RandomRange(osl, range_ratio) if range_ratio > 0 else osl
    points: list[tuple[str, float, Any]] = []
    if concurrency is not None:
        for c in _numbers("concurrency", concurrency, int):
            points.append(("concurrency", c, ClosedLoop(c, lin, lout, num_prompts)))
    else:
        assert request_rate is not None
        for r in _numbers("request-rate", request_rate, float):
            points.append(("request_rate", r, Poisson(r, lin, lout, num_prompts or 1000)))
    results = []
    c = console()
    for key, value, wl in points:
        engine: dict[str, Any] = {} if recv_interval is None else {"scheduler_recv_interval": recv_interval}
        if mixed_chunk:
            engine["enable_mixed_chunk"] = True
        results.append((key, value, _run(c, model, wl, seed, quiet=as_json, engine=engine)))
    if plot is not None:
        from latencykernel.charts.serving import ServingSweep, serving_figure

        x_name = "concurrency (requests in flight)" if points[0][0] == "concurrency" else "request rate (req/s)"
        sweep = ServingSweep(k.name, tuple(float(v) for _, v, _ in results), tuple(r for _, _, r in results), x_name)
        saved(serving_figure(sweep), plot, as_json)
    if as_json:
        recs = []
        for key, value, res in results:
            rec: dict[str, Any] = {"scenario": k.name, key: value, "isl": isl, "osl": osl}
            rec.update(res.as_vllm_bench())
            rec.update(
                output_throughput_per_gpu=res.output_throughput_per_gpu,
                preemptions=res.preemptions,
                saturated=res.saturated,
                sustained_request_rate=res.sustained_request_rate,
                assumptions=[{"name": n, "value": v, "reason": why} for n, v, why in res.assumptions],
            )
            recs.append(rec)
        print_json(recs)
        return
    _table(c, k.name, isl, osl, results)


def _disaggregated(first: Any, second: Any, x: int, y: int) -> Any:
    """The prefill and decode pools of a disaggregated deployment, KV moved between them by
    the kernel's ``pd_transfer_time`` (prefill on the first nodes, decode on the next)."""
    from latencykernel.kernel import Placement
    from latencykernel.serving import Disaggregated

    pools = [first, second]
    roles = [p.deployment().role for p in pools]
    if sorted(roles) != ["decode", "prefill"]:
        raise LatencyKernelError(f"a disaggregated deployment needs one prefill and one decode pool, got {roles}")
    p, d = (pools[0], pools[1]) if roles[0] == "prefill" else (pools[1], pools[0])
    src, dst = Placement(node=0), Placement(node=int(p.deployment().nodes))
    return Disaggregated(p, d, x, y, transfer_s=lambda tokens: p.pd_transfer_time(tokens, src, dst))


def _run(c: Any, k: Any, wl: Any, seed: int, quiet: bool, engine: dict[str, Any] | None = None) -> Any:
    """One run, with a progress bar once it has taken more than a second."""
    from latencykernel.serving import simulate

    start = time.perf_counter()
    state: dict[str, Any] = {}

    def progress(done: int, total: int) -> None:
        if quiet:
            return
        if "bar" not in state:
            if time.perf_counter() - start < 1.0:
                return
            from rich.progress import Progress

            bar = Progress(console=c, transient=True)
            bar.start()
            state["bar"] = bar
            state["task"] = bar.add_task(wl.describe(), total=total)
        state["bar"].update(state["task"], completed=done)

    try:
        return simulate(k, wl, seed=seed, progress=progress, **(engine or {}))
    finally:
        if "bar" in state:
            state["bar"].stop()


ROWS = [
    ("Successful requests", "completed", "{:,.0f}"),
    ("Benchmark duration (s)", "duration", "{:,.2f}"),
    ("Request throughput (req/s)", "request_throughput", "{:,.2f}"),
    ("Output token throughput (tok/s)", "output_throughput", "{:,.1f}"),
    ("Output token throughput per GPU", "output_throughput_per_gpu", "{:,.1f}"),
    ("Total token throughput (tok/s)", "total_token_throughput", "{:,.1f}"),
] + [
    (f"{stat.capitalize() if stat != 'p99' else 'P99'} {name.upper()} (ms)", f"{stat}_{name}_ms", "{:,.2f}")
    for name in ("ttft", "tpot", "itl", "e2el")
    for stat in ("mean", "median", "p99")
]


def _table(c: Any, name: str, isl: int, osl: int, results: list[tuple[str, float, Any]]) -> None:
    """One column per run, one row per figure, labelled as vllm bench serve's console does."""
    from rich.table import Table

    c.print(f"[bold]{name}[/bold]: {isl:,} prompt / {osl:,} output tokens")
    t = Table()
    key = results[0][0]
    t.add_column("concurrency" if key == "concurrency" else "request rate (req/s)")
    recs = []
    for _, value, r in results:
        t.add_column(f"{value:g}" + (" (saturated)" if r.saturated else ""), justify="right")
        rec = r.as_vllm_bench()
        rec["output_throughput_per_gpu"] = r.output_throughput_per_gpu
        recs.append(rec)
    for label, field, fmt in ROWS:
        t.add_row(label, *[_fmt(fmt, rec[field]) for rec in recs])
    c.print(t)
    c.print("times in ms; TPOT excludes the first token, as vllm bench serve reports it")
    for _, value, r in results:
        if r.saturated:
            c.print(
                f"at {value:g} the queue grows without bound: the deployment sustains "
                f"{r.sustained_request_rate:.2f} req/s; latencies reflect the simulated length only"
            )
        if r.preemptions:
            c.print(f"at {value:g}: {r.preemptions} preemptions (KV cache ran out)")
    _assumptions(c, results)


def _fmt(fmt: str, v: float) -> str:
    """A table figure; one too large for fixed point (a 1e-300 req/s run lasts 1e300 s) in ``:.4g``."""
    return fmt.format(v) if abs(v) < 1e12 else f"{v:.4g}"


def _assumptions(c: Any, results: list[tuple[str, float, Any]]) -> None:
    """What the runs assumed, once per name: one value, or the value at each point when they differ."""
    seen: dict[tuple[str, str], list[str]] = {}
    for _, _, r in results:
        for n, _v, why in r.assumptions:
            seen.setdefault((n, why), [])
    for _, _, r in results:
        here = {(n, why): v for n, v, why in r.assumptions}
        for key, got in seen.items():
            got.append(here.get(key, "-"))
    for (n, why), vals in seen.items():
        if len(set(vals)) == 1:
            c.print(f"assumed {n} = {vals[0]} ({why})")
        else:
            at = ", ".join(f"{v} at {value:g}" for v, (_, value, _) in zip(vals, results))
            c.print(f"assumed {n} = {at} ({why})")

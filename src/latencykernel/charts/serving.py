"""The serving figure: what users see as the load grows.

``serving_sweep(model, isl=..., osl=..., concurrencies=[...])`` runs
``latencykernel.serving.estimate`` at each concurrency and returns a ``ServingSweep`` (or
build one from ``ServingResult``s you already have); ``serving_figure(sweep)`` draws TTFT and
TPOT (median and p99) against concurrency, and output throughput per GPU against median
TPOT, the curve a deployment choice is read from.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from latencykernel.charts.common import figure

__all__ = ["ServingSweep", "serving_sweep", "serving_figure"]

MEDIAN = "#4C72B0"
P99 = "#C44E52"


@dataclass(frozen=True)
class ServingSweep:
    """``ServingResult``s of one deployment at increasing load (``x``: concurrency, or the
    offered request rate for open-loop runs)."""

    deployment: str
    x: tuple[float, ...]
    results: tuple[Any, ...]  # latencykernel.serving.ServingResult
    x_name: str = "concurrency (requests in flight)"

    def as_dict(self) -> dict[str, Any]:
        rows = []
        for x, r in zip(self.x, self.results):
            rows.append(
                {
                    "load": x,
                    "ttft_median_s": r.ttft.median,
                    "ttft_p99_s": r.ttft.p99,
                    "tpot_median_s": r.tpot.median,
                    "tpot_p99_s": r.tpot.p99,
                    "output_tokens_per_s_per_gpu": r.output_throughput_per_gpu,
                    "request_throughput_per_s": r.request_throughput,
                    "completed": r.completed,
                    "saturated": bool(r.saturated),
                }
            )
        return {"deployment": self.deployment, "load": self.x_name, "rows": rows}


def serving_sweep(
    model: Any,
    *,
    isl: Any,
    osl: Any,
    concurrencies: Sequence[int],
    label: str | None = None,
    each: Callable[[Iterable[int]], Iterable[int]] = iter,
    **kw: Any,
) -> ServingSweep:
    """``serving.estimate(model, isl=isl, osl=osl, concurrency=c, **kw)`` for each ``c``."""
    from latencykernel.serving import estimate

    cs = [int(c) for c in concurrencies]
    results = tuple(estimate(model, isl=isl, osl=osl, concurrency=c, **kw) for c in each(cs))
    return ServingSweep(label or repr(model), tuple(float(c) for c in cs), results)


def serving_figure(sweep: ServingSweep, *, title: str | None = None) -> Any:
    """Three panels: TTFT (ms) and TPOT (ms), median and p99, against the load; output
    tokens per second per GPU against median TPOT, each point labelled with its load."""
    fig = figure(13.0, 4.6)
    ax_ttft, ax_tpot, ax_tput = fig.subplots(1, 3)
    xs = list(sweep.x)
    rs = sweep.results
    for ax, name, key in ((ax_ttft, "TTFT", "ttft"), (ax_tpot, "TPOT", "tpot")):
        med = [getattr(r, key).median * 1e3 for r in rs]
        p99 = [getattr(r, key).p99 * 1e3 for r in rs]
        ax.plot(xs, med, color=MEDIAN, marker="o", label=f"{name} median")
        ax.plot(xs, p99, color=P99, marker="o", linestyle="--", label=f"{name} p99")
        if len(xs) > 1 and min(xs) > 0 and max(xs) / min(xs) >= 8:
            ax.set_xscale("log", base=2)
        ax.set_xticks(xs, [f"{x:g}" for x in xs])
        ax.set_xlabel(sweep.x_name)
        ax.set_ylabel(f"{name} (ms)")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="best")
        ax.set_title(f"time {'to first token' if key == 'ttft' else 'per output token'}", fontsize=10)
    tpot = [r.tpot.median * 1e3 for r in rs]
    tput = [r.output_throughput_per_gpu for r in rs]
    ax_tput.plot(tpot, tput, color="#55A868", marker="o", label="output throughput per GPU")
    for x, t, y in zip(xs, tpot, tput):
        ax_tput.annotate(f"{x:g}", (t, y), xytext=(4, -10), textcoords="offset points", fontsize=8)
    ax_tput.set_xlabel("TPOT median (ms)")
    ax_tput.set_ylabel("output tokens/s per GPU")
    ax_tput.set_ylim(bottom=0)
    ax_tput.set_xlim(left=0)
    ax_tput.grid(alpha=0.3)
    ax_tput.set_title("throughput against latency (points: load)", fontsize=10)
    ax_tput.legend(fontsize=8, loc="lower right")
    saturated = [f"{x:g}" for x, r in zip(xs, rs) if getattr(r, "saturated", False)]
    note = f" (saturated at {', '.join(saturated)})" if saturated else ""
    fig.suptitle(title or f"Serving: {sweep.deployment}{note}", fontsize=11)
    return fig

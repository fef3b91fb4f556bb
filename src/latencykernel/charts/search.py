"""The search chart: every candidate, the Pareto fronts, and the best deployment.

Left: output tokens/s per GPU against tokens/s per user (1 / mean TPOT); right: the same
against TTFT (the statistic the front was formed on). Candidates meeting the SLO are drawn
filled, the others hollow; the fronts as lines; the best (cheapest meeting the SLO) as a star.
Takes a ``SearchResult`` (read by attribute only, so this module imports nothing of search).
"""

from __future__ import annotations

from typing import Any

__all__ = ["search_figure"]

CHIP_COLOURS = ("#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B3", "#937860", "#DA8BC3", "#8C8C8C")


def _figure(width_in: float, height_in: float) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width_in, height_in), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def search_figure(result: Any, *, title: str | None = None) -> Any:
    """A two-panel ``Figure`` of ``result``'s candidates and fronts (see the module docstring)."""
    fig = _figure(12.0, 5.0)
    ax_user, ax_ttft = fig.subplots(1, 2)
    ttft_key = str(result.provenance.get("front_ttft_figure", "ttft_mean_s"))
    chips = list(dict.fromkeys(c.deployment.hardware for c in result.candidates))
    colour = {chip: CHIP_COLOURS[i % len(CHIP_COLOURS)] for i, chip in enumerate(chips)}
    steady = [c for c in result.candidates if not c.saturated]
    for ax, yfig, front, ylabel, scale in (
        (ax_user, "tokens_per_s_per_user", result.front, "tokens/s per user (1 / mean TPOT)", 1.0),
        (ax_ttft, ttft_key, result.front_ttft, f"TTFT {ttft_key.split('_')[1]} (ms)", 1e3),
    ):
        for chip in chips:
            mine = [c for c in steady if c.deployment.hardware == chip]
            for ok, marker_face in ((True, colour[chip]), (False, "none")):
                pts = [c for c in mine if c.meets_slo == ok]
                if not pts:
                    continue
                ax.scatter(
                    [c.figures[yfig] * scale for c in pts],
                    [c.figures["tokens_per_s_per_gpu"] for c in pts],
                    s=22,
                    facecolors=marker_face,
                    edgecolors=colour[chip],
                    linewidths=0.9,
                    label=f"{chip} ({'meets SLO' if ok else 'misses SLO'})",
                )
        if front:
            ordered = sorted(front, key=lambda c: c.figures[yfig])
            ax.plot(
                [c.figures[yfig] * scale for c in ordered],
                [c.figures["tokens_per_s_per_gpu"] for c in ordered],
                color="black",
                linewidth=1.0,
                drawstyle="steps-post" if yfig == ttft_key else "default",
                label="Pareto front",
            )
        b = result.best
        if b is not None:
            ax.scatter(
                [b.figures[yfig] * scale],
                [b.figures["tokens_per_s_per_gpu"]],
                marker="*",
                s=220,
                color="gold",
                edgecolors="black",
                zorder=5,
                label=f"best: {b.deployment.label()} @ {b.load.label()}",
            )
        ax.set_xlabel(ylabel)
        ax.set_ylabel("output tokens/s per GPU")
        ax.grid(True, alpha=0.3)
    if ttft_key:
        ax_ttft.set_xscale("log")
    ax_user.legend(fontsize=7, loc="best")
    fig.suptitle(title or f"{result.provenance.get('model', '')}: {len(result.candidates)} candidates")
    return fig

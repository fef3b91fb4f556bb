"""The step-anatomy figure: a step's time per resource, stacked, against batch size.

``anatomy_sweep(model, context_tokens, batch_sizes)`` prices uniform decode batches on any
``StepModel`` and returns an ``AnatomySweep``; ``anatomy_figure(sweep)`` draws it: one
stacked bar per batch size (seconds per resource, shown in ms), the no-overlap line (the
top of the stack, resources taking turns) and the overlap line (resources working at once
within a layer), and each bar's bottleneck named above it and outlined.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from latencykernel.batch import RESOURCES, Batch, StepEstimate
from latencykernel.charts.common import RESOURCE_COLOURS, figure

__all__ = ["AnatomySweep", "anatomy_sweep", "anatomy_figure"]


@dataclass(frozen=True)
class AnatomySweep:
    """Uniform decode batches priced on one deployment (times in seconds)."""

    deployment: str
    context_tokens: int
    batch_sizes: tuple[int, ...]
    estimates: tuple[StepEstimate, ...]

    def resources(self) -> list[str]:
        """The resources any step is charged to, in accumulation order."""
        return [r.value for r in RESOURCES if any(e.per_resource.get(r, 0.0) > 0 for e in self.estimates)]

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: one row per batch size, seconds per resource."""
        return {
            "deployment": self.deployment,
            "context_tokens": self.context_tokens,
            "steps": [
                {
                    "batch_size": b,
                    "overlap_s": e.overlap,
                    "no_overlap_s": e.no_overlap,
                    "bottleneck": e.bottleneck.value,
                    "per_resource_s": {r.value: e.per_resource[r] for r in RESOURCES if r in e.per_resource},
                    "tokens_per_s": b / e.no_overlap if e.no_overlap > 0 else 0.0,
                }
                for b, e in zip(self.batch_sizes, self.estimates)
            ],
        }


def anatomy_sweep(
    model: Any, context_tokens: int, batch_sizes: Sequence[int], *, decode_threshold: int = 8, label: str | None = None
) -> AnatomySweep:
    """Price ``b`` requests decoding one token against ``context_tokens`` for each ``b``."""
    sizes = tuple(int(b) for b in batch_sizes)
    est = tuple(model.step_time(Batch.decode(b, context_tokens, decode_threshold)) for b in sizes)
    return AnatomySweep(label or repr(model), int(context_tokens), sizes, est)


def anatomy_figure(sweep: AnatomySweep, *, title: str | None = None) -> Any:
    """Stacked time per resource (ms) against batch size, overlap and no-overlap lines, and
    the bottleneck of each step marked. Returns a ``matplotlib.figure.Figure``."""
    fig = figure(9.0, 5.5)
    ax = fig.add_subplot()
    xs = list(range(len(sweep.batch_sizes)))
    bottom = [0.0] * len(xs)
    for name in sweep.resources():
        heights = [e.per_resource.get(_res(name), 0.0) * 1e3 for e in sweep.estimates]
        edge = ["black" if e.bottleneck.value == name else "none" for e in sweep.estimates]
        ax.bar(
            xs,
            heights,
            bottom=bottom,
            width=0.7,
            color=RESOURCE_COLOURS[name],
            edgecolor=edge,
            linewidth=1.4,
        )
        bottom = [b + h for b, h in zip(bottom, heights)]
    no = [e.no_overlap * 1e3 for e in sweep.estimates]
    ov = [e.overlap * 1e3 for e in sweep.estimates]
    (no_line,) = ax.plot(xs, no, color="black", marker="o", linewidth=1.6, label="no overlap (resources take turns)")
    (ov_line,) = ax.plot(
        xs, ov, color="black", marker="s", linestyle="--", linewidth=1.4, label="overlap (resources at once)"
    )
    top = max(no) if no else 1.0
    for x, e, y in zip(xs, sweep.estimates, no):
        ax.annotate(
            e.bottleneck.value,
            (x, y),
            xytext=(0, 6),
            textcoords="offset points",
            ha="center",
            fontsize=8,
            fontweight="bold",
            color=RESOURCE_COLOURS.get(e.bottleneck.value, "black"),
        )
    ax.set_ylim(0, top * 1.15)
    ax.set_xticks(xs, [f"{b:,}" for b in sweep.batch_sizes])
    ax.set_xlabel("batch size (requests, each decoding one token)")
    ax.set_ylabel("step time (ms)")
    ax.set_title(
        title or f"Step anatomy: {sweep.deployment}\ndecodes against {sweep.context_tokens:,} tokens of context",
        fontsize=11,
    )
    ax.grid(axis="y", alpha=0.3)
    from matplotlib.patches import Patch

    patches = [Patch(facecolor=RESOURCE_COLOURS[n], label=n) for n in reversed(sweep.resources())]
    ax.legend(
        handles=[no_line, ov_line, *patches],
        loc="upper left",
        fontsize=8,
        title="bottleneck outlined and named",
        title_fontsize=8,
    )
    return fig


def _res(name: str) -> Any:
    from latencykernel.batch import Resource

    return Resource(name)

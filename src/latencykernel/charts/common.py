"""What every chart shares: a headless figure, the resources' colours, and saving."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from latencykernel.errors import LatencyKernelError

__all__ = ["figure", "save", "RESOURCE_COLOURS", "FORMATS"]

# one colour per resource, the same in every chart
RESOURCE_COLOURS = {
    "sm": "#4C72B0",
    "hbm": "#DD8452",
    "nvlink": "#55A868",
    "nic": "#8172B3",
    "host": "#8C8C8C",
}
FORMATS = (".png", ".svg")


def figure(width_in: float = 8.0, height_in: float = 5.0) -> Any:
    """A new ``Figure`` on the Agg canvas (no display, no global pyplot state)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width_in, height_in), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def save(fig: Any, path: str | os.PathLike[str], *, setting: str = "-o") -> Path:
    """Write ``fig`` as PNG or SVG, chosen by the suffix of ``path``; returns the path."""
    p = Path(path)
    if p.suffix.lower() not in FORMATS:
        raise LatencyKernelError(
            f"{setting} {str(p)!r}: a chart is saved as .png or .svg, not {p.suffix or 'no suffix'!r}"
        )
    if not p.parent.is_dir():
        raise LatencyKernelError(f"{setting} {str(p)!r}: the directory {str(p.parent)!r} does not exist")
    try:
        fig.savefig(p, format=p.suffix.lower()[1:], dpi=120)
    except OSError as e:
        raise LatencyKernelError(f"{setting} {str(p)!r}: cannot be written ({e.strerror or e})") from None
    return p

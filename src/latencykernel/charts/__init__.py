"""Charts: functions that take result objects and return a matplotlib ``Figure``.

matplotlib is imported only inside this package, and only when a chart is drawn; figures
are drawn on the Agg canvas (headless), without touching pyplot's global backend. Save one
with ``save(fig, "out.png")`` (PNG or SVG by the suffix).

Names are exported lazily: one module per figure, added to ``_EXPORTS``.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS: dict[str, str] = {
    "save": "latencykernel.charts.common",
    "AnatomySweep": "latencykernel.charts.anatomy",
    "anatomy_sweep": "latencykernel.charts.anatomy",
    "anatomy_figure": "latencykernel.charts.anatomy",
    "CapacityRow": "latencykernel.charts.capacity",
    "CapacityTable": "latencykernel.charts.capacity",
    "capacity_table": "latencykernel.charts.capacity",
    "capacity_figure": "latencykernel.charts.capacity",
    "Side": "latencykernel.charts.compare",
    "Comparison": "latencykernel.charts.compare",
    "compare_deployments": "latencykernel.charts.compare",
    "compare_figure": "latencykernel.charts.compare",
    "ServingSweep": "latencykernel.charts.serving",
    "serving_sweep": "latencykernel.charts.serving",
    "serving_figure": "latencykernel.charts.serving",
    "search_figure": "latencykernel.charts.search",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'latencykernel.charts' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value

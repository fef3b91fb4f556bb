"""Charts: functions that take result objects and return a matplotlib ``Figure``.

matplotlib is imported only inside this package, and only when a chart is drawn. Names are
exported lazily: one module per figure, added to ``_EXPORTS``.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS: dict[str, str] = {
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

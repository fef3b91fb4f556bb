"""Durations as the user writes them: the one seconds parser of the CLI and the search.

A number is seconds (``0.05``). Text needs a unit (``"50ms"``, ``"0.05s"``, ``"50 ms"``,
``"200us"``, ``"1.5min"``): a bare number in text (``"50"``) is refused, because the same
text once meant 50 ms to one command and 50 s to another. Every command-line value is text,
so on the command line a unit is always required; a Python ``slo`` mapping may give numbers,
which are seconds.
"""

from __future__ import annotations

import math
import re
from typing import Any

from latencykernel.errors import LatencyKernelError

__all__ = ["parse_seconds", "UNITS"]

# unit -> (multiply, divide): dividing by 1e3 rather than multiplying by 1e-3 keeps "800us" exactly 0.0008
UNITS: dict[str, tuple[float, float]] = {
    "s": (1.0, 1.0),
    "ms": (1.0, 1e3),
    "us": (1.0, 1e6),
    "µs": (1.0, 1e6),
    "min": (60.0, 1.0),
}
_TEXT = re.compile(r"^\s*([-+]?)\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([a-zµ]*)\s*$", re.I)


def parse_seconds(value: Any, setting: str, *, most_s: float | None = None) -> float:
    """Seconds from a number (seconds) or text with a unit (s, ms, us, µs, min); positive,
    finite and, when ``most_s`` is given, at most that. ``setting`` names the option or key
    in the error (``--tpot``, ``slo.ttft_p99``)."""
    if isinstance(value, bool):
        raise LatencyKernelError(f"{setting}: expected a duration such as 50ms or 0.05s, got {value!r}")
    if isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str):
        m = _TEXT.match(value)
        if m is None:
            raise LatencyKernelError(f"{setting} {value!r}: not a duration; write 50ms or 0.05s")
        sign, number, unit = m.group(1), m.group(2), m.group(3).lower()
        if not unit:
            raise LatencyKernelError(f"{setting} {value!r}: a duration needs a unit; write 50ms or 0.05s")
        if unit not in UNITS:
            raise LatencyKernelError(
                f"{setting} {value!r}: unknown unit {m.group(3)!r}; use {', '.join(UNITS)} (e.g. 50ms or 0.05s)"
            )
        mul, div = UNITS[unit]
        seconds = float(number) * mul / div
        if sign == "-":
            seconds = -seconds
    else:
        raise LatencyKernelError(f"{setting}: expected a duration such as 50ms or 0.05s, got {value!r}")
    if not math.isfinite(seconds) or seconds <= 0:
        raise LatencyKernelError(f"{setting} {value!r}: a duration must be positive and finite")
    if most_s is not None and seconds > most_s:
        raise LatencyKernelError(f"{setting} {value!r}: a duration must be at most {most_s:g} s")
    return seconds

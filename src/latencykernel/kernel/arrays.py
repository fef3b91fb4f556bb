"""The checks ``Kernel.step_times`` applies to its arrays before the vectorised price:
the same types, ranges and messages ``Batch`` applies to its columns
(``batch.whole_number``), so a row refused by one is refused by the other.

Imported on the first ``step_times`` call (it loads numpy).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from latencykernel.batch import MAX_TOKENS
from latencykernel.errors import LatencyKernelError

__all__ = ["token_array"]


def token_array(name: str, x: Any, hi: int = MAX_TOKENS, *, negative_ok: bool = False) -> np.ndarray:
    """``x`` as a one-dimensional int64 array of whole numbers in [0, ``hi``].

    Refused, naming ``name`` and the first offending row: strings and other objects,
    booleans, NaN, infinities, fractions, negative values, and values above ``hi`` (a
    uint64 above 2**63 is reported as the positive number it is). ``negative_ok`` leaves
    negative values to the caller (``step``, whose own check says it counts from 0).
    """
    if isinstance(x, str | bytes):
        raise LatencyKernelError(f"{name} must be an array of whole numbers, got {x!r}")
    try:
        a = np.asarray(x)
    except (ValueError, TypeError, OverflowError) as e:
        raise LatencyKernelError(f"{name} must be a one-dimensional array of whole numbers ({e})") from None
    if a.ndim != 1:
        raise LatencyKernelError(f"{name} must be a one-dimensional array, got shape {a.shape}")
    if a.size == 0:
        return np.zeros(0, dtype=np.int64)
    kind = a.dtype.kind
    if kind == "u":
        if int(a.max()) <= hi:
            return a.astype(np.int64)
        big = a > hi
        if big.any():
            i = int(np.argmax(big))
            raise LatencyKernelError(f"{name}[{i}] is {int(a[i])}, beyond what any deployment holds (at most {hi})")
        return a.astype(np.int64)
    if kind == "i":
        if int(a.max()) <= hi and (negative_ok or int(a.min()) >= 0):  # two reductions, no temporaries
            return a.astype(np.int64, copy=False)
        bad = (a > hi) if negative_ok else (a < 0) | (a > hi)
        if bad.any():
            i = int(np.argmax(bad))
            v = int(a[i])
            if v < 0:
                raise LatencyKernelError(f"{name} must not be negative; {name}[{i}] is {v}")
            raise LatencyKernelError(f"{name}[{i}] is {v}, beyond what any deployment holds (at most {hi})")
        return a.astype(np.int64, copy=False)
    if kind == "f":
        with np.errstate(invalid="ignore"):
            bad = ~np.isfinite(a) | (a != np.trunc(a))
        if bad.any():
            i = int(np.argmax(bad))
            raise LatencyKernelError(f"{name} must hold whole numbers; {name}[{i}] is {a[i].item()!r}")
        bad = (a > hi) if negative_ok else (a < 0) | (a > hi)
        if bad.any():
            i = int(np.argmax(bad))
            v = a[i].item()
            if v < 0:
                raise LatencyKernelError(f"{name} must not be negative; {name}[{i}] is {v!r}")
            raise LatencyKernelError(f"{name}[{i}] is {v!r}, beyond what any deployment holds (at most {hi})")
        return a.astype(np.int64)
    raise LatencyKernelError(f"{name} must hold integers, got an array of {a.dtype}")

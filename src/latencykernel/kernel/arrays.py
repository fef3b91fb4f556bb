"""The checks ``Kernel.step_times`` applies to its arrays before the vectorised price:
the same types, ranges and messages ``Batch`` applies to its columns
(``batch.whole_number``), so a row refused by one is refused by the other.

Imported on the first ``step_times`` call (it loads numpy).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from latencykernel.batch import MAX_TOKENS
from latencykernel.errors import LatencyKernelError

__all__ = ["Columns", "token_array", "token_columns"]

_I64 = np.dtype(np.int64)
CHUNK_ROWS = 1 << 16  # rows per pass over a column: in cache for the next pass over them
_MAX, _MIN = np.maximum.reduce, np.minimum.reduce  # bound once (cheaper to call than a.max())


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
        a = a.astype(np.int64, copy=False)
        # One reduction: over the uint64 view a negative value is above 2**63, beyond hi.
        if int(a.max()) <= hi if negative_ok else int(a.view(np.uint64).max()) <= hi:
            return a
        bad = (a > hi) if negative_ok else (a < 0) | (a > hi)
        if bad.any():
            i = int(np.argmax(bad))
            v = int(a[i])
            if v < 0:
                raise LatencyKernelError(f"{name} must not be negative; {name}[{i}] is {v}")
            raise LatencyKernelError(f"{name}[{i}] is {v}, beyond what any deployment holds (at most {hi})")
        return a
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


class Columns(NamedTuple):
    """The three (or four) columns of a ``step_times`` call, as int64 arrays, with what the
    checks learnt on the way: the least and greatest ``scheduled`` (0 when there are no
    rows), and whether every column has had its checks. When not (the quick way), only
    ``scheduled`` has: ``vector.step_times`` checks ``step``'s range and ``computed`` on
    its own passes over them, and on a failure runs the full checks in this order first,
    so the refusal is the one the full checks give."""

    step: np.ndarray
    scheduled: np.ndarray
    computed: np.ndarray
    prompt_len: np.ndarray | None
    smin: int
    smax: int
    checked: bool


def token_columns(step: Any, scheduled: Any, computed: Any, prompt_len: Any = None) -> Columns:
    """``token_array`` on each column, in that order (so the first bad column is named).

    The common call, three one-dimensional int64 arrays of one length, takes a quicker way
    with the same outcome: ``scheduled`` is checked in chunks, each read once from memory
    for its greatest value over the uint64 view (a negative value is above 2**63 there, so
    one maximum catches negatives and values above ``MAX_TOKENS`` together) and its least;
    ``step`` and ``computed`` are left to ``vector.step_times`` (see ``Columns``). Any doubt
    (a bad value, another type, unequal lengths, a ``prompt_len``) takes the full checks,
    which find and name the row."""
    if (
        prompt_len is None
        and type(step) is np.ndarray
        and type(scheduled) is np.ndarray
        and type(computed) is np.ndarray
    ):
        n = len(scheduled)
        if (
            step.dtype == _I64
            and scheduled.dtype == _I64
            and computed.dtype == _I64
            and step.ndim == scheduled.ndim == computed.ndim == 1
            and len(step) == n == len(computed) > 0
        ):
            u = scheduled.view(np.uint64)
            if n <= CHUNK_ROWS:
                smax, smin = int(_MAX(u)), int(_MIN(scheduled))
            else:
                smax, smin = 0, MAX_TOKENS
                for a in range(0, n, CHUNK_ROWS):
                    smax = max(smax, int(_MAX(u[a : a + CHUNK_ROWS])))
                    smin = min(smin, int(_MIN(scheduled[a : a + CHUNK_ROWS])))
            if smax <= MAX_TOKENS:
                return Columns(step, scheduled, computed, None, smin, smax, False)
    st = token_array("step", step, negative_ok=True)
    s = token_array("scheduled", scheduled)
    c = token_array("computed", computed)
    p = token_array("prompt_len", prompt_len) if prompt_len is not None else None
    smin = int(s.min()) if len(s) else 0
    smax = int(s.max()) if len(s) else 0
    return Columns(st, s, c, p, smin, smax, True)

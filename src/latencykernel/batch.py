"""What a step prices: the batch, and what the price says.

``ReqShape`` and ``Batch`` mirror the Go kernel's input types. ``Resource`` and
``StepEstimate`` its output. Times are seconds (float).
"""

from __future__ import annotations

import operator
from array import array
from collections.abc import Iterable, Sequence
from enum import Enum
from operator import itemgetter
from typing import Any, NamedTuple

from latencykernel.errors import LatencyKernelError

__all__ = [
    "ReqShape",
    "Batch",
    "Resource",
    "StepEstimate",
    "RESOURCES",
    "DEFAULT_DECODE_THRESHOLD",
    "MAX_TOKENS",
    "MAX_SM_BUDGET",
    "MAX_REQUESTS",
    "whole_number",
    "whole_count",
    "token_column",
]

DEFAULT_DECODE_THRESHOLD = 8
"""A request scheduling at most this many tokens is priced as a decode, unless a caller
says otherwise: vLLM's reorder threshold for decode-first batches is 1, but a speculative
decode schedules up to its draft length + 1, and 8 keeps short chunks with the decodes.
The one default every entry point (``Batch``, ``Batch.decode``, ``limits()``, the CLI, the
scenario bridge) uses."""

MAX_TOKENS = 1 << 40
"""The most tokens any count may hold (about 1.1 × 10^12). No deployment holds a request,
a step or a cache of more; a larger value is a mistake to refuse, never a price."""

MAX_SM_BUDGET = 1 << 20
MAX_REQUESTS = 1 << 24
"""The most requests ``Batch.decode`` builds (about 16.8 million; no engine schedules a
step of more, and 3 × 10^9 would exhaust memory before any price)."""


class Resource(str, Enum):
    """The five resources a step is charged to, in accumulation order."""

    SM = "sm"
    HBM = "hbm"
    NVLINK = "nvlink"
    NIC = "nic"
    HOST = "host"

    def __str__(self) -> str:  # prints as "hbm", as the Go kernel does
        return self.value


RESOURCES: tuple[Resource, ...] = (Resource.SM, Resource.HBM, Resource.NVLINK, Resource.NIC, Resource.HOST)


class ReqShape(NamedTuple):
    """One request's part of a step.

    scheduled:     tokens it runs this step (prefix-cache hits already removed; under
                   speculative decoding the draft length + 1)
    computed:      tokens already computed before this step
    prompt_len:    its prompt length (not read by the price)
    cached_tokens: its prefix-cache hit (not read by the price)
    """

    scheduled: int
    computed: int
    prompt_len: int = 0
    cached_tokens: int = 0


class Batch:
    """The requests of one step.

    A request scheduling at most ``decode_threshold`` tokens is priced as a decode.
    ``sm_budget`` is the number of SMs available to the step (0, or the chip's count or
    more, means all of them).

    The price reads two columns, ``scheduled`` and ``computed`` (lists of ints), with C
    builtins (``sum``, ``max``, ``list.count``); a batch built from columns
    (``Batch.from_columns``) never materialises request objects, and one built from numpy
    arrays converts them in C (``tolist``). Construction checks, also in C, that no column
    holds a negative number; a column whose smallest entry is not an ``int`` (floats, numpy
    scalars) is converted entry by entry, and a fractional entry is refused. Treat the
    columns as read-only once built.
    """

    __slots__ = ("_reqs", "scheduled", "computed", "decode_threshold", "sm_budget")

    def __init__(
        self, reqs: Iterable[ReqShape] = (), decode_threshold: int = DEFAULT_DECODE_THRESHOLD, sm_budget: int = 0
    ) -> None:
        rs = reqs if type(reqs) is tuple else tuple(reqs)
        for i, r in enumerate(rs):
            if not isinstance(r, tuple) or not 2 <= len(r) <= 4:
                raise LatencyKernelError(f"reqs[{i}] must be a ReqShape, got {r!r}")
        self.scheduled: list[int] = _checked("scheduled", list(map(_first, rs)))
        self.computed: list[int] = _checked("computed", list(map(_second, rs)))
        prompt = _checked("prompt_len", [r[2] for r in rs if len(r) > 2])
        cached = _checked("cached_tokens", [r[3] for r in rs if len(r) > 3])
        del prompt, cached  # checked, not kept: the price reads two columns
        self._reqs: tuple[ReqShape, ...] | None = rs
        self.decode_threshold = whole_count("decode_threshold", decode_threshold)
        self.sm_budget = whole_count("sm_budget", sm_budget, MAX_SM_BUDGET)

    @classmethod
    def from_columns(
        cls,
        scheduled: Sequence[int],
        computed: Sequence[int],
        decode_threshold: int = DEFAULT_DECODE_THRESHOLD,
        sm_budget: int = 0,
    ) -> Batch:
        """A batch from two equal-length columns (lists, tuples or numpy arrays of integers)."""
        if len(scheduled) != len(computed):
            raise LatencyKernelError(
                f"scheduled has {len(scheduled)} entries and computed {len(computed)}; they must be equal"
            )
        b = cls.__new__(cls)
        b._reqs = None
        b.scheduled = _column("scheduled", scheduled)
        b.computed = _column("computed", computed)
        b.decode_threshold = whole_count("decode_threshold", decode_threshold)
        b.sm_budget = whole_count("sm_budget", sm_budget, MAX_SM_BUDGET)
        return b

    @classmethod
    def trusted(cls, scheduled: list[int], computed: list[int], decode_threshold: int) -> Batch:
        """A batch from columns a caller inside this package built and checked (a simulated
        scheduler's step): no copy, no scan. The lists become the batch's; never pass user input."""
        b = cls.__new__(cls)
        b._reqs = None
        b.scheduled = scheduled
        b.computed = computed
        b.decode_threshold = decode_threshold
        b.sm_budget = 0
        return b

    @classmethod
    def decode(cls, requests: int, context: int, decode_threshold: int = DEFAULT_DECODE_THRESHOLD) -> Batch:
        """``requests`` steady-state decodes, each one token against ``context`` tokens."""
        if not (type(requests) is int and 0 <= requests <= MAX_REQUESTS):
            requests = whole_count("requests", requests, MAX_REQUESTS)
        if not (type(context) is int and 0 < context <= MAX_TOKENS):
            context = whole_number("context", context)
        if context < 1:
            raise LatencyKernelError(f"context must be at least 1 (the token being decoded), got {context}")
        b = cls.__new__(cls)
        b._reqs = None
        b.scheduled = [1] * requests
        b.computed = [context - 1] * requests
        b.decode_threshold = whole_count("decode_threshold", decode_threshold)
        b.sm_budget = 0
        return b

    @property
    def reqs(self) -> tuple[ReqShape, ...]:
        if self._reqs is None:
            self._reqs = tuple(ReqShape(s, c, s + c) for s, c in zip(self.scheduled, self.computed))
        return self._reqs

    def __len__(self) -> int:
        return len(self.scheduled)

    def tokens(self) -> int:
        """Scheduled tokens over the whole batch."""
        return sum(self.scheduled)

    def uniform_decode(self, width: int) -> bool:
        """True when the batch is non-empty and every request schedules exactly ``width``."""
        n = len(self.scheduled)
        return n > 0 and self.scheduled.count(width) == n

    def __repr__(self) -> str:
        return f"Batch({len(self)} requests, {self.tokens()} tokens, decode_threshold={self.decode_threshold})"


_first = itemgetter(0)
_second = itemgetter(1)


def whole_count(name: str, value: Any, hi: int = MAX_TOKENS) -> int:
    """``whole_number`` that is also not negative ("NAME must not be negative, got V")."""
    if type(value) is int and 0 <= value <= hi:
        return value
    v = whole_number(name, value, hi=hi)
    if v < 0:
        raise LatencyKernelError(f"{name} must not be negative, got {value}")
    return v


def whole_number(name: str, value: Any, *, lo: int | None = None, hi: int = MAX_TOKENS) -> int:
    """``value`` as an ``int``: the one validation of every count a caller passes in
    (``Batch``, ``ReqShape`` fields, ``step_times`` settings, the memory helpers).

    Accepted: ints and numpy integers, and floats holding a whole number. Refused, with a
    ``LatencyKernelError`` naming ``name`` and the value: strings, booleans, ``None``, NaN,
    infinities, fractions, values above ``hi`` (``MAX_TOKENS`` unless stated), and values
    below ``lo`` when one is given.
    """
    if type(value) is int:
        v = value
    elif isinstance(value, bool) or isinstance(value, str | bytes) or value is None:
        raise LatencyKernelError(f"{name} must be a whole number, got {value!r}")
    else:
        try:
            v = operator.index(value)  # numpy integers (a uint64 above 2**63 stays positive)
        except TypeError:
            try:
                f = float(value)
            except (TypeError, ValueError, OverflowError):
                raise LatencyKernelError(f"{name} must be a whole number, got {value!r}") from None
            if f != f or f in (float("inf"), float("-inf")) or not f.is_integer():
                raise LatencyKernelError(f"{name} must be a whole number, got {value!r}") from None
            if abs(f) > hi:
                raise LatencyKernelError(
                    f"{name} {value!r} is beyond what any deployment holds (at most {hi})"
                ) from None
            v = int(f)
    if v > hi:
        raise LatencyKernelError(f"{name} {v} is beyond what any deployment holds (at most {hi})")
    if lo is not None and v < lo:
        raise LatencyKernelError(f"{name} must be at least {lo}, got {v}")
    return v


def token_column(name: str, x: Any) -> list[int]:
    """A column of token counts as a fresh list of ints, each in [0, ``MAX_TOKENS``]."""
    return _column(name, x)


def _column(name: str, x: Any) -> list[int]:
    """A column as a fresh list of ints (C-speed for lists, tuples and numpy arrays)."""
    if type(x) is list:
        col = x.copy()
    elif type(x) is tuple or type(x) is range:
        col = list(x)
    elif hasattr(x, "dtype") and hasattr(x, "tolist"):  # a numpy array, without importing numpy
        if getattr(x, "ndim", 1) != 1:
            raise LatencyKernelError(f"{name} must be one-dimensional, got shape {getattr(x, 'shape', '?')}")
        kind = x.dtype.kind
        col = x.tolist()  # Python ints (a uint64 stays positive), converted in C
        if kind in "ui" and (x.size == 0 or kind == "u" or x.min() >= 0):
            t = sum(col)
            if t <= MAX_TOKENS:
                return col  # none negative, so none above the sum
        return _checked(name, col)
    else:
        col = list(x)
    return _checked(name, col)


def _checked(name: str, col: list[Any]) -> list[int]:
    """Every entry a whole number in [0, MAX_TOKENS], as Python ints.

    In C for a list of ints: an unsigned 64-bit ``array`` accepts only integers that are not
    negative, and ``sum`` is an int only when every entry is a Python int; with no negative
    entry the sum bounds every entry, so ``max`` runs only when the sum exceeds the bound.
    Anything else (floats, numpy scalars, strings, negatives) is converted and checked
    entry by entry, and the first offending entry is named.
    """
    if not col:
        return col
    try:
        array("Q", col)
        total = sum(col)
    except (TypeError, OverflowError):
        total = None
    if type(total) is not int:
        col = [whole_number(f"{name}[{i}]", v, hi=1 << 62) for i, v in enumerate(col)]
        lo = min(col)
        if lo < 0:
            raise LatencyKernelError(f"{name} must not be negative; {name}[{col.index(lo)}] is {lo}")
        total = sum(col)
    if total > MAX_TOKENS:
        hi = max(col)
        if hi > MAX_TOKENS:
            raise LatencyKernelError(
                f"{name}[{col.index(hi)}] is {hi}, beyond what any deployment holds (at most {MAX_TOKENS} tokens)"
            )
    return col


class StepEstimate(NamedTuple):
    """The price of one step, in seconds.

    overlap:      per layer the max over resources, summed over layers, plus the head and
                  host (resources within a layer work at once)
    no_overlap:   the sum of every resource's total (resources take turns); the one number
                  to use when one is wanted
    bottleneck:   the resource with the largest total
    per_resource: each resource with a positive total; their sum is ``no_overlap``
    """

    overlap: float
    no_overlap: float
    bottleneck: Resource
    per_resource: dict[Resource, float]

"""What a step prices: the batch, and what the price says.

``ReqShape`` and ``Batch`` mirror the Go kernel's input types. ``Resource`` and
``StepEstimate`` its output. Times are seconds (float).
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Sequence
from enum import Enum
from operator import itemgetter
from typing import Any, NamedTuple

from latencykernel.errors import LatencyKernelError

__all__ = ["ReqShape", "Batch", "Resource", "StepEstimate", "RESOURCES"]


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

    def __init__(self, reqs: Iterable[ReqShape] = (), decode_threshold: int = 1, sm_budget: int = 0) -> None:
        rs = reqs if type(reqs) is tuple else tuple(reqs)
        self._reqs: tuple[ReqShape, ...] | None = rs
        self.scheduled: list[int] = _checked("scheduled", list(map(_first, rs)))
        self.computed: list[int] = _checked("computed", list(map(_second, rs)))
        self.decode_threshold = _setting("decode_threshold", decode_threshold)
        self.sm_budget = _setting("sm_budget", sm_budget)

    @classmethod
    def from_columns(
        cls,
        scheduled: Sequence[int],
        computed: Sequence[int],
        decode_threshold: int = 1,
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
        b.decode_threshold = _setting("decode_threshold", decode_threshold)
        b.sm_budget = _setting("sm_budget", sm_budget)
        return b

    @classmethod
    def decode(cls, requests: int, context: int, decode_threshold: int = 8) -> Batch:
        """``requests`` steady-state decodes, each one token against ``context`` tokens."""
        requests, context = int(requests), int(context)
        if requests < 0:
            raise LatencyKernelError(f"requests must not be negative, got {requests}")
        if context < 1:
            raise LatencyKernelError(f"context must be at least 1 (the token being decoded), got {context}")
        b = cls.__new__(cls)
        b._reqs = None
        b.scheduled = [1] * requests
        b.computed = [context - 1] * requests
        b.decode_threshold = _setting("decode_threshold", decode_threshold)
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


def _setting(name: str, value: int) -> int:
    v = _whole(name, value)
    if v < 0:
        raise LatencyKernelError(f"{name} must not be negative, got {value}")
    return v


def _whole(name: str, value: Any) -> int:
    try:
        return operator.index(value)  # int, bool, numpy integers
    except TypeError:
        pass
    try:
        f = float(value)
    except (TypeError, ValueError):
        raise LatencyKernelError(f"{name} must be a whole number, got {value!r}") from None
    if not f.is_integer():
        raise LatencyKernelError(f"{name} must be a whole number, got {value!r}")
    return int(f)


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
        if kind == "u" or (kind == "i" and (x.size == 0 or x.min() >= 0)):
            return x.tolist()  # Python ints, checked by numpy
        col = x.tolist()
    else:
        col = list(x)
    return _checked(name, col)


def _checked(name: str, col: list[Any]) -> list[int]:
    if col:
        lo = min(col)
        if type(lo) is not int:
            col = [_whole(f"{name}[{i}]", v) for i, v in enumerate(col)]
            lo = min(col)
        if lo < 0:
            raise LatencyKernelError(f"{name} must not be negative; {name}[{col.index(lo)}] is {lo}")
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

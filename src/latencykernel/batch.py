"""What a step prices: the batch, and what the price says.

``ReqShape`` and ``Batch`` mirror the Go kernel's input types. ``Resource`` and
``StepEstimate`` its output. Times are seconds (float).
"""

from __future__ import annotations

from enum import Enum
from typing import Iterable, NamedTuple, Sequence

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

    The price reads two columns, ``scheduled`` and ``computed``; a batch built from
    columns (``Batch.from_columns``) never materialises request objects.
    """

    __slots__ = ("_reqs", "scheduled", "computed", "decode_threshold", "sm_budget")

    def __init__(self, reqs: Iterable[ReqShape] = (), decode_threshold: int = 1, sm_budget: int = 0) -> None:
        rs = tuple(reqs)
        self._reqs: tuple[ReqShape, ...] | None = rs
        self.scheduled: Sequence[int] = [r[0] for r in rs]
        self.computed: Sequence[int] = [r[1] for r in rs]
        self.decode_threshold = int(decode_threshold)
        self.sm_budget = int(sm_budget)

    @classmethod
    def from_columns(
        cls,
        scheduled: Sequence[int],
        computed: Sequence[int],
        decode_threshold: int = 1,
        sm_budget: int = 0,
    ) -> "Batch":
        """A batch from two equal-length columns (lists, tuples or numpy arrays)."""
        if len(scheduled) != len(computed):
            raise ValueError(
                f"scheduled has {len(scheduled)} entries and computed {len(computed)}; they must be equal"
            )
        b = cls.__new__(cls)
        b._reqs = None
        b.scheduled = [int(x) for x in scheduled]
        b.computed = [int(x) for x in computed]
        b.decode_threshold = int(decode_threshold)
        b.sm_budget = int(sm_budget)
        return b

    @classmethod
    def decode(cls, requests: int, context: int, decode_threshold: int = 8) -> "Batch":
        """``requests`` steady-state decodes, each one token against ``context`` tokens."""
        return cls.from_columns([1] * requests, [context - 1] * requests, decode_threshold)

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
        return len(self.scheduled) > 0 and all(s == width for s in self.scheduled)

    def __repr__(self) -> str:
        return f"Batch({len(self)} requests, {self.tokens()} tokens, decode_threshold={self.decode_threshold})"


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

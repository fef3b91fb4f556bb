"""Workloads a serving simulation replays: a closed-loop benchmark client, an open-loop
Poisson client, and a trace.

Lengths (``isl``, ``osl``) take

- a whole number: every request has that length;
- ``RandomRange(length, range_ratio)``: a uniform draw as ``vllm bench serve --dataset-name
  random --random-range-ratio`` makes it (``vllm/benchmarks/datasets.py``,
  ``RandomDataset``/``get_sampling_params``: integers uniform on
  ``[floor(L·(1−r)), ceil(L·(1+r))]`` both ends included, an output length at least 1;
  the prompt side first subtracts the tokenizer's special tokens, which we take as 0);
- a sequence of whole numbers: samples, used in order and cycled.

Each workload turns into ``Requests``: numpy columns (arrival time for open loop, prompt and
output lengths, cached prefix tokens) the simulation reads.
"""

from __future__ import annotations

import math
import numbers
import operator
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from latencykernel.errors import LatencyKernelError

__all__ = ["RandomRange", "ClosedLoop", "Poisson", "Trace", "Requests", "Length"]


@dataclass(frozen=True)
class RandomRange:
    """A length drawn uniformly as ``vllm bench serve --random-range-ratio`` draws it."""

    length: int
    range_ratio: float

    def __post_init__(self) -> None:
        _whole_at_least("length", self.length, 1)
        if not 0.0 <= real("range_ratio", self.range_ratio) < 1.0:
            raise LatencyKernelError(
                f"range_ratio must be in [0, 1) as vllm bench serve --random-range-ratio requires, got {self.range_ratio}"
            )

    def bounds(self, output: bool) -> tuple[int, int]:
        """(low, high), both included."""
        lo = math.floor(self.length * (1 - self.range_ratio))
        hi = math.ceil(self.length * (1 + self.range_ratio))
        if output:
            lo = max(lo, 1)
        elif lo < 1:
            # vLLM's RandomDataset.sample refuses a prompt range whose low end is under one
            # token ("--random-input-len is too small ..."), vllm/benchmarks/datasets.py,
            # RandomDataset.sample and get_sampling_params (which clamps only the output).
            raise LatencyKernelError(
                f"isl RandomRange({self.length}, {self.range_ratio:g}) can draw {lo}-token prompts "
                "(floor(length x (1 - range_ratio)) < 1); vllm bench serve refuses this: raise the length "
                "or lower range_ratio"
            )
        return lo, hi


Length = int | RandomRange | Sequence[int]


@dataclass(frozen=True)
class Requests:
    """What a workload expands to: one entry per request (numpy int64 / float64 columns).

    arrival_s:   send time (open loop and trace); for closed loop all zero, the client
                 sends a request when one of its ``concurrency`` slots frees
    prompt:      prompt tokens
    output:      output tokens (``max_tokens`` with ``ignore_eos``, as the benchmark sets it)
    cached:      prompt tokens a prefix cache already holds (0 without prefix caching)
    max_in_flight: the client's in-flight limit (``--max-concurrency``; 0: none): request
                 i is sent at max(arrival_s[i], the time a slot frees), in order
    """

    arrival_s: np.ndarray
    prompt: np.ndarray
    output: np.ndarray
    cached: np.ndarray
    max_in_flight: int = 0
    notes: tuple[tuple[str, str, str], ...] = field(default=())

    def __len__(self) -> int:
        return len(self.prompt)


def real(name: str, value: Any) -> float:
    """``value`` as a finite float, refusing bool, str and anything not a real number, naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise LatencyKernelError(f"{name} must be a number, got {value!r}")
    f = float(value)
    if not math.isfinite(f):
        raise LatencyKernelError(f"{name} must be a finite number, got {value!r}")
    return f


def _whole_at_least(name: str, value: Any, low: int) -> int:
    try:
        v = operator.index(value)
    except TypeError:
        try:
            f = float(value)
        except (TypeError, ValueError):
            raise LatencyKernelError(f"{name} must be a whole number, got {value!r}") from None
        if not f.is_integer():
            raise LatencyKernelError(f"{name} must be a whole number, got {value!r}") from None
        v = int(f)
    if v < low:
        raise LatencyKernelError(f"{name} must be at least {low}, got {value!r}")
    return v


def lengths(name: str, spec: Length, n: int, rng: np.random.Generator, *, output: bool) -> np.ndarray:
    """``n`` lengths from ``spec`` (see the module docstring)."""
    if isinstance(spec, RandomRange):
        lo, hi = spec.bounds(output)
        return rng.integers(lo, hi + 1, size=n).astype(np.int64)
    if isinstance(spec, str | bytes):
        raise LatencyKernelError(f"{name} must be a number, a RandomRange or a list of numbers, got {spec!r}")
    if isinstance(spec, Sequence) or isinstance(spec, np.ndarray):
        vals = [_whole_at_least(f"{name}[{i}]", v, 1) for i, v in enumerate(spec)]
        if not vals:
            raise LatencyKernelError(f"{name} must hold at least one length, got an empty list")
        reps = -(-n // len(vals))
        return np.array((vals * reps)[:n], dtype=np.int64)
    v = _whole_at_least(name, spec, 1)
    return np.full(n, v, dtype=np.int64)


def _describe(spec: Length) -> str:
    if isinstance(spec, RandomRange):
        return f"{spec.length} ± {spec.range_ratio:g}"
    if isinstance(spec, Sequence):
        return f"{len(spec)} samples"
    return str(spec)


@dataclass(frozen=True)
class ClosedLoop:
    """A benchmark client keeping ``concurrency`` requests in flight (``vllm bench serve
    --max-concurrency C --request-rate inf``): it sends ``num_prompts`` requests, each
    as soon as a slot frees. Default ``num_prompts`` = 10 × concurrency, as the public
    accuracy campaigns pin it."""

    concurrency: int
    isl: Length
    osl: Length
    num_prompts: int | None = None
    prefix_hit_rate: float = 0.0

    def requests(self, rng: np.random.Generator) -> Requests:
        c = _whole_at_least("concurrency", self.concurrency, 1)
        n = 10 * c if self.num_prompts is None else _whole_at_least("num_prompts", self.num_prompts, 1)
        prompt = lengths("isl", self.isl, n, rng, output=False)
        output = lengths("osl", self.osl, n, rng, output=True)
        notes = []
        if self.num_prompts is None:
            notes.append(("num_prompts", str(n), "10 x concurrency, as the public accuracy campaigns pin it"))
        return Requests(
            np.zeros(n),
            prompt,
            output,
            _cached(prompt, self.prefix_hit_rate),
            max_in_flight=c,
            notes=tuple(notes),
        )

    def describe(self) -> str:
        return f"closed loop, concurrency {self.concurrency}, isl {_describe(self.isl)}, osl {_describe(self.osl)}"


@dataclass(frozen=True)
class Poisson:
    """An open-loop client sending ``num_prompts`` requests at ``request_rate`` per second,
    gaps drawn as ``vllm bench serve --request-rate R --burstiness B`` draws them (gamma
    with shape B and mean 1/R; B = 1 is Poisson). ``request_rate`` = inf sends all at once;
    ``max_concurrency`` (optional) caps requests in flight as the benchmark's semaphore does."""

    request_rate: float
    isl: Length
    osl: Length
    num_prompts: int
    burstiness: float = 1.0
    max_concurrency: int | None = None
    prefix_hit_rate: float = 0.0

    def requests(self, rng: np.random.Generator) -> Requests:
        rate = self.request_rate
        if isinstance(rate, bool) or not isinstance(rate, numbers.Real) or not float(rate) > 0:
            raise LatencyKernelError(f"request_rate must be a positive number (inf: all at once), got {rate!r}")
        rate = float(rate)
        burst = real("burstiness", self.burstiness)
        if not burst > 0:
            raise LatencyKernelError(f"burstiness must be positive, got {self.burstiness!r}")
        n = _whole_at_least("num_prompts", self.num_prompts, 1)
        prompt = lengths("isl", self.isl, n, rng, output=False)
        output = lengths("osl", self.osl, n, rng, output=True)
        if math.isinf(rate):
            arrival = np.zeros(n)
        else:
            theta = 1.0 / (rate * burst)
            gaps = rng.gamma(burst, theta, size=n)
            gaps[0] = 0.0  # the benchmark sends its first request at once
            arrival = np.cumsum(gaps)
        conc = 0 if self.max_concurrency is None else _whole_at_least("max_concurrency", self.max_concurrency, 1)
        return Requests(arrival, prompt, output, _cached(prompt, self.prefix_hit_rate), max_in_flight=conc)

    def describe(self) -> str:
        return f"Poisson {self.request_rate:g} req/s, {self.num_prompts} prompts, isl {_describe(self.isl)}, osl {_describe(self.osl)}"


@dataclass(frozen=True)
class Trace:
    """Requests from a trace: each row ``(arrival_s, prompt_tokens, output_tokens)`` or
    ``(arrival_s, prompt_tokens, output_tokens, cached_prefix_tokens)``, or a mapping with
    those keys (``arrival_s``, ``prompt_tokens``, ``output_tokens``, ``cached_prefix_tokens``)."""

    rows: Sequence[Any]

    def requests(self, rng: np.random.Generator) -> Requests:
        try:
            rows = list(self.rows)
        except TypeError:
            raise LatencyKernelError(f"Trace rows must be a list of rows, got {type(self.rows).__name__}") from None
        if len(rows) == 0:
            raise LatencyKernelError("Trace rows must hold at least one request")
        arr, pr, out, ca = [], [], [], []
        for i, row in enumerate(rows):
            if isinstance(row, dict):
                vals = (
                    row.get("arrival_s"),
                    row.get("prompt_tokens"),
                    row.get("output_tokens"),
                    row.get("cached_prefix_tokens", 0),
                )
            elif isinstance(row, Sequence) and not isinstance(row, str | bytes):
                vals = tuple(row) + ((0,) if len(row) == 3 else ())
                if len(vals) != 4:
                    raise LatencyKernelError(
                        f"Trace rows[{i}] must have 3 or 4 entries (arrival_s, prompt_tokens, output_tokens[, cached_prefix_tokens]), got {row!r}"
                    )
            else:
                raise LatencyKernelError(
                    f"Trace rows[{i}] must be a (arrival_s, prompt_tokens, output_tokens[, cached_prefix_tokens]) "
                    f"tuple or a mapping with those keys, got {row!r}"
                )
            a = real(f"Trace rows[{i}].arrival_s", vals[0])
            if not a >= 0:
                raise LatencyKernelError(f"Trace rows[{i}].arrival_s must be a finite time >= 0, got {vals[0]!r}")
            p = _whole_at_least(f"Trace rows[{i}].prompt_tokens", vals[1], 1)
            o = _whole_at_least(f"Trace rows[{i}].output_tokens", vals[2], 1)
            c = _whole_at_least(f"Trace rows[{i}].cached_prefix_tokens", vals[3], 0)
            if c > p:
                raise LatencyKernelError(
                    f"Trace rows[{i}].cached_prefix_tokens ({c}) must not exceed its prompt_tokens ({p})"
                )
            arr.append(a)
            pr.append(p)
            out.append(o)
            ca.append(c)
        order = np.argsort(np.array(arr), kind="stable")
        return Requests(
            np.array(arr)[order],
            np.array(pr, dtype=np.int64)[order],
            np.array(out, dtype=np.int64)[order],
            np.array(ca, dtype=np.int64)[order],
        )

    def describe(self) -> str:
        return f"trace of {len(self.rows)} requests" if isinstance(self.rows, Sequence) else "trace"


def _cached(prompt: np.ndarray, hit_rate: float) -> np.ndarray:
    if not 0.0 <= real("prefix_hit_rate", hit_rate) <= 1.0:
        raise LatencyKernelError(f"prefix_hit_rate must be in [0, 1], got {hit_rate}")
    return np.floor(prompt * hit_rate).astype(np.int64)


Workload = ClosedLoop | Poisson | Trace

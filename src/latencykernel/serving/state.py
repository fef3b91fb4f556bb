"""The simulation's state holders: request columns (``array.array`` with numpy views over the
same memory), the pools of engines sharing a step model, and one engine's running state."""

from __future__ import annotations

import math
from array import array
from typing import Any

import numpy as np

from latencykernel.serving.config import EngineConfig
from latencykernel.serving.scheduler import Rank
from latencykernel.step_model import StepModel

__all__ = ["Engine", "Plan", "Pool", "floats_column", "ints_column", "view"]

INF = math.inf
Plan = list[tuple[int, int, int, int, bool]]  # (request, scheduled, computed before, emitted, decoding)


def _column(typecode: str, values: np.ndarray | None, n: int) -> array[Any]:
    """A column of ``array`` type ``typecode`` ("q" int64, "d" float64): ``values``, or ``n`` zeros."""
    a: array[Any] = array(typecode)
    if values is None:
        a.frombytes(bytes(8 * n))
    else:
        a.frombytes(np.ascontiguousarray(values, dtype=np.int64 if typecode == "q" else np.float64).tobytes())
    return a


def ints_column(values: np.ndarray | None, n: int = 0) -> array[int]:
    return _column("q", values, n)


def floats_column(values: np.ndarray | None, n: int = 0) -> array[float]:
    return _column("d", values, n)


def view(a: array[Any]) -> np.ndarray:
    """A numpy array over ``a``'s memory (writes through; ``a`` must never be resized)."""
    return np.frombuffer(a, dtype=np.int64 if a.typecode == "q" else np.float64)


class Pool:
    """Engines of one role sharing a step model: ``engines`` lists, per engine, its ranks."""

    def __init__(self, name: str, model: StepModel, cfg: EngineConfig, engines: int, ranks_per_engine: int) -> None:
        self.name = name
        self.model = model
        self.cfg = cfg
        self.engines = engines
        self.ranks_per_engine = ranks_per_engine


class Engine:
    __slots__ = (
        "index",
        "pool",
        "ranks",
        "t",
        "pending",
        "busy_s",
        "model",
        "cfg",
        "empty",
        "usable",
        "aggregate",
        "step1",
    )

    def __init__(self, index: int, pool: int, ranks: list[Rank], model: StepModel, cfg: EngineConfig) -> None:
        self.index = index
        self.pool = pool
        self.ranks = ranks
        self.t = INF  # when it next launches a step (INF: idle)
        self.pending: list[Plan] | None = None  # async scheduling: the plan decided for the next step
        self.busy_s = 0.0
        self.model = model
        self.cfg = cfg
        self.empty: tuple[float, Any] | None = None  # (time, bottleneck) of an empty step, once priced
        self.usable = sum(rk.usable for rk in ranks)  # KV blocks the ranks hold in all (fixed)
        # the step model's optional decode_step_times (run_price), None without one or once
        # it has answered that it cannot price this engine's decode steps from their sums
        self.aggregate: Any = getattr(model, "decode_step_times", None)
        # its optional aggregate_step_time (stream.py), None without one or once it has
        # answered that it cannot price this engine's steps from sums
        self.step1: Any = getattr(model, "aggregate_step_time", None)

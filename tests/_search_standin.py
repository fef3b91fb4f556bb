"""A tiny closed-form stand-in for ``latencykernel.serving.simulate``, used only by the search
tests (the search must not depend on the serving branch's progress to be tested): every
request of a closed loop of ``c`` sees a prefill step of its whole prompt as TTFT and a decode
step of ``c`` requests at mid-answer context as TPOT. Not a serving model; never used by the
library."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from latencykernel.batch import Batch


@dataclass(frozen=True)
class Dist:
    mean: float
    median: float
    p90: float
    p95: float
    p99: float

    @classmethod
    def const(cls, v: float, tail: float = 1.0) -> Dist:
        return cls(v, v, v * tail, v * tail, v * tail)


@dataclass(frozen=True)
class Result:
    ttft: Dist
    tpot: Dist
    itl: Dist
    e2el: Dist
    request_throughput: float
    output_throughput: float
    saturated: bool


def simulate(kernels: Any, dep: Any, load: Any, seed: int) -> Result:
    k = kernels[-1]
    c = load.concurrency if load.concurrency is not None else max(1, round(load.request_rate))
    lim = k.limits()
    c_eng = max(1, -(-c // lim.data_parallel))
    prefill = k.step_time(Batch.from_columns([load.isl], [0], 8)).overlap
    decode = k.step_time(Batch.from_columns([1] * c_eng, [load.isl + load.osl // 2] * c_eng, 8)).overlap
    tpot = decode + k.output_token_overhead()
    ttft = prefill * (1 + (c_eng - 1) / 8) + k.admission_overhead(load.isl)
    e2el = ttft + tpot * (load.osl - 1)
    rps = c / e2el
    return Result(
        Dist.const(ttft, 1.5),
        Dist.const(tpot, 1.1),
        Dist.const(tpot, 1.2),
        Dist.const(e2el, 1.1),
        rps,
        rps * load.osl,
        load.request_rate is not None and load.request_rate * e2el > 4 * lim.max_num_seqs,
    )

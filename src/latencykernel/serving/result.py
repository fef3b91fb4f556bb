"""What a serving simulation reports, in ``vllm bench serve``'s terms.

Metric definitions follow ``vllm/benchmarks/serve.py`` (``calculate_metrics``):

- TTFT: send to first output token, per request;
- TPOT: per request ``(e2el − ttft) / (output_tokens − 1)``, only requests with more than
  one output token (the first token excluded);
- ITL: every gap between consecutive output chunks of a request (a step that emits
  several tokens under speculative decoding is one chunk);
- E2EL: send to the last token;
- percentiles as ``np.percentile`` takes them (linear interpolation), ``std`` as
  ``np.std`` (population), over all requests (all gaps for ITL).

Distributions are built from weighted samples (a value and how many times it occurs), so a
run of a million identical gaps costs one entry; the statistics equal numpy's on the
expanded samples.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from latencykernel.errors import LatencyKernelError

__all__ = ["Distribution", "ServingResult", "VLLM_PERCENTILES"]

VLLM_PERCENTILES = (90, 95, 99)


@dataclass(frozen=True)
class Distribution:
    """A latency distribution in seconds."""

    count: int
    mean: float
    median: float
    std: float
    p90: float
    p95: float
    p99: float
    min: float = 0.0
    max: float = 0.0

    @classmethod
    def of(cls, values: Any, weights: Any = None) -> Distribution:
        """The statistics of ``values`` (each repeated ``weights`` times when given), equal to
        numpy's ``mean``/``median``/``std``/``percentile`` on the expanded samples."""
        v = np.asarray(values, dtype=np.float64)
        if weights is None:
            w = np.ones(len(v), dtype=np.int64)
        else:
            w = np.asarray(weights, dtype=np.int64)
        keep = w > 0
        v, w = v[keep], w[keep]
        n = int(w.sum())
        if n == 0:
            return cls(0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
        # one entry per distinct value (weights summed), so equal multisets of samples give
        # equal statistics bit for bit, however they were grouped
        if len(v) > 1:
            order = np.argsort(v, kind="stable")
            v, w = v[order], w[order]
            new = np.empty(len(v), dtype=bool)
            new[0] = True
            np.not_equal(v[1:], v[:-1], out=new[1:])
            if not new.all():
                starts = np.flatnonzero(new)
                v, w = v[starts], np.add.reduceat(w, starts)
        # numpy's pairwise sums, not BLAS's dot: the same bits on any machine and thread count,
        # and no BLAS threads left spinning beside a search's worker processes
        wf = w.astype(np.float64)
        mean = float(np.add.reduce(v * wf) / n)
        var = float(np.add.reduce(wf * (v - mean) ** 2) / n)
        ends = np.cumsum(w)  # the sorted sample at rank k (0-based) is v[searchsorted(ends, k, 'right')]

        def q(p: float) -> float:
            pos = (n - 1) * p / 100.0
            lo = int(np.floor(pos))
            hi = min(lo + 1, n - 1)
            a = v[int(np.searchsorted(ends, lo, side="right"))]
            b = v[int(np.searchsorted(ends, hi, side="right"))]
            return float(a + (b - a) * (pos - lo))

        return cls(n, mean, q(50), var**0.5, q(90), q(95), q(99), float(v[0]), float(v[-1]))

    def percentile(self, p: float) -> float:
        named = {50.0: self.median, 90.0: self.p90, 95.0: self.p95, 99.0: self.p99}
        if float(p) not in named:
            raise LatencyKernelError(f"percentile must be one of 50, 90, 95, 99, got {p}")
        return named[float(p)]


@dataclass(frozen=True)
class ServingResult:
    """One simulated benchmark run. Times in seconds, throughputs per second over the whole
    deployment (``output_throughput_per_gpu`` divides by every GPU the deployment holds).

    ttft, tpot, itl, e2el:     distributions (see the module docstring)
    completed:                 requests finished (all of them; a run never drops one)
    total_input_tokens / total_output_tokens: summed over completed requests
    duration:                  first send to last token
    request_throughput, output_throughput, total_token_throughput: per second of duration
    output_throughput_per_gpu: output_throughput / gpus
    max_concurrent_requests:   most requests in flight at once (client side)
    preemptions:               recompute preemptions the scheduler made
    kv_usage_time_s, kv_usage: KV-cache use (fraction of blocks) after each step, with times
    bottleneck_shares:         share of busy engine time each resource was a step's bottleneck
    steps:                     forward steps priced (all replicas / pools)
    saturated:                 open loop only: the queue grew without bound (offered rate
                               above what the deployment sustains); then ``sustained_request_rate``
                               is the rate it served, and the latencies only reflect the
                               simulated length
    assumptions:               (name, value, reason) for every default the run took
    per_request:               per-request columns (ttft, e2el, tpot, prompt, output) in
                               request order, seconds
    """

    ttft: Distribution
    tpot: Distribution
    itl: Distribution
    e2el: Distribution
    completed: int
    total_input_tokens: int
    total_output_tokens: int
    duration: float
    request_throughput: float
    output_throughput: float
    total_token_throughput: float
    output_throughput_per_gpu: float
    gpus: int
    max_concurrent_requests: int
    preemptions: int
    kv_usage_time_s: np.ndarray
    kv_usage: np.ndarray
    bottleneck_shares: dict[str, float]
    steps: int
    saturated: bool
    sustained_request_rate: float
    offered_request_rate: float
    assumptions: list[tuple[str, str, str]]
    per_request: dict[str, np.ndarray] = field(repr=False, default_factory=dict)

    # ------------------------------------------------------------------ derived
    def goodput(self, slo: Mapping[str, float]) -> float:
        """Requests per second meeting every SLO, as ``vllm bench serve --goodput`` counts
        them: ``slo`` maps ``ttft``, ``tpot`` and/or ``e2el`` to a limit in milliseconds."""
        pr = self.per_request
        ok = np.ones(self.completed, dtype=bool)
        for key, limit_ms in slo.items():
            if key not in ("ttft", "tpot", "e2el"):
                raise LatencyKernelError(f"goodput SLO keys are ttft, tpot and e2el (milliseconds), got {key!r}")
            if not limit_ms > 0:
                raise LatencyKernelError(f"goodput SLO {key} must be a positive number of milliseconds, got {limit_ms}")
            ok &= pr[key] * 1e3 <= limit_ms
        return float(ok.sum()) / self.duration if self.duration > 0 else 0.0

    def as_vllm_bench(self) -> dict[str, Any]:
        """The keys and units (ms, per second) of ``vllm bench serve``'s result JSON."""
        out: dict[str, Any] = {
            "duration": self.duration,
            "completed": self.completed,
            "total_input_tokens": self.total_input_tokens,
            "total_output_tokens": self.total_output_tokens,
            "request_throughput": self.request_throughput,
            "output_throughput": self.output_throughput,
            "total_token_throughput": self.total_token_throughput,
            "max_concurrent_requests": self.max_concurrent_requests,
        }
        for name in ("ttft", "tpot", "itl", "e2el"):
            d: Distribution = getattr(self, name)
            out[f"mean_{name}_ms"] = d.mean * 1e3
            out[f"median_{name}_ms"] = d.median * 1e3
            out[f"std_{name}_ms"] = d.std * 1e3
            for p in VLLM_PERCENTILES:
                out[f"p{p}_{name}_ms"] = d.percentile(p) * 1e3
        return out

    def summary(self) -> dict[str, Any]:
        """``as_vllm_bench()`` plus what the simulation adds (per-GPU throughput,
        preemptions, saturation, steps)."""
        out = self.as_vllm_bench()
        out.update(
            output_throughput_per_gpu=self.output_throughput_per_gpu,
            preemptions=self.preemptions,
            saturated=self.saturated,
            sustained_request_rate=self.sustained_request_rate,
            steps=self.steps,
            peak_kv_usage=float(self.kv_usage.max()) if len(self.kv_usage) else 0.0,
            bottleneck_shares=dict(self.bottleneck_shares),
        )
        return out

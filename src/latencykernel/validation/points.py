"""What one measured serving point holds, in this package's units (seconds, tokens).

A *point* is one benchmark run: a deployment, a workload (mean prompt and output tokens),
a load (closed-loop concurrency or open-loop request rate) and the measured latencies, each
a ``Stat`` of mean, median and p99. A *sweep* is the points that share a deployment and a
workload and differ only in load; its lowest-load point is the sweep's anchor.

Metric definitions are vLLM's (``vllm bench serve``, vllm/benchmarks/serve.py,
``calculate_metrics``): TTFT is request start to first token; TPOT is per request
``(e2el − ttft) / (output_tokens − 1)``, excluding the first token, summarised over
requests; ITL is every gap between successive tokens, summarised over gaps. Readers of
other formats convert to these (see ``readers``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from latencykernel.errors import LatencyKernelError
from latencykernel.step_model import KV_RESERVATIONS

__all__ = ["Stat", "Deployment", "Point", "METRICS", "STATS", "PARALLEL_KEYS", "SETTINGS_KEYS"]

METRICS = ("ttft", "tpot", "itl")
STATS = ("mean", "median", "p99")
# The parallel widths a run may state beside its scenario (``Deployment.parallel``).
PARALLEL_KEYS = ("tp", "dp", "enable_expert_parallel")
# The engine settings a run may state beside its scenario (``Deployment.settings``): vLLM's
# ``compilation_config.cudagraph_mode`` and ``compilation_config.splitting_ops``, and the KV
# cache's dtype (``--kv-cache-dtype``; ``auto`` is the model's dtype).
SETTINGS_KEYS = ("cudagraph_mode", "splitting_ops", "cache_dtype")


@dataclass(frozen=True, slots=True)
class Stat:
    """One latency summarised over a run, in seconds; ``None`` where the source has none."""

    mean: float | None = None
    median: float | None = None
    p99: float | None = None

    def get(self, stat: str) -> float | None:
        if stat not in STATS:
            raise LatencyKernelError(f"stat must be one of {', '.join(STATS)}, got {stat!r}")
        value: float | None = getattr(self, stat)
        return value

    def empty(self) -> bool:
        return self.mean is None and self.median is None and self.p99 is None


@dataclass(frozen=True, slots=True)
class Deployment:
    """How to open the step model a point is priced with: a scenario (an embedded name such
    as ``aisimulate/x.yaml`` or a path), or ``build`` arguments (``model``, ``hardware`` and
    engine settings, exactly as ``latencykernel.build`` takes them).

    ``parallel``: with a scenario, the run's parallel widths where they differ from the
    scenario's first pool (``tp``, ``dp``, ``enable_expert_parallel``; the pool is
    re-validated with them, so a layout vLLM would not start is refused as a file's is).
    ``settings``: with a scenario, the run's engine settings where they differ from the
    pool's (``cudagraph_mode``, a mode name; ``splitting_ops``, a tuple of op names, empty
    for a model compiled as one graph; ``cache_dtype``, a KV dtype name), applied and
    re-validated the same way."""

    scenario: str | None = None
    build: tuple[tuple[str, Any], ...] = ()
    parallel: tuple[tuple[str, Any], ...] = ()
    settings: tuple[tuple[str, Any], ...] = ()

    def key(self) -> str:
        if self.scenario:
            stated = [f"{k}={v}" for k, v in self.parallel] + [
                f"{k}={list(v) if isinstance(v, tuple) else v}" for k, v in self.settings
            ]
            if stated:
                return self.scenario + "[" + ", ".join(stated) + "]"
            return self.scenario
        return "build(" + ", ".join(f"{k}={v}" for k, v in self.build) + ")"

    def __post_init__(self) -> None:
        if not self.scenario and not self.build:
            raise LatencyKernelError(
                "a measurement needs a deployment: a scenario, or build arguments (model, hardware, ...)"
            )
        if not self.scenario:
            names = {k for k, _ in self.build}
            for need in ("model", "hardware"):
                if need not in names:
                    raise LatencyKernelError(f"build arguments need {need!r}; got {sorted(names)}")
        if self.parallel and not self.scenario:
            raise LatencyKernelError("parallel widths go with a scenario; with build arguments state tp, dp there")
        if self.settings and not self.scenario:
            raise LatencyKernelError("engine settings go with a scenario; with build arguments state them there")
        for k, v in self.settings:
            if k not in SETTINGS_KEYS:
                raise LatencyKernelError(
                    f"settings.{k} is not a setting a run can state; use {', '.join(SETTINGS_KEYS)}"
                )
            if k in ("cudagraph_mode", "cache_dtype"):
                if not isinstance(v, str) or not v:
                    raise LatencyKernelError(f"settings.{k} must be a name, got {v!r}")
            elif not isinstance(v, tuple) or not all(isinstance(op, str) and op for op in v):
                raise LatencyKernelError(f"settings.splitting_ops must be a list of op names, got {v!r}")
        for k, v in self.parallel:
            if k not in PARALLEL_KEYS:
                raise LatencyKernelError(f"parallel.{k} is not a width a run can state; use {', '.join(PARALLEL_KEYS)}")
            if k == "enable_expert_parallel":
                if not isinstance(v, bool):
                    raise LatencyKernelError(f"parallel.{k} must be true or false, got {v!r}")
            elif isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise LatencyKernelError(f"parallel.{k} must be a whole number >= 1, got {v!r}")


@dataclass(frozen=True, slots=True)
class Point:
    """One measured run.

    sweep:        identifier shared by the points of one sweep (same deployment and workload)
    deployment:   what to price it with
    isl, osl:     mean prompt and output tokens per request
    range_ratio:  lengths drawn uniform on [L(1 − r), L(1 + r)] around each mean, as
                  ``vllm bench serve --random-range-ratio r`` draws them (0: fixed lengths)
    concurrency:  closed-loop clients in flight (``max_concurrency``), or None
    request_rate: open-loop arrivals per second, or None (one of the two is given)
    ttft, tpot, itl: measured latencies (seconds), vLLM's definitions
    engine, chip, model: labels for the summaries (filled from the step model when empty)
    source:       the format it was read from, and any conversion applied
    batch_wait_timeout_iters, batch_wait_max_tokens_ratio: TensorRT-LLM's batch waiting as
                  the run set it (its LLM API options of those names; 0 = off, the
                  engine's default): a prompt is held while other requests decode, up to
                  that many iterations or until the held tokens reach the ratio of
                  max_num_tokens (see ``predict.batch_wait_s``)
    max_num_seqs: the run's ``--max-num-seqs`` (requests a rank holds at once) where the
                  run stated one the deployment does not, or the engine's default applied
                  because the run stated none; 0 = the deployment's own
    max_num_batched_tokens: the run's token budget per step (vLLM's
                  ``--max-num-batched-tokens``, TensorRT-LLM's ``max_num_tokens``,
                  SGLang's ``--chunked-prefill-size``) where it differs from the
                  deployment's; 0 = the deployment's own
    kv_reservation: how the run's scheduler holds KV, where it differs from the
                  deployment's (``EngineLimits.kv_reservation``): ``on_demand`` (vLLM's;
                  TensorRT-LLM's MAX_UTILIZATION capacity policy) or ``to_completion``
                  (TensorRT-LLM's default GUARANTEED_NO_EVICT); "" = the deployment's own
    scheduler_recv_interval: SGLang's ``--scheduler-recv-interval`` as the run set it: the
                  scheduler takes new requests in only every that many decode steps
                  (``predict.recv_wait_s``); 0 = the engine's default, every step
    prefix_hit_rate: the share of prompt tokens the run's prefix cache served, as measured
                  (in [0, 1)); a prompt computes only the rest
                  (``predict.cached_prompt_tokens``); 0 = no hits
    """

    sweep: str
    deployment: Deployment
    isl: float
    osl: float
    concurrency: int | None = None
    request_rate: float | None = None
    ttft: Stat = field(default_factory=Stat)
    tpot: Stat = field(default_factory=Stat)
    itl: Stat = field(default_factory=Stat)
    engine: str = ""
    chip: str = ""
    model: str = ""
    source: str = ""
    range_ratio: float = 0.0
    batch_wait_timeout_iters: int = 0
    batch_wait_max_tokens_ratio: float = 0.0
    max_num_seqs: int = 0
    max_num_batched_tokens: int = 0
    kv_reservation: str = ""
    scheduler_recv_interval: int = 0
    prefix_hit_rate: float = 0.0

    def __post_init__(self) -> None:
        if not (self.isl >= 1):
            raise LatencyKernelError(f"isl must be at least 1 token, got {self.isl!r} (sweep {self.sweep!r})")
        if not (self.osl >= 1):
            raise LatencyKernelError(f"osl must be at least 1 token, got {self.osl!r} (sweep {self.sweep!r})")
        if not (0.0 <= self.prefix_hit_rate < 1.0):
            raise LatencyKernelError(f"prefix_hit_rate must be in [0, 1), got {self.prefix_hit_rate!r}")
        if not (0.0 <= self.range_ratio < 1.0):
            raise LatencyKernelError(f"range_ratio must be in [0, 1), got {self.range_ratio!r}")
        if not (isinstance(self.batch_wait_timeout_iters, int) and self.batch_wait_timeout_iters >= 0):
            raise LatencyKernelError(
                f"batch_wait_timeout_iters must be a whole number >= 0, got {self.batch_wait_timeout_iters!r}"
            )
        if not (isinstance(self.max_num_seqs, int) and self.max_num_seqs >= 0):
            raise LatencyKernelError(f"max_num_seqs must be a whole number >= 0, got {self.max_num_seqs!r}")
        if not (isinstance(self.max_num_batched_tokens, int) and self.max_num_batched_tokens >= 0):
            raise LatencyKernelError(
                f"max_num_batched_tokens must be a whole number >= 0, got {self.max_num_batched_tokens!r}"
            )
        if not (isinstance(self.scheduler_recv_interval, int) and self.scheduler_recv_interval >= 0):
            raise LatencyKernelError(
                f"scheduler_recv_interval must be a whole number >= 0, got {self.scheduler_recv_interval!r}"
            )
        if self.kv_reservation != "" and self.kv_reservation not in KV_RESERVATIONS:
            raise LatencyKernelError(
                f"kv_reservation must be on_demand or to_completion (or empty: the deployment's), "
                f"got {self.kv_reservation!r}"
            )
        if not (0.0 <= self.batch_wait_max_tokens_ratio <= 1.0):
            raise LatencyKernelError(
                f"batch_wait_max_tokens_ratio must be in [0, 1], got {self.batch_wait_max_tokens_ratio!r}"
            )
        if self.concurrency is None and self.request_rate is None:
            raise LatencyKernelError(f"sweep {self.sweep!r}: a point needs concurrency or request_rate")
        if self.concurrency is not None and self.concurrency < 1:
            raise LatencyKernelError(f"concurrency must be at least 1, got {self.concurrency!r}")
        if self.request_rate is not None and not (self.request_rate > 0):
            raise LatencyKernelError(f"request_rate must be positive, got {self.request_rate!r}")
        for name in METRICS:
            s: Stat = getattr(self, name)
            for st in STATS:
                v = s.get(st)
                if v is not None and not (v > 0 and v < 1e6):
                    raise LatencyKernelError(f"{name} {st} must be a positive number of seconds, got {v!r}")

    @property
    def load(self) -> float:
        """The sweep's ordering key: concurrency, else request rate."""
        return float(self.concurrency if self.concurrency is not None else self.request_rate or 0.0)

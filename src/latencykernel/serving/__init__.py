"""From step to service: a discrete-event replay of vLLM v1's scheduler on top of a step
model, reporting what ``vllm bench serve`` reports.

    from latencykernel import serving
    r = serving.estimate(k, isl=1024, osl=1024, concurrency=64)
    r.ttft.median, r.tpot.p99, r.output_throughput_per_gpu, r.as_vllm_bench()

- workloads: ``ClosedLoop(concurrency, isl, osl, num_prompts=None)``,
  ``Poisson(request_rate, isl, osl, num_prompts)``, ``Trace(rows)``; lengths take a number,
  ``RandomRange(length, range_ratio)`` or a list of samples;
- ``simulate(step_model, workload, *, seed=0, **engine) -> ServingResult``;
  ``estimate(kernel, *, isl, osl, concurrency=None, request_rate=None, **kw)``;
- ``Disaggregated(prefill, decode, num_prefill, num_decode, transfer_s)`` for xPyD pools.

The scheduler's rules, each with the vLLM source it follows, are in ``scheduler.py``; the
event loop in ``sim.py`` and its skip-ahead in ``runs.py``; docs/serving.md explains them.
"""

from latencykernel.serving.api import Disaggregated, estimate, simulate
from latencykernel.serving.config import ENGINE_KEYS, EngineConfig
from latencykernel.serving.result import Distribution, ServingResult
from latencykernel.serving.workload import ClosedLoop, Poisson, RandomRange, Requests, Trace

__all__ = [
    "ClosedLoop",
    "Poisson",
    "Trace",
    "RandomRange",
    "Requests",
    "simulate",
    "estimate",
    "Disaggregated",
    "ServingResult",
    "Distribution",
    "EngineConfig",
    "ENGINE_KEYS",
]

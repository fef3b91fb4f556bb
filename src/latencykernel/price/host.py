"""Host (CPU) time of a step: dispatching its kernels, by CUDA-graph mode, and its requests."""

from __future__ import annotations

__all__ = ["graph_dispatch_s", "step_requests_host_s"]


def graph_dispatch_s(
    mode: str, replay_per_step_s: float, eager_per_layer_s: float, piecewise_segments: int, layers: int
) -> float:
    """CPU time to dispatch one step, by the graph mode it runs in.

    FULL:       replay_per_step                       one graph replayed
    PIECEWISE:  replay_per_step · piecewise_segments  one replay per captured segment
    EAGER:      eager_per_layer · layers              launched layer by layer

    The per-kernel launch term (host_launch_per_kernel × kernels) is added by the caller
    on every non-empty step.
    """
    if mode == "full":
        return replay_per_step_s
    if mode == "piecewise":
        return replay_per_step_s * piecewise_segments
    return eager_per_layer_s * layers


def step_requests_host_s(requests: int, per_request_s: float) -> float:
    """Host time a step spends on its requests, beyond dispatching its kernels, seconds.

    t = requests · per_request

    ``requests`` counts the requests the step schedules tokens for (decodes and prompt
    chunks alike). The engine's own bookkeeping runs once per scheduled request per step:
    in vLLM (v0.31.0) the scheduler's pass over the running requests and the token budget
    (vllm/v1/core/sched/scheduler.py ``Scheduler.schedule``), the model runner's input rows
    and block-table rows (vllm/v1/worker/gpu_model_runner.py ``_update_states``,
    ``_prepare_inputs``) and each request's new token, stop check and output
    (``Scheduler.update_from_output``); TensorRT-LLM's PyTorch executor has the same per
    request loop (tensorrt_llm/_torch/pyexecutor/py_executor.py). None of it divides by
    tensor parallelism, where every GPU term of a decode does: it is why a TP8 dense
    model's measured per-request decode slope is up to twice the priced one (issue 11,
    hypothesis 4). Which part of that work the overlapped schedulers leave on the step's
    critical path is not isolated by any public timing, so ``per_request`` is fitted on
    serving measurements (the engine host sets' ``host_step_per_request``)."""
    return requests * per_request_s

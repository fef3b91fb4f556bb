"""Host (CPU) time of a step: dispatching its kernels, by CUDA-graph mode."""

from __future__ import annotations

__all__ = ["graph_dispatch_s"]


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

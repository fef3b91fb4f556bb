"""How a layer's resources overlap into one stage of the step."""

from __future__ import annotations

__all__ = ["layer_stage_s"]


def layer_stage_s(
    sm_s: float, hbm_s: float, nvlink_s: float, nic_s: float, routed_sm_s: float, routed_hbm_s: float
) -> float:
    """Time one layer adds to the overlapped step.

    stage = max(sm − routed_sm, hbm − routed_hbm, nvlink, nic) + routed_sm + routed_hbm

    The layer's dense compute, memory reads and collectives overlap (the slowest sets the
    pace); the routed experts' compute and weight reads run after the dispatch that feeds
    them, so they add. sm_s and hbm_s are the layer's totals (routed parts included).
    """
    top = sm_s - routed_sm_s
    hbm = hbm_s - routed_hbm_s
    if hbm > top:
        top = hbm
    if nvlink_s > top:
        top = nvlink_s
    if nic_s > top:
        top = nic_s
    return top + routed_sm_s + routed_hbm_s

"""Steps of plain decodes priced from their aggregates: ``Kernel.decode_step_times``.

A step where every request is a decode of the same width is priced by the fused plan from
three numbers: how many requests it holds, the tokens they schedule, and the sum of their
computed tokens (``vector.price_steps``: the decode reads and every per-token term scale
with these). A simulator that knows those sums (a run of decodes: request i at step j has
computed c_i + j) needs no row per request. The price equals ``step_times`` on rows with
the same sums bit for bit, because it is the same call on the same numbers; where the
plan reads more of each request (a per-request read transform: sliding windows, block
rounding) or hands a step back to the reference price, there is no aggregate form and the
answer is None (the caller prices the rows)."""

from __future__ import annotations

from typing import Any

import numpy as np

from latencykernel.batch import RESOURCES
from latencykernel.kernel.fast import FastPlan
from latencykernel.kernel.vector import StepTimes, price_steps
from latencykernel.kernel.vector_layout import _BLOCK_STEPS, _Results, _same, bottlenecks, no_steps

__all__ = ["decode_step_times"]

_NONE: Any = None  # a row column price_steps does not read here


def decode_step_times(
    plan: FastPlan | None, width: int, nreq: np.ndarray, sumc: np.ndarray, th: int, budget: int
) -> StepTimes | None:
    """Steps 0 .. len(nreq) - 1, step j holding ``nreq[j]`` decodes of ``width`` tokens
    whose computed tokens sum to ``sumc[j]`` (int64 arrays, checked by the caller), as
    ``step_times`` prices them; None where the plan has no aggregate form (see the module
    docstring). ``width`` must be at most ``th`` (a decode)."""
    if plan is None or plan.specs or not 1 <= width <= th:
        return None
    nsteps = len(nreq)
    if nsteps == 0:
        return no_steps()
    res = _Results(nsteps)
    for k0 in range(0, nsteps, _BLOCK_STEPS):
        k1 = min(k0 + _BLOCK_STEPS, nsteps)
        n = nreq[k0:k1]
        n0 = int(n[0])
        if n0 > 0 and int(n.min()) == n0 == int(n.max()):
            T: Any = n0 * width  # every step alike: priced once in Python floats, as fast.py
            nr: Any = n0
        else:
            T, nr = n * width, n
        # no rows: with every step a decode of one width and no per-request read transform,
        # price_steps reads none (step, scheduled, computed, the segment starts stay unread)
        _, sl = price_steps(
            plan, _NONE, k0, _NONE, _NONE, T, sumc[k0:k1], nr, th, budget, _NONE, _same, k1 - k0, width, width,
            res.rows(k0, k1),
        )  # fmt: skip
        res.add(k0, k1, sl)
    if res.slow is not None and res.slow.any():
        return None
    out = res.out
    return StepTimes(out[0], out[1], bottlenecks(res.best, res.runs), dict(zip(RESOURCES, out[3:8])))

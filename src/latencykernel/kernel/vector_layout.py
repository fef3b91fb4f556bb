"""``Kernel.step_times``: many steps in one call, laid out into blocks and priced by
``vector.price_steps``.

The rows of three equal-length arrays are requests; ``step`` (non-decreasing integers from
0) says which step each belongs to. A step number with no rows (a gap) is an empty step:
host time only, as ``step_time`` prices an empty batch. Steps the fast path does not cover
(see ``fast.py``) are priced one by one by the fallback the caller passes
(``Kernel.step_time``).

How the work is cut (issue 9: 10 M steps/s for 32-request decode steps). Steps 0, 0, …, 1,
1, … of one width (a simulator's batch) are priced block by block, each block's rows read
once from memory in chunks that stay in cache: ``step``'s differences w rows apart (all 1:
the layout and the order at once), ``computed``'s range (one maximum over the uint64 view
catches negatives too) and its sum per step. Any other layout finds its runs of equal step
numbers first. Blocks of a few thousand steps keep every temporary small, so the allocator
reuses it instead of mapping fresh memory, and the results are written in place. A bad
value refuses the call with the message the full checks (``arrays.token_array``, column by
column) give: on any doubt they run first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn

import numpy as np

from latencykernel.batch import MAX_TOKENS, RESOURCES, Batch, StepEstimate
from latencykernel.errors import LatencyKernelError
from latencykernel.kernel.arrays import CHUNK_ROWS as _CHUNK_ROWS
from latencykernel.kernel.arrays import Columns, token_array
from latencykernel.kernel.fast import FastPlan
from latencykernel.kernel.vector import MAX_EMPTY_STEPS, StepTimes, price_steps

__all__ = ["step_times", "bottlenecks", "no_steps"]

_NS = 1e-9
_EXACT_NS = float(2**53)
_FLOAT_NS = float(2**50)
_RES = np.array(RESOURCES, dtype=object)
# The reductions, bound once: a call through them costs about half of ``a.max()`` (numpy's
# method wrappers), which counts in a short call.
_MAX, _MIN, _SUM, _ANY = np.maximum.reduce, np.minimum.reduce, np.add.reduce, np.logical_or.reduce


def step_times(
    plan: FastPlan | None,
    fallback: Callable[[Batch], StepEstimate],
    cols: Columns,
    *,
    decode_threshold: int,
    sm_budget: int = 0,
) -> StepTimes:
    """See ``Kernel.step_times``. ``plan`` is the kernel's fused plan (None: every step
    takes ``fallback``); ``fallback`` prices one batch (``Kernel.step_time``) for the steps
    the plan hands back. The columns come from ``kernel.arrays.token_columns``: int64 and,
    when ``cols.checked``, whole and in [0, MAX_TOKENS] (``step`` may be negative, and is
    checked here); when not, ``scheduled`` alone is checked and ``step``'s range and
    ``computed`` are checked here, on the way, with the same refusals in the same order.
    The settings are whole counts."""
    st, s, c, p, smin, smax, checked = cols
    n = len(st)

    def refuse(message: str | None = None) -> NoReturn:
        # Kernel.step_times checks step, scheduled, computed in turn, then the layout: the
        # checks the quick way skipped come first, so the first refusal is the same.
        if not checked:
            token_array("step", st, negative_ok=True)
            token_array("computed", c)
        raise LatencyKernelError(message or "step_times: a column failed its check")

    for name, col in (("scheduled", s), ("computed", c)):
        if len(col) != n:
            refuse(f"{name} has {len(col)} rows and step has {n}; they must be equal")
    if p is not None and len(p) != n:  # accepted for symmetry with ReqShape; not read
        refuse(f"prompt_len has {len(p)} rows and step has {n}; they must be equal")
    th = decode_threshold
    budget = sm_budget
    if n == 0:
        return no_steps()
    if st[0] < 0:
        refuse(f"step must count from 0; step[0] is {int(st[0])}")

    done = None
    if plan is not None:
        # The layout of a simulator's batch: steps 0, 1, 2, … of one width each. Priced
        # block by block, each block's rows read once while in cache.
        nseg = int(st[-1]) + 1
        if 0 < nseg <= n and n % nseg == 0:
            done = _equal_width(plan, st, s, c, n // nseg, th, budget, smin, smax, checked, refuse)
    if done is None:
        if not checked and int(c.view(np.uint64).max()) > MAX_TOKENS:
            refuse()
        done = _any_layout(plan, st, s, c, n, th, budget, smin, smax, checked, refuse)
    out, best, runs, slow, seg_start, seg_step = done
    overlap, no_overlap = out[0], out[1]
    per = dict(zip(RESOURCES, out[3:8]))
    bottleneck = bottlenecks(best, runs)

    if slow is not None and slow.any():
        # Steps the fast path leaves to the reference: priced one by one by step_time.
        nsteps = len(best)
        nseg = len(seg_start)
        seg_of = np.full(nsteps, -1, dtype=np.int64)
        seg_of[seg_step] = np.arange(nseg)
        for i in np.flatnonzero(slow).tolist():
            k = int(seg_of[i])
            a, b = (int(seg_start[k]), int(seg_start[k + 1]) if k + 1 < nseg else n) if k >= 0 else (0, 0)
            e = fallback(Batch.from_columns(s[a:b].tolist(), c[a:b].tolist(), th, budget))
            overlap[i] = e.overlap
            no_overlap[i] = e.no_overlap
            bottleneck[i] = e.bottleneck
            for r in RESOURCES:
                per[r][i] = e.per_resource.get(r, 0.0)
    return StepTimes(overlap, no_overlap, bottleneck, per)


def no_steps() -> StepTimes:
    """The answer for no steps at all: empty arrays, each its own."""
    z = np.zeros(0)
    return StepTimes(z, z.copy(), np.zeros(0, dtype=object), {r: z.copy() for r in RESOURCES})


def bottlenecks(best: np.ndarray, runs: list[tuple[int, int, int]]) -> np.ndarray:
    """Each step's bottleneck ``Resource`` (an object array): ``_Results``' runs, each of
    one resource, or of ``best`` (its index in RESOURCES) step by step."""
    if len(runs) == 1 and runs[0][2] < 0:
        return _RES[best]  # type: ignore[no-any-return]
    out = np.empty(len(best), dtype=object)
    for lo, hi, i in runs:
        out[lo:hi] = RESOURCES[i] if i >= 0 else _RES[best[lo:hi]]
    return out


_BLOCK_STEPS = 8192  # steps per block of the price (its temporaries stay small)
_BLOCK_ROWS = 1 << 20  # rows per block of the price, at most (unless one step has more)

_Done = tuple[np.ndarray, np.ndarray, list[tuple[int, int, int]], Any, np.ndarray, np.ndarray]


class _Results:
    """The results being filled block by block: in one allocation the seconds overlap,
    no_overlap, a scratch row (the raw overlap), then sm, hbm, nvlink, nic, host; the
    bottleneck's index in RESOURCES; the steps left to the fallback."""

    def __init__(self, nsteps: int, priced: bool = True) -> None:
        # Every entry is written when the plan prices the steps (else zeros, for the fallback).
        self.out = np.empty((8, nsteps)) if priced else np.zeros((8, nsteps))
        self.best = np.empty(nsteps, dtype=np.intp) if priced else np.zeros(nsteps, dtype=np.intp)
        self.runs: list[tuple[int, int, int]] = []  # (lo, hi, the bottleneck of all, or -1: see best)
        self.slow: Any = None

    def rows(self, lo: int, hi: int) -> np.ndarray:
        """Where ``price_steps`` writes steps lo .. hi - 1: (overlap, sm, hbm, nvlink, nic, host)."""
        return self.out[2:, lo:hi]

    def add(self, lo: int, hi: int, sl: Any) -> None:
        """Steps lo .. hi - 1, priced into ``rows`` (``sl``: its steps to leave, or None):
        ``Kernel._estimate`` over the block. The seconds to whole nanoseconds (truncated,
        as int()), the resources' sum, the overlap plus host (at most the sum), all back to
        seconds (overlap, no_overlap, sm .. host), and the first of the largest resources."""
        B = self.out[:, lo:hi]
        R = B[2:]
        np.multiply(R, 1e9, out=R)
        np.trunc(R, out=R)
        ns = B[3:8]
        no = _SUM(ns, axis=0, out=B[1])
        # The times are not negative (a rounding below zero truncates to -0.0), so the sum
        # bounds each: below 2**50 every value and sum is an exact integer held as a float,
        # as int() and Python's integer sums give. (Rows 1 and 2: the sum, the raw overlap.)
        if float(_MAX(B[1:3], axis=None)) < _FLOAT_NS:
            o = np.add(B[2], B[7], out=B[0])
            np.minimum(o, no, out=o)
            i = _first_largest(ns, self.best[lo:hi])
        else:
            # Whole nanoseconds as int64 are exact only below 2**53 ns (104 days): a step
            # above that (or not finite) is priced by the fallback, whose Python integers do
            # not overflow; the others in int64.
            huge = ~(R < _EXACT_NS).all(axis=0)
            if huge.any():
                sl = huge if sl is None else (sl | huge)
                R[:, huge] = 0.0
            N = R.astype(np.int64)
            nsi = N[1:6]
            noi = nsi.sum(axis=0)
            oi = N[0] + N[5]
            np.minimum(oi, noi, out=oi)
            B[0] = oi
            B[1] = noi
            i = _first_largest(nsi, self.best[lo:hi])
        B *= _NS  # the scratch row too: one call
        if sl is not None:
            if self.slow is None:
                self.slow = np.zeros(len(self.best), dtype=bool)
            self.slow[lo:hi] = sl
        self.runs.append((lo, hi, i))


def _first_largest(ns: np.ndarray, best: np.ndarray) -> int:
    """Into ``best``, the row of ``ns`` with each column's largest value, the first of
    equal ones (as step_time); returns it when it is the same for every column, else -1."""
    if len(best) <= 64:  # a few steps: one call
        np.argmax(ns, axis=0, out=best)
        return -1
    top = ns.max(axis=0)
    got: Any = None  # the row found so far, -1 where none yet
    for i in range(len(ns)):
        m = ns[i] == top
        if got is None:
            if m.all():
                best[:] = i
                return i
            if m.any():
                got = np.where(m, i, -1)
        else:
            m &= got < 0
            got[m] = i
    best[:] = got
    return -1


def _equal_width(
    plan: FastPlan,
    st: np.ndarray,
    s: np.ndarray,
    c: np.ndarray,
    w: int,
    th: int,
    budget: int,
    smin: int,
    smax: int,
    checked: bool,
    refuse: Callable[[], NoReturn],
) -> _Done | None:
    """The price when ``step`` is 0 (w times), 1 (w times), …, else None (found on the
    way: the general layout then takes over, and refuses what it must). Each block's rows
    are read once from memory: ``step``'s differences (0 within a step, 1 from one to the
    next: the layout and the non-decreasing check at once), ``computed``'s check and its
    sum per step."""
    n = len(st)
    nsteps = n // w
    B = max(1, min(_BLOCK_STEPS, _BLOCK_ROWS // w))  # steps per block
    sub = max(1, _CHUNK_ROWS // w)  # steps per pass
    res = _Results(nsteps)
    dbuf = np.empty(min(sub, nsteps) * w, dtype=np.int64)
    starts = np.arange(0, min(B, nsteps) * w, w)
    sumc = np.empty(min(B, nsteps), dtype=np.int64)
    T0: Any = w * smin if smin == smax and smin > 0 else None
    if _ANY(st[:w]):  # the first w rows are step 0 (with the rule above, row i is step i // w)
        return None
    for k0 in range(0, nsteps, B):
        k1 = min(k0 + B, nsteps)
        nb = k1 - k0
        for j0 in range(k0, k1, sub):
            j1 = min(j0 + sub, k1)
            a, b = j0 * w, j1 * w
            e = min(b, n - w)
            if e > a:  # each row's step is one more than the step w rows before
                d = dbuf[: e - a]
                np.subtract(st[a + w : e + w], st[a:e], out=d)
                if int(_MIN(d)) != 1 or int(_MAX(d)) != 1:
                    return None
            cc = c[a:b]
            if not checked and int(_MAX(cc.view(np.uint64))) > MAX_TOKENS:
                refuse()
            if j1 - j0 >= 256:  # einsum sums rows fastest; reduceat costs less to call
                np.einsum("ij->i", cc.reshape(j1 - j0, w), out=sumc[j0 - k0 : j1 - k0])  # exact: integers
            else:
                np.add.reduceat(cc, starts[: j1 - j0], out=sumc[j0 - k0 : j1 - k0])
        r0, r1 = k0 * w, k1 * w
        T: Any = T0
        if T is None:
            T = np.add.reduceat(s[r0:r1], starts[:nb]) if smin != smax else np.zeros(nb, dtype=np.int64)
            t0 = int(T[0])
            if t0 > 0 and int(T.min()) == t0 == int(T.max()):
                T = t0
        _, sl = price_steps(
            plan,
            st[r0:r1],
            k0,
            s[r0:r1],
            c[r0:r1],
            T,
            sumc[:nb],
            w,
            th,
            budget,
            starts[:nb],
            _same,
            nb,
            smin,
            smax,
            res.rows(k0, k1),
        )
        res.add(k0, k1, sl)
    if res.slow is None:  # no step for the fallback: its row offsets are not needed
        return res.out, res.best, res.runs, None, starts[:0], starts[:0]
    return res.out, res.best, res.runs, res.slow, np.arange(0, n, w), np.arange(nsteps)


def _same(v: np.ndarray) -> np.ndarray:
    return v


def _any_layout(
    plan: FastPlan | None,
    st: np.ndarray,
    s: np.ndarray,
    c: np.ndarray,
    n: int,
    th: int,
    budget: int,
    smin: int,
    smax: int,
    checked: bool,
    refuse: Callable[..., NoReturn],
) -> _Done:
    """The price for any layout of rows: segments found, gaps filled with empty steps."""
    seg_start, seg_step = _segments(st, n)
    nseg = len(seg_start)
    if nseg > 1:
        rise = np.diff(seg_step)
        if int(rise.min()) < 0:  # the runs' step numbers rising is the whole non-decreasing check
            j = int(seg_start[int(np.argmax(rise < 0)) + 1])
            refuse(f"step must be non-decreasing; step[{j}] is {int(st[j])} after step[{j - 1}] = {int(st[j - 1])}")
    last = int(seg_step[-1])
    if not checked and last > MAX_TOKENS:  # rising from step[0] >= 0: the last is the largest
        token_array("step", st, negative_ok=True)
    nsteps = last + 1
    if nsteps > n + MAX_EMPTY_STEPS:
        # One entry per step number: a far step number would allocate entries for every
        # step before it (step [0, 10**9] asked for a billion).
        refuse(
            f"step numbers must not exceed the number of rows ({n}) by more than {MAX_EMPTY_STEPS:,} "
            f"(empty steps); step[{n - 1}] is {nsteps - 1}. step_times returns one entry per step "
            "number, gaps included: number the steps densely"
        )
    blocks = _blocks(seg_start, n)
    res = _Results(nsteps, plan is not None)
    if plan is None:
        res.slow = np.ones(nsteps, dtype=bool)
        return res.out, res.best, [(0, nsteps, 0)], res.slow, seg_start, seg_step
    for k0, k1 in blocks:
        lo = 0 if k0 == 0 else int(seg_step[k0])
        hi = int(seg_step[k1]) if k1 < nseg else nsteps
        r0 = int(seg_start[k0])
        r1 = int(seg_start[k1]) if k1 < nseg else n
        _, sl = _block(
            plan,
            st[r0:r1],
            s[r0:r1],
            c[r0:r1],
            seg_start[k0:k1] - r0 if r0 else seg_start[k0:k1],
            seg_step[k0:k1] - lo if lo else seg_step[k0:k1],
            lo,
            hi - lo,
            th,
            budget,
            smin,
            smax,
            res.rows(lo, hi),
        )
        res.add(lo, hi, sl)
    return res.out, res.best, res.runs, res.slow, seg_start, seg_step


def _segments(st: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The first row of each run of equal step numbers and its step number, one pass over
    ``step`` in chunks (the comparison's booleans reuse one small buffer)."""
    if n <= _CHUNK_ROWS:
        change = np.flatnonzero(st[1:] != st[:-1])
        out = np.empty(len(change) + 1, dtype=np.int64)
        out[0] = 0
        np.add(change, 1, out=out[1:])
        return out, st[out]
    buf = np.empty(_CHUNK_ROWS, dtype=bool)
    parts = [np.zeros(1, dtype=np.int64)]
    steps = [st[:1]]
    for a in range(0, n - 1, _CHUNK_ROWS):
        b = min(a + _CHUNK_ROWS, n - 1)
        m = buf[: b - a]
        np.not_equal(st[a + 1 : b + 1], st[a:b], out=m)
        idx = np.flatnonzero(m)
        idx += a + 1
        parts.append(idx)
        steps.append(st[idx])
    return np.concatenate(parts), np.concatenate(steps)


def _blocks(seg_start: np.ndarray, n: int) -> list[tuple[int, int]]:
    """Runs [k0, k1) of segments of at most _BLOCK_STEPS segments and, where the runs allow,
    _BLOCK_ROWS rows."""
    nseg = len(seg_start)
    if nseg <= _BLOCK_STEPS and n <= _BLOCK_ROWS:
        return [(0, nseg)]
    cuts = set(range(0, nseg, _BLOCK_STEPS))
    if n > _BLOCK_ROWS:
        cuts.update(np.searchsorted(seg_start, np.arange(0, n, _BLOCK_ROWS)).tolist())
    edges = sorted(k for k in cuts if k < nseg)
    return list(zip(edges, [*edges[1:], nseg]))


def _block(
    fp: FastPlan,
    st: np.ndarray,
    s: np.ndarray,
    c: np.ndarray,
    seg_start: np.ndarray,
    seg_step: np.ndarray,
    lo: int,
    nsteps: int,
    th: int,
    budget: int,
    smin: int,
    smax: int,
    out: np.ndarray,
) -> tuple[np.ndarray, Any]:
    """Steps lo .. lo + nsteps - 1 (rows ``st``, ``s``, ``c`` of them; ``seg_start`` and
    ``seg_step`` relative to the block): their (6, nsteps) seconds and the steps to price
    one by one (or None)."""
    n = len(st)
    nseg = len(seg_start)
    gaps = nseg != nsteps

    def per_step(v: np.ndarray) -> np.ndarray:
        if not gaps:
            return v
        out = np.zeros(nsteps, dtype=v.dtype)
        out[seg_step] = v
        return out

    # Counts per step: a Python int when every step has the same (equal-width layout, no
    # gaps), so that what depends only on them is priced once, not once per step.
    width = n // nseg
    seg_n = np.diff(seg_start, append=n)
    nreq: Any = width if not gaps and width * nseg == n and int(seg_n.max()) == width else per_step(seg_n)
    T: Any = nreq * smin if smin == smax else per_step(np.add.reduceat(s, seg_start))
    if isinstance(T, int) and T == 0:  # steps of requests without tokens: priced as empty
        T = np.zeros(nsteps, dtype=np.int64)
    if isinstance(T, np.ndarray) and not gaps:
        t0 = int(T[0])
        if t0 > 0 and int(T.min()) == t0 == int(T.max()):
            T = t0
    sumc = per_step(np.add.reduceat(c, seg_start))
    return price_steps(fp, st, lo, s, c, T, sumc, nreq, th, budget, seg_start, per_step, nsteps, smin, smax, out)

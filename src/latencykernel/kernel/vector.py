"""Many steps in one call: ``Kernel.step_times`` and its result, ``StepTimes``.

The rows of three equal-length arrays are requests; ``step`` (non-decreasing integers from
0) says which step each belongs to. A step number with no rows (a gap) is an empty step:
host time only, as ``step_time`` prices an empty batch.

The arithmetic is ``fast.FastPlan.price`` repeated on arrays, operation for operation and in
the same order: numpy's elementwise +, −, × and ÷ round exactly as Python's floats do, sums
of floats that feed a price are taken with ``np.bincount`` (which adds row after row, as the
scalar loops do), integer sums are exact either way, and powers are taken with Python's own
``**`` on the distinct exponents. So every step's result equals ``step_time`` on the same
batch bit for bit. Steps the fast path does not cover (see ``fast.py``) are priced one by
one by the fallback the caller passes (``Kernel.step_time``).

This module only vectorises: every expression that mirrors a law names it in a comment
(``# price.<module>.<law>``), and tests/test_one_home.py checks them term by term against
the laws on random inputs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, NoReturn

import numpy as np

from latencykernel.batch import MAX_TOKENS, RESOURCES, Batch, Resource, StepEstimate
from latencykernel.errors import LatencyKernelError
from latencykernel.kernel.arrays import CHUNK_ROWS as _CHUNK_ROWS
from latencykernel.kernel.arrays import Columns, token_array
from latencykernel.kernel.fast import T_DCP, T_GENERIC, T_TOPK, T_WINDOW, FastPlan, ReadLaw
from latencykernel.price.collective import LARGE_MESSAGE_BYTES
from latencykernel.price.ramp import sm_budget_derate
from latencykernel.price.recurrent import chunked_prefill_share_s

__all__ = ["StepTimes", "step_times"]

_NS = 1e-9
_EXACT_NS = float(2**53)
_FLOAT_NS = float(2**50)
MAX_EMPTY_STEPS = 2**20  # gaps beyond the rows, at most (about 70 MB of results)
_RES = np.array(RESOURCES, dtype=object)


@dataclass(frozen=True, eq=False)  # arrays: compare fields with numpy
class StepTimes:
    """The prices of many steps (one entry per step, seconds).

    overlap, no_overlap: float arrays, as ``StepEstimate``
    bottleneck:          object array of ``Resource``
    per_resource:        every ``Resource`` to a float array (0 where a step does not use it)
    """

    overlap: np.ndarray
    no_overlap: np.ndarray
    bottleneck: np.ndarray
    per_resource: dict[Resource, np.ndarray]

    def __len__(self) -> int:
        return len(self.overlap)

    def __getitem__(self, i: int) -> StepEstimate:
        """Step ``i`` as the ``StepEstimate`` ``step_time`` returns for it."""
        per = {r: float(a[i]) for r, a in self.per_resource.items() if a[i] > 0}
        return StepEstimate(float(self.overlap[i]), float(self.no_overlap[i]), self.bottleneck[i], per)

    def __iter__(self) -> Iterator[StepEstimate]:
        return (self[i] for i in range(len(self)))


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
        z = np.zeros(0)
        return StepTimes(z, z.copy(), np.zeros(0, dtype=object), {r: z.copy() for r in RESOURCES})
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
    per = dict(zip(RESOURCES, out[2:7]))
    bottleneck = np.empty(len(best), dtype=object)
    for lo, hi, i in runs:
        bottleneck[lo:hi] = RESOURCES[i] if i >= 0 else _RES[best[lo:hi]]

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


_BLOCK_STEPS = 8192  # steps per block of the price (its temporaries stay small)
_BLOCK_ROWS = 1 << 20  # rows per block of the price, at most (unless one step has more)

_Done = tuple[np.ndarray, np.ndarray, list[tuple[int, int, int]], Any, np.ndarray, np.ndarray]


class _Results:
    """The results being filled block by block: in one allocation the seconds overlap,
    no_overlap, sm, hbm, nvlink, nic, host, and a scratch row (the raw overlap); the
    bottleneck's index in RESOURCES; the steps left to the fallback."""

    def __init__(self, nsteps: int, priced: bool = True) -> None:
        # Every entry is written when the plan prices the steps (else zeros, for the fallback).
        self.out = np.empty((8, nsteps)) if priced else np.zeros((8, nsteps))
        self.best = np.empty(nsteps, dtype=np.intp) if priced else np.zeros(nsteps, dtype=np.intp)
        self.runs: list[tuple[int, int, int]] = []  # (lo, hi, the bottleneck of all, or -1: see best)
        self.slow: Any = None

    def rows(self, lo: int, hi: int) -> np.ndarray:
        """Where ``_price`` writes steps lo .. hi - 1: (sm, hbm, nvlink, nic, host, overlap)."""
        return self.out[2:, lo:hi]

    def add(self, lo: int, hi: int, sl: Any) -> None:
        """Steps lo .. hi - 1, priced into ``rows`` (``sl``: its steps to leave, or None):
        ``Kernel._estimate`` over the block. The seconds (sm, hbm, nvlink, nic, host,
        overlap) to whole nanoseconds (truncated, as int()), their sum, the overlap plus host
        (at most the sum), all back to seconds (overlap, no_overlap, sm .. host), and the
        first of the largest resources."""
        B = self.out[:, lo:hi]
        R = B[2:]
        np.multiply(R, 1e9, out=R)
        np.trunc(R, out=R)
        ns = B[2:7]
        no = ns.sum(axis=0, out=B[1])
        # The times are not negative (a rounding below zero truncates to -0.0), so the sum
        # bounds each: below 2**50 every value and sum is an exact integer held as a float,
        # as int() and Python's integer sums give.
        if max(float(no.max()), float(B[7].max())) < _FLOAT_NS:
            o = np.add(B[7], B[6], out=B[0])
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
            nsi = N[:5]
            noi = nsi.sum(axis=0)
            oi = N[5] + N[4]
            np.minimum(oi, noi, out=oi)
            B[0] = oi
            B[1] = noi
            i = _first_largest(nsi, self.best[lo:hi])
        B[:7] *= _NS
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
    if st[:w].any():  # the first w rows are step 0 (with the rule above, row i is step i // w)
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
                if int(d.min()) != 1 or int(d.max()) != 1:
                    return None
            cc = c[a:b]
            if not checked and int(cc.view(np.uint64).max()) > MAX_TOKENS:
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
        _, sl = _price(
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
    return _price(fp, st, lo, s, c, T, sumc, nreq, th, budget, seg_start, per_step, nsteps, smin, smax, out)


def _coll_x(floor: float, b: Any, itr: float, ipk: float) -> Any:
    """floor + b·inv_transition, each byte beyond 8 MiB at the peak rate
    (``price.collective.collective_time_s``'s first term, over arrays)."""
    x = floor + b * itr
    if itr > ipk:
        x = np.where(b > LARGE_MESSAGE_BYTES, floor + LARGE_MESSAGE_BYTES * itr + (b - LARGE_MESSAGE_BYTES) * ipk, x)
    return x


def _collective_s(floor: float, ipk: float, itr: float, b: Any) -> Any:
    """``price.collective.collective_time_s`` of ``b`` bytes (a float or an array), as
    fast.py folds it: max(floor + b·inv_transition (the peak beyond 8 MiB), b·inv_peak)."""
    if isinstance(b, np.ndarray):
        return np.maximum(_coll_x(floor, b, itr, ipk), b * ipk)
    if b > LARGE_MESSAGE_BYTES and itr > ipk:
        x = floor + LARGE_MESSAGE_BYTES * itr + (b - LARGE_MESSAGE_BYTES) * ipk
    else:
        x = floor + b * itr
    y = b * ipk
    return x if x > y else y


def _mx(a: Any, b: Any) -> Any:
    """The larger of two floats or arrays (fast.py's ``b if b > a else a``)."""
    if type(a) is float and type(b) is float:
        return b if b > a else a
    return np.maximum(a, b)


def _largest(*xs: Any) -> Any:
    """The largest of floats and arrays (None: left out). Taking a maximum rounds nothing,
    so the floats are folded first, in Python, and the arrays after."""
    top: Any = None
    arrays = []
    for x in xs:
        if x is None:
            continue
        if isinstance(x, np.ndarray):
            arrays.append(x)
        elif top is None or x > top:
            top = x
    for x in arrays:
        top = x if top is None else np.maximum(top, x)
    return top


def _pick(cond: Any, a: Any, b: Any) -> Any:
    """``a if cond else b`` for a bool, np.where for an array of them."""
    if type(cond) is bool:
        return a if cond else b
    return np.where(cond, a, b)


def _pow_table(q: float, n: np.ndarray) -> np.ndarray:
    """q ** n for every entry, with Python's float power (as the scalar path) on the distinct n."""
    top = int(n.max())
    if top <= 1 << 20:
        present = np.flatnonzero(np.bincount(n, minlength=top + 1))
        table = np.zeros(top + 1)
        table[present] = [q**k for k in present.tolist()]
        return table[n]
    u, inv = np.unique(n, return_inverse=True)
    return np.array([q**k for k in u.tolist()])[inv]


def _price(
    fp: FastPlan,
    st: np.ndarray,
    lo: int,
    s: np.ndarray,
    c: np.ndarray,
    T: Any,
    sumc: np.ndarray,
    nreq: Any,
    th: int,
    budget: int,
    seg_start: np.ndarray,
    per_step: Any,
    nsteps: int,
    smin: int,
    smax: int,
    out: np.ndarray,
) -> tuple[np.ndarray, Any]:
    """``FastPlan.price`` over arrays of steps: ``out``, a (6, nsteps) array, filled with
    (sm, hbm, nvlink, nic, host, overlap) seconds, and the steps to price one by one (or None).

    ``T`` and ``nreq`` are Python ints when every step has the same (then everything that
    depends on them only is priced once, in Python floats, as fast.py does), else arrays.
    A term fast.py adds as an exact 0.0 (no experts, no fabric, the first kind's 0.0 +) is
    left out: every term is a time, not negative, so adding 0.0 changes nothing. Step
    numbers in ``st`` count from ``lo`` (the block's first step)."""

    def rel(x: np.ndarray) -> np.ndarray:
        return x - lo if lo else x

    arr = isinstance(T, np.ndarray)
    empty: Any = False
    any_empty = False
    Tsafe: Any = T
    Tf: Any
    if not arr:
        Tf = float(T)
    else:
        empty = T == 0
        any_empty = bool(empty.any())
        Tsafe = np.where(empty, 1, T) if any_empty else T
        Tf = Tsafe.astype(np.float64)
    w = fp.width

    uniform: Any
    if smin == smax == w:
        uniform = nreq > 0
    elif smin >= w:
        # Every row schedules w or more: a step's sum is w·rows only when each row is w.
        uniform = T == nreq * w
    else:
        odd = np.flatnonzero(s != w)
        uniform = (nreq > 0) & (np.bincount(rel(st[odd]), minlength=nsteps) == 0)

    slow = None
    has_pre = None
    n_pre: Any = 0
    wins: dict[int, np.ndarray] = {}
    causal: Any = 0.0
    dec_tokens: Any
    dec_kv: Any
    if smax > th:
        pidx = np.flatnonzero(s > th)
        pst, ps, pc = rel(st[pidx]), s[pidx], c[pidx]
        n_pre = np.bincount(pst, minlength=nsteps)
        has_pre = n_pre > 0
        tp_ = np.bincount(pst, weights=ps, minlength=nsteps).astype(np.int64)
        cp_ = np.bincount(pst, weights=pc, minlength=nsteps).astype(np.int64)
        # Each prefill over peak·efficiency of its own query tokens, as fast.FastPlan.price.
        psf, pcf = ps.astype(np.float64), pc.astype(np.float64)
        inv_eff = (psf + fp.m_half) * fp.inv_pe / psf
        causal = np.bincount(pst, weights=_causal_flops(psf, pcf) * inv_eff, minlength=nsteps)
        for wdw in fp.windows:
            wins[wdw] = np.bincount(pst, weights=_windowed_causal_flops(psf, pcf, wdw) * inv_eff, minlength=nsteps)
        dec_tokens = T - tp_
        dec_kv = T + sumc - tp_ - cp_
        if fp.pcp_prefill_fallback or fp.dcp_prefill_fallback:
            slow = has_pre
    else:
        dec_tokens = T
        dec_kv = T + sumc
    # Decodes with any context. Only a windowed secondary reads their count (as fast.py);
    # otherwise whether there is one is whether their contexts sum above zero.
    n_dec: Any = dec_kv
    if fp.needs_ndecode:
        n_dec = nreq - n_pre
        if smin == 0:
            zidx = np.flatnonzero((s == 0) & (c == 0))
            if len(zidx):
                n_dec = n_dec - np.bincount(rel(st[zidx]), minlength=nsteps)
    has_dec: Any = None  # n_dec > 0, when needed
    if any_empty or fp.needs_ndecode:
        has_dec = n_dec > 0
        all_dec = bool((has_dec | empty).all())
    else:
        all_dec = int(n_dec.min()) > 0

    # Host: the graph mode by batch shape, eager above the capture ceiling.
    eager: Any = T > fp.capture
    if arr and not eager.any():
        eager = False
    if not isinstance(uniform, bool) and uniform.all():
        uniform = True
    host: Any = _pick(eager, fp.host[2], _pick(uniform, fp.host[0], fp.host[1]))

    # Per-request transforms of the decode contexts.
    toks: list[np.ndarray] = []
    if fp.specs:
        ctx = s + c
        if has_pre is not None:
            ctx = np.where(s > th, 0, ctx)
        for read_law in fp.specs:
            toks.append(_transform(read_law, ctx, rel(st), seg_start, per_step, nsteps))

    d = sm_budget_derate(fp.sm_count, budget)
    Y = (Tf + fp.m_half) * fp.inv_pe  # T/(peak·efficiency(T)): price.ramp.efficiency folded
    Yd = Y * d if d != 1.0 else Y  # x·1.0 is x

    # price.collective.collective_time_s of each graph collective
    ts = [_collective_s(floor, ipk, itr, Tf * mult) for floor, ipk, itr, mult, _nic in fp.colls]
    pows: dict[float, Any] = {}
    nroute = Tsafe * fp.funnel
    rows_nonlatent = None
    dec_kvf: Any = None

    p_sm: Any = None  # None: nothing added yet (fast.py's 0.0)
    p_hbm: Any = None
    p_nv: Any = None
    p_nic: Any = None
    overlap: Any = None
    sm: Any
    hbm: Any
    rsm: Any
    rhbm: Any
    terms: dict[tuple[float, float, Any, int], Any] = {}  # decode reads of equal coefficients, once
    for count, G, R, Wh, Eh, rf, rinv, expert, attn, nv_idx, nic_idx, dcp, Fp, ovr in fp.kinds:
        top_sm: Any = None
        g = G * Yd
        if Fp > 0.0 and has_pre is not None:  # price.recurrent.recurrent_update_s, as fast.py
            sm = np.where(
                dec_tokens < T,
                g + rf + rinv * dec_tokens + chunked_prefill_share_s(Fp, T - dec_tokens, Tsafe, Yd),
                g + rf + rinv * Tf,
            )
        else:
            sm = g + rf + rinv * Tf
        hid: Any = None
        if ovr:  # price.ramp.gemm_read_beyond_compute_s, as fast.py (the hidden read stays in the stage)
            hid = np.minimum(g, Wh) if arr else (g if Wh > g else Wh)
            hbm = Wh - hid + Eh * Tf
        else:
            hbm = Wh + Eh * Tf
        rsm = rhbm = None
        if expert is not None:
            q, Z = expert
            if q not in pows:
                pows[q] = _pow_table(q, nroute) if arr else q**nroute
            rsm = R * Yd
            rhbm = Z * (1.0 - pows[q])  # price.experts.experts_touched
        merged_floor = None
        if attn is not None:
            floor, coef, fb, spec, qhd, qhd_ps, window, launch, pf, secs = attn
            key = (floor, coef, fb, spec)
            term = terms.get(key)
            if term is None:
                if spec >= 0:
                    tok = toks[spec]
                else:
                    if dec_kvf is None:
                        dec_kvf = dec_kv.astype(np.float64)
                    tok = dec_kvf
                # price.attention.decode_attention_s (or the raw KV bytes without a rate)
                term = terms[key] = floor + tok * coef if fb is None else tok * fb
            new = hbm + term
            for f2, c2, w2, r2, dcp2, interleave in secs:
                t2: Any = dec_kv  # price.attention.secondary_read_tokens
                if w2 > 0:
                    t2 = np.minimum(t2, w2 * n_dec)
                if r2 > 1:
                    t2 = t2 / r2
                if dcp2 > 1:
                    t2 = _dcp_rank_tokens((t2 + 0.5).astype(np.int64), dcp2, interleave)
                new = new + (f2 + t2 * c2)
            if not all_dec and has_dec is None:
                has_dec = n_dec > 0
            hbm = new if all_dec else np.where(has_dec, new, hbm)
            if has_pre is not None:
                lc = wins[window] if window > 0 else causal
                if qhd_ps > 0:  # price.attention.prefill_attention_s
                    new = sm + (pf + lc * qhd_ps * d)
                else:
                    new = sm + lc * qhd * d
                sm = np.where(has_pre, new, sm)
                if launch:  # one varlen launch: the smaller floor dropped from the totals
                    if has_dec is None:
                        has_dec = n_dec > 0
                    both = has_pre & has_dec
                    if launch == 1:
                        hbm = np.where(both, hbm - floor, hbm)
                        merged_floor = (both, floor)
                    else:
                        sm = np.where(both, sm - pf, sm)
                        top_sm = np.where(both, sm + pf, sm)
        nv: Any = None  # None: 0.0 (no fabric)
        for i in nv_idx:
            nv = ts[i] if nv is None else nv + ts[i]
        nic: Any = None
        for i in nic_idx:
            nic = ts[i] if nic is None else nic + ts[i]
        if dcp is not None:
            latent, charges = dcp
            if latent:
                rows = dec_tokens
            else:
                if rows_nonlatent is None:
                    rows_nonlatent = np.where(sumc > 0, T, 0)
                rows = rows_nonlatent
            some = rows > 0
            if isinstance(some, np.bool_):
                some = bool(some)
            for floor2, ipk, itr, mult, to_nic in charges:
                # price.collective.collective_time_s
                tc = _collective_s(floor2, ipk, itr, rows * mult)
                if to_nic:
                    nic = _pick(some, (0.0 if nic is None else nic) + tc, 0.0 if nic is None else nic)
                else:
                    nv = _pick(some, (0.0 if nv is None else nv) + tc, 0.0 if nv is None else nv)
        # price.overlap.layer_stage_s, over the floors before the one-launch merge (as fast.py)
        h = hbm if hid is None else hbm + hid
        if merged_floor is not None:
            h = np.where(merged_floor[0], h + merged_floor[1], h)
        top = _largest(sm if top_sm is None else top_sm, h, nv, nic)
        x_sm = sm
        x_hbm = hbm
        if rsm is not None:
            top = top + rsm + rhbm
            x_sm = sm + rsm
            x_hbm = hbm + rhbm
        if count != 1:  # 1·x is x
            top = count * top
            x_sm = count * x_sm
            x_hbm = count * x_hbm
            if nv is not None:
                nv = count * nv
            if nic is not None:
                nic = count * nic
        overlap = top if overlap is None else overlap + top
        p_sm = x_sm if p_sm is None else p_sm + x_sm
        p_hbm = x_hbm if p_hbm is None else p_hbm + x_hbm
        if nv is not None:
            p_nv = nv if p_nv is None else p_nv + nv
        if nic is not None:
            p_nic = nic if p_nic is None else p_nic + nic

    head_sm = fp.head_g * Yd
    head = _mx(head_sm, fp.head_h)
    for i, x, y in ((0, p_sm, head_sm), (1, p_hbm, fp.head_h), (5, overlap, head)):
        if x is None:
            out[i] = y
        elif isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            np.add(x, y, out=out[i])
        else:
            out[i] = x + y
    for i, x in ((2, p_nv), (3, p_nic), (4, host)):
        out[i] = 0.0 if x is None else x
    if any_empty:
        out[:4, empty] = 0.0
        out[5, empty] = 0.0
        eh = _pick(nreq == 0, fp.empty_host[0], fp.empty_host[1])
        out[4, empty] = eh[empty] if isinstance(eh, np.ndarray) else eh
    return out, slow


def _causal_flops(s: np.ndarray, c: np.ndarray) -> np.ndarray:
    """``price.attention.causal_flops_per_qk_dim`` on float arrays (whole numbers below 2**53:
    every product rounds once, as Python's exact integer product converted to float)."""
    return 4.0 * (s * c + s * s / 2.0)


def _windowed_causal_flops(s: np.ndarray, c: np.ndarray, window: int) -> np.ndarray:
    """``price.attention.windowed_causal_flops_per_qk_dim`` of each (s, c) on its own, on
    float arrays."""
    ns = np.maximum(0.0, np.minimum(s, window - c))
    return 4.0 * (ns * (c + 1) + ns * (ns - 1) / 2.0 - ns / 2.0 + (s - ns) * window)


def _dcp_rank_tokens(length: np.ndarray, dcp: int, interleave: int) -> np.ndarray:
    """``price.context.dcp_rank_tokens`` on an array."""
    i = max(interleave, 1)
    cyc = i * dcp
    return np.where(length <= 0, 0, (length // cyc) * i + np.minimum(length % cyc, i))


def _transform(
    spec: ReadLaw, ctx: np.ndarray, st: np.ndarray, seg_start: np.ndarray, per_step: Any, nsteps: int
) -> np.ndarray:
    """``fast._transform`` per step (``price.context.decode_rank_read_tokens``): integer reads
    summed exactly per segment, float reads added row after row."""
    law, topk, window, ratio, dcp, interleave = spec
    if law == T_WINDOW:
        return per_step(np.add.reduceat(np.minimum(ctx, window), seg_start))
    if law == T_TOPK:
        return per_step(np.add.reduceat(np.minimum(ctx, topk), seg_start))
    if law == T_DCP:
        return per_step(np.add.reduceat(_dcp_rank_tokens(ctx, dcp, interleave), seg_start))
    assert law == T_GENERIC
    # price.attention.decode_read_tokens
    read: Any = np.minimum(ctx, window) if window > 0 else ctx
    if topk > 0:
        read = np.minimum(ctx, topk)
        if ratio > 0:
            read = np.where(ctx > topk, read + (ctx - topk) / ratio, read)
    if dcp > 1:
        read = _dcp_rank_tokens((read + 0.5).astype(np.int64), dcp, interleave)
    return np.bincount(st, weights=read, minlength=nsteps)

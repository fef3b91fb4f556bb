"""Pricing a run of decode steps: the run's columns (``RunColumns``) and the one
``step_times`` call (or ``step_time`` a step for a short run) that prices every busy rank's
steps; the error for a bad time a step model returns."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from latencykernel.batch import Batch
from latencykernel.errors import LatencyKernelError

if TYPE_CHECKING:
    from latencykernel.serving.sim import Engine

__all__ = ["RunColumns", "bad_time", "price_run", "SHORT_RUN"]

SHORT_RUN = 12  # runs up to this many steps are priced step by step (step_times costs about 12 step_time calls)


def bad_time(source: str, v: object) -> LatencyKernelError:
    """The error for a time the step model returned that is negative, NaN or infinite."""
    return LatencyKernelError(f"the step model's {source} returned {v!r}; a time must be a finite number >= 0 s")


@dataclass(slots=True, eq=False)
class RunColumns:
    """A run's columns: the busy ranks (indices into the engine's ranks) and, over their
    requests concatenated in rank order then plan order, ids, contexts and placeholders
    before the run, last-token steps, held and shared (prefix-cache) blocks; new blocks by
    step per busy rank; the speculative columns (advance, emitted, contexts, blocks) when
    drafts are on."""

    busy: list[int]
    offs: list[int]
    rid: np.ndarray
    c0: np.ndarray
    o0: np.ndarray
    f: np.ndarray
    held: np.ndarray
    shared: np.ndarray
    extra: np.ndarray
    spec: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None


def price_run(eng: Engine, r: RunColumns, m: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Durations and bottlenecks, shape (busy ranks, m), of steps 0..m-1 of each busy rank's
    run: one ``decode_step_times`` call for all of them where the step model has that
    capability, else one ``step_times`` call (each step's price is the one ``step_time``
    gives its batch: the StepModel contract), or ``step_time`` a step when there are few.
    A request leaves its rank's batch after its last token (step ``f``); a rank left with
    none runs empty steps (host time only), as an idle attention-DP rank does."""
    # ranks whose batches are equal (attention-DP ranks served alike, as a closed loop of
    # equal requests routes them) are priced once: a step model is deterministic
    slot: dict[bytes, int] = {}
    which = []
    fm = np.minimum(r.f, m - 1) if k == 0 else None
    keys: list[tuple[int, int]] = []  # each distinct batch's requests (lo, hi)
    for lo, hi in zip(r.offs[:-1], r.offs[1:]):
        if fm is not None:
            key = r.c0[lo:hi].tobytes() + fm[lo:hi].tobytes()
        else:
            assert r.spec is not None
            key = np.ascontiguousarray(r.spec[2][lo:hi, :m]).tobytes()
        i = slot.get(key)
        if i is None:
            i = slot[key] = len(keys)
            keys.append((lo, hi))
        which.append(i)
    q = len(keys)
    if q * m > SHORT_RUN and eng.aggregate is not None:
        got = _price_aggregates(eng, r, keys, fm, m, k)
        if got is not None:
            dd, bb = got
            return (dd, bb) if q == len(which) else (dd[which], bb[which])
    steps = np.arange(m, dtype=np.int64)[:, None]
    batches: list[tuple[np.ndarray, np.ndarray | None]] = []
    for lo, hi in keys:
        if fm is not None:
            c0, f = r.c0[lo:hi], fm[lo:hi]
            ctx = steps + c0[None, :]  # step-major
            if int(f.min()) < m - 1:
                live = steps <= f[None, :]
                batches.append((ctx[live], live.sum(axis=1)))
            else:
                batches.append((ctx, None))
        else:
            assert r.spec is not None
            batches.append((np.ascontiguousarray(r.spec[2][lo:hi, :m].T), None))
    dd, bb = _price_cols(eng, batches, m, k)
    return (dd, bb) if q == len(which) else (dd[which], bb[which])


def _price_aggregates(
    eng: Engine, r: RunColumns, keys: list[tuple[int, int]], fm: np.ndarray | None, m: int, k: int
) -> tuple[np.ndarray, np.ndarray] | None:
    """``price_run`` through the step model's ``decode_step_times`` (an optional capability:
    plain decodes priced from each step's request count and context sum, equal to the rows'
    price), or None when it answers that it has no such form for this engine (then the rows
    are priced, now and for the rest of the run). Request i computes c0_i + j tokens before
    step j while it is in the batch (through step f_i; with drafts, the contexts of
    ``r.spec``)."""
    cfg = eng.cfg
    counts, sums = [], []
    js = np.arange(m, dtype=np.int64)
    for lo, hi in keys:
        if fm is not None:
            c0, f = r.c0[lo:hi], fm[lo:hi]
            if int(f.min()) >= m - 1:  # nobody leaves: n requests, contexts rising n a step
                n = hi - lo
                counts.append(np.full(m, n, dtype=np.int64))
                sums.append(int(c0.sum()) + n * js)
            else:
                # requests in the batch at step j (f_i >= j) and their c0 sum: suffix sums
                cnt = np.bincount(f, minlength=m)[::-1].cumsum()[::-1]
                s0 = np.bincount(f, weights=c0, minlength=m).astype(np.int64)[::-1].cumsum()[::-1]
                counts.append(cnt)
                sums.append(s0 + js * cnt)
        else:
            assert r.spec is not None
            counts.append(np.full(m, hi - lo, dtype=np.int64))
            sums.append(r.spec[2][lo:hi, :m].sum(axis=0))
    st = eng.aggregate(
        1 + k,
        counts[0] if len(keys) == 1 else np.concatenate(counts),
        sums[0] if len(keys) == 1 else np.concatenate(sums),
        decode_threshold=cfg.decode_threshold,
    )
    if st is None:
        eng.aggregate = None  # fixed for the engine: its price reads more than the sums
        return None
    dd = _checked(st.overlap if cfg.overlap else st.no_overlap, f"decode_step_times over a run of {m} decode steps")
    q = len(keys)
    return dd.reshape(q, m), np.asarray(st.bottleneck).reshape(q, m)


def _price_cols(
    eng: Engine, batches: list[tuple[np.ndarray, np.ndarray | None]], m: int, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """``price_run`` over distinct batches: each is an (m, requests) array of contexts, or
    (its rows step-major, the rows of each step) when requests leave during the run."""
    cfg = eng.cfg
    q = len(batches)
    w = 1 + k
    if q * m <= SHORT_RUN:
        # a short run: one step_time a step costs less than step_times' set-up
        dt = cfg.decode_threshold
        dd = np.empty((q, m), dtype=np.float64)
        bb = np.empty((q, m), dtype=object)
        for i, (c, counts) in enumerate(batches):
            if counts is None:
                steps = c.tolist()
            else:
                ends = np.cumsum(counts).tolist()
                flat = c.tolist()
                steps = [flat[e - n : e] for e, n in zip(ends, counts.tolist())]
            for j, col in enumerate(steps):
                e = eng.model.step_time(Batch.trusted([w] * len(col), col, dt))
                dd[i, j] = e.overlap if cfg.overlap else e.no_overlap
                bb[i, j] = e.bottleneck
    else:
        if q == 1 and batches[0][1] is None:
            c = batches[0][0]
            step, sched = _layout(c.shape[1], m, w)
            flat_a = c.reshape(-1)
        else:
            # batch i's step j is step i·m + j of one call (a step with no rows: empty)
            rows = np.concatenate([np.full(m, c.shape[1]) if n is None else n for c, n in batches])
            step = np.repeat(np.arange(q * m, dtype=np.int64), rows)
            flat_a = np.concatenate([c.reshape(-1) for c, _ in batches])
            sched = np.full(len(flat_a), w, dtype=np.int64)
        st = eng.model.step_times(step, sched, flat_a, decode_threshold=cfg.decode_threshold)
        dd = np.asarray(st.overlap if cfg.overlap else st.no_overlap, dtype=np.float64)
        bb = np.asarray(st.bottleneck)
        if len(dd) < q * m:  # the last batch's last steps have no rows: empty steps
            e = eng.model.step_time(Batch.trusted([], [], cfg.decode_threshold))
            pad = q * m - len(dd)
            dd = np.concatenate((dd, np.full(pad, e.overlap if cfg.overlap else e.no_overlap)))
            bb = np.concatenate((bb, np.full(pad, e.bottleneck, dtype=object)))
        dd, bb = dd.reshape(q, m), bb.reshape(q, m)
    return _checked(dd, f"step_times over a run of {m} decode steps"), bb


def _checked(times: np.ndarray, source: str) -> np.ndarray:
    """``times`` as float seconds, refused (``bad_time``) where one is negative, NaN or infinite."""
    dd = np.asarray(times, dtype=np.float64)
    if not (np.isfinite(dd).all() and dd.min() >= 0.0):
        raise bad_time(source, float(dd[~(np.isfinite(dd) & (dd >= 0.0))][0]))
    return dd


_LAYOUTS: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}
_LAYOUT_ROWS = 1 << 22  # rows the layouts may hold together (64 MiB)


def _layout(nreq: int, m: int, width: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``step`` and ``scheduled`` columns of ``m`` steps of ``nreq`` decodes of
    ``width`` tokens each (0,0,…,1,1,…; width everywhere): read-only slices of the longest
    built so far for this (nreq, width), so a run allocates neither."""
    key = (nreq, width)
    have = _LAYOUTS.get(key)
    if have is None or len(have[0]) < nreq * m:
        steps = max(m, 2 * (len(have[0]) // nreq) if have is not None else m)
        if sum(len(a) for a, _ in _LAYOUTS.values()) + nreq * steps > _LAYOUT_ROWS:
            _LAYOUTS.clear()  # bounded memory: a long search meets many batch sizes
        step = np.repeat(np.arange(steps, dtype=np.int64), nreq)
        sched = np.full(nreq * steps, width, dtype=np.int64)
        step.flags.writeable = False
        sched.flags.writeable = False
        have = _LAYOUTS[key] = (step, sched)
    return have[0][: nreq * m], have[1][: nreq * m]

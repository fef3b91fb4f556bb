"""``Kernel.step_times``' quick ways (issue 9: 10 M steps/s) give what the full checks and
``step_time`` give.

Three int64 arrays of one length take a quick way: ``scheduled`` checked in chunks,
``step`` and ``computed`` checked on the passes that price them; steps 0, 0, …, 1, 1, … of
one width are priced block by block from one cached pass per column; steps of one token
count price what depends on it once. Lists take the full checks. Every step must equal
``step_time`` on its batch bit for bit, and a bad column must be refused with the message
the full checks give, naming the same argument and row.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import latencykernel as lk
from _deployments import DEPLOYMENTS, kernel
from latencykernel import Batch
from latencykernel.batch import MAX_TOKENS
from latencykernel.errors import LatencyKernelError
from latencykernel.kernel import arrays, vector_layout

I64 = np.int64


@contextmanager
def small_blocks(steps: int, rows: int, chunk: int) -> Iterator[None]:
    """Blocks of a few steps and passes of a few rows, so that small calls cross block
    and chunk edges (the sizes only change how the work is cut, never a result)."""
    saved = (vector_layout._BLOCK_STEPS, vector_layout._BLOCK_ROWS, vector_layout._CHUNK_ROWS, arrays.CHUNK_ROWS)
    vector_layout._BLOCK_STEPS, vector_layout._BLOCK_ROWS, vector_layout._CHUNK_ROWS, arrays.CHUNK_ROWS = (
        steps,
        rows,
        chunk,
        chunk,
    )
    try:
        yield
    finally:
        vector_layout._BLOCK_STEPS, vector_layout._BLOCK_ROWS, vector_layout._CHUNK_ROWS, arrays.CHUNK_ROWS = saved


def each_step_is_step_time(k: lk.Kernel, step: np.ndarray, s: np.ndarray, c: np.ndarray, th: int) -> None:
    r = k.step_times(step, s, c, decode_threshold=th)
    r_lists = k.step_times(step.tolist(), s.tolist(), c.tolist(), decode_threshold=th)  # the full checks
    nsteps = int(step[-1]) + 1 if len(step) else 0
    assert len(r) == len(r_lists) == nsteps
    for i in range(nsteps):
        rows = step == i
        e = k.step_time(Batch.from_columns(s[rows].tolist(), c[rows].tolist(), th))
        assert r[i] == e, i
        assert r_lists[i] == e, i
        assert r.bottleneck[i] is e.bottleneck


decode = st.sampled_from([0, 1, 1, 1, 2, 4])
prefill = st.integers(9, 5000)


@pytest.mark.parametrize("name", sorted(DEPLOYMENTS))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    nsteps=st.integers(1, 30),
    width=st.integers(1, 12),
    one_width=st.booleans(),
    prefills=st.integers(0, 3),
    blocks=st.sampled_from([None, (3, 16, 5), (1, 1, 1), (4, 1000, 7)]),
    data=st.data(),
)
def test_equal_width_layout_equals_step_time(
    name: str, nsteps: int, width: int, one_width: bool, prefills: int, blocks: tuple | None, data: st.DataObject
) -> None:
    """Guards the equal-width layout (a simulator's batch): every step, with one decode
    width or several, with prefill rows mixed in, across block and chunk edges, equals
    ``step_time``; and the same columns as lists (full checks) give the same."""
    k = kernel(name)
    n = nsteps * width
    step = np.repeat(np.arange(nsteps, dtype=I64), width)
    if one_width:
        s = np.full(n, data.draw(decode), dtype=I64)
    else:
        s = np.array(data.draw(st.lists(decode, min_size=n, max_size=n)), dtype=I64)
    for _ in range(prefills):
        s[data.draw(st.integers(0, n - 1))] = data.draw(prefill)
    c = np.array(data.draw(st.lists(st.integers(0, 70_000), min_size=n, max_size=n)), dtype=I64)
    th = data.draw(st.sampled_from([8, 8, 1, 0]))
    if blocks is None:
        each_step_is_step_time(k, step, s, c, th)
    else:
        with small_blocks(*blocks):
            each_step_is_step_time(k, step, s, c, th)


@pytest.mark.parametrize("name", ["mla-guide", "dense-gqa", "moe-ep16-2nodes", "sliding-window", "dcp-mla"])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    counts=st.lists(st.integers(0, 6), min_size=1, max_size=25),
    lead=st.integers(0, 3),
    blocks=st.sampled_from([None, (2, 8, 3), (1, 1, 1)]),
    data=st.data(),
)
def test_any_layout_on_the_quick_way_equals_step_time(
    name: str, counts: list[int], lead: int, blocks: tuple | None, data: st.DataObject
) -> None:
    """Guards the layouts that are not equal-width (gaps, a leading gap, steps of several
    widths, one that looks equal-width until a late row) taken the quick way (int64
    arrays): every step equals ``step_time`` and the full checks' result."""
    k = kernel(name)
    counts = [0] * lead + counts
    if counts[-1] == 0:
        counts[-1] = 1
    step = np.repeat(np.arange(len(counts), dtype=I64), counts)
    n = len(step)
    s = np.array(data.draw(st.lists(st.sampled_from([1, 1, 2, 0, 600]), min_size=n, max_size=n)), dtype=I64)
    c = np.array(data.draw(st.lists(st.integers(0, 50_000), min_size=n, max_size=n)), dtype=I64)
    if blocks is None:
        each_step_is_step_time(k, step, s, c, 8)
    else:
        with small_blocks(*blocks):
            each_step_is_step_time(k, step, s, c, 8)


def test_almost_equal_width_falls_back_and_equals_step_time() -> None:
    """Guards the equal-width check: a step column with n divisible by its steps but one
    row out of place (found in a late block) is priced by the general layout, exactly."""
    k = kernel("mla-guide")
    step = np.repeat(np.arange(6, dtype=I64), 4)
    step[12] = 2  # steps 0..5 of 4 rows, but step 2 has 5 rows and step 3 has 3
    s = np.ones(24, dtype=I64)
    c = np.arange(24, dtype=I64) * 100
    with small_blocks(2, 8, 3):
        each_step_is_step_time(k, step, s, c, 8)
    each_step_is_step_time(k, step, s, c, 8)


def refusal(fn: object) -> str:
    with pytest.raises(LatencyKernelError) as e:
        fn()  # type: ignore[operator]
    return str(e.value)


BAD = [MAX_TOKENS + 1, -1, -(2**62), 2**62]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    width=st.integers(1, 6),
    nsteps=st.integers(1, 8),
    faults=st.lists(
        st.tuples(
            st.sampled_from(["step", "scheduled", "computed", "order"]), st.integers(0, 10**6), st.sampled_from(BAD)
        ),
        min_size=1,
        max_size=3,
    ),
    blocks=st.sampled_from([None, (2, 6, 3)]),
)
def test_bad_columns_are_refused_as_the_full_checks_refuse_them(
    width: int, nsteps: int, faults: list[tuple[str, int, int]], blocks: tuple | None
) -> None:
    """Guards the order and wording of refusals on the quick way: with one or more bad
    values (negative, beyond MAX_TOKENS, a step out of order) anywhere in the int64
    columns, the message is the one the full checks (lists) give, naming the same argument
    and row."""
    k = kernel("mla-guide")
    n = width * nsteps
    cols = {
        "step": np.repeat(np.arange(nsteps, dtype=I64), width),
        "scheduled": np.ones(n, dtype=I64),
        "computed": np.full(n, 100, dtype=I64),
    }
    for col, row, value in faults:
        i = row % n
        if col == "order":
            cols["step"][i] = (int(cols["step"][i]) + 2) % (nsteps + 1) if nsteps > 1 else 1
        else:
            cols[col][i] = value
    args = (cols["step"], cols["scheduled"], cols["computed"])
    lists = [a.tolist() for a in args]
    try:
        expected = refusal(lambda: k.step_times(*lists, decode_threshold=8))
    except pytest.fail.Exception:  # the faults cancelled out (a step moved into order): no refusal
        assert len(k.step_times(*args, decode_threshold=8)) >= 1
        return
    if blocks is None:
        assert refusal(lambda: k.step_times(*args, decode_threshold=8)) == expected
    else:
        with small_blocks(*blocks):
            assert refusal(lambda: k.step_times(*args, decode_threshold=8)) == expected


@pytest.mark.parametrize(
    ("step", "s", "c", "match"),
    [
        ([0, 0, 1, 1], [1, 1, 1, 1], [5, -7, 5, 5], r"computed must not be negative; computed\[1\] is -7"),
        ([0, 0, 1, 1], [1, 1, 1, 1], [5, 5, 5, 2**41], r"computed\[3\] is 2199023255552, beyond"),
        ([0, 0, 1, 2**41], [1, 1, 1, 1], [5, 5, 5, -1], r"step\[3\] is 2199023255552, beyond"),
        ([0, 1, 0, 1], [1, 1, 1, 1], [5, 5, 5, -1], r"computed must not be negative; computed\[3\] is -1"),
        ([0, 1, 0, 1], [1, 1, 1, 1], [5, 5, 5, 5], r"step must be non-decreasing; step\[2\] is 0"),
        ([0, 0, 1, 1], [1, -2, 1, 1], [5, 5, 5, -1], r"scheduled must not be negative; scheduled\[1\] is -2"),
    ],
)
def test_refusals_name_the_first_bad_column_and_row(step: list, s: list, c: list, match: str) -> None:
    """Guards the refusal order the quick way keeps (step's range, scheduled, computed,
    then the order of steps), on int64 arrays and on lists alike."""
    k = kernel("mla-guide")
    for conv in (lambda x: np.array(x, dtype=I64), list):
        with pytest.raises(LatencyKernelError, match=match):
            k.step_times(conv(step), conv(s), conv(c), decode_threshold=8)


def test_a_long_uniform_run_equals_step_time_at_its_edges() -> None:
    """Guards the block edges at full size (8,192 steps a block): the steps either side of
    each edge of a 20,000-step uniform decode run equal ``step_time``."""
    k = lk.open("examples/llama-3.1-8b-instruct-h100-bf16-tp1.yaml")
    rng = np.random.default_rng(5)
    w = 16
    steps = 20_000
    step = np.repeat(np.arange(steps, dtype=I64), w)
    s = np.ones(steps * w, dtype=I64)
    c = rng.integers(0, 60_000, steps * w)
    r = k.step_times(step, s, c, decode_threshold=8)
    for i in (0, 1, 8191, 8192, 8193, 16383, 16384, steps - 1):
        e = k.step_time(Batch.from_columns(s[i * w : (i + 1) * w].tolist(), c[i * w : (i + 1) * w].tolist(), 8))
        assert r[i] == e, i

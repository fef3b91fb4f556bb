"""``Kernel.aggregate_step_time``: one step of decodes priced from their count and context
sum beside a step's other rows (prefill chunks), equal to ``step_time`` on the whole batch
bit for bit, or None where the price reads more of each decode than the sum."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _deployments import DEPLOYMENTS, kernel
from latencykernel.batch import Batch
from latencykernel.errors import LatencyKernelError
from test_decode_step_times import PER_REQUEST


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(sorted(DEPLOYMENTS)),
    decodes=st.integers(0, 70),
    width=st.integers(1, 4),
    others=st.lists(st.tuples(st.integers(0, 3000), st.integers(0, 20000)), max_size=4),
    seed=st.integers(0, 2**32 - 1),
    big=st.booleans(),
    interleave=st.booleans(),
)
def test_equals_step_time_on_the_whole_batch(
    name: str,
    decodes: int,
    width: int,
    others: list[tuple[int, int]],
    seed: int,
    big: bool,
    interleave: bool,
) -> None:
    """Guards an aggregate price that drifts from the row price: random decodes (contexts up
    to 10^9 tokens when ``big``) beside random other rows (prefill chunks, short chunks no
    larger than a decode, empty rows), the rows placed after the decodes or among them; the
    overlap and no-overlap times, the bottleneck and every resource equal ``step_time``'s on
    the rows, or the answer is None exactly where the deployment reads per-request decode
    contexts, or ``step_time`` itself takes the reference (there the kernel has no fused
    price at all)."""
    k = kernel(name)
    th = 4
    rng = np.random.default_rng(seed)
    ctx = rng.integers(0, 10**9 if big else 9000, decodes).tolist()
    S = [s for s, _ in others]
    C = [c for _, c in others]
    got = k.aggregate_step_time(
        decodes, width, sum(ctx), Batch.from_columns(S, C) if others else None, decode_threshold=th
    )
    if interleave and decodes:
        at = sorted(rng.integers(0, decodes + 1, len(others)).tolist())
        sched: list[int] = []
        comp: list[int] = []
        prev = 0
        for i, a in enumerate(at):
            sched += [width] * (a - prev) + [S[i]]
            comp += ctx[prev:a] + [C[i]]
            prev = a
        sched += [width] * (decodes - prev)
        comp += ctx[prev:]
    else:
        sched, comp = [width] * decodes + S, ctx + C
    want = k.step_time(Batch.from_columns(sched, comp, decode_threshold=th))
    if name in PER_REQUEST and decodes:
        assert got is None
        return
    if got is None:
        # only where the fused price hands this batch to the reference (a prefill under PCP
        # or on a latent layer under DCP) or the deployment has none
        fast = k._fast
        assert (
            fast is None
            or (max(S, default=0) > th and (fast.pcp_prefill_fallback or fast.dcp_prefill_fallback))
            or (name in PER_REQUEST)
        )
        return
    assert (got.overlap, got.no_overlap, got.bottleneck) == (want.overlap, want.no_overlap, want.bottleneck)
    assert got.per_resource == want.per_resource


def test_a_width_above_the_decode_threshold_has_no_aggregate_form() -> None:
    """Guards pricing prefill chunks as decodes: a width above decode_threshold is None."""
    k = kernel("dense-gqa")
    assert k.aggregate_step_time(2, 5, 10, decode_threshold=4) is None
    assert k.aggregate_step_time(2, 4, 10, decode_threshold=4) is not None


@pytest.mark.parametrize(
    ("args", "word"),
    [
        ((-1, 1, 0), "decodes"),
        ((2, 0, 10), "width"),
        ((2, 1, -5), "computed_sum"),
        ((2.5, 1, 10), "decodes"),
        ((2, 1, 3 << 62), "computed_sum"),
        ((1 << 23, 1 << 20, 0), "tokens in one step"),
        ((2, 1, (1 << 40) * 3), "computed_sum is"),
    ],
)
def test_bad_counts_are_refused_naming_the_argument(args: tuple, word: str) -> None:
    """Guards a raw exception or a silent price for impossible counts."""
    with pytest.raises(LatencyKernelError, match=word):
        kernel("dense-gqa").aggregate_step_time(*args, decode_threshold=4)


def test_bad_rows_are_refused() -> None:
    """Guards rows that are not a Batch reaching the fused price."""
    with pytest.raises(LatencyKernelError, match="rows must be a Batch"):
        kernel("dense-gqa").aggregate_step_time(2, 1, 10, [5], decode_threshold=4)  # type: ignore[arg-type]

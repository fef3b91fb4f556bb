"""``Kernel.decode_step_times``: steps of plain decodes priced from their request counts and
context sums, equal to ``step_times`` on the rows bit for bit, or None where the price reads
more of each request than the sum."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _deployments import DEPLOYMENTS, kernel
from latencykernel.batch import MAX_TOKENS, Batch
from latencykernel.errors import LatencyKernelError

# deployments whose decode price reads each request's own context (a sliding window, a
# sparse selection, compressed blocks, a context split over DCP ranks): no aggregate form
PER_REQUEST = {
    "sliding-window",
    "swa-with-indexer",
    "sparse-mla",
    "sparse-compressed",
    "dcp-sparse",
    "dcp-mla",
    "dcp-mla-a2a",
    "dcp-gqa-interleave",
}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(sorted(DEPLOYMENTS)),
    counts=st.lists(st.integers(0, 40), min_size=1, max_size=30),
    width=st.integers(1, 4),
    seed=st.integers(0, 2**32 - 1),
    big=st.booleans(),
)
def test_equals_step_times_on_rows_with_the_same_sums(
    name: str, counts: list[int], width: int, seed: int, big: bool
) -> None:
    """Guards an aggregate price that drifts from the row price: random steps (empty ones
    included), contexts up to 10^9 tokens when ``big``; every entry of every array and each
    bottleneck equals ``step_times`` on the rows, or the answer is None exactly where the
    deployment reads per-request contexts or the width is not a decode."""
    k = kernel(name)
    rng = np.random.default_rng(seed)
    n = np.array(counts, dtype=np.int64)
    ctx = rng.integers(0, 10**9 if big else 9000, int(n.sum()), dtype=np.int64)
    step = np.repeat(np.arange(len(n), dtype=np.int64), n)
    th = 4
    got = k.decode_step_times(
        width, n, np.bincount(step, weights=ctx, minlength=len(n)).astype(np.int64), decode_threshold=th
    )
    if name in PER_REQUEST:
        assert got is None
        return
    assert got is not None
    want = k.step_times(step, np.full(len(step), width, dtype=np.int64), ctx, decode_threshold=th)
    rows = len(want.overlap)  # step_times ends at the last step with a row: the rest are empty
    assert np.array_equal(got.overlap[:rows], want.overlap)
    assert np.array_equal(got.no_overlap[:rows], want.no_overlap)
    assert list(got.bottleneck[:rows]) == list(want.bottleneck)
    for r, v in want.per_resource.items():
        assert np.array_equal(got.per_resource[r][:rows], v), r
    empty = k.step_time(Batch.trusted([], [], th))
    for j in range(rows, len(n)):
        assert (got.overlap[j], got.no_overlap[j], got.bottleneck[j]) == (
            empty.overlap,
            empty.no_overlap,
            empty.bottleneck,
        )


def test_a_width_above_the_decode_threshold_has_no_aggregate_form() -> None:
    """Guards pricing prefill chunks as decodes: a width above decode_threshold is None."""
    assert kernel("dense-gqa").decode_step_times(5, [2], [10], decode_threshold=4) is None
    assert kernel("dense-gqa").decode_step_times(4, [2], [10], decode_threshold=4) is not None


@pytest.mark.parametrize(
    ("args", "kw", "words"),
    [
        ((0, [1], [1]), {}, "width"),
        ((1.5, [1], [1]), {}, "width"),
        ((1, [-1], [0]), {}, "requests"),
        ((1, [1, 2], [1]), {}, "computed_sum has 1 entries and requests has 2"),
        ((1, [1], [-3]), {}, "computed_sum"),
        ((1, [2], [2 * MAX_TOKENS + 1]), {}, "computed_sum[0]"),
        ((MAX_TOKENS, [2], [0]), {}, "requests[0] = 2 decodes of width"),
        ((1, ["a"], [1]), {}, "requests"),
        ((1, [1], [1]), {"decode_threshold": -1}, "decode_threshold"),
    ],
)
def test_bad_input_is_refused_naming_the_argument(args: tuple[object, ...], kw: dict[str, int], words: str) -> None:
    """Guards a raw numpy error or a price from impossible aggregates: each bad argument is
    this package's error naming it."""
    with pytest.raises(LatencyKernelError) as e:
        kernel("dense-gqa").decode_step_times(*args, **{"decode_threshold": 1, **kw})  # type: ignore[arg-type]
    assert words in str(e.value)

"""``Kernel.check`` and the one validation of counts (issue 10, issue 9's decode threshold).

Each test failed before issue 10: ``check`` did not exist; ``step_times`` accepted
``decode_threshold=1.7`` and ``sm_budget=-5``; ``Batch.decode(1.5, 10)`` became one
request; ``"5"`` passed; a uint64 above 2**63 was reported as negative; NaN, inf and 1e300
raised raw ``ValueError``/``OverflowError``; 2**62 tokens were priced.
"""

from __future__ import annotations

import inspect
import math
from typing import Any

import numpy as np
import pytest

import latencykernel as lk
from latencykernel import Batch, LatencyKernelError, RefusedError, ReqShape
from latencykernel.limits import check_batch

LLAMA = "examples/llama-3.1-8b-instruct-h100-bf16-tp1.yaml"


@pytest.fixture(scope="module")
def k() -> lk.Kernel:
    return lk.open(LLAMA)


def test_check_passes_a_batch_the_engine_runs(k: lk.Kernel) -> None:
    """The twin of every refusal below: an ordinary batch is accepted (returns None)."""
    assert k.check(Batch.from_columns([1] * 8 + [512], [4095] * 8 + [0])) is None


@pytest.mark.parametrize(
    ("make", "setting"),
    [
        (lambda L: Batch.from_columns([1], [L.max_model_len]), "max_model_len"),
        (lambda L: Batch.from_columns([L.max_num_batched_tokens + 1], [0]), "max_num_batched_tokens"),
        (lambda L: Batch.decode(L.max_num_seqs + 1, 10), "max_num_seqs"),
        (lambda L: Batch([ReqShape(1, 10, 11, 11)]), "cached_tokens"),
    ],
)
def test_check_refuses_naming_the_limit(k: lk.Kernel, make: Any, setting: str) -> None:
    """Defect: these batches were priced with no way to ask whether an engine runs them."""
    with pytest.raises(RefusedError) as info:
        k.check(make(k.limits()))
    assert info.value.setting == setting
    assert isinstance(info.value.value, int)


def test_check_refuses_more_kv_than_the_cache_holds(k: lk.Kernel) -> None:
    """A batch whose requests need more blocks than kv_blocks is refused; one block fewer
    requests fits."""
    L = k.limits()
    per = k.blocks_for(L.max_model_len)
    fits = L.kv_blocks // per
    n = fits + 1
    assert n <= L.max_num_seqs  # the test needs the cache, not max_num_seqs, to be the limit
    big = Batch.from_columns([1] * n, [L.max_model_len - 1] * n)
    with pytest.raises(RefusedError) as info:
        check_batch(
            L.__class__(**{**{f: getattr(L, f) for f in L.__dataclass_fields__}, "max_num_batched_tokens": n}),
            big,
            k.blocks_for,
        )
    assert info.value.setting == "kv_blocks"
    k.check(Batch.from_columns([1] * min(fits, 8), [L.max_model_len - 1] * min(fits, 8)))


def test_the_rules_are_a_pure_function_over_engine_limits(k: lk.Kernel) -> None:
    """A serving simulation calls the same rules without a kernel."""
    L = lk.EngineLimits(
        max_num_seqs=4,
        max_num_batched_tokens=100,
        max_model_len=1000,
        block_size=16,
        kv_blocks=10,
        enable_prefix_caching=True,
        async_scheduling=True,
        num_speculative_tokens=0,
        decode_threshold=lk.DEFAULT_DECODE_THRESHOLD,
        gpus=1,
        data_parallel=1,
    )
    lk.check_batch(L, Batch.from_columns([1, 1], [50, 60]))
    with pytest.raises(RefusedError, match="kv_blocks|KV blocks"):
        lk.check_batch(L, Batch.from_columns([1, 1], [100, 100]))  # 7 + 7 blocks > 10
    with pytest.raises(RefusedError) as info:
        lk.check_batch(L, Batch.from_columns([1], [1000]))
    assert info.value.setting == "max_model_len" and info.value.value == 1001


def test_step_time_is_unchecked_and_says_so(k: lk.Kernel) -> None:
    """step_time stays the hot path: it prices what check would refuse, and its docstring says so."""
    L = k.limits()
    assert k.step_time(Batch.from_columns([1], [L.max_model_len])).no_overlap > 0
    assert "Unchecked" in (inspect.getdoc(lk.Kernel.step_time) or "")
    assert "check" in (inspect.getdoc(lk.Kernel.check) or "")


@pytest.mark.parametrize(
    "bad",
    [1.5, "5", math.nan, math.inf, -math.inf, 1e300, 2**41, None],
)
def test_one_validation_for_batches_decode_and_step_times(k: lk.Kernel, bad: Any) -> None:
    """The same values are refused, with this package's error, by every entry point."""
    calls = [
        lambda: Batch.decode(bad, 10),
        lambda: Batch.decode(1, bad),
        lambda: Batch.from_columns([bad], [0]),
        lambda: Batch.from_columns([1], [bad]),
        lambda: Batch([ReqShape(1, 0, bad)]),
        lambda: Batch([ReqShape(1, 0, 1, bad)]),
        lambda: Batch.from_columns([1], [0], bad),
        lambda: k.step_times([0], [1], [0], decode_threshold=bad),
        lambda: k.step_times([0], [1], [0], decode_threshold=8, sm_budget=bad if bad != 2**41 else 2**30),
        lambda: k.max_sequences(bad),
        lambda: k.sequence_variable_bytes(bad),
        lambda: k.pd_transfer_time(bad, lk.Placement(0), lk.Placement(1)),
        lambda: k.admission_overhead(bad),
    ]
    for i, call in enumerate(calls):
        with pytest.raises(LatencyKernelError):
            call()
            pytest.fail(f"call {i} accepted {bad!r}")


def test_a_boolean_setting_is_not_a_count(k: lk.Kernel) -> None:
    """True is not a decode threshold nor a request count (columns, read in C, take 0/1)."""
    for call in (lambda: Batch.decode(True, 10), lambda: Batch.from_columns([1], [0], True)):
        with pytest.raises(LatencyKernelError, match="whole number"):
            call()


def test_step_times_refuses_fractional_thresholds_and_negative_budgets(k: lk.Kernel) -> None:
    """Defect: decode_threshold=1.7 and sm_budget=-5 were accepted."""
    with pytest.raises(LatencyKernelError, match="decode_threshold"):
        k.step_times([0], [1], [0], decode_threshold=1.7)  # type: ignore[arg-type]
    with pytest.raises(LatencyKernelError, match="sm_budget must not be negative"):
        k.step_times([0], [1], [0], decode_threshold=8, sm_budget=-5)


@pytest.mark.parametrize(
    "column",
    [
        np.array([2**63 + 5], dtype=np.uint64),
        np.array([math.nan]),
        np.array([math.inf]),
        np.array([1e300]),
        np.array([2**62]),
        np.array(["5"]),
    ],
)
def test_step_times_arrays_are_validated_before_pricing(k: lk.Kernel, column: np.ndarray) -> None:
    """Defect: a uint64 above 2**63 was reported as negative; NaN, inf and 1e300 raised raw
    errors; 2**62 computed tokens priced -9.2e9 s."""
    with pytest.raises(LatencyKernelError) as info:
        k.step_times([0], [1], column, decode_threshold=8)
    assert "-" not in str(info.value).split("is")[-1][:3]  # never reported as a negative number
    with pytest.raises(LatencyKernelError):
        Batch.from_columns([1], column)


def test_a_uint64_is_reported_as_the_positive_number_it_is() -> None:
    with pytest.raises(LatencyKernelError, match=str(2**63 + 5)):
        Batch.from_columns(np.array([2**63 + 5], dtype=np.uint64), [0])


def test_decode_of_a_fraction_is_refused_not_truncated() -> None:
    """Defect: Batch.decode(1.5, 10) became one request."""
    with pytest.raises(LatencyKernelError, match="requests must be a whole number"):
        Batch.decode(1.5, 10)
    assert len(Batch.decode(2.0, 10)) == 2  # a float holding a whole number is that number


def test_a_float_among_ints_is_caught() -> None:
    """The C fast path of a column must not let a fraction after an int through."""
    with pytest.raises(LatencyKernelError, match=r"scheduled\[1\] must be a whole number, got 2.5"):
        Batch.from_columns([1, 2.5], [0, 0])


def test_one_decode_threshold_default_everywhere(k: lk.Kernel) -> None:
    """Issue 9: Batch defaulted to 1 while Batch.decode, limits(), the CLI and the bridge used 8."""
    d = lk.DEFAULT_DECODE_THRESHOLD
    assert Batch().decode_threshold == d
    assert Batch.from_columns([1], [1]).decode_threshold == d
    assert Batch.decode(1, 1).decode_threshold == d
    assert k.limits().decode_threshold == d
    from latencykernel.cli.price_cmds import price_cmd
    from latencykernel.scenarios.bridge import CalibratedDecodeBatch

    assert inspect.signature(price_cmd).parameters["decode_threshold"].default.default == d
    assert CalibratedDecodeBatch.decode_threshold == d


def test_decode_of_billions_of_requests_is_refused_not_allocated() -> None:
    """Defect: Batch.decode(3_000_000_000, ...) (the CLI's --requests 3000000000) ended in MemoryError."""
    from latencykernel.batch import MAX_REQUESTS

    with pytest.raises(LatencyKernelError, match="requests"):
        Batch.decode(3_000_000_000, 10)
    with pytest.raises(LatencyKernelError, match="requests"):
        Batch.decode(99999999999999999999999, 10)
    assert len(Batch.decode(MAX_REQUESTS // 1024, 10)) == MAX_REQUESTS // 1024

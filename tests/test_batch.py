"""``Batch``: the public construction API, the cheap paths, and the checks."""

from __future__ import annotations

import numpy as np
import pytest

import latencykernel as lk
from latencykernel import Batch, ReqShape
from latencykernel.errors import LatencyKernelError


def test_from_requests() -> None:
    reqs = [ReqShape(1, 4095, 4096), ReqShape(scheduled=512, computed=0, prompt_len=512, cached_tokens=64)]
    b = Batch(reqs, decode_threshold=8, sm_budget=100)
    assert b.reqs == tuple(reqs) and b.reqs[1] is reqs[1]
    assert b.scheduled == [1, 512] and b.computed == [4095, 0]
    assert (b.decode_threshold, b.sm_budget) == (8, 100)
    assert len(b) == 2 and b.tokens() == 513
    assert not b.uniform_decode(1)


def test_defaults_and_empty() -> None:
    b = Batch()
    assert len(b) == 0 and b.tokens() == 0 and b.reqs == ()
    # issue 9: one default decode threshold (8) for Batch, Batch.decode, limits(), CLI, bridge
    assert (b.decode_threshold, b.sm_budget) == (lk.DEFAULT_DECODE_THRESHOLD, 0) == (8, 0)
    assert not b.uniform_decode(1)
    assert Batch(iter([(2, 3)])).scheduled == [2]  # any iterable of (scheduled, computed, ...) pairs


@pytest.mark.parametrize("kind", ["list", "tuple", "int64", "int32", "uint16", "float-whole"])
def test_from_columns_accepts(kind: str) -> None:
    s, c = [1, 1, 3], [7, 0, 9]
    make = {
        "list": list,
        "tuple": tuple,
        "int64": lambda x: np.array(x, dtype=np.int64),
        "int32": lambda x: np.array(x, dtype=np.int32),
        "uint16": lambda x: np.array(x, dtype=np.uint16),
        "float-whole": lambda x: np.array(x, dtype=float),
    }[kind]
    b = Batch.from_columns(make(s), make(c), 2, 10)
    assert b.scheduled == s and b.computed == c
    assert all(type(x) is int for x in b.scheduled + b.computed)
    assert b.reqs == (ReqShape(1, 7, 8), ReqShape(1, 0, 1), ReqShape(3, 9, 12))
    assert b.uniform_decode(1) is False
    r = Batch.from_columns(range(1, 4), range(3))
    assert r.scheduled == [1, 2, 3] and r.computed == [0, 1, 2]


def test_columns_are_copied() -> None:
    s = [1, 1]
    b = Batch.from_columns(s, [3, 4])
    s[0] = 99
    assert b.scheduled == [1, 1]


def test_non_int_lists_are_converted() -> None:
    b = Batch.from_columns([np.int64(2), np.int64(1)], [1.0, 0.0])
    assert b.scheduled == [2, 1] and b.computed == [1, 0]
    assert all(type(x) is int for x in b.scheduled + b.computed)


def test_decode() -> None:
    b = Batch.decode(3, 4096)
    assert b.scheduled == [1, 1, 1] and b.computed == [4095] * 3
    assert b.decode_threshold == 8 and b.uniform_decode(1) and len(b) == 3
    assert Batch.decode(0, 1).tokens() == 0
    assert Batch.decode(2, 10, decode_threshold=1).decode_threshold == 1


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda: Batch.from_columns([1, -2], [0, 0]), r"scheduled must not be negative; scheduled\[1\] is -2"),
        (lambda: Batch.from_columns([1, 2], [0, -5]), r"computed must not be negative; computed\[1\] is -5"),
        (lambda: Batch.from_columns(np.array([-1]), [0]), r"scheduled\[0\] is -1"),
        (lambda: Batch([ReqShape(3, -1)]), r"computed must not be negative; computed\[0\] is -1"),
        (lambda: Batch([], decode_threshold=-1), "decode_threshold must not be negative, got -1"),
        (lambda: Batch.from_columns([1], [1], -3), "decode_threshold must not be negative, got -3"),
        (lambda: Batch.from_columns([1], [1], 8, -1), "sm_budget must not be negative, got -1"),
        (lambda: Batch.decode(2, 10, decode_threshold=-1), "decode_threshold must not be negative"),
        (lambda: Batch.decode(-1, 10), "requests must not be negative, got -1"),
        (lambda: Batch.decode(1, 0), "context must be at least 1"),
        (lambda: Batch.from_columns([1, 2], [0]), "scheduled has 2 entries and computed 1"),
        (lambda: Batch.from_columns([1.5], [0]), r"scheduled\[0\] must be a whole number, got 1.5"),
        (lambda: Batch.from_columns(np.zeros((2, 2), dtype=int), np.zeros((2, 2), dtype=int)), "one-dimensional"),
    ],
)
def test_refusals_name_the_field_and_value(build, match: str) -> None:
    with pytest.raises(LatencyKernelError, match=match):
        build()
    with pytest.raises(ValueError):  # LatencyKernelError is a ValueError
        build()


def test_a_batch_from_arrays_prices_like_one_from_requests() -> None:
    k = lk.open("aisimulate/deepseek-v3-h200-fp8-sglang-tp8.yaml")
    s = np.array([2048] * 2 + [1] * 30)
    c = np.array([0] * 2 + [4095] * 30)
    from_arrays = Batch.from_columns(s, c, 8)
    from_reqs = Batch([ReqShape(int(x), int(y)) for x, y in zip(s, c)], 8)
    assert k.step_time(from_arrays) == k.step_time(from_reqs)

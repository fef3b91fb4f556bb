"""``step_times`` stays exact for large values and bounded in memory; a kernel's constants
cannot be changed (issue 10)."""

from __future__ import annotations

import dataclasses
import random

import numpy as np
import pytest

import latencykernel as lk
from _deployments import DEPLOYMENTS, kernel
from latencykernel import Batch
from latencykernel.errors import LatencyKernelError

LLAMA = "examples/llama-3.1-8b-instruct-h100-bf16-tp1.yaml"


@pytest.mark.parametrize("name", sorted(DEPLOYMENTS))
def test_step_times_equals_step_time_up_to_2_to_the_40(name: str) -> None:
    """Guards int64 overflow in the vectorised arithmetic (products of token counts, whole
    nanoseconds above 2**63): every step equals ``step_time`` on the same batch."""
    k = kernel(name)
    rng = random.Random(name)
    batches = []
    for _ in range(40):
        m = rng.randint(1, 4)
        s = [rng.choice([1, 2, 2 ** rng.randint(3, 40)]) for _ in range(m)]
        c = [rng.choice([0, 2 ** rng.randint(0, 40)]) for _ in range(m)]
        batches.append((s, c))
    step = [i for i, (s, _) in enumerate(batches) for _ in s]
    r = k.step_times(step, [x for s, _ in batches for x in s], [x for _, c in batches for x in c], decode_threshold=8)
    assert list(r) == [k.step_time(Batch.from_columns(s, c, 8)) for s, c in batches]


def test_a_huge_context_is_not_negative() -> None:
    """Issue 10's reproducer: 2**62 context tokens priced −9.2e9 s (int64 wrap-around). Such a
    context is beyond what any deployment holds, so both paths refuse it; the largest
    context they accept (MAX_TOKENS) is priced positive and equal on both."""
    from latencykernel.batch import MAX_TOKENS

    k = lk.open(LLAMA)
    with pytest.raises(LatencyKernelError, match="beyond what any deployment holds"):
        k.step_times([0], [1], [2**62], decode_threshold=8)
    with pytest.raises(LatencyKernelError, match="beyond what any deployment holds"):
        Batch.from_columns([1], [2**62], 8)
    r = k.step_times([0], [1], [MAX_TOKENS], decode_threshold=8)
    assert r.no_overlap[0] > 0
    assert r[0] == k.step_time(Batch.from_columns([1], [MAX_TOKENS], 8))


def test_a_far_step_number_is_refused_not_allocated() -> None:
    """Issue 10: step [0, 10**9] allocated a billion entries and was killed for memory."""
    k = lk.open(LLAMA)
    from latencykernel.kernel.vector import MAX_EMPTY_STEPS

    with pytest.raises(LatencyKernelError, match="step numbers must not exceed the number of rows"):
        k.step_times([0, 10**9], [1, 1], [10, 10], decode_threshold=8)
    with pytest.raises(LatencyKernelError, match="step numbers must not exceed"):
        k.step_times([0, 2 + MAX_EMPTY_STEPS], [1, 1], [10, 10], decode_threshold=8)
    r = k.step_times([0, 5], [1, 1], [10, 10], decode_threshold=8)  # a gap is empty steps
    assert len(r) == 6 and r[1] == k.step_time(Batch.from_columns([], [], 8))


def test_constants_are_immutable() -> None:
    """Issue 10: ``k.constants.block_size = 1`` changed ``sequence_variable_bytes``."""
    k = lk.open(LLAMA)
    before = k.sequence_variable_bytes(1000)
    c = k.constants
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.block_size = 1  # type: ignore[misc]
    with pytest.raises(TypeError):
        c.attn_by_kind["gqa"] = (0.0, 1.0)  # type: ignore[index]
    with pytest.raises(TypeError):
        del c.collectives[next(iter(c.collectives))]  # type: ignore[attr-defined]
    with pytest.raises(AttributeError):
        k._fast.kinds = ()  # type: ignore[union-attr]
    assert k.sequence_variable_bytes(1000) == before
    # replace() and copies still work, and keep the read-only views
    c2 = dataclasses.replace(c, m_half=0.0)
    assert c2.m_half == 0.0 and type(c2.attn_by_kind) is type(c.attn_by_kind)
    import copy
    import pickle

    assert pickle.loads(pickle.dumps(c)) == c == copy.deepcopy(c)


def test_fused_table_is_typed_and_immutable() -> None:
    """Guards the per-kind coefficient table staying a typed, immutable record."""
    from latencykernel.kernel.fast import KindCoefficients

    fp = lk.open(LLAMA)._fast
    assert fp is not None and all(isinstance(kc, KindCoefficients) for kc in fp.kinds)
    with pytest.raises(AttributeError):
        fp.kinds[0].dense_g = 0.0  # type: ignore[misc]
    assert np.isfinite([kc.dense_g for kc in fp.kinds]).all()

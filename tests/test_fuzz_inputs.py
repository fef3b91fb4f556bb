"""Fuzzing every entry point with generated input (issue 10): mutated scenario documents,
Hugging Face configs, batches, ``step_times`` arrays and the memory helpers. Only this
package's errors may escape; every number returned is finite, not negative, and ordered
(overlap <= no_overlap). Before issue 10, each family here found an escape: OSError from
a long name, RecursionError from deep JSON, negative budgets, int64 overflow, raw
ValueError from NaN.

Kept small (deadline=None, modest max_examples): the whole file runs in well under 30 s.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import latencykernel as lk
from latencykernel import Batch, LatencyKernelError
from latencykernel.derive import derive_graph

LLAMA = "examples/llama-3.1-8b-instruct-h100-bf16-tp1.yaml"
GUIDE = "aisimulate/deepseek-v3-h200-fp8-sglang-tp8.yaml"
MODELS = Path(__file__).resolve().parents[1] / "src/latencykernel/data/catalog/models"
FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

WEIRD = st.one_of(
    st.integers(-3, 3),
    st.sampled_from([0, -1, 2**31, 2**63, 2**64 + 1, 10**30]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["", "auto", "../x", "/etc/passwd", "a" * 300, "fp8", "NaN", "5", "x/y", "..", "null"]),
    st.none(),
    st.booleans(),
)


@pytest.fixture(scope="module")
def llama() -> lk.Kernel:
    return lk.open(LLAMA)


def _ordered(e: lk.StepEstimate) -> None:
    assert math.isfinite(e.overlap) and math.isfinite(e.no_overlap)
    assert 0 <= e.overlap <= e.no_overlap
    assert all(math.isfinite(v) and v >= 0 for v in e.per_resource.values())


def _yaml_scalar(v: Any) -> str:
    return json.dumps(v) if not isinstance(v, float) or math.isfinite(v) else {True: ".nan"}.get(v != v, ".inf")


@given(line=st.integers(0, 10_000), value=WEIRD)
@FAST
def test_mutated_scenario_documents_open_or_are_refused(tmp_path_factory: Any, line: int, value: Any) -> None:
    text = lk.Repos.default().scenario_path(LLAMA).read_text().splitlines()
    keyed = [i for i, t in enumerate(text) if re.match(r"^\s*[A-Za-z_]+: \S", t) and not t.lstrip().startswith("#")]
    i = keyed[line % len(keyed)]
    key = text[i].split(":")[0]
    text[i] = f"{key}: {_yaml_scalar(value)}"
    path = tmp_path_factory.mktemp("doc") / "s.yaml"
    path.write_text("\n".join(text) + "\n")
    try:
        k = lk.open(str(path))
    except LatencyKernelError:
        return
    _ordered(k.step_time(Batch.decode(4, 1024)))
    assert k.kv_blocks() >= 0 and k.max_sequences(1024) >= 0


CONFIGS = {m: json.loads((MODELS / m / "config.json").read_text()) for m in ("llama-3.1-8b-instruct", "gpt-oss-120b")}
KEYS = sorted({k for c in CONFIGS.values() for k, v in c.items() if not isinstance(v, dict | list)})


@given(model=st.sampled_from(sorted(CONFIGS)), key=st.sampled_from(KEYS), value=WEIRD)
@FAST
def test_mutated_hf_configs_derive_or_are_refused(model: str, key: str, value: Any) -> None:
    cfg = {**CONFIGS[model], key: value}
    try:
        g = derive_graph(cfg, name="fuzz", sha256="0" * 64)
    except LatencyKernelError:
        return
    assert g["kind"] == "ModelGraph"


COUNT = st.one_of(st.integers(0, 70_000), st.integers(-5, 5), st.sampled_from([2**40, 2**40 + 1, 2**63]), WEIRD)


@given(sched=st.lists(COUNT, max_size=12), comp=st.lists(COUNT, max_size=12), th=COUNT)
@FAST
def test_batches_price_or_are_refused(llama: lk.Kernel, sched: list[Any], comp: list[Any], th: Any) -> None:
    n = min(len(sched), len(comp))
    try:
        b = Batch.from_columns(sched[:n], comp[:n], th)
    except LatencyKernelError:
        return
    _ordered(llama.step_time(b))
    try:
        llama.check(b)
    except lk.RefusedError as e:
        assert e.setting in ("max_model_len", "max_num_batched_tokens", "max_num_seqs", "kv_blocks", "cached_tokens")


ROW = st.integers(0, 1 << 20)


@given(
    rows=st.lists(st.tuples(st.integers(0, 3), ROW, ROW), max_size=24),
    dtype=st.sampled_from(["int64", "uint64", "float64", "object"]),
    th=COUNT,
    budget=COUNT,
)
@FAST
def test_step_times_arrays_price_or_are_refused(
    llama: lk.Kernel, rows: list[tuple[int, int, int]], dtype: str, th: Any, budget: Any
) -> None:
    rows.sort()
    st_, s, c = (np.array([r[j] for r in rows], dtype=dtype) for j in range(3))
    try:
        out = llama.step_times(st_, s, c, decode_threshold=th, sm_budget=budget)
    except LatencyKernelError:
        return
    assert np.all(np.isfinite(out.no_overlap)) and np.all(out.overlap >= 0)
    assert np.all(out.overlap <= out.no_overlap)


@given(tokens=COUNT, util=st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([1e-9, 0.5, 1.0])))
@FAST
def test_memory_helpers_answer_or_refuse(llama: lk.Kernel, tokens: Any, util: Any) -> None:
    for call in (
        lambda: llama.max_sequences(tokens, util),
        lambda: llama.sequence_variable_bytes(tokens),
        lambda: llama.kv_blocks(util),
        lambda: llama.kv_budget_bytes(util),
        lambda: llama.pd_transfer_time(tokens, lk.Placement(0), lk.Placement(1)),
        lambda: llama.admission_overhead(tokens),
        lambda: llama.blocks_for(tokens),
    ):
        try:
            v = call()
        except LatencyKernelError:
            continue
        assert isinstance(v, int | float) and math.isfinite(v) and v >= 0


@given(
    direction=st.sampled_from(["to_tier", "from_tier", "sideways", ""]),
    nbytes=COUNT,
    depth=COUNT,
)
@FAST
def test_tier_time_answers_or_refuses(llama: lk.Kernel, direction: str, nbytes: Any, depth: Any) -> None:
    tiers = list(llama._tiers) or ["none"]
    try:
        v = llama.tier_time(tiers[0], direction, nbytes, depth)
    except LatencyKernelError:
        return
    assert v >= 0 and (math.isfinite(v) or tiers == ["none"])

"""The scenarios and the kernel share one registry and one KV law; the bandwidth floor never
exceeds the calibrated step on the same deployment."""

from __future__ import annotations

import math
import os

import pytest

import latencykernel
from latencykernel.errors import LatencyKernelError, RefusedError
from latencykernel.repos import Repos
from latencykernel.scenarios import (
    Q_,
    Hardware,
    KvDecodeBatchScenario,
    ScenarioInputError,
    SparseKvDecodeBatchScenario,
    Workload,
    decode_batch,
)
from latencykernel.scenarios.bridge import CalibratedDecodeBatch
from latencykernel.scenarios.hardware import RECORDED_HARDWARE
from latencykernel.scenarios.workloads import RECORDED_WORKLOADS

REPOS = Repos.default()
MODELS = sorted(
    p for p in os.listdir(REPOS.catalog / "models") if (REPOS.catalog / "models" / p / "graph.yaml").exists()
)
CHIPS = sorted(p.stem for p in (REPOS.catalog / "hardware").glob("*.yaml"))


def _build(model: str, chip: str, tp: int) -> latencykernel.Kernel | None:
    try:
        # Whole-context charging on every layer (the scenarios' Workload.kv_bytes): vLLM's hybrid
        # KV-cache manager, off here, keeps only the window's blocks on sliding-window layers.
        # max_model_len 1024 (every model's limit is at least that): the test compares KV per
        # token, and vLLM refuses a deployment whose own context limit does not fit the cache.
        return latencykernel.build(model, chip, tp=tp, disable_hybrid_kv_cache_manager=True, max_model_len=1024)
    except RefusedError:  # the model does not fit this deployment
        return None


def test_every_catalog_model_and_chip_loads() -> None:
    assert len(MODELS) >= 10 and "gpt2-xl" in MODELS
    for m in MODELS:
        w = Workload.catalog(m)
        assert w.kv is not None and w.n_parameters >= w.n_active_parameters > 0, m
    for c in CHIPS:
        h = Hardware.catalog(c)
        assert h.bandwidth_bytes_per_s > 0 and h.capacity_bytes > 0 and h.peak(None).magnitude > 0, c


@pytest.mark.parametrize("model", MODELS)
def test_the_two_kv_computations_agree_on_every_shipped_model(model: str) -> None:
    """Workload.kv_bytes (the scenarios) and the kernel's kv_bytes_per_token agree at every TP width that builds."""
    w = Workload.catalog(model)
    checked = 0
    for chip, tp in (("b200", 1), ("b200", 2), ("b200", 8), ("h100", 4)):
        k = _build(model, chip, tp)
        if k is None:
            continue
        assert k.kv_bytes_per_token() == w.kv_bytes(2.0, tp), (model, chip, tp)  # default cache: bf16
        assert k.sequence_variable_bytes(4096) == 4096 * w.kv_bytes(2.0, tp), (model, chip, tp)
        checked += 1
    assert checked >= 1, f"no deployment of {model} builds"


def test_recorded_figures_agree_with_the_catalog_where_it_has_the_model() -> None:
    linked = 0
    for key, w in RECORDED_WORKLOADS.items():
        if w.catalog_name is None:
            continue
        c = Workload.catalog(w.catalog_name)
        assert w.kv is not None and c.kv is not None
        assert w.kv_bytes(2.0) == c.kv_bytes(2.0), key
        assert w.kv.design == c.kv.design, key
        assert math.isclose(w.n_parameters, c.n_parameters, rel_tol=0.05), key  # nominal against counted
        assert (w.experts is None) == (c.experts is None), key
        linked += 1
    assert linked >= 5
    gpt2 = Workload.catalog("gpt2-xl")
    assert round(gpt2.n_parameters / 1e9, 2) == 1.55 and gpt2.nominal().n_parameters == 1.5e9
    for hkey, hw in RECORDED_HARDWARE.items():
        if hw.catalog_name is not None:
            chip = Hardware.catalog(hw.catalog_name)
            assert math.isclose(hw.capacity_bytes, chip.capacity_bytes, rel_tol=1e-9), hkey


def test_catalog_precision_keys_and_refusal() -> None:
    h = Hardware.catalog("h100")
    assert set(h.precision_keys) >= {"bf16_dense", "fp16_dense", "fp8_dense"}
    s = KvDecodeBatchScenario(  # names and strings are accepted and resolved
        workload="gpt2-xl",
        hardware="h100",
        weight_bytes_per_param="2 B",
        kv_bytes_per_value="2 B",  # type: ignore[arg-type]
        context_tokens=1024,
        batch_sizes=[1],
        prompt_tokens=512,
        prefill_efficiency=0.4,  # type: ignore[arg-type]
        peak_precision="fp8",
    )
    with pytest.raises(LatencyKernelError, match="fp8_dense"):
        _ = s.peak_rate
    assert s.variant(peak_precision="fp8_dense").peak_rate == h.peak("fp8_dense")


DEPLOYMENTS = [(m, "b200", 8) for m in MODELS] + [
    ("gpt2-xl", "h100", 1),
    ("llama-3.1-8b-instruct", "h100", 1),
    ("llama-3.1-8b-instruct", "l40s", 1),
    ("llama-3.1-70b-instruct", "h100", 4),
    ("mixtral-8x7b-v0.1", "h100", 2),
    ("qwen3-30b-a3b", "h200", 1),
    ("gpt-oss-120b", "h100", 1),
    ("deepseek-v3", "h200", 8),
    ("qwen3-32b", "a100-80", 2),
]


@pytest.mark.parametrize("model,chip,tp", DEPLOYMENTS, ids=[f"{m}@{c}x{t}" for m, c, t in DEPLOYMENTS])
def test_floor_never_exceeds_the_calibrated_step(model: str, chip: str, tp: int) -> None:
    k = _build(model, chip, tp)
    if k is None:
        pytest.skip(f"{model} does not fit {chip} at tp={tp}")
    for context in (128, 4096, 32768):
        d = decode_batch(k, context, [1, 4, 32, 256, 1024])
        assert isinstance(d.floor, SparseKvDecodeBatchScenario)
        for b in d.batch_sizes:
            floor, cal = d.floor_step_time(b), d.step_time(b)
            assert floor <= cal, (model, chip, tp, context, b, floor, cal)
            assert d.over_floor(b) >= 1.0
        for tpot in (5.0, 30.0, 200.0):
            assert d.max_batch_within(Q_(tpot, "ms")) <= max(d.floor.max_batch_within(Q_(tpot, "ms")), 0)
        assert d.max_batch_in_memory <= max(d.floor.max_batch_in_memory, 0)


def test_calibrated_answers_the_same_questions() -> None:
    k = latencykernel.build("llama-3.1-8b-instruct", "h100")
    d = decode_batch(k, 4096, [1, 8, 64])
    assert isinstance(d, CalibratedDecodeBatch)
    from latencykernel.batch import Batch

    for b in d.batch_sizes:
        assert math.isclose(d.step_time(b).to("s").magnitude, k.step_time(Batch.decode(b, 4096)).no_overlap)
        assert math.isclose(d.token_rate(b).to("1/s").magnitude, b / d.step_time(b).to("s").magnitude)
    n = d.max_batch_within(Q_(30, "ms"))
    assert n >= 1 and d.step_time(n) <= Q_(30, "ms") < d.step_time(n + 1)
    assert d.max_batch_within(Q_(0.1, "ms")) == 0
    assert d.max_batch_in_memory == k.max_sequences(4096)
    assert str(d.step_time(8).units) == "ms" and str(d.token_rate(8).units) == "1/s"
    assert d.floor.sources and "kernel" in " ".join(d.floor.sources)
    # the floor reads what the kernel stores and caches, at the datasheet bandwidth
    assert math.isclose(d.floor.weights.to("B").magnitude, k.fixed_bytes().weights, rel_tol=1e-12)
    assert d.floor.kv_per_token.to("B").magnitude == k.kv_bytes_per_token()
    with pytest.raises(ScenarioInputError, match="batch_size"):
        d.step_time(-1)
    with pytest.raises(ScenarioInputError, match="context_tokens"):
        decode_batch(k, -5, [1])
    with pytest.raises(ScenarioInputError, match="kernel"):
        decode_batch(object(), 4096, [1])

"""KvDecodeBatchScenario's behaviour: units that cannot be mixed, refusals that name the
argument, and the properties of the floor (hypothesis)."""

from __future__ import annotations

import math

import pint
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from latencykernel.errors import LatencyKernelError
from latencykernel.scenarios import (
    Q_,
    Hardware,
    KvDecodeBatchScenario,
    ScenarioInputError,
    Scenarios,
    SparseKvDecodeBatchScenario,
    UnknownPrecisionError,
    Workload,
)
from latencykernel.scenarios.workloads import RECORDED_WORKLOADS

BASE = Scenarios.Gpt2XlChatDecodeBatchesH100
LMS = sorted(k for k, w in RECORDED_WORKLOADS.items() if w.kv is not None)
HWS = ["H100", "H200", "B200", "A100", "MI300X", "H100_PCIe"]


# ---------------------------------------------------------------------------- units
def test_unit_strings_of_the_contract() -> None:
    units = {
        "weights": "GB",
        "kv_per_token": "B",
        "kv_per_sequence": "MB",
        "bandwidth": "TB/s",
        "rate_ceiling": "1/s",
        "peak_rate": "TFLOPs/s",
        "ridge": "flop/B",
        "prefill_ops": "flop",
        "prefill_time": "ms",
    }
    for name, unit in units.items():
        assert str(getattr(BASE, name).units) == unit, name
    assert str(BASE.step_bytes(8).units) == "GB"
    assert str(BASE.step_time(8).units) == "ms"
    assert str(BASE.token_rate(8).units) == "1/s"
    assert isinstance(BASE.cache_share(8), float)
    assert isinstance(BASE.max_batch_within(Q_(20, "ms")), int) and isinstance(BASE.max_batch_in_memory, int)


def test_bytes_parameters_and_tokens_cannot_be_mixed() -> None:
    with pytest.raises(pint.DimensionalityError):
        Q_(1, "GB") + Q_(1, "param")
    with pytest.raises(pint.DimensionalityError):
        Q_(1, "token") + Q_(1, "param")
    with pytest.raises(pint.DimensionalityError):
        Q_(1, "B").to("bit") + Q_(1, "flop")
    assert Q_(1, "GiB").to("B").magnitude == 2**30 and Q_(1, "GB").to("B").magnitude == 1e9


@pytest.mark.parametrize("field", ["weight_bytes_per_param", "kv_bytes_per_value"])
def test_a_bare_number_is_refused_not_read_as_bits(field: str) -> None:
    with pytest.raises(ScenarioInputError) as e:
        BASE.variant(**{field: 2})
    assert e.value.argument == field and f"{field}=2" in str(e.value) and "unit" in str(e.value)


def test_byte_fields_refuse_other_dimensions_and_accept_foreign_bytes() -> None:
    with pytest.raises(ScenarioInputError, match="weight_bytes_per_param"):
        BASE.variant(weight_bytes_per_param=Q_(2, "param"))
    with pytest.raises(ScenarioInputError, match="kv_bytes_per_value"):
        BASE.variant(kv_bytes_per_value=Q_(2, "token"))
    # pint's default registry makes a byte dimensionless; its unit is re-read here as a byte
    other: pint.UnitRegistry = pint.UnitRegistry()
    s = BASE.variant(weight_bytes_per_param=other.Quantity(2, "byte"), kv_bytes_per_value="2 B")
    assert s.weights == BASE.weights and s.kv_per_token == BASE.kv_per_token
    assert BASE.variant(weight_bytes_per_param="2 B/param").weights == BASE.weights
    assert BASE.variant(context_tokens=Q_(1024, "token")).kv_per_sequence == BASE.kv_per_sequence


# ---------------------------------------------------------------------------- refusals
@pytest.mark.parametrize(
    "field,value",
    [
        ("context_tokens", -1),
        ("context_tokens", 0),
        ("context_tokens", 10.5),
        ("prompt_tokens", -3),
        ("batch_sizes", [1, -2]),
        ("prefill_efficiency", 0.0),
        ("prefill_efficiency", 1.5),
        ("weight_bytes_per_param", Q_(-2, "B")),
        ("context_tokens", Q_(10, "B")),
    ],
)
def test_bad_inputs_are_refused_naming_the_argument(field: str, value: object) -> None:
    with pytest.raises(ScenarioInputError) as e:
        BASE.variant(**{field: value})
    assert e.value.argument == field or e.value.argument.startswith(f"{field}[")  # batch_sizes[1]
    assert field in str(e.value)


@given(b=st.integers(max_value=-1, min_value=-(10**6)))
def test_negative_batches_are_refused_with_the_value(b: int) -> None:
    for method in (BASE.step_bytes, BASE.step_time, BASE.token_rate, BASE.cache_share):
        with pytest.raises(ScenarioInputError) as e:
            method(b)
        assert e.value.argument == "batch_size" and e.value.value == b and str(b) in str(e.value)


def test_tpot_must_be_a_time() -> None:
    with pytest.raises(ScenarioInputError, match="tpot"):
        BASE.max_batch_within(20)
    with pytest.raises(ScenarioInputError, match="tpot"):
        BASE.max_batch_within(Q_(20, "GB"))
    with pytest.raises(ScenarioInputError, match="tpot"):
        BASE.max_batch_within(Q_(-1, "ms"))
    assert BASE.max_batch_within("0.02 s") == BASE.max_batch_within(Q_(20, "ms")) == 203


def test_missing_precision_key_lists_the_keys() -> None:
    s = BASE.variant(hardware=Hardware.recorded("H200"))
    with pytest.raises(UnknownPrecisionError) as e:
        _ = s.peak_rate
    assert e.value.argument == "peak_precision" and e.value.value == "fp16_dense"
    assert e.value.available == ("tf32", "fp16_sparse", "fp8", "int8", "fp32")
    assert all(k in str(e.value) for k in e.value.available)
    assert isinstance(e.value, LatencyKernelError)
    assert s.step_time(8) < BASE.step_time(8)  # the memory floor does not need the key


def test_a_model_without_kv_geometry_is_refused() -> None:
    with pytest.raises(LatencyKernelError, match="KV cache"):
        BASE.variant(workload=Workload.recorded("ResNet50"))


# ---------------------------------------------------------------------------- properties
scenarios = st.builds(
    lambda w, h, ctx, wb, kb: BASE.variant(
        workload=Workload.recorded(w),
        hardware=Hardware.recorded(h),
        context_tokens=ctx,
        weight_bytes_per_param=Q_(wb, "B"),
        kv_bytes_per_value=Q_(kb, "B"),
    ),
    st.sampled_from(LMS),
    st.sampled_from(HWS),
    st.integers(1, 262144),
    st.sampled_from([0.5, 1.0, 2.0, 4.0]),
    st.sampled_from([1.0, 2.0]),
)


@settings(max_examples=150, deadline=None)
@given(s=scenarios, b=st.integers(0, 4096), db=st.integers(1, 4096))
def test_step_time_grows_with_the_batch_and_token_rate_is_b_over_it(s: KvDecodeBatchScenario, b: int, db: int) -> None:
    assert s.step_time(b + db) > s.step_time(b)
    t = s.step_time(b).to("s").magnitude
    assert math.isclose(s.token_rate(b).to("1/s").magnitude, b / t, rel_tol=1e-12)
    share = s.cache_share(b)
    assert 0.0 <= share < 1.0 and (share == 0.0) == (b == 0)


@settings(max_examples=200, deadline=None)
@given(s=scenarios, tpot_ms=st.floats(0.01, 10_000.0))
def test_max_batch_within_inverts_step_time(s: KvDecodeBatchScenario, tpot_ms: float) -> None:
    tpot = Q_(tpot_ms, "ms")
    b = s.max_batch_within(tpot)
    fits = lambda n: s.step_time(n).to("ms").magnitude <= tpot_ms * (1 + 1e-12)  # noqa: E731
    if b >= 0:
        assert fits(b)
        assert not fits(b + 1) or math.isclose(s.step_time(b + 1).to("ms").magnitude, tpot_ms, rel_tol=1e-9)
    else:  # "negative values indicate no feasible positive batch": not even the weights fit
        assert not fits(0)
    assume(b >= 1)
    assert s.token_rate(b) <= s.rate_ceiling


@settings(max_examples=100, deadline=None)
@given(s=scenarios)
def test_memory_ceiling_is_where_weights_and_caches_fill_capacity(s: KvDecodeBatchScenario) -> None:
    n = s.max_batch_in_memory
    cap = s.hardware.memory_capacity
    if n >= 0:
        assert s.step_bytes(n) <= cap and s.step_bytes(n + 1) > cap
    else:
        assert s.weights > cap


# ---------------------------------------------------------------------------- MoE variant
MOE = SparseKvDecodeBatchScenario.from_scenario(
    BASE.variant(workload=Workload.recorded("Mixtral_8x7B"), context_tokens=4096)
)


def test_sparse_variant_of_a_dense_full_attention_model_is_the_contract() -> None:
    same = SparseKvDecodeBatchScenario.from_scenario(BASE)
    for b in (0, 1, 8, 128):
        assert same.step_bytes(b) == BASE.step_bytes(b) and same.cache_share(b) == BASE.cache_share(b)
    for t in (0.5, 1.0, 20.0, 200.0):
        assert same.max_batch_within(Q_(t, "ms")) == BASE.max_batch_within(Q_(t, "ms"))
    assert same.kv_read_per_sequence == BASE.kv_per_sequence and same.rate_ceiling == BASE.rate_ceiling


def test_windowed_and_sparse_layers_read_less_than_the_cache() -> None:
    s = SparseKvDecodeBatchScenario.from_scenario(BASE.variant(workload="gpt-oss-120b", context_tokens=32768))
    # half the layers slide a 128-token window over the 32,768-token cache
    assert s.kv_read_per_sequence.to("B").magnitude == s.kv_per_sequence.to("B").magnitude * (18 * 32768 + 18 * 128) / (
        36 * 32768
    )
    short = s.variant(context_tokens=100)
    assert short.kv_read_per_sequence == short.kv_per_sequence  # within the window every token is read
    g = SparseKvDecodeBatchScenario.from_scenario(BASE.variant(workload="glm-5", context_tokens=65536))
    assert g.kv_read_per_sequence.to("B").magnitude == g.kv_per_sequence.to("B").magnitude * 2048 / 65536


def test_moe_variant_reads_fewer_weights() -> None:
    dense = BASE.variant(workload=Workload.recorded("Mixtral_8x7B"), context_tokens=4096)
    assert math.isclose(MOE.weights_read(1).to("GB").magnitude, 25.8, rel_tol=1e-12)  # P_active x 2 B
    assert MOE.weights == dense.weights  # every expert stays resident
    assert MOE.max_batch_in_memory == dense.max_batch_in_memory


@settings(max_examples=100, deadline=None)
@given(b=st.integers(0, 2048), tpot_ms=st.floats(1.0, 500.0))
def test_moe_floor_is_below_the_all_experts_floor(b: int, tpot_ms: float) -> None:
    dense = BASE.variant(workload=Workload.recorded("Mixtral_8x7B"), context_tokens=4096)
    assert MOE.step_time(b) <= dense.step_time(b)
    assert MOE.step_time(b + 1) > MOE.step_time(b)
    n = MOE.max_batch_within(Q_(tpot_ms, "ms"))
    assert n >= dense.max_batch_within(Q_(tpot_ms, "ms"))
    if n >= 1:
        assert MOE.step_time(n).to("ms").magnitude <= tpot_ms < MOE.step_time(n + 1).to("ms").magnitude


def test_variant_revalidates_and_drops_the_key() -> None:
    v = BASE.variant(context_tokens=2048)
    assert v.key is None and BASE.key == "Gpt2XlChatDecodeBatchesH100"
    assert v.kv_per_sequence == 2 * BASE.kv_per_sequence
    with pytest.raises(ScenarioInputError):
        BASE.variant(context_tokens="lots")


# ---------------------------------------------------------------------------- variants
def test_a_variant_states_what_changed_and_keeps_no_stale_text() -> None:
    named = Scenarios.Gpt2XlChatDecodeBatchesH100
    v = named.variant(context_tokens=8192)
    assert v.key is None and v.variant_of == "Gpt2XlChatDecodeBatchesH100"
    assert v.title == "variant of Gpt2XlChatDecodeBatchesH100 (changed: context_tokens=8192)"
    assert "1,024-token" not in v.title
    assert v.description.startswith("Gpt2XlChatDecodeBatchesH100 with context_tokens=8192; as stated for ")
    assert v.sources == named.sources  # neither figure names context_tokens
    # a new workload drops the GPT-2 XL figures and lists the new workload's own source
    m = v.variant(workload="Mixtral_8x7B")
    assert m.title == "variant of Gpt2XlChatDecodeBatchesH100 (changed: workload=Mixtral-8x7B, context_tokens=8192)"
    assert not any("GPT-2" in s for s in m.sources)
    assert any(s.startswith("workload: ") and "Mixtral_8x7B" in s for s in m.sources)
    assert any(s.startswith("hardware: ") for s in m.sources)
    # changed back: the named scenario's text again (still no key)
    back = m.variant(workload=named.workload, context_tokens=named.context_tokens)
    assert (back.key, back.title, back.description, back.sources) == (
        None,
        named.title,
        named.description,
        named.sources,
    )
    # text the caller states is kept
    own = named.variant(context_tokens=2048, name="mine", sources=("x",))
    assert (own.title, own.sources) == ("mine", ("x",))
    # the read-aware copy descends from the same named scenario
    sparse = SparseKvDecodeBatchScenario.from_scenario(m)
    assert (
        sparse.variant(context_tokens=100).title
        == "variant of Gpt2XlChatDecodeBatchesH100 (changed: workload=Mixtral-8x7B, context_tokens=100)"
    )

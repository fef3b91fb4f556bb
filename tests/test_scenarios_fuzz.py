"""Every scenario input escapes only as our error.

For every named scenario, each stated input is replaced in turn by a wrong-typed, negative,
zero, NaN, infinite, list, mapping, unit-mismatched or unparsable value. The variant is
either refused with a ``LatencyKernelError`` subclass that names the input, or accepted;
an accepted variant evaluates every output with only our errors recorded, and every figure
finite and non-negative (an output whose summary says "negative: ..." is a documented signed
figure, finite only). A raw TypeError, ValueError, ZeroDivisionError or pint error fails the
test. Huge integers and quantities are among the inputs (issue 10).
"""

from __future__ import annotations

import math
from typing import Any

import pytest

import latencykernel
from latencykernel.errors import LatencyKernelError
from latencykernel.scenarios import Q_, ScenarioInputError, Scenarios, decode_batch
from latencykernel.scenarios.decode_floor import DecodeScenario
from latencykernel.scenarios.economics import ServingCostScenario
from latencykernel.scenarios.named import keys

BAD: tuple[Any, ...] = (
    "x",
    None,
    -1,
    0,
    1.5,
    float("nan"),
    float("inf"),
    -float("inf"),
    [1],
    [-1],
    [],
    {"a": 1},
    True,
    Q_(1, "s"),
    Q_(-1, "B"),
    "1 parsec",
    "1 B/param",
    b"8",
    # huge integers and quantities (issue 10: ZeroDivisionError, inf GB, negative times)
    10**30,
    2**63,
    -(2**63),
    Q_(1e300, "s"),
    Q_(float("inf"), "B"),
    Q_(10**30, "token"),
)


def _cases() -> list[tuple[str, str]]:
    """One (named scenario, input) per scenario class and input: the class's validation
    is what is under test, so its first named instance stands for the rest."""
    seen: set[tuple[str, str]] = set()
    out: list[tuple[str, str]] = []
    for key in keys():
        s = Scenarios.get(key)
        for name in s.inputs():
            if (type(s).__name__, name) not in seen:
                seen.add((type(s).__name__, name))
                out.append((key, name))
    return out


def _names_the_input(e: LatencyKernelError, name: str) -> bool:
    argument = getattr(e, "argument", None) or getattr(e, "key", None) or ""
    return name in str(e) or str(argument).startswith(name)


def _magnitudes(value: Any) -> list[Any]:
    """The plain numbers inside an output value (a number, a quantity, a mapping or list of them)."""
    if isinstance(value, dict):
        return [m for v in value.values() for m in _magnitudes(v)]
    if isinstance(value, (list, tuple)):
        return [m for v in value for m in _magnitudes(v)]
    m = getattr(value, "magnitude", value)
    return [m] if isinstance(m, (int, float)) and not isinstance(m, bool) else []


def _is_nan(value: Any) -> bool:
    return any(isinstance(m, float) and math.isnan(m) for m in _magnitudes(value))


def _bad_figure(value: Any) -> Any:
    """The first magnitude that is not finite and non-negative, else None."""
    for m in _magnitudes(value):
        if not math.isfinite(m) or m < 0:
            return m
    return None


@pytest.mark.parametrize(("key", "name"), _cases())
def test_every_input_is_refused_as_our_error_or_accepted(key: str, name: str) -> None:
    scenario = Scenarios.get(key)
    for bad in BAD:
        try:
            variant = scenario.variant(**{name: bad})
        except LatencyKernelError as e:
            assert _names_the_input(e, name), f"{key}.{name}={bad!r}: {type(e).__name__}: {e}"
            continue
        # accepted: every output evaluates, refusals recorded as our errors (evaluate re-raises others)
        for ev in variant.evaluate():
            assert ev.error is not None or not _is_nan(ev.value), f"{key}.{name}={bad!r}: {ev.output.name} is NaN"
            if ev.error is not None:
                continue
            signed = "negative:" in (ev.output.summary or "")  # a documented signed figure (room to spare)
            bad_figure = (
                _bad_figure(ev.value)
                if not signed
                else next((m for m in _magnitudes(ev.value) if not math.isfinite(m)), None)
            )
            assert bad_figure is None, f"{key}.{name}={bad!r}: {ev.output.name} = {ev.value!r}"


def test_the_fuzz_covers_every_named_scenario_class() -> None:
    classes = {type(Scenarios.get(k)).__name__ for k in keys()}
    assert classes == {type(Scenarios.get(k)).__name__ for k, _ in _cases()}
    assert len(_cases()) > 150


@pytest.mark.parametrize("headroom", [0.5, -1, 0, float("nan"), float("inf"), "x", "2", None, True])
def test_capacity_headroom_is_a_finite_number_at_least_one(headroom: Any) -> None:
    s = Scenarios.get("ResNet50FleetPlanH100")
    with pytest.raises(ScenarioInputError) as info:
        s.variant(headroom=headroom)
    assert info.value.argument == "headroom"
    assert s.variant(headroom=1).accelerators_planned == s.accelerators


def test_decode_batch_of_zero_is_refused() -> None:
    s = Scenarios.get("Llama3_70B_DecodeH100Batch64")
    assert isinstance(s, DecodeScenario)
    with pytest.raises(ScenarioInputError, match="batch_size=0") as info:
        s.variant(batch_size=0)
    assert info.value.argument == "batch_size"


@pytest.mark.parametrize("name", ["daily_users", "requests_per_user_per_day", "days_per_year"])
def test_serving_cost_counts_are_at_least_one(name: str) -> None:
    s = Scenarios.get("LlmServingFirstYear")
    assert isinstance(s, ServingCostScenario)
    with pytest.raises(ScenarioInputError, match=f"{name}=0") as info:
        s.variant(**{name: 0})
    assert info.value.argument == name


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("batch_sizes", 8),
        ("batch_sizes", "8"),
        ("batch_sizes", [1, -2]),
        ("links", "x"),
        ("stage_success", [1]),
        ("prices", None),
    ],
)
def test_lists_and_mappings_name_the_input(name: str, value: Any) -> None:
    for key in keys():
        s = Scenarios.get(key)
        if name in s.inputs():
            with pytest.raises(ScenarioInputError) as info:
                s.variant(**{name: value})
            assert info.value.argument.startswith(name), (key, info.value.argument)


def test_decode_batch_refuses_a_bare_int_as_our_error() -> None:
    kernel = latencykernel.build("llama-3.1-8b-instruct", "h100")
    with pytest.raises(ScenarioInputError, match="batch_sizes=5 must be a list of ints") as info:
        decode_batch(kernel, 4096, 5)  # type: ignore[arg-type]
    assert info.value.argument == "batch_sizes"
    with pytest.raises(ScenarioInputError) as info:
        decode_batch(kernel, 4096, [1, -1])
    assert info.value.argument == "batch_sizes[1]"


def test_saturating_inputs_are_refused_naming_the_input() -> None:
    """Guards issue 10's reproducer: a utilization above 1 gave fast_time = -4.43 ms."""
    s = Scenarios.get("ResNet50FasterModelAt80PctH100")
    with pytest.raises(ScenarioInputError, match="saturates") as info:
        s.variant(fast_service=Q_(1, "s"))
    assert info.value.argument == "fast_service"
    plan = Scenarios.get("ResNet50FleetPlanH100")
    with pytest.raises(ScenarioInputError) as info:
        plan.variant(service_time=Q_(1, "s"))
    assert info.value.argument == "service_time"
    tax = Scenarios.get("InteractiveRequestServingTax")
    with pytest.raises(ScenarioInputError) as info:
        tax.variant(model_time=Q_(1, "s"))
    assert info.value.argument == "model_time"


@pytest.mark.parametrize("value", [float("inf"), 1e300, 10**400])
def test_non_finite_and_huge_factors_are_refused(value: Any) -> None:
    """Guards issue 10's reproducer: kv_width_factor=inf returned inf GB."""
    s = Scenarios.get("Gpt2XlKvFullWindow")
    with pytest.raises(ScenarioInputError) as info:
        s.variant(kv_width_factor=value)
    assert info.value.argument == "kv_width_factor"


@pytest.mark.parametrize("value", [10**30, 2**63, Q_(1e300, "s"), Q_(float("inf"), "B")])
def test_huge_inputs_are_refused_not_divided_by_zero(value: Any) -> None:
    """Guards issue 10: huge integers raised ZeroDivisionError (and huge quantities gave inf);
    every input of every class is refused with our error naming it, or gives finite figures
    (the parametrised fuzz above checks the figures)."""
    for key, name in _cases():
        try:
            variant = Scenarios.get(key).variant(**{name: value})
        except LatencyKernelError as e:
            assert _names_the_input(e, name), f"{key}.{name}: {e}"
            continue
        for ev in variant.evaluate():
            assert ev.error is not None or all(math.isfinite(m) for m in _magnitudes(ev.value)), (key, name)


def test_an_unknown_input_is_refused_naming_it() -> None:
    """Guards variant() letting a misspelled input through (or raising a raw TypeError)."""
    s = Scenarios.get("Gpt2XlChatDecodeBatchesH100")
    with pytest.raises(ScenarioInputError, match="context_tokns") as info:
        s.variant(context_tokns=2048)
    assert info.value.argument == "context_tokns" and "context_tokens" in str(info.value)


def test_a_variant_of_a_variant_revalidates_every_input() -> None:
    """Guards the copy-based variant() skipping checks: a bad value is refused however many
    variants deep, and a good chain gives the same figures as one variant."""
    s = Scenarios.get("Gpt2XlChatDecodeBatchesH100")
    v = s.variant(context_tokens=2048).variant(prompt_tokens=256)
    with pytest.raises(ScenarioInputError):
        v.variant(context_tokens=0)
    assert v.kv_per_sequence == s.variant(context_tokens=2048, prompt_tokens=256).kv_per_sequence
    assert v.variant_of == "Gpt2XlChatDecodeBatchesH100" and v.key is None


def test_an_input_checked_once_is_checked_again_when_it_is_a_new_value() -> None:
    """Guards the variant() memo of checked inputs: an in-place-looking change (q *= -1 makes a
    new quantity) and a string spelling are checked afresh, not taken from the memo."""
    s = Scenarios.get("Gpt2XlChatDecodeBatchesH100")
    q = Q_(2, "B")
    assert s.variant(kv_bytes_per_value=q).kv_bytes_per_value == Q_(2, "B")
    q *= -1
    with pytest.raises(ScenarioInputError) as info:
        s.variant(kv_bytes_per_value=q)
    assert info.value.argument == "kv_bytes_per_value"
    with pytest.raises(ScenarioInputError):
        s.variant(kv_bytes_per_value="-2 B")
    assert s.variant(kv_bytes_per_value="2 B").kv_per_token == s.kv_per_token

"""Every scenario input escapes only as our error.

For every named scenario, each stated input is replaced in turn by a wrong-typed, negative,
zero, NaN, infinite, list, mapping, unit-mismatched or unparsable value. The variant is
either refused with a ``LatencyKernelError`` subclass that names the input, or accepted;
an accepted variant evaluates every output with only our errors recorded and no NaN
value. A raw TypeError, ValueError, ZeroDivisionError or pint error fails the test.
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


def _is_nan(value: Any) -> bool:
    mags: list[Any] = [value]
    if isinstance(value, dict):
        mags = list(value.values())
    for m in mags:
        m = getattr(m, "magnitude", m)
        if isinstance(m, float) and math.isnan(m):
            return True
    return False


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

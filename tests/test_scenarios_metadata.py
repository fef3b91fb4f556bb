"""Every output carries its equation, unit, assumptions and exclusions, readable at run
time, and the equation it declares is the one the code computes."""

from __future__ import annotations

import math
from typing import Any

import pint
import pytest

from latencykernel.errors import LatencyKernelError
from latencykernel.scenarios import Q_, KvDecodeBatchScenario, Scenarios, evaluate_equation
from latencykernel.scenarios.base import Scenario
from latencykernel.scenarios.docs import scenario_classes
from latencykernel.scenarios.metadata import Formula, Output
from latencykernel.scenarios.named import keys

CLASSES = scenario_classes()
CONTRACT = (
    "weights kv_per_token kv_per_sequence bandwidth rate_ceiling max_batch_in_memory peak_rate ridge "
    "prefill_ops prefill_time step_bytes step_time token_rate cache_share max_batch_within"
).split()


def test_the_documented_contract_attributes_and_methods() -> None:
    names = [o.name for o in KvDecodeBatchScenario.outputs()]
    assert sorted(names) == sorted(CONTRACT)
    methods = {o.name for o in KvDecodeBatchScenario.outputs() if o.kind == "method"}
    assert methods == {"step_bytes", "step_time", "token_rate", "cache_share", "max_batch_within"}
    s = Scenarios.Gpt2XlChatDecodeBatchesH100
    for field in (
        "workload",
        "hardware",
        "weight_bytes_per_param",
        "kv_bytes_per_value",
        "context_tokens",
        "batch_sizes",
        "prompt_tokens",
        "prefill_efficiency",
        "peak_precision",
    ):
        assert hasattr(s, field)
    assert (
        KvDecodeBatchScenario(
            workload=s.workload,
            hardware=s.hardware,
            weight_bytes_per_param=Q_(2, "B"),
            kv_bytes_per_value=Q_(2, "B"),
            context_tokens=1024,
            batch_sizes=(1,),
            prompt_tokens=512,
            prefill_efficiency=0.4,
        ).peak_precision
        == "fp16_dense"
    )


def test_metadata_is_readable_from_the_class_and_the_instance() -> None:
    out = KvDecodeBatchScenario.step_time
    assert isinstance(out, Output)
    assert out.equation == "step_bytes(batch_size) / bandwidth"
    assert out.unit == "ms"
    assert any("compute" in e for e in out.excludes)
    assert any("bandwidth" in a for a in out.assumptions)
    bound = Scenarios.Gpt2XlChatDecodeBatchesH100.step_time
    assert bound.equation == out.equation and bound.args == ("batch_size",)
    assert KvDecodeBatchScenario.weights.kind == "property" and KvDecodeBatchScenario.weights.unit == "GB"
    with pytest.raises(AttributeError):
        Scenarios.Gpt2XlChatDecodeBatchesH100.weights = Q_(1, "GB")  # type: ignore[misc]


@pytest.mark.parametrize("cls", CLASSES, ids=[c.__name__ for c in CLASSES])
def test_every_output_of_every_class_is_documented(cls: type[Scenario]) -> None:
    assert cls.summary and cls.equation and cls.family
    assert cls.assumptions and cls.excludes, cls.__name__
    assert cls.inputs_doc, cls.__name__
    assert cls.examples, cls.__name__  # the docs page shows it run; test_scenarios_docs_cli runs it
    outputs = cls.outputs()
    assert outputs
    for o in outputs:
        f: Formula = o.formula
        assert f.summary.endswith("."), (cls.__name__, f.name)
        assert f.equation.strip(), (cls.__name__, f.name)
        compile(f.equation, f"{cls.__name__}.{f.name}", "eval")  # a well-formed expression
        assert f.kind in ("property", "method")
        assert (f.kind == "method") == bool(f.args)
        if f.unit is not None:
            Q_(1, f.unit)  # a unit of our registry
            assert f.returns in ("quantity", "mapping")
        if f.kind == "method":
            assert f.samples is not None, (cls.__name__, f.name)


NAMED = keys()


def _close(a: Any, b: Any) -> bool:
    if isinstance(a, pint.Quantity):
        assert isinstance(b, pint.Quantity), (a, b)
        return math.isclose(a.to(b.units).magnitude, b.magnitude, rel_tol=1e-9, abs_tol=1e-15)
    if isinstance(a, dict):
        return set(a) == set(b) and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, (bool, str)) or isinstance(b, (bool, str)):
        return a == b
    return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-15)


def _check_equations(s: Scenario, key: str) -> int:
    """Each output's equation, evaluated with pint from the scenario's symbols, equals the
    float code's value (units included); an output the code refuses, the equation refuses
    too. Returns the number of values compared."""
    checked = 0
    for ev in s.evaluate():
        if ev.error is not None:
            with pytest.raises(LatencyKernelError):
                evaluate_equation(s, ev.output.name, **ev.args)
            continue
        if ev.output.returns == "int":
            assert isinstance(ev.value, int) and not isinstance(ev.value, bool), (key, ev.output.name)
        via_equation = evaluate_equation(s, ev.output.name, **ev.args)
        assert _close(ev.value, via_equation), (key, ev.output.name, ev.args, ev.value, via_equation)
        if ev.output.unit is not None:
            values = ev.value.values() if isinstance(ev.value, dict) else [ev.value]
            assert all(str(v.units) == ev.output.unit for v in values), (key, ev.output.name)
        checked += 1
    return checked


@pytest.mark.parametrize("key", NAMED)
def test_declared_equations_compute_what_the_code_computes(key: str) -> None:
    """The equation shown is the one computed, for every named scenario."""
    assert _check_equations(Scenarios.get(key), key) > 0


# Neither class has a named instance: the read-aware floor over dense, MoE, sliding-window and
# sparse-attention models, and the calibrated kernel's decode batches on a dense and an MoE model.
SPARSE_CASES = [("Mixtral_8x7B", 4096), ("gpt-oss-120b", 32768), ("glm-5", 65536), ("deepseek-v4-pro", 100_000)]


@pytest.mark.parametrize(("workload", "context"), SPARSE_CASES)
def test_sparse_floor_equations_compute_what_the_code_computes(workload: str, context: int) -> None:
    from latencykernel.scenarios import SparseKvDecodeBatchScenario

    base = Scenarios.Gpt2XlChatDecodeBatchesH100.variant(workload=workload, context_tokens=context)
    s = SparseKvDecodeBatchScenario.from_scenario(base)
    assert _check_equations(s, f"{workload}@{context}") >= 30


@pytest.mark.parametrize(("model", "chip"), [("llama-3.1-8b-instruct", "h100"), ("qwen3-30b-a3b", "h200")])
def test_calibrated_decode_batch_equations_compute_what_the_code_computes(model: str, chip: str) -> None:
    import latencykernel
    from latencykernel.scenarios import decode_batch

    d = decode_batch(latencykernel.build(model, chip), 4096, [1, 8, 64])
    assert _check_equations(d, f"{model}/{chip}") >= 15


def test_equation_check_catches_a_wrong_equation() -> None:
    """The check above can fail: an output whose code disagrees with its equation is caught."""
    from dataclasses import dataclass
    from typing import ClassVar

    from latencykernel.scenarios.metadata import output

    @dataclass(frozen=True, kw_only=True)
    class Wrong(KvDecodeBatchScenario):
        family: ClassVar[str] = "test"

        @output(equation="weights + batch_size * kv_per_sequence", unit="GB", samples=lambda s: [{"batch_size": 8}])
        def step_bytes(self, batch_size: int) -> pint.Quantity:
            """Off by one sequence."""
            return Q_((self._W + (batch_size + 1) * self._m) / 1e9, "GB")  # type: ignore[attr-defined]

    s = Wrong(**Scenarios.Gpt2XlChatDecodeBatchesH100.inputs())
    assert not _close(s.step_bytes(8), evaluate_equation(s, "step_bytes", batch_size=8))

"""The named scenarios reproduce mlsysim 0.3.0's recorded outputs to 1e-6 relative.

Golden records come from ``latencykernel/scenarios/mlsysim_golden.json`` (a subset of the
study's ``mlsysim-golden.json``, checked against it below when that file is present).
Every recorded property and method call is compared, units included; an output mlsysim
recorded as an error must be refused by ours with one of our errors (and for a missing
precision key, an error listing the keys the device has).
"""

from __future__ import annotations

import json
import math
from typing import Any

import pint
import pytest

from conftest import require_shared
from latencykernel.errors import LatencyKernelError
from latencykernel.scenarios import (
    LEFT_OUT,
    Q_,
    Hardware,
    NotApplicableError,
    Scenarios,
    UnknownPrecisionError,
    Workload,
    golden,
)
from latencykernel.scenarios.hardware import RECORDED_HARDWARE
from latencykernel.scenarios.named import NAMED, keys
from latencykernel.scenarios.workloads import RECORDED_WORKLOADS

G = golden.load()
REL = 1e-6

# Golden field name -> our output, where they differ (result fields that echo an input
# are compared with the input attribute of the same name).
RENAMES: dict[str, dict[str, str]] = {
    "ModelCallScenario": {"prompt_tokens": "total_prompt_tokens"},
    "PagedAllocationScenario": {"small_block": "small_block_bytes", "large_block": "large_block_bytes"},
}
SKIP_FIELDS = {"type", "constraint_trace"}
# Outputs mlsysim could not compute because its whole ``result`` failed, that ours can
# (they do not need the missing input).
DEFINED_WITHOUT_RESULT: dict[str, set[str]] = {"LongPromptChunkedPrefill": {"chunks"}}


def _q(rec: dict[str, Any]) -> pint.Quantity:
    return Q_(rec["value"], rec["unit"])


def _is_q(rec: Any) -> bool:
    return isinstance(rec, dict) and "value" in rec and "unit" in rec


def _args(args: dict[str, Any]) -> dict[str, Any]:
    return {k: (_q(v) if _is_q(v) else v) for k, v in args.items()}


def assert_matches(ours: Any, gold: Any, where: str) -> None:
    """``ours`` equals the golden record ``gold`` (value to 1e-6 relative, unit string exact)."""
    if _is_q(gold):
        assert isinstance(ours, pint.Quantity), f"{where}: expected a quantity in {gold['unit']}, got {ours!r}"
        assert str(ours.units) == gold["unit"], f"{where}: unit {ours.units} != golden {gold['unit']}"
        assert math.isclose(ours.magnitude, gold["value"], rel_tol=REL, abs_tol=1e-12), f"{where}: {ours} != {gold}"
    elif isinstance(gold, bool) or isinstance(gold, str):
        assert ours == gold, f"{where}: {ours!r} != {gold!r}"
    elif isinstance(gold, int):
        ours = _bare_count(ours, where)
        # mlsysim's float outputs print as ints when whole (180000.0 requests an hour); the
        # metadata test checks that our "int" outputs are ints
        assert isinstance(ours, (int, float)) and ours == gold, f"{where}: {ours!r} != {gold!r}"
    elif isinstance(gold, float):
        ours = _bare_count(ours, where)
        assert math.isclose(float(ours), gold, rel_tol=REL, abs_tol=1e-12), f"{where}: {ours!r} != {gold!r}"
    elif isinstance(gold, dict):
        assert isinstance(ours, dict) and set(ours) == set(gold), f"{where}: keys {ours!r} != {gold!r}"
        for k in gold:
            assert_matches(ours[k], gold[k], f"{where}[{k!r}]")
    elif isinstance(gold, list):
        assert list(ours) == gold, f"{where}: {ours!r} != {gold!r}"
    else:  # pragma: no cover - encoding not expected
        raise AssertionError(f"{where}: unexpected golden record {gold!r}")


_COUNTS = [Q_(1, u).dimensionality for u in ("token", "param", "sequence", "dollar")]


def _bare_count(ours: Any, where: str) -> Any:
    """mlsysim returns counts of tokens or parameters, and dollars, as bare numbers; ours carry the unit."""
    if isinstance(ours, pint.Quantity):
        assert ours.dimensionality in _COUNTS, f"{where}: {ours} is not a count"
        return ours.magnitude
    return ours


def _check_output(scenario: Any, output_name: str, gold: Any, where: str, **args: Any) -> None:
    is_error = isinstance(gold, dict) and "error" in gold
    call = (
        (lambda: getattr(scenario, output_name)(**args))
        if args or _is_method(scenario, output_name)
        else (lambda: getattr(scenario, output_name))
    )
    if is_error or gold is None:
        with pytest.raises(LatencyKernelError) as info:
            call()
        if is_error and gold["error"].startswith("KeyError"):  # a missing precision key
            assert isinstance(info.value, UnknownPrecisionError), where
            assert info.value.available and all(k in str(info.value) for k in info.value.available), where
        if gold is None:
            assert isinstance(info.value, NotApplicableError), where
        return
    assert_matches(call(), gold, where)


def _is_method(scenario: Any, name: str) -> bool:
    out = getattr(type(scenario), name, None)
    return getattr(out, "kind", None) == "method"


def _check_record(scenario: Any, rec: dict[str, Any]) -> int:
    """Compare every recorded property and method call; return how many were compared."""
    renames = RENAMES.get(rec["type"], {})
    n = 0
    for prop, gold in rec.get("properties", {}).items():
        if prop == "result":
            if isinstance(gold, dict) and "error" in gold:  # the whole result is undefined
                top = set(rec["properties"]) - {"result"}
                allowed = DEFINED_WITHOUT_RESULT.get(rec["key"], set())
                undefined = [o.name for o in scenario.outputs() if o.name not in top | allowed and o.kind == "property"]
                assert undefined
                for name in undefined:
                    _check_output(scenario, name, gold, f"{rec['key']}.{name}")
                    n += 1
                continue
            for field, value in gold.items():
                if field in SKIP_FIELDS:
                    continue
                name = renames.get(field, field)
                _check_output(scenario, name, value, f"{rec['key']}.result.{field}")
                n += 1
            continue
        _check_output(scenario, renames.get(prop, prop), gold, f"{rec['key']}.{prop}")
        n += 1
    for method, calls in (rec.get("methods") or {}).items():
        for call in calls:
            _check_output(
                scenario, method, call["output"], f"{rec['key']}.{method}({call['args']})", **_args(call["args"])
            )
            n += 1
    return n


SHIPPED = [r for r in G["scenarios"]]


@pytest.mark.parametrize("rec", SHIPPED, ids=[r["key"] for r in SHIPPED])
def test_named_scenario_reproduces_golden(rec: dict[str, Any]) -> None:
    scenario = Scenarios.get(rec["key"])
    assert scenario.key == rec["key"]
    assert scenario.name == rec["name"]
    assert type(scenario).mlsysim_type == rec["type"]
    assert _check_record(scenario, rec) > 0


def test_gpt2_xl_chat_decode_batches_h100_every_value() -> None:
    """The issue's headline scenario, value by value (the parametrized test covers it too)."""
    rec = next(r for r in G["scenarios"] if r["key"] == "Gpt2XlChatDecodeBatchesH100")
    s = Scenarios.Gpt2XlChatDecodeBatchesH100
    assert str(s.weights.units) == "GB"
    n = _check_record(s, rec)
    assert n == 10 + 5 * 9  # ten properties; five methods at nine arguments each
    assert s.max_batch_within(Q_(0.5, "ms")) == -5  # the documented "no feasible positive batch"


def _variant(rec: dict[str, Any]) -> Any:
    i = rec["inputs"]
    w_key = i["workload"]["registry"].rsplit(".", 1)[-1]
    h_key = i["hardware"]["registry"].rsplit(".", 1)[-1]
    return Scenarios.Gpt2XlChatDecodeBatchesH100.variant(
        workload=Workload.recorded(w_key),
        hardware=Hardware.recorded(h_key),
        weight_bytes_per_param=_q(i["weight_bytes_per_param"]),
        kv_bytes_per_value=_q(i["kv_bytes_per_value"]),
        context_tokens=i["context_tokens"],
        batch_sizes=i["batch_sizes"],
        prompt_tokens=i["prompt_tokens"],
        prefill_efficiency=i["prefill_efficiency"],
        peak_precision=i["peak_precision"],
    )


@pytest.mark.parametrize("rec", G["variants"], ids=[r["key"] for r in G["variants"]])
def test_kv_decode_variant_reproduces_golden(rec: dict[str, Any]) -> None:
    s = _variant(rec)
    assert s.key is None  # a variant is not the named scenario
    assert _check_record(s, rec) == 10 + 5 * 9


def test_variant_count_and_precision_refusals() -> None:
    assert len(G["variants"]) == 22
    refused = [
        r
        for r in G["variants"]
        if isinstance(r["properties"]["peak_rate"], dict) and "error" in r["properties"]["peak_rate"]
    ]
    assert {r["inputs"]["hardware"]["registry"] for r in refused} == {"Hardware.Cloud.H200", "Hardware.Cloud.MI300X"}


def test_every_golden_scenario_is_shipped_or_left_out_with_a_reason() -> None:
    golden_types = {r["key"]: r["type"] for r in G["scenarios"]} | {r["key"]: r["type"] for r in G["left_out"]}
    assert len(golden_types) == 80
    shipped = set(keys())
    assert shipped.isdisjoint(LEFT_OUT)
    assert shipped | set(LEFT_OUT) == set(golden_types)
    for key, (type_name, reason) in LEFT_OUT.items():
        assert golden_types[key] == type_name, key
        assert len(reason) > 40, key
    for key in shipped:
        assert type(Scenarios.get(key)).mlsysim_type == golden_types[key]


def test_recorded_hardware_is_the_golden_registry() -> None:
    by_ref = {r["registry"]: r for r in G["registries"]["hardware"]}
    for key, hw in RECORDED_HARDWARE.items():
        ref = next(r for r in by_ref if r.rsplit(".", 1)[-1] == key)
        rec = by_ref[ref]
        assert hw.name == rec["name"]
        assert_matches(hw.memory_bandwidth, rec["memory_bandwidth"], f"{key}.bandwidth")
        assert_matches(hw.memory_capacity, rec["memory_capacity"], f"{key}.capacity")
        assert_matches(hw.peak(None), rec["peak_flops"], f"{key}.headline")
        assert set(hw.precision_keys) == set(rec["precision_flops"]), key
        for k, v in rec["precision_flops"].items():
            assert_matches(hw.peak(k), v, f"{key}.{k}")


def test_recorded_workloads_are_the_golden_registry() -> None:
    by_ref = {r["registry"]: r for r in G["registries"]["workloads"]}
    assert len(by_ref) == len(RECORDED_WORKLOADS)
    for key, w in RECORDED_WORKLOADS.items():
        rec = next(v for r, v in by_ref.items() if r.rsplit(".", 1)[-1] == key)
        assert w.name == rec["name"]
        assert w.n_parameters == rec["parameters"]["value"]
        assert w.n_active_parameters == rec.get("active_parameters", rec["parameters"])["value"]
        assert w.layers == rec["layers"]
        if w.kv is None:
            assert rec["type"] == "CNNWorkload"
            continue
        assert w.kv.bytes_per_token(2.0) == rec["kv_bytes_per_token_fp16"]["value"], key
        if "experts" in rec:
            assert w.experts is not None and (w.experts.routed, w.experts.top_k) == (
                rec["experts"],
                rec["active_experts_per_token"],
            )


def test_kv_consistency_fixes_mlsysims_second_kv_path() -> None:
    """mlsysim's admission model disagrees with its own cache geometry on MLA and explicit
    head_dim models; ours has one KV path, equal to the geometry's figure everywhere."""
    rows = {r["registry"].rsplit(".", 1)[-1]: r for r in G["kv_consistency"]}
    disagreeing = []
    for key, w in RECORDED_WORKLOADS.items():
        if w.kv is None or key not in rows:
            continue
        row = rows[key]
        geometry = row["workload.get_kv_cache_size(1,1,fp16)"]["value"]
        admission = row["KvAdmissionModel.kv_per_token(fp16)"]["value"]
        assert w.kv_bytes(2.0) == geometry, key
        if admission != geometry:
            disagreeing.append(key)
    assert sorted(disagreeing) == ["DeepSeek_V3", "PaLM_540B"]


def test_packaged_subset_matches_the_study_file() -> None:
    require_shared(golden.SHARED_GOLDEN)
    full = json.loads(golden.SHARED_GOLDEN.read_text(encoding="utf-8"))
    refs = {r["registry"] for kind in ("hardware", "workloads") for r in G["registries"][kind]}
    assert golden.extract(full, set(NAMED), refs) == G

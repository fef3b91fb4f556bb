"""Coefficient sets and engine rules packs."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from latencykernel.documents.coefficients import CoefficientEntry, load_coefficient_set
from latencykernel.documents.common import validate
from latencykernel.documents.rules import RULES, lookup_rules
from latencykernel.errors import DocumentError

SET = """\
kind: CoefficientSet
name: example-set
coefficients:
  - gemm_eps_max_bf16:
      value: 0.78
      units: dimensionless
      method: measured
      fitted: true
      ci95: [0.74, 0.81]
      scope: {hardware: [h100]}
  - gemm_eps_max_bf16:
      value: 0.81
      units: dimensionless
      method: measured
      fitted: true
      scope: {hardware: [h200]}
  - mfu_prefill:
      value: 0.32
      units: dimensionless
      method: literature
      fitted: false
      sources:
        - {kind: discussion, cite: "inference-sim#589", role: primary}
      rationale: >
        L40S prefill MFU discount.
      scope: {hardware: [l40s]}
  - pd_transfer_base_latency:
      value: 50
      units: us_per_transfer
      method: assumed
      fitted: false
      rationale: A placeholder.
      scope: {hardware: [h100, h200], tp: [1, 2]}
"""


def put(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "coefficients" / "example-set.yaml"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


def test_set_loads_entries_in_file_order(tmp_path: Path) -> None:
    s = load_coefficient_set(put(tmp_path, SET))
    names = [n for n, _ in s.entries()]
    assert names == ["gemm_eps_max_bf16", "gemm_eps_max_bf16", "mfu_prefill", "pd_transfer_base_latency"]
    first = s.entries()[0][1]
    assert first.scope.hardware == ["h100"] and first.ci95 == [0.74, 0.81]
    assert s.entries()[3][1].value == 50.0 and s.entries()[3][1].scope.tp == [1, 2]


@pytest.mark.parametrize(
    ("old", "new", "key", "text"),
    [
        (
            "value: 0.78",
            "value: 0",
            "coefficients[0].gemm_eps_max_bf16.value",
            "is 0, which only method not_charged may state",
        ),
        ("value: 0.78", "value: .nan", "coefficients[0].gemm_eps_max_bf16.value", "must be a finite number"),
        (
            "units: dimensionless",
            "units: percent",
            "coefficients[0].gemm_eps_max_bf16.units",
            "'percent' is not one of dimensionless, us_per_layer",
        ),
        ("method: literature", "method: guessed", "coefficients[2].mfu_prefill.method", "'guessed' is not one of"),
        (
            "      fitted: false\n      rationale: A",
            "      rationale: A",
            "coefficients[3].pd_transfer_base_latency.fitted",
            "missing required key 'fitted'",
        ),
        (
            "method: literature\n      fitted: false",
            "method: literature\n      fitted: true",
            "coefficients[2].mfu_prefill.fitted",
            "fitted true needs method measured",
        ),
        (
            "      rationale: A placeholder.\n",
            "",
            "coefficients[3].pd_transfer_base_latency.rationale",
            "method assumed needs a rationale",
        ),
        (
            '      sources:\n        - {kind: discussion, cite: "inference-sim#589", role: primary}\n',
            "",
            "coefficients[2].mfu_prefill.sources",
            "method literature needs at least one source",
        ),
        ("role: primary", "role: main", "coefficients[2].mfu_prefill.sources[0].role", "'main' is not one of primary"),
        (
            "ci95: [0.74, 0.81]",
            "ci95: [0.80, 0.81]",
            "coefficients[0].gemm_eps_max_bf16.ci95",
            "does not bracket value 0.78",
        ),
        ("scope: {hardware: [h100]}", "scope: {}", "coefficients[0].gemm_eps_max_bf16.scope", "is empty"),
        (
            "scope: {hardware: [h100]}",
            "scope: {hardware: []}",
            "coefficients[0].gemm_eps_max_bf16.scope.hardware",
            "lists no value",
        ),
        (
            "scope: {hardware: [h100]}",
            "scope: {gpu: [h100]}",
            "coefficients[0].gemm_eps_max_bf16.scope.gpu",
            "unknown key 'gpu'; accepted keys are: hardware, model, tp, ep, nodes_spanned",
        ),
        (
            "scope: {hardware: [h200]}",
            "scope: {hardware: [H100]}",
            "coefficients[1].gemm_eps_max_bf16.scope",
            "gemm_eps_max_bf16 is stated twice for the same scope",
        ),
        (
            "      scope: {hardware: [h100]}\n",
            "      scope: {hardware: [h100]}\n    mfu_decode: {}\n",
            "coefficients[0]",
            "single-key map",
        ),
        ("kind: CoefficientSet", "kind: Coefficients", "kind", "is not one of CoefficientSet"),
        (
            "      fitted: true\n      ci95",
            "      fitted: true\n      extends: base\n      ci95",
            "coefficients[0].gemm_eps_max_bf16.extends",
            "unknown key 'extends'",
        ),
    ],
)
def test_set_defects(tmp_path: Path, old: str, new: str, key: str, text: str) -> None:
    assert old in SET
    p = put(tmp_path, SET.replace(old, new, 1))
    with pytest.raises(DocumentError) as ei:
        load_coefficient_set(p)
    e = ei.value
    assert e.key == key and text in str(e) and str(e).startswith(f"{p}: "), str(e)


def test_legacy_map_form_is_rejected_clearly(tmp_path: Path) -> None:
    p = put(tmp_path, "kind: CoefficientSet\nname: old\nbackend: roofline\ncoefficients:\n  mfu: {value: 1}\n")
    with pytest.raises(DocumentError) as ei:
        load_coefficient_set(p)
    assert "unknown key 'backend'" in str(ei.value)


def _entry(value: float, method: str, fitted: bool) -> dict[str, object]:
    return {
        "value": value,
        "units": "dimensionless",
        "method": method,
        "fitted": fitted,
        "scope": {"hardware": ["h100"]},
        "sources": [{"kind": "model", "cite": "c", "role": "primary"}],
        "rationale": "why",
        "copied_from": "other",
    }


@settings(max_examples=120, deadline=None)
@given(
    value=st.sampled_from([0.0, 0.5, -2.0, 1e6]),
    method=st.sampled_from(["measured", "literature", "vendor_spec", "copied", "assumed", "not_charged"]),
    fitted=st.booleans(),
)
def test_value_method_fitted_rules_exactly(value: float, method: str, fitted: bool) -> None:
    ok = (value == 0) == (method == "not_charged") and (not fitted or method == "measured")
    if ok:
        validate(CoefficientEntry, _entry(value, method, fitted), "<memory>")
    else:
        with pytest.raises(DocumentError):
            validate(CoefficientEntry, _entry(value, method, fitted), "<memory>")


def test_validated_accepts_a_metric_name() -> None:
    e = validate(
        CoefficientEntry,
        {**_entry(0.5, "measured", False), "validated": "throughput", "unsupported": ["absolute_ttft"]},
        "<memory>",
    )
    assert e.validated == ["throughput"] and e.unsupported == ["absolute_ttft"]


def test_rules_packs() -> None:
    r = lookup_rules("0.29.0")
    assert lookup_rules("0.31.0").cudagraph_modes == r.cudagraph_modes
    assert lookup_rules("0.31.0").version == "0.31.0"
    assert "FULL_AND_PIECEWISE" in r.cudagraph_modes and "fp8_ds_mla" in r.cache_dtypes
    assert r.custom_all_reduce_supports(8) and not r.custom_all_reduce_supports(3)
    assert not r.custom_all_reduce_supports(1)
    assert r.sequence_parallel_moe("deepep_low_latency", True, 2, 2)
    assert not r.sequence_parallel_moe("deepep_low_latency", True, 1, 2)
    assert not r.sequence_parallel_moe("naive", True, 2, 2)
    assert not r.sequence_parallel_moe(None, True, 2, 2)
    assert not r.sequence_parallel_moe("deepep_low_latency", False, 2, 2)
    assert r.triton_fetch_withholds_sms(28672) == 12 and r.triton_fetch_withholds_sms(4096) == 0
    assert r.dbo_engages(True, 32, True) and not r.dbo_engages(True, 511, False)
    assert "medusa" in r.speculative_methods and "medusa" not in r.async_compatible_spec
    with pytest.raises(DocumentError) as ei:
        lookup_rules("0.30.0")
    assert str(ei.value) == 'no engine rules for engine_version "0.30.0"; known versions are 0.29.0, 0.31.0'
    assert set(RULES) == {"0.29.0", "0.31.0"}
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.version = "x"  # type: ignore[misc]

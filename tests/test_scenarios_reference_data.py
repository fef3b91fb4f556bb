"""The scenario library's reference data lives in package data files, validated at load like
the documents, each record with its source."""

from __future__ import annotations

import copy
import subprocess
import sys
from typing import Any

import pytest

from latencykernel.documents.validation import validate
from latencykernel.documents.yaml_loader import read_yaml
from latencykernel.errors import DocumentError
from latencykernel.scenarios import reference_data as rd

FILES = {"recorded_hardware.yaml": 0, "recorded_workloads.yaml": 1, "left_out.yaml": 2, "named_scenarios.yaml": 3}


def _raw(name: str) -> Any:
    return read_yaml(rd.data_file(name))


def _check(name: str, data: Any) -> Any:
    return validate(rd._models()[FILES[name]], data, rd.data_file(name))


def test_every_record_names_its_source() -> None:
    """Guards a figure without provenance: each recorded device and model states the mlsysim
    registry entry it copies (the key it is looked up by), and the left-out list its file."""
    for key, h in rd.RECORDED_HARDWARE.items():
        assert h.source.startswith("mlsysim 0.3.0 registry Hardware.") and h.source.split()[3].endswith(f".{key},")
    for key, w in rd.RECORDED_WORKLOADS.items():
        assert w.source.startswith("mlsysim 0.3.0 registry Models.") and w.source.split()[3].endswith(f".{key},")
    assert "mlsysim-golden.json" in _raw("left_out.yaml")["source"]
    assert len(rd.LEFT_OUT) == len(_raw("left_out.yaml")["scenarios"]) > 0


@pytest.mark.parametrize(
    ("name", "edit", "key"),
    [
        ("recorded_hardware.yaml", lambda d: d["devices"]["H100"].pop("source"), "devices.H100.source"),
        (
            "recorded_hardware.yaml",
            lambda d: d["devices"]["H100"].update(memory_bandwidth="x TB/s"),
            "devices.H100.memory_bandwidth",
        ),
        ("recorded_hardware.yaml", lambda d: d["devices"]["H100"]["peaks"].update(fp8="fast"), "devices.H100.peaks"),
        (
            "recorded_hardware.yaml",
            lambda d: d["devices"]["H100"].update(memroy_capacity="80 GiB"),
            "devices.H100.memroy_capacity",
        ),
        ("recorded_workloads.yaml", lambda d: d["models"]["GPT2"].update(parameters=-1.0), "models.GPT2.parameters"),
        ("recorded_workloads.yaml", lambda d: d["models"]["GPT2"]["kv"].update(n_kv=0), "models.GPT2.kv.n_kv"),
        ("recorded_workloads.yaml", lambda d: d["models"]["GPT2"]["kv"].update(kind="linear"), "models.GPT2.kv.kind"),
        (
            "left_out.yaml",
            lambda d: d["scenarios"]["ChatbotServing"].update(reason=""),
            "scenarios.ChatbotServing.reason",
        ),
        (
            "named_scenarios.yaml",
            lambda d: d["scenarios"]["Gpt2XlChatDecodeBatchesH100"]["inputs"].update(
                kv_bytes_per_value={"q": "2 parsecs"}
            ),
            "scenarios.Gpt2XlChatDecodeBatchesH100.inputs.kv_bytes_per_value",
        ),
        (
            "named_scenarios.yaml",
            lambda d: d["scenarios"]["Gpt2XlChatDecodeBatchesH100"]["inputs"].update(workload={"named": 3}),
            "scenarios.Gpt2XlChatDecodeBatchesH100.inputs.workload",
        ),
        (
            "named_scenarios.yaml",
            lambda d: d["scenarios"]["Gpt2XlChatDecodeBatchesH100"].pop("class"),
            "scenarios.Gpt2XlChatDecodeBatchesH100.class",
        ),
        (
            "named_scenarios.yaml",
            lambda d: d["scenarios"]["Gpt2XlChatDecodeBatchesH100"].update(titel="x"),
            "scenarios.Gpt2XlChatDecodeBatchesH100.titel",
        ),
    ],
)
def test_a_bad_record_is_a_document_error_naming_its_key(name: str, edit: Any, key: str) -> None:
    """Guards data loaded unchecked: a missing source, an unparsable quantity, a misspelled key,
    an out-of-range figure is refused at load with the file and key path named."""
    data = copy.deepcopy(_raw(name))
    _check(name, copy.deepcopy(data))  # the shipped file passes
    edit(data)
    with pytest.raises(DocumentError) as ei:
        _check(name, data)
    assert ei.value.key == key, (ei.value.key, str(ei.value))
    assert str(ei.value).startswith(str(rd.data_file(name)))


def test_importing_the_library_reads_no_data_file() -> None:
    """Guards import speed: the data files (and pydantic) load on first use, not at import."""
    code = (
        "import sys, latencykernel.scenarios.hardware, latencykernel.scenarios.workloads, "
        "latencykernel.scenarios.named; from latencykernel.scenarios import reference_data as r; "
        "print(r._hardware.cache_info().currsize, r._workloads.cache_info().currsize, "
        "r._named.cache_info().currsize, 'pydantic' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["0", "0", "0", "False"]


def test_the_package_ships_the_data_files() -> None:
    """Guards a wheel without the data: the files sit under data/, which pyproject's
    package-data includes (data/**/*.yaml)."""
    import tomllib
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    pkg = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["latencykernel"]
    assert "data/**/*.yaml" in pkg
    for name in FILES:
        assert rd.data_file(name).is_file()
        assert rd.data_file(name).relative_to(root / "src" / "latencykernel").parts[0] == "data"


def test_every_named_scenario_is_a_data_record_of_a_known_family_and_class() -> None:
    """Guards a builder left in code or a record naming a class its family lacks: every named
    scenario comes from named_scenarios.yaml, is an instance of the class it names, and carries
    the record's text."""
    from latencykernel.scenarios.named import FAMILIES, NAMED, get, keys

    specs = rd.NAMED_SCENARIOS
    assert keys() and set(keys()) == set(specs)
    for key in keys():
        spec = specs[key]
        s = get(key)
        assert spec.family in FAMILIES and NAMED[key][0] == spec.family
        assert type(s).__name__ == spec.class_name and s.key == key
        assert (s.name, s.description, s.sources) == (spec.name, spec.description, spec.sources)


def test_a_record_naming_a_class_its_family_lacks_is_refused() -> None:
    """Guards a typo in a class name surfacing as a raw AttributeError."""
    spec = rd.NAMED_SCENARIOS["Gpt2XlChatDecodeBatchesH100"]
    wrong = rd.NamedSpec(spec.key, "queueing", spec.class_name, spec.name, spec.description, spec.sources, spec.inputs)
    with pytest.raises(DocumentError) as ei:
        rd.build_named(wrong)
    assert ei.value.key == "scenarios.Gpt2XlChatDecodeBatchesH100.class"


def test_a_reference_to_an_output_the_named_scenario_lacks_is_refused() -> None:
    """Guards a derived input ({named, output, args}) with a misspelled output escaping as a raw
    AttributeError; the shipped ones give the named scenario's own figure."""
    from latencykernel.scenarios.named import get

    spec = rd.NAMED_SCENARIOS["ResNet50FleetPlanH100"]
    bad = dict(spec.inputs, batched_rate={"named": "ResNet50EagerFp16BatchingH100", "output": "thruput", "args": [32]})
    wrong = rd.NamedSpec(spec.key, spec.family, spec.class_name, spec.name, spec.description, spec.sources, bad)
    with pytest.raises(DocumentError) as ei:
        rd.build_named(wrong)
    assert ei.value.key == "scenarios.ResNet50FleetPlanH100.inputs.batched_rate"
    knee = get("ResNet50EagerFp16BatchingH100")
    assert get("ResNet50FleetPlanH100").batched_rate == knee.throughput(32)
    assert get("ResNet50FasterModelAt80PctH100").slow_service == knee.service_time(1)

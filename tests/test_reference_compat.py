"""The models accept every real BLIS file in shared/reference (skipped when it is absent)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from conftest import needs_shared
from latencykernel.documents.chip import load_chip
from latencykernel.documents.coefficients import load_coefficient_set
from latencykernel.documents.common import clear_cache, read_yaml, validate
from latencykernel.documents.fabric import load_fabric
from latencykernel.documents.graph import load_graph, load_model_identity
from latencykernel.documents.scenario import Deployment, Scenario, check_bundle
from latencykernel.documents.storage import load_storage
from latencykernel.errors import DocumentError
from latencykernel.inputs import open_inputs, validate_inputs
from latencykernel.repos import Repos

REF = Path(__file__).resolve().parents[1].parent / "shared" / "reference"
pytestmark = needs_shared(REF)

CATALOG = REF / "blis-catalog"
REGISTRY = REF / "blis-registry"
SCHEMAS = REF / "blis-schemas"
TESTDATA = REF / "blis-latency-kernel" / "testdata"


def _files(pattern: str) -> list[Path]:
    return sorted(REF.glob(pattern)) if REF.is_dir() else []


def _is_legacy_single_document(path: Path) -> bool:
    text = path.read_text()
    return "\n---" not in text and "\nhardware:" in text


def _reference_repos() -> Repos:
    return Repos(scenarios=TESTDATA, catalog=CATALOG, registry=REGISTRY)


@pytest.mark.parametrize("path", _files("blis-catalog/hardware/*.yaml"), ids=lambda p: p.name)
def test_hardware_loads(path: Path) -> None:
    chip = load_chip(path)
    assert chip.name == path.stem and chip.SMCount > 0


@pytest.mark.parametrize("path", _files("blis-catalog/networks/*.yaml"), ids=lambda p: p.name)
def test_network_loads(path: Path) -> None:
    assert load_fabric(path).InterNodeBwGBps > 0


@pytest.mark.parametrize("path", _files("**/graph.yaml"), ids=lambda p: str(p.relative_to(REF)))
def test_graph_loads(path: Path) -> None:
    g = load_graph(path)
    assert g.name == path.parent.name and len(g.expand()) > 0


@pytest.mark.parametrize("path", _files("**/model.yaml"), ids=lambda p: str(p.relative_to(REF)))
def test_model_identity_loads(path: Path) -> None:
    assert load_model_identity(path).name == path.parent.name


@pytest.mark.parametrize("path", _files("**/coefficients/*.yaml"), ids=lambda p: str(p.relative_to(REF)))
def test_coefficient_set_loads(path: Path) -> None:
    s = load_coefficient_set(path)
    assert s.name == path.stem and s.entries()


def test_cost_model_sets_present_and_collectives_fast() -> None:
    names = {p.stem for p in (REGISTRY / "coefficients").glob("cost-model-*.yaml")}
    assert names == {
        "cost-model-attention",
        "cost-model-collectives",
        "cost-model-host-overheads",
        "cost-model-primitives",
        "cost-model-recurrent",
    }
    clear_cache()
    t = time.perf_counter()
    s = load_coefficient_set(REGISTRY / "coefficients" / "cost-model-collectives.yaml")
    assert time.perf_counter() - t < 0.5
    assert len(s.entries()) > 400


@pytest.mark.parametrize("path", _files("blis-schemas/**/storage.yaml"), ids=lambda p: str(p.relative_to(REF)))
def test_storage_loads(path: Path) -> None:
    classes = load_storage(path)
    assert classes["cpu_dram"].read_mb_per_s == 20000.0


def test_schema_examples_validate() -> None:
    ex = SCHEMAS / "docs" / "examples"
    scenarios = {
        n: validate(Scenario, read_yaml(ex / f"{n}.yaml"), ex / f"{n}.yaml")
        for n in ("scenario", "scenario-disaggregated", "trace-binding")
    }
    deployments = {
        n: validate(Deployment, read_yaml(ex / f"{n}.yaml"), ex / f"{n}.yaml")
        for n in ("deployment", "deployment-disaggregated")
    }
    check_bundle(scenarios["scenario"], deployments["deployment"], "pair")
    check_bundle(scenarios["scenario-disaggregated"], deployments["deployment-disaggregated"], "pair")
    assert scenarios["trace-binding"].workload is not None and scenarios["trace-binding"].workload.trace is not None
    assert load_coefficient_set(ex / "coefficient-set.yaml").entries()[0][1].ci95 == [0.74, 0.81]


@pytest.mark.parametrize("name", _reference_repos().list_scenarios() if REF.is_dir() else [])
def test_scenario_opens_or_names_the_missing_file(name: str) -> None:
    path = TESTDATA / name
    try:
        inp = open_inputs(name, _reference_repos())
    except DocumentError as e:
        if _is_legacy_single_document(path):
            assert "older single-document form" in str(e)
            return
        assert e.file and not Path(e.file).exists(), str(e)
        assert e.file in str(e) and str(path) in str(e)
        return
    validate_inputs(inp)


STORAGE = """\
nvme_gen4: {read_bandwidth_mb_s: 7000, write_bandwidth_mb_s: 5000, base_latency_us: 80}
cpu_dram: {read_bandwidth_mb_s: 20000, write_bandwidth_mb_s: 20000, base_latency_us: 1}
"""
MEMORY_SET = """\
kind: CoefficientSet
name: cost-model-memory
coefficients:
  - engine_workspace_bytes:
      value: 3758096384
      units: bytes_per_rank
      method: assumed
      fitted: false
      rationale: stand-in for the absent set, for this test only.
      scope: {hardware: [h100, h200, b200, b300]}
"""


@pytest.fixture(scope="module")
def filled_repos(tmp_path_factory: pytest.TempPathFactory) -> Repos:
    """The reference copies with their two gaps filled by stand-ins (storage, memory set)."""
    root = tmp_path_factory.mktemp("ref")
    catalog = root / "catalog"
    for sub in ("hardware", "models", "networks"):
        (catalog / sub).parent.mkdir(parents=True, exist_ok=True)
        (catalog / sub).symlink_to(CATALOG / sub, target_is_directory=True)
    (catalog / "devices").mkdir()
    (catalog / "devices" / "storage.yaml").write_text(STORAGE)
    coeffs = root / "registry" / "coefficients"
    coeffs.mkdir(parents=True)
    for p in (REGISTRY / "coefficients").glob("*.yaml"):
        (coeffs / p.name).symlink_to(p)
    (coeffs / "cost-model-memory.yaml").write_text(MEMORY_SET)
    return Repos(TESTDATA, catalog, root / "registry")


def test_scenarios_with_a_stored_graph_open_fully(filled_repos: Repos) -> None:
    opened = 0
    for name in filled_repos.list_scenarios():
        path = TESTDATA / name
        if _is_legacy_single_document(path):
            continue
        try:
            inp = open_inputs(name, filled_repos)
        except DocumentError as e:
            assert "has no graph at" in str(e), str(e)
            continue
        out = validate_inputs(inp)
        for i in range(1, len(out.deployment.pools)):
            open_inputs(name, filled_repos, pool=i)
        assert [s.name for s in inp.coefficients] == inp.scenario.coefficients
        opened += 1
    assert opened >= 20

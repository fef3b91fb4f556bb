"""From files (or arguments) to Inputs, on a small catalog built in tmp_path."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from latencykernel.errors import DocumentError
from latencykernel.inputs import DEFAULT_COEFFICIENTS, Inputs, build_inputs, open_inputs, validate_inputs
from latencykernel.repos import Repos

GRAPH = """\
kind: ModelGraph
name: tiny
derived_from: {format: hf_config_json, path: config.json, sha256: %s, deriver_version: 1}
global: {hidden_size: 2048, vocab_size: 32000, weight_dtype: bf16}
layer_kinds:
  - id: dense
    nodes:
      - {op: GEMM, role: qkv_proj, n: 2560, k: 2048}
      - {op: Attention, kind: gqa, n_q: 16, n_kv: 2, d_h: 128}
      - {op: AllReduce, role: attn_out, emit: tensor_parallel}
    edges: [[0, 1], [1, 2]]
stack: {pattern: [dense], repeat: 4}
""" % ("d" * 64)
H100 = (
    "Provenance: vendor_spec\nTFlopsPeak: 989.5\nTFlopsFP8: 1979.0\nBwPeakTBs: 3.35\nMemoryGiB: 80.0\n"
    "IntraNodeBwGBps: 450\nSMCount: 132\nGPUsPerNode: 8\n"
)
GB200 = (
    "Provenance: vendor_spec\nTFlopsPeak: 2500\nTFlopsFP8: 5000\nTFlopsNVFP4: 10000\nBwPeakTBs: 8\n"
    "MemoryGiB: 173.2\nIntraNodeBwGBps: 900\nIntraRackBwGBps: 900\nSMCount: 148\nGPUsPerNode: 4\n"
    "GPUsPerRack: 72\n"
)


def coefficient_set(name: str, value: float = 0.9) -> str:
    return (
        f"kind: CoefficientSet\nname: {name}\ncoefficients:\n  - hbm_derate:\n      value: {value}\n"
        "      units: dimensionless\n      method: measured\n      fitted: false\n"
        "      scope: {hardware: [h100, gb200-nvl72]}\n"
    )


BUNDLE = """\
kind: Scenario
name: tiny-h100
model: tiny
coefficients: [set-a, set-b]
engine_version: "0.31.0"
cluster: {hardware: h100, nodes: 1, gpus_per_node: 8, storage: [cpu_dram]}
---
kind: Deployment
name: tiny-h100
pools:
  - role: colocated
    nodes: 1
    parallel: {tp: 2, pp: 1, dp: 1}
    engine: {cache_dtype: fp8}
offload:
  tiers: [{tier: cpu_dram, bytes: 1000000}]
"""
PD = """\
kind: Scenario
name: tiny-pd
model: tiny
coefficients: [set-a]
engine_version: "0.29.0"
cluster: {hardware: h100, fabric: ib-400g, nodes: 2, gpus_per_node: 8}
---
kind: Deployment
name: tiny-pd
pools:
  - {role: prefill, nodes: 1, parallel: {tp: 8, pp: 1, dp: 1}}
  - {role: decode, nodes: 1, parallel: {tp: 4, pp: 1, dp: 2}}
pd_transfer: {connector: NixlConnector}
"""


def put(root: Path, rel: str, text: str) -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


@pytest.fixture
def repos(tmp_path: Path) -> Repos:
    put(tmp_path, "scenarios/tiny-h100.yaml", BUNDLE)
    put(tmp_path, "scenarios/pd/tiny-pd.yaml", PD)
    put(tmp_path, "catalog/models/tiny/graph.yaml", GRAPH)
    put(
        tmp_path,
        "catalog/models/tiny/model.yaml",
        "name: tiny\nsource: {provider: huggingface, repo: Example/Tiny-LLM, revision: abc}\n",
    )
    put(
        tmp_path,
        "catalog/models/nograph/model.yaml",
        "name: nograph\nsource: {provider: huggingface, repo: Example/No-Graph, revision: abc}\n",
    )
    put(tmp_path, "catalog/hardware/h100.yaml", H100)
    put(tmp_path, "catalog/hardware/gb200-nvl72.yaml", GB200)
    put(tmp_path, "catalog/networks/ib-400g.yaml", "Provenance: vendor_spec\nInterNodeBwGBps: 50\n")
    put(
        tmp_path,
        "catalog/devices/storage.yaml",
        "cpu_dram: {read_bandwidth_mb_s: 20000, write_bandwidth_mb_s: 20000, base_latency_us: 1}\n",
    )
    for name in ("set-a", "set-b", *DEFAULT_COEFFICIENTS):
        put(tmp_path, f"registry/coefficients/{name}.yaml", coefficient_set(name, 0.5 if name == "set-b" else 0.9))
    return Repos(tmp_path / "scenarios", str(tmp_path / "catalog"), tmp_path / "registry")


def test_open_inputs_loads_every_document(repos: Repos) -> None:
    inp = open_inputs("tiny-h100.yaml", repos)
    assert isinstance(inp, Inputs)
    assert inp.pool == 0 and inp.stated_pool.parallel.tp == 2
    assert inp.model.name == "tiny" and inp.chip.name == "h100" and inp.fabric is None
    assert [s.name for s in inp.coefficients] == ["set-a", "set-b"]
    assert inp.coefficients[1].entries()[0][1].value == 0.5
    assert set(inp.storage) == {"cpu_dram"} and inp.rules.version == "0.31.0"
    bundle = str(repos.scenarios / "tiny-h100.yaml")
    assert inp.files["scenario"] == bundle and inp.files["deployment"] == bundle
    assert inp.files["model"] == str(repos.catalog / "models/tiny/graph.yaml")
    assert inp.files["coefficients[1]"] == str(repos.registry / "coefficients/set-b.yaml")
    assert inp.files["storage"] == str(repos.catalog / "devices/storage.yaml")
    assert open_inputs("tiny-h100", repos).scenario.name == "tiny-h100"
    assert open_inputs(repos.scenarios / "tiny-h100.yaml", repos).chip.name == "h100"


def test_open_second_pool_with_fabric(repos: Repos) -> None:
    inp = open_inputs("pd/tiny-pd.yaml", repos, pool=1)
    assert inp.stated_pool.role == "decode" and inp.fabric is not None and inp.fabric.name == "ib-400g"
    assert inp.rules.version == "0.29.0"
    with pytest.raises(DocumentError) as ei:
        open_inputs("pd/tiny-pd.yaml", repos, pool=2)
    assert str(ei.value) == f"{repos.scenarios / 'pd/tiny-pd.yaml'} states 2 pool(s); pool 2 was requested"
    with pytest.raises(DocumentError, match="pool -1 was requested"):
        open_inputs("pd/tiny-pd.yaml", repos, pool=-1)


def test_edits_are_validated_like_files(repos: Repos) -> None:
    inp = open_inputs("tiny-h100.yaml", repos)
    inp.deployment.pools[0].engine.cache_dtype = "bfloat16"
    out = validate_inputs(inp)
    assert out.deployment.pools[0].engine.cache_dtype == "bfloat16"
    assert out is not inp and out.chip.name == "h100" and out.files == inp.files

    inp.deployment.pools[0].parallel.tp = 0
    with pytest.raises(DocumentError) as ei:
        validate_inputs(inp)
    e = ei.value
    assert e.key == "pools[0].parallel.tp" and e.value == 0
    assert str(e) == f"{inp.files['deployment']}: pools[0].parallel.tp: must be at least 1, got 0"
    assert inp.deployment.pools[0].parallel.tp == 0  # the argument is not modified

    inp.deployment.pools[0].parallel.tp = 16  # fits no 8-GPU node
    with pytest.raises(DocumentError, match="needs pp\\*tp\\*pcp\\*dp"):
        validate_inputs(inp)


@pytest.mark.parametrize(
    ("edit", "key", "file_key", "text"),
    [
        (
            lambda i: setattr(i.deployment.pools[0].engine, "block_size", "16"),
            "pools[0].engine.block_size",
            "deployment",
            "expected an integer, got '16'",
        ),
        (lambda i: setattr(i.chip, "SMCount", 0), "SMCount", "chip", "must be at least 1"),
        (lambda i: setattr(i.model.global_, "weight_dtype", "fp6"), "global.weight_dtype", "model", "'fp6' is not one"),
        (lambda i: i.model.layer_kinds[0].edges.append([2, 0]), "layer_kinds[0].edges", "model", "form a cycle"),
        (
            lambda i: setattr(i.coefficients[1].entries()[0][1], "method", "assumed"),
            "coefficients[0].hbm_derate.rationale",
            "coefficients[1]",
            "needs a rationale",
        ),
        (
            lambda i: setattr(i.storage["cpu_dram"], "base_latency_us", -1),
            "cpu_dram.base_latency_us",
            "storage",
            "must be greater than 0",
        ),
        (lambda i: setattr(i.scenario.cluster, "nodes", 2), "pools", "scenario", "cluster.nodes is 2"),
        (
            lambda i: setattr(i.deployment.offload.tiers[0], "tier", "nvme"),
            "offload.tiers[0].tier",
            "scenario",
            "'nvme' is not in cluster.storage",
        ),
        (
            lambda i: setattr(i.deployment.pools[0], "engine", {"cache_dtpye": "fp8"}),
            "pools[0].engine.cache_dtpye",
            "deployment",
            "unknown key 'cache_dtpye'",
        ),
    ],
)
def test_edit_defects_name_the_document_file(repos: Repos, edit, key: str, file_key: str, text: str) -> None:  # type: ignore[no-untyped-def]
    inp = open_inputs("tiny-h100.yaml", repos)
    edit(inp)
    with pytest.raises(DocumentError) as ei:
        validate_inputs(inp)
    assert ei.value.key == key and text in str(ei.value), str(ei.value)
    assert str(ei.value).startswith(inp.files[file_key] + ": ")


def test_cached_documents_are_not_shared_between_opens(repos: Repos) -> None:
    a = open_inputs("tiny-h100.yaml", repos)
    a.deployment.pools[0].engine.cache_dtype = "bfloat16"
    a.chip.SMCount = 1
    a.model.layer_kinds[0].nodes[0].n = 7
    b = open_inputs("tiny-h100.yaml", repos)
    assert b.deployment.pools[0].engine.cache_dtype == "fp8" and b.chip.SMCount == 132
    assert b.model.layer_kinds[0].nodes[0].n == 2560
    a.coefficients[0].entries()[0][1].value = 2.0
    assert b.coefficients[0].entries()[0][1].value == 0.9
    assert open_inputs("tiny-h100.yaml", repos).coefficients[0].entries()[0][1].value == 0.9
    out = validate_inputs(a)
    assert out.coefficients[0].entries()[0][1].value == 2.0  # an edit is kept (and validated)
    assert out.coefficients[0] is not a.coefficients[0]
    c = validate_inputs(b)
    assert c.coefficients[1] == b.coefficients[1] and c.coefficients[1] is not b.coefficients[1]
    assert validate_inputs(c).model == b.model


@pytest.mark.parametrize(
    ("old", "new", "text"),
    [
        (
            "model: tiny",
            "model: tinny",
            "scenario key model: 'tinny' has no graph at {catalog}/models/tinny/graph.yaml; available models: tiny",
        ),
        (
            "hardware: h100",
            "hardware: h1000",
            "scenario key cluster.hardware: 'h1000' has no chip file at "
            "{catalog}/hardware/h1000.yaml; available chips: h100",
        ),
        (
            "[set-a, set-b]",
            "[set-a, set-c]",
            "scenario key coefficients[1]: 'set-c' has no coefficient set at "
            "{registry}/coefficients/set-c.yaml; available sets: set-",
        ),
        (
            '"0.31.0"',
            '"0.30.0"',
            'engine_version: no engine rules for engine_version "0.30.0"; known versions are 0.29.0, 0.31.0',
        ),
        (
            "nodes: 1, gpus_per_node: 8,",
            "fabric: ib-100g, nodes: 1, gpus_per_node: 8,",
            "scenario key cluster.fabric: 'ib-100g' has no fabric file at {catalog}/networks/ib-100g.yaml",
        ),
        (
            "storage: [cpu_dram]",
            "storage: [cpu_dram, nvme]",
            "cluster.storage[1]: 'nvme' is not a storage class in "
            "{catalog}/devices/storage.yaml; known classes: cpu_dram",
        ),
    ],
)
def test_names_that_resolve_to_no_file(repos: Repos, old: str, new: str, text: str) -> None:
    p = put(repos.scenarios, "broken.yaml", BUNDLE.replace(old, new))
    with pytest.raises(DocumentError) as ei:
        open_inputs("broken.yaml", repos)
    expected = f"{p}: " + text.format(catalog=repos.catalog, registry=repos.registry)
    assert str(ei.value).startswith(expected), str(ei.value)


def test_storage_file_is_always_read(repos: Repos) -> None:
    (repos.catalog / "devices/storage.yaml").unlink()
    with pytest.raises(DocumentError) as ei:
        open_inputs("tiny-h100.yaml", repos)
    assert "storage classes file at" in str(ei.value) and str(repos.catalog / "devices/storage.yaml") in str(ei.value)


def test_missing_scenario_lists_available(repos: Repos) -> None:
    with pytest.raises(DocumentError) as ei:
        open_inputs("tiny-h10.yaml", repos)
    assert "available scenarios: tiny-h100.yaml" in str(ei.value)


def test_build_inputs_from_catalog_names(repos: Repos) -> None:
    inp = build_inputs("tiny", "h100", tp=2, cache_dtype="fp8", block_size=32, repos=repos, async_scheduling=False)
    assert inp.files["scenario"] == "<memory>" and inp.files["chip"].endswith("h100.yaml")
    assert inp.scenario.engine_version == "0.31.0" and inp.rules.version == "0.31.0"
    assert inp.scenario.coefficients == list(DEFAULT_COEFFICIENTS)
    assert [s.name for s in inp.coefficients] == list(DEFAULT_COEFFICIENTS)
    engine = inp.stated_pool.engine
    assert engine.cache_dtype == "fp8" and engine.block_size == 32 and engine.async_scheduling is False
    assert engine.max_num_seqs is None and inp.scenario.cluster.gpus_per_node == 8
    validate_inputs(inp)


def test_build_inputs_resolves_hf_id_and_chip_prefix(repos: Repos) -> None:
    inp = build_inputs("example/tiny-llm", "gb200", tp=4, repos=repos, coefficients=["set-a"], engine_version="0.29.0")
    assert inp.scenario.model == "tiny" and inp.chip.name == "gb200-nvl72"
    assert inp.scenario.cluster.gpus_per_node == 4 and inp.scenario.cluster.gpus_per_rack == 72
    assert [s.name for s in inp.coefficients] == ["set-a"] and inp.rules.version == "0.29.0"


def test_build_inputs_errors_match_files(repos: Repos) -> None:
    with pytest.raises(DocumentError) as ei:
        build_inputs("tiny", "h100", repos=repos, cache_dtpye="fp8")
    assert str(ei.value).startswith(
        "<memory>: pools[0].engine.cache_dtpye: unknown key 'cache_dtpye'; accepted keys are: all2all_backend, "
    )
    assert str(ei.value).endswith("; did you mean 'cache_dtype'?")
    with pytest.raises(DocumentError, match="<memory>: pools\\[0\\].parallel.tp: must be at least 1, got 0"):
        build_inputs("tiny", "h100", tp=0, repos=repos)
    with pytest.raises(DocumentError, match="a cluster of 2 nodes needs a fabric"):
        build_inputs("tiny", "h100", nodes=2, repos=repos)
    inp = build_inputs("tiny", "h100", nodes=2, tp=16, fabric="ib-400g", repos=repos)
    assert inp.fabric is not None and inp.stated_pool.nodes == 2
    with pytest.raises(DocumentError, match="'h100x' is not a catalog chip"):
        build_inputs("tiny", "h100x", repos=repos)
    with pytest.raises(DocumentError, match="'tiny2' is neither a catalog model"):
        build_inputs("tiny2", "h100", repos=repos)
    with pytest.raises(DocumentError, match="'nograph' has no graph at"):
        build_inputs("Example/No-Graph", "h100", repos=repos)


def test_repos_listings_and_lookups(repos: Repos, tmp_path: Path) -> None:
    assert repos.list_scenarios() == ["pd/tiny-pd.yaml", "tiny-h100.yaml"]
    assert repos.list_models() == ["tiny"]
    assert repos.find_model("tiny") == "tiny" and repos.find_model("EXAMPLE/TINY-LLM") == "tiny"
    assert repos.find_chip("gb200") == "gb200-nvl72" and repos.find_chip("H100") == "h100"
    # a prefix of two different chips asks (an H200's 141 GiB); one of identical aliases resolves
    put(tmp_path, "catalog/hardware/h200.yaml", H100.replace("MemoryGiB: 80.0", "MemoryGiB: 141.0"))
    with pytest.raises(DocumentError, match="'h' matches several chips \\(h100, h200\\)"):
        repos.find_chip("h")
    put(tmp_path, "catalog/hardware/h100-alias.yaml", H100)
    assert repos.find_chip("h100-") == "h100-alias" and repos.find_chip("h1") == "h100"
    assert repos.storage_path() == repos.catalog / "devices" / "storage.yaml"
    assert repos.model_identity_path("tiny").name == "model.yaml"
    assert isinstance(repos.scenarios, Path) and isinstance(repos.catalog, Path)
    d = Repos.default()
    assert d.catalog.name == "catalog" and d.catalog.parent.name == "data" and d.registry.name == "registry"


def test_import_is_lazy() -> None:
    code = (
        "import sys, latencykernel as lk; assert 'pydantic' not in sys.modules, 'pydantic'; "
        "assert 'yaml' not in sys.modules, 'yaml'; lk.Repos; lk.DocumentError; lk.ReqShape; "
        "assert 'pydantic' not in sys.modules; lk.open_inputs; assert 'pydantic' in sys.modules; "
        "print(sorted(lk.__all__))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "open_inputs" in out and "Kernel" in out
    import latencykernel

    with pytest.raises(AttributeError):
        latencykernel.no_such_name  # noqa: B018

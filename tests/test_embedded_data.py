"""The package's embedded data: catalog, registry and scenarios under src/latencykernel/data/.

Checks that every file parses and loads through the document models, that every coefficient
entry obeys the registry's method rules, that every shipped chip is covered by every
coefficient the kernel needs, that every scenario names shipped documents, that the
acceptance figures of the kernel guide follow from the embedded h200 coefficients, and
(when the shared reference tree is present) that every reference AISimulate scenario has an
embedded twin with the same facts and that the generators reproduce the committed files.
"""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import pytest
import yaml

from conftest import needs_shared
from latencykernel.documents.chip import load_chip
from latencykernel.documents.coefficients import load_coefficient_set
from latencykernel.documents.fabric import load_fabric
from latencykernel.documents.scenario import load_bundle
from latencykernel.documents.storage import load_storage

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "src" / "latencykernel" / "data"
CATALOG = DATA / "catalog"
REGISTRY = DATA / "registry" / "coefficients"
SCENARIOS = DATA / "scenarios"
SHARED = ROOT.parent / "shared"
REF_AISIMULATE = SHARED / "reference" / "blis-latency-kernel" / "testdata" / "aisimulate"
REF_REGISTRY = SHARED / "reference" / "blis-registry" / "coefficients"

CHIPS = ["h100", "h200", "b200", "b300", "gb200-nvl72", "gb300", "a100-80", "a100-sxm", "l40s"]
FABRICS = ["ib-400g", "roce-200g", "ethernet-100gbe"]
SETS = [
    "cost-model-primitives",
    "cost-model-collectives",
    "cost-model-attention",
    "cost-model-host-overheads",
    "cost-model-recurrent",
    "cost-model-memory",
]
STORAGE_CLASSES = ["nvme_gen4", "nvme_gen3", "sata_ssd", "cpu_dram", "s3"]

ALL_YAML = sorted(DATA.rglob("*.yaml"))
BUNDLES = sorted(SCENARIOS.rglob("*.yaml"))


def _entries(set_name: str):
    return load_coefficient_set(REGISTRY / f"{set_name}.yaml").entries()


def _coverage() -> dict[str, set[str]]:
    """name -> set of chips in the scope of some entry of that name (all six sets)."""
    cov: dict[str, set[str]] = {}
    for s in SETS:
        for name, e in _entries(s):
            cov.setdefault(name, set()).update(h.lower() for h in (e.scope.hardware or []))
    return cov


def _value(name: str, chip: str) -> float:
    """The last applicable entry across the six sets, as the kernel resolves it."""
    found = None
    for s in SETS:
        for n, e in _entries(s):
            if n == name and chip in {h.lower() for h in (e.scope.hardware or [])}:
                found = e.value
    assert found is not None, f"{name} has no entry for {chip}"
    return found


# --------------------------------------------------------------------------- parsing


def test_the_expected_files_are_shipped():
    for c in CHIPS:
        assert (CATALOG / "hardware" / f"{c}.yaml").is_file(), c
    for f in FABRICS:
        assert (CATALOG / "networks" / f"{f}.yaml").is_file(), f
    assert (CATALOG / "devices" / "storage.yaml").is_file()
    for s in SETS:
        assert (REGISTRY / f"{s}.yaml").is_file(), s
    assert (SCENARIOS / "examples" / "minimax-m2.5-h200-ep16.yaml").is_file()
    assert (SCENARIOS / "examples" / "deepseek-v3-h200-disagg.yaml").is_file()


@pytest.mark.parametrize("path", ALL_YAML, ids=lambda p: str(p.relative_to(DATA)))
def test_every_embedded_yaml_parses(path: Path):
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    docs = [d for d in yaml.load_all(path.read_text(), Loader=loader) if d is not None]
    assert docs, f"{path} holds no document"


@pytest.mark.parametrize("chip", CHIPS)
def test_chip_documents_load(chip: str):
    c = load_chip(CATALOG / "hardware" / f"{chip}.yaml")
    assert c.TFlopsPeak > 0 and c.BwPeakTBs > 0 and c.MemoryGiB > 0 and c.SMCount > 0
    assert c.TFlopsFP8 == 0 or c.TFlopsFP8 > c.TFlopsPeak
    raw = yaml.safe_load((CATALOG / "hardware" / f"{chip}.yaml").read_text())
    assert raw["Provenance"] == "vendor_spec"
    assert any(k.startswith("_comment") for k in raw), "each chip states its sources in a comment key"
    if raw.get("GPUsPerRack"):
        assert raw["GPUsPerRack"] % raw["GPUsPerNode"] == 0 and "IntraRackBwGBps" in raw


@pytest.mark.parametrize("fabric", FABRICS)
def test_fabric_documents_load(fabric: str):
    f = load_fabric(CATALOG / "networks" / f"{fabric}.yaml")
    expected = {"ib-400g": 50, "roce-200g": 25, "ethernet-100gbe": 12.5}[fabric]
    assert f.InterNodeBwGBps == expected
    raw = yaml.safe_load((CATALOG / "networks" / f"{fabric}.yaml").read_text())
    assert raw["RDMA"] is (fabric != "ethernet-100gbe")


def test_storage_classes_use_the_current_keys():
    classes = load_storage(CATALOG / "devices" / "storage.yaml")
    assert sorted(classes) == sorted(STORAGE_CLASSES)
    raw = yaml.safe_load((CATALOG / "devices" / "storage.yaml").read_text())
    for name, body in raw.items():
        assert set(body) == {"_comment", "read_bandwidth_mb_s", "write_bandwidth_mb_s", "base_latency_us"}, name
    assert classes["nvme_gen4"].read_bandwidth_mb_s == 7000
    assert classes["s3"].base_latency_us == 30000


# --------------------------------------------------------------------------- registry rules


@pytest.mark.parametrize("set_name", SETS)
def test_coefficient_sets_load_and_obey_the_method_rules(set_name: str):
    cs = load_coefficient_set(REGISTRY / f"{set_name}.yaml")
    assert cs.name == set_name
    entries = cs.entries()
    assert entries
    for name, e in entries:
        where = f"{set_name}: {name} {e.scope.hardware}"
        if e.value == 0:
            assert e.method == "not_charged", where
        if e.method == "not_charged":
            assert e.value == 0, where
        else:
            assert e.value != 0 and math.isfinite(e.value), where
        if e.fitted:
            assert e.method == "measured", where
        if e.method in ("vendor_spec", "literature", "measured"):
            assert e.sources, f"{where}: {e.method} needs sources"
        if e.method != "measured":
            assert e.rationale, f"{where}: {e.method} needs a rationale"
        if e.method == "assumed":
            assert len(e.rationale) >= 120, f"{where}: an assumed entry needs a substantial rationale"
        assert e.scope.hardware, f"{where}: every entry is scoped by hardware"
        assert set(h.lower() for h in e.scope.hardware) <= set(CHIPS), where
        if e.ci95 is not None:
            assert e.ci95[0] <= e.value <= e.ci95[1], where
        # every entry names where we read it
        assert any("docs build 46d1231" in s.cite for s in (e.sources or [])), where


def test_collective_names_embed_their_own_chip():
    for name, e in _entries("cost-model-collectives"):
        assert len(e.scope.hardware) == 1
        assert name.endswith("_" + e.scope.hardware[0].replace("-", "_")), name


# --------------------------------------------------------------------------- coverage


def _needed_names(chip: str) -> list[str]:
    c = load_chip(CATALOG / "hardware" / f"{chip}.yaml")
    dtypes = ["bf16"] + (["fp8"] if c.TFlopsFP8 > 0 else []) + (["nvfp4"] if (c.TFlopsNVFP4 or 0) > 0 else [])
    names = ["hbm_derate", "moe_routing_imbalance_median", "host_link_bandwidth", "engine_workspace_bytes"]
    names += [f"gemm_{p}_{d}" for d in dtypes for p in ("eps_max", "m_half")]
    names += [
        "attention_decode_floor",
        "attention_decode_rate",
        "attention_prefill_floor",
        "attention_prefill_work_scale",
        "attention_decode_floor_swa",
        "attention_decode_rate_swa",
    ]
    names += [
        "host_admission_per_request",
        "host_admission_per_token",
        "host_output_token",
        "host_completion",
        "host_launch_eager_per_layer",
        "host_replay_graph_per_step",
        "host_launch_per_kernel",
    ]
    names += [f"activation_buffer_count_{fam}_{n}rank" for fam in ("dense", "moe") for n in (1, 2, 4, 8)]
    names += ["activation_scratch_floor_bytes"]
    names += [
        f"cudagraph_capture_bytes_{m}" for m in ("piecewise", "full", "full_and_piecewise", "full_decode_only", "none")
    ]
    names += [f"nccl_communicator_bytes_{n}rank" for n in (2, 4, 8)]
    key = chip.replace("-", "_")
    names += [
        f"collective_{p}_{op}_fp16_{n}rank_{key}"
        for op in ("all_reduce", "all_gather", "reduce_scatter", "alltoall")
        for n in (2, 4, 8, 16)
        for p in ("floor", "peak_rate", "transition_rate")
    ]
    return names


@pytest.mark.parametrize("chip", CHIPS)
def test_every_chip_is_covered_by_every_needed_coefficient(chip: str):
    cov = _coverage()
    missing = [n for n in _needed_names(chip) if chip not in cov.get(n, set())]
    assert not missing, f"{chip} lacks {missing}"


def test_mla_pairs_exist_where_the_registry_fitted_them():
    cov = _coverage()
    for chip in ("h100", "h200", "b200", "b300", "gb200-nvl72", "gb300"):
        for n in ("attention_decode_floor_mla", "attention_decode_rate_mla"):
            assert chip in cov[n], (chip, n)


# --------------------------------------------------------------------------- acceptance figures


def _collective_us(nbytes: float, chip: str, op: str, ranks: int) -> float:
    key = chip.replace("-", "_")
    floor = _value(f"collective_floor_{op}_fp16_{ranks}rank_{key}", chip)
    trans = _value(f"collective_transition_rate_{op}_fp16_{ranks}rank_{key}", chip)
    peak = _value(f"collective_peak_rate_{op}_fp16_{ranks}rank_{key}", chip)
    return max(floor + nbytes / trans, nbytes / peak)


@pytest.mark.parametrize("requests, published_ms", [(1, 0.60), (32, 1.12), (256, 4.88)])
def test_deepseek_v3_h200_nvlink_anatomy(requests: int, published_ms: float):
    """122 all-reduces per step (61 layers x 2) of 7168 x 2 bytes per token, 8 H200 ranks."""
    per_call = _collective_us(requests * 7168 * 2, "h200", "all_reduce", 8)
    total_ms = 122 * per_call / 1000
    assert total_ms == pytest.approx(published_ms, abs=0.03)


def test_h200_anchor_values():
    assert _value("collective_floor_all_reduce_fp16_8rank_h200", "h200") == pytest.approx(4.71)
    assert _value("collective_transition_rate_all_reduce_fp16_8rank_h200", "h200") == pytest.approx(104250)
    assert _value("gemm_eps_max_fp8", "h200") == pytest.approx(0.736)
    assert _value("gemm_m_half_fp8", "h200") == 113
    assert _value("hbm_derate", "h200") == pytest.approx(0.8)
    assert _value("host_launch_per_kernel", "h200") == pytest.approx(3.2)
    assert _value("host_replay_graph_per_step", "h200") == pytest.approx(7.0)
    assert _value("moe_routing_imbalance_median", "h200") == pytest.approx(0.999)
    assert _value("cudagraph_capture_bytes_piecewise", "h200") == 858_783_744
    assert _value("activation_buffer_count_moe_8rank", "h200") == 10
    assert _value("nccl_communicator_bytes_8rank", "h200") == 411_041_792
    assert _value("engine_workspace_bytes", "h200") == 3_758_096_384


def test_h200_mla_decode_attention_per_layer():
    """One request at 4096 tokens of fp8 latent (576 B/token), per layer: floor + bytes / rate
    from the embedded YAML equals the same sum from the transcribed table
    (tools/newest_attention_46d1231.txt, h200 column: attention_decode_floor_mla 13.5 µs,
    attention_decode_rate_mla 2928000 B/µs)."""
    t = _value("attention_decode_floor_mla", "h200") + 4096 * 576 / _value("attention_decode_rate_mla", "h200")
    assert t == pytest.approx(13.5 + 4096 * 576 / 2_928_000, rel=1e-9)


# --------------------------------------------------------------------------- scenarios


@pytest.mark.parametrize("path", BUNDLES, ids=lambda p: str(p.relative_to(SCENARIOS)))
def test_every_scenario_names_shipped_documents(path: Path):
    scenario, deployment = load_bundle(path)
    assert scenario.name == path.stem == deployment.name
    cl = scenario.cluster
    assert (CATALOG / "hardware" / f"{cl.hardware}.yaml").is_file(), cl.hardware
    if cl.nodes > 1:
        assert cl.fabric, "a multi-node cluster names a fabric"
    if cl.fabric:
        assert (CATALOG / "networks" / f"{cl.fabric}.yaml").is_file(), cl.fabric
    for s in scenario.coefficients:
        assert (REGISTRY / f"{s}.yaml").is_file(), s
    assert "cost-model-memory" in scenario.coefficients
    if any((CATALOG / "models").glob("*/graph.yaml")):
        assert (CATALOG / "models" / scenario.model / "graph.yaml").is_file(), scenario.model
    assert sum(p.nodes for p in deployment.pools) == cl.nodes


EXAMPLE_MODELS = [
    "deepseek-v3",
    "deepseek-r1",
    "llama-3.1-8b-instruct",
    "llama-3.1-70b-instruct",
    "qwen3-32b",
    "qwen3-30b-a3b",
    "qwen3-235b-a22b",
    "mixtral-8x7b-v0.1",
    "gpt-oss-120b",
    "minimax-m2.5",
    "kimi-k2.5",
    "glm-5",
    "qwen3.5-397b-a17b",
    "gpt2-xl",
    "deepseek-v4-pro",
    "minimax-m3",
]
STATED = [
    "cache_dtype",
    "block_size",
    "max_num_batched_tokens",
    "max_num_seqs",
    "max_model_len",
    "cudagraph_mode",
    "gpu_memory_utilization",
]


def test_examples_cover_every_shipped_model_and_state_every_setting():
    seen = set()
    for path in sorted((SCENARIOS / "examples").glob("*.yaml")):
        scenario, deployment = load_bundle(path)
        seen.add(scenario.model)
        for pool in deployment.pools:
            for key in STATED:
                assert getattr(pool.engine, key) is not None, f"{path.name}: {key} unstated"
    assert set(EXAMPLE_MODELS) <= seen, sorted(set(EXAMPLE_MODELS) - seen)


def test_ep16_and_disaggregated_examples():
    s, d = load_bundle(SCENARIOS / "examples" / "minimax-m2.5-h200-ep16.yaml")
    assert (s.cluster.hardware, s.cluster.nodes, s.cluster.gpus_per_node, s.cluster.fabric) == ("h200", 2, 8, "ib-400g")
    (p,) = d.pools
    assert (p.parallel.tp, p.parallel.dp, p.parallel.enable_expert_parallel, p.engine.quantization) == (
        8,
        2,
        True,
        "fp8",
    )
    s, d = load_bundle(SCENARIOS / "examples" / "deepseek-v3-h200-disagg.yaml")
    assert sorted(p.role for p in d.pools) == ["decode", "prefill"]
    assert d.pd_transfer is not None and d.pd_transfer.connector == "NixlConnector"
    assert s.cluster.fabric == "ib-400g" and s.cluster.nodes == sum(p.nodes for p in d.pools)


def test_acceptance_bundle_states_what_the_guide_states():
    s, d = load_bundle(SCENARIOS / "aisimulate" / "deepseek-v3-h200-fp8-sglang-tp8.yaml")
    assert (s.name, s.engine_version, s.model) == ("deepseek-v3-h200-fp8-sglang-tp8", "0.29.0", "deepseek-v3")
    assert list(s.coefficients) == [
        "cost-model-primitives",
        "cost-model-collectives",
        "cost-model-host-overheads",
        "cost-model-attention",
        "cost-model-recurrent",
        "cost-model-memory",
    ]
    assert (s.cluster.hardware, s.cluster.nodes, s.cluster.gpus_per_node, s.cluster.fabric) == ("h200", 1, 8, None)
    (p,) = d.pools
    assert (p.role, p.nodes) == ("colocated", 1)
    assert (p.parallel.tp, p.parallel.pp, p.parallel.dp, p.parallel.enable_expert_parallel) == (8, 1, 1, False)
    e = p.engine
    assert (
        e.quantization,
        e.cache_dtype,
        e.block_size,
        e.max_num_batched_tokens,
        e.max_num_seqs,
        e.max_model_len,
        e.cudagraph_mode,
        e.gpu_memory_utilization,
    ) == ("fp8", "fp8", 16, 8192, 256, 32768, "PIECEWISE", 0.9)


# --------------------------------------------------------------------------- reference twins

needs_shared_aisimulate = needs_shared(REF_AISIMULATE)
REF_FILES = sorted(REF_AISIMULATE.glob("*.yaml")) if REF_AISIMULATE.is_dir() else []


def _reference_facts(path: Path) -> dict:
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
    if len(docs) == 2:
        scen, dep = docs
        hardware = scen["cluster"]["hardware"]
        sets = list(scen["coefficients"])
    else:  # older single-document form
        (scen,) = docs
        dep = scen
        hardware = scen["hardware"]
        sets = list(scen["coefficients"])
        if "cost-model-memory" not in sets:
            sets.append("cost-model-memory")  # the current kernel requires the memory set
    return {
        "model": scen["model"],
        "hardware": hardware,
        "nodes": scen["cluster"]["nodes"],
        "gpus_per_node": scen["cluster"]["gpus_per_node"],
        "engine_version": scen["engine_version"],
        "coefficients": sets,
        "pools": dep["pools"],
    }


ENGINE_SETS = {
    "sglang": ["cost-model-host-overheads-sglang"],
    "vllm": ["cost-model-host-overheads-vllm"],
    "trt": ["cost-model-host-overheads-trt"],
}
# Our own engine-independent sets, which every twin but the Go guide's lists right after
# cost-model-primitives (the guide's twin keeps the reference's sets so its printed figures hold).
OWN_SETS = ["cost-model-moe"]
GO_GUIDE_TWIN = "deepseek-v3-h200-fp8-sglang-tp8"


def _with_own_sets(name: str, sets: list[str]) -> list[str]:
    if name == GO_GUIDE_TWIN:
        return sets
    at = sets.index("cost-model-primitives") + 1
    return sets[:at] + OWN_SETS + sets[at:]


@needs_shared_aisimulate
@pytest.mark.parametrize("ref", REF_FILES, ids=lambda p: p.name)
def test_every_reference_aisimulate_scenario_has_a_twin(ref: Path):
    twin = SCENARIOS / "aisimulate" / ref.name
    assert twin.is_file(), f"no embedded twin for {ref.name}"
    want = _reference_facts(ref)
    docs = list(yaml.safe_load_all(twin.read_text()))
    scen, dep = docs
    got = {
        "model": scen["model"],
        "hardware": scen["cluster"]["hardware"],
        "nodes": scen["cluster"]["nodes"],
        "gpus_per_node": scen["cluster"]["gpus_per_node"],
        "engine_version": scen["engine_version"],
        "coefficients": [c for c in scen["coefficients"] if c not in ENGINE_SETS.get(scen.get("engine", ""), [])],
        "pools": dep["pools"],
    }
    want["coefficients"] = _with_own_sets(ref.stem, want["coefficients"])
    assert got == want
    # the engine a twin states is the one the corpus ran (in the file name), and only its own
    # engine-specific sets are added to the reference's list
    if "engine" in scen:
        assert f"-{scen['engine']}-" in ref.name


@needs_shared_aisimulate
def test_no_embedded_aisimulate_scenario_lacks_a_reference():
    ours = {p.name for p in (SCENARIOS / "aisimulate").glob("*.yaml")}
    assert ours == {p.name for p in REF_FILES}


# --------------------------------------------------------------------------- generators


def _tool(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


@needs_shared(REF_REGISTRY)
def test_registry_generator_reproduces_the_committed_sets():
    gen = _tool("gen_registry")
    texts, _ = gen.build_all(REF_REGISTRY)
    for name, text in texts.items():
        assert (REGISTRY / f"{name}.yaml").read_text() == text, f"{name}.yaml is stale; rerun tools/gen_registry.py"


def test_scenario_generator_reproduces_the_committed_bundles():
    gen = _tool("gen_scenarios")
    files = gen.build_examples()
    if REF_AISIMULATE.is_dir():
        files.update(gen.build_aisimulate(REF_AISIMULATE))
    for rel, text in files.items():
        assert (SCENARIOS / rel).read_text() == text, f"{rel} is stale; rerun tools/gen_scenarios.py"

"""The scenario bundle: Scenario + Deployment, field checks and cross checks."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from latencykernel.documents.common import validate
from latencykernel.documents.scenario import Deployment, Engine, Scenario, check_bundle, load_bundle
from latencykernel.errors import DocumentError

SCENARIO = """\
kind: Scenario
name: s1
model: tiny
coefficients: [set-a]
engine_version: "0.31.0"
cluster:
  hardware: h100
  nodes: 1
  gpus_per_node: 8
"""
DEPLOYMENT = """\
kind: Deployment
name: d1
pools:
  - role: colocated
    nodes: 1
    parallel: {tp: 2, pp: 1, dp: 1, enable_expert_parallel: false}
    engine:
      cache_dtype: fp8
      block_size: 16
"""


def bundle(tmp_path: Path, scenario: str = SCENARIO, deployment: str = DEPLOYMENT, name: str = "b.yaml") -> Path:
    p = tmp_path / name
    p.write_text(scenario + "---\n" + deployment)
    return p


def error(path: Path) -> DocumentError:
    with pytest.raises(DocumentError) as ei:
        load_bundle(path)
    return ei.value


def test_minimal_bundle_loads_with_unstated_settings_none(tmp_path: Path) -> None:
    sc, dep = load_bundle(bundle(tmp_path))
    assert sc.cluster.hardware == "h100" and sc.coefficients == ["set-a"] and sc.workload is None
    pool = dep.pools[0]
    assert pool.parallel.tp == 2 and pool.parallel.pcp is None and pool.parallel.dcp is None
    assert pool.engine.cache_dtype == "fp8" and pool.engine.block_size == 16
    for key in (
        "async_scheduling",
        "enable_prefix_caching",
        "disable_cascade_attn",
        "cudagraph_mode",
        "gpu_memory_utilization",
        "speculative",
        "dbo",
        "eplb",
        "dcp_q_replicate",
    ):
        assert getattr(pool.engine, key) is None, key


def test_engine_fields_are_assignable(tmp_path: Path) -> None:
    _, dep = load_bundle(bundle(tmp_path))
    dep.pools[0].engine.cache_dtype = "bfloat16"
    assert dep.pools[0].engine.cache_dtype == "bfloat16"


def test_every_engine_key_of_the_spec_is_accepted() -> None:
    keys = {
        "all2all_backend": "naive",
        "disable_custom_all_reduce": True,
        "allreduce_backend": "nccl",
        "cudagraph_mode": "PIECEWISE",
        "async_scheduling": False,
        "disable_cascade_attn": True,
        "enable_prefix_caching": False,
        "block_size": 64,
        "max_num_batched_tokens": 8192,
        "max_num_seqs": 256,
        "max_model_len": 32768,
        "quantization": "fp8",
        "cache_dtype": "fp8",
        "mamba_cache_dtype": "float32",
        "mamba_ssm_cache_dtype": "float32",
        "mamba_cache_mode": "align",
        "gpu_memory_utilization": 1,
        "scheduling_policy": "fcfs",
        "dbo": {"enable_dbo": True, "dbo_decode_token_threshold": 32, "dbo_prefill_token_threshold": 512},
        "eplb": {"enable_eplb": True, "num_redundant_experts": 32, "window_size": 1000, "step_interval": 3000},
        "speculative": {"method": "mtp", "num_spec_tokens": 1},
        "dcp_comm_backend": "ag_rs",
        "cp_kv_cache_interleave_size": 16,
        "dcp_q_replicate": False,
    }
    e = validate(Engine, keys, "<memory>")
    assert e.eplb is not None and e.eplb.num_redundant_experts == 32
    assert e.gpu_memory_utilization == 1


@pytest.mark.parametrize(
    ("old", "new", "key", "parts"),
    [
        (
            "cache_dtype: fp8",
            "cache_dtpye: fp8",
            "pools[0].engine.cache_dtpye",
            ["unknown key 'cache_dtpye'", "accepted keys are:", "cache_dtype", "block_size"],
        ),
        ("block_size: 16", "block_size: sixteen", "pools[0].engine.block_size", ["expected an integer, got 'sixteen'"]),
        ("tp: 2,", "tp: 0,", "pools[0].parallel.tp", ["must be at least 1, got 0"]),
        (
            "block_size: 16",
            "cudagraph_mode: FOO\n      allreduce_backend: fast",
            "pools[0].engine.allreduce_backend",
            ["'fast' is not one of custom, nccl"],
        ),
        ("role: colocated", "role: mixed", "pools[0].role", ["'mixed' is not one of colocated, prefill, decode"]),
        (
            "enable_expert_parallel: false",
            "enable_expert_parallel: maybe",
            "pools[0].parallel.enable_expert_parallel",
            ["expected true or false, got 'maybe'"],
        ),
        (
            "block_size: 16",
            "gpu_memory_utilization: 0",
            "pools[0].engine.gpu_memory_utilization",
            ["must be greater than 0"],
        ),
        (
            "block_size: 16",
            "speculative: {num_spec_tokens: 2}",
            "pools[0].engine.speculative.method",
            ["missing required key 'method'"],
        ),
        (
            "block_size: 16",
            "eplb: {enable_eplb: true, windw: 3}",
            "pools[0].engine.eplb.windw",
            ["unknown key 'windw'", "window_size"],
        ),
    ],
)
def test_deployment_defects_are_plain_sentences(tmp_path: Path, old: str, new: str, key: str, parts: list[str]) -> None:
    p = bundle(tmp_path, deployment=DEPLOYMENT.replace(old, new))
    e = error(p)
    msg = str(e)
    where = key.rsplit(".", 1)[0] if "missing" in parts[0] else key
    assert msg.startswith(f"{p}: {where}: "), msg
    for part in parts:
        assert part in msg, msg
    assert e.file == str(p) and e.key == key


@pytest.mark.parametrize(
    ("old", "new", "key", "text"),
    [
        ("model: tiny\n", "", "model", "missing required key 'model'"),
        ('engine_version: "0.31.0"', "engine_version: 0.31", "engine_version", "expected a string, got 0.31"),
        ("coefficients: [set-a]", "coefficients: []", "coefficients", "must list at least 1 item(s), got 0"),
        (
            "  nodes: 1\n",
            "  nodes: 1\n  gpus_per_rack: 12\n",
            "cluster.gpus_per_rack",
            "12 is not a multiple of gpus_per_node 8",
        ),
        (
            "  hardware: h100",
            "  hardwre: h100",
            "cluster.hardwre",
            "accepted keys are: hardware, fabric, nodes, gpus_per_node, gpus_per_rack, storage; did you mean 'hardware'?",
        ),
        ("kind: Scenario", "kind: Scenery", "kind", "'Scenery' is not one of Scenario"),
        # an engine the registry cannot scope to is refused, not read as vLLM
        ('engine_version: "0.31.0"', 'engine_version: "0.31.0"\nengine: sgalng', "engine", "'sgalng' is not one of"),
        (
            "name: s1\n",
            "name: s1\nworkload: {shape: chatbot, trace: {data: x.csv}}\n",
            "workload",
            "state exactly one of 'shape'",
        ),
    ],
)
def test_scenario_defects(tmp_path: Path, old: str, new: str, key: str, text: str) -> None:
    p = bundle(tmp_path, scenario=SCENARIO.replace(old, new))
    e = error(p)
    assert str(e).startswith(f"{p}: ") and text in str(e) and e.key == key, str(e)


def test_missing_key_message_names_parent(tmp_path: Path) -> None:
    p = bundle(tmp_path, scenario=SCENARIO.replace("  gpus_per_node: 8\n", ""))
    assert str(error(p)) == f"{p}: cluster: missing required key 'gpus_per_node'"


def test_bundle_layout_errors(tmp_path: Path) -> None:
    empty = tmp_path / "e.yaml"
    empty.write_text("# nothing\n")
    assert "the file is empty" in str(error(empty))
    one = tmp_path / "one.yaml"
    one.write_text(SCENARIO)
    assert "Deployment is missing" in str(error(one))
    legacy = tmp_path / "legacy.yaml"
    legacy.write_text(SCENARIO + "hardware: h100\npools: []\n")
    assert "older single-document form" in str(error(legacy))
    swapped = tmp_path / "swapped.yaml"
    swapped.write_text(DEPLOYMENT + "---\n" + SCENARIO)
    assert "Scenario document must come first" in str(error(swapped))
    three = tmp_path / "three.yaml"
    three.write_text(SCENARIO + "---\n" + DEPLOYMENT + "---\n" + "a: 1\n")
    assert "holds 3 YAML documents" in str(error(three))
    trailing = tmp_path / "t.yaml"
    trailing.write_text(SCENARIO + "---\n" + DEPLOYMENT + "---\n")
    load_bundle(trailing)
    scalar = tmp_path / "s.yaml"
    scalar.write_text(SCENARIO + "---\njust text\n")
    assert "expected a Deployment document" in str(error(scalar))
    assert "file not found" in str(error(tmp_path / "absent.yaml"))


def test_zero_pools(tmp_path: Path) -> None:
    p = bundle(tmp_path, deployment="kind: Deployment\nname: d\npools: []\n")
    e = error(p)
    assert e.key == "pools" and "at least 1 item" in str(e)


PD = """\
kind: Deployment
name: pd
pools:
  - role: prefill
    nodes: 1
    parallel: {tp: 8, pp: 1, dp: 1}
  - role: decode
    nodes: 1
    parallel: {tp: 8, pp: 1, dp: 1}
pd_transfer: {connector: NixlConnector}
"""
PD_SCENARIO = SCENARIO.replace("  nodes: 1\n", "  fabric: ib-400g\n  nodes: 2\n")


def test_prefill_decode_pair_loads(tmp_path: Path) -> None:
    _, dep = load_bundle(bundle(tmp_path, PD_SCENARIO, PD))
    assert [p.role for p in dep.pools] == ["prefill", "decode"]


@pytest.mark.parametrize(
    ("scenario", "deployment", "key", "text"),
    [
        (PD_SCENARIO, PD.replace("role: decode", "role: colocated"), "pools[0].role", "cannot sit beside a colocated"),
        (PD_SCENARIO, PD.replace("role: decode", "role: prefill"), "pools[0].role", "needs a decode pool"),
        (
            PD_SCENARIO,
            PD.replace("pd_transfer: {connector: NixlConnector}\n", ""),
            "pd_transfer",
            "needs a pd_transfer block",
        ),
        (PD_SCENARIO.replace("nodes: 2", "nodes: 3"), PD, "pools", "add up to 2 but cluster.nodes is 3"),
        (PD_SCENARIO.replace("  fabric: ib-400g\n", ""), PD, "cluster.fabric", "a cluster of 2 nodes needs a fabric"),
        (
            SCENARIO,
            DEPLOYMENT.replace("tp: 2, pp: 1, dp: 1", "tp: 4, pp: 1, dp: 4"),
            "pools[0].parallel",
            "needs pp*tp*pcp*dp = 1*4*1*4 = 16 GPUs but the pool has nodes 1 x gpus_per_node 8 = 8",
        ),
        (
            SCENARIO,
            DEPLOYMENT.replace("dp: 1,", "dp: 2, pcp: 2,"),
            "pools[0].parallel.pcp",
            "excludes data parallelism",
        ),
        (SCENARIO, DEPLOYMENT.replace("dp: 1,", "dp: 1, dcp: 4,"), "pools[0].parallel.dcp", "4 does not divide tp 2"),
        (
            SCENARIO,
            DEPLOYMENT.replace("dp: 1,", "dp: 1, pcp: 2, dcp: 3,"),
            "pools[0].parallel.dcp",
            "dcp must be 1, 2 (pcp) or 4 (tp*pcp)",
        ),
        (
            SCENARIO.replace("  nodes: 1\n", "  nodes: 1\n  storage: [cpu_dram]\n"),
            DEPLOYMENT + "offload:\n  tiers:\n    - {tier: nvme_gen4, bytes: 1000}\n",
            "offload.tiers[0].tier",
            "'nvme_gen4' is not in cluster.storage (cpu_dram)",
        ),
    ],
)
def test_cross_checks(tmp_path: Path, scenario: str, deployment: str, key: str, text: str) -> None:
    p = bundle(tmp_path, scenario, deployment)
    e = error(p)
    assert str(e).startswith(f"{p}: {key}: ") and text in str(e), str(e)
    assert e.key == key


def _docs(tp: int, dp: int, pcp: int, dcp: int, nodes: int, gpn: int) -> tuple[Scenario, Deployment]:
    sc = validate(
        Scenario,
        {
            "kind": "Scenario",
            "name": "s",
            "model": "m",
            "coefficients": ["c"],
            "engine_version": "0.31.0",
            "cluster": {"hardware": "h", "fabric": "f", "nodes": nodes, "gpus_per_node": gpn},
        },
        "x",
    )
    dep = validate(
        Deployment,
        {
            "kind": "Deployment",
            "name": "d",
            "pools": [
                {"role": "colocated", "nodes": nodes, "parallel": {"tp": tp, "pp": 1, "dp": dp, "pcp": pcp, "dcp": dcp}}
            ],
        },
        "x",
    )
    return sc, dep


@settings(max_examples=150, deadline=None)
@given(
    tp=st.sampled_from([1, 2, 3, 4, 8, 16]),
    dp=st.integers(1, 4),
    pcp=st.integers(0, 4),
    dcp=st.integers(0, 16),
    nodes=st.integers(1, 4),
    gpn=st.sampled_from([4, 8]),
)
def test_parallel_rules_exactly(tp: int, dp: int, pcp: int, dcp: int, nodes: int, gpn: int) -> None:
    sc, dep = _docs(tp, dp, pcp, dcp, nodes, gpn)
    ok = True
    if pcp > 1 and dp > 1:
        ok = False
    if dcp > 1 and pcp <= 1 and tp % dcp:
        ok = False
    if dcp > 1 and pcp > 1 and dcp not in (1, pcp, tp * pcp):
        ok = False
    if tp * max(pcp, 1) * dp > nodes * gpn:
        ok = False
    if ok:
        check_bundle(sc, dep, "x")
    else:
        with pytest.raises(DocumentError):
            check_bundle(sc, dep, "x")


def test_control_plane_blocks_and_trace_workload(tmp_path: Path) -> None:
    sc = SCENARIO + (
        "workload:\n  trace:\n    data: t.csv\n    rows: 10\n    header:\n      trace_version: 3\n"
        "      time_unit: microseconds\n      mode: real\n      server: {type: vllm, tensor_parallel: 8}\n"
        "      goodput_slo_targets:\n        critical: {ttft_ms: 500, itl_ms: 50, e2e_ms: 30000}\n"
    )
    dep = DEPLOYMENT + "admission: {policy: always}\nrouting: {policy: round_robin}\n"
    s, d = load_bundle(bundle(tmp_path, sc, dep))
    assert s.workload is not None and s.workload.trace is not None and s.workload.trace.rows == 10
    assert d.routing == {"policy": "round_robin"}
    bad = sc.replace("time_unit: microseconds", "time_unit: fortnights")
    e = error(bundle(tmp_path, bad, dep, name="bad.yaml"))
    assert e.key == "workload.trace.header.time_unit" and "'fortnights' is not one of ns" in str(e)

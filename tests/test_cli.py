"""The command line, end to end: figures, JSON, and bad input exiting 2 without a traceback."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

GUIDE = "aisimulate/deepseek-v3-h200-fp8-sglang-tp8.yaml"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "latencykernel", *args], capture_output=True, text=True, timeout=120)


def test_price_prints_the_guide_table() -> None:
    r = run("price", GUIDE, "--requests", "32", "--context", "4096")
    assert r.returncode == 0, r.stderr
    first = [line for line in r.stdout.splitlines() if line.startswith("between")][0]
    assert first.endswith("ms, bottleneck hbm")
    lo, hi = (float(x) for x in first.split()[1:4:2])
    assert 24.1 * 0.95 <= lo <= 24.1 * 1.05 and 25.7 * 0.95 <= hi <= 25.7 * 1.05
    for resource in ("sm", "hbm", "nvlink", "host"):
        assert resource in r.stdout


def test_price_json_with_a_prefill() -> None:
    r = run("price", GUIDE, "--requests", "8", "--context", "2048", "--prefill", "1024", "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["overlap_s"] <= d["no_overlap_s"]
    assert sum(d["per_resource_s"].values()) == pytest.approx(d["no_overlap_s"], rel=1e-12)
    assert d["prefill"] == 1024


def test_memory_and_evidence_json() -> None:
    m = json.loads(run("memory", GUIDE, "--json").stdout)
    assert m["bytes_per_rank"]["comm_buffers"] == 0
    assert m["sequence_variable_bytes"] == 4096 * 35136
    assert m["max_sequences"] > 0
    e = json.loads(run("evidence", GUIDE, "--json").stdout)
    assert [a["name"] for a in e["kernel_assumptions"]] == [
        "max_cudagraph_capture_size",
        "moe_routing_concentration",
        "engine_version",
    ]
    assert e["total"] == len(e["provenance"])


def test_scenarios_lists_the_guide_and_show_resolves_it() -> None:
    names = run("scenarios").stdout.split()
    assert GUIDE in names
    d = json.loads(run("show", GUIDE, "--json").stdout)
    assert d["model"] == "deepseek-v3" and d["chip"] == "h200"
    assert d["widths"]["tp"] == 8
    assert d["layers"] == 61
    assert {k["id"]: k["count"] for k in d["layer_kinds"]} == {"attn_dense": 3, "attn_moe": 58}


@pytest.mark.parametrize(
    "args",
    [
        ("price", "no/such/scenario.yaml"),
        ("price", GUIDE, "--requests", "-3"),
        ("memory", GUIDE, "--gpu-memory-utilization", "1.7"),
    ],
)
def test_bad_input_exits_2_with_a_message_and_no_traceback(args: tuple[str, ...]) -> None:
    r = run(*args)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr
    assert r.stderr.strip()

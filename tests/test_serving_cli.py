"""``latencykernel serve`` end to end: the table, the JSON records, and bad input exiting 2."""

from __future__ import annotations

import json
import subprocess
import sys

GUIDE = "aisimulate/deepseek-v3-h200-fp8-sglang-tp8.yaml"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "latencykernel", *args], capture_output=True, text=True, timeout=120)


def test_serve_json_records_match_the_library() -> None:
    """Guards the command printing what ``estimate`` computes, one record per point."""
    r = run("serve", GUIDE, "--isl", "256", "--osl", "64", "--concurrency", "1,8", "--json")
    assert r.returncode == 0, r.stderr
    recs = json.loads(r.stdout)
    assert [x["concurrency"] for x in recs] == [1, 8]
    import latencykernel as lk
    from latencykernel.cli.common import tidy  # --json rounds as every command does (no float noise)
    from latencykernel.serving import estimate

    want = estimate(lk.open(GUIDE), isl=256, osl=64, concurrency=8).as_vllm_bench()
    for key, value in want.items():
        assert recs[1][key] == tidy({key: value})[key], key


def test_serve_table_names_vllm_bench_rows() -> None:
    """Guards the table's labels (vllm bench serve's console rows)."""
    r = run("serve", GUIDE, "--isl", "128", "--osl", "16", "--concurrency", "2")
    assert r.returncode == 0, r.stderr
    for label in ("Request throughput (req/s)", "Median TTFT (ms)", "P99 TPOT (ms)", "Mean ITL (ms)"):
        assert label in r.stdout


def test_serve_bad_input_exits_2_with_one_sentence() -> None:
    """Guards bad input: exit 2, a message naming the setting, no traceback."""
    for args in (
        ("--concurrency", "1,x"),
        ("--isl", "40000", "--concurrency", "1"),
        ("--concurrency", "2", "--request-rate", "3"),
        ("--concurrency", "1", "--seed", "-5"),
    ):
        r = run("serve", GUIDE, *args)
        assert r.returncode == 2, (args, r.stderr)
        assert "Traceback" not in r.stderr and r.stderr.startswith("error:")
    assert "max_model_len" in run("serve", GUIDE, "--isl", "40000", "--concurrency", "1").stderr


def test_serve_shows_the_assumptions() -> None:
    """Guards A4: the table and --json dropped result.assumptions (num_prompts = 10 x
    concurrency, the engine limits taken from the step model, ...)."""
    r = run("serve", GUIDE, "--isl", "128", "--osl", "16", "--concurrency", "1,4", "--json")
    assert r.returncode == 0, r.stderr
    import latencykernel as lk
    from latencykernel.serving import estimate

    for rec, c in zip(json.loads(r.stdout), (1, 4)):
        want = estimate(lk.open(GUIDE), isl=128, osl=16, concurrency=c).assumptions
        assert [(a["name"], a["value"], a["reason"]) for a in rec["assumptions"]] == want
        assert any(a["name"] == "num_prompts" and a["value"] == str(10 * c) for a in rec["assumptions"])
    t = run("serve", GUIDE, "--isl", "128", "--osl", "16", "--concurrency", "1,4")
    assert t.returncode == 0, t.stderr
    assert "assumed num_prompts = 10 at 1, 40 at 4" in t.stdout
    assert "assumed async_scheduling = " in t.stdout


def test_serve_list_and_rate_input() -> None:
    """Guards A18: '--concurrency 1,,4' was accepted silently (the empty item dropped), '1.5'
    was called 'not a list of numbers' rather than 'not whole', and '--request-rate 1e-300'
    printed a 300-digit duration."""
    r = run("serve", GUIDE, "--concurrency", "1,,4")
    assert r.returncode == 2 and "empty item" in r.stderr and "Traceback" not in r.stderr
    r = run("serve", GUIDE, "--concurrency", "1.5")
    assert r.returncode == 2 and "whole" in r.stderr
    r = run("serve", GUIDE, "--isl", "128", "--osl", "16", "--request-rate", "1e-300", "--num-prompts", "2")
    assert r.returncode == 0, r.stderr
    line = next(x for x in r.stdout.splitlines() if "Benchmark duration" in x)
    assert "e+300" in line and len(line) < 120


def test_serve_takes_sglangs_receive_interval() -> None:
    """Guards --scheduler-recv-interval reaching the simulation: with 8 clients TTFT rises
    against the default (new requests wait for the scheduler's poll), the default's
    assumption record goes, and 0 is refused naming the option."""
    base = json.loads(run("serve", GUIDE, "--isl", "256", "--osl", "64", "--concurrency", "8", "--json").stdout)[0]
    r = run(
        "serve", GUIDE, "--isl", "256", "--osl", "64", "--concurrency", "8", "--scheduler-recv-interval", "30", "--json"
    )
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)[0]
    assert got["mean_ttft_ms"] > base["mean_ttft_ms"]
    assert "scheduler_recv_interval" in [a["name"] for a in base["assumptions"]]
    assert "scheduler_recv_interval" not in [a["name"] for a in got["assumptions"]]
    bad = run("serve", GUIDE, "--concurrency", "1", "--scheduler-recv-interval", "0")
    assert bad.returncode == 2 and "scheduler-recv-interval" in bad.stderr

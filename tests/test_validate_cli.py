"""``latencykernel validate`` on the shipped measurement files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

DATA = Path(__file__).parent / "data" / "validate"
K = "examples/llama-3.1-8b-instruct-h100-bf16-tp1.yaml"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "latencykernel", *args], capture_output=True, text=True, check=False)


def test_validate_json_lists_every_point_with_errors() -> None:
    """Guards the --json form: one row per point, measured and predicted in seconds, the
    deployment from --scenario for a format that names none."""
    r = run("validate", str(DATA / "guidellm.json"), "--scenario", K, "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert len(doc["points"]) == 3
    p = doc["points"][1]
    assert p["concurrency"] == 8 and p["measured_tpot_s"]["mean"] == 0.0125
    assert p["predicted_tpot_s"]["mean"] > 0 and "tpot mean" in p["error"]
    assert doc["summaries"]["tpot mean shape"]["all"]["n"] == 2


def test_validate_without_a_deployment_is_exit_2_naming_the_fix() -> None:
    """Guards that a format without a deployment is refused with our error, not a traceback."""
    r = run("validate", str(DATA / "aiperf.json"))
    assert r.returncode == 2 and "--scenario" in r.stderr and "Traceback" not in r.stderr


def test_validate_table_with_build_arguments() -> None:
    """Guards --build KEY=VALUE and the text summaries."""
    r = run(
        "validate", str(DATA / "vllm_serve.json"), "--build", "model=llama-3.1-8b-instruct", "--build", "hardware=h100"
    )
    assert r.returncode == 0, r.stderr
    assert "TPOT MEAN error" in r.stdout and "TTFT MEAN error" in r.stdout


def test_validate_with_nothing_priced_is_exit_2(tmp_path: Path) -> None:
    """Guards a score over nothing passing silently: a header-only CSV exited 0 with "no point
    priced"."""
    header = (DATA / "native.csv").read_text().splitlines()[0]
    empty = tmp_path / "empty.csv"
    empty.write_text(header + "\n")
    r = run("validate", str(empty))
    assert r.returncode == 2 and "no point could be priced" in r.stderr and "Traceback" not in r.stderr

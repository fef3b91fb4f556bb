"""The Ray executor gives exactly the local result (same candidates, order and figures)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from latencykernel.search import run

SIM = "_search_standin:simulate"
SPACE = {"hardware": ["h200", "b200"], "tp": [4, 8], "dp": [1, 2], "expert_parallel": [True]}
WORKLOAD = {"isl": 1024, "osl": 256, "concurrency": [4, 32]}
SLO = {"tpot": "30ms"}


def _ray() -> object:
    try:
        import ray
    except ImportError:
        if os.environ.get("CI"):
            raise  # CI installs the extra: a missing Ray is a failure there
        pytest.skip("ray is not installed (pip install 'latencykernel[ray]')")
    return ray


def test_ray_equals_local() -> None:
    """Guards a Ray run that reorders, drops or changes candidates (chunks finishing out of
    order, documents shipped differently): a local Ray instance of 2 CPUs gives exactly the
    local processes' result: candidates, refusals, front, best and the run's record."""
    ray = _ray()
    here = Path(__file__).resolve().parent
    path = os.pathsep.join([str(here), str(here.parent / "src"), os.environ.get("PYTHONPATH", "")])
    ray.init(  # type: ignore[attr-defined]
        num_cpus=2, include_dashboard=False, log_to_driver=False, runtime_env={"env_vars": {"PYTHONPATH": path}}
    )
    try:
        on_ray = run("deepseek-v3", WORKLOAD, SLO, SPACE, executor="ray", workers=4, simulator=SIM)
    finally:
        ray.shutdown()  # type: ignore[attr-defined]
    local = run("deepseek-v3", WORKLOAD, SLO, SPACE, executor="local", workers=2, simulator=SIM)
    # 8 deployments × 2 loads, less the refused ones (four H200s do not hold DeepSeek-V3's weights)
    assert len(local.candidates) == 2 * (8 - len(local.refusals)) >= 8
    assert "h200 tp4 dp1 ep" in [r.deployment.label() for r in local.refusals]
    assert on_ray.candidates == local.candidates
    assert on_ray.refusals == local.refusals
    assert on_ray.front == local.front and on_ray.best == local.best
    assert on_ray.provenance == local.provenance


def test_an_unreachable_ray_address_is_refused_at_once() -> None:
    """Guards review A16: ``search --ray bogus:1`` hung for more than a minute while Ray
    retried the connection. The address is checked first (the name resolves, the port
    answers, within a few seconds) and refused naming the option; an address that answers
    passes the check."""
    import socket
    import subprocess
    import sys
    import time

    from latencykernel.errors import LatencyKernelError
    from latencykernel.search.executors import check_ray_address

    for address in ("bogus:1", "ray://bogus:10001", "127.0.0.1:1", "no-port"):
        with pytest.raises(LatencyKernelError, match=f"^--ray: cannot reach {address}"):
            check_ray_address(address, "--ray", timeout_s=2.0)
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        check_ray_address(f"127.0.0.1:{server.getsockname()[1]}", "--ray", timeout_s=2.0)
    start = time.monotonic()
    cmd = [sys.executable, "-m", "latencykernel", "search", "--model", "llama-3.1-8b-instruct", "--hardware", "h100"]
    cmd += ["--isl", "64", "--osl", "8", "--tp", "1", "--concurrency", "1", "--ray", "bogus:1"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stderr.startswith("error: --ray: cannot reach bogus:1 ("), r.stderr
    assert time.monotonic() - start < 30

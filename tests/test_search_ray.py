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

"""The search's outputs: the command, the chart, and the HTML page drawn by a real browser."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from latencykernel.search import run
from latencykernel.search.report import html_report

SIM = "_search_standin:simulate"
SPACE = {"hardware": ["h200", "b200"], "tp": [4, 8], "dp": [1, 2], "expert_parallel": [True]}
ARGS = ["--model", "deepseek-v3", "--hardware", "h200,b200", "--isl", "1024", "--osl", "256", "--tp", "4,8"]
ARGS += ["--dp", "1,2", "--expert-parallel", "on", "--tpot", "30ms", "--ttft", "2s", "--concurrency", "4,32"]
ARGS += ["--simulator", SIM, "--workers", "1"]


@pytest.fixture(scope="module")
def result() -> Any:
    return run(
        "deepseek-v3",
        {"isl": 1024, "osl": 256, "concurrency": [4, 32]},
        {"tpot": "30ms", "ttft": "2s"},
        SPACE,
        executor="serial",
        simulator=SIM,
    )


def _cli(args: list[str]) -> Any:
    from latencykernel.cli import _register, app

    _register()
    return CliRunner().invoke(app, ["search", *args])


def test_command_json_equals_the_library(result: Any) -> None:
    """Guards the command reporting other numbers than ``search.run``: its --json holds the
    same candidates and the same best."""
    out = _cli([*ARGS, "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["deployments"] == result.deployments == 8
    from latencykernel.cli.common import tidy

    # the figures at the precision the model has, as every --json prints them (``tidy``)
    assert [c["figures"] for c in data["candidates"]] == [tidy(dict(c.figures)) for c in result.candidates]
    assert data["candidates"][data["best"]]["deployment"]["label"] == result.best.deployment.label()
    assert data["refused"][0]["count"] == 1


def test_command_table_chart_and_page(tmp_path: Path, result: Any) -> None:
    """Guards the human outputs: the table shows the best deployment, -o writes a PNG,
    --html a page; a bad option exits 2 naming it."""
    png, page = tmp_path / "front.png", tmp_path / "report.html"
    out = _cli([*ARGS, "-o", str(png), "--html", str(page)])
    assert out.exit_code == 0, out.output
    assert "best:" in out.output and result.best.deployment.hardware in out.output
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20_000
    assert "<svg" in page.read_text()
    for bad, name in (
        (["--tp", "four"], "--tp"),
        (["--expert-parallel", "sometimes"], "--expert-parallel"),
        (["-o", str(tmp_path / "x.gif")], "-o"),
        (["--slo", "ttft_p99"], "--slo"),
    ):
        proc = subprocess.run(
            [sys.executable, "-c", "from latencykernel.cli import main; main()", "search", *ARGS, *bad],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        )
        assert proc.returncode == 2, (bad, proc.stderr)
        assert name in proc.stderr and "Traceback" not in proc.stderr


def test_chart_draws_every_candidate(result: Any) -> None:
    """Guards a chart missing points or the front: each panel's scatter holds every
    unsaturated candidate and a front line is drawn."""
    from latencykernel.charts.search import search_figure

    fig = search_figure(result)
    steady = [c for c in result.candidates if not c.saturated]
    for ax in fig.axes:
        n = sum(len(col.get_offsets()) for col in ax.collections) - (1 if result.best else 0)
        assert n == len(steady)
        assert any(line.get_label() == "Pareto front" for line in ax.get_lines())
        assert ax.get_ylabel() == "output tokens/s per GPU"


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def test_page_draws_the_points_in_a_real_browser(tmp_path: Path, result: Any) -> None:
    """Guards a page that draws nothing or needs the network: headless Chromium (networking
    off) runs its script, which draws one circle per unsaturated candidate and, for the
    point named in the address (as hovering it does), shows that point's deployment."""
    browser = _chromium()
    if browser is None:
        pytest.skip("no Chromium installed (Debian: apt-get install -y chromium)")
    page = tmp_path / "report.html"
    page.write_text(html_report(result))
    assert "http://" not in page.read_text().replace("http://www.w3.org/2000/svg", "")
    assert "https://" not in page.read_text()
    proc = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--dump-dom",
            page.as_uri() + "#point=0",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    dom = proc.stdout
    steady = [c for c in result.candidates if not c.saturated]
    circles = re.findall(r'<circle class="point[^"]*"[^>]*data-i="(\d+)"', dom)
    assert len(circles) == len(steady), proc.stderr[-2000:]
    assert f"{len(steady)} points drawn" in dom
    assert 'class="front"' in dom
    tip = re.search(r'<div id="tip" style="([^"]*)">([^<]*)</div>', dom)
    assert tip is not None and "display: block" in tip.group(1)
    assert tip.group(2).startswith(steady[0].deployment.label())


def test_command_fewest_gpus_equals_the_library() -> None:
    """Guards the command's inverse question drifting from ``search.fewest_gpus``."""
    from latencykernel.search import fewest_gpus

    args = ["--model", "deepseek-v3", "--hardware", "h200", "--isl", "1024", "--osl", "256", "--tp", "4,8"]
    args += ["--expert-parallel", "on", "--tpot", "30ms", "--fewest-gpus", "20", "--max-replicas", "8"]
    out = _cli([*args, "--simulator", SIM, "--workers", "1", "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    lib = fewest_gpus(
        "deepseek-v3",
        20,
        {"tpot": "30ms"},
        {"hardware": ["h200"], "tp": [4, 8], "expert_parallel": [True]},
        isl=1024,
        osl=256,
        max_replicas=8,
        executor="serial",
        simulator=SIM,
    )
    assert [(s["deployment"]["label"], s["replicas"], s["gpus"]) for s in data["sizing"]] == [
        (s.deployment.label(), s.replicas, s.gpus) for s in lib.sizing
    ]
    assert data["sizing"] and data["refused"][0]["count"] == 1

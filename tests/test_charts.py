"""Charts drawn headless: each is a valid, non-empty PNG or SVG whose axes, labels, units and
series are what the figure claims, drawn from the result object it was given."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

import latencykernel as lk
from latencykernel.batch import Batch, Resource, StepEstimate
from latencykernel.charts import (
    CapacityRow,
    CapacityTable,
    anatomy_figure,
    anatomy_sweep,
    capacity_figure,
    capacity_table,
    compare_deployments,
    compare_figure,
    save,
)
from latencykernel.errors import LatencyKernelError

GUIDE = "aisimulate/deepseek-v3-h200-fp8-sglang-tp8.yaml"
PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def kernel() -> lk.Kernel:
    return lk.open(GUIDE)


def _is_image(path: Path) -> None:
    data = path.read_bytes()
    assert len(data) > 5000, f"{path} is nearly empty"
    if path.suffix == ".png":
        assert data[:8] == PNG
    else:
        assert data.lstrip().startswith(b"<?xml") and b"<svg" in data[:2000]


class Linear:
    """A step model of the user's own: host 1 ms, hbm 0.1 ms per request (charts need only
    the StepModel protocol's step_time)."""

    def step_time(self, batch: Batch) -> StepEstimate:
        n = len(batch)
        per = {Resource.HBM: 1e-4 * n, Resource.HOST: 1e-3} if n else {Resource.HOST: 1e-3}
        total = sum(per.values())
        return StepEstimate(max(per.values()), total, max(per, key=per.__getitem__), per)


def test_anatomy_stacks_each_resource_and_marks_the_bottleneck(kernel: lk.Kernel, tmp_path: Path) -> None:
    """Guards a stack that does not add up to the no-overlap line, or a bottleneck mislabelled."""
    sizes = [1, 2, 4, 8, 16, 32, 64, 128, 256]
    sweep = anatomy_sweep(kernel, 4096, sizes, label="guide")
    fig = anatomy_figure(sweep)
    (ax,) = fig.axes
    assert ax.get_xlabel().startswith("batch size") and ax.get_ylabel() == "step time (ms)"
    assert [t.get_text() for t in ax.get_xticklabels()] == [f"{b:,}" for b in sizes]
    assert len(ax.containers) == len(sweep.resources()) == 4  # sm, hbm, nvlink, host on this deployment
    tops = [sum(c[i].get_height() for c in ax.containers) for i in range(len(sizes))]
    lines = {ln.get_label(): ln for ln in ax.get_lines()}
    no = lines["no overlap (resources take turns)"].get_ydata()
    ov = lines["overlap (resources at once)"].get_ydata()
    for i, e in enumerate(sweep.estimates):
        assert tops[i] == pytest.approx(no[i], rel=1e-9) == pytest.approx(e.no_overlap * 1e3, rel=1e-9)
        assert ov[i] <= no[i]
    marks = [t.get_text() for t in ax.texts]
    assert marks == [e.bottleneck.value for e in sweep.estimates]
    assert marks[0] == "host" and marks[-1] == "hbm"  # small batches wait on the host, large on HBM
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert {"sm", "hbm", "nvlink", "host"} <= set(legend)
    for suffix in (".png", ".svg"):
        _is_image(save(fig, tmp_path / f"anatomy{suffix}"))


def test_anatomy_draws_any_step_model() -> None:
    """Guards the charts depending on the concrete Kernel rather than the StepModel protocol."""
    sweep = anatomy_sweep(Linear(), 1024, [1, 5, 100], label="linear")
    assert [round(e.no_overlap, 9) for e in sweep.estimates] == [0.0011, 0.0015, 0.011]
    ax = anatomy_figure(sweep).axes[0]
    assert [t.get_text() for t in ax.texts] == ["host", "host", "hbm"]
    assert sweep.resources() == ["hbm", "host"]


def test_capacity_lines_are_the_table(tmp_path: Path) -> None:
    """Guards a capacity line plotting other numbers than the table, or a 0 ("does not fit")
    drawn as a point on a log axis."""
    rows = (
        CapacityRow(1024, 400, 150, 500, 300),
        CapacityRow(8192, 50, 20, 64, 45),
        CapacityRow(65536, 6, 0, 8, 5),
    )
    table = CapacityTable("test", 0.02, 256, rows)
    fig = capacity_figure(table)
    (ax,) = fig.axes
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert ax.get_xlabel() == "context length (tokens per sequence)"
    assert ax.get_ylabel() == "largest batch (sequences)"
    lines = {ln.get_label(): list(ln.get_ydata()) for ln in ax.get_lines()}
    assert lines["fits in KV memory (kernel)"] == [400, 50, 6]
    tpot = lines["meets TPOT ≤ 20 ms (kernel)"]
    assert tpot[:2] == [150, 20] and math.isnan(tpot[2])
    assert lines["fits in memory (first-principles floor)"] == [500, 64, 8]
    assert lines["meets TPOT ≤ 20 ms (floor)"] == [300, 45, 5]
    assert lines["max_num_seqs 256"] == [256, 256]
    assert "nothing fits at 65,536 tokens" in ax.get_title()
    assert table.as_dict()["rows"][0]["servable_batch"] == 150
    _is_image(save(fig, tmp_path / "capacity.png"))


def test_capacity_from_the_kernel_falls_with_context_and_stays_under_its_floor(kernel: lk.Kernel) -> None:
    """Guards the capacity table against rising with context or beating the first-principles floor."""
    t = capacity_table(kernel, 0.05, [1024, 4096, 16384])
    for a, b in zip(t.rows, t.rows[1:]):
        assert b.kv_max_batch <= a.kv_max_batch and b.tpot_max_batch <= a.tpot_max_batch
    for r in t.rows:
        assert r.kv_max_batch == kernel.max_sequences(r.context_tokens)
        assert 0 < r.kv_max_batch <= r.floor_kv_max_batch
        assert 0 < r.tpot_max_batch <= r.floor_tpot_max_batch
        over = Batch.decode(r.tpot_max_batch + 1, r.context_tokens, 8)
        assert kernel.step_time(Batch.decode(r.tpot_max_batch, r.context_tokens, 8)).no_overlap <= 0.05
        assert kernel.step_time(over).no_overlap > 0.05


def test_compare_highlights_only_differences(kernel: lk.Kernel, tmp_path: Path) -> None:
    """Guards differences going unmarked, or a deployment differing from itself."""
    same = compare_deployments(
        kernel, kernel, 32, 4096, labels=("a", "a"), serve={"isl": 256, "osl": 16, "concurrency": 4}
    )
    assert not any(d["different"] for d in same.as_dict()["differences"])
    assert {"TTFT p99 at concurrency 4 (s)", "output tokens/s per GPU at concurrency 4"} <= {
        d["figure"] for d in same.as_dict()["differences"]
    }
    ax_step, ax_mem = compare_figure(same).axes
    assert not any("×" in t.get_text() for t in ax_step.texts + ax_mem.texts)
    other = lk.open("aisimulate/deepseek-v3-b200-fp8-sglang-tp8.yaml")
    c = compare_deployments(kernel, other, 32, 4096, labels=("h200", "b200"), tpot_s=0.05)
    d = {x["figure"]: x for x in c.as_dict()["differences"]}
    assert d["step, no overlap (s)"]["different"] and d["step, no overlap (s)"]["ratio_b_over_a"] < 1
    assert not d["weights per rank (bytes)"]["different"]  # same model, same fp8 weights, same tp
    fig = compare_figure(c)
    ax_step, ax_mem = fig.axes
    assert ax_step.get_ylabel() == "step time, no overlap (ms)" and ax_mem.get_ylabel() == "memory per rank (GiB)"
    assert any(t.get_text().startswith("B / A = 0.") for t in ax_step.texts)
    assert [t.get_text() for t in ax_mem.get_xticklabels()] == ["weights", "fixed total", "KV budget"]
    _is_image(save(fig, tmp_path / "compare.svg"))


def test_save_refuses_what_it_cannot_write(kernel: lk.Kernel, tmp_path: Path) -> None:
    """Guards a chart silently saved in a format nobody asked for, or a raw OSError."""
    fig = anatomy_figure(anatomy_sweep(Linear(), 8, [1, 2]))
    for bad in (tmp_path / "x.jpg", tmp_path / "x", tmp_path / "no" / "such" / "x.png"):
        with pytest.raises(LatencyKernelError, match="-o"):
            save(fig, bad)


def test_matplotlib_loads_only_when_a_chart_is_drawn() -> None:
    """Guards `import latencykernel` (or the charts package itself) importing matplotlib."""
    code = (
        "import sys, latencykernel, latencykernel.charts; assert 'matplotlib' not in sys.modules; "
        "latencykernel.charts.anatomy_figure; assert 'matplotlib' not in sys.modules; print('ok')"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.stdout.strip() == "ok", r.stderr


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "latencykernel", *args], capture_output=True, text=True, timeout=300)


def test_chart_commands_write_images_and_json(tmp_path: Path) -> None:
    """Guards -o writing nothing, and --json holding anything but numbers."""
    a = run("anatomy", GUIDE, "--context", "4096", "--requests", "1..64", "-o", str(tmp_path / "a.png"), "--json")
    assert a.returncode == 0, a.stderr
    _is_image(tmp_path / "a.png")
    steps = json.loads(a.stdout)["steps"]
    assert [s["batch_size"] for s in steps] == [1, 2, 4, 8, 16, 32, 64]
    assert all(isinstance(s["no_overlap_s"], float) for s in steps)
    c = run("capacity", "--model", "llama-3.1-8b-instruct", "--hardware", "h100", "--tpot", "20ms",
            "--context", "1024,8192", "-o", str(tmp_path / "c.svg"), "--json")  # fmt: skip
    assert c.returncode == 0, c.stderr
    _is_image(tmp_path / "c.svg")
    rows = json.loads(c.stdout)["rows"]
    assert [r["context_tokens"] for r in rows] == [1024, 8192] and rows[0]["kv_max_batch"] > rows[1]["kv_max_batch"]
    m = run("compare", GUIDE, "deepseek-v3@h200:tp=8", "--json")
    assert m.returncode == 0, m.stderr
    d = json.loads(m.stdout)
    assert d["a"]["gpus"] == d["b"]["gpus"] == 8


def test_serving_figure_draws_median_and_p99_against_load(tmp_path: Path) -> None:
    """Guards the serving chart plotting other numbers than the ServingResults it was given."""
    from latencykernel.charts import serving_figure, serving_sweep

    k = lk.build("llama-3.1-8b-instruct", "h100")
    sweep = serving_sweep(k, isl=512, osl=64, concurrencies=[1, 4, 16], num_prompts=32, label="llama")
    fig = serving_figure(sweep)
    ax_ttft, ax_tpot, ax_tput = fig.axes
    assert (ax_ttft.get_ylabel(), ax_tpot.get_ylabel()) == ("TTFT (ms)", "TPOT (ms)")
    assert ax_ttft.get_xlabel() == ax_tpot.get_xlabel() == "concurrency (requests in flight)"
    assert (ax_tput.get_xlabel(), ax_tput.get_ylabel()) == ("TPOT median (ms)", "output tokens/s per GPU")
    lines = {ln.get_label(): ln for ax in fig.axes for ln in ax.get_lines()}
    rs = sweep.results
    assert list(lines["TTFT median"].get_ydata()) == [r.ttft.median * 1e3 for r in rs]
    assert list(lines["TPOT p99"].get_ydata()) == [r.tpot.p99 * 1e3 for r in rs]
    tput = lines["output throughput per GPU"]
    assert list(tput.get_xdata()) == [r.tpot.median * 1e3 for r in rs]
    assert list(tput.get_ydata()) == [r.output_throughput_per_gpu for r in rs]
    assert [t.get_text() for t in ax_tput.texts] == ["1", "4", "16"]
    # more requests in flight: more throughput per GPU, and a slower token for each
    assert tput.get_ydata()[0] < tput.get_ydata()[-1] and tput.get_xdata()[0] < tput.get_xdata()[-1]
    rows = sweep.as_dict()["rows"]
    assert [r["load"] for r in rows] == [1, 4, 16] and all(r["ttft_p99_s"] >= r["ttft_median_s"] for r in rows)
    _is_image(save(fig, tmp_path / "serving.png"))


def test_serve_plot_writes_the_serving_chart(tmp_path: Path) -> None:
    """Guards serve --plot writing nothing, or breaking serve's JSON on stdout."""
    out = tmp_path / "serve.svg"
    r = run("serve", "--model", "llama-3.1-8b-instruct", "--hardware", "h100", "--isl", "256", "--osl", "32",
            "--concurrency", "1,4", "--num-prompts", "8", "--plot", str(out), "--json")  # fmt: skip
    assert r.returncode == 0, r.stderr
    _is_image(out)
    assert [rec["concurrency"] for rec in json.loads(r.stdout)] == [1, 4]

"""The search's figures are ``latencykernel.serving``'s, for colocated and disaggregated
deployments alike."""

from __future__ import annotations

import pytest

import latencykernel as lk
from latencykernel import serving
from latencykernel.kernel import Placement
from latencykernel.search import run
from latencykernel.search.evaluate import figures

SPACE = {
    "hardware": ["h100"],
    "tp": [1, 2],
    "max_num_seqs": [None, 16],
    "disaggregation": {"prefill": {"tp": [1]}, "decode": {"tp": [1]}, "prefill_workers": [1], "decode_workers": [1, 2]},
}
WORKLOAD = {"isl": 256, "osl": 32, "concurrency": [1, 24]}


@pytest.fixture(scope="module")
def result() -> object:
    return run("llama-3.1-8b-instruct", WORKLOAD, {"tpot": "12ms"}, SPACE, executor="serial")


def test_colocated_figures_are_the_simulation_of_lk_build(result: object) -> None:
    """Guards the search simulating something other than the deployment it names: each
    colocated candidate's figures equal ``serving.simulate`` on ``lk.build`` with the same
    settings, seed 0, figure for figure."""
    rows = [c for c in result.candidates if not c.deployment.disaggregated]  # type: ignore[attr-defined]
    assert len(rows) == 2 * 2 * 2
    for c in rows:
        d = c.deployment
        k = lk.build("llama-3.1-8b-instruct", "h100", tp=d.layout.tp, max_num_seqs=d.max_num_seqs)
        r = serving.simulate(k, serving.ClosedLoop(c.load.concurrency, 256, 32), seed=0)
        assert dict(c.figures) == figures(r, d.gpus)
        assert c.figures["tokens_per_s_per_gpu"] == r.output_throughput / d.gpus
    # a cap of 16 sequences makes 24 clients queue: TTFT rises against the uncapped twin
    by = {(c.deployment.layout.tp, c.deployment.max_num_seqs, c.load.concurrency): c for c in rows}
    assert by[(1, 16, 24)].figures["ttft_mean_s"] > by[(1, None, 24)].figures["ttft_mean_s"]


def test_disaggregated_figures_are_the_xpyd_simulation(result: object) -> None:
    """Guards xPyD candidates priced as one pool: their figures equal ``serving.simulate`` on
    ``Disaggregated(prefill, decode, x, y)`` with the kernel's KV transfer time, and their GPUs
    count both pools."""
    rows = [c for c in result.candidates if c.deployment.disaggregated and c.deployment.max_num_seqs is None]  # type: ignore[attr-defined]
    assert [c.deployment.decode_workers for c in rows] == [1, 1, 2, 2]
    sc = {
        "kind": "Scenario",
        "name": "pd",
        "model": "llama-3.1-8b-instruct",
        "coefficients": list(lk.inputs.DEFAULT_COEFFICIENTS),  # type: ignore[attr-defined]
        "engine_version": "0.31.0",
        "cluster": {"hardware": "h100", "nodes": 2, "gpus_per_node": 8, "fabric": "ib-400g"},
    }
    for c in rows:
        d = c.deployment
        base = lk.build_inputs("llama-3.1-8b-instruct", "h100", nodes=2, fabric="ib-400g")
        dep = {
            "kind": "Deployment",
            "name": "pd",
            "pools": [
                {"role": r, "nodes": 1, "parallel": {"tp": 1, "pp": 1, "dp": 1, "enable_expert_parallel": False}}
                for r in ("prefill", "decode")
            ],
            "pd_transfer": {"connector": "NixlConnector"},
        }
        from latencykernel.documents.common import validate
        from latencykernel.documents.scenario import Deployment, Scenario

        base.scenario = validate(Scenario, sc, "<memory>")
        base.deployment = validate(Deployment, dep, "<memory>")
        pre = lk.new(base)
        base.pool = 1
        dec = lk.new(base)

        def move(tokens: int, k: lk.Kernel = dec) -> float:
            return k.pd_transfer_time(tokens, Placement(node=0, rack=0), Placement(node=1, rack=0))

        r = serving.simulate(
            serving.Disaggregated(pre, dec, 1, d.decode_workers, move),
            serving.ClosedLoop(c.load.concurrency, 256, 32),
            seed=0,
        )
        assert dict(c.figures) == figures(r, d.gpus)
        assert d.gpus == 1 + d.decode_workers


def test_each_candidate_carries_the_simulations_assumptions(result: object) -> None:
    """Guards review A5: the search kept only the figures of each ``ServingResult`` and dropped
    what the run assumed (num_prompts 10 x concurrency, the step price, limits-derived caps);
    each candidate's provenance now holds the run's own ``assumptions``, entry for entry."""
    rows = [c for c in result.candidates if not c.deployment.disaggregated]  # type: ignore[attr-defined]
    for c in rows:
        d = c.deployment
        k = lk.build("llama-3.1-8b-instruct", "h100", tp=d.layout.tp, max_num_seqs=d.max_num_seqs)
        r = serving.simulate(k, serving.ClosedLoop(c.load.concurrency, 256, 32), seed=0)
        assert r.assumptions
        assert c.provenance["assumptions"] == tuple(tuple(str(x) for x in a) for a in r.assumptions)
        assert "num_prompts" in {a[0] for a in c.provenance["assumptions"]}


def test_the_command_prints_what_the_answer_assumed() -> None:
    """Guards review A5 on the command line: the table showed figures without the defaults
    behind them; under it the search's own assumptions and the best candidate's simulation
    assumptions (serving's, by name and value) are printed."""
    from typer.testing import CliRunner

    from latencykernel.cli import _register, app

    _register()
    args = ["search", "--model", "llama-3.1-8b-instruct", "--hardware", "h100", "--isl", "128", "--osl", "16"]
    out = CliRunner().invoke(app, [*args, "--concurrency", "4", "--tp", "1", "--tpot", "50ms", "--workers", "1"])
    assert out.exit_code == 0, out.output
    k = lk.build("llama-3.1-8b-instruct", "h100")
    r = serving.simulate(k, serving.ClosedLoop(4, 128, 16), seed=0)
    text = " ".join(out.output.split())
    assert "assumed: fabric = ib-400g" in text
    assert "the best's simulation assumed: " in text
    for name, value, _ in r.assumptions[:3]:
        assert f"{name}={value}" in text


def test_deployments_resolving_alike_are_simulated_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Guards the search's reuse of a simulation: deployments whose kernels resolve alike
    (max_num_seqs unstated, and stated at the default it resolves to) share a fingerprint
    and get the simulation's rows once computed, figure for figure equal to simulating
    each; deployments that differ in anything the simulation reads do not share one."""
    from latencykernel.search import evaluate

    k1 = lk.build("qwen3-30b-a3b", "h100", tp=1)
    default = k1.limits().max_num_seqs
    k3 = lk.build("qwen3-30b-a3b", "h100", tp=1, max_num_seqs=default)
    k4 = lk.build("qwen3-30b-a3b", "h100", tp=1, max_num_seqs=16)
    k5 = lk.build("qwen3-30b-a3b", "h100", tp=1, cache_dtype="fp8")
    k6 = lk.build("qwen3-30b-a3b", "h100", tp=1, enable_expert_parallel=True)
    assert k1.fingerprint() == k3.fingerprint()
    assert len({k1.fingerprint(), k4.fingerprint(), k5.fingerprint(), k6.fingerprint()}) == 4

    calls: list[int] = []
    real = evaluate.serving_simulate

    def counting(*a: object) -> object:
        calls.append(1)
        return real(*a)  # type: ignore[arg-type]

    monkeypatch.setattr(evaluate, "serving_simulate", counting)
    monkeypatch.setattr(evaluate, "_ROWS", {})
    space = {"hardware": ["h100"], "tp": [1], "max_num_seqs": [None, default, 16]}
    res = run(
        "qwen3-30b-a3b", {"isl": 128, "osl": 16, "concurrency": [2, 8]}, {"tpot": "50ms"}, space, executor="serial"
    )
    got = {(c.deployment.max_num_seqs, c.load.concurrency): c for c in res.candidates}
    assert len(got) == 6
    assert len(calls) == 4  # two distinct engines x two loads
    for (mns, conc), c in got.items():
        k = lk.build("qwen3-30b-a3b", "h100", tp=1, max_num_seqs=mns)
        r = serving.simulate(k, serving.ClosedLoop(conc, 128, 16), seed=0)
        assert dict(c.figures) == figures(r, c.deployment.gpus)

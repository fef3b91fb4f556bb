"""A model compiled as one graph (vLLM's ``compilation_config.splitting_ops: []``): the graph
modes vLLM replaces, and the eager step's host cost (``host_launch_eager_unsplit_per_layer``,
cost-model-host-overheads-vllm)."""

from __future__ import annotations

import pytest

import latencykernel as lk
from latencykernel import Batch
from latencykernel.errors import LatencyKernelError
from latencykernel.resolve.layout import Override
from latencykernel.resolve.settings import Assumptions, graph_modes
from latencykernel.validation import open_deployment
from latencykernel.validation.points import Deployment

TWIN = "aisimulate/llama-3.1-70b-instruct-b200-fp8-vllm-tp8.yaml"  # lists the vLLM host set
GUIDE = "aisimulate/deepseek-v3-h200-fp8-sglang-tp8.yaml"  # lists only the generic host set

# vLLM's CompilationConfig.set_splitting_ops_for_v1 with splitting_ops = []: PIECEWISE
# becomes NONE and FULL_AND_PIECEWISE becomes FULL; the others stand. Written out from the
# source, not computed: (decode graph, other graph) of the mode vLLM runs.
UNSPLIT_EXPECTED = {
    "PIECEWISE": ("NONE", "eager", "eager"),
    "FULL_AND_PIECEWISE": ("FULL", "full", "full"),
    "FULL": ("FULL", "full", "full"),
    "FULL_DECODE_ONLY": ("FULL_DECODE_ONLY", "full", "eager"),
    "NONE": ("NONE", "eager", "eager"),
}


@pytest.mark.parametrize("mode", sorted(UNSPLIT_EXPECTED))
def test_an_unsplit_graph_takes_the_mode_vllm_runs(mode: str) -> None:
    """Guards pricing piecewise graphs a one-graph model cannot hold: each mode resolves as
    vLLM resolves it, a replaced one is recorded as an override naming both modes, and a
    split graph keeps the stated mode."""
    overrides: list[Override] = []
    got = graph_modes(mode, Assumptions(), unsplit=True, overrides=overrides)
    assert got == UNSPLIT_EXPECTED[mode]
    replaced = UNSPLIT_EXPECTED[mode][0] != mode
    assert [(o.field, o.requested, o.resolved) for o in overrides] == (
        [("cudagraph_mode", mode, UNSPLIT_EXPECTED[mode][0])] if replaced else []
    )
    split = graph_modes(mode, Assumptions(), unsplit=False, overrides=overrides)
    assert split[0] == mode


def _kernel(scenario: str, **engine: object) -> lk.Kernel:
    inputs = lk.open_inputs(scenario)
    for key, value in engine.items():
        setattr(inputs.deployment.pools[0].engine, key, value)
    return lk.new(inputs)


def _host_s(k: lk.Kernel, scheduled: list[int], computed: list[int]) -> float:
    est = k.step_time(Batch.from_columns(scheduled, computed))
    return next(v for r, v in est.per_resource.items() if str(r) == "host")


def test_an_unsplit_graphs_eager_step_pays_its_per_layer_host_cost() -> None:
    """Guards the coefficient being ignored or charged to graph-replayed steps: under
    FULL_DECODE_ONLY a step carrying a prompt runs eager, and with splitting_ops [] its host
    time exceeds the split graph's by exactly (unsplit - generic per-layer cost) x layers;
    a uniform decode step (one full-graph replay) is priced the same either way."""
    split = _kernel(TWIN, cudagraph_mode="FULL_DECODE_ONLY")
    unsplit = _kernel(TWIN, cudagraph_mode="FULL_DECODE_ONLY", splitting_ops=[])
    layers = split.constants.plan.total_layers
    generic = split.constants.host_eager_per_layer_s
    assert generic == pytest.approx(7e-6)  # cost-model-host-overheads host_launch_eager_per_layer
    assert unsplit.constants.host_eager_per_layer_s == pytest.approx(200e-6)  # the vLLM set's fit
    mixed = ([1024, 1, 1, 1], [0, 2000, 2000, 2000])
    extra = _host_s(unsplit, *mixed) - _host_s(split, *mixed)
    assert extra == pytest.approx((200e-6 - 7e-6) * layers, rel=1e-6)
    decode = ([1, 1, 1, 1], [2000, 2000, 2000, 2000])
    assert _host_s(unsplit, *decode) == pytest.approx(_host_s(split, *decode), rel=1e-9)
    # the reference path agrees with the fused one on the unsplit eager step
    ref = unsplit._reference_step(Batch.from_columns(*mixed))
    assert next(v for r, v in ref.per_resource.items() if str(r) == "host") == pytest.approx(
        _host_s(unsplit, *mixed), rel=1e-9
    )


def test_an_unsplit_graph_without_the_vllm_set_is_recorded_not_guessed() -> None:
    """Guards a silent default: a deployment whose sets hold no unsplit cost keeps the generic
    per-layer eager cost and says so in its assumptions; a replaced mode is in its overrides."""
    k = _kernel(GUIDE, cudagraph_mode="PIECEWISE", splitting_ops=[])
    assert k.constants.host_eager_per_layer_s == pytest.approx(7e-6)
    assert any(a[0] == "host_launch_eager_unsplit_per_layer" and a[1] == "absent" for a in k.assumptions())
    assert (k.constants.graph_decode, k.constants.graph_other) == ("eager", "eager")
    assert any(o.field == "cudagraph_mode" and o.resolved == "NONE" for o in k.resolved().overrides)


def test_a_runs_compilation_settings_open_its_own_step_model() -> None:
    """Guards the run's settings being dropped on the way to the kernel: Deployment.settings
    replaces the pool's cudagraph_mode and splitting_ops, changes the deployment's key, and
    is refused naming the setting when it is not one a run can state or is malformed."""
    dep = Deployment(scenario=TWIN, settings=(("cudagraph_mode", "FULL_DECODE_ONLY"), ("splitting_ops", ())))
    k = open_deployment(dep)
    assert (k.constants.graph_decode, k.constants.graph_other) == ("full", "eager")
    assert k.constants.host_eager_per_layer_s == pytest.approx(200e-6)
    assert dep.key() != Deployment(scenario=TWIN).key()
    with pytest.raises(LatencyKernelError, match=r"settings\.max_num_seqs"):
        Deployment(scenario=TWIN, settings=(("max_num_seqs", 8),))
    with pytest.raises(LatencyKernelError, match=r"settings\.splitting_ops"):
        Deployment(scenario=TWIN, settings=(("splitting_ops", "[]"),))
    with pytest.raises(LatencyKernelError, match=r"settings\.cudagraph_mode"):
        Deployment(scenario=TWIN, settings=(("cudagraph_mode", 3),))
    with pytest.raises(LatencyKernelError, match="scenario"):
        Deployment(build=(("hardware", "h100"), ("model", "m")), settings=(("splitting_ops", ()),))


def test_a_runs_kv_cache_dtype_opens_its_own_step_model() -> None:
    """Guards a run's KV dtype being dropped: settings.cache_dtype "auto" (the model's 16-bit
    dtype) holds the cache at twice the fp8 twin's bytes per token, and a value that is not a
    name is refused naming the setting."""
    twin = "aisimulate/gpt-oss-120b-h200-fp4-vllm-tp2.yaml"  # states cache_dtype fp8
    fp8 = open_deployment(Deployment(scenario=twin))
    auto = open_deployment(Deployment(scenario=twin, settings=(("cache_dtype", "auto"),)))
    assert auto.kv_bytes_per_token() == 2 * fp8.kv_bytes_per_token()
    with pytest.raises(LatencyKernelError, match=r"settings\.cache_dtype"):
        Deployment(scenario=twin, settings=(("cache_dtype", ""),))

"""validate's readers: each shipped file (made-up numbers) parses into vLLM-defined points."""

from __future__ import annotations

from pathlib import Path

import pytest

from latencykernel.errors import LatencyKernelError
from latencykernel.validation import Deployment, detect, read_measurements, read_text

DATA = Path(__file__).parent / "data" / "validate"
DEP = Deployment(scenario="examples/llama-3.1-8b-instruct-h100-bf16-tp1.yaml")


def test_native_csv_reads_every_column_in_seconds() -> None:
    """Guards the ms -> s conversion, build.* columns, and rate-vs-concurrency loads."""
    pts = read_measurements([DATA / "native.csv"])
    assert len(pts) == 4
    a = pts[0]
    assert a.sweep == "s1" and a.deployment.scenario == "examples/llama-3.1-8b-instruct-h100-bf16-tp1.yaml"
    assert (a.isl, a.osl, a.concurrency, a.request_rate) == (1000, 200, 1, None)
    assert a.ttft.mean == pytest.approx(0.050) and a.ttft.median == pytest.approx(0.048)
    assert a.ttft.p99 == pytest.approx(0.070)
    assert a.tpot.mean == pytest.approx(0.010) and a.itl.p99 == pytest.approx(0.015)
    assert pts[1].tpot.median is None  # an empty cell is missing, not zero
    b = pts[3]
    assert b.deployment.scenario is None
    assert dict(b.deployment.build) == {"model": "llama-3.1-8b-instruct", "hardware": "h100", "tp": 2}
    assert b.concurrency is None and b.request_rate == pytest.approx(2.5) and b.engine == "sglang"


def test_native_rows_carry_tensorrt_llm_batch_waiting() -> None:
    """Guards the engine setting a run states beside its measurements: TensorRT-LLM's
    batch_wait_timeout_iters / batch_wait_max_tokens_ratio are read into the point, and a
    row without them is off (0), not a default wait."""
    text = (
        "sweep,isl,osl,concurrency,scenario,batch_wait_timeout_iters,batch_wait_max_tokens_ratio\n"
        "x,1000,1000,4,a.yaml,20,0.9\n"
        "y,1000,1000,4,a.yaml,,\n"
    )
    a, b = read_text(text, "bw.csv")
    assert (a.batch_wait_timeout_iters, a.batch_wait_max_tokens_ratio) == (20, pytest.approx(0.9))
    assert (b.batch_wait_timeout_iters, b.batch_wait_max_tokens_ratio) == (0, 0.0)


def test_native_rows_carry_the_runs_max_num_seqs() -> None:
    """Guards the run's --max-num-seqs beside its measurements: read into the point, a row
    without it takes the deployment's (0), and a bad value is refused naming the column."""
    text = "sweep,isl,osl,concurrency,scenario,max_num_seqs\nx,1000,1000,4,a.yaml,1024\ny,1000,1000,4,a.yaml,\n"
    a, b = read_text(text, "seqs.csv")
    assert (a.max_num_seqs, b.max_num_seqs) == (1024, 0)
    with pytest.raises(LatencyKernelError, match="max_num_seqs"):
        read_text("sweep,isl,osl,concurrency,scenario,max_num_seqs\nx,1000,1000,4,a.yaml,2.5\n", "bad.csv")


def test_native_json_nested_and_flat_stats() -> None:
    """Guards both spellings of a stat in native JSON ({'tpot_ms': {...}} and tpot_mean_ms)."""
    pts = read_measurements([DATA / "native.json"])
    assert [p.concurrency for p in pts] == [8, 2]
    assert pts[0].tpot.median == pytest.approx(0.0135) and pts[0].ttft.p99 == pytest.approx(0.3)
    assert pts[1].tpot.mean == pytest.approx(0.011)
    assert dict(pts[0].deployment.build)["tp"] == 1


def test_vllm_result_json_takes_its_own_definitions() -> None:
    """Guards ISL/OSL as totals over completed requests and the scenario from --metadata."""
    (p,) = read_measurements([DATA / "vllm_serve.json"])
    assert (p.isl, p.osl) == (1024, 256)
    assert p.concurrency == 8 and p.request_rate is None
    assert p.tpot.mean == pytest.approx(0.0125) and p.tpot.median == pytest.approx(0.01225)
    assert p.itl.median == pytest.approx(0.01175) and p.itl.p99 == pytest.approx(0.030)
    assert p.ttft.p99 == pytest.approx(0.140)
    assert p.deployment.scenario == "examples/llama-3.1-8b-instruct-h100-bf16-tp1.yaml"
    assert p.sweep == "vllm-sweep"


def test_aiperf_inter_token_latency_is_tpot_and_units_convert() -> None:
    """Guards the AIPerf mapping: inter_token_latency -> TPOT, inter_chunk_latency (in us
    here) -> ITL, p50 -> median; the deployment comes from the caller."""
    (p,) = read_measurements([DATA / "aiperf.json"], DEP)
    assert (p.isl, p.osl, p.concurrency) == (1024, 128, 16)
    assert p.tpot.mean == pytest.approx(0.01575) and p.tpot.median == pytest.approx(0.0155)
    assert p.itl.mean == pytest.approx(0.0158) and p.itl.p99 == pytest.approx(0.041)
    assert p.ttft.median == pytest.approx(0.090)
    assert p.deployment is DEP


def test_guidellm_reads_itl_as_tpot_not_its_tpot() -> None:
    """Guards the GuideLLM mapping: its time_per_output_token_ms (divided over every output
    token, the first included) is not vLLM's TPOT; its per-request inter_token_latency_ms is."""
    pts = read_measurements([DATA / "guidellm.json"], DEP)
    assert [(p.concurrency, p.request_rate) for p in pts] == [(1, None), (8, None), (None, 1.5)]
    assert pts[0].tpot.mean == pytest.approx(0.010)  # not 0.0099
    assert pts[1].tpot.mean == pytest.approx(0.0125) and pts[1].tpot.p99 == pytest.approx(0.0135)
    assert pts[1].ttft.median == pytest.approx(0.058)
    assert all(p.itl.empty() for p in pts)
    assert len({p.sweep for p in pts}) == 1


def test_detect_tells_formats_apart() -> None:
    """Guards format detection by keys."""
    assert detect({"mean_ttft_ms": 1}) == "vllm"
    assert detect({"time_to_first_token": {}}) == "aiperf"
    assert detect({"benchmarks": []}) == "guidellm"
    assert detect([]) == "native"
    with pytest.raises(LatencyKernelError, match="cannot tell"):
        detect({"foo": 1})


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ('{"mean_ttft_ms": 1, "completed": 10, "total_input_tokens": 10, "total_output_tokens": 10}', "deployment"),
        ("sweep,isl,osl,concurrency,scenario\nx,0,10,1,a.yaml\n", "isl must be at least 1"),
        ("sweep,isl,osl,concurrency,scenario\nx,10,10,,a.yaml\n", "concurrency or request_rate"),
        ("sweep,isl,osl,concurrency,scenario,tpot_mean_ms\nx,10,10,1,a.yaml,-3\n", "positive number of seconds"),
        ("sweep,isl,osl,concurrency,scenario,tpot_mean_ms\nx,10,10,1.5,a.yaml,3\n", "whole number"),
        ("sweep,isl,osl,concurrency,scenario,tpot_mean_ms\nx,10,10,1,a.yaml,abc\n", "must be a number"),
        ('{"scenario": "a.yaml", "benchmarks": [{"args": {"strategy": {"type_": "throughput"}}}]}', "states no load"),
        ("{not json", "not valid JSON"),
        ('{"points": [{"isl": 1, "osl": 1, "concurrency": 1, "build": {"model": "x"}}]}', "hardware"),
        ("sweep,isl,osl,concurrency,scenario,batch_wait_timeout_iters\nx,10,10,1,a.yaml,-2\n", "whole number >= 0"),
        ("sweep,isl,osl,concurrency,scenario,batch_wait_max_tokens_ratio\nx,10,10,1,a.yaml,1.5\n", r"in \[0, 1\]"),
    ],
)
def test_bad_input_is_our_error_naming_the_field(text: str, match: str) -> None:
    """Guards against raw exceptions, NaNs or silent defaults from malformed measurements."""
    with pytest.raises(LatencyKernelError, match=match):
        read_text(text, "bad")


def test_missing_file_is_our_error() -> None:
    """Guards a raw OSError escaping for a missing file."""
    with pytest.raises(LatencyKernelError, match="cannot read measurements file"):
        read_measurements([DATA / "nope.json"])


def test_native_rows_carry_the_runs_token_budget() -> None:
    """Guards the run's token budget beside its measurements: read into the point, a row
    without it takes the deployment's (0), and a bad value is refused naming the column."""
    text = (
        "sweep,isl,osl,concurrency,scenario,max_num_batched_tokens\nx,1000,1000,4,a.yaml,16384\ny,1000,1000,4,a.yaml,\n"
    )
    a, b = read_text(text, "budget.csv")
    assert (a.max_num_batched_tokens, b.max_num_batched_tokens) == (16384, 0)
    with pytest.raises(LatencyKernelError, match="max_num_batched_tokens"):
        read_text("sweep,isl,osl,concurrency,scenario,max_num_batched_tokens\nx,1000,1000,4,a.yaml,-1\n", "bad.csv")


def test_native_rows_carry_the_runs_kv_reservation() -> None:
    """Guards how the run's scheduler held KV beside its measurements (TensorRT-LLM's
    capacity policy as a launch script set it): read into the point, a row without it takes
    the deployment's (""), and a value that is neither policy is refused naming the column."""
    head = "sweep,isl,osl,concurrency,scenario,kv_reservation\n"
    a, b = read_text(head + "x,1000,1000,4,a.yaml,on_demand\ny,1000,1000,4,a.yaml,\n", "resv.csv")
    assert (a.kv_reservation, b.kv_reservation) == ("on_demand", "")
    with pytest.raises(LatencyKernelError, match="kv_reservation"):
        read_text(head + "x,1000,1000,4,a.yaml,MAX_UTILIZATION\n", "bad.csv")


def test_native_rows_carry_the_runs_recv_interval() -> None:
    """Guards SGLang's --scheduler-recv-interval beside the measurements: read into the
    point, a row without it takes the engine's default (0), and a bad value is refused
    naming the column."""
    head = "sweep,isl,osl,concurrency,scenario,scheduler_recv_interval\n"
    a, b = read_text(head + "x,1000,1000,4,a.yaml,30\ny,1000,1000,4,a.yaml,\n", "recv.csv")
    assert (a.scheduler_recv_interval, b.scheduler_recv_interval) == (30, 0)
    with pytest.raises(LatencyKernelError, match="scheduler_recv_interval"):
        read_text(head + "x,1000,1000,4,a.yaml,2.5\n", "bad.csv")


def test_native_rows_carry_the_runs_prefix_hit_rate() -> None:
    """Guards a measured prefix cache hit rate beside the measurements: read into the point,
    absent is 0, and a value outside [0, 1) is refused naming the column."""
    head = "sweep,isl,osl,concurrency,scenario,prefix_hit_rate\n"
    a, b = read_text(head + "x,8000,500,4,a.yaml,0.61\ny,8000,500,4,a.yaml,\n", "hits.csv")
    assert (a.prefix_hit_rate, b.prefix_hit_rate) == (0.61, 0.0)
    for bad in ("1.0", "-0.2", "lots"):
        with pytest.raises(LatencyKernelError, match="prefix_hit_rate"):
            read_text(head + f"x,8000,500,4,a.yaml,{bad}\n", "bad.csv")


def test_native_rows_carry_the_runs_parallel_layout() -> None:
    """Guards the run's widths beside its scenario (a run laid out otherwise than the twin):
    parallel.* columns and a JSON parallel object read into the deployment, typed; a row
    without them keeps the scenario's (); an unknown width, a bad value, or widths with build
    arguments instead of a scenario are refused naming the setting."""
    head = "sweep,isl,osl,concurrency,scenario,parallel.tp,parallel.dp,parallel.enable_expert_parallel\n"
    a, b = read_text(head + "x,1000,1000,4,a.yaml,1,2,true\ny,1000,1000,4,a.yaml,,,\n", "par.csv")
    assert a.deployment.parallel == (("dp", 2), ("enable_expert_parallel", True), ("tp", 1))
    assert b.deployment.parallel == ()
    assert a.deployment.key() != b.deployment.key()  # priced with different step models
    doc = '{"format": "latencykernel.measurements/1", "points": [{"sweep": "x", "isl": 1000, "osl": 1000, '
    doc += '"concurrency": 4, "scenario": "a.yaml", "parallel": {"tp": 2, "enable_expert_parallel": true}}]}'
    (c,) = read_text(doc, "par.json")
    assert c.deployment.parallel == (("enable_expert_parallel", True), ("tp", 2))
    with pytest.raises(LatencyKernelError, match=r"parallel\.pp"):
        read_text("sweep,isl,osl,concurrency,scenario,parallel.pp\nx,1000,1000,4,a.yaml,2\n", "bad.csv")
    with pytest.raises(LatencyKernelError, match=r"parallel\.tp"):
        read_text(head + "x,1000,1000,4,a.yaml,0,1,false\n", "bad.csv")
    with pytest.raises(LatencyKernelError, match=r"parallel\.enable_expert_parallel"):
        Deployment(scenario="a.yaml", parallel=(("enable_expert_parallel", 1),))
    with pytest.raises(LatencyKernelError, match="scenario"):
        Deployment(build=(("hardware", "h100"), ("model", "m")), parallel=(("tp", 2),))
    # a row's widths are not dropped when the scenario comes from the caller (--scenario)
    (d,) = read_text("sweep,isl,osl,concurrency,parallel.tp\nx,1000,1000,4,2\n", "cli.csv", DEP)
    assert d.deployment.scenario == DEP.scenario and d.deployment.parallel == (("tp", 2),)


def test_a_runs_parallel_layout_opens_its_own_step_model() -> None:
    """Guards the widths being dropped on the way to the kernel, or applied without the file
    checks: the run's widths replace the scenario pool's, and one vLLM would not start is
    refused naming the width."""
    from latencykernel.errors import RefusedError
    from latencykernel.validation import open_deployment

    twin = "aisimulate/minimax-m2.5-b200-fp4-vllm-tp2-ep4-dp2.yaml"
    k = open_deployment(Deployment(scenario=twin, parallel=(("tp", 1), ("dp", 2))))
    assert (k.constants.layout.tp, k.constants.layout.dp, k.constants.layout.expert_width) == (1, 2, 2)
    base = open_deployment(Deployment(scenario=twin))
    assert (base.constants.layout.tp, base.constants.layout.dp, base.constants.layout.expert_width) == (2, 2, 4)
    with pytest.raises(RefusedError, match="tp"):
        open_deployment(Deployment(scenario=twin, parallel=(("tp", 3),)))


def test_native_rows_carry_the_runs_compilation_settings() -> None:
    """Guards the run's cudagraph_mode and splitting_ops beside its scenario being lost or
    mistyped: CSV settings.* columns (splitting_ops as [] or names separated by commas) and
    a JSON settings object read into Deployment.settings with splitting_ops a tuple; a row without
    them keeps (); a cell that is not a list is refused naming the column."""
    head = "sweep,isl,osl,concurrency,scenario,settings.cudagraph_mode,settings.splitting_ops\n"
    rows = "x,1000,1000,4,a.yaml,FULL_DECODE_ONLY,[]\ny,1000,1000,4,a.yaml,,\nz,1000,1000,4,a.yaml,,a::b, c::d\n"
    a, b, c = read_text(head + rows.replace("a::b, c::d", '"a::b, c::d"'), "eng.csv")
    assert a.deployment.settings == (("cudagraph_mode", "FULL_DECODE_ONLY"), ("splitting_ops", ()))
    assert b.deployment.settings == ()
    assert c.deployment.settings == (("splitting_ops", ("a::b", "c::d")),)
    doc = '{"format": "latencykernel.measurements/1", "points": [{"sweep": "x", "isl": 1000, "osl": 1000, '
    doc += '"concurrency": 4, "scenario": "a.yaml", "engine": "vllm", "settings": {"splitting_ops": []}}]}'
    (d,) = read_text(doc, "eng.json")
    assert d.deployment.settings == (("splitting_ops", ()),) and d.engine == "vllm"  # the label stands
    with pytest.raises(LatencyKernelError, match=r"settings\.splitting_ops"):
        read_text(head + "x,1000,1000,4,a.yaml,NONE,[oops\n", "bad.csv")
    # a settings value that is not an object is refused, not silently dropped
    with pytest.raises(LatencyKernelError, match="settings must be an object"):
        read_text(doc.replace('{"splitting_ops": []}', '"FULL"'), "bad.json")
    # the row's settings apply to the caller's scenario (--scenario)
    (e,) = read_text("sweep,isl,osl,concurrency,settings.splitting_ops\nx,1000,1000,4,[]\n", "cli.csv", DEP)
    assert e.deployment.scenario == DEP.scenario and e.deployment.settings == (("splitting_ops", ()),)

"""Every refusal of docs/refusals.md, each beside a deployment that differs only in the
faulty setting and opens."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import latencykernel as lk
from latencykernel import RefusedError
from latencykernel.documents.chip import load_chip

GUIDE = "aisimulate/deepseek-v3-h200-fp8-sglang-tp8.yaml"
LLAMA = "examples/llama-3.1-8b-instruct-h100-bf16-tp1.yaml"
LLAMA70 = "examples/llama-3.1-70b-instruct-h100-bf16-tp4.yaml"
GLM = "aisimulate/glm-5-h200-fp8-sglang-tp8.yaml"
MIXTRAL = "examples/mixtral-8x7b-v0.1-a100-80-bf16-tp4.yaml"
R1_B300 = "examples/deepseek-r1-b200-fp8-tp8.yaml"

Edit = Callable[[lk.Inputs], None]


def engine(**kw: object) -> Edit:
    def f(i: lk.Inputs) -> None:
        for k, v in kw.items():
            setattr(i.deployment.pools[i.pool].engine, k, v)

    return f


def parallel(**kw: object) -> Edit:
    def f(i: lk.Inputs) -> None:
        for k, v in kw.items():
            setattr(i.deployment.pools[i.pool].parallel, k, v)

    return f


def chip(name: str) -> Edit:
    def f(i: lk.Inputs) -> None:
        i.chip = load_chip(lk.Repos.default().chip_path(name))
        i.scenario.cluster.hardware = name

    return f


def gpus_per_node(n: int) -> Edit:
    def f(i: lk.Inputs) -> None:
        i.scenario.cluster.gpus_per_node = n

    return f


def connector(name: str) -> Edit:
    def f(i: lk.Inputs) -> None:
        from latencykernel.documents.scenario import Deployment

        data = i.deployment.model_dump(by_alias=True, exclude_none=True)
        data["pd_transfer"] = {"connector": name}
        i.deployment = Deployment.model_validate(data)

    return f


def drop(*names: str) -> Edit:
    def f(i: lk.Inputs) -> None:
        for s in i.coefficients:
            s.coefficients[:] = [item for item in s.coefficients if not set(item) & set(names)]

    return f


def add_like(name: str, like: str) -> Edit:
    """Add an entry called ``name``, a copy of every entry called ``like``."""

    def f(i: lk.Inputs) -> None:
        for s in i.coefficients:
            extra = [{name: item[like].model_copy(deep=True)} for item in s.coefficients if like in item]
            s.coefficients.extend(extra)

    return f


def not_charged(name: str) -> Edit:
    """Set every entry called ``name`` to 0 with method not_charged (which the registry format
    allows) — a value no law can divide by."""

    def f(i: lk.Inputs) -> None:
        for s in i.coefficients:
            for item in s.coefficients:
                if name in item:
                    e = item[name]
                    e.value, e.method, e.fitted, e.ci95 = 0.0, "not_charged", False, None
                    e.rationale = e.rationale or "test"

    return f


def both(*edits: Edit) -> Edit:
    def f(i: lk.Inputs) -> None:
        for e in edits:
            e(i)

    return f


def build(scenario: str, *edits: Edit) -> lk.Kernel:
    inputs = lk.open_inputs(scenario)
    for e in edits:
        e(inputs)
    return lk.new(inputs)


# (id, scenario, twin that opens, refused edit, setting, words the message must contain)
CASES = [
    (
        "pipeline",
        GUIDE,
        both(gpus_per_node(16), parallel(pp=1)),
        both(gpus_per_node(16), parallel(pp=2)),
        "parallel.pp",
        ["pp 2"],
    ),
    ("pcp-needs-latent", LLAMA, parallel(pcp=1), parallel(pcp=2), "parallel.pcp", ["pcp 2"]),
    (
        "pcp-dcp-needs-sparse",
        R1_B300,
        both(chip("b300"), parallel(tp=4, pcp=2)),
        both(chip("b300"), parallel(tp=4, pcp=2, dcp=2)),
        "parallel.dcp",
        ["dcp 2"],
    ),
    (
        "a2a-with-pcp",
        R1_B300,
        both(chip("b300"), parallel(tp=4, pcp=2), engine(dcp_comm_backend="ag_rs")),
        both(chip("b300"), parallel(tp=4, pcp=2), engine(dcp_comm_backend="a2a")),
        "engine.dcp_comm_backend",
        ["a2a"],
    ),
    (
        "dcp-backend-name",
        GUIDE,
        engine(dcp_comm_backend="ag_rs"),
        engine(dcp_comm_backend="ring"),
        "engine.dcp_comm_backend",
        ["ring", "ag_rs"],
    ),
    (
        "interleave-misfit",
        GUIDE,
        both(parallel(dcp=2), engine(cp_kv_cache_interleave_size=4)),
        both(parallel(dcp=2), engine(cp_kv_cache_interleave_size=3)),
        "engine.cp_kv_cache_interleave_size",
        ["3", "16"],
    ),
    (
        "interleave-multiconnector",
        GUIDE,
        both(parallel(dcp=2), connector("MultiConnector"), engine(cp_kv_cache_interleave_size=1)),
        both(parallel(dcp=2), connector("MultiConnector")),
        "engine.cp_kv_cache_interleave_size",
        ["MultiConnector"],
    ),
    (
        "interleave-misfit-nixl",
        GUIDE,
        both(parallel(dcp=2), connector("NixlConnector"), engine(cp_kv_cache_interleave_size=8)),
        both(parallel(dcp=2), connector("NixlConnector"), engine(cp_kv_cache_interleave_size=32)),
        "engine.cp_kv_cache_interleave_size",
        ["32", "16"],
    ),
    ("dsa-block", GLM, engine(block_size=64), engine(block_size=16), "engine.block_size", ["16", "64"]),
    ("dsa-pre-hopper", GLM, chip("h200"), chip("a100-sxm"), "cluster.hardware", ["a100-sxm"]),
    ("cache-not-vllm", GUIDE, engine(cache_dtype="fp8"), engine(cache_dtype="fp6"), "engine.cache_dtype", ["fp6"]),
    (
        "cache-fp8-inc",
        GUIDE,
        engine(cache_dtype="fp8_e4m3"),
        engine(cache_dtype="fp8_inc"),
        "engine.cache_dtype",
        ["fp8_inc"],
    ),
    (
        "cache-ds-mla-not-sparse",
        LLAMA,
        engine(cache_dtype="fp8"),
        engine(cache_dtype="fp8_ds_mla"),
        "engine.cache_dtype",
        ["fp8_ds_mla"],
    ),
    (
        "cache-nvfp4-latent",
        GUIDE,
        engine(cache_dtype="fp8"),
        engine(cache_dtype="nvfp4"),
        "engine.cache_dtype",
        ["nvfp4"],
    ),
    (
        "cache-unpriced",
        GUIDE,
        engine(cache_dtype="fp8"),
        engine(cache_dtype="turboquant_k8v4"),
        "engine.cache_dtype",
        ["turboquant_k8v4"],
    ),
    (
        "mamba-dtype",
        LLAMA,
        engine(mamba_cache_dtype="float32"),
        engine(mamba_cache_dtype="int8"),
        "engine.mamba_cache_dtype",
        ["int8"],
    ),
    (
        "ep-wider-than-experts",
        MIXTRAL,
        both(gpus_per_node(16), parallel(tp=4, dp=2, enable_expert_parallel=True)),
        both(gpus_per_node(16), parallel(tp=4, dp=4, enable_expert_parallel=True)),
        "parallel.enable_expert_parallel",
        ["16", "8"],
    ),
    ("weights-do-not-fit", LLAMA70, parallel(tp=4), parallel(tp=1), "parallel.tp", ["h100"]),
    (
        "max-model-len",
        GUIDE,
        engine(max_model_len=32768),
        engine(max_model_len=8_000_000),
        "engine.max_model_len",
        ["8000000"],
    ),
    (
        "dcp-q-replicate",
        GUIDE,
        parallel(dcp=2),
        both(parallel(dcp=2), engine(dcp_q_replicate=True)),
        "engine.dcp_q_replicate",
        ["dcp_q_replicate"],
    ),
    (
        "quantization",
        GUIDE,
        engine(quantization="fp8"),
        engine(quantization="fp3_magic"),
        "engine.quantization",
        ["fp3_magic"],
    ),
    (
        "cudagraph-mode",
        GUIDE,
        engine(cudagraph_mode="FULL"),
        engine(cudagraph_mode="SOMETIMES"),
        "engine.cudagraph_mode",
        ["SOMETIMES", "PIECEWISE"],
    ),
    ("missing-hbm-derate", GUIDE, drop("hbm_constant_latency"), drop("hbm_derate"), "coefficients", ["hbm_derate"]),
    (
        "missing-gemm-ramp",
        GUIDE,
        drop("gemm_eps_max_bf16"),
        drop("gemm_eps_max_fp8"),
        "coefficients",
        ["gemm_eps_max_fp8"],
    ),
    (
        "half-shape-pair",
        GUIDE,
        both(add_like("gemm_n_half_fp8", "gemm_m_half_fp8"), add_like("gemm_k_half_fp8", "gemm_m_half_fp8")),
        add_like("gemm_n_half_fp8", "gemm_m_half_fp8"),
        "coefficients",
        ["gemm_k_half_fp8"],
    ),
    (
        "missing-collective-width",
        GUIDE,
        drop("collective_floor_all_reduce_fp16_4rank_h200"),
        drop("collective_floor_all_reduce_fp16_8rank_h200"),
        "coefficients",
        ["all_reduce", "8"],
    ),
    (
        "zero-gemm-efficiency",
        GUIDE,
        not_charged("gemm_eps_max_bf16"),
        not_charged("gemm_eps_max_fp8"),
        "coefficients",
        ["gemm_eps_max_fp8", "0"],
    ),
    (
        "zero-collective-peak",
        GUIDE,
        not_charged("collective_peak_rate_all_reduce_fp16_4rank_h200"),
        not_charged("collective_peak_rate_all_reduce_fp16_8rank_h200"),
        "coefficients",
        ["peak_rate", "8rank"],
    ),
    (
        "missing-memory-magnitude",
        GUIDE,
        drop("cudagraph_capture_bytes_full"),
        drop("cudagraph_capture_bytes_piecewise"),
        "coefficients",
        ["cudagraph_capture_bytes_piecewise"],
    ),
]


@pytest.mark.parametrize(
    ("scenario", "twin", "fault", "setting", "words"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_refused_beside_a_twin_that_opens(
    scenario: str, twin: Edit, fault: Edit, setting: str, words: list[str]
) -> None:
    assert isinstance(build(scenario, twin), lk.Kernel)
    with pytest.raises(RefusedError) as info:
        build(scenario, fault)
    err = info.value
    assert isinstance(err, ValueError) and isinstance(err, lk.LatencyKernelError)
    assert err.setting == setting
    msg = str(err)
    assert "\n" not in msg and "Traceback" not in msg
    for w in words:
        assert w in msg, (w, msg)


def test_no_applicable_coefficient_is_refused() -> None:
    inputs = lk.open_inputs(GUIDE)
    n = 0
    for s in inputs.coefficients:
        for item in s.coefficients:
            for entry in item.values():
                n += 1
                entry.scope.hardware = [f"not-this-chip-{n}"]
    with pytest.raises(RefusedError) as info:
        lk.new(inputs)
    assert info.value.setting == "coefficients"


def test_the_refusals_page_lists_every_setting_tested() -> None:
    from pathlib import Path

    page = (Path(__file__).resolve().parents[1] / "docs" / "refusals.md").read_text()
    for case in CASES:
        assert f"`{case[4]}`" in page, case[4]

"""Coefficients lifted into the plain numbers the step laws read: the served weights and
the compute peak with their GEMM ramp, and the attention, recurrent, routing and host
coefficients (each absent optional one recorded in the assumptions)."""

from __future__ import annotations

from typing import Any, NamedTuple

from latencykernel.kernel.checks import refuse
from latencykernel.plan import Plan
from latencykernel.resolve.coefficients import Coefficients
from latencykernel.resolve.dtypes import dtype_fit, served_weight_dtype
from latencykernel.resolve.settings import Assumptions
from latencykernel.resolve.startup import check_quantization

__all__ = ["US", "Compute", "Lifted", "usable", "lift_compute", "lift_coefficients"]

US = 1e-6


class Compute(NamedTuple):
    """The served weight dtype, the compute suffix its GEMMs use, the compute peak and
    derated HBM bandwidth, and the GEMM ramp (shape-aware when n_half and k_half are set).

    ``linear_m_half`` is the ramp's half point for the model's dense linear layers (every
    GEMM but the routed experts): ``gemm_m_half_linear_<suffix>`` where a coefficient set
    states one, else ``m_half``, the GEMM sweep's own."""

    served: str
    suffix: str
    peak_flops_per_s: float
    hbm_bytes_per_s: float
    eps_max: float
    m_half: float
    linear_m_half: float
    n_half: float | None
    k_half: float | None


class Lifted(NamedTuple):
    """Attention, recurrent, routing and host coefficients in seconds and bytes per second."""

    attn_floor_s: float
    attn_rate_bytes_per_s: float
    attn_by_kind: dict[str, tuple[float, float]]
    prefill_floor_s: float
    prefill_scale: float
    recurrent_by_kind: dict[str, tuple[float, float]]
    moe_imbalance: float
    moe_concentration: float
    host_launch_per_kernel_s: float
    host_replay_s: float
    host_eager_per_layer_s: float
    host_link: float
    host_per_request_s: float


def usable(name: str, value: float, *, positive: bool) -> float:
    """A coefficient value the laws can use: finite, not negative, and (where a law divides
    by it) positive. A registry entry may be 0 when ``not_charged``; a rate or an efficiency
    of 0 would price every step at infinity, so it is refused here."""
    bad = value != value or value in (float("inf"), float("-inf")) or value < 0 or (positive and value <= 0)
    if bad:
        need = "positive" if positive else "zero or more"
        raise refuse(
            f"coefficient {name} resolved to {value}, which cannot price anything (it must be {need}); "
            f"correct it in the coefficient set that provides it",
            "coefficients",
            name,
        )
    return value


def lift_compute(chip: Any, graph: Any, eng: Any, facts: Any, coeffs: Coefficients) -> Compute:
    """Served weights and the compute peak."""
    checkpoint = graph.global_.weight_dtype
    served = served_weight_dtype(checkpoint, eng.quantization)
    check_quantization(eng.quantization, facts.quant_method if facts else None, facts is not None)
    suffix, tflops = dtype_fit(served, chip.TFlopsPeak, chip.TFlopsFP8 or 0.0, chip.TFlopsNVFP4 or 0.0)
    peak = tflops * 1e12
    if peak <= 0:
        raise refuse(
            f"the {suffix} compute peak of {chip.name} resolved to {peak}, which cannot price anything",
            "cluster.hardware",
            chip.name,
        )
    hbm_derate = coeffs.require("hbm_derate", "HBM bandwidth")
    hbm = chip.BwPeakTBs * 1e12 * hbm_derate
    if hbm <= 0:
        raise refuse(
            f"HBM bandwidth of {chip.name} resolved to {hbm}, which cannot price anything", "hbm_derate", hbm_derate
        )
    eps_max = usable(
        f"gemm_eps_max_{suffix}", coeffs.require(f"gemm_eps_max_{suffix}", f"{suffix} GEMMs"), positive=True
    )
    m_half = usable(f"gemm_m_half_{suffix}", coeffs.require(f"gemm_m_half_{suffix}", f"{suffix} GEMMs"), positive=False)
    linear = coeffs.get(f"gemm_m_half_linear_{suffix}")
    linear_m_half = m_half if linear is None else usable(f"gemm_m_half_linear_{suffix}", linear, positive=False)
    n_half, k_half = coeffs.get(f"gemm_n_half_{suffix}"), coeffs.get(f"gemm_k_half_{suffix}")
    if (n_half is None) != (k_half is None):
        missing = f"gemm_n_half_{suffix}" if n_half is None else f"gemm_k_half_{suffix}"
        raise refuse(
            f"the shape-aware GEMM ramp needs both gemm_n_half_{suffix} and gemm_k_half_{suffix}; {missing} is missing",
            "coefficients",
            missing,
        )
    return Compute(served, suffix, peak, hbm, eps_max, m_half, linear_m_half, n_half, k_half)


def lift_coefficients(
    coeffs: Coefficients,
    plan: Plan,
    experts: int,
    assumptions: Assumptions,
    unsplit: bool = False,
    engine_stated: bool = False,
) -> Lifted:
    """Coefficients lifted into plain numbers (``experts``: the model's routed experts;
    ``unsplit``: the model is compiled as one graph, ``splitting_ops: []``, whose eager steps
    take ``host_launch_eager_unsplit_per_layer`` where the sets hold it; ``engine_stated``:
    the scenario names its engine, whose host set may state ``host_step_per_request``; a
    scenario naming none is priced with the Go kernel's step law, which has no per-request
    host term, D11)."""

    def optional(name: str, reason: str) -> float:
        v = coeffs.get(name)
        if v is None:
            assumptions.add(name, "absent", reason)
            return 0.0
        return usable(name, v, positive=False)

    has_attention = any(lp.primary is not None or lp.attentions for lp in plan.layers)
    attn_floor = attn_rate = prefill_floor = prefill_scale = 0.0
    by_kind: dict[str, tuple[float, float]] = {}
    if has_attention:
        attn_floor = optional("attention_decode_floor", "decode attention priced without a launch floor") * US
        attn_rate = (
            optional("attention_decode_rate", "decode attention reads priced as raw KV bytes over HBM bandwidth") * 1e6
        )
        prefill_floor = optional("attention_prefill_floor", "prefill attention priced without a launch floor") * US
        prefill_scale = coeffs.get("attention_prefill_work_scale") or 0.0
        if "attention_prefill_work_scale" not in coeffs:
            assumptions.add(
                "attention_prefill_work_scale",
                "absent",
                "priced prefill attention on the plain GEMM ramp, without a floor",
            )
        kinds_present = {a.kind for lp in plan.layers for a in lp.attentions}
        for k in ("swa", "mla", "sparse_mla"):
            if k not in kinds_present:
                continue
            rate = coeffs.get(f"attention_decode_rate_{k}")
            if rate is None or rate <= 0:
                assumptions.add(
                    f"attention_decode_rate_{k}", "absent", f"priced {k} decode attention with the part-wide pair"
                )
                continue
            floor = coeffs.get(f"attention_decode_floor_{k}")
            by_kind[k] = ((floor * US) if floor and floor > 0 else attn_floor, rate * 1e6)
    rec: dict[str, tuple[float, float]] = {}
    for k in sorted({lp.recurrent_kind for lp in plan.layers if lp.recurrent_kind}):
        f, r = coeffs.get(f"recurrent_decode_floor_{k}"), coeffs.get(f"recurrent_decode_rate_{k}")
        if f and r and f > 0 and r > 0:
            rec[k] = (f * US, r * 1e6)
        else:
            assumptions.add(f"recurrent_decode_rate_{k}", "absent", f"priced {k} recurrent updates at zero")
    imbalance = 1.0
    if experts > 0:
        v = coeffs.get("moe_routing_imbalance_median")
        if v is None:
            assumptions.add("moe_routing_imbalance_median", "absent", "priced routed experts as balanced")
        elif v > 0:
            imbalance = v
    concentration = 0.0
    if experts > 0:
        v = coeffs.get("moe_routing_concentration")
        if v is None:
            assumptions.add(
                "moe_routing_concentration", "absent", "priced the experts a batch touches for uniform routing"
            )
        else:
            concentration = usable("moe_routing_concentration", v, positive=False)
    host_kernel = optional("host_launch_per_kernel", "per-kernel dispatch priced at zero") * US
    host_replay = optional("host_replay_graph_per_step", "CUDA-graph replay priced at zero") * US
    host_eager = optional("host_launch_eager_per_layer", "eager launches priced at zero") * US
    if unsplit:
        v = coeffs.get("host_launch_eager_unsplit_per_layer")
        if v is None:
            assumptions.add(
                "host_launch_eager_unsplit_per_layer",
                "absent",
                "the one-graph model's eager steps priced at host_launch_eager_per_layer",
            )
        else:
            host_eager = usable("host_launch_eager_unsplit_per_layer", v, positive=False) * US
    per_request = 0.0
    v = coeffs.get("host_step_per_request")
    if v is not None:
        per_request = usable("host_step_per_request", v, positive=False) * US
    elif engine_stated:
        assumptions.add("host_step_per_request", "absent", "each step's host time priced without a per-request part")
    for name in ("host_admission_per_request", "host_admission_per_token", "host_output_token", "host_completion"):
        optional(name, "that per-request host overhead priced at zero")
    host_link = optional("host_link_bandwidth", "offload transfers priced without a host-link ceiling")
    return Lifted(
        attn_floor,
        attn_rate,
        by_kind,
        prefill_floor,
        prefill_scale,
        rec,
        imbalance,
        concentration,
        host_kernel,
        host_replay,
        host_eager,
        host_link,
        per_request,
    )

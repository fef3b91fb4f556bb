"""``new``: build a kernel from parsed documents. Everything batch-independent is decided
here, once; refusals are raised where the fact is decided."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from latencykernel.errors import RefusedError
from latencykernel.kernel.constants import CollectiveCost, StepConstants
from latencykernel.kernel.memory import MemoryBreakdown, fixed_memory
from latencykernel.plan import LATENT_KINDS, Plan, build_plan
from latencykernel.price.experts import experts_per_rank
from latencykernel.price.kv import kv_bytes_per_token
from latencykernel.resolve.coefficients import Coefficients, DeploymentScope, resolve_coefficients
from latencykernel.resolve.context import dcp_shards_kv
from latencykernel.resolve.dtypes import (
    DTYPE_BYTES,
    MAMBA_CACHE_DTYPES,
    PRICED_CACHE_DTYPES,
    UNPRICED_CACHE_DTYPES,
    cache_dtype_bytes,
    dtype_fit,
    served_weight_dtype,
)
from latencykernel.resolve.layout import Group, Layout, Op, Override, resolve_layout
from latencykernel.resolve.settings import (
    ENGINE_BEHAVIOUR_VERSION,
    Assumptions,
    capture_ceiling_tokens,
    default_max_num_batched_tokens,
    default_max_num_seqs,
    graph_modes,
    hybrid_kv_manager,
)
from latencykernel.resolve.sparse_mla import sparse_mla_backend
from latencykernel.resolve.startup import (
    check_attention_heads,
    check_block_size,
    check_cluster_size,
    check_experts,
    check_moe_intermediate,
    check_quantization,
    check_recurrent_heads,
    check_scheduler_limits,
    model_max_model_len,
    resolve_max_model_len,
)

if TYPE_CHECKING:
    from latencykernel.inputs import Inputs
    from latencykernel.kernel.kernel import Kernel

__all__ = ["new"]

US = 1e-6
OP_STEM = {
    Op.ALL_REDUCE: "all_reduce",
    Op.ALL_GATHER: "all_gather",
    Op.REDUCE_SCATTER: "reduce_scatter",
    Op.ALL2ALL: "alltoall",
}
SEARCH_WIDTHS = (2, 4, 8, 16)
VLLM_GPU_MEMORY_UTILIZATION = 0.92
DS_MLA_CELL_BYTES = {"fp8_ds_mla": 656, "nvfp4_ds_mla": 352}


def _refuse(msg: str, setting: str, value: Any) -> RefusedError:
    return RefusedError(msg, setting=setting, value=value)


def _kv_geometry(graph: Any, plan: Plan) -> tuple[int, int, str, int, list[str]]:
    """(n_kv, d_h, kind, KV-holding layers, every primary attention kind in the stack).
    With several geometries, the last KV-holding kind in layer_kinds order sets it."""
    n_kv = d_h = 0
    kind = ""
    for lk in graph.layer_kinds:
        for lp in plan.layers:
            if lp.id == lk.id and lp.primary is not None:
                n_kv, d_h, kind = lp.primary.kv_heads, lp.primary.head_dim, lp.primary.kind
    kv_layers = sum(lp.count for lp in plan.layers if lp.primary is not None)
    kinds = [lp.primary.kind for lp in plan.layers if lp.primary is not None]
    return n_kv, d_h, kind, kv_layers, kinds


def _graph_nodes(graph: Any, op: str) -> list[tuple[str, Any]]:
    """(layer kind id, node) for every node of ``op`` in a layer kind the stack uses."""
    used = set(graph.expand())
    return [(lk.id, n) for lk in graph.layer_kinds if lk.id in used for n in lk.nodes if n.op == op]


def _check_cache_dtypes(engine: Any, kv_kind: str) -> None:
    c = engine.cache_dtype
    if c == "":
        # vllm/config/cache.py CacheDType: '' is not among the accepted names (auto is).
        raise _refuse(
            "engine.cache_dtype '' (empty) is not a KV cache dtype vLLM accepts; state auto, or leave it unset",
            "engine.cache_dtype",
            c,
        )
    if c is not None:
        if c in UNPRICED_CACHE_DTYPES:
            # KNOWN DIVERGENCE D5: per-token-head and turboquant pages are not sized; refused.
            raise _refuse(
                f"engine.cache_dtype {c!r} is a vLLM KV format this kernel cannot size (its per-head "
                f"scales are not modelled); use fp8 or bfloat16",
                "engine.cache_dtype",
                c,
            )
        if c not in PRICED_CACHE_DTYPES:
            raise _refuse(
                f"engine.cache_dtype {c!r} is not a KV cache dtype vLLM v0.31.0 accepts; use one of "
                f"{', '.join(x for x in PRICED_CACHE_DTYPES if x)}",
                "engine.cache_dtype",
                c,
            )
        if c == "fp8_inc":
            raise _refuse(
                "engine.cache_dtype 'fp8_inc' runs only on Intel Gaudi, not on the GPUs this kernel prices; use fp8",
                "engine.cache_dtype",
                c,
            )
        if c.endswith("_ds_mla") and kv_kind != "sparse_mla":
            raise _refuse(
                f"engine.cache_dtype {c!r} is the DeepSeek sparse-MLA page layout, but this model's "
                f"attention is {kv_kind or 'absent'}; use fp8",
                "engine.cache_dtype",
                c,
            )
        if c.startswith("nvfp4") and not c.endswith("_ds_mla") and kv_kind in LATENT_KINDS:
            raise _refuse(
                f"engine.cache_dtype {c!r} cannot hold a latent (MLA) cache in vLLM; use fp8", "engine.cache_dtype", c
            )
    m = engine.mamba_cache_dtype
    if m is not None and m not in MAMBA_CACHE_DTYPES:
        raise _refuse(
            f"engine.mamba_cache_dtype {m!r} is not accepted by vLLM; use one of "
            f"{', '.join(x for x in MAMBA_CACHE_DTYPES if x)}",
            "engine.mamba_cache_dtype",
            m,
        )


def _usable(name: str, value: float, *, positive: bool) -> float:
    """A coefficient value the laws can use: finite, not negative, and (where a law divides
    by it) positive. A registry entry may be 0 when ``not_charged``; a rate or an efficiency
    of 0 would price every step at infinity, so it is refused here."""
    bad = value != value or value in (float("inf"), float("-inf")) or value < 0 or (positive and value <= 0)
    if bad:
        need = "positive" if positive else "zero or more"
        raise _refuse(
            f"coefficient {name} resolved to {value}, which cannot price anything (it must be {need}); "
            f"correct it in the coefficient set that provides it",
            "coefficients",
            name,
        )
    return value


def _group_width(coeffs: Coefficients, op: Op, chip_key: str, width: int) -> int:
    measured = coeffs.measured_widths(OP_STEM[op], chip_key)
    if not measured:
        raise _refuse(
            f"no {OP_STEM[op]} collective is measured for {chip_key} at any width (needs "
            f"collective_floor/peak_rate/transition_rate_{OP_STEM[op]}_fp16_<N>rank_{chip_key}); "
            f"list cost-model-collectives",
            "coefficients",
            f"collective_floor_{OP_STEM[op]}_fp16_{width}rank_{chip_key}",
        )
    if width <= measured[0]:
        return measured[0]
    if width in measured:
        return width
    if width > SEARCH_WIDTHS[-1]:
        return measured[-1]
    if width in SEARCH_WIDTHS:
        raise _refuse(
            f"{OP_STEM[op]} over {width} ranks is not measured on {chip_key} (measured widths: "
            f"{measured}); borrowing a narrower width would understate it",
            "coefficients",
            f"collective_floor_{OP_STEM[op]}_fp16_{width}rank_{chip_key}",
        )
    wider = [w for w in measured if w >= width]
    return wider[0] if wider else measured[-1]


def _collective(
    coeffs: Coefficients, layout: Layout, op: Op, group: Group, chip_key: str, ratio: float
) -> CollectiveCost:
    w = _group_width(coeffs, op, chip_key, layout.group_size(group))
    stem = f"{OP_STEM[op]}_fp16_{w}rank_{chip_key}"
    need = f"a {layout.group_size(group)}-rank {OP_STEM[op]}"
    floor = _usable(f"collective_floor_{stem}", coeffs.require(f"collective_floor_{stem}", need), positive=False)
    peak = _usable(f"collective_peak_rate_{stem}", coeffs.require(f"collective_peak_rate_{stem}", need), positive=True)
    trans = _usable(
        f"collective_transition_rate_{stem}", coeffs.require(f"collective_transition_rate_{stem}", need), positive=False
    )
    crosses = layout.crosses_nodes(group)
    return CollectiveCost(
        floor * US, peak * 1e6, trans * 1e6, crosses, layout.span_for(op, group, ratio) if crosses else 1.0
    )


def new(inputs: Inputs) -> Kernel:
    """Build a kernel for ``inputs.pool`` of ``inputs.deployment``.

    Validates the documents exactly as a file is validated, copies what it needs (editing
    ``inputs`` afterwards never changes the kernel), resolves everything that does not
    depend on a batch, and raises ``RefusedError`` for a deployment vLLM would not start,
    one this kernel cannot price truthfully, or one missing a coefficient it needs.
    """
    from latencykernel.inputs import validate_inputs
    from latencykernel.kernel.kernel import Kernel

    inputs = validate_inputs(inputs)  # a validated deep copy: later edits never reach the kernel
    scenario, deployment, graph, chip = inputs.scenario, inputs.deployment, inputs.model, inputs.chip
    pool = deployment.pools[inputs.pool]
    par, eng = pool.parallel, pool.engine
    cluster = scenario.cluster
    assumptions = Assumptions()
    overrides: list[Override] = []

    if par.pp > 1:
        raise _refuse(
            f"pipeline parallelism (parallel.pp {par.pp}) is not priced by this kernel; set pp to 1 "
            f"and widen tp or dp instead",
            "parallel.pp",
            par.pp,
        )

    # Fabric facts.
    intra = float(chip.IntraNodeBwGBps)
    inter = float(inputs.fabric.InterNodeBwGBps) if inputs.fabric is not None else 0.0
    ratio = intra / inter if intra > 0 and inter > 0 else 1.0
    rack_is_one_domain = bool(chip.GPUsPerRack) and bool(chip.IntraRackBwGBps)
    rack_gpus = (cluster.gpus_per_rack or chip.GPUsPerRack or 0) if rack_is_one_domain else 0
    gpus_per_node = int(cluster.gpus_per_node)
    check_cluster_size(gpus_per_node, int(cluster.nodes))

    # Expert parallelism on a dense model: vLLM's FusedMoE is the only layer that reads
    # enable_expert_parallel, so a model without routed experts runs as if it were off.
    ep_stated = bool(par.enable_expert_parallel)
    if ep_stated and not _graph_nodes(graph, "GroupedGEMM"):
        ep_stated = False
        overrides.append(
            Override(
                "enable_expert_parallel",
                "true",
                "false",
                "the model has no routed experts; vLLM ignores expert parallelism on a dense model",
            )
        )
        assumptions.add("enable_expert_parallel", "false", "stated true on a dense model; ignored as vLLM ignores it")

    rules = inputs.rules
    layout = resolve_layout(
        tp=par.tp,
        pp=par.pp,
        dp=par.dp,
        pcp=par.pcp,
        dcp=par.dcp,
        ep_enabled=ep_stated,
        gpus_per_node=gpus_per_node,
        rack_gpus=rack_gpus,
        all2all_backend=eng.all2all_backend,
        sp_moe_backends=frozenset(rules.sp_moe_backends),
        custom_all_reduce_widths=frozenset(rules.custom_all_reduce_world_sizes),
        disable_custom_all_reduce=eng.disable_custom_all_reduce,
        allreduce_backend=eng.allreduce_backend,
    )
    overrides[:0] = list(layout.overrides)

    coeffs = resolve_coefficients(
        ((s.name, s.entries()) for s in inputs.coefficients),
        DeploymentScope(
            chip.name,
            graph.name,
            layout.tp,
            max(layout.expert_width, 1),
            layout.nodes_spanned,
            inputs.scenario.engine or "vllm",
        ),
    )

    # Served weights and the compute peak.
    checkpoint = graph.global_.weight_dtype
    served = served_weight_dtype(checkpoint, eng.quantization)
    facts = inputs.checkpoint
    check_quantization(eng.quantization, facts.quant_method if facts else None, facts is not None)
    suffix, tflops = dtype_fit(served, chip.TFlopsPeak, chip.TFlopsFP8 or 0.0, chip.TFlopsNVFP4 or 0.0)
    peak = tflops * 1e12
    if peak <= 0:
        raise _refuse(
            f"the {suffix} compute peak of {chip.name} resolved to {peak}, which cannot price anything",
            "cluster.hardware",
            chip.name,
        )
    hbm_derate = coeffs.require("hbm_derate", "HBM bandwidth")
    hbm = chip.BwPeakTBs * 1e12 * hbm_derate
    if hbm <= 0:
        raise _refuse(
            f"HBM bandwidth of {chip.name} resolved to {hbm}, which cannot price anything", "hbm_derate", hbm_derate
        )
    eps_max = _usable(
        f"gemm_eps_max_{suffix}", coeffs.require(f"gemm_eps_max_{suffix}", f"{suffix} GEMMs"), positive=True
    )
    m_half = _usable(
        f"gemm_m_half_{suffix}", coeffs.require(f"gemm_m_half_{suffix}", f"{suffix} GEMMs"), positive=False
    )
    n_half, k_half = coeffs.get(f"gemm_n_half_{suffix}"), coeffs.get(f"gemm_k_half_{suffix}")
    if (n_half is None) != (k_half is None):
        missing = f"gemm_n_half_{suffix}" if n_half is None else f"gemm_k_half_{suffix}"
        raise _refuse(
            f"the shape-aware GEMM ramp needs both gemm_n_half_{suffix} and gemm_k_half_{suffix}; {missing} is missing",
            "coefficients",
            missing,
        )

    # Plan, then KV geometry and cache dtype checks.
    state_bytes = 4.0
    if eng.mamba_ssm_cache_dtype in ("float16", "bfloat16"):
        state_bytes = 2.0
    try:
        plan = build_plan(graph, layout.emits, DTYPE_BYTES[served], state_bytes, layout.tp)
    except KeyError as e:  # pragma: no cover - the graph model constrains dtypes
        raise _refuse(f"unknown weight dtype {e}", "weight_dtype", str(e)) from None
    n_kv, d_h, kv_kind, kv_layers, attn_kinds = _kv_geometry(graph, plan)
    check_attention_heads(
        layout.tp,
        [
            (lp.id, lp.primary.q_heads, lp.primary.kv_heads, lp.primary.kind in LATENT_KINDS)
            for lp in plan.layers
            if lp.primary is not None
        ],
    )
    check_recurrent_heads(
        layout.tp,
        [
            (kid, str(n.recurrent_kind), int(n.n_heads or 0), int(n.n_groups or 0))
            for kid, n in _graph_nodes(graph, "RecurrentUpdate")
        ],
    )
    _check_cache_dtypes(eng, kv_kind)
    latent = kv_kind in LATENT_KINDS
    is_dsa = kv_kind == "sparse_mla" and d_h == 576
    hybrid = any(lp.recurrent_kind for lp in plan.layers)

    # Experts.
    E = plan.experts
    if E > 0 and par.enable_expert_parallel is None:
        assumptions.add("enable_expert_parallel", "false", "unstated; vLLM's default (experts split by tensor slices)")
    eplb = eng.eplb
    R = (eplb.num_redundant_experts or 0) if (eplb is not None and eplb.enable_eplb) else 0
    if layout.expert_width <= 1:
        # KNOWN DIVERGENCE D4: with PCP and EP off vLLM slices experts 1/(dp·pcp·tp); we use 1/(dp·tp).
        expert_tensor_shards = layout.tp * max(layout.dp, 1)
    else:
        expert_tensor_shards = 1
    experts_rank, local_share = 0, 1.0
    if E > 0:
        stated_r = (eplb.num_redundant_experts or 0) if eplb is not None else 0
        check_experts(E, R, layout.expert_width, bool(eplb is not None and eplb.enable_eplb), stated_r)
        if layout.expert_width <= 1:
            check_moe_intermediate(
                expert_tensor_shards, [(kid, int(n.n)) for kid, n in _graph_nodes(graph, "GroupedGEMM")]
            )
        base, heaviest, _, _ = experts_per_rank(E + R, max(layout.expert_width, 1))
        if base == 0:
            raise _refuse(
                f"expert-parallel width {layout.expert_width} exceeds the model's {E + R} physical "
                f"experts, so some ranks would hold none; lower tp·dp or disable "
                f"enable_expert_parallel",
                "parallel.enable_expert_parallel",
                True,
            )
        experts_rank, local_share = heaviest, heaviest / (E + R)

    # Context parallelism.
    dcp, pcp = layout.dcp, layout.pcp
    combine = eng.dcp_comm_backend
    if pcp > 1:
        bad = [lp.id for lp in plan.layers if (lp.primary and lp.primary.kind not in LATENT_KINDS) or lp.recurrent_kind]
        if bad:
            raise _refuse(
                f"prefill-context parallelism (parallel.pcp {pcp}) needs latent attention in every layer "
                f"and no recurrent layers, but layer kind {bad[0]!r} has neither; set pcp to 1",
                "parallel.pcp",
                pcp,
            )
        if dcp > 1 and any(k != "sparse_mla" for k in attn_kinds):
            raise _refuse(
                f"parallel.pcp {pcp} with parallel.dcp {dcp} needs sparse-MLA attention in every layer; "
                f"drop one of them",
                "parallel.dcp",
                dcp,
            )
    if combine is not None and combine not in rules.dcp_comm_backends:
        raise _refuse(
            f"engine.dcp_comm_backend {combine!r} is not accepted by vLLM {rules.version}; use one of "
            f"{', '.join(sorted(rules.dcp_comm_backends))}",
            "engine.dcp_comm_backend",
            combine,
        )
    if combine is None:
        combine = "ag_rs"
        if dcp > 1:
            assumptions.add("dcp_comm_backend", "ag_rs", "unstated; vLLM's default (a model hook may choose a2a)")
    if combine == "a2a" and pcp > 1:
        raise _refuse(
            "engine.dcp_comm_backend 'a2a' cannot combine with prefill-context parallelism "
            f"(parallel.pcp {pcp}); use ag_rs",
            "engine.dcp_comm_backend",
            combine,
        )
    if eng.dcp_q_replicate and dcp > 1 and pcp <= 1 and latent:
        raise _refuse(
            "engine.dcp_q_replicate true replicates the latent query projection across DCP ranks, "
            "which this kernel cannot identify in the graph; leave it unset",
            "engine.dcp_q_replicate",
            True,
        )

    # Block size.
    if is_dsa:
        if eng.block_size is not None and eng.block_size % 64 != 0:
            raise _refuse(
                f"engine.block_size {eng.block_size} is not a multiple of 64, which DeepSeek sparse "
                f"attention pages need; use 64",
                "engine.block_size",
                eng.block_size,
            )
        block = eng.block_size or 64
        if eng.block_size is None:
            assumptions.add("block_size", 64, "unstated; vLLM pages DeepSeek sparse attention in 64-token blocks")
    else:
        block = eng.block_size or 16
        if eng.block_size is None:
            assumptions.add("block_size", 16, "unstated; vLLM v0.31.0's default")
        check_block_size(block, eng.block_size is not None)
    block_final = (not hybrid) and (eng.block_size is not None or is_dsa)

    # Decode-context interleave.
    interleave = 1
    connectors = {
        getattr(getattr(deployment, "offload", None), "connector", None),
        getattr(getattr(deployment, "pd_transfer", None), "connector", None),
    }
    nixl = "NixlConnector" in connectors
    multi = "MultiConnector" in connectors
    if dcp > 1:
        stated = eng.cp_kv_cache_interleave_size
        if stated is not None:
            misfit = stated > block or block % stated != 0
            # Under a NixlConnector alone vLLM tolerates a misfit only where the block size may
            # still change (a stated size on a hybrid model); a final or assumed block is refused.
            block_assumed = eng.block_size is None and not is_dsa
            if misfit and (multi or not nixl or block_final or block_assumed):
                raise _refuse(
                    f"engine.cp_kv_cache_interleave_size {stated} must divide engine.block_size {block} "
                    f"and not exceed it; use a divisor of {block}",
                    "engine.cp_kv_cache_interleave_size",
                    stated,
                )
            interleave = stated
        elif multi:
            raise _refuse(
                "with a MultiConnector, vLLM's decode-context interleave cannot be known; state "
                "engine.cp_kv_cache_interleave_size",
                "engine.cp_kv_cache_interleave_size",
                None,
            )
        elif nixl and block > 1:
            interleave = block
            overrides.append(
                Override(
                    "cp_kv_cache_interleave_size",
                    "1",
                    str(block),
                    "NixlConnector transfers whole blocks, so vLLM interleaves by block",
                )
            )

    # Sparse-MLA backend and the cache layout it allocates.
    layout_dtype = eng.cache_dtype or ""
    if is_dsa:
        heads = max((a.q_heads for lp in plan.layers for a in lp.attentions if a.kind == "sparse_mla"), default=0)
        be = sparse_mla_backend(
            chip=chip.name,
            cache=eng.cache_dtype,
            heads_per_rank=max(heads // layout.tp, 1),
            sm100=(chip.TFlopsNVFP4 or 0) > 0,
            tp=layout.tp,
            dcp=dcp,
            pcp=pcp,
            combine=combine,
        )
        if be.layout != (eng.cache_dtype or "auto") and eng.cache_dtype is not None:
            overrides.append(
                Override(
                    "cache_dtype", eng.cache_dtype, be.layout, f"the {be.name} backend allocates its packed page layout"
                )
            )
        layout_dtype = be.layout if be.layout != "auto" else ""
        if be.name == "FLASHINFER_MLA_SPARSE_SM90":
            assumptions.add("sparse_mla_backend", be.name, "needs FlashInfer >= 0.6.18 installed")
    cache_bytes = cache_dtype_bytes(eng.cache_dtype, served)
    kv_bpt = kv_bytes_per_token(n_kv, layout.tp, d_h, kv_layers, cache_bytes, latent)
    if latent and layout_dtype in DS_MLA_CELL_BYTES:
        kv_bpt = float(DS_MLA_CELL_BYTES[layout_dtype] * kv_layers)
    dcp_all = dcp > 1 and bool(attn_kinds) and all(dcp_shards_kv(k) for k in attn_kinds)
    kv_kinds, hybrid_kv = hybrid_kv_manager(plan.layers, eng, connectors, dcp, hybrid, latent, assumptions)

    # Recurrent cache mode.
    mamba_mode = eng.mamba_cache_mode or "none"
    if hybrid:
        prefix_caching = eng.enable_prefix_caching is not False
        if prefix_caching and mamba_mode == "none":
            if eng.mamba_cache_mode == "none":
                overrides.append(
                    Override(
                        "mamba_cache_mode",
                        "none",
                        "align",
                        "vLLM runs a hybrid model in align mode whenever prefix caching is on",
                    )
                )
            mamba_mode = "align"
        if eng.mamba_cache_mode is None:
            assumptions.add(
                "mamba_cache_mode",
                mamba_mode,
                "unstated; vLLM's mode for a hybrid model "
                + ("with prefix caching on" if prefix_caching else "without prefix caching"),
            )

    # Engine limits and graph capture.
    spec = eng.speculative
    spec_tokens = (spec.num_spec_tokens or 0) if spec is not None else 0
    uniform_width = 1 + spec_tokens
    max_seqs = eng.max_num_seqs
    if max_seqs is None:
        max_seqs = default_max_num_seqs(chip.name, chip.MemoryGiB)
        assumptions.add("max_num_seqs", max_seqs, "unstated; vLLM v0.31.0's OpenAI-server default for this part")
    max_batched = eng.max_num_batched_tokens
    if max_batched is None:
        max_batched = default_max_num_batched_tokens(chip.name, chip.MemoryGiB)
        assumptions.add(
            "max_num_batched_tokens", max_batched, "unstated; vLLM v0.31.0's OpenAI-server default for this part"
        )
    max_len = resolve_max_model_len(eng, facts, assumptions)
    # Chunked prefill: vLLM v0.31.0's default is on. The choice is shown in ``Kernel.info``
    # (``enable_chunked_prefill``) rather than added to the assumptions, whose count the Go
    # kernel's worked figures pin; it prices nothing, it only decides the refusal below.
    chunked = eng.enable_chunked_prefill is not False
    check_scheduler_limits(max_batched, max_seqs, max_len, chunked)
    mode_name, g_decode, g_other = graph_modes(eng.cudagraph_mode, assumptions)
    nvfp4_native = (chip.TFlopsNVFP4 or 0) > 0
    capture = 0
    if g_decode != "eager" or g_other != "eager":
        capture = capture_ceiling_tokens(max_seqs, uniform_width, nvfp4_native)
        assumptions.add(
            "max_cudagraph_capture_size",
            capture,
            "the deployment format cannot state it; vLLM's default min(max_num_seqs x "
            f"{uniform_width} x 2, {1024 if nvfp4_native else 512})",
        )

    # MLA context-gather chunk (DCP prefill over a latent cache).
    if eng.max_model_len is not None:
        chunk = min(max(8 * eng.max_model_len, 4 * max_seqs * block), 65536)
    else:
        chunk = 65536
        if dcp > 1 and latent:
            assumptions.add("mla_context_chunk", 65536, "max_model_len unstated; vLLM's ceiling")
    align = block if dcp <= 1 else math.lcm(block, dcp * interleave)
    chunk = int(math.ceil(chunk / align) * align)

    # Coefficients lifted into plain numbers.
    def optional(name: str, reason: str) -> float:
        v = coeffs.get(name)
        if v is None:
            assumptions.add(name, "absent", reason)
            return 0.0
        return _usable(name, v, positive=False)

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
    if E > 0:
        v = coeffs.get("moe_routing_imbalance_median")
        if v is None:
            assumptions.add("moe_routing_imbalance_median", "absent", "priced routed experts as balanced")
        elif v > 0:
            imbalance = v
    host_kernel = optional("host_launch_per_kernel", "per-kernel dispatch priced at zero") * US
    host_replay = optional("host_replay_graph_per_step", "CUDA-graph replay priced at zero") * US
    host_eager = optional("host_launch_eager_per_layer", "eager launches priced at zero") * US
    for name in ("host_admission_per_request", "host_admission_per_token", "host_output_token", "host_completion"):
        optional(name, "that per-request host overhead priced at zero")
    host_link = optional("host_link_bandwidth", "offload transfers priced without a host-link ceiling")

    # Collectives.
    chip_key = chip.name.replace("-", "_")
    keys: list[tuple[Op, Group]] = [
        (Op.ALL_REDUCE, Group.TP),
        (Op.ALL_GATHER, Group.TP),
        (Op.REDUCE_SCATTER, Group.TP),
        (Op.ALL2ALL, Group.EXPERT),
    ]
    if dcp > 1:
        keys.append((Op.ALL_GATHER, Group.DCP))
        keys.append(
            (Op.ALL2ALL, Group.DCP)
            if combine == "a2a"
            else (Op.ALL_REDUCE, Group.DCP)
            if pcp > 1
            else (Op.REDUCE_SCATTER, Group.DCP)
        )
    if pcp > 1:
        keys.append((Op.ALL_GATHER, Group.PCP))
    collectives: dict[tuple[Op, Group], CollectiveCost | None] = {
        key: _collective(coeffs, layout, key[0], key[1], chip_key, ratio) for key in keys
    }

    nvlink = intra * 1e9
    nic = inter * 1e9 if inter > 0 else nvlink

    consts = StepConstants(
        plan=plan,
        layout=layout,
        tp=max(layout.tp, 1),
        dcp=dcp,
        pcp=pcp,
        dcp_interleave=interleave,
        dcp_combine=combine,
        sm_count=int(chip.SMCount),
        nvfp4_native=nvfp4_native,
        hbm_bytes_per_s=hbm,
        peak_flops_per_s=peak,
        eps_max=eps_max,
        m_half=m_half,
        shape_aware=n_half is not None,
        n_half=n_half or 0.0,
        k_half=k_half or 0.0,
        total_experts=E + R,
        experts_per_rank=experts_rank,
        local_expert_share=local_share,
        expert_tensor_shards=expert_tensor_shards,
        moe_imbalance=imbalance,
        attn_floor_s=attn_floor,
        attn_rate_bytes_per_s=attn_rate,
        attn_by_kind=by_kind,
        prefill_floor_s=prefill_floor,
        prefill_scale=prefill_scale,
        recurrent_by_kind=rec,
        collectives=collectives,
        kv_bytes_per_token=kv_bpt,
        kv_layers=kv_layers,
        block_size=block,
        dcp_shards_all_kv_layers=dcp_all,
        mla_context_chunk=chunk,
        host_launch_per_kernel_s=host_kernel,
        host_replay_s=host_replay,
        host_eager_per_layer_s=host_eager,
        graph_decode=g_decode,
        graph_other=g_other,
        capture_tokens=capture,
        uniform_decode_width=uniform_width,
        nvlink_bytes_per_s=nvlink,
        nic_bytes_per_s=nic,
        extra={"host_link_bytes_per_s": host_link * 1e6},
    )

    if layout.ep_enabled and layout.moe_group > 1:
        assumptions.add(
            "all2all_dispatch_buffer_bytes",
            0,
            "no coefficient sizes expert-parallel dispatch buffers; comm_buffers omits them",
        )
    if scenario.engine is None and any(e.scope.engine for s in inputs.coefficients for _, e in s.entries()):
        assumptions.add(
            "engine",
            "vllm",
            "the scenario states no engine; entries a listed set scopes to another engine are not applied",
        )
    if scenario.engine_version != ENGINE_BEHAVIOUR_VERSION:
        assumptions.add(
            "engine_version",
            ENGINE_BEHAVIOUR_VERSION,
            f"the scenario states {scenario.engine_version}; the kernel prices vLLM "
            f"v{ENGINE_BEHAVIOUR_VERSION} behaviour",
        )

    memory: MemoryBreakdown
    memory, pre_snapshot = fixed_memory(
        consts=consts,
        coeffs=coeffs,
        graph=graph,
        mode_name=mode_name,
        max_batched_tokens=max_batched,
        served_bytes=DTYPE_BYTES[served],
        eplb_redundant=R,
    )
    util = eng.gpu_memory_utilization
    if util is None:
        util = VLLM_GPU_MEMORY_UTILIZATION
        assumptions.add("gpu_memory_utilization", util, "unstated; vLLM's default (capacity only, not step time)")
    kernel = Kernel._create(
        inputs=inputs,
        consts=consts,
        coeffs=coeffs,
        assumptions=assumptions,
        overrides=overrides,
        memory=memory,
        pre_snapshot=pre_snapshot,
        served_dtype=served,
        compute_suffix=suffix,
        mamba_mode=mamba_mode,
        spec_tokens=spec_tokens,
        max_num_seqs=max_seqs,
        max_batched_tokens=max_batched,
        cudagraph_mode=mode_name,
        gpu_memory_utilization=util,
        max_model_len=max_len,
        model_max_model_len=model_max_model_len(eng, facts),
        enable_chunked_prefill=chunked,
        kv_kinds=kv_kinds,
        hybrid_kv=hybrid_kv,
    )
    _check_fits(kernel, chip, util, max_len or None, eng.max_model_len is not None)
    return kernel


UNSTATED_LEN = " (unstated: the model's own limit, as vLLM takes it)"


def _check_fits(k: Kernel, chip: Any, util: float, max_model_len: int | None, stated: bool = True) -> None:
    """vLLM will not start when no KV block fits after the fixed memory, nor when one
    sequence of max_model_len tokens (stated, or the model's own limit when unstated) does
    not fit the KV budget (``vllm/v1/core/kv_cache_utils.py`` ``check_enough_kv_cache_memory``)."""
    budget = k._raw_budget(util)
    page = (k._slot_bytes() or k.sequence_variable_bytes(k.constants.block_size)) + k.sequence_fixed_bytes()
    gib = float(1 << 30)
    if budget < page:
        m = k.fixed_bytes()
        raise _refuse(
            f"the weights ({m.weights / gib:.1f} GiB per rank) and other fixed memory ({(m.total - m.weights) / gib:.1f} "
            f"GiB, plus {k.pre_snapshot_bytes() / gib:.1f} GiB before the budget) leave no room for a KV block in "
            f"gpu_memory_utilization {util} of {chip.name}'s {chip.MemoryGiB} GiB; widen parallel.tp, quantize the "
            f"weights, or choose a larger chip",
            "parallel.tp",
            k.constants.layout.tp,
        )
    if max_model_len is not None:
        need = k.sequence_variable_bytes(max_model_len) + k.sequence_fixed_bytes()
        if need > budget:
            raise _refuse(
                f"engine.max_model_len {max_model_len}{'' if stated else UNSTATED_LEN} "
                f"needs {need / gib:.2f} GiB of KV cache per rank, more than the {budget / gib:.2f} GiB budget; vLLM "
                f"refuses to start; lower max_model_len or free memory (wider tp, fp8 cache)",
                "engine.max_model_len",
                max_model_len,
            )

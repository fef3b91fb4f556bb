"""``new``: build a kernel from parsed documents. Everything batch-independent is decided
here, once, as a sequence of steps (each in the module named for what it resolves);
refusals are raised where the fact is decided."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from latencykernel.kernel.checks import check_context_parallel, check_fits, check_pipeline
from latencykernel.kernel.collectives import Fabric, collectives, fabric_facts
from latencykernel.kernel.constants import StepConstants
from latencykernel.kernel.engine_limits import (
    engine_settings,
    memory_utilization,
    mla_context_chunk,
    recurrent_cache_mode,
)
from latencykernel.kernel.geometry import (
    graph_nodes,
    kv_cache,
    plan_and_geometry,
    resolve_block_size,
    resolve_experts,
    resolve_interleave,
    sparse_mla_layout,
)
from latencykernel.kernel.lifting import lift_coefficients, lift_compute
from latencykernel.kernel.memory import MemoryBreakdown, fixed_memory
from latencykernel.price.recurrent import rank_decode_rate
from latencykernel.resolve.coefficients import Coefficients, DeploymentScope, resolve_coefficients
from latencykernel.resolve.dtypes import DTYPE_BYTES
from latencykernel.resolve.layout import Layout, Override, resolve_layout
from latencykernel.resolve.settings import ENGINE_BEHAVIOUR_VERSION, Assumptions
from latencykernel.resolve.startup import model_max_model_len

if TYPE_CHECKING:
    from latencykernel.inputs import Inputs
    from latencykernel.kernel.kernel import Kernel

__all__ = ["new"]


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
    facts = inputs.checkpoint
    assumptions = Assumptions()
    overrides: list[Override] = []

    check_pipeline(par)
    fabric = fabric_facts(chip, inputs.fabric, scenario.cluster)
    ep_stated = _expert_parallel_stated(par, graph, overrides, assumptions)
    layout = _layout(par, eng, inputs.rules, fabric, ep_stated)
    overrides[:0] = list(layout.overrides)
    coeffs = _coefficients(inputs, layout)
    compute = lift_compute(chip, graph, eng, facts, coeffs)
    plan, geo = plan_and_geometry(graph, layout, eng, compute.served)
    experts = resolve_experts(plan, graph, par, eng, layout, assumptions)
    combine = check_context_parallel(plan, layout, eng, inputs.rules, geo.attn_kinds, geo.latent, assumptions)
    block = resolve_block_size(eng, geo, assumptions)
    interleave = resolve_interleave(deployment, eng, layout.dcp, block, geo.is_dsa, overrides)
    layout_dtype = sparse_mla_layout(plan, chip, eng, layout, combine, geo.is_dsa, overrides, assumptions)
    kv = kv_cache(plan, eng, geo, layout, compute.served, layout_dtype, interleave.connectors, assumptions)
    mamba_mode = recurrent_cache_mode(eng, geo.hybrid, overrides, assumptions)
    limits = engine_settings(eng, chip, facts, assumptions, overrides)
    chunk = mla_context_chunk(eng, limits.max_seqs, block.size, layout.dcp, interleave.size, geo.latent, assumptions)
    lifted = lift_coefficients(
        coeffs, plan, experts.routed, assumptions, limits.unsplit, engine_stated=scenario.engine is not None
    )
    costs = collectives(coeffs, layout, chip.name, fabric.ratio, combine)

    consts = StepConstants(
        plan=plan,
        layout=layout,
        tp=max(layout.tp, 1),
        dcp=layout.dcp,
        pcp=layout.pcp,
        dcp_interleave=interleave.size,
        dcp_combine=combine,
        sm_count=int(chip.SMCount),
        nvfp4_native=limits.nvfp4_native,
        hbm_bytes_per_s=compute.hbm_bytes_per_s,
        peak_flops_per_s=compute.peak_flops_per_s,
        eps_max=compute.eps_max,
        m_half=compute.m_half,
        linear_m_half=compute.linear_m_half,
        shape_aware=compute.n_half is not None,
        n_half=compute.n_half or 0.0,
        k_half=compute.k_half or 0.0,
        total_experts=experts.routed + experts.redundant,
        experts_per_rank=experts.per_rank,
        local_expert_share=experts.local_share,
        expert_tensor_shards=experts.tensor_shards,
        moe_imbalance=lifted.moe_imbalance,
        moe_concentration=lifted.moe_concentration,
        attn_floor_s=lifted.attn_floor_s,
        attn_rate_bytes_per_s=lifted.attn_rate_bytes_per_s,
        attn_by_kind=lifted.attn_by_kind,
        prefill_floor_s=lifted.prefill_floor_s,
        prefill_scale=lifted.prefill_scale,
        recurrent_by_kind={
            k: (floor, rank_decode_rate(rate, layout.tp)) for k, (floor, rate) in lifted.recurrent_by_kind.items()
        },
        collectives=costs,
        kv_bytes_per_token=kv.bytes_per_token,
        kv_layers=geo.kv_layers,
        block_size=block.size,
        dcp_shards_all_kv_layers=kv.dcp_shards_all_kv_layers,
        mla_context_chunk=chunk,
        host_launch_per_kernel_s=lifted.host_launch_per_kernel_s,
        host_replay_s=lifted.host_replay_s,
        host_eager_per_layer_s=lifted.host_eager_per_layer_s,
        host_per_request_s=lifted.host_per_request_s,
        graph_decode=limits.graph_decode,
        graph_other=limits.graph_other,
        capture_tokens=limits.capture,
        uniform_decode_width=limits.uniform_width,
        nvlink_bytes_per_s=fabric.nvlink_bytes_per_s,
        nic_bytes_per_s=fabric.nic_bytes_per_s,
        extra={"host_link_bytes_per_s": lifted.host_link * 1e6},
    )
    _scope_assumptions(inputs, layout, assumptions)

    memory: MemoryBreakdown
    memory, pre_snapshot = fixed_memory(
        consts=consts,
        coeffs=coeffs,
        graph=graph,
        mode_name=limits.mode_name,
        max_batched_tokens=limits.max_batched,
        served_bytes=DTYPE_BYTES[compute.served],
        eplb_redundant=experts.redundant,
    )
    util = memory_utilization(eng, assumptions)
    kernel = Kernel._create(
        inputs=inputs,
        consts=consts,
        coeffs=coeffs,
        assumptions=assumptions,
        overrides=overrides,
        memory=memory,
        pre_snapshot=pre_snapshot,
        served_dtype=compute.served,
        compute_suffix=compute.suffix,
        mamba_mode=mamba_mode,
        spec_tokens=limits.spec_tokens,
        max_num_seqs=limits.max_seqs,
        max_batched_tokens=limits.max_batched,
        cudagraph_mode=limits.mode_name,
        gpu_memory_utilization=util,
        max_model_len=limits.max_len,
        model_max_model_len=model_max_model_len(eng, facts),
        enable_chunked_prefill=limits.chunked,
        kv_kinds=kv.kinds,
        hybrid_kv=kv.hybrid,
    )
    check_fits(kernel, chip, util, limits.max_len or None, eng.max_model_len is not None)
    return kernel


def _expert_parallel_stated(par: Any, graph: Any, overrides: list[Override], assumptions: Assumptions) -> bool:
    """Expert parallelism on a dense model: vLLM's FusedMoE is the only layer that reads
    enable_expert_parallel, so a model without routed experts runs as if it were off."""
    ep_stated = bool(par.enable_expert_parallel)
    if ep_stated and not graph_nodes(graph, "GroupedGEMM"):
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
    return ep_stated


def _layout(par: Any, eng: Any, rules: Any, fabric: Fabric, ep_stated: bool) -> Layout:
    """The parallel layout: groups, their widths and the collectives each emits."""
    return resolve_layout(
        tp=par.tp,
        pp=par.pp,
        dp=par.dp,
        pcp=par.pcp,
        dcp=par.dcp,
        ep_enabled=ep_stated,
        gpus_per_node=fabric.gpus_per_node,
        rack_gpus=fabric.rack_gpus,
        all2all_backend=eng.all2all_backend,
        sp_moe_backends=frozenset(rules.sp_moe_backends),
        custom_all_reduce_widths=frozenset(rules.custom_all_reduce_world_sizes),
        disable_custom_all_reduce=eng.disable_custom_all_reduce,
        allreduce_backend=eng.allreduce_backend,
    )


def _coefficients(inputs: Inputs, layout: Layout) -> Coefficients:
    """The coefficient sets resolved for this deployment's scope."""
    chip, graph = inputs.chip, inputs.model
    return resolve_coefficients(
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


def _scope_assumptions(inputs: Inputs, layout: Layout, assumptions: Assumptions) -> None:
    """What the kernel assumes of the deployment's scope: unsized expert-parallel dispatch
    buffers, the engine when unstated, TensorRT-LLM's KV reservation, and the engine version
    it prices."""
    scenario = inputs.scenario
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
    if scenario.engine == "trt":
        # tensorrt_llm/llmapi/llm_args.py, SchedulerConfig: capacity_scheduler_policy defaults to
        # GUARANTEED_NO_EVICT; cpp/tensorrt_llm/batch_manager/capacityScheduler.cpp,
        # GuaranteedNoEvictScheduler::impl, admits a request only while the free blocks, less
        # KVCacheManager::getRemainingBlocksToCompletion of every running request, hold its own
        # (prompt + max_new_tokens)
        assumptions.add(
            "kv_reservation",
            "to_completion",
            "TensorRT-LLM's default capacity scheduler (GUARANTEED_NO_EVICT) reserves each request's prompt + "
            "max_tokens of KV at admission; limits().kv_reservation carries it to the scheduler",
        )
    if scenario.engine_version != ENGINE_BEHAVIOUR_VERSION:
        assumptions.add(
            "engine_version",
            ENGINE_BEHAVIOUR_VERSION,
            f"the scenario states {scenario.engine_version}; the kernel prices vLLM "
            f"v{ENGINE_BEHAVIOUR_VERSION} behaviour",
        )

"""The bundle: a Scenario (the fixed problem) and a Deployment (the choices), two YAML
documents in one file. ``load_bundle`` reads it; ``check_bundle`` runs the checks that
span keys or documents."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from latencykernel.documents.base_models import Invalid, StrictModel, empty_list
from latencykernel.documents.cache import cached
from latencykernel.documents.validation import require_mapping, show, validate
from latencykernel.documents.yaml_loader import read_yaml_all
from latencykernel.errors import DocumentError

__all__ = [
    "Scenario",
    "Cluster",
    "Workload",
    "Trace",
    "TraceHeader",
    "TraceServer",
    "SloTarget",
    "Deployment",
    "Pool",
    "Parallel",
    "Engine",
    "Dbo",
    "Eplb",
    "Speculative",
    "Offload",
    "OffloadTier",
    "PDTransfer",
    "load_bundle",
    "check_bundle",
]

Name = Annotated[str, Field(min_length=1)]
PosInt = Annotated[int, Field(ge=1)]
NonNegInt = Annotated[int, Field(ge=0)]

# --------------------------------------------------------------------------- Scenario


class SloTarget(StrictModel):
    ttft_ms: Annotated[float, Field(gt=0)] | None = None
    itl_ms: Annotated[float, Field(gt=0)] | None = None
    e2e_ms: Annotated[float, Field(gt=0)] | None = None


class TraceServer(StrictModel):
    type: str | None = None
    model: str | None = None
    tensor_parallel: PosInt | None = None
    max_num_seqs: PosInt | None = None
    block_size: PosInt | None = None
    gpu_memory_utilization: Annotated[float, Field(gt=0, le=1)] | None = None
    max_model_len: PosInt | None = None


class TraceHeader(StrictModel):
    trace_version: PosInt
    time_unit: Literal["ns", "nanoseconds", "us", "microseconds", "ms", "milliseconds", "s", "seconds"]
    mode: Literal["real", "generated", "replayed"] | None = None
    workload_seed: int | None = None
    server: TraceServer | None = None
    goodput_slo_targets: dict[str, SloTarget] | None = None


class Trace(StrictModel):
    data: Name
    sha256: str | None = None
    rows: NonNegInt | None = None
    header: TraceHeader | None = None


class Workload(StrictModel):
    """Either a catalog workload shape or a trace binding (not read by the kernel)."""

    shape: Name | None = None
    trace: Trace | None = None

    @model_validator(mode="after")
    def _one_of(self) -> Workload:
        if (self.shape is None) == (self.trace is None):
            raise Invalid("state exactly one of 'shape' (a catalog workload) or 'trace' (a trace binding)")
        return self


class Cluster(StrictModel):
    hardware: Name
    fabric: Name | None = None
    nodes: PosInt
    gpus_per_node: PosInt
    gpus_per_rack: PosInt | None = None
    storage: list[Name] | None = None


class Scenario(StrictModel):
    kind: Literal["Scenario"]
    name: Name
    model: Name
    coefficients: Annotated[list[Name], Field(min_length=1)]
    engine_version: Name
    # The serving engine the deployment runs. The kernel prices vLLM's scheduler and step
    # whatever it says; it selects only the coefficient entries scoped to an engine (scope
    # ``engine``), e.g. SGLang's admission. Unstated: vllm.
    engine: Literal["vllm", "sglang", "trt"] | None = None
    workload: Workload | None = None
    cluster: Cluster


# --------------------------------------------------------------------------- Deployment


class Parallel(StrictModel):
    """Parallel widths. ``tp``, ``pp`` and ``dp`` must be stated (as in the BLIS schema, where
    an absent width is 0 and fails its ``>= 1`` check); ``pcp``, ``dcp`` and expert
    parallelism are features that are off unless stated."""

    tp: PosInt
    pp: PosInt
    dp: PosInt
    dp_local: NonNegInt | None = None
    pcp: NonNegInt | None = None
    dcp: NonNegInt | None = None
    enable_expert_parallel: bool | None = None


class Dbo(StrictModel):
    enable_dbo: bool | None = None
    dbo_decode_token_threshold: NonNegInt | None = None
    dbo_prefill_token_threshold: NonNegInt | None = None


class Eplb(StrictModel):
    enable_eplb: bool | None = None
    num_redundant_experts: NonNegInt | None = None
    window_size: PosInt | None = None
    step_interval: PosInt | None = None


class Speculative(StrictModel):
    method: Name
    num_spec_tokens: PosInt | None = None


class Engine(StrictModel):
    """Engine settings; every one optional (``None`` = unstated, the kernel decides)."""

    all2all_backend: str | None = None
    disable_custom_all_reduce: bool | None = None
    allreduce_backend: Literal["custom", "nccl"] | None = None
    cudagraph_mode: str | None = None
    # vLLM's compilation_config.splitting_ops: the ops the compiled model is split at for
    # piecewise CUDA graphs. Only an empty list is read (the whole model one compiled
    # graph: no piecewise graphs, and a costlier eager step, resolve.settings.graph_modes).
    splitting_ops: list[str] | None = None
    async_scheduling: bool | None = None
    disable_cascade_attn: bool | None = None
    enable_prefix_caching: bool | None = None
    block_size: PosInt | None = None
    max_num_batched_tokens: PosInt | None = None
    max_num_seqs: PosInt | None = None
    max_model_len: PosInt | None = None
    quantization: str | None = None
    cache_dtype: str | None = None
    mamba_cache_dtype: str | None = None
    mamba_ssm_cache_dtype: str | None = None
    mamba_cache_mode: str | None = None
    gpu_memory_utilization: Annotated[float, Field(gt=0, le=1)] | None = None
    scheduling_policy: str | None = None
    dbo: Dbo | None = None
    eplb: Eplb | None = None
    speculative: Speculative | None = None
    dcp_comm_backend: str | None = None
    cp_kv_cache_interleave_size: PosInt | None = None
    dcp_q_replicate: bool | None = None
    # vLLM --enable-chunked-prefill (on by default in v1), --disable-hybrid-kv-cache-manager,
    # and --hf-overrides (only its rope_scaling block is read: it lifts the context limit).
    enable_chunked_prefill: bool | None = None
    disable_hybrid_kv_cache_manager: bool | None = None
    hf_overrides: dict[str, Any] | None = None


class Pool(StrictModel):
    role: Literal["colocated", "prefill", "decode"]
    nodes: PosInt
    parallel: Parallel
    engine: Engine = Field(default_factory=Engine)


class OffloadTier(StrictModel):
    tier: Name
    bytes: PosInt


class Offload(StrictModel):
    tiers: list[OffloadTier] = Field(default_factory=empty_list)
    eviction_policy: str | None = None
    prefetch_depth: NonNegInt | None = None
    connector: str | None = None
    spec: str | None = None


class PDTransfer(StrictModel):
    connector: str | None = None


class Deployment(StrictModel):
    kind: Literal["Deployment"]
    name: Name
    pools: Annotated[list[Pool], Field(min_length=1)]
    offload: Offload | None = None
    pd_transfer: PDTransfer | None = None
    # control-plane policy blocks: carried, not read by the kernel
    admission: dict[str, Any] | None = None
    routing: dict[str, Any] | None = None
    scheduler: dict[str, Any] | None = None
    preemption: dict[str, Any] | None = None
    saturation: dict[str, Any] | None = None
    lora: dict[str, Any] | None = None


# --------------------------------------------------------------------------- checks


def _fail(file: str, key: str, value: Any, text: str) -> DocumentError:
    return DocumentError(f"{file}: {key}: {text}", file=file, key=key, value=value)


def check_bundle(scenario: Scenario, deployment: Deployment, file: str | os.PathLike[str]) -> None:
    """Checks spanning keys or both documents; raises ``DocumentError``."""
    f = str(file)
    cl = scenario.cluster
    roles = [p.role for p in deployment.pools]
    split = [i for i, r in enumerate(roles) if r in ("prefill", "decode")]
    if "colocated" in roles and split:
        i = split[0]
        raise _fail(
            f,
            f"pools[{i}].role",
            roles[i],
            f"a {roles[i]} pool cannot sit beside a colocated pool; make every pool colocated, "
            "or split the deployment into prefill and decode pools",
        )
    for need, other in (("prefill", "decode"), ("decode", "prefill")):
        if need in roles and other not in roles:
            i = roles.index(need)
            raise _fail(
                f,
                f"pools[{i}].role",
                need,
                f"a {need} pool needs a {other} pool beside it; add one, or make the pool colocated",
            )
    total = sum(p.nodes for p in deployment.pools)
    if total != cl.nodes:
        raise _fail(
            f, "pools", total, f"the pools' nodes add up to {total} but cluster.nodes is {cl.nodes}; make the two equal"
        )
    if cl.nodes > 1 and not cl.fabric:
        raise _fail(
            f,
            "cluster.fabric",
            None,
            f"a cluster of {cl.nodes} nodes needs a fabric; name a catalog network "
            "(networks/<name>.yaml), e.g. ib-400g",
        )
    if cl.gpus_per_rack is not None and cl.gpus_per_rack % cl.gpus_per_node:
        raise _fail(
            f,
            "cluster.gpus_per_rack",
            cl.gpus_per_rack,
            f"{cl.gpus_per_rack} is not a multiple of gpus_per_node {cl.gpus_per_node}",
        )
    for i, pool in enumerate(deployment.pools):
        _check_parallel(f, i, pool, cl.gpus_per_node)
    if "prefill" in roles and deployment.pd_transfer is None:
        raise _fail(
            f,
            "pd_transfer",
            None,
            "a deployment with a prefill pool needs a pd_transfer block (e.g. pd_transfer: {connector: NixlConnector})",
        )
    if deployment.offload is not None and cl.storage is not None:
        for j, t in enumerate(deployment.offload.tiers):
            if t.tier not in cl.storage:
                raise _fail(
                    f,
                    f"offload.tiers[{j}].tier",
                    t.tier,
                    f"{show(t.tier)} is not in cluster.storage ({', '.join(cl.storage) or 'empty'}); "
                    "add it there or pick one of those",
                )


def _check_parallel(f: str, i: int, pool: Pool, gpus_per_node: int) -> None:
    par = pool.parallel
    base = f"pools[{i}].parallel"
    pcp = par.pcp or 0
    dcp = par.dcp or 0
    if pcp > 1 and par.dp > 1:
        raise _fail(
            f,
            f"{base}.pcp",
            pcp,
            f"pcp {pcp} with dp {par.dp}: prefill-context parallelism excludes data "
            "parallelism; set dp to 1 or pcp to 1",
        )
    if dcp > 1:
        if pcp <= 1 and par.tp % dcp:
            raise _fail(
                f,
                f"{base}.dcp",
                dcp,
                f"{dcp} does not divide tp {par.tp}; decode-context parallelism reuses the "
                "tensor-parallel ranks, so dcp must divide tp",
            )
        if pcp > 1 and dcp not in (1, pcp, par.tp * pcp):
            raise _fail(
                f,
                f"{base}.dcp",
                dcp,
                f"with pcp {pcp} and tp {par.tp}, dcp must be 1, {pcp} (pcp) or {par.tp * pcp} (tp*pcp)",
            )
    need = par.pp * par.tp * max(pcp, 1) * par.dp
    have = pool.nodes * gpus_per_node
    if need > have:
        raise _fail(
            f,
            base,
            need,
            f"one engine needs pp*tp*pcp*dp = {par.pp}*{par.tp}*{max(pcp, 1)}*{par.dp} = {need} GPUs "
            f"but the pool has nodes {pool.nodes} x gpus_per_node {gpus_per_node} = {have}; "
            "raise the pool's nodes or narrow the parallel widths",
        )


# --------------------------------------------------------------------------- loading

_LAYOUT = "a bundle holds two YAML documents: a Scenario, then a line '---', then a Deployment"


def _parse_bundle(path: Path) -> tuple[Scenario, Deployment]:
    f = str(path)
    docs = read_yaml_all(path)
    while docs and docs[-1] is None:
        docs.pop()
    if not docs or all(d is None for d in docs):
        raise DocumentError(f"{f}: the file is empty; {_LAYOUT}", file=f)
    if len(docs) == 1:
        hint = ""
        d = docs[0]
        if isinstance(d, dict) and ("pools" in d or "hardware" in d):
            hint = (
                " This looks like the older single-document form: move 'hardware' under "
                "'cluster', and 'pools' into a second document with 'kind: Deployment'."
            )
        raise DocumentError(
            f"{f}: the file holds one YAML document, the Deployment is missing; {_LAYOUT}.{hint}", file=f
        )
    if len(docs) > 2:
        raise DocumentError(f"{f}: the file holds {len(docs)} YAML documents; {_LAYOUT}", file=f)
    first = require_mapping(docs[0], f, "a Scenario document")
    second = require_mapping(docs[1], f, "a Deployment document")
    if first.get("kind") == "Deployment" and second.get("kind") == "Scenario":
        raise DocumentError(
            f"{f}: kind: the Scenario document must come first, then the Deployment",
            file=f,
            key="kind",
            value="Deployment",
        )
    scenario = validate(Scenario, first, f)
    deployment = validate(Deployment, second, f)
    check_bundle(scenario, deployment, f)
    return scenario, deployment


def load_bundle(path: str | os.PathLike[str]) -> tuple[Scenario, Deployment]:
    """Read a scenario bundle (Scenario ``---`` Deployment)."""
    return cached("bundle", path, _parse_bundle)

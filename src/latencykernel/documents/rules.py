"""Engine rules packs: per-release accepted values and helper rules, keyed by ``engine_version``.

Values are those of blis-schemas ``rules/v0_29`` (engine "0.29.0"). The same facts are also
registered under "0.31.0", the engine release the kernel prices: no published pack exists for
it, and the facts the kernel reads (custom all-reduce widths, SP-MoE backends, DCP combine
names) did not change between the two releases.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from latencykernel.errors import DocumentError

__all__ = ["EngineRules", "RULES", "lookup_rules", "known_versions"]


@dataclass(frozen=True)
class EngineRules:
    """What one engine release accepts, and the rules a cost model reads from it."""

    version: str
    all2all_backends: frozenset[str]
    sp_moe_backends: frozenset[str]
    allreduce_backends: frozenset[str]
    custom_all_reduce_world_sizes: frozenset[int]
    cudagraph_modes: frozenset[str]
    cache_dtypes: frozenset[str]
    mamba_cache_modes: frozenset[str]
    speculative_methods: frozenset[str]
    dcp_comm_backends: frozenset[str]
    quantizations: frozenset[str]
    connectors: frozenset[str]
    offload_specs: frozenset[str]
    eviction_policies: frozenset[str]
    scheduler_policies: frozenset[str]
    async_compatible_spec: frozenset[str] = frozenset()
    dbo_decode_threshold: int = 32
    dbo_prefill_threshold: int = 512
    triton_fetch_page_bytes: int = 28672
    triton_fetch_sms: int = 12
    cascade_attn_opt_in: bool = True

    def sequence_parallel_moe(self, backend: str | None, ep_enabled: bool, tp: int, dp: int) -> bool:
        """Whether the MoE input is sequence-parallel (EP on, tp>1, dp>1, an SP backend)."""
        return bool(ep_enabled and tp > 1 and dp > 1 and backend and backend in self.sp_moe_backends)

    def custom_all_reduce_supports(self, tp: int) -> bool:
        """Whether the custom all-reduce runs at this width (else NCCL)."""
        return tp in self.custom_all_reduce_world_sizes

    def triton_fetch_withholds_sms(self, page_bytes: int) -> int:
        """SMs an overlapping Triton offload fetch withholds."""
        return self.triton_fetch_sms if page_bytes == self.triton_fetch_page_bytes else 0

    def dbo_engages(self, enabled: bool, tokens: int, uniform_decode: bool) -> bool:
        """Whether dual-batch overlap engages for a step of ``tokens``."""
        limit = self.dbo_decode_threshold if uniform_decode else self.dbo_prefill_threshold
        return enabled and tokens >= limit


_SPEC = frozenset(
    {
        "deepseek_mtp",
        "dflash",
        "draft_model",
        "dspark",
        "eagle",
        "eagle3",
        "glm4_moe_mtp",
        "inkling_mtp",
        "kimi_k3_mtp",
        "medusa",
        "mlp_speculator",
        "mtp",
        "nemotron_h_mtp",
        "ngram",
        "ngram_gpu",
        "qwen3_next_mtp",
    }
)

_V0_29 = EngineRules(
    version="0.29.0",
    all2all_backends=frozenset(
        {
            "allgather_reducescatter",
            "deepep_high_throughput",
            "deepep_low_latency",
            "deepep_v2",
            "flashinfer_all2allv",
            "flashinfer_nvlink_one_sided",
            "flashinfer_nvlink_two_sided",
            "mori_high_throughput",
            "mori_low_latency",
            "naive",
            "nixl_ep",
            "pplx",
        }
    ),
    sp_moe_backends=frozenset(
        {
            "allgather_reducescatter",
            "deepep_high_throughput",
            "deepep_low_latency",
            "flashinfer_nvlink_one_sided",
            "mori_high_throughput",
            "mori_low_latency",
            "nixl_ep",
        }
    ),
    allreduce_backends=frozenset({"custom", "nccl"}),
    custom_all_reduce_world_sizes=frozenset({2, 4, 6, 8, 16}),
    cudagraph_modes=frozenset({"FULL", "FULL_AND_PIECEWISE", "FULL_DECODE_ONLY", "NONE", "PIECEWISE"}),
    cache_dtypes=frozenset(
        {
            "auto",
            "bfloat16",
            "float16",
            "fp8",
            "fp8_ds_mla",
            "fp8_e4m3",
            "fp8_e5m2",
            "fp8_inc",
            "fp8_per_token_head",
            "int4_per_token_head",
            "int8_per_token_head",
            "nvfp4",
            "nvfp4_4over6",
            "turboquant_3bit_nc",
            "turboquant_4bit_nc",
            "turboquant_k3v4_nc",
            "turboquant_k8v4",
        }
    ),
    mamba_cache_modes=frozenset({"align", "all", "none"}),
    speculative_methods=_SPEC,
    dcp_comm_backends=frozenset({"a2a", "ag_rs"}),
    quantizations=frozenset(
        {
            "auto_awq",
            "auto_gptq",
            "awq",
            "awq_marlin",
            "compressed-tensors",
            "deepseek_v4_fp8",
            "experts_int8",
            "fbgemm_fp8",
            "fp8",
            "fp8_per_block",
            "fp8_per_channel",
            "fp8_per_tensor",
            "fp_quant",
            "gpt_oss_mxfp4",
            "gptq",
            "gptq_marlin",
            "humming",
            "inc",
            "int8_per_channel_weight_only",
            "modelopt",
            "modelopt_fp4",
            "modelopt_mixed",
            "modelopt_mxfp8",
            "moe_wna16",
            "mxfp4",
            "mxfp8",
            "nvfp4_per_token",
            "online",
            "quark",
            "torchao",
        }
    ),
    connectors=frozenset(
        {
            "DecodeBenchConnector",
            "ExampleConnector",
            "ExampleHiddenStatesConnector",
            "FlexKVConnectorV1",
            "HF3FSKVConnector",
            "LMCacheConnectorV1",
            "LMCacheMPConnector",
            "MoRIIOConnector",
            "MooncakeConnector",
            "MooncakeStoreConnector",
            "MultiConnector",
            "NixlConnector",
            "NixlPullConnector",
            "NixlPushConnector",
            "OffloadingConnector",
            "SimpleCPUOffloadConnector",
        }
    ),
    offload_specs=frozenset({"CPUOffloadingSpec", "TieringOffloadingSpec"}),
    eviction_policies=frozenset({"arc", "lru"}),
    scheduler_policies=frozenset({"fcfs", "priority"}),
    async_compatible_spec=_SPEC - {"medusa", "mlp_speculator", "ngram"},
)

# 0.31.0 is the release the kernel prices; it carries the 0.29.0 facts (see module docstring).
RULES: dict[str, EngineRules] = {
    "0.29.0": _V0_29,
    "0.31.0": dataclasses.replace(_V0_29, version="0.31.0"),
}


def known_versions() -> list[str]:
    """Engine versions with a rules pack."""
    return sorted(RULES, key=lambda v: tuple(int(x) if x.isdigit() else 0 for x in v.split(".")))


def lookup_rules(version: str) -> EngineRules:
    """The rules pack registered under exactly ``version``."""
    rules = RULES.get(version) if isinstance(version, str) else None
    if rules is None:
        raise DocumentError(
            f'no engine rules for engine_version "{version}"; known versions are {", ".join(known_versions())}',
            key="engine_version",
            value=version,
        )
    return rules

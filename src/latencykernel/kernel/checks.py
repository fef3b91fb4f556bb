"""The start-up refusals ``new`` makes itself: settings vLLM would not start with, or that
this kernel cannot price truthfully, each refused naming the setting and its value (the
engine's own rules that need no kernel facts live in ``resolve.startup``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from latencykernel.errors import RefusedError
from latencykernel.plan import LATENT_KINDS, Plan
from latencykernel.resolve.dtypes import MAMBA_CACHE_DTYPES, PRICED_CACHE_DTYPES, UNPRICED_CACHE_DTYPES
from latencykernel.resolve.layout import Layout
from latencykernel.resolve.settings import Assumptions

if TYPE_CHECKING:
    from latencykernel.kernel.kernel import Kernel

__all__ = [
    "refuse",
    "check_pipeline",
    "check_cache_dtypes",
    "check_context_parallel",
    "check_fits",
    "UNSTATED_LEN",
]

UNSTATED_LEN = " (unstated: the model's own limit, as vLLM takes it)"


def refuse(msg: str, setting: str, value: Any) -> RefusedError:
    return RefusedError(msg, setting=setting, value=value)


def check_pipeline(par: Any) -> None:
    """Pipeline parallelism is not priced: a pool with pp > 1 is refused."""
    if par.pp > 1:
        raise refuse(
            f"pipeline parallelism (parallel.pp {par.pp}) is not priced by this kernel; set pp to 1 "
            f"and widen tp or dp instead",
            "parallel.pp",
            par.pp,
        )


def check_cache_dtypes(engine: Any, kv_kind: str) -> None:
    c = engine.cache_dtype
    if c == "":
        # vllm/config/cache.py CacheDType: '' is not among the accepted names (auto is).
        raise refuse(
            "engine.cache_dtype '' (empty) is not a KV cache dtype vLLM accepts; state auto, or leave it unset",
            "engine.cache_dtype",
            c,
        )
    if c is not None:
        if c in UNPRICED_CACHE_DTYPES:
            # KNOWN DIVERGENCE D5: per-token-head and turboquant pages are not sized; refused.
            raise refuse(
                f"engine.cache_dtype {c!r} is a vLLM KV format this kernel cannot size (its per-head "
                f"scales are not modelled); use fp8 or bfloat16",
                "engine.cache_dtype",
                c,
            )
        if c not in PRICED_CACHE_DTYPES:
            raise refuse(
                f"engine.cache_dtype {c!r} is not a KV cache dtype vLLM v0.31.0 accepts; use one of "
                f"{', '.join(x for x in PRICED_CACHE_DTYPES if x)}",
                "engine.cache_dtype",
                c,
            )
        if c == "fp8_inc":
            raise refuse(
                "engine.cache_dtype 'fp8_inc' runs only on Intel Gaudi, not on the GPUs this kernel prices; use fp8",
                "engine.cache_dtype",
                c,
            )
        if c.endswith("_ds_mla") and kv_kind != "sparse_mla":
            raise refuse(
                f"engine.cache_dtype {c!r} is the DeepSeek sparse-MLA page layout, but this model's "
                f"attention is {kv_kind or 'absent'}; use fp8",
                "engine.cache_dtype",
                c,
            )
        if c.startswith("nvfp4") and not c.endswith("_ds_mla") and kv_kind in LATENT_KINDS:
            raise refuse(
                f"engine.cache_dtype {c!r} cannot hold a latent (MLA) cache in vLLM; use fp8", "engine.cache_dtype", c
            )
    m = engine.mamba_cache_dtype
    if m is not None and m not in MAMBA_CACHE_DTYPES:
        raise refuse(
            f"engine.mamba_cache_dtype {m!r} is not accepted by vLLM; use one of "
            f"{', '.join(x for x in MAMBA_CACHE_DTYPES if x)}",
            "engine.mamba_cache_dtype",
            m,
        )


def check_context_parallel(
    plan: Plan, layout: Layout, eng: Any, rules: Any, attn_kinds: list[str], latent: bool, assumptions: Assumptions
) -> str:
    """The context-parallel settings vLLM accepts for this model; returns the DCP combine
    backend (``engine.dcp_comm_backend``, or vLLM's default ``ag_rs``, recorded when DCP is on)."""
    dcp, pcp = layout.dcp, layout.pcp
    combine = eng.dcp_comm_backend
    if pcp > 1:
        bad = [lp.id for lp in plan.layers if (lp.primary and lp.primary.kind not in LATENT_KINDS) or lp.recurrent_kind]
        if bad:
            raise refuse(
                f"prefill-context parallelism (parallel.pcp {pcp}) needs latent attention in every layer "
                f"and no recurrent layers, but layer kind {bad[0]!r} has neither; set pcp to 1",
                "parallel.pcp",
                pcp,
            )
        if dcp > 1 and any(k != "sparse_mla" for k in attn_kinds):
            raise refuse(
                f"parallel.pcp {pcp} with parallel.dcp {dcp} needs sparse-MLA attention in every layer; "
                f"drop one of them",
                "parallel.dcp",
                dcp,
            )
    if combine is not None and combine not in rules.dcp_comm_backends:
        raise refuse(
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
        raise refuse(
            "engine.dcp_comm_backend 'a2a' cannot combine with prefill-context parallelism "
            f"(parallel.pcp {pcp}); use ag_rs",
            "engine.dcp_comm_backend",
            combine,
        )
    if eng.dcp_q_replicate and dcp > 1 and pcp <= 1 and latent:
        raise refuse(
            "engine.dcp_q_replicate true replicates the latent query projection across DCP ranks, "
            "which this kernel cannot identify in the graph; leave it unset",
            "engine.dcp_q_replicate",
            True,
        )
    return str(combine)


def check_fits(k: Kernel, chip: Any, util: float, max_model_len: int | None, stated: bool = True) -> None:
    """vLLM will not start when no KV block fits after the fixed memory, nor when one
    sequence of max_model_len tokens (stated, or the model's own limit when unstated) does
    not fit the KV budget (``vllm/v1/core/kv_cache_utils.py`` ``check_enough_kv_cache_memory``)."""
    budget = k._raw_budget(util)
    page = (k._slot_bytes() or k.sequence_variable_bytes(k.constants.block_size)) + k.sequence_fixed_bytes()
    gib = float(1 << 30)
    if budget < page:
        m = k.fixed_bytes()
        raise refuse(
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
            raise refuse(
                f"engine.max_model_len {max_model_len}{'' if stated else UNSTATED_LEN} "
                f"needs {need / gib:.2f} GiB of KV cache per rank, more than the {budget / gib:.2f} GiB budget; vLLM "
                f"refuses to start; lower max_model_len or free memory (wider tp, fp8 cache)",
                "engine.max_model_len",
                max_model_len,
            )

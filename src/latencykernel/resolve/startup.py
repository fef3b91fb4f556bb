"""The start-up checks vLLM runs before it serves: a deployment failing one never starts,
so ``new`` refuses it rather than price it.

Each rule below is re-expressed from vLLM's own source and cites the file and function.
The pinned release is ``settings.ENGINE_BEHAVIOUR_COMMIT`` (v0.31.0); the stored copies read
while writing these rules were the nearest the source index holds of the same files
(``vllm/config/scheduler.py`` at 01230b40, ``vllm/config/cache.py`` at 002f10e0), whose
rules here match the release's.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from latencykernel.errors import RefusedError
from latencykernel.resolve.settings import Assumptions

__all__ = [
    "check_attention_heads",
    "check_recurrent_heads",
    "check_experts",
    "check_moe_intermediate",
    "check_quantization",
    "derived_max_model_len",
    "check_max_model_len",
    "check_scheduler_limits",
    "check_block_size",
    "check_cluster_size",
    "resolve_max_model_len",
    "model_max_model_len",
    "KERNEL_BLOCK_MULTIPLE",
    "MAX_GPUS_PER_NODE",
]

# vllm/v1/attention/backends/flash_attn.py FlashAttentionBackend.get_supported_kernel_block_sizes
# (and the Triton and FlashInfer backends likewise): a kernel page is a multiple of 16 tokens,
# and the logical block must split into whole kernel pages.
KERNEL_BLOCK_MULTIPLE = 16
# The widest NVLink domain a product ships is 576 GPUs (NVL576); a "node" of more GPUs than
# that is a typo, and a value like 2**63 overflows every width computed from it.
MAX_GPUS_PER_NODE = 576
MAX_NODES = 1 << 16


def _refuse(msg: str, setting: str, value: Any) -> RefusedError:
    return RefusedError(msg, setting=setting, value=value)


def check_attention_heads(tp: int, attentions: Iterable[tuple[str, int, int, bool]]) -> None:
    """Refuse a tensor-parallel width vLLM cannot split the attention heads over.

    ``attentions`` holds (layer kind, query heads, KV heads, latent) per primary attention.

    - query heads: ``vllm/config/model.py`` ``ModelConfig.verify_with_parallel_config``
      requires ``num_attention_heads % tensor_parallel_size == 0``;
    - KV heads: ``vllm/model_executor/layers/linear.py`` ``QKVParallelLinear.__init__``
      gives each rank ``n_kv / tp`` heads when tp is below n_kv (``divide`` asserts
      ``n_kv % tp == 0``), else one head replicated ``tp / n_kv`` times (``tp % n_kv == 0``).
      A latent (MLA) cache has one latent per token, replicated on every rank.
    """
    if tp <= 1:
        return
    for kind, q, kv, latent in attentions:
        if q % tp:
            raise _refuse(
                f"parallel.tp {tp} does not divide the {q} attention heads of layer kind {kind!r}; vLLM "
                f"refuses to start (each rank needs whole heads); use a tp that divides {q}",
                "parallel.tp",
                tp,
            )
        if latent or kv <= 0:
            continue
        if tp < kv and kv % tp:
            raise _refuse(
                f"parallel.tp {tp} does not divide the {kv} KV heads of layer kind {kind!r}; vLLM refuses to "
                f"start; use a tp that divides {kv}",
                "parallel.tp",
                tp,
            )
        if tp >= kv and tp % kv:
            raise _refuse(
                f"parallel.tp {tp} exceeds the {kv} KV heads of layer kind {kind!r} but is not a multiple of "
                f"them, so vLLM cannot replicate each head evenly; use a multiple of {kv}",
                "parallel.tp",
                tp,
            )


def check_recurrent_heads(tp: int, mixers: Iterable[tuple[str, str, int, int]]) -> None:
    """Refuse a tp vLLM cannot split a recurrent mixer over. ``mixers`` holds (layer kind,
    recurrent kind, heads, groups (0 when not stated)).

    ``vllm/model_executor/layers/mamba/mamba_mixer2.py`` ``MambaMixer2.__init__`` asserts that
    tp divides the heads, and that it divides the B/C groups unless there is a single group
    (then replicated); the gated-delta-net and KDA mixers split their heads with ``divide``.
    """
    if tp <= 1:
        return
    for kind, rkind, heads, groups in mixers:
        if heads % tp:
            raise _refuse(
                f"parallel.tp {tp} does not divide the {heads} {rkind} heads of layer kind {kind!r}; vLLM "
                f"refuses to start; use a tp that divides {heads}",
                "parallel.tp",
                tp,
            )
        if groups > 1 and groups % tp:
            raise _refuse(
                f"parallel.tp {tp} does not divide the {groups} {rkind} groups of layer kind {kind!r} (only a "
                f"single group is replicated); use a tp that divides {groups}",
                "parallel.tp",
                tp,
            )


def check_experts(experts: int, redundant: int, ep_width: int, eplb: bool, stated_redundant: int) -> None:
    """Refuse an expert layout vLLM's fused-MoE layer asserts against.

    ``vllm/model_executor/layers/fused_moe/layer.py`` ``FusedMoE.__init__``: under expert
    parallelism with EPLB on, the physical experts (routed + redundant) must divide evenly
    over the EP ranks; redundant experts exist only under EPLB. Without EPLB an uneven split
    is allowed (``determine_expert_map`` gives the first ranks one more).
    """
    if stated_redundant > 0 and not eplb:
        raise _refuse(
            f"engine.eplb.num_redundant_experts {stated_redundant} needs engine.eplb.enable_eplb true; vLLM "
            f"supports redundant experts only under EPLB",
            "engine.eplb.num_redundant_experts",
            stated_redundant,
        )
    if eplb and ep_width > 1 and (experts + redundant) % ep_width:
        raise _refuse(
            f"with EPLB, the {experts + redundant} physical experts ({experts} routed + {redundant} redundant) "
            f"must divide evenly over the {ep_width} expert-parallel ranks; vLLM refuses to start; choose "
            f"num_redundant_experts so that the sum is a multiple of {ep_width}",
            "engine.eplb.num_redundant_experts",
            redundant,
        )


def check_moe_intermediate(shards: int, sizes: Iterable[tuple[str, int]]) -> None:
    """Refuse experts vLLM cannot slice: with expert parallelism off, each expert's
    intermediate size is split over the ``shards`` tensor ranks (tp·dp), and
    ``vllm/model_executor/layers/fused_moe/layer.py`` ``FusedMoE.__init__`` asserts it
    divides. ``sizes`` holds (layer kind, intermediate size)."""
    if shards <= 1:
        return
    for kind, n in sizes:
        if n % shards:
            raise _refuse(
                f"the experts of layer kind {kind!r} have intermediate size {n}, which the {shards} tensor "
                f"slices (tp x dp, expert parallelism off) do not divide; vLLM refuses to start; enable "
                f"parallel.enable_expert_parallel or use a width dividing {n}",
                "parallel.tp",
                shards,
            )


# Methods that read a checkpoint already quantized in their own format.
_PREQUANTIZED = {
    "awq": {"awq", "awq_marlin"},
    "awq_marlin": {"awq", "awq_marlin"},
    "gptq": {"gptq", "gptq_marlin"},
    "gptq_marlin": {"gptq", "gptq_marlin"},
    "compressed-tensors": {"compressed-tensors"},
}


def check_quantization(stated: str | None, checkpoint_method: str | None, known: bool) -> None:
    """Refuse a quantization method that conflicts with the checkpoint.

    ``vllm/config/model.py`` ``ModelConfig._verify_quantization``: when the checkpoint states
    a ``quantization_config``, a different stated method is an error (bar the Marlin kernels
    of the same format); AWQ, GPTQ and compressed-tensors need a checkpoint quantized in
    their format (``get_quant_config`` finds no config otherwise); bitsandbytes quantizes an
    unquantized checkpoint in flight but cannot re-quantize one in another format.

    The fp8 and fp4 families are read as the same architecture served from a checkpoint in
    that format (what the embedded deployments state), so they are not refused here.
    ``known`` is False when the model's config.json is not beside its graph: then nothing
    can be checked.
    """
    if not stated or not known:
        return
    ckpt = checkpoint_method
    if stated in _PREQUANTIZED and ckpt not in _PREQUANTIZED[stated]:
        raise _refuse(
            f"engine.quantization {stated!r} reads a checkpoint quantized in that format, but this checkpoint is "
            f"{'quantized with ' + repr(ckpt) if ckpt else 'not quantized'}; vLLM refuses to start; leave "
            f"quantization unset{' or state ' + repr(ckpt) if ckpt else ''}",
            "engine.quantization",
            stated,
        )
    if stated == "bitsandbytes" and ckpt not in (None, "bitsandbytes"):
        raise _refuse(
            f"engine.quantization 'bitsandbytes' cannot re-quantize a checkpoint already quantized with {ckpt!r}; "
            f"vLLM refuses to start; leave quantization unset to serve it as {ckpt!r}",
            "engine.quantization",
            stated,
        )


def derived_max_model_len(max_len: int | None, rope_scaling: Mapping[str, Any] | None) -> int | None:
    """The longest context vLLM derives from a model's config.

    ``vllm/config/model.py`` ``_get_and_verify_max_len``: the smallest length key the config
    states; under a RoPE scaling block whose type is not ``su``, ``longrope`` or ``llama3``,
    times its ``factor`` (a ``yarn`` block scales its ``original_max_position_embeddings``).
    None when the config states no length.
    """
    if max_len is None:
        return None
    derived: float = max_len
    if rope_scaling:
        kind = rope_scaling.get("rope_type", rope_scaling.get("type"))
        if kind not in ("su", "longrope", "llama3"):
            factor = rope_scaling.get("factor") or 1.0
            if kind == "yarn" and isinstance(rope_scaling.get("original_max_position_embeddings"), int):
                derived = rope_scaling["original_max_position_embeddings"]
            derived *= float(factor)
    return int(derived) if math.isfinite(derived) else None


def check_max_model_len(
    stated: int | None, derived: int | None, key: str | None, override: bool, setting: str = "engine.max_model_len"
) -> None:
    """Refuse a stated max_model_len above what the model's config supports
    (``_get_and_verify_max_len``), unless ``override`` (a RoPE scaling block stated in
    ``engine.hf_overrides``, which the derivation then uses). ``setting``: the name the
    caller gave it (a deployment's YAML key, or ``simulate``'s argument)."""
    if stated is None or derived is None or stated <= derived:
        return
    more = " the RoPE scaling stated in engine.hf_overrides gives" if override else ""
    raise _refuse(
        f"{setting} {stated} exceeds the {derived} tokens{more or ' the model supports'} "
        f"({key or 'max_position_embeddings'} in its config.json); vLLM refuses to start; lower "
        f"max_model_len, or state a RoPE scaling block in engine.hf_overrides",
        setting,
        stated,
    )


def check_scheduler_limits(max_batched: int, max_seqs: int, max_model_len: int, chunked: bool) -> None:
    """``vllm/config/scheduler.py`` ``SchedulerConfig.verify_max_model_len``: the token budget
    of a step must hold at least one token per sequence, and, with chunked prefill off,
    the longest request's whole prompt."""
    if max_batched < max_seqs:
        raise _refuse(
            f"engine.max_num_batched_tokens {max_batched} is below engine.max_num_seqs {max_seqs}; vLLM requires "
            f"at least one token per sequence a step holds; raise it to {max_seqs} or lower max_num_seqs",
            "engine.max_num_batched_tokens",
            max_batched,
        )
    if not chunked and max_model_len > 0 and max_batched < max_model_len:
        raise _refuse(
            f"engine.max_num_batched_tokens {max_batched} is below max_model_len {max_model_len} with chunked "
            f"prefill off, so a long prompt could never be scheduled; vLLM refuses to start; raise it, lower "
            f"max_model_len, or enable chunked prefill",
            "engine.max_num_batched_tokens",
            max_batched,
        )


def check_block_size(block: int, stated: bool) -> None:
    """A stated block size must split into the attention kernels' pages (a multiple of
    ``KERNEL_BLOCK_MULTIPLE`` tokens; ``vllm/v1/worker/gpu_model_runner.py`` picks a kernel
    block size among each backend's ``get_supported_kernel_block_sizes`` that divides it,
    and fails when none does)."""
    if stated and block % KERNEL_BLOCK_MULTIPLE:
        raise _refuse(
            f"engine.block_size {block} is not a multiple of {KERNEL_BLOCK_MULTIPLE}, so no CUDA attention backend "
            f"can page it; vLLM refuses to start; use 16, 32, 64 or another multiple of {KERNEL_BLOCK_MULTIPLE}",
            "engine.block_size",
            block,
        )


def check_cluster_size(gpus_per_node: int, nodes: int) -> None:
    """Refuse sizes no cluster has (they overflow the widths computed from them)."""
    if gpus_per_node > MAX_GPUS_PER_NODE:
        raise _refuse(
            f"cluster.gpus_per_node {gpus_per_node} is more GPUs than any node or NVLink domain holds (at most "
            f"{MAX_GPUS_PER_NODE}); state the GPUs of one node",
            "cluster.gpus_per_node",
            gpus_per_node,
        )
    if nodes > MAX_NODES:
        raise _refuse(
            f"cluster.nodes {nodes} is more than {MAX_NODES} nodes; state the nodes of one deployment",
            "cluster.nodes",
            nodes,
        )


def model_max_model_len(eng: Any, facts: Any) -> int:
    """The longest context the model supports as vLLM derives it (``derived_max_model_len``,
    with a RoPE scaling block stated in ``engine.hf_overrides`` taking the config's place);
    0 when the model's config is not known. What a later max_model_len override is held to."""
    if facts is None:
        return 0
    over = eng.hf_overrides
    rope = over["rope_scaling"] if over is not None and isinstance(over.get("rope_scaling"), dict) else None
    derived = derived_max_model_len(facts.max_len, rope if rope is not None else facts.rope_scaling)
    return derived or 0


def resolve_max_model_len(eng: Any, facts: Any, assumptions: Assumptions) -> int:
    """max_model_len as vLLM resolves it: the stated value, refused above what the model's
    config supports, else the model's own limit (recorded); 0 when neither is known."""
    rope = None
    over = eng.hf_overrides
    if over is not None and "rope_scaling" in over:
        rope = over["rope_scaling"]
        if not isinstance(rope, dict) or not isinstance(rope.get("factor", 1.0), int | float):
            raise _refuse(
                f"engine.hf_overrides.rope_scaling must be a mapping with a numeric factor, got {rope!r}",
                "engine.hf_overrides",
                over,
            )
    derived = None
    if facts is not None:
        derived = derived_max_model_len(facts.max_len, rope if rope is not None else facts.rope_scaling)
    check_max_model_len(eng.max_model_len, derived, facts.max_len_key if facts else None, rope is not None)
    if eng.max_model_len is not None:
        return int(eng.max_model_len)
    if derived is not None:
        assumptions.add(
            "max_model_len",
            derived,
            f"unstated; vLLM takes the model's own limit ({facts.max_len_key} with its RoPE scaling, config.json)",
        )
        return derived
    assumptions.add("max_model_len", 0, "unstated, and the model's config.json is not beside its graph")
    return 0

"""Which sparse-MLA (DeepSeek sparse attention, "DSA") backend vLLM v0.31.0 picks, and the
KV page layout it allocates as a result."""

from __future__ import annotations

from dataclasses import dataclass

from latencykernel.errors import RefusedError

__all__ = ["SparseBackend", "sparse_mla_backend", "PRE_HOPPER_PARTS"]

# Parts older than Hopper: no sparse-MLA kernel runs on them.
PRE_HOPPER_PARTS = ("a100-80", "a100-sxm", "l40s")


@dataclass(frozen=True)
class SparseBackend:
    name: str
    layout: str  # the cache layout the backend allocates ("fp8_ds_mla", or the stated dtype)


def _quantized(cache: str) -> bool:
    return cache.startswith("fp8") or cache.startswith("nvfp4") or cache.endswith("per_token_head")


def sparse_mla_backend(
    *, chip: str, cache: str | None, heads_per_rank: int, sm100: bool, tp: int, dcp: int, pcp: int, combine: str
) -> SparseBackend:
    """The first backend, in vLLM's priority order for the part, that accepts the cache
    dtype under this parallelism; refuses when none does.

    Hopper: FLASH_ATTN_MLA_SPARSE, FLASHMLA_SPARSE, FLASHINFER_MLA_SPARSE_SM90.
    SM100:  FLASHINFER_MLA_SPARSE then FLASHMLA_SPARSE when the cache is quantized or a rank
            holds at most 16 heads; FLASHMLA_SPARSE first otherwise.
    FlashMLA-sparse allocates the packed fp8_ds_mla page (656 B per token per layer) for
    any quantized cache other than nvfp4_ds_mla.
    """
    # KNOWN DIVERGENCE D7: "auto" taken as 16-bit, FlashInfer >= 0.6.18 assumed, no SM120 part.
    c = cache or "auto"
    if chip.lower() in PRE_HOPPER_PARTS:
        raise RefusedError(
            f"hardware {chip!r} predates Hopper, and vLLM has no sparse-MLA attention backend for it; "
            f"serve this model on h100 or newer",
            setting="cluster.hardware",
            value=chip,
        )

    def fa_sparse() -> bool:
        return dcp <= 1 and c in ("auto", "float16", "bfloat16")

    def flashmla_sparse() -> bool:
        if not (c in ("auto", "bfloat16", "fp8_ds_mla", "fp8") or (sm100 and c == "nvfp4_ds_mla")):
            return False
        if dcp > 1:
            if not _quantized(c) or combine != "ag_rs":
                return False
            layout = "nvfp4_ds_mla" if c == "nvfp4_ds_mla" else "fp8_ds_mla"
            if pcp > 1 and layout != "fp8_ds_mla":
                return False
            if pcp <= 1 and heads_per_rank >= 32:
                return False
            gathered = heads_per_rank * dcp if pcp <= 1 else (heads_per_rank * tp if dcp > pcp else heads_per_rank)
            pad = lambda h: 64 if h <= 64 else 128  # noqa: E731
            if pad(heads_per_rank) != pad(gathered):
                return False
        return True

    def flashinfer_sm100() -> bool:
        return not (pcp > 1 and dcp > 1) and c in ("auto", "float16", "bfloat16", "fp8", "fp8_e4m3")

    def flashinfer_sm90() -> bool:
        return dcp <= 1 and c in ("auto", "bfloat16", "fp8", "fp8_e4m3")

    if sm100:
        if _quantized(c) or heads_per_rank <= 16:
            order = [("FLASHINFER_MLA_SPARSE", flashinfer_sm100), ("FLASHMLA_SPARSE", flashmla_sparse)]
        else:
            order = [("FLASHMLA_SPARSE", flashmla_sparse), ("FLASHINFER_MLA_SPARSE", flashinfer_sm100)]
    else:
        order = [
            ("FLASH_ATTN_MLA_SPARSE", fa_sparse),
            ("FLASHMLA_SPARSE", flashmla_sparse),
            ("FLASHINFER_MLA_SPARSE_SM90", flashinfer_sm90),
        ]
    for name, accepts in order:
        if accepts():
            layout = c
            if name == "FLASHMLA_SPARSE" and _quantized(c) and c != "nvfp4_ds_mla":
                layout = "fp8_ds_mla"
            return SparseBackend(name, layout)
    raise RefusedError(
        f"no vLLM sparse-MLA backend serves engine.cache_dtype {cache!r} on {chip} with tp {tp}, dcp {dcp}, "
        f"pcp {pcp}; use cache_dtype fp8 or bfloat16, or drop decode-context parallelism",
        setting="engine.cache_dtype",
        value=cache,
    )

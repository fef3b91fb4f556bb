"""Data types: bytes per element, the dtype weights are served in, which peak computes
them, and how wide a KV cache element is. vLLM v0.31.0 rules."""

from __future__ import annotations

from latencykernel.errors import RefusedError

__all__ = [
    "DTYPE_BYTES",
    "ACTIVATION_BYTES",
    "served_weight_dtype",
    "dtype_fit",
    "cache_dtype_bytes",
    "PRICED_CACHE_DTYPES",
    "UNPRICED_CACHE_DTYPES",
    "MAMBA_CACHE_DTYPES",
]

# Stored bytes per weight element, the 4-bit float formats' block scales included
# (divergences V15): NVFP4 keeps one fp8 (E4M3) scale per 16 elements, 0.5 + 1/16 bytes;
# MXFP4 one E8M0 scale per 32, 0.5 + 1/32 (OCP Microscaling v1.0; vLLM allocates the
# scale tensors beside the packed weights, ``ModelOptNvFp4LinearMethod.create_weights`` and
# ``Mxfp4MoEMethod.create_weights``), so they are read and held like the payload. NVFP4's
# one fp32 scale per tensor is left out (bytes per tensor, not per element). int4 stays
# the payload: its group size is the checkpoint's. The Go kernel (spec 8.4) counts 0.5.
# Evidence (InferenceX, closed form, after fix 21): fit 7.01 / 11.46 / 20.42 -> 6.85 /
# 11.17 / 20.10 %, evaluation 8.36 / 12.76 / 24.25 -> 8.31 / 12.77 / 23.86 % (TPOT shape /
# TPOT MAPE / TTFT MAPE); Kimi-K2.5 B200 fp4 TP4 holds 40,924 KV blocks instead of 69,414,
# about 80 requests of an 8k1k sweep, where its measured TPOT stops rising near 77.
DTYPE_BYTES: dict[str, float] = {
    "fp32": 4,
    "bf16": 2,
    "fp16": 2,
    "fp8": 1,
    "int8": 1,
    "nvfp4": 0.5 + 1 / 16,
    "mxfp4": 0.5 + 1 / 32,
    "int4": 0.5,
}
# Activations, collectives and norms move bf16 whatever the weights are stored in.
ACTIVATION_BYTES = 2

# The methods whose served width is known (blis-kernel-spec §8.4); any other is refused
# rather than priced at a guessed width (e.g. experts_int8 would halve the expert reads).
_FP8_QUANT = {"fp8", "ptpc_fp8", "fbgemm_fp8", "modelopt"}
_FP4_QUANT = {"modelopt_fp4", "nvfp4"}
_KEEP_CHECKPOINT = {"bitsandbytes", "awq", "awq_marlin", "gptq", "gptq_marlin", "compressed-tensors"}


def served_weight_dtype(checkpoint: str, quantization: str | None) -> str:
    """The dtype a checkpoint's weights are read in once ``quantization`` is applied.

    (none) -> checkpoint; fp8-family -> fp8; modelopt_fp4/nvfp4 -> nvfp4; mxfp4 -> mxfp4;
    formats that keep the checkpoint's own storage (awq, gptq, compressed-tensors, …) ->
    checkpoint. Anything else is refused.
    """
    if not quantization:
        return checkpoint
    if quantization in _FP8_QUANT:
        return "fp8"
    if quantization in _FP4_QUANT:
        return "nvfp4"
    if quantization == "mxfp4":
        return "mxfp4"
    if quantization in _KEEP_CHECKPOINT:
        return checkpoint
    accepted = sorted(_FP8_QUANT | _FP4_QUANT | {"mxfp4"} | _KEEP_CHECKPOINT)
    raise RefusedError(
        f"engine.quantization {quantization!r} is not a method this kernel can price; "
        f"use one of {', '.join(accepted)}, or leave it unset to serve the checkpoint as stored",
        setting="engine.quantization",
        value=quantization,
    )


def dtype_fit(dtype: str, bf16_tflops: float, fp8_tflops: float, nvfp4_tflops: float) -> tuple[str, float]:
    """(coefficient suffix, dense peak in TFLOP/s) that computes weights of ``dtype``.

    nvfp4/mxfp4 -> nvfp4 where the chip has a native fp4 rate, else bf16; fp8 -> fp8,
    else bf16; int8 -> fp8; int4 (W4A16) and everything else -> bf16.

    A 4-bit float format on a chip without fp4 tensor cores (Hopper) runs as W4A16: vLLM
    dequantizes the weights and multiplies bf16 activations (NVFP4 through Marlin FP4;
    MXFP4 through ``Mxfp4Backend`` SM90_FI_MXFP4_BF16, TRITON or MARLIN, all bf16
    activations, vllm/model_executor/layers/quantization/mxfp4.py ``get_mxfp4_backend``),
    so it computes at the bf16 rate, as int4 does. The Go kernel (spec 8.4) falls back to
    fp8 instead (divergences V13). Evidence (InferenceX fit half, closed form): GPT-OSS-120B
    on H200, fp4 checkpoint, TPOT MAE 13.4 -> 7.6 % (signed -10.5 -> -4.9 %), TTFT 38.0 ->
    36.6 %; on H100 TPOT 2.2 -> 10.4 % (signed -0.3 -> +10.6 %); all fit points TPOT MAPE
    12.08 -> 11.95 %, TTFT 24.39 -> 24.18 %.
    """
    if dtype in ("nvfp4", "mxfp4"):
        if nvfp4_tflops > 0:
            return "nvfp4", nvfp4_tflops
        return "bf16", bf16_tflops
    if dtype == "fp8":
        return ("fp8", fp8_tflops) if fp8_tflops > 0 else ("bf16", bf16_tflops)
    if dtype == "int8":
        return "fp8", fp8_tflops
    return "bf16", bf16_tflops


PRICED_CACHE_DTYPES = (
    "",
    "auto",
    "float16",
    "bfloat16",
    "fp8",
    "fp8_e4m3",
    "fp8_e5m2",
    "fp8_inc",
    "fp8_ds_mla",
    "nvfp4_ds_mla",
    "nvfp4",
    "nvfp4_4over6",
)
# KNOWN DIVERGENCE D5: these vLLM KV formats are not sized (their page geometry is unstated).
UNPRICED_CACHE_DTYPES = (
    "turboquant_k8v4",
    "turboquant_4bit_nc",
    "turboquant_k3v4_nc",
    "turboquant_3bit_nc",
    "int4_per_token_head",
    "int8_per_token_head",
    "fp8_per_token_head",
)
MAMBA_CACHE_DTYPES = ("", "auto", "float32", "float16", "bfloat16")


def cache_dtype_bytes(declared: str | None, fallback_dtype: str) -> float:
    """Bytes per cached element for a declared ``cache_dtype``.

    ""/auto follows the compute dtype (bf16 for weights narrower than 2 bytes, not their
    storage width); fp8 family 1; bfloat16/float16 2; nvfp4 0.5 + 1/16 (an fp8 scale per
    16 elements); nvfp4_ds_mla 0.5 (its 352-byte cell is applied separately).
    """
    d = declared or ""
    if d in ("", "auto"):
        b = DTYPE_BYTES.get(fallback_dtype, 2)
        return 2 if b < 2 else b
    if d in ("fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc", "fp8_ds_mla"):
        return 1
    if d in ("bfloat16", "float16"):
        return 2
    if d in ("nvfp4", "nvfp4_4over6"):
        return 0.5 + 1 / 16
    if d == "nvfp4_ds_mla":
        return 0.5
    raise RefusedError(
        f"engine.cache_dtype {declared!r} is not a KV cache dtype vLLM v0.31.0 accepts; use one of "
        f"{', '.join(x for x in PRICED_CACHE_DTYPES if x)}",
        setting="engine.cache_dtype",
        value=declared,
    )

"""Typed access to a Hugging Face ``config.json`` for the graph deriver.

A multimodal checkpoint nests its text decoder under ``text_config`` (Kimi-K2.5,
Qwen3.5, MiniMax-M3); :class:`ConfigView` reads a key from the text decoder first and falls back
to the top level, so one family handler serves both layouts.  Keys whose name starts with
``_`` (``_source``, ``_comment``, ``_name_or_path``) are never read.

Every missing or ill-typed field raises :class:`~latencykernel.errors.DocumentError`
naming the key, so a half-transcribed config fails loudly instead of deriving a wrong graph.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from latencykernel.errors import DocumentError

__all__ = ["ConfigView", "weight_dtypes", "TORCH_DTYPES"]

# torch dtype spelling in config.json -> catalog dtype
TORCH_DTYPES: dict[str, str] = {
    "bfloat16": "bf16",
    "float16": "fp16",
    "half": "fp16",
    "float32": "fp32",
    "float": "fp32",
}

_MISSING = object()


class ConfigView:
    """Read-only view of a config.json dict, text decoder first."""

    def __init__(self, raw: Mapping[str, Any], *, file: str = "config.json") -> None:
        if not isinstance(raw, Mapping) or not raw:
            raise DocumentError("config.json must be a non-empty JSON object", file=file, value=raw)
        self.raw = raw
        self.file = file
        text = raw.get("text_config")
        if text is not None and not isinstance(text, Mapping):
            raise DocumentError(
                f"config.json key 'text_config' must be an object (got {text!r})",
                file=file,
                key="text_config",
                value=text,
            )
        self.text: Mapping[str, Any] = text if isinstance(text, Mapping) else {}

    # -- lookup -------------------------------------------------------------------------
    def _lookup(self, key: str) -> Any:
        if key in self.text:
            return self.text[key]
        if key in self.raw:
            return self.raw[key]
        return _MISSING

    def has(self, key: str) -> bool:
        """True when ``key`` is present and not null."""
        v = self._lookup(key)
        return v is not _MISSING and v is not None

    def get(self, key: str, default: Any = None) -> Any:
        v = self._lookup(key)
        return default if v is _MISSING or v is None else v

    def where(self, key: str) -> str:
        return f"text_config.{key}" if key in self.text else key

    def _bad(self, key: str, what: str, value: Any) -> DocumentError:
        return DocumentError(
            f"config.json key {self.where(key)!r} {what}" + ("" if value is None else f" (got {value!r})"),
            file=self.file,
            key=self.where(key),
            value=value,
        )

    def count(self, key: str, default: int | None = None) -> int:
        """A positive-or-zero integer field; required unless ``default`` is given."""
        v = self._lookup(key)
        if v is _MISSING or v is None:
            if default is not None:
                return default
            raise DocumentError(
                f"config.json is missing required key {key!r}",
                file=self.file,
                key=key,
            )
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            # integral floats ("hidden_size": 4096.0) are accepted
            if isinstance(v, float) and v.is_integer() and v >= 0:
                return int(v)
            raise self._bad(key, "must be a non-negative integer", v)
        return v

    def pos(self, key: str, default: int | None = None) -> int:
        """A strictly positive integer field."""
        v = self.count(key, default)
        if v <= 0:
            raise self._bad(key, "must be a positive integer", v)
        return v

    def first_int(self, keys: tuple[str, ...], default: int | None = None) -> int:
        """The first present key of ``keys`` (aliases such as n_embd / hidden_size)."""
        for k in keys:
            if self.has(k):
                return self.pos(k)
        if default is not None:
            return default
        raise DocumentError(
            f"config.json is missing required key {keys[0]!r} (or one of {list(keys[1:])})",
            file=self.file,
            key=keys[0],
        )

    def flag(self, key: str, default: bool) -> bool:
        v = self._lookup(key)
        if v is _MISSING or v is None:
            return default
        if not isinstance(v, bool):
            raise self._bad(key, "must be true or false", v)
        return v

    def seq(self, key: str) -> list[Any] | None:
        v = self._lookup(key)
        if v is _MISSING or v is None:
            return None
        if not isinstance(v, list):
            raise self._bad(key, "must be a list", v)
        return v

    def mapping(self, key: str) -> Mapping[str, Any] | None:
        v = self._lookup(key)
        if v is _MISSING or v is None:
            return None
        if not isinstance(v, Mapping):
            raise self._bad(key, "must be an object", v)
        return v

    # -- identity -----------------------------------------------------------------------
    @property
    def architecture(self) -> str:
        archs = self.raw.get("architectures")
        if not isinstance(archs, list) or not archs or not isinstance(archs[0], str):
            raise DocumentError(
                "config.json has no 'architectures' list naming the model class",
                file=self.file,
                key="architectures",
                value=archs,
            )
        return archs[0]

    @property
    def model_type(self) -> str:
        v = self.raw.get("model_type")
        return v if isinstance(v, str) else ""

    @property
    def text_model_type(self) -> str:
        v = self.text.get("model_type") if self.text else None
        return v if isinstance(v, str) else self.model_type

    @property
    def is_multimodal(self) -> bool:
        """The vendor config carries an encoder the graph does not price."""
        return any(k in self.raw for k in ("vision_config", "audio_config", "vision_tower_config"))

    # -- common model facts -------------------------------------------------------------
    @property
    def hidden(self) -> int:
        return self.first_int(("hidden_size", "n_embd", "d_model"))

    @property
    def vocab(self) -> int:
        return self.pos("vocab_size")

    @property
    def layers(self) -> int:
        return self.first_int(("num_hidden_layers", "n_layer", "num_layers"))

    @property
    def n_q(self) -> int:
        return self.first_int(("num_attention_heads", "n_head"))

    @property
    def n_kv(self) -> int:
        n_kv = self.get("num_key_value_heads")
        if n_kv is None:
            return self.n_q
        kv, q = self.pos("num_key_value_heads"), self.n_q
        if kv <= q and q % kv:  # (more KV than query heads: the graph check names both)
            # transformers and vLLM group query heads evenly over KV heads (GQA)
            raise self._bad(
                "num_key_value_heads", f"must divide num_attention_heads {q} (query heads share KV heads evenly)", kv
            )
        return kv

    def check_sizes(self, max_layers: int) -> None:
        """Refuse sizes no model has, and numbers that are not usable, before a handler
        builds anything: a layer count above ``max_layers`` (2**63 would never finish),
        a context length that is not a positive integer, a RoPE base that is not a
        positive finite number."""
        layers = self.layers
        if layers > max_layers:
            raise self._bad("num_hidden_layers", f"is more layers than any model has (at most {max_layers})", layers)
        for key in ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length"):
            if self._lookup(key) is not _MISSING and self.get(key) is not None:
                self.pos(key)
        for key in ("rope_theta", "rope_scaling_factor"):
            v = self.get(key)
            if v is None:
                continue
            if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v <= 0:
                raise self._bad(key, "must be a positive finite number", v)
        for key in ("hidden_size", "vocab_size", "intermediate_size", "num_attention_heads"):
            v = self.get(key)
            if isinstance(v, int) and not isinstance(v, bool) and v > 1 << 24:
                raise self._bad(key, f"is larger than any model's (at most {1 << 24})", v)

    @property
    def head_dim(self) -> int:
        if self.has("head_dim"):
            return self.pos("head_dim")
        hidden, n_q = self.hidden, self.n_q
        if hidden % n_q:
            raise DocumentError(
                f"config.json states no 'head_dim', and hidden_size {hidden} is not a multiple of the "
                f"{n_q} attention heads, so the head width cannot be derived; state head_dim",
                file=self.file,
                key="head_dim",
            )
        return hidden // n_q

    @property
    def tie_word_embeddings(self) -> bool:
        # transformers' PretrainedConfig default is True; every LLM config states it
        # except GPT-2, whose head is tied.
        v = self.raw.get("tie_word_embeddings")
        if v is None and self.text:
            v = self.text.get("tie_word_embeddings")
        if v is None:
            return True
        if not isinstance(v, bool):
            raise self._bad("tie_word_embeddings", "must be true or false", v)
        return v

    @property
    def torch_dtype(self) -> str | None:
        for key in ("torch_dtype", "dtype"):
            v = self._lookup(key)
            if isinstance(v, str):
                return v
            if v is not None and v is not _MISSING:
                raise self._bad(key, "must be a dtype name such as 'bfloat16'", v)
        return None


def _compressed_tensors_dtype(q: Mapping[str, Any], file: str) -> str:
    groups = q.get("config_groups")
    if not isinstance(groups, Mapping) or not groups:
        raise DocumentError(
            "compressed-tensors quantization_config has no config_groups",
            file=file,
            key="quantization_config.config_groups",
        )
    found: set[str] = set()
    for g in groups.values():
        w = g.get("weights") if isinstance(g, Mapping) else None
        if not isinstance(w, Mapping):
            continue
        bits, typ = w.get("num_bits"), w.get("type")
        fmt = str(q.get("format", ""))
        if typ == "int" and bits == 4:
            found.add("int4")
        elif typ == "int" and bits == 8:
            found.add("int8")
        elif typ == "float" and bits == 8:
            found.add("fp8")
        elif typ == "float" and bits == 4:
            found.add("nvfp4" if "nvfp4" in fmt or w.get("group_size") == 16 else "mxfp4")
        else:
            raise DocumentError(
                f"compressed-tensors weights of {bits} bits, type {typ!r} are not a catalog dtype",
                file=file,
                key="quantization_config.config_groups",
                value=dict(w),
            )
    if len(found) != 1:
        raise DocumentError(
            f"compressed-tensors config_groups mix weight formats {sorted(found)}",
            file=file,
            key="quantization_config.config_groups",
        )
    return found.pop()


_QUANT_METHODS = ("fp8", "fbgemm_fp8", "mxfp4", "compressed-tensors", "modelopt")


def weight_dtypes(c: ConfigView) -> tuple[str, str | None]:
    """``(global weight_dtype, expert override or None)`` from the config.

    fp8 (block or per-tensor)      -> fp8 everywhere; DeepSeek-V4's ``expert_dtype: fp4``
                                      (e2m1 with ue8m0 group scales, i.e. MXFP4) on experts
    mxfp4 (gpt-oss)                -> experts mxfp4, everything else the torch dtype
    compressed-tensors             -> the format of its weight groups (int4 for Kimi-K2.5)
    modelopt                       -> fp8 or nvfp4 per quant_algo
    no quantization_config         -> the torch dtype (bf16 when the config states none)
    """
    base = TORCH_DTYPES.get((c.torch_dtype or "bfloat16").lower(), None)
    if base is None:
        raise DocumentError(
            f"config.json torch_dtype {c.torch_dtype!r} is not one of {sorted(TORCH_DTYPES)}",
            file=c.file,
            key="torch_dtype",
            value=c.torch_dtype,
        )
    q = c.mapping("quantization_config")
    expert: str | None = None
    expert_dtype = c.get("expert_dtype")
    if expert_dtype is not None:
        if expert_dtype in ("fp4", "mxfp4"):
            expert = "mxfp4"
        elif expert_dtype in ("fp8", "nvfp4", "int4", "bf16"):
            expert = str(expert_dtype)
        else:
            raise c._bad("expert_dtype", "is not a known expert weight format", expert_dtype)
    if q is None:
        return base, expert
    method = q.get("quant_method")
    if method in ("fp8", "fbgemm_fp8"):
        return "fp8", expert
    if method == "mxfp4":
        return base, "mxfp4"
    if method == "compressed-tensors":
        return _compressed_tensors_dtype(q, c.file), expert
    if method == "modelopt":
        algo = str(q.get("quant_algo", "")).upper()
        if algo == "FP8":
            return "fp8", expert
        if algo == "NVFP4":
            return "nvfp4", expert
        raise DocumentError(
            f"modelopt quant_algo {algo!r} is not supported (FP8, NVFP4)",
            file=c.file,
            key="quantization_config.quant_algo",
            value=algo,
        )
    raise DocumentError(
        f"quantization_config.quant_method {method!r} is not supported; supported: {', '.join(_QUANT_METHODS)}",
        file=c.file,
        key="quantization_config.quant_method",
        value=method,
    )

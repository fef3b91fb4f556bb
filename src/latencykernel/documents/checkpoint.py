"""What a model's checkpoint states that its layer graph does not carry: the context length
its positions were trained for, its RoPE scaling and its quantization method.

A catalog model folder holds the Hugging Face ``config.json`` its ``graph.yaml`` was derived
from (``derived_from.path``, format ``hf_config_json``). The graph keeps only what prices a
step; the engine's start-up checks also need these three facts, so they are read from that
file beside the graph, once, when the documents are loaded (``inputs.open_inputs``,
``inputs.build_inputs``). A model without that file (a graph written by hand) has none of
them, and the checks that need them are skipped and recorded as assumptions.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from latencykernel.errors import DocumentError

__all__ = ["CheckpointFacts", "load_checkpoint_facts", "checkpoint_facts_from_config"]

# vllm/config/model.py ``_get_and_verify_max_len`` reads the first of these keys the text
# config states and takes the smallest.
_LENGTH_KEYS = (
    "max_position_embeddings",
    "n_positions",
    "max_seq_len",
    "seq_length",
    "model_max_length",
    "max_sequence_length",
    "max_seq_length",
    "seq_len",
)
_MAX_BYTES = 16 << 20  # a config.json is a few kilobytes; anything this large is not one


@dataclass(frozen=True)
class CheckpointFacts:
    """``max_len_key``/``max_len``: the smallest length key the config states (None when it
    states none); ``rope_scaling``: its RoPE scaling block (None when absent);
    ``quant_method``: ``quantization_config.quant_method`` (None for an unquantized
    checkpoint); ``file``: where they were read."""

    max_len_key: str | None
    max_len: int | None
    rope_scaling: dict[str, Any] | None
    quant_method: str | None
    file: str


def _bad(file: str, key: str, value: Any, text: str) -> DocumentError:
    return DocumentError(f"{file}: {key}: {text}", file=file, key=key, value=value)


def checkpoint_facts_from_config(cfg: Any, file: str) -> CheckpointFacts:
    """The facts of one parsed ``config.json`` (the text config of a multimodal one)."""
    if not isinstance(cfg, dict):
        raise _bad(file, "(root)", None, "a config.json must be a JSON object")
    text = cfg.get("text_config")
    src: dict[str, Any] = text if isinstance(text, dict) else cfg
    key, length = None, None
    for k in _LENGTH_KEYS:
        v = src.get(k, cfg.get(k))
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise _bad(file, k, v, f"must be a positive whole number of tokens, got {v!r}")
        if length is None or v < length:
            key, length = k, v
    rope = src.get("rope_scaling", cfg.get("rope_scaling"))
    if rope is not None and not isinstance(rope, dict):
        raise _bad(file, "rope_scaling", rope, "must be an object (or null)")
    if isinstance(rope, dict):
        f = rope.get("factor")
        if f is not None and (isinstance(f, bool) or not isinstance(f, int | float) or not math.isfinite(f) or f <= 0):
            raise _bad(file, "rope_scaling.factor", f, f"must be a positive finite number, got {f!r}")
    q = src.get("quantization_config", cfg.get("quantization_config"))
    method = q.get("quant_method") if isinstance(q, dict) else None
    return CheckpointFacts(key, length, dict(rope) if isinstance(rope, dict) else None, method, file)


def load_checkpoint_facts(path: str | os.PathLike[str]) -> CheckpointFacts:
    """Read ``path`` (a ``config.json``); ``DocumentError`` if it is not a readable JSON object."""
    p = Path(path)
    f = str(p)
    try:
        if p.stat().st_size > _MAX_BYTES:
            raise _bad(f, "(file)", None, f"is larger than {_MAX_BYTES >> 20} MiB; it is not a model config")
        data = json.loads(p.read_text(encoding="utf-8"))
    except DocumentError:
        raise
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as e:
        raise DocumentError(f"{f}: cannot read the checkpoint's config: {e}", file=f) from None
    return checkpoint_facts_from_config(data, f)

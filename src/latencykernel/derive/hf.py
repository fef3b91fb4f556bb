"""Hugging Face ``config.json`` -> BLIS ``graph.yaml`` (ModelGraph) document.

The Python counterpart of the catalog's ``scripts/derive_graph.py`` (deriver version 1):
a handler per model family, picked from ``architectures[0]`` (then ``model_type``), builds
every decoder layer as a linear chain of nodes; this module deduplicates the layers into
kinds, factors the layer order into ``prologue + pattern x repeat + epilogue``, and adds
the head, the MTP speculator and the derivation record.

    doc = derive_graph(json.loads(raw), name="llama-3.1-8b-instruct",
                       sha256=hashlib.sha256(raw).hexdigest())
    print(render_graph_yaml(doc, "models/llama-3.1-8b-instruct/config.json"))

The result is a plain dict ready for ``yaml.safe_dump(sort_keys=False)``, already
validated as a ``documents.graph.ModelGraph``; the same input always gives the same output.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from latencykernel.derive.config_view import ConfigView, weight_dtypes
from latencykernel.derive.families import (
    dense_gqa,
    gpt2,
    gpt_oss,
    minimax_m2,
    minimax_m3,
    moe_gqa,
    qwen_hybrid,
)
from latencykernel.derive.families_mla import deepseek_mla, deepseek_v4
from latencykernel.derive.handler_io import Derived, Handler, HandlerInput, Layer
from latencykernel.derive.nodes import gemm, norm
from latencykernel.documents.common import validate
from latencykernel.documents.graph import ModelGraph
from latencykernel.errors import DocumentError

__all__ = [
    "DERIVER_VERSION",
    "ARCHITECTURES",
    "SUPPORTED_ARCHITECTURES",
    "derive_graph",
    "derive_graph_from_bytes",
    "derive_graph_from_file",
    "factor_stack",
    "render_graph_yaml",
]

DERIVER_VERSION = 1

# architectures[0] -> (family, handler)
ARCHITECTURES: dict[str, tuple[str, Handler]] = {
    "LlamaForCausalLM": ("llama", dense_gqa),
    "MistralForCausalLM": ("mistral", dense_gqa),
    "Qwen2ForCausalLM": ("qwen2", dense_gqa),
    "Qwen3ForCausalLM": ("qwen3", dense_gqa),
    "MixtralForCausalLM": ("mixtral", moe_gqa),
    "GraniteMoeForCausalLM": ("granitemoe", moe_gqa),
    "Qwen2MoeForCausalLM": ("qwen2_moe", moe_gqa),
    "Qwen3MoeForCausalLM": ("qwen3_moe", moe_gqa),
    "Qwen3NextForCausalLM": ("qwen3_next", qwen_hybrid),
    "Qwen3_5ForCausalLM": ("qwen3_5", qwen_hybrid),
    "Qwen3_5ForConditionalGeneration": ("qwen3_5", qwen_hybrid),
    "Qwen3_5MoeForCausalLM": ("qwen3_5_moe", qwen_hybrid),
    "Qwen3_5MoeForConditionalGeneration": ("qwen3_5_moe", qwen_hybrid),
    "GptOssForCausalLM": ("gpt_oss", gpt_oss),
    "MiniMaxM2ForCausalLM": ("minimax_m2", minimax_m2),
    "MiniMaxM3SparseForCausalLM": ("minimax_m3", minimax_m3),
    "MiniMaxM3SparseForConditionalGeneration": ("minimax_m3", minimax_m3),
    "GPT2LMHeadModel": ("gpt2", gpt2),
    "DeepseekV2ForCausalLM": ("deepseek_v2", deepseek_mla),
    "DeepseekV3ForCausalLM": ("deepseek_v3", deepseek_mla),
    "DeepseekV32ForCausalLM": ("deepseek_v32", deepseek_mla),
    "KimiK25ForConditionalGeneration": ("kimi_k25", deepseek_mla),
    "GlmMoeDsaForCausalLM": ("glm_moe_dsa", deepseek_mla),
    "DeepseekV4ForCausalLM": ("deepseek_v4", deepseek_v4),
}

# model_type -> architecture, for configs whose architectures[0] is a wrapper or alias
_MODEL_TYPES: dict[str, str] = {
    "llama": "LlamaForCausalLM",
    "mistral": "MistralForCausalLM",
    "qwen2": "Qwen2ForCausalLM",
    "qwen3": "Qwen3ForCausalLM",
    "mixtral": "MixtralForCausalLM",
    "granitemoe": "GraniteMoeForCausalLM",
    "qwen3_moe": "Qwen3MoeForCausalLM",
    "qwen3_next": "Qwen3NextForCausalLM",
    "qwen3_5": "Qwen3_5ForConditionalGeneration",
    "qwen3_5_moe": "Qwen3_5MoeForConditionalGeneration",
    "gpt_oss": "GptOssForCausalLM",
    "minimax_m2": "MiniMaxM2ForCausalLM",
    "minimax_m3_vl": "MiniMaxM3SparseForConditionalGeneration",
    "gpt2": "GPT2LMHeadModel",
    "deepseek_v2": "DeepseekV2ForCausalLM",
    "deepseek_v3": "DeepseekV3ForCausalLM",
    "kimi_k2": "DeepseekV3ForCausalLM",
    "kimi_k25": "KimiK25ForConditionalGeneration",
    "glm_moe_dsa": "GlmMoeDsaForCausalLM",
    "deepseek_v4": "DeepseekV4ForCausalLM",
}

SUPPORTED_ARCHITECTURES: tuple[str, ...] = tuple(sorted(ARCHITECTURES))


def _handler(c: ConfigView) -> Handler:
    arch = c.architecture
    if arch in ARCHITECTURES:
        return ARCHITECTURES[arch][1]
    alias = _MODEL_TYPES.get(c.model_type)
    if alias is not None:
        return ARCHITECTURES[alias][1]
    raise DocumentError(
        f"config.json architecture {arch!r} (model_type {c.model_type!r}) is not supported "
        f"by the graph deriver; supported architectures: {', '.join(SUPPORTED_ARCHITECTURES)}",
        file=c.file,
        key="architectures",
        value=arch,
    )


# -- stack factoring --------------------------------------------------------------------


MAX_LAYERS = 10_000
"""The most decoder layers a config may state: the deepest published models have a few
hundred; a count beyond this is a typo (or 2**63) the deriver refuses rather than build."""


def factor_stack(ids: Sequence[str]) -> dict[str, Any]:
    """Write a layer order as ``prologue + pattern x repeat + epilogue``.

    Picks the factoring that lists the fewest ids (len(prologue) + len(pattern) +
    len(epilogue)), with a pattern repeated at least twice; ties go to the shorter
    prologue, then the shorter pattern.  With no repetition every layer goes in the
    prologue and repeat is 0 (catalog-schemas §3.2).  Empty keys are left out.

    For a pattern length L the order is periodic with period L exactly over runs where
    ``ids[i] == ids[i + L]``; a run of k such positions from s repeats the unit at s
    ``r = (k + L) // L`` times, and starting anywhere later in the run repeats it no more
    often. The listed cost is n + L - r·L, so each L is one vectorised pass, and lengths
    no shorter than the best cost found so far cannot win: in practice a handful of
    passes, at worst n/2 of them.
    """
    n = len(ids)
    if n == 0:
        raise DocumentError("a graph needs at least one decoder layer", key="stack")
    import numpy as np  # the deriver is a tool; numpy stays off the import path of pricing

    codes: dict[str, int] = {}
    a = np.fromiter((codes.setdefault(x, len(codes)) for x in ids), dtype=np.int64, count=n)
    best: tuple[int, int, int] = (n, 0, 0)  # (cost, p, L): no repetition costs n
    best_r = 0
    length = 1
    while length <= n // 2 and length < best[0]:
        m = np.concatenate(([0], (a[:-length] == a[length:]).astype(np.int8), [0]))
        d = np.diff(m)
        starts, ends = np.flatnonzero(d == 1), np.flatnonzero(d == -1)
        runs = ends - starts
        ok = runs >= length
        if ok.any():
            r = (runs[ok] + length) // length
            cost = n + length - r * length
            p = starts[ok]
            order = np.lexsort((p, cost))
            i = int(order[0])
            key = (int(cost[i]), int(p[i]), length)
            if key < best:
                best, best_r = key, int(r[i])
        length += 1
    if best_r < 2 or best[0] >= n:
        return {"prologue": list(ids), "repeat": 0}
    _, p0, length = best
    e_start = p0 + best_r * length
    stack: dict[str, Any] = {}
    if p0:
        stack["prologue"] = list(ids[:p0])
    stack["pattern"] = list(ids[p0 : p0 + length])
    stack["repeat"] = best_r
    if e_start < n:
        stack["epilogue"] = list(ids[e_start:])
    return stack


# -- assembly -----------------------------------------------------------------------------


def _chain(nodes: list[dict[str, Any]]) -> list[list[int]]:
    return [[i, i + 1] for i in range(len(nodes) - 1)]


def _kinds(layers: list[Layer], extra: list[Layer]) -> list[dict[str, Any]]:
    """One kind per distinct layer id, in first-seen order (the speculator's extra kinds
    last); two layers sharing an id must share their nodes."""
    seen: dict[str, list[dict[str, Any]]] = {}
    for layer in [*layers, *extra]:
        prior = seen.get(layer.id)
        if prior is None:
            seen[layer.id] = layer.nodes
        elif prior != layer.nodes:
            raise DocumentError(
                f"internal deriver error: two different layers were both named {layer.id!r}",
                key="layer_kinds",
                value=layer.id,
            )
    return [{"id": kid, "nodes": json.loads(json.dumps(nodes)), "edges": _chain(nodes)} for kid, nodes in seen.items()]


def derive_graph(
    config: Mapping[str, Any], *, name: str, sha256: str, path: str = "config.json", file: str = "config.json"
) -> dict[str, Any]:
    """The ModelGraph document for ``config`` (a parsed config.json).

    ``name`` is the catalog directory name, ``sha256`` the hex digest of the config.json
    bytes, ``path`` the config's path relative to the model directory (recorded in
    ``derived_from``), ``file`` the path used in error messages.
    Raises :class:`DocumentError` for an unsupported architecture, a missing/ill-typed
    field, or values that do not form a valid ModelGraph (the result is validated exactly
    as ``documents.graph.load_graph`` validates a graph.yaml: n_kv > n_q or top_k >
    experts are refused here, not printed).
    """
    if not name:
        raise DocumentError("a graph needs a name (the catalog directory name)", key="name")
    if len(sha256) != 64 or any(ch not in "0123456789abcdef" for ch in sha256):
        raise DocumentError(
            "derived_from.sha256 must be 64 lowercase hex digits", key="derived_from.sha256", value=sha256
        )
    c = ConfigView(config, file=file)
    handler = _handler(c)
    c.check_sizes(MAX_LAYERS)
    weight_dtype, expert_dtype = weight_dtypes(c)
    if expert_dtype == weight_dtype:
        expert_dtype = None
    derived: Derived = handler(HandlerInput(c, weight_dtype, expert_dtype))
    ids = [layer.id for layer in derived.layers]
    if len(ids) != c.layers:
        raise DocumentError(f"internal deriver error: {len(ids)} layers for num_hidden_layers={c.layers}", key="stack")
    doc: dict[str, Any] = {
        "kind": "ModelGraph",
        "name": name,
        "derived_from": {
            "format": "hf_config_json",
            "path": path,
            "sha256": sha256,
            "deriver_version": DERIVER_VERSION,
        },
        "global": {
            "hidden_size": c.hidden,
            "vocab_size": c.vocab,
            "tie_word_embeddings": c.tie_word_embeddings,
            "weight_dtype": weight_dtype,
        },
        "layer_kinds": _kinds(derived.layers, derived.extra_kinds),
        "stack": factor_stack(ids),
    }
    if derived.multimodal:
        doc["modality"] = "text_decoder_of_multimodal"
    doc["head"] = [norm("final_norm"), gemm("lm_head", c.vocab, c.hidden)]
    spec = derived.speculator
    if spec is not None:
        doc["speculator"] = {
            "method": spec.method,
            "num_spec_tokens": spec.num_spec_tokens,
            "stack": {"pattern": list(spec.pattern), "repeat": spec.repeat},
        }
    try:
        validate(ModelGraph, doc, file)
    except DocumentError as e:
        raise DocumentError(f"the graph derived from {e}", file=e.file, key=e.key, value=e.value) from None
    return doc


def _parse(data: bytes, file: str) -> dict[str, Any]:
    def no_constant(name: str) -> Any:
        raise ValueError(f"{name} is not a number a config may hold")

    try:
        config = json.loads(data, parse_constant=no_constant)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise DocumentError(f"{file} is not valid JSON: {e}", file=file) from None
    except RecursionError:
        raise DocumentError(f"{file} nests objects or lists too deeply to be a model config", file=file) from None
    except ValueError as e:
        raise DocumentError(f"{file} is not a usable config: {e}", file=file) from None
    if not isinstance(config, dict) or not config:
        raise DocumentError(f"{file} must hold a non-empty JSON object", file=file)
    return config


def derive_graph_from_bytes(
    data: bytes, *, name: str, path: str = "config.json", file: str = "config.json"
) -> dict[str, Any]:
    """Parse ``data`` (config.json bytes) and derive its graph; the digest is of ``data``."""
    return derive_graph(_parse(data, file), name=name, sha256=hashlib.sha256(data).hexdigest(), path=path, file=file)


def derive_graph_from_file(config_json: str | Path, *, name: str | None = None) -> dict[str, Any]:
    """Derive the graph of a config.json on disk; ``name`` defaults to its directory name."""
    p = Path(config_json)
    try:
        data = p.read_bytes()
    except OSError as e:
        raise DocumentError(f"cannot read {p}: {e.strerror or e}", file=str(p)) from None
    graph_name = name or p.resolve().parent.name
    return derive_graph_from_bytes(data, name=graph_name, path=p.name, file=str(p))


class _NoAliasDumper(yaml.SafeDumper):  # type: ignore[misc]
    def ignore_aliases(self, data: Any) -> bool:
        return True


def render_graph_yaml(doc: Mapping[str, Any], source: str) -> str:
    """The graph as YAML text, headed by a comment naming the generator and ``source``."""
    body = yaml.dump(dict(doc), Dumper=_NoAliasDumper, sort_keys=False, default_flow_style=False, allow_unicode=True)
    return f"# Generated by `latencykernel graph from-hf` from {source}; do not edit by hand.\n{body}"

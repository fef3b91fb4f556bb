"""The model graph (``models/<name>/graph.yaml``) and model identity (``model.yaml``).

Pure facts: the layer kinds, their nodes and the stack that orders them. No pricing here.
Comment keys are not allowed in either file.
"""

from __future__ import annotations

import datetime as _dt
import os
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from latencykernel.documents.base_models import Invalid, StrictModel, empty_list
from latencykernel.documents.cache import cached
from latencykernel.documents.validation import require_mapping, show, validate
from latencykernel.documents.yaml_loader import read_yaml

__all__ = [
    "Dtype",
    "Op",
    "COLLECTIVES",
    "OP_KEYS",
    "Node",
    "LayerKind",
    "Stack",
    "Speculator",
    "DerivedFrom",
    "GraphGlobal",
    "ModelGraph",
    "ModelSource",
    "ModelIdentity",
    "load_graph",
    "load_model_identity",
]

Dtype = Literal["bf16", "fp16", "fp8", "nvfp4", "mxfp4", "int8", "int4", "fp32"]
Op = Literal[
    "GEMM",
    "GroupedGEMM",
    "Attention",
    "RecurrentUpdate",
    "Elementwise",
    "AllReduce",
    "AllGather",
    "ReduceScatter",
    "All2All",
]
Emit = Literal["", "tensor_parallel", "expert_parallel", "tensor_parallel_unless_sp_moe"]
COLLECTIVES: frozenset[str] = frozenset({"AllReduce", "AllGather", "ReduceScatter", "All2All"})

PosInt = Annotated[int, Field(ge=1)]
NonNegInt = Annotated[int, Field(ge=0)]
Name = Annotated[str, Field(min_length=1)]

_COMMON = ("op", "role", "emit")
OP_KEYS: dict[str, tuple[str, ...]] = {
    "GEMM": ("n", "k", "weight_dtype"),
    "GroupedGEMM": (
        "n",
        "k",
        "experts",
        "top_k",
        "shared_experts",
        "shared_intermediate_size",
        "latent_size",
        "weight_dtype",
    ),
    "Attention": (
        "kind",
        "n_q",
        "n_kv",
        "d_h",
        "kv_lora_rank",
        "qk_rope_head_dim",
        "window",
        "index_topk",
        "compress_ratio",
    ),
    "RecurrentUpdate": (
        "recurrent_kind",
        "n_heads",
        "state_size",
        "n_groups",
        "conv_kernel",
        "intermediate_size",
        "state_dtype",
    ),
    "Elementwise": ("bytes_per_token",),
    # a collective's message per token; absent: hidden_size x 16-bit activations
    **{c: ("bytes_per_token",) for c in COLLECTIVES},
}
_REQUIRED: dict[str, tuple[str, ...]] = {
    "GEMM": ("n", "k"),
    "GroupedGEMM": ("n", "k", "experts", "top_k"),
    "Attention": ("kind", "n_q", "n_kv", "d_h"),
    "RecurrentUpdate": ("recurrent_kind", "n_heads", "state_size"),
    **{c: ("emit",) for c in COLLECTIVES},
}


class Node(StrictModel):
    """One primitive of a layer kind; which keys apply depends on ``op``."""

    op: Op
    role: str | None = None
    emit: Emit | None = None
    # GEMM / GroupedGEMM
    n: PosInt | None = None
    k: PosInt | None = None
    weight_dtype: Dtype | None = None
    experts: PosInt | None = None
    top_k: PosInt | None = None
    shared_experts: NonNegInt | None = None
    shared_intermediate_size: NonNegInt | None = None
    latent_size: PosInt | None = None
    # Attention
    kind: Literal["gqa", "mla", "sparse_mla", "swa"] | None = None
    n_q: PosInt | None = None
    n_kv: PosInt | None = None
    d_h: PosInt | None = None
    kv_lora_rank: NonNegInt | None = None
    qk_rope_head_dim: NonNegInt | None = None
    window: PosInt | None = None
    index_topk: PosInt | None = None
    compress_ratio: PosInt | None = None
    # RecurrentUpdate
    recurrent_kind: Literal["mamba2", "kda", "gdn"] | None = None
    n_heads: PosInt | None = None
    state_size: PosInt | None = None
    n_groups: PosInt | None = None
    conv_kernel: PosInt | None = None
    intermediate_size: PosInt | None = None
    state_dtype: Dtype | None = None
    # Elementwise; collectives (the message per token)
    bytes_per_token: NonNegInt | None = None

    @model_validator(mode="after")
    def _keys_fit_op(self) -> Node:
        op = self.op
        allowed = OP_KEYS[op]
        for key in self.model_fields_set:
            if key not in allowed and key not in _COMMON and getattr(self, key) is not None:
                uses = ", ".join(allowed) if allowed else "no shape keys"
                raise Invalid(
                    f"key '{key}' is not used by op {op}; {op} takes {uses} (besides op, role, emit)",
                    key=key,
                    value=getattr(self, key),
                )
        for key in _REQUIRED.get(op, ()):
            if getattr(self, key) is None:
                raise Invalid(f"missing required key '{key}' for op {op}", key=key)
        if op == "GroupedGEMM":
            assert self.top_k is not None and self.experts is not None
            if self.top_k > self.experts:
                raise Invalid(f"top_k {self.top_k} exceeds experts {self.experts}", key="top_k", value=self.top_k)
            if self.shared_intermediate_size is not None and not self.shared_experts:
                raise Invalid(
                    "shared_intermediate_size needs shared_experts >= 1",
                    key="shared_intermediate_size",
                    value=self.shared_intermediate_size,
                )
        elif op == "Attention":
            assert self.n_q is not None and self.n_kv is not None
            if self.n_kv > self.n_q:
                raise Invalid(f"n_kv {self.n_kv} exceeds n_q {self.n_q}", key="n_kv", value=self.n_kv)
            if self.kind in ("mla", "sparse_mla") and self.n_kv != 1:
                raise Invalid(
                    f"{self.kind} attention keeps one latent per token, so n_kv must be 1, got {self.n_kv}",
                    key="n_kv",
                    value=self.n_kv,
                )
            if self.kind == "swa" and self.window is None:
                raise Invalid("missing required key 'window' for swa attention", key="window")
            if self.kind == "sparse_mla" and self.index_topk is None and self.compress_ratio is None:
                raise Invalid("sparse_mla attention needs index_topk or compress_ratio (or both)", key="index_topk")
        elif op == "RecurrentUpdate" and self.recurrent_kind == "mamba2":
            for key in ("n_groups", "conv_kernel", "intermediate_size"):
                if getattr(self, key) is None:
                    raise Invalid(f"missing required key '{key}' for a mamba2 RecurrentUpdate", key=key)
        elif op in COLLECTIVES and self.bytes_per_token == 0:
            raise Invalid(
                f"{op} bytes_per_token must be at least 1 (leave it out for the hidden state at 16 bits)",
                key="bytes_per_token",
                value=0,
            )
        return self


Edge = Annotated[list[int], Field(min_length=2, max_length=2)]


class LayerKind(StrictModel):
    id: Name
    nodes: Annotated[list[Node], Field(min_length=1)]
    edges: list[Edge] = Field(default_factory=empty_list)

    @model_validator(mode="after")
    def _edges_form_a_dag(self) -> LayerKind:
        n = len(self.nodes)
        succ: list[list[int]] = [[] for _ in range(n)]
        indeg = [0] * n
        for e, (i, j) in enumerate(self.edges):
            if not (0 <= i < n and 0 <= j < n) or i == j:
                raise Invalid(
                    f"edge {[i, j]} must join two different node indices in 0..{n - 1}", key=f"edges[{e}]", value=[i, j]
                )
            succ[i].append(j)
            indeg[j] += 1
        ready = [v for v in range(n) if indeg[v] == 0]
        seen = 0
        while ready:
            v = ready.pop()
            seen += 1
            for w in succ[v]:
                indeg[w] -= 1
                if indeg[w] == 0:
                    ready.append(w)
        if seen != n:
            raise Invalid("the edges form a cycle; a layer's nodes must run in an acyclic order", key="edges")
        return self


class Stack(StrictModel):
    prologue: list[Name] = Field(default_factory=empty_list)
    pattern: list[Name] = Field(default_factory=empty_list)
    repeat: NonNegInt = 0
    epilogue: list[Name] = Field(default_factory=empty_list)

    @model_validator(mode="after")
    def _repeat_with_pattern(self) -> Stack:
        if self.pattern and "repeat" not in self.model_fields_set:
            raise Invalid("missing required key 'repeat' (a pattern needs a repeat count)", key="repeat")
        return self

    def expand(self) -> list[str]:
        """prologue + pattern * repeat + epilogue."""
        return [*self.prologue, *(self.pattern * self.repeat), *self.epilogue]


class Speculator(StrictModel):
    method: Name
    num_spec_tokens: PosInt
    stack: Stack

    @model_validator(mode="after")
    def _runs_something(self) -> Speculator:
        if self.stack.pattern and self.stack.repeat < 1:
            raise Invalid(f"must be at least 1, got {self.stack.repeat}", key="stack.repeat", value=self.stack.repeat)
        return self


class DerivedFrom(StrictModel):
    format: Name
    path: Name
    sha256: str
    deriver_version: PosInt

    @field_validator("sha256")
    @classmethod
    def _hex64(cls, v: str) -> str:
        if not re.fullmatch(r"[0-9a-fA-F]{64}", v):
            raise Invalid(f"must be 64 hexadecimal characters, got {show(v)}", value=v)
        return v


class GraphGlobal(StrictModel):
    hidden_size: PosInt
    vocab_size: PosInt
    tie_word_embeddings: bool | None = None
    weight_dtype: Dtype


class ModelGraph(StrictModel):
    """A model as the cost model sees it (catalog ``graph.yaml``)."""

    kind: Literal["ModelGraph"]
    name: Name
    derived_from: DerivedFrom
    global_: GraphGlobal = Field(alias="global")
    layer_kinds: Annotated[list[LayerKind], Field(min_length=1)]
    stack: Stack
    head: list[Node] = Field(default_factory=empty_list)
    speculator: Speculator | None = None
    modality: Literal["", "text_only", "text_decoder_of_multimodal"] | None = None

    @model_validator(mode="after")
    def _stack_names_declared_kinds(self) -> ModelGraph:
        ids: list[str] = []
        for i, lk in enumerate(self.layer_kinds):
            if lk.id in ids:
                raise Invalid(f"layer kind id {show(lk.id)} is declared twice", key=f"layer_kinds[{i}].id", value=lk.id)
            ids.append(lk.id)
        stacks = [("stack", self.stack)]
        if self.speculator is not None:
            stacks.append(("speculator.stack", self.speculator.stack))
        for where, st in stacks:
            for part in ("prologue", "pattern", "epilogue"):
                for j, lid in enumerate(getattr(st, part)):
                    if lid not in ids:
                        raise Invalid(
                            f"{show(lid)} is not a declared layer kind; declared ids are: {', '.join(ids)}",
                            key=f"{where}.{part}[{j}]",
                            value=lid,
                        )
        if not self.stack.expand():
            raise Invalid(
                "the stack expands to no layer; list layer kinds in prologue, pattern (with repeat >= 1) or epilogue",
                key="stack",
            )
        return self

    def expand(self) -> list[str]:
        """The layer kind id of every layer, in order."""
        return self.stack.expand()

    def layer_counts(self) -> dict[str, int]:
        """How many layers of each kind, in first-seen order."""
        counts: dict[str, int] = {}
        for lid in self.stack.expand():
            counts[lid] = counts.get(lid, 0) + 1
        return counts

    def layer_kind(self, id: str) -> LayerKind:  # noqa: A002 - the YAML key
        """The layer kind with this id (``KeyError`` if none)."""
        for lk in self.layer_kinds:
            if lk.id == id:
                return lk
        raise KeyError(id)


class ModelSource(StrictModel):
    provider: Name
    repo: Name
    revision: Name
    retrieved: str | None = None
    revision_verified: bool | None = None  # older stored copies only

    @field_validator("retrieved", mode="before")
    @classmethod
    def _date_as_text(cls, v: Any) -> Any:
        return v.isoformat() if isinstance(v, _dt.date) else v


class ModelIdentity(StrictModel):
    """Where a catalog model came from (``model.yaml``)."""

    name: Name
    source: ModelSource


def _parse_graph(path: Path) -> ModelGraph:
    data = require_mapping(read_yaml(path), path, "a ModelGraph document")
    return validate(ModelGraph, data, path)


def _parse_identity(path: Path) -> ModelIdentity:
    data = require_mapping(read_yaml(path), path, "a model identity (name, source)")
    return validate(ModelIdentity, data, path)


def load_graph(path: str | os.PathLike[str], *, shared: bool = False) -> ModelGraph:
    """Read a ``graph.yaml``.

    A copy each call (edit it freely); ``shared``: the cached original, for read-only use
    by the kernel and the scenario library (never hand it out).
    """
    return cached("graph", path, _parse_graph, shared=shared)


def load_model_identity(path: str | os.PathLike[str]) -> ModelIdentity:
    """Read a ``model.yaml``."""
    return cached("model", path, _parse_identity)

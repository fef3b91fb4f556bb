"""What a family handler receives and returns."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from latencykernel.derive.config_view import ConfigView
from latencykernel.derive.nodes import Node

__all__ = ["HandlerInput", "Layer", "Speculator", "Derived", "Handler"]


@dataclass(frozen=True)
class HandlerInput:
    """A handler's input: the config view and the weight formats read from it."""

    cfg: ConfigView
    weight_dtype: str  # global.weight_dtype
    expert_dtype: str | None  # per-node override on GroupedGEMM nodes, if any


@dataclass(frozen=True)
class Layer:
    """One decoder layer: the id of its kind and the kind's nodes (a linear chain)."""

    id: str
    nodes: list[Node]


@dataclass(frozen=True)
class Speculator:
    """A draft module built from the model's own layer kinds (MTP)."""

    method: str
    num_spec_tokens: int
    pattern: list[str]
    repeat: int = 1


@dataclass
class Derived:
    """A handler's output, in layer order; :func:`~latencykernel.derive.hf.derive_graph`
    deduplicates the kinds and factors the stack."""

    layers: list[Layer]
    speculator: Speculator | None = None
    multimodal: bool = False
    # kinds referenced only by the speculator (e.g. an MTP layer unlike any decoder layer)
    extra_kinds: list[Layer] = field(default_factory=list)


Handler = Callable[[HandlerInput], Derived]

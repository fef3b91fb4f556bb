"""A coefficient set (registry ``coefficients/<name>.yaml``): learned numbers with provenance.

``coefficients`` is a list of single-key maps ``- <entry name>: {value, units, method, ...}``.
An entry is identified by its name and scope (scope lists compared as sets).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from latencykernel.documents.base_models import Invalid, StrictModel
from latencykernel.documents.cache import cached
from latencykernel.documents.validation import require_mapping, show, validate
from latencykernel.documents.yaml_loader import read_yaml

__all__ = [
    "Units",
    "Method",
    "EVIDENCED",
    "Scope",
    "Source",
    "CoefficientEntry",
    "CoefficientSet",
    "load_coefficient_set",
]

Units = Literal[
    "dimensionless",
    "us_per_layer",
    "us_per_request",
    "us_per_step",
    "us_per_hop",
    "us_per_transfer",
    "us_per_load",
    "us_per_token",
    "bytes_per_us",
    "bytes_per_rank",
    "tokens",
    "sm_count",
]
Method = Literal["measured", "literature", "vendor_spec", "copied", "assumed", "not_charged"]
EVIDENCED: frozenset[str] = frozenset({"measured", "literature", "vendor_spec"})
Name = Annotated[str, Field(min_length=1)]
Text = Annotated[str, Field(min_length=1)]
_SCOPE_KEYS = ("hardware", "model", "tp", "ep", "nodes_spanned", "engine")
_UNSTATED: frozenset[Any] = frozenset({None})  # an unstated scope dimension in Scope.identity


class Scope(StrictModel):
    """Where an entry applies; each stated dimension lists the accepted values."""

    hardware: list[Name] | None = None
    model: list[Name] | None = None
    tp: list[Annotated[int, Field(ge=1)]] | None = None
    ep: list[Annotated[int, Field(ge=1)]] | None = None
    nodes_spanned: list[Annotated[int, Field(ge=1)]] | None = None
    # the scenario's ``engine`` (unstated: vllm); an entry scoped to an engine applies only there
    engine: list[Literal["vllm", "sglang", "trt"]] | None = None

    @model_validator(mode="after")
    def _not_empty(self) -> Scope:
        stated = [k for k in _SCOPE_KEYS if getattr(self, k) is not None]
        if not stated:
            raise Invalid(
                "is empty; state at least one of hardware, model, tp, ep, nodes_spanned, engine "
                "(an empty scope is an error, not a wildcard)"
            )
        for k in stated:
            if not getattr(self, k):
                raise Invalid("lists no value; an empty list would match nothing", key=k, value=[])
        return self

    def identity(self) -> tuple[frozenset[Any], ...]:
        """The scope as sets, for comparing entries (hardware and model without case), in
        ``_SCOPE_KEYS`` order. Spelled out field by field: it runs once per entry of every
        coefficient set read (about 1100 on a first ``open()``; issue 9)."""
        hw, model, tp, ep, spanned, engine = (
            self.hardware,
            self.model,
            self.tp,
            self.ep,
            self.nodes_spanned,
            self.engine,
        )
        return (
            _UNSTATED if hw is None else frozenset([v.lower() for v in hw]),
            _UNSTATED if model is None else frozenset([v.lower() for v in model]),
            _UNSTATED if tp is None else frozenset(tp),
            _UNSTATED if ep is None else frozenset(ep),
            _UNSTATED if spanned is None else frozenset(spanned),
            _UNSTATED if engine is None else frozenset(engine),
        )


class Source(StrictModel):
    kind: Literal["discussion", "publication", "datasheet", "model", "vendor_doc"]
    cite: Text
    role: Literal["primary", "supporting", "upper_bound"]


class CoefficientEntry(StrictModel):
    """One learned number and how it was obtained."""

    value: Annotated[float, Field(allow_inf_nan=False)]
    units: Units
    method: Method
    fitted: bool
    scope: Scope
    ci95: Annotated[list[Annotated[float, Field(allow_inf_nan=False)]], Field(min_length=2, max_length=2)] | None = None
    sources: list[Source] | None = None
    rationale: Text | None = None
    copied_from: Text | None = None
    supersedes: Text | None = None
    validated: list[Name] | None = None
    unsupported: list[Name] | None = None

    @field_validator("validated", "unsupported", mode="before")
    @classmethod
    def _metric_names(cls, v: Any) -> Any:
        return [v] if isinstance(v, str) else v

    @model_validator(mode="after")
    def _method_rules(self) -> CoefficientEntry:
        m = self.method
        if self.value == 0 and m != "not_charged":
            raise Invalid(f"is 0, which only method not_charged may state (method is {m})", key="value", value=0)
        if m == "not_charged" and self.value != 0:
            raise Invalid(f"must be 0 with method not_charged, got {show(self.value)}", key="value", value=self.value)
        if self.fitted and m != "measured":
            raise Invalid(f"fitted true needs method measured (method is {m})", key="fitted", value=True)
        if m in ("literature", "vendor_spec") and not self.sources:
            raise Invalid(f"method {m} needs at least one source", key="sources", value=self.sources)
        if m in ("literature", "vendor_spec", "copied", "assumed", "not_charged") and not self.rationale:
            raise Invalid(f"method {m} needs a rationale", key="rationale")
        if m == "copied" and not self.copied_from:
            raise Invalid("method copied needs copied_from (the entry the value was copied from)", key="copied_from")
        if self.ci95 is not None:
            lo, hi = self.ci95
            if not lo <= self.value <= hi:
                raise Invalid(f"[{lo}, {hi}] does not bracket value {self.value}", key="ci95", value=self.ci95)
        return self


class CoefficientSet(StrictModel):
    """A named, ordered list of coefficient entries."""

    kind: Literal["CoefficientSet"]
    name: Name
    coefficients: list[dict[str, CoefficientEntry]]

    @field_validator("coefficients", mode="before")
    @classmethod
    def _single_key_items(cls, v: Any) -> Any:
        if isinstance(v, list):
            for i, item in enumerate(v):
                if isinstance(item, dict) and len(item) != 1:
                    raise Invalid(
                        f"each item must be a single-key map '- <name>: {{...}}', this one has "
                        f"{len(item)} keys ({', '.join(map(str, item)) or 'none'})",
                        key=f"[{i}]",
                        value=list(item),
                    )
        return v

    @model_validator(mode="after")
    def _unique_entries(self) -> CoefficientSet:
        seen: set[tuple[str, tuple[frozenset[Any], ...]]] = set()
        for i, item in enumerate(self.coefficients):
            ((name, entry),) = item.items()
            ident = (name, entry.scope.identity())
            if ident in seen:
                raise Invalid(
                    f"{name} is stated twice for the same scope",
                    key=f"coefficients[{i}].{name}.scope",
                    value=entry.scope.model_dump(exclude_none=True),
                )
            seen.add(ident)
        return self

    def entries(self) -> list[tuple[str, CoefficientEntry]]:
        """``(name, entry)`` pairs in file order."""
        return [next(iter(item.items())) for item in self.coefficients]


def _parse_set(path: Path) -> CoefficientSet:
    data = require_mapping(read_yaml(path), path, "a CoefficientSet document")
    return validate(CoefficientSet, data, path)


def load_coefficient_set(path: str | os.PathLike[str], *, shared: bool = False) -> CoefficientSet:
    """Read a coefficient set file.

    A copy each call (edit it freely); ``shared``: the cached original, for read-only use
    by the kernel and the scenario library (never hand it out).
    """
    return cached("coefficients", path, _parse_set, shared=shared)

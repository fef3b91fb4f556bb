"""A chip (``hardware/<name>.yaml``): nominal per-GPU figures, PascalCase keys as the catalog
spells them. The chip's name is its file stem (an in-file ``name`` key is rejected)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, model_validator

from latencykernel.documents.base_models import Invalid, NamedByFile
from latencykernel.documents.cache import cached
from latencykernel.documents.validation import require_mapping, validate
from latencykernel.documents.yaml_loader import read_yaml, strip_comment_keys

__all__ = ["ProvenanceKind", "Chip", "load_chip"]

ProvenanceKind = Literal["vendor_spec", "derived"]
Positive = Annotated[float, Field(gt=0)]
NonNeg = Annotated[float, Field(ge=0)]
PosInt = Annotated[int, Field(ge=1)]


class Chip(NamedByFile):
    """Per-GPU nominal figures. ``name`` (not a YAML key) is the file stem."""

    Provenance: ProvenanceKind
    TFlopsPeak: Positive
    TFlopsFP8: NonNeg = 0.0
    TFlopsNVFP4: NonNeg | None = None
    BwPeakTBs: Positive
    MemoryGiB: Positive
    IntraNodeBwGBps: Positive
    SMCount: PosInt
    GPUsPerNode: PosInt | None = None
    GPUsPerRack: PosInt | None = None
    IntraRackBwGBps: Positive | None = None

    @model_validator(mode="after")
    def _consistent(self) -> Chip:
        if self.TFlopsFP8 and self.TFlopsFP8 <= self.TFlopsPeak:
            raise Invalid(
                f"must be 0 (no native FP8) or above TFlopsPeak {self.TFlopsPeak}, got {self.TFlopsFP8}",
                key="TFlopsFP8",
                value=self.TFlopsFP8,
            )
        if self.GPUsPerRack is not None and self.GPUsPerNode is not None and self.GPUsPerRack % self.GPUsPerNode:
            raise Invalid(
                f"{self.GPUsPerRack} is not a multiple of GPUsPerNode {self.GPUsPerNode}",
                key="GPUsPerRack",
                value=self.GPUsPerRack,
            )
        if self.IntraRackBwGBps is not None and self.GPUsPerRack is None:
            raise Invalid("IntraRackBwGBps needs GPUsPerRack", key="IntraRackBwGBps", value=self.IntraRackBwGBps)
        return self


def _parse_chip(path: Path) -> Chip:
    data = strip_comment_keys(require_mapping(read_yaml(path), path, "a chip (PascalCase keys)"))
    chip = validate(Chip, data, path)
    chip.name = path.stem
    return chip


def load_chip(path: str | os.PathLike[str], *, shared: bool = False) -> Chip:
    """Read a chip file; its ``name`` is the file stem.

    A copy each call (edit it freely); ``shared``: the cached original, for read-only use
    by the kernel and the scenario library (never hand it out).
    """
    return cached("chip", path, _parse_chip, shared=shared)

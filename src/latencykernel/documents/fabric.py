"""A fabric (``networks/<name>.yaml``): the inter-node link. Name = file stem."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

from pydantic import Field

from latencykernel.documents.base_models import NamedByFile
from latencykernel.documents.cache import cached
from latencykernel.documents.chip import ProvenanceKind
from latencykernel.documents.validation import require_mapping, validate
from latencykernel.documents.yaml_loader import read_yaml, strip_comment_keys

__all__ = ["Fabric", "load_fabric"]


class Fabric(NamedByFile):
    """Per-GPU nominal inter-node bandwidth. ``name`` (not a YAML key) is the file stem.

    ``Provenance`` is optional here because older stored fabric files lack it.
    ``PDTransferBaseLatencyMs`` is a legacy key present in stored copies (not read).
    """

    Provenance: ProvenanceKind | None = None
    InterNodeBwGBps: Annotated[float, Field(gt=0)]
    RDMA: bool | None = None
    PDTransferBaseLatencyMs: Annotated[float, Field(ge=0)] | None = None


def _parse_fabric(path: Path) -> Fabric:
    data = strip_comment_keys(require_mapping(read_yaml(path), path, "a fabric (PascalCase keys)"))
    fabric = validate(Fabric, data, path)
    fabric.name = path.stem
    return fabric


def load_fabric(path: str | os.PathLike[str], *, shared: bool = False) -> Fabric:
    """Read a fabric file; its ``name`` is the file stem.

    A copy each call (edit it freely); ``shared``: the cached original, for read-only use
    by the kernel and the scenario library (never hand it out).
    """
    return cached("fabric", path, _parse_fabric, shared=shared)

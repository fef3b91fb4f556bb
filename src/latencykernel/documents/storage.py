"""Storage classes (``devices/storage.yaml``): one map, key = class name.

Each class states read and write bandwidth (MB/s, decimal) and a base latency (µs), under the
current keys ``read_bandwidth_mb_s``, ``write_bandwidth_mb_s``, ``base_latency_us`` or the
legacy ``read_bandwidth``, ``write_bandwidth``, ``base_latency`` (same units). Comment keys are
allowed inside a class, not at the top level.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any

from pydantic import AliasChoices, Field, model_validator

from latencykernel.documents.base_models import Invalid, StrictModel
from latencykernel.documents.cache import cached
from latencykernel.documents.validation import require_mapping, validate
from latencykernel.documents.yaml_loader import is_comment_key, read_yaml, strip_comment_keys
from latencykernel.errors import DocumentError

__all__ = ["StorageClass", "load_storage", "validate_storage"]

Positive = Annotated[float, Field(gt=0)]
_SPELLINGS = (
    ("read_bandwidth_mb_s", "read_bandwidth"),
    ("write_bandwidth_mb_s", "write_bandwidth"),
    ("base_latency_us", "base_latency"),
)


class StorageClass(StrictModel):
    """One offload tier device."""

    read_bandwidth_mb_s: Positive = Field(validation_alias=AliasChoices("read_bandwidth_mb_s", "read_bandwidth"))
    write_bandwidth_mb_s: Positive = Field(validation_alias=AliasChoices("write_bandwidth_mb_s", "write_bandwidth"))
    base_latency_us: Positive = Field(validation_alias=AliasChoices("base_latency_us", "base_latency"))

    @model_validator(mode="before")
    @classmethod
    def _one_spelling(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for current, legacy in _SPELLINGS:
                if current in data and legacy in data:
                    raise Invalid(
                        f"states both '{current}' and its older spelling '{legacy}'; keep one",
                        key=legacy,
                        value=data[legacy],
                    )
        return data

    @property
    def read_mb_per_s(self) -> float:
        return self.read_bandwidth_mb_s

    @property
    def write_mb_per_s(self) -> float:
        return self.write_bandwidth_mb_s


def validate_storage(data: Any, file: str | os.PathLike[str]) -> dict[str, StorageClass]:
    """Validate a storage-classes mapping (as read from the file)."""
    f = str(file)
    top = require_mapping(data, f, "a map of storage classes")
    for key in top:
        if is_comment_key(key):
            raise DocumentError(
                f"{f}: {key}: comment keys are not allowed at the top level of the storage "
                "file; put them inside a class",
                file=f,
                key=str(key),
            )
        if not isinstance(key, str) or not key:
            raise DocumentError(
                f"{f}: storage class names must be non-empty strings, got {key!r}", file=f, key=str(key), value=key
            )
    return {k: validate(StorageClass, strip_comment_keys(v), f, prefix=k) for k, v in top.items()}


def _parse_storage(path: Path) -> dict[str, StorageClass]:
    return validate_storage(read_yaml(path), path)


def load_storage(path: str | os.PathLike[str], *, shared: bool = False) -> dict[str, StorageClass]:
    """Read the storage classes file.

    A copy each call (edit it freely); ``shared``: the cached original, for read-only use
    by the kernel and the scenario library (never hand it out).
    """
    return cached("storage", path, _parse_storage, shared=shared)

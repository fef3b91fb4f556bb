"""Compatibility names: the shared document machinery now lives in modules named for what
they hold; import from those in new code.

* ``yaml_loader``: ``read_yaml``, ``read_yaml_all``, ``is_comment_key``, ``strip_comment_keys``
* ``base_models``: ``StrictModel``, ``NamedByFile``, ``Invalid``, ``MEMORY``
* ``cache``: ``cached``, ``clear_cache``
* ``copying``: ``fast_copy``, ``note_origin``, ``copy_if_unchanged``, ``original_if_unchanged``
* ``validation``: ``validate``, ``to_document_error``, ``require_mapping``, ``accepted_keys``,
  ``show``, ``fmt_loc``, ``join_key``
"""

from __future__ import annotations

from latencykernel.documents.base_models import MEMORY, Invalid, NamedByFile, StrictModel
from latencykernel.documents.cache import cached, clear_cache
from latencykernel.documents.copying import copy_if_unchanged, fast_copy, note_origin, original_if_unchanged
from latencykernel.documents.validation import (
    accepted_keys,
    fmt_loc,
    join_key,
    require_mapping,
    show,
    to_document_error,
    validate,
)
from latencykernel.documents.yaml_loader import is_comment_key, read_yaml, read_yaml_all, strip_comment_keys

__all__ = [
    "MEMORY",
    "Invalid",
    "NamedByFile",
    "StrictModel",
    "cached",
    "clear_cache",
    "copy_if_unchanged",
    "fast_copy",
    "note_origin",
    "original_if_unchanged",
    "accepted_keys",
    "fmt_loc",
    "join_key",
    "require_mapping",
    "show",
    "to_document_error",
    "validate",
    "is_comment_key",
    "read_yaml",
    "read_yaml_all",
    "strip_comment_keys",
]

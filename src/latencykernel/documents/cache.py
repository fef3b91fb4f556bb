"""Parsed and validated documents kept per (kind, resolved path, mtime, size).

``cached`` parses and validates a file once and hands out a copy each time (callers may
edit what they get); with ``shared=True`` it hands out the cached original itself, for the
kernel's read-only use only: building a kernel then copies nothing (issue 13: copying the
coefficient sets and the graph was most of ``build``'s time). The original is never
reachable through a public function, so editing a document one was given cannot change
the cache or a kernel.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from latencykernel.documents.copying import fast_copy, note_origin
from latencykernel.errors import DocumentError

__all__ = ["cached", "clear_cache"]

T = TypeVar("T")

_CACHE: OrderedDict[tuple[str, str, int, int], Any] = OrderedDict()
_CACHE_SIZE = 128


def cached(kind: str, path: str | os.PathLike[str], build: Callable[[Path], T], *, shared: bool = False) -> T:
    """``build(path)`` once per (kind, resolved path, mtime_ns, size); returns a deep copy
    (``shared``: the cached original, to be read and never edited)."""
    p = Path(path)
    try:
        resolved = p.resolve()
        st = resolved.stat()
    except FileNotFoundError:
        raise DocumentError(f"{p}: file not found", file=str(p)) from None
    except OSError as e:
        raise DocumentError(f"{p}: cannot be read ({e.strerror})", file=str(p)) from None
    key = (kind, str(resolved), st.st_mtime_ns, st.st_size)
    hit = _CACHE.get(key)
    if hit is None:
        hit = build(p)
        _CACHE[key] = hit
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    else:
        _CACHE.move_to_end(key)
    if shared:
        return hit  # type: ignore[no-any-return]
    out = fast_copy(hit)
    if isinstance(out, BaseModel):
        note_origin(out, hit)
    return out


def clear_cache() -> None:
    """Forget every cached document."""
    _CACHE.clear()

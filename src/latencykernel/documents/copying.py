"""Copying documents, and knowing which copy came from which validated original.

Loaders hand out copies (a caller may edit its documents); ``note_origin`` remembers the
validated original a copy was made from, so ``validate_inputs`` can tell an unchanged copy
(no second validation needed) from an edited one, and ``original_if_unchanged`` gives back
the original itself for the kernel's read-only use.
"""

from __future__ import annotations

import copy
import weakref
from typing import Any, TypeVar

from pydantic import BaseModel

__all__ = ["fast_copy", "note_origin", "copy_if_unchanged", "original_if_unchanged"]

T = TypeVar("T")

_ATOMS = (str, int, float, bool, type(None))


def fast_copy(obj: T) -> T:
    """A deep copy of a document tree (models, lists, dicts, scalars), faster than ``copy.deepcopy``."""
    if isinstance(obj, _ATOMS):
        return obj
    tp = type(obj)
    if tp is list:
        return [fast_copy(x) for x in obj]  # type: ignore[return-value, attr-defined]
    if tp is dict:
        return {k: fast_copy(v) for k, v in obj.items()}  # type: ignore[return-value, attr-defined]
    if isinstance(obj, BaseModel):
        new = tp.__new__(tp)
        object.__setattr__(new, "__dict__", {k: fast_copy(v) for k, v in obj.__dict__.items()})
        object.__setattr__(new, "__pydantic_fields_set__", set(obj.__pydantic_fields_set__))
        extra = obj.__pydantic_extra__
        object.__setattr__(new, "__pydantic_extra__", None if extra is None else fast_copy(extra))
        private = obj.__pydantic_private__
        object.__setattr__(new, "__pydantic_private__", None if private is None else fast_copy(private))
        return new  # type: ignore[no-any-return]
    if tp is tuple:
        return tuple(fast_copy(x) for x in obj)  # type: ignore[return-value, attr-defined]
    return copy.deepcopy(obj)


# copy handed out -> (weak reference to it, the validated original it was copied from)
_ORIGINS: dict[int, tuple[weakref.ref[Any], Any]] = {}


def note_origin(obj: Any, original: Any) -> None:
    """Record that ``obj`` is a copy of the validated document ``original``."""
    key = id(obj)

    def forget(_r: Any, key: int = key) -> None:
        _ORIGINS.pop(key, None)

    _ORIGINS[key] = (weakref.ref(obj, forget), original)


def original_if_unchanged(obj: Any) -> Any:
    """The validated original ``obj`` was copied from, if ``obj`` still equals it, else ``None``.

    The original is shared (the cache holds it): it is for reading only, and no public
    function hands it out."""
    entry = _ORIGINS.get(id(obj))
    if entry is None or entry[0]() is not obj or obj != entry[1]:
        return None
    return entry[1]


def copy_if_unchanged(obj: Any) -> Any:
    """A fresh copy of ``obj`` if it still equals the validated document it was copied from
    (so it needs no second validation), else ``None``."""
    original = original_if_unchanged(obj)
    if original is None:
        return None
    out = fast_copy(original)
    note_origin(out, original)
    return out

"""The pydantic bases every document model derives from, and what their validators raise.

* ``StrictModel``: unknown keys forbidden, no type coercion.
* ``NamedByFile``: a catalog document whose name is its file stem.
* ``Invalid``: raised by a model validator with the key path below the model that failed;
  ``validation.to_document_error`` turns it into a ``DocumentError``.
* ``MEMORY``: the file name of a document built in code.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, PrivateAttr

__all__ = ["MEMORY", "StrictModel", "NamedByFile", "Invalid", "empty_list"]

MEMORY = "<memory>"


def empty_list() -> list[Any]:
    """A new empty list: the ``default_factory`` of list fields. A Python function, not the
    builtin ``list``: pydantic reads a factory's signature when it builds a model's schema,
    and for a builtin that means parsing its text signature with ``tokenize`` (compiling
    tokenize's large regex, about 2 ms of the first ``open()``; issue 9)."""
    return []


class StrictModel(BaseModel):
    """Base of every document model: unknown keys are errors and nothing is coerced
    (an int is accepted where a float is expected)."""

    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True, defer_build=True)


class NamedByFile(StrictModel):
    """A catalog document whose name is its file stem (an in-file ``name`` key is rejected);
    the loader sets ``name`` after validation."""

    _name: str = PrivateAttr(default="")

    @property
    def name(self) -> str:
        """The catalog name (file stem)."""
        return self._name

    @name.setter
    def name(self, value: str) -> None:
        self._name = value


class Invalid(ValueError):
    """Raised by a model validator; ``key`` is the path below the model that failed
    (``"n_kv"``, ``"stack.pattern[2]"``), ``value`` the offending value."""

    def __init__(self, message: str, *, key: str = "", value: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.key = key
        self.value = value

"""Shared machinery for every document kind.

* ``read_yaml`` / ``read_yaml_all``: the C loader when present, anchors resolved, duplicate
  keys rejected, and YAML 1.2 exponent floats (``2.0e4``) read as numbers.
* ``strip_comment_keys``: drops ``_comment`` and ``_comment_*`` keys where a format allows them.
* ``StrictModel``: the pydantic base (unknown keys forbidden, no type coercion).
* ``validate``: pydantic -> one ``DocumentError`` with a plain sentence.
* ``cached``: parsed and validated documents kept per (path, mtime, size).
"""

from __future__ import annotations

import copy
import difflib
import os
import re
import types
import typing
import weakref
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, TypeVar, get_args, get_origin

import yaml
from pydantic import AliasChoices, BaseModel, ConfigDict, PrivateAttr, ValidationError

from latencykernel.errors import DocumentError

__all__ = [
    "StrictModel",
    "note_origin",
    "copy_if_unchanged",
    "Invalid",
    "MEMORY",
    "read_yaml",
    "read_yaml_all",
    "strip_comment_keys",
    "validate",
    "cached",
    "clear_cache",
    "fast_copy",
    "show",
    "fmt_loc",
]

MEMORY = "<memory>"
T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)


class StrictModel(BaseModel):
    """Base of every document model: unknown keys are errors and nothing is coerced
    (an int is accepted where a float is expected)."""

    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True)


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


# --------------------------------------------------------------------------- YAML

_BaseLoader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_BaseLoader):  # type: ignore[misc, valid-type]
    """Safe loader that rejects duplicate keys and reads ``7.0e3`` as a float."""

    def construct_mapping(self, node: yaml.Node, deep: bool = False) -> Any:
        if isinstance(node, yaml.MappingNode):
            seen: set[str] = set()
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge" or not isinstance(key_node, yaml.ScalarNode):
                    continue
                if key_node.value in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"duplicate key {key_node.value!r}", key_node.start_mark
                    )
                seen.add(key_node.value)
        return super().construct_mapping(node, deep=deep)


# YAML 1.1 (PyYAML) needs a sign in the exponent; YAML 1.2 and Go do not.
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"),
)


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DocumentError(f"{path}: file not found", file=str(path)) from None
    except IsADirectoryError:
        raise DocumentError(f"{path}: is a directory, not a file", file=str(path)) from None
    except UnicodeDecodeError as e:
        raise DocumentError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})", file=str(path)) from None
    except OSError as e:
        raise DocumentError(f"{path}: cannot be read ({e.strerror})", file=str(path)) from None


def _yaml_error(path: Path, e: yaml.YAMLError) -> DocumentError:
    mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
    problem = getattr(e, "problem", None) or str(e)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    return DocumentError(f"{path}: {where}invalid YAML: {problem}", file=str(path))


def read_yaml(path: str | os.PathLike[str]) -> Any:
    """Parse one YAML document (``None`` for an empty file)."""
    p = Path(path)
    text = _read_text(p)
    try:
        return yaml.load(text, Loader=_Loader)  # noqa: S506 - a safe loader
    except yaml.YAMLError as e:
        raise _yaml_error(p, e) from None


def read_yaml_all(path: str | os.PathLike[str]) -> list[Any]:
    """Parse every YAML document of a file (a bundle holds two)."""
    p = Path(path)
    text = _read_text(p)
    try:
        return list(yaml.load_all(text, Loader=_Loader))  # noqa: S506 - a safe loader
    except yaml.YAMLError as e:
        raise _yaml_error(p, e) from None


def is_comment_key(key: Any) -> bool:
    return isinstance(key, str) and (key == "_comment" or key.startswith("_comment_"))


def strip_comment_keys(mapping: Any) -> Any:
    """A copy of ``mapping`` without ``_comment`` / ``_comment_*`` keys (non-mappings as given)."""
    if not isinstance(mapping, dict):
        return mapping
    return {k: v for k, v in mapping.items() if not is_comment_key(k)}


# --------------------------------------------------------------------------- cache

_CACHE: OrderedDict[tuple[str, str, int, int], Any] = OrderedDict()
_CACHE_SIZE = 128


# copy handed out -> (weak reference to it, the validated cached original)
_ORIGINS: dict[int, tuple[weakref.ref[Any], Any]] = {}


def note_origin(obj: Any, original: Any) -> None:
    """Record that ``obj`` is a copy of the validated document ``original``."""
    key = id(obj)

    def forget(_r: Any, key: int = key) -> None:
        _ORIGINS.pop(key, None)

    _ORIGINS[key] = (weakref.ref(obj, forget), original)


def copy_if_unchanged(obj: Any) -> Any:
    """A fresh copy of ``obj`` if it still equals the validated document it was copied from
    (so it needs no second validation), else ``None``."""
    entry = _ORIGINS.get(id(obj))
    if entry is None or entry[0]() is not obj or obj != entry[1]:
        return None
    out = fast_copy(entry[1])
    note_origin(out, entry[1])
    return out


def cached(kind: str, path: str | os.PathLike[str], build: Callable[[Path], T]) -> T:
    """``build(path)`` once per (kind, resolved path, mtime_ns, size); returns a deep copy."""
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
    out = fast_copy(hit)
    if isinstance(out, BaseModel):
        note_origin(out, hit)
    return out


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


def clear_cache() -> None:
    """Forget every cached document."""
    _CACHE.clear()


# --------------------------------------------------------------------------- errors


def show(value: Any, limit: int = 80) -> str:
    """A value as a message shows it: strings quoted, booleans as YAML spells them."""
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif value is None:
        text = "null"
    elif isinstance(value, str):
        text = f"'{value}'"
    elif isinstance(value, BaseModel):
        text = repr(value.model_dump(by_alias=True, exclude_none=True, warnings=False))
    else:
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def fmt_loc(loc: typing.Iterable[Any]) -> str:
    """``('pools', 0, 'engine', 'x')`` -> ``pools[0].engine.x``."""
    out = ""
    for part in loc:
        if isinstance(part, int) and not isinstance(part, bool):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def join_key(*parts: str) -> str:
    """Join dotted key paths, leaving ``[i]`` parts unseparated."""
    out = ""
    for p in parts:
        if not p:
            continue
        out = p if not out else (out + p if p.startswith("[") else f"{out}.{p}")
    return out


def _unwrap(tp: Any) -> list[Any]:
    """The concrete types an annotation may hold (Optional and Annotated removed)."""
    origin = get_origin(tp)
    if origin is typing.Annotated:
        return _unwrap(get_args(tp)[0])
    if origin is typing.Union or origin is types.UnionType:
        out: list[Any] = []
        for a in get_args(tp):
            if a is not type(None):
                out.extend(_unwrap(a))
        return out
    return [tp]


def _step(tp: Any, part: Any) -> Any:
    """The annotation one location step below ``tp``, or ``None``."""
    for t in _unwrap(tp):
        origin = get_origin(t)
        if isinstance(part, int) and origin in (list, tuple):
            args = get_args(t)
            return args[0] if args else None
        if isinstance(part, str) and origin is dict:
            args = get_args(t)
            return args[1] if len(args) == 2 else None
        if isinstance(part, str) and isinstance(t, type) and issubclass(t, BaseModel):
            for name, f in t.model_fields.items():
                if part == name or part in _spellings(name, f):
                    return f.annotation
    return None


def _spellings(name: str, f: Any) -> list[str]:
    va = f.validation_alias
    if isinstance(va, AliasChoices):
        return [c for c in va.choices if isinstance(c, str)]
    if isinstance(va, str):
        return [va]
    return [f.alias or name]


def _model_at(model_cls: type[BaseModel], loc: tuple[Any, ...]) -> Any:
    tp: Any = model_cls
    for part in loc:
        tp = _step(tp, part)
        if tp is None:
            return None
    return tp


def accepted_keys(tp: Any) -> list[str]:
    """The YAML keys a model accepts (every spelling)."""
    for t in _unwrap(tp):
        if isinstance(t, type) and issubclass(t, BaseModel):
            keys: list[str] = []
            for name, f in t.model_fields.items():
                keys.extend(_spellings(name, f))
            return keys
    return []


def _literal_values(tp: Any) -> list[Any]:
    for t in _unwrap(tp):
        if get_origin(t) is Literal:
            return list(get_args(t))
    return []


_TYPE_WORDS = {
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "an integer",
    "float_type": "a number",
    "float_parsing": "a number",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "string_type": "a string",
    "list_type": "a list",
    "tuple_type": "a list",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
}


def _num(x: Any) -> Any:
    return int(x) if isinstance(x, float) and x.is_integer() else x


def _describe(err: dict[str, Any], model_cls: type[BaseModel], loc: tuple[Any, ...]) -> str:
    kind = err["type"]
    ctx = err.get("ctx") or {}
    value = err.get("input")
    if kind in _TYPE_WORDS:
        text = f"expected {_TYPE_WORDS[kind]}, got {show(value)}"
        if kind == "string_type" and value is not None and not isinstance(value, (str, dict, list)):
            text += " (quote it in the YAML to make it a string)"
        return text
    if kind == "literal_error":
        allowed = _literal_values(_model_at(model_cls, loc))
        listed = ", ".join(str(a) if a != "" else "'' (empty)" for a in allowed) if allowed else ctx.get("expected", "")
        return f"{show(value)} is not one of {listed}"
    if kind == "greater_than_equal":
        return f"must be at least {_num(ctx.get('ge'))}, got {show(value)}"
    if kind == "greater_than":
        return f"must be greater than {_num(ctx.get('gt'))}, got {show(value)}"
    if kind == "less_than_equal":
        return f"must be at most {_num(ctx.get('le'))}, got {show(value)}"
    if kind == "less_than":
        return f"must be less than {_num(ctx.get('lt'))}, got {show(value)}"
    if kind == "finite_number":
        return f"must be a finite number, got {show(value)}"
    if kind == "too_short":
        return f"must list at least {ctx.get('min_length')} item(s), got {ctx.get('actual_length')}"
    if kind == "too_long":
        return f"must list at most {ctx.get('max_length')} item(s), got {ctx.get('actual_length')}"
    if kind == "string_too_short":
        return "must not be empty"
    if kind == "value_error" and isinstance(ctx.get("error"), Invalid):
        return ctx["error"].message
    if kind in ("value_error", "assertion_error") and ctx.get("error") is not None:
        return str(ctx["error"])
    return f"invalid value {show(value)}"


def to_document_error(exc: ValidationError, model_cls: type[BaseModel], file: str, prefix: str = "") -> DocumentError:
    """The first problem of a pydantic ``ValidationError`` as one ``DocumentError``."""
    errors = exc.errors(include_url=False)
    # an unknown key first: a misspelled key also reports the real one as missing
    err = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
    loc = tuple(err.get("loc", ()))
    kind = err["type"]
    value: Any = err.get("input")
    ctx = err.get("ctx") or {}
    if kind == "missing":
        key = join_key(prefix, fmt_loc(loc))
        where = join_key(prefix, fmt_loc(loc[:-1]))
        text = f"missing required key '{loc[-1]}'" if loc else "missing required key"
        value = None
    elif kind == "extra_forbidden":
        key = join_key(prefix, fmt_loc(loc))
        where = key
        accepted = accepted_keys(_model_at(model_cls, loc[:-1]))
        unknown = str(loc[-1]) if loc else ""
        text = f"unknown key '{unknown}'"
        text += f"; accepted keys are: {', '.join(accepted)}" if accepted else ""
        guess = difflib.get_close_matches(unknown, accepted, n=1, cutoff=0.6)
        if guess:
            text += f"; did you mean '{guess[0]}'?"
    else:
        inv = ctx.get("error")
        sub = inv.key if isinstance(inv, Invalid) else ""
        key = join_key(prefix, fmt_loc(loc), sub)
        where = key
        if isinstance(inv, Invalid):
            value = inv.value
        text = _describe(dict(err), model_cls, loc)
    more = len(errors) - 1
    if more:
        text += f" (and {more} more problem{'s' if more > 1 else ''} in this document)"
    message = f"{file}: {where}: {text}" if where else f"{file}: {text}"
    return DocumentError(message, file=file, key=key, value=value)


def validate(model_cls: type[M], data: Any, file: str | os.PathLike[str], prefix: str = "") -> M:
    """Validate ``data`` as ``model_cls``; any problem becomes one ``DocumentError``."""
    try:
        return model_cls.model_validate(data)
    except ValidationError as exc:
        raise to_document_error(exc, model_cls, str(file), prefix) from None


def require_mapping(data: Any, file: str | os.PathLike[str], what: str) -> dict[str, Any]:
    """``data`` if it is a mapping, else a ``DocumentError`` naming ``what`` was expected."""
    if data is None:
        raise DocumentError(f"{file}: the file is empty; expected {what}", file=str(file))
    if not isinstance(data, dict):
        raise DocumentError(
            f"{file}: expected {what} (a mapping of keys), got {show(data)}", file=str(file), value=data
        )
    return data

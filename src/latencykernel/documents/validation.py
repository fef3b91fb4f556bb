"""Validating a document with pydantic, and saying what is wrong in one plain sentence.

``validate(model_cls, data, file)`` returns the model or raises one ``DocumentError`` whose
message names the file, the dotted key path (``pools[0].engine.cache_dtype``), the value
and what would be accepted (the accepted keys, a close spelling, the allowed literals, the
range). ``require_mapping`` refuses a document that is not a mapping. ``show`` and
``fmt_loc`` format values and key paths as messages print them.
"""

from __future__ import annotations

import os
import types
import typing
from typing import Any, Literal, TypeVar, get_args, get_origin

from pydantic import AliasChoices, BaseModel, ValidationError

from latencykernel.documents.base_models import Invalid
from latencykernel.errors import DocumentError

__all__ = [
    "validate",
    "to_document_error",
    "require_mapping",
    "accepted_keys",
    "show",
    "fmt_loc",
    "join_key",
]

M = TypeVar("M", bound=BaseModel)


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
        import difflib  # only on the error path: open() does not pay for it

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

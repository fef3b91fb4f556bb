"""Reading YAML documents: the C loader when present, anchors resolved, duplicate keys
rejected, YAML 1.2 exponent floats (``2.0e4``) read as numbers, and every failure (missing
file, directory, non-UTF-8, bad YAML) a ``DocumentError`` naming the file and the place.
``strip_comment_keys`` drops ``_comment`` and ``_comment_*`` keys where a format allows them.

Parsing the registry's coefficient sets (1.3 MB of YAML) was most of a first ``open()``, so
the parsed data of every file read is kept as JSON in a content-addressed cache (``<cache dir>/parsed-yaml-v1/<sha256 of the text>.json``): the same
text always parses to the same data, so an entry never goes stale. The cache directory is
``$LATENCYKERNEL_CACHE_DIR``, else ``$XDG_CACHE_HOME/latencykernel``, else
``~/.cache/latencykernel``; ``LATENCYKERNEL_CACHE_DIR=""`` turns it off. Data JSON cannot
round-trip exactly (non-string keys, dates, NaN) is never cached; an unwritable directory is
skipped silently.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

from latencykernel.errors import DocumentError

__all__ = [
    "read_yaml",
    "read_yaml_all",
    "is_comment_key",
    "strip_comment_keys",
    "parse_cache_dir",
    "PARSE_CACHE_MIN_BYTES",
]


@functools.cache
def _loader() -> Any:
    """The safe loader class: rejects duplicate keys and reads ``7.0e3`` as a float (built on
    first use, so a load served from the parse cache never imports PyYAML)."""
    import yaml

    base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class _Loader(base):  # type: ignore[misc, valid-type]
        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
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
    return _Loader


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


def _yaml_error(path: Path, e: Exception) -> DocumentError:
    mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
    problem = getattr(e, "problem", None) or str(e)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    return DocumentError(f"{path}: {where}invalid YAML: {problem}", file=str(path))


PARSE_CACHE_MIN_BYTES = 0  # every file: a load served from the cache imports no PyYAML
_PARSE_CACHE_VERSION = "parsed-yaml-v1"  # bump when the loader's rules change


def parse_cache_dir() -> Path | None:
    """Where parsed YAML is kept as JSON (``None``: the cache is off)."""
    env = os.environ.get("LATENCYKERNEL_CACHE_DIR")
    if env is not None:
        return Path(env) / _PARSE_CACHE_VERSION if env else None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "latencykernel" / _PARSE_CACHE_VERSION


def _cached_parse(text: str, parse: Any) -> Any:
    """``parse(text)``, through the content-addressed JSON cache for large texts."""
    folder = parse_cache_dir() if len(text) >= PARSE_CACHE_MIN_BYTES else None
    if folder is None:
        return parse(text)
    entry = folder / (hashlib.sha256(text.encode("utf-8")).hexdigest() + ".json")
    try:
        return json.loads(entry.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        pass
    data = parse(text)
    try:
        dumped = json.dumps(data, allow_nan=False)
        if json.loads(dumped) == data:  # exact round trip only (str keys, no dates, no NaN)
            folder.mkdir(parents=True, exist_ok=True)
            tmp = entry.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(dumped, encoding="utf-8")
            os.replace(tmp, entry)
    except (OSError, TypeError, ValueError):
        pass
    return data


def _parser(path: Path, every: bool) -> Any:
    """A function parsing one file's text (``every``: all its documents), YAML errors as
    ``DocumentError`` naming the file and place."""

    def parse(text: str) -> Any:
        import yaml

        try:
            if every:
                return list(yaml.load_all(text, Loader=_loader()))  # noqa: S506 - a safe loader
            return yaml.load(text, Loader=_loader())  # noqa: S506 - a safe loader
        except yaml.YAMLError as e:
            raise _yaml_error(path, e) from None

    return parse


def read_yaml(path: str | os.PathLike[str]) -> Any:
    """Parse one YAML document (``None`` for an empty file)."""
    p = Path(path)
    return _cached_parse(_read_text(p), _parser(p, every=False))


def read_yaml_all(path: str | os.PathLike[str]) -> list[Any]:
    """Parse every YAML document of a file (a bundle holds two)."""
    p = Path(path)
    data = _cached_parse(_read_text(p), _parser(p, every=True))
    return data if isinstance(data, list) else [data]


def is_comment_key(key: Any) -> bool:
    return isinstance(key, str) and (key == "_comment" or key.startswith("_comment_"))


def strip_comment_keys(mapping: Any) -> Any:
    """A copy of ``mapping`` without ``_comment`` / ``_comment_*`` keys (non-mappings as given)."""
    if not isinstance(mapping, dict):
        return mapping
    return {k: v for k, v in mapping.items() if not is_comment_key(k)}

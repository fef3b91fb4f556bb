"""The three roots a scenario's names resolve against, and the paths inside them.

    <scenarios>/<scenario file>
    <catalog>/models/<model>/graph.yaml, model.yaml
    <catalog>/hardware/<chip>.yaml, networks/<fabric>.yaml, devices/storage.yaml
    <registry>/coefficients/<set>.yaml

A name that resolves to no file raises ``DocumentError`` naming the missing path and the
setting that named it. A name in a document is a name, never a path: one holding a path
separator, ``..``, a leading dot or a NUL, or longer than a file name may be, is refused
before any file is looked at, so a document can only reach files inside the three roots.
(A file path is what ``open`` takes on its command line, not what a document names.)
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from latencykernel.errors import DocumentError

__all__ = ["Repos"]

_PathLike = str | os.PathLike[str]


def _listing(name: str, names: list[str], limit: int = 12) -> str:
    pool = sorted(set(names))
    import difflib  # only on the error path: open() does not pay for it

    close = difflib.get_close_matches(name, pool, n=5, cutoff=0.5)
    ordered = close + [n for n in pool if n not in close]
    if not ordered:
        return "(none)"
    shown = ", ".join(ordered[:limit])
    return shown + (f", ... ({len(ordered)} in all)" if len(ordered) > limit else "")


def _said(setting: str, origin: str | None) -> str:
    """How a message names the setting: ``<file>: scenario key model`` or ``model``."""
    return f"{origin}: scenario key {setting}" if origin else setting


MAX_NAME_CHARS = 200  # a catalog name plus ".yaml" stays under every file system's 255


def _check_name(name: Any, what: str, setting: str, origin: str | None) -> str:
    """``name`` if it is a plain catalog name, else a DocumentError naming the setting."""
    if not isinstance(name, str) or not name:
        raise DocumentError(
            f"{_said(setting, origin)}: a {what} name must be a non-empty string, got {name!r}",
            key=setting,
            value=name,
        )
    shown = name if len(name) <= 60 else name[:57] + "..."
    why = ""
    if len(name) > MAX_NAME_CHARS:
        why = f"is {len(name)} characters long (at most {MAX_NAME_CHARS})"
    elif "/" in name or "\\" in name or os.sep in name or (os.altsep and os.altsep in name):
        why = "holds a path separator"
    elif name.startswith(".") or ".." in name:
        why = "starts with a dot or holds '..'"
    elif "\0" in name or any(ord(c) < 32 for c in name):
        why = "holds a control character"
    if why:
        raise DocumentError(
            f"{_said(setting, origin)}: {shown!r} {why}; a {what} is named by its catalog name (a file stem "
            f"inside the catalog or registry), never by a path",
            key=setting,
            value=name,
        )
    return name


def _is_file(p: Path) -> bool:
    """``p.is_file()`` that answers False (rather than raising) for a name the operating
    system rejects: too long, a symlink loop, a permission error."""
    try:
        return p.is_file()
    except (OSError, ValueError):
        return False


def _kind_of(p: Path) -> str:
    """What stands at ``p`` when it is not a regular file (for a message)."""
    try:
        if p.is_dir():
            return "a directory"
        if p.is_symlink() and not p.exists():
            return "a broken or looping symbolic link"
        if p.exists():
            return "not a regular file"
    except OSError as e:
        if e.errno == errno.ENAMETOOLONG:
            return ""  # reported as naming no file, with the reason
        return f"unreadable ({e.strerror or e})"
    except ValueError:
        return "not a valid path"
    return ""


def _stems(folder: Path) -> list[str]:
    return sorted(p.stem for p in folder.glob("*.yaml")) if folder.is_dir() else []


@dataclass(frozen=True)
class Repos:
    """Scenario directory, catalog checkout, registry checkout."""

    scenarios: Path
    catalog: Path
    registry: Path

    def __init__(self, scenarios: _PathLike, catalog: _PathLike, registry: _PathLike) -> None:
        object.__setattr__(self, "scenarios", Path(scenarios))
        object.__setattr__(self, "catalog", Path(catalog))
        object.__setattr__(self, "registry", Path(registry))

    @classmethod
    def default(cls) -> Repos:
        """The package's embedded ``data/scenarios``, ``data/catalog``, ``data/registry``."""
        from importlib.resources import files

        data = Path(str(files("latencykernel") / "data"))
        return cls(data / "scenarios", data / "catalog", data / "registry")

    # ------------------------------------------------------------------ paths

    def scenario_path(self, name: _PathLike, *, setting: str = "scenario", origin: str | None = None) -> Path:
        """``name`` relative to ``scenarios`` (``.yaml`` may be left off), or an existing file as given."""
        text = os.fspath(name) if isinstance(name, str | os.PathLike) else name
        if not isinstance(text, str) or not text or "\0" in text:
            raise DocumentError(
                f"{_said(setting, origin)}: a scenario must be a non-empty file path or name, got {name!r}",
                key=setting,
                value=name,
            )
        shown = text if len(text) <= 80 else text[:77] + "..."
        rel = self.scenarios / text
        candidates = [rel]
        if not text.endswith((".yaml", ".yml")):
            candidates.append(self.scenarios / f"{text}.yaml")
        candidates.append(Path(text))
        for c in candidates:
            if _is_file(c):
                return c
        for c in (Path(text), rel):
            kind = _kind_of(c)
            if kind:
                raise DocumentError(
                    f"{_said(setting, origin)}: {shown!r} is {kind}, not a scenario file; name a YAML file",
                    file=str(c),
                    key=setting,
                    value=text,
                )
        too_long = any(len(part) > 255 for part in Path(text).parts)
        raise DocumentError(
            f"{_said(setting, origin)}: {shown!r} names no file"
            + (" (a part of it is longer than a file name may be)" if too_long else "")
            + f"; available scenarios: {_listing(text[:200], self.list_scenarios())}",
            file=str(rel)[:300],
            key=setting,
            value=text,
        )

    @staticmethod
    def _existing(
        p: Path,
        name: str,
        what: str,
        setting: str,
        origin: str | None,
        available: str,
        choices: Callable[[], list[str]],
    ) -> Path:
        """``p`` if it is a file, else a DocumentError naming the setting, the name and the
        names that would resolve."""
        if not _is_file(p):
            raise DocumentError(
                f"{_said(setting, origin)}: {name!r} has no {what} at {p}; {available}: {_listing(name, choices())}",
                file=str(p),
                key=setting,
                value=name,
            )
        return p

    def graph_path(self, model: str, *, setting: str = "model", origin: str | None = None) -> Path:
        """``<catalog>/models/<model>/graph.yaml``."""
        _check_name(model, "model", setting, origin)
        return self._existing(
            self.catalog / "models" / model / "graph.yaml",
            model,
            "graph",
            setting,
            origin,
            "available models",
            self.list_models,
        )

    def model_identity_path(self, model: str, *, setting: str = "model", origin: str | None = None) -> Path:
        """``<catalog>/models/<model>/model.yaml``."""
        _check_name(model, "model", setting, origin)
        return self._existing(
            self.catalog / "models" / model / "model.yaml",
            model,
            "model.yaml",
            setting,
            origin,
            "catalog models",
            self._model_dirs,
        )

    def chip_path(self, name: str, *, setting: str = "hardware", origin: str | None = None) -> Path:
        """``<catalog>/hardware/<name>.yaml``."""
        _check_name(name, "chip", setting, origin)
        return self._existing(
            self.catalog / "hardware" / f"{name}.yaml",
            name,
            "chip file",
            setting,
            origin,
            "available chips",
            lambda: _stems(self.catalog / "hardware"),
        )

    def fabric_path(self, name: str, *, setting: str = "fabric", origin: str | None = None) -> Path:
        """``<catalog>/networks/<name>.yaml``."""
        _check_name(name, "fabric", setting, origin)
        return self._existing(
            self.catalog / "networks" / f"{name}.yaml",
            name,
            "fabric file",
            setting,
            origin,
            "available fabrics",
            lambda: _stems(self.catalog / "networks"),
        )

    def storage_path(self, *, origin: str | None = None) -> Path:
        """``<catalog>/devices/storage.yaml`` (every scenario reads it)."""
        p = self.catalog / "devices" / "storage.yaml"
        if not p.is_file():
            where = f"{origin}: " if origin else ""
            raise DocumentError(
                f"{where}the catalog has no storage classes file at {p} (every scenario reads it)", file=str(p)
            )
        return p

    def coefficient_path(self, name: str, *, setting: str = "coefficients", origin: str | None = None) -> Path:
        """``<registry>/coefficients/<name>.yaml``."""
        _check_name(name, "coefficient set", setting, origin)
        return self._existing(
            self.registry / "coefficients" / f"{name}.yaml",
            name,
            "coefficient set",
            setting,
            origin,
            "available sets",
            lambda: _stems(self.registry / "coefficients"),
        )

    # ------------------------------------------------------------------ listings

    def list_scenarios(self) -> list[str]:
        """Every ``*.yaml`` under ``scenarios``, as sorted relative paths."""
        if not self.scenarios.is_dir():
            return []
        return sorted(p.relative_to(self.scenarios).as_posix() for p in self.scenarios.rglob("*.yaml") if p.is_file())

    def list_models(self) -> list[str]:
        """Catalog model directories that hold a ``graph.yaml``; a catalog without a
        ``models`` folder is refused (it is not a catalog, rather than one with no model)."""
        root = self._catalog_folder("models")
        return sorted(d.name for d in root.iterdir() if (d / "graph.yaml").is_file())

    def list_chips(self) -> list[str]:
        """Catalog chip names (file stems under ``hardware``); a catalog without a
        ``hardware`` folder is refused."""
        return _stems(self._catalog_folder("hardware"))

    def _catalog_folder(self, name: str) -> Path:
        root = self.catalog / name
        if not root.is_dir():
            raise DocumentError(
                f"catalog {str(self.catalog)!r}: no {name}/ folder, so it is not a blis-catalog checkout "
                "(--catalog names the checkout's root)",
                file=str(root),
                key="catalog",
                value=str(self.catalog),
            )
        return root

    def _model_dirs(self) -> list[str]:
        root = self.catalog / "models"
        return sorted(d.name for d in root.iterdir() if d.is_dir()) if root.is_dir() else []

    def _repo_ids(self) -> dict[str, str]:
        """``model.yaml`` ``source.repo`` -> catalog name, for every model that states one."""
        from latencykernel.documents.yaml_loader import read_yaml

        out: dict[str, str] = {}
        for name in self._model_dirs():
            p = self.catalog / "models" / name / "model.yaml"
            if not p.is_file():
                continue
            try:
                data: Any = read_yaml(p)
            except DocumentError:
                continue
            repo = (
                data.get("source", {}).get("repo")
                if isinstance(data, dict) and isinstance(data.get("source"), dict)
                else None
            )
            if isinstance(repo, str):
                out.setdefault(repo, name)
        return out

    # ------------------------------------------------------------------ lookups

    def find_model(self, name_or_hf_id: str, *, setting: str = "model") -> str:
        """The catalog name for a catalog directory name or a Hugging Face repo id."""
        if not isinstance(name_or_hf_id, str) or not name_or_hf_id or len(name_or_hf_id) > MAX_NAME_CHARS:
            _check_name(name_or_hf_id, "model", setting, None)
        dirs = self._model_dirs()
        if name_or_hf_id in dirs:
            return name_or_hf_id
        lowered = {d.lower(): d for d in dirs}
        if name_or_hf_id.lower() in lowered:
            return lowered[name_or_hf_id.lower()]
        repos = self._repo_ids()
        matches = sorted({n for r, n in repos.items() if r.lower() == name_or_hf_id.lower()})
        with_graph = [m for m in matches if (self.catalog / "models" / m / "graph.yaml").is_file()]
        if len(matches) == 1 or len(with_graph) == 1:
            return (with_graph or matches)[0]
        if len(matches) > 1:
            raise DocumentError(
                f"{setting}: {name_or_hf_id!r} is the source of several catalog models "
                f"({', '.join(matches)}); name one",
                key=setting,
                value=name_or_hf_id,
            )
        known = dirs + list(repos)
        raise DocumentError(
            f"{setting}: {name_or_hf_id!r} is neither a catalog model under {self.catalog / 'models'} nor the "
            f"Hugging Face repo of one; close names: {_listing(name_or_hf_id, known)}",
            key=setting,
            value=name_or_hf_id,
        )

    def _same_figures(self, chips: list[str]) -> bool:
        """Whether every chip file in ``chips`` states the same figures (aliases of one part)."""
        from latencykernel.documents.chip import load_chip

        try:
            dumps = [load_chip(self.chip_path(c)).model_dump() for c in chips]
        except DocumentError:
            return False
        return all(d == dumps[0] for d in dumps[1:])

    def find_chip(self, name: str, *, setting: str = "hardware") -> str:
        """The catalog chip for an exact file stem, else a unique prefix (``gb200`` -> ``gb200-nvl72``)."""
        _check_name(name, "chip", setting, None)
        chips = self.list_chips()
        if name in chips:
            return name
        lowered = [c for c in chips if c.lower() == name.lower()]
        if len(lowered) == 1:
            return lowered[0]
        prefixed = [c for c in chips if c.lower().startswith(name.lower())]
        if len(prefixed) == 1:
            return prefixed[0]
        if len(prefixed) > 1 and self._same_figures(prefixed):
            return prefixed[0]  # aliases of one part (a100 -> a100-80 = a100-sxm): any of them prices alike
        if len(prefixed) > 1:
            raise DocumentError(
                f"{setting}: {name!r} matches several chips ({', '.join(prefixed)}); name one", key=setting, value=name
            )
        raise DocumentError(
            f"{setting}: {name!r} is not a catalog chip under {self.catalog / 'hardware'}; available chips: "
            f"{_listing(name, chips)}",
            key=setting,
            value=name,
        )

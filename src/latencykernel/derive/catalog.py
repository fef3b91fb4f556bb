"""The embedded model catalog (``latencykernel/data/catalog/models/<name>/``).

Each model directory holds the vendor ``config.json`` (transcribed, with a ``_source``
key), the derived ``graph.yaml`` and ``model.yaml`` (identity: Hugging Face repo and
revision).  This module only locates files; reading graphs into pydantic models belongs to
``documents/graph.py``.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from latencykernel.errors import DocumentError

__all__ = ["models_dir", "model_names", "find_model_dir", "read_yaml"]


def models_dir() -> Path:
    """The embedded ``models/`` directory."""
    return Path(str(resources.files("latencykernel"))) / "data" / "catalog" / "models"


def model_names(root: Path | None = None) -> list[str]:
    """Names of the model directories that hold a config.json, sorted."""
    base = root or models_dir()
    if not base.is_dir():
        return []
    return sorted(p.name for p in base.iterdir() if (p / "config.json").is_file())


def read_yaml(path: Path) -> Any:
    """Parse a YAML file, mapping I/O and syntax errors to DocumentError."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise DocumentError(f"cannot read {path}: {e.strerror or e}", file=str(path)) from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise DocumentError(f"{path} is not valid YAML: {e}", file=str(path)) from None


def find_model_dir(name_or_repo: str, root: Path | None = None) -> Path:
    """The catalog directory of a model, by directory name or by Hugging Face repo id
    (``deepseek-ai/DeepSeek-R1``, matched without regard to case)."""
    base = root or models_dir()
    direct = base / name_or_repo
    if "/" not in name_or_repo and (direct / "graph.yaml").is_file():
        return direct
    wanted = name_or_repo.lower()
    for name in model_names(base):
        ident = base / name / "model.yaml"
        if not ident.is_file():
            continue
        doc = read_yaml(ident)
        repo = doc.get("source", {}).get("repo", "") if isinstance(doc, dict) else ""
        if isinstance(repo, str) and repo.lower() == wanted:
            return base / name
        if name.lower() == wanted:
            return base / name
    raise DocumentError(
        f"no model {name_or_repo!r} in the embedded catalog; known: {', '.join(model_names(base))}",
        key="model",
        value=name_or_repo,
    )

"""The embedded model catalog (``latencykernel/data/catalog/models/<name>/``).

Each model directory holds the vendor ``config.json`` (transcribed, with a ``_source``
key), the derived ``graph.yaml`` and ``model.yaml`` (identity: Hugging Face repo and
revision).  This module only lists the directories the deriver regenerates; finding a
model by name or repo id is ``Repos.find_model``, and reading a graph is
``documents.graph.load_graph``.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

__all__ = ["models_dir", "model_names"]


def models_dir() -> Path:
    """The embedded ``models/`` directory."""
    return Path(str(resources.files("latencykernel"))) / "data" / "catalog" / "models"


def model_names(root: Path | None = None) -> list[str]:
    """Names of the model directories that hold a config.json, sorted."""
    base = root or models_dir()
    if not base.is_dir():
        return []
    return sorted(p.name for p in base.iterdir() if (p / "config.json").is_file())

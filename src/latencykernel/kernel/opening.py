"""From files (or catalog names) to a kernel."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

from latencykernel.kernel.build import new
from latencykernel.kernel.kernel import Kernel
from latencykernel.repos import Repos

__all__ = ["open", "open_pool", "build"]


def open_pool(scenario: str | os.PathLike[str], repos: Repos | None = None, pool: int = 0) -> Kernel:
    """Read ``scenario`` and everything it names, and build a kernel for pool ``pool``
    (the cached documents are shared with the kernel, not copied: see ``shared_documents``)."""
    from latencykernel.inputs import open_inputs, shared_documents

    with shared_documents():
        return new(open_inputs(scenario, repos, pool))


def open(scenario: str | os.PathLike[str], repos: Repos | None = None) -> Kernel:  # noqa: A001 - the guide's name
    """``open_pool(scenario, repos, 0)``: the deployment's first pool."""
    return open_pool(scenario, repos, 0)


def _model_file(model: str | os.PathLike[str]) -> Path | None:
    """``model`` as a graph file when it names one on disk (a config.json, a graph.yaml, or a
    directory holding either), else None (a catalog name or Hugging Face id)."""
    if not isinstance(model, (str, os.PathLike)):
        return None
    text = os.fspath(model)
    if not (text.endswith((".json", ".yaml", ".yml")) or os.sep in text or text.startswith(".")):
        return None  # "meta-llama/Llama-3.1-8B-Instruct" is an id: only paths that look like files are read
    p = Path(text)
    try:
        if p.is_dir():
            for name in ("graph.yaml", "config.json"):
                if (p / name).is_file():
                    return p / name
            return None
        return p if p.is_file() else None
    except OSError:
        return None


def graph_from_file(path: str | os.PathLike[str], name: str | None = None) -> Any:
    """The validated ``ModelGraph`` of a ``graph.yaml``, or derived in memory from a Hugging
    Face ``config.json`` (as ``latencykernel graph from-hf`` derives it)."""
    from latencykernel.documents.common import validate
    from latencykernel.documents.graph import ModelGraph, load_graph

    p = Path(path)
    if p.suffix == ".json":
        from latencykernel.derive.hf import derive_graph_from_file

        return validate(ModelGraph, derive_graph_from_file(p, name=name), str(p))
    return load_graph(p)


def build(model: str, hardware: str, **settings: Any) -> Kernel:
    """A kernel for a deployment made in memory from catalog names (see ``build_inputs``);
    it goes through exactly the validation a file does (the cached documents are shared with
    the kernel, not copied: see ``shared_documents``).

    ``model`` is a catalog name, a Hugging Face repo id, or a path to a model the catalog
    lacks: a Hugging Face ``config.json`` (its graph derived in memory) or a ``graph.yaml``;
    e.g. ``build("llama-3.1-8b-instruct", "h100", tp=1)`` or ``build("my/config.json", "h100")``.
    """
    from latencykernel.inputs import build_inputs, shared_documents

    path = _model_file(model)
    if path is None:
        with shared_documents():
            return new(build_inputs(model, hardware, **settings))
    graph = graph_from_file(path)
    facts = _checkpoint_of(path, graph)
    with shared_documents():
        # Any catalog model carries the built documents while its graph is swapped for the
        # user's own: the first one listed (its graph, name and checkpoint facts are replaced).
        repos = settings.get("repos") or Repos.default()
        inputs = build_inputs(repos.list_models()[0], hardware, **settings)
        scenario = inputs.scenario.model_copy(
            update={"model": graph.name, "name": f"{graph.name}-on-{inputs.scenario.cluster.hardware}"}
        )
        files = {**inputs.files, "model": str(path)}
        files.pop("checkpoint", None)
        if facts is not None:
            files["checkpoint"] = facts.file
        return new(dataclasses.replace(inputs, scenario=scenario, model=graph, files=files, checkpoint=facts))


def _checkpoint_of(path: Path, graph: Any) -> Any:
    """The checkpoint facts (max_position_embeddings, quantization) of a user's model: its
    config.json itself, or the config.json a graph.yaml names beside it; None otherwise, so
    the carrier's facts never stand in for the user's model."""
    from latencykernel.documents.checkpoint import load_checkpoint_facts

    if path.suffix == ".json":
        return load_checkpoint_facts(path)
    d = graph.derived_from
    if d is None or d.format != "hf_config_json" or "/" in d.path or "\\" in d.path or d.path in ("", ".", ".."):
        return None
    cfg = path.parent / d.path
    return load_checkpoint_facts(cfg) if cfg.is_file() else None

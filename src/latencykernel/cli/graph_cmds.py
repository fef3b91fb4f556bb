"""``latencykernel graph ...``: derive a model graph from a Hugging Face config, and count
a graph's parameters.

    latencykernel graph from-hf config.json > graph.yaml
    latencykernel graph params deepseek-v3             # embedded catalog name
    latencykernel graph params deepseek-ai/DeepSeek-R1 # or its Hugging Face repo id
    latencykernel graph params path/to/graph.yaml      # or a file (graph.yaml / config.json)
    latencykernel graph params mymodel --catalog ../blis-catalog

Every graph, read or derived, is validated as a ``documents.graph.ModelGraph`` before it is
printed or counted. Bad input raises DocumentError, which the command's main maps to exit
code 2.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from latencykernel.cli import app
from latencykernel.cli.common import CatalogDir, repos_from
from latencykernel.derive.counts import active_parameter_count, layer_count, parameter_count
from latencykernel.derive.hf import derive_graph_from_file, render_graph_yaml
from latencykernel.documents.common import validate
from latencykernel.documents.graph import ModelGraph, load_graph

__all__ = ["graph_app"]

graph_app = typer.Typer(
    help="Model graphs: derive one from a Hugging Face config.json, count its parameters.\n\n"
    "\b\nExample:\n  latencykernel graph params deepseek-v3",
    no_args_is_help=True,
)
app.add_typer(graph_app, name="graph")


@graph_app.command("from-hf")
def from_hf(
    config_json: Annotated[Path, typer.Argument(help="A Hugging Face config.json.")],
    name: Annotated[
        str | None,
        typer.Option("--name", help="Graph name (default: the config's directory name)."),
    ] = None,
) -> None:
    """Print the BLIS graph.yaml derived from CONFIG_JSON.

    \b
    Example:
      latencykernel graph from-hf path/to/config.json > graph.yaml
    """
    doc = derive_graph_from_file(config_json, name=name)
    typer.echo(render_graph_yaml(doc, str(config_json)), nl=False)


def _load_graph(model_or_graph: str, catalog: Path | None) -> tuple[str, ModelGraph]:
    """(label, validated graph) for a file path, a model directory, or a catalog name or
    Hugging Face repo id (looked up in ``catalog``, default the embedded one)."""
    path = Path(model_or_graph)
    if path.is_dir():
        path = path / "graph.yaml"
    if path.is_file():
        if path.suffix == ".json":
            return str(path), validate(ModelGraph, derive_graph_from_file(path), path)
        return str(path), load_graph(path)
    repos = repos_from(None, catalog, None)
    model = repos.find_model(model_or_graph)
    path = repos.graph_path(model)
    return f"{model} ({path})", load_graph(path)


def _billions(n: int) -> str:
    return f"{n:>19,d}  ({n / 1e9:,.2f} B)"


@graph_app.command("params")
def params(
    model_or_graph: Annotated[
        str,
        typer.Argument(help="Embedded model name, Hugging Face repo id, graph.yaml, model directory or config.json."),
    ],
    catalog: Path | None = CatalogDir,
) -> None:
    """Print a graph's total and active parameter counts.

    \b
    Examples:
      latencykernel graph params deepseek-v3
      latencykernel graph params path/to/config.json
    """
    label, graph = _load_graph(model_or_graph, catalog)
    typer.echo(f"model:             {label}")
    typer.echo(f"layers:            {layer_count(graph)}")
    typer.echo(f"total parameters:  {_billions(parameter_count(graph))}")
    if graph.speculator is not None:
        typer.echo(f"  with speculator: {_billions(parameter_count(graph, include_speculator=True))}")
    typer.echo(f"active parameters: {_billions(active_parameter_count(graph))}")

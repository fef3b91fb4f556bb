"""``latencykernel graph ...``: derive a model graph from a Hugging Face config, and count
a graph's parameters.

    latencykernel graph from-hf config.json > graph.yaml
    latencykernel graph params deepseek-v3             # embedded catalog name
    latencykernel graph params deepseek-ai/DeepSeek-R1 # or its Hugging Face repo id
    latencykernel graph params path/to/graph.yaml      # or a file (graph.yaml / config.json)

Bad input raises DocumentError, which the command's main maps to exit code 2.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from latencykernel.cli import app
from latencykernel.derive.catalog import find_model_dir, read_yaml
from latencykernel.derive.counts import active_parameter_count, layer_count, parameter_count
from latencykernel.derive.hf import derive_graph_from_file, render_graph_yaml
from latencykernel.errors import DocumentError

__all__ = ["graph_app"]

graph_app = typer.Typer(
    help="Model graphs: derive one from a Hugging Face config.json, count its parameters.",
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
    """Print the BLIS graph.yaml derived from CONFIG_JSON."""
    doc = derive_graph_from_file(config_json, name=name)
    typer.echo(render_graph_yaml(doc, str(config_json)), nl=False)


def _load_graph(model_or_graph: str) -> tuple[str, Any]:
    """(label, graph dict) for a file path, a model directory, a catalog name or repo id."""
    path = Path(model_or_graph)
    if path.is_dir():
        path = path / "graph.yaml"
    if path.is_file():
        if path.suffix == ".json":
            return str(path), derive_graph_from_file(path)
        doc = read_yaml(path)
        label = str(path)
    else:
        model_dir = find_model_dir(model_or_graph)
        path = model_dir / "graph.yaml"
        doc = read_yaml(path)
        label = f"{model_dir.name} ({path})"
    if not isinstance(doc, dict) or doc.get("kind") != "ModelGraph":
        raise DocumentError(f"{path} is not a ModelGraph document (kind: ModelGraph)",
                            file=str(path), key="kind")
    return label, doc


def _billions(n: int) -> str:
    return f"{n:>19,d}  ({n / 1e9:,.2f} B)"


@graph_app.command("params")
def params(
    model_or_graph: Annotated[
        str,
        typer.Argument(help="Embedded model name, Hugging Face repo id, graph.yaml, "
                            "model directory or config.json."),
    ],
) -> None:
    """Print a graph's total and active parameter counts."""
    label, doc = _load_graph(model_or_graph)
    typer.echo(f"model:             {label}")
    typer.echo(f"layers:            {layer_count(doc)}")
    typer.echo(f"total parameters:  {_billions(parameter_count(doc))}")
    if doc.get("speculator"):
        typer.echo(f"  with speculator: {_billions(parameter_count(doc, include_speculator=True))}")
    typer.echo(f"active parameters: {_billions(active_parameter_count(doc))}")

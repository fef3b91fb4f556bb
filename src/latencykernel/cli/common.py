"""Options and helpers shared by the sub-commands."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

ScenariosDir = typer.Option(None, "--scenarios-dir", help="Directory of scenario files (default: embedded).")
CatalogDir = typer.Option(None, "--catalog", help="A blis-catalog checkout (default: embedded).")
RegistryDir = typer.Option(None, "--registry", help="A blis-registry checkout (default: embedded).")
Json = typer.Option(False, "--json", help="Print JSON instead of a table.")


def repos_from(scenarios: Path | None, catalog: Path | None, registry: Path | None) -> Any:
    from latencykernel.repos import Repos

    d = Repos.default()
    if scenarios is None and catalog is None and registry is None:
        return d
    return Repos(scenarios or d.scenarios, catalog or d.catalog, registry or d.registry)


def open_kernel(scenario: str, pool: int, scenarios: Path | None, catalog: Path | None, registry: Path | None) -> Any:
    """The kernel for one pool of a scenario, against the embedded data or the given roots."""
    from latencykernel.kernel import open_pool

    return open_pool(scenario, repos_from(scenarios, catalog, registry), pool)


def console() -> Any:
    from rich.console import Console

    return Console(highlight=False)


def print_json(obj: Any) -> None:
    typer.echo(json.dumps(obj, indent=2, sort_keys=False))


GIB = float(1 << 30)
MIB = float(1 << 20)

"""Rewrite every embedded ``graph.yaml`` from its ``config.json``.

    python -m latencykernel.derive.regenerate            # rewrite the graphs
    python -m latencykernel.derive.regenerate --check    # exit 1 if any graph differs

The catalog's CI runs the same check so a hand edit or a deriver change without
regenerated files cannot land.  ``--models DIR`` points at another catalog ``models/``
directory.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from latencykernel.derive.catalog import model_names, models_dir
from latencykernel.derive.hf import derive_graph_from_bytes, render_graph_yaml
from latencykernel.errors import LatencyKernelError

__all__ = ["expected_graph_text", "regenerate", "main"]


def expected_graph_text(model_dir: Path) -> str:
    """The graph.yaml text the deriver writes for ``model_dir/config.json``."""
    config = model_dir / "config.json"
    doc = derive_graph_from_bytes(config.read_bytes(), name=model_dir.name, file=str(config))
    return render_graph_yaml(doc, f"models/{model_dir.name}/config.json")


def regenerate(root: Path | None = None, *, check: bool = False) -> list[str]:
    """Derive every model under ``root``; write the graphs unless ``check``.

    Returns the names whose graph.yaml differed (or was missing) before the run.
    """
    base = root or models_dir()
    changed: list[str] = []
    for name in model_names(base):
        model_dir = base / name
        text = expected_graph_text(model_dir)
        target = model_dir / "graph.yaml"
        current = target.read_text(encoding="utf-8") if target.is_file() else None
        if current != text:
            changed.append(name)
            if not check:
                target.write_text(text, encoding="utf-8")
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m latencykernel.derive.regenerate", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--check", action="store_true", help="do not write; exit 1 when any graph.yaml differs from its config"
    )
    parser.add_argument(
        "--models", type=Path, default=None, help="catalog models/ directory (default: the embedded one)"
    )
    args = parser.parse_args(argv)
    try:
        changed = regenerate(args.models, check=args.check)
    except LatencyKernelError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.check:
        if changed:
            print(
                "graph.yaml out of date (run python -m latencykernel.derive.regenerate): " + ", ".join(changed),
                file=sys.stderr,
            )
            return 1
        print("all embedded graphs match their config.json")
        return 0
    print(f"rewrote {len(changed)} graph(s)" + (": " + ", ".join(changed) if changed else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())

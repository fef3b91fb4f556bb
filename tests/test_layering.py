"""Imports only point down the flow: documents -> resolve -> kernel, which calls the pure laws
in price/; scenarios and the CLI sit on top (docs/architecture.md)."""

from __future__ import annotations

import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "latencykernel"

# what each part of the package may import from latencykernel (besides itself)
ALLOWED = {
    "errors": set(),
    "price": set(),
    # the one seconds parser of the CLI and the search ("50ms", "0.05s"; a bare number in text refused)
    "durations": {"errors"},
    "batch": {"errors"},
    "step_model": {"errors", "batch"},
    "limits": {"errors", "batch", "step_model"},
    "documents": {"errors"},
    "repos": {"errors", "documents"},
    "inputs": {"errors", "documents", "repos"},
    "derive": {"errors", "documents", "repos"},
    "resolve": {"errors", "price"},
    "plan": {"errors", "price", "resolve"},
    # derive: build() takes a Hugging Face config.json and derives its graph in memory
    "kernel": {
        "errors",
        "batch",
        "step_model",
        "limits",
        "price",
        "resolve",
        "plan",
        "documents",
        "inputs",
        "repos",
        "derive",
    },
    "scenarios": {
        "errors",
        "batch",
        "step_model",
        "limits",
        "price",
        "resolve",
        "plan",
        "documents",
        "inputs",
        "repos",
        "derive",
        "kernel",
    },
    # serving applies vLLM's start-up rules (resolve.startup) to the settings it is given
    "serving": {"errors", "batch", "step_model", "resolve"},
    # charts draw result objects; matplotlib is imported only here
    "charts": {"errors", "batch", "step_model", "scenarios", "serving"},
    "cli": {
        "charts",
        "errors",
        "batch",
        "step_model",
        "limits",
        "price",
        "resolve",
        "plan",
        "documents",
        "inputs",
        "repos",
        "derive",
        "kernel",
        "scenarios",
        "serving",
        "search",
        "validation",
        "durations",
    },
    # search builds deployments in memory (documents, inputs, kernel) and simulates them (serving)
    "search": {
        "errors",
        "batch",
        "step_model",
        "documents",
        "inputs",
        "repos",
        "kernel",
        "resolve",
        "serving",
        "durations",
    },
    # validation opens step models (kernel), reads the StepModel contract, and uses the
    # serving simulation when it is importable
    # validation, like serving, applies vLLM's start-up rules (resolve.startup) to a run's settings
    "validation": {"errors", "batch", "step_model", "documents", "kernel", "inputs", "repos", "serving", "resolve"},
}
IMPORT = re.compile(r"^\s*(?:from|import)\s+latencykernel\.([a-z_]+)", re.M)
# ``from latencykernel import serving, kernel`` (one line or parenthesised) names parts too
FROM_PACKAGE = re.compile(r"^\s*from\s+latencykernel\s+import\s+(\([^)]*\)|[^\n]+)", re.M)
# names the package itself defines rather than parts: the version is metadata every part may read
PACKAGE_NAMES = {"__version__"}


def imported_parts(text: str) -> set[str]:
    """The parts of latencykernel a module's text imports, in either import form."""
    found = set(IMPORT.findall(text))
    for group in FROM_PACKAGE.findall(text):
        for item in group.strip("()").split(","):
            name = item.split("#")[0].strip().split(" as ")[0].strip()
            if name and name not in PACKAGE_NAMES:
                found.add(name)
    return found


def part_of(path: Path) -> str:
    rel = path.relative_to(SRC)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def test_imports_point_down_the_flow() -> None:
    wrong = []
    for path in SRC.rglob("*.py"):
        part = part_of(path)
        if part not in ALLOWED:
            continue
        for target in imported_parts(path.read_text()):
            if target != part and target not in ALLOWED[part]:
                wrong.append(f"{path.relative_to(SRC)} imports latencykernel.{target}")
    assert not wrong, wrong


def test_both_import_forms_are_seen() -> None:
    """Guards the layering check missing ``from latencykernel import X``: an upward import
    written that way passed unseen."""
    text = (
        "from latencykernel import serving\n"
        "    from latencykernel import kernel as k, errors  # why\n"
        "from latencykernel import (\n    search,\n    charts,\n)\n"
        "from latencykernel import __version__\n"
        "import latencykernel.repos\n"
        "from latencykernel.batch import Batch\n"
    )
    assert imported_parts(text) == {"serving", "kernel", "errors", "search", "charts", "repos", "batch"}


def test_every_part_is_placed_in_the_flow() -> None:
    parts = {part_of(p) for p in SRC.rglob("*.py")} - {"__init__", "__main__"}
    assert parts <= set(ALLOWED), parts - set(ALLOWED)

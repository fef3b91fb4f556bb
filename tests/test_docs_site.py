"""The documentation site's generated parts are current: the CLI reference is the commands'
own --help, every picture a page shows exists and is a PNG, and every page is in the nav."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def test_cli_reference_is_generated_from_the_commands() -> None:
    """Guards docs/reference/cli.md drifting from the commands (rerun tools/gen_cli_docs.py)."""
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_cli_docs.py"), "--check"], timeout=300)
    assert r.returncode == 0, "docs/reference/cli.md is stale: run python tools/gen_cli_docs.py"


def test_every_picture_exists_and_comes_from_the_chart_tool() -> None:
    """Guards a page showing a missing picture, or one the tool does not draw (hand-made)."""
    tool = (ROOT / "tools" / "gen_doc_charts.py").read_text()
    # or by the command a page gives for it (the accuracy chart: the scoring run's --plot)
    commands = "".join(pg.read_text() for pg in DOCS.rglob("*.md"))
    shown = set()
    for page in DOCS.rglob("*.md"):
        for img in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", page.read_text()):
            p = (page.parent / img).resolve()
            assert p.is_file(), f"{page.name} shows {img}, which does not exist"
            assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
            shown.add(p.name)
            drawn = f'"{p.name}"' in tool or f"--plot docs/img/{p.name}" in commands
            assert drawn, f"{p.name} is not drawn by tools/gen_doc_charts.py or a command a page gives"
    assert {"anatomy.png", "capacity.png"} <= shown


def test_the_nav_names_every_page_but_the_generated_scenarios() -> None:
    """Guards a new page left out of the site's navigation."""
    cfg = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    named: set[str] = set()

    def walk(node: object) -> None:
        if isinstance(node, str):
            named.add(node)
        elif isinstance(node, dict):
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(cfg["nav"])
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    missing = {p for p in pages - named if not p.startswith("scenarios/")}
    assert not missing, missing
    assert cfg["strict"] is True


def test_the_readme_command_table_names_every_command() -> None:
    """Guards the README's command table stopping at ``explain`` while serve, search and
    validate exist: every command of ``latencykernel --help`` has a row."""
    from latencykernel.cli import COMMANDS

    readme = (ROOT / "README.md").read_text()
    rows = re.findall(r"^\| `latencykernel ([a-z-]+)[^`]*`(?: / `([a-z-]+)`)?", readme, re.M)
    listed = {name for row in rows for name in row if name}
    assert set(COMMANDS) - listed == set(), set(COMMANDS) - listed

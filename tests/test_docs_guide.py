"""docs/guide.md runs: each ```python block is executed in order in one namespace, and what
it prints is compared with the ```text block that follows it."""

from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
BLOCK = re.compile(r"```(python|text)\n(.*?)```", re.S)


def pairs(page: Path) -> list[tuple[str, str | None]]:
    """(code, the output shown under it, or None when the block prints nothing shown)."""
    blocks = BLOCK.findall(page.read_text())
    out: list[tuple[str, str | None]] = []
    for i, (kind, body) in enumerate(blocks):
        if kind == "python":
            nxt = blocks[i + 1] if i + 1 < len(blocks) else None
            out.append((body, nxt[1] if nxt is not None and nxt[0] == "text" else None))
    return out


def test_the_guide_has_examples() -> None:
    """Guards the guide losing its executed examples (a test over nothing)."""
    assert len(pairs(DOCS / "guide.md")) >= 8


def test_the_guide_prints_what_it_shows(tmp_path: Path) -> None:
    """Guards the guide's figures drifting from what the code prints."""
    ns: dict[str, object] = {}
    here = os.getcwd()
    os.chdir(tmp_path)  # the chart examples write their files here
    try:
        for n, (code, shown) in enumerate(pairs(DOCS / "guide.md")):
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                exec(compile(code, f"guide.md block {n}", "exec"), ns)  # noqa: S102 - our own documentation
            if shown is not None:
                assert buf.getvalue() == shown, f"block {n}:\n{code}"
    finally:
        os.chdir(here)
    for name in ("anatomy.png", "capacity.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("page", sorted(p.name for p in (DOCS / "concepts").glob("*.md")))
def test_concept_pages_run(page: str) -> None:
    """Guards the concept pages' examples going stale."""
    ns: dict[str, object] = {}
    for n, (code, shown) in enumerate(pairs(DOCS / "concepts" / page)):
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            exec(compile(code, f"{page} block {n}", "exec"), ns)  # noqa: S102
        if shown is not None:
            assert buf.getvalue() == shown, f"{page} block {n}:\n{code}"

"""Every knowingly different price is marked at its site and listed in docs/divergences.md."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "latencykernel"


def test_every_marked_site_is_listed() -> None:
    page = (ROOT / "docs" / "divergences.md").read_text()
    marked = sorted(p.relative_to(SRC).as_posix() for p in SRC.rglob("*.py") if "KNOWN DIVERGENCE" in p.read_text())
    assert marked, "no KNOWN DIVERGENCE sites found"
    for site in marked:
        assert f"`{site}`" in page, f"{site} marks a divergence that docs/divergences.md does not list"

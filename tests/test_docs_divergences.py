"""Every knowingly different price is marked at its site with its row id (``KNOWN DIVERGENCE Dn:``)
and listed under that id in docs/divergences.md, checked in both directions."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "latencykernel"
PAGE = ROOT / "docs" / "divergences.md"

MARKER = re.compile(r"KNOWN DIVERGENCE(?P<rest>.*)")
# D: the step price and memory; S: the serving simulation's scheduling
MARKER_WITH_ID = re.compile(r"KNOWN DIVERGENCE (?P<id>[DS]\d+):")
ROW = re.compile(r"^\|\s*(?P<id>[DS]\d+)\s*\|(?P<cells>.*)\|\s*$", re.M)
SITE = re.compile(r"`([\w./]+\.py)`")


def _markers() -> list[tuple[str, int, str]]:
    """(file relative to the package, line number, marker line) for every marker in src/."""
    found = []
    for path in sorted(SRC.rglob("*.py")):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if MARKER.search(line):
                found.append((path.relative_to(SRC).as_posix(), n, line))
    return found


def _rows() -> dict[str, set[str]]:
    """Row id -> the source files its site column names (empty set when it names none)."""
    rows: dict[str, set[str]] = {}
    for m in ROW.finditer(PAGE.read_text()):
        rid = m.group("id")
        assert rid not in rows, f"docs/divergences.md numbers row {rid} twice"
        site_cell = m.group("cells").split("|")[-1]
        rows[rid] = set(SITE.findall(site_cell))
    return rows


def test_rows_are_numbered_in_order() -> None:
    """Guards renumbering: row ids are D1, D2, ... (and S1, S2, ...) with no gap, so an id once
    given stays put."""
    ids = list(_rows())
    assert ids, "docs/divergences.md has no D-numbered rows"
    for prefix in ("D", "S"):
        mine = [i for i in ids if i.startswith(prefix)]
        assert mine == [f"{prefix}{i}" for i in range(1, len(mine) + 1)], mine
    assert any(i.startswith("D") for i in ids)


def test_every_marker_carries_an_id() -> None:
    """Guards an anonymous marker: each `KNOWN DIVERGENCE` comment reads `KNOWN DIVERGENCE Dn:`."""
    markers = _markers()
    assert markers, "no KNOWN DIVERGENCE sites found"
    bare = [f"{f}:{n}: {line.strip()}" for f, n, line in markers if not MARKER_WITH_ID.search(line)]
    assert not bare, "markers without an id (write `KNOWN DIVERGENCE Dn:`):\n" + "\n".join(bare)


def test_every_marker_is_a_row_naming_its_file() -> None:
    """Guards a marker whose id is not in the doc, or whose row does not name the marker's file."""
    rows = _rows()
    wrong = []
    for f, n, line in _markers():
        m = MARKER_WITH_ID.search(line)
        if m is None:
            continue
        rid = m.group("id")
        if rid not in rows:
            wrong.append(f"{f}:{n}: {rid} is not a row of docs/divergences.md")
        elif f not in rows[rid]:
            wrong.append(f"{f}:{n}: row {rid} of docs/divergences.md does not name `{f}` as a site")
    assert not wrong, "\n".join(wrong)


def test_every_named_site_carries_its_marker() -> None:
    """Guards a listed divergence whose site lost (or never had) its marker."""
    marked: set[tuple[str, str]] = set()
    for f, _, line in _markers():
        m = MARKER_WITH_ID.search(line)
        if m is not None:
            marked.add((m.group("id"), f))
    missing = []
    for rid, sites in _rows().items():
        for site in sorted(sites):
            assert (SRC / site).is_file(), f"row {rid} names `{site}`, which is not a file under src/latencykernel"
            if (rid, site) not in marked:
                missing.append(f"row {rid} names `{site}` but it has no `KNOWN DIVERGENCE {rid}:` marker")
    assert not missing, "\n".join(missing)


def test_every_row_names_a_site() -> None:
    """Guards a row that can never be checked against the code (the stricter form of the old
    file-by-file check: every row names at least one site, so each divergence is findable)."""
    empty = [rid for rid, sites in _rows().items() if not sites]
    assert not empty, f"rows naming no source file: {empty}"

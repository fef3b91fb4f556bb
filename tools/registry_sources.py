"""The inputs of tools/gen_registry.py: where the coefficient sets come from and how they are read.

* catalog parts, their AISimulate directory names and device labels, for citations;
* the citation of the newest registry docs build and of a registry entry;
* ``parse_table``: our transcriptions of the newest registry values,
  ``tools/newest_<set>_46d1231.txt`` (``key words | cell cell ...``, a cell being the value
  and a method letter);
* ``Stored``: the stored reference copy of one set, indexed by (name, part);
* ``entry``: one coefficient entry as the generator emits it, with its invariants checked.

Nothing here writes a file; gen_registry.py builds the sets and emits the YAML.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
TOOLS = ROOT / "tools"
OUT = ROOT / "src" / "latencykernel" / "data" / "registry" / "coefficients"
DEFAULT_REFERENCE = ROOT.parent / "shared" / "reference" / "blis-registry" / "coefficients"

PARTS = ["l40s", "a100-sxm", "a100-80", "h100", "h200", "b200", "b300", "gb200-nvl72", "gb300"]
A100 = ["a100-80", "a100-sxm"]  # same silicon: unsuffixed names share one scope

# AISimulate's directory name per part and NVIDIA's device string, for citations.
SKU = {
    "l40s": "l40s",
    "a100-sxm": "a100_sxm",
    "a100-80": "a100_sxm",
    "h100": "h100_sxm",
    "h200": "h200_sxm",
    "b200": "b200_sxm",
    "b300": "b300_sxm",
    "gb200-nvl72": "gb200",
    "gb300": "gb300",
}
LABEL = {
    "l40s": "L40S",
    "a100-sxm": "A100-SXM4-80GB",
    "a100-80": "A100-SXM4-80GB (a100-80 alias)",
    "h100": "H100 SXM",
    "h200": "H200",
    "b200": "B200",
    "b300": "B300",
    "gb200-nvl72": "GB200",
    "gb300": "GB300",
}

DOCS_COMMIT = "46d1231"
REGISTRY_COMMIT = "b4d8e2b"


def docs_source(set_name: str) -> dict[str, str]:
    return {
        "kind": "vendor_doc",
        "cite": f"blis-registry docs build {DOCS_COMMIT}, reference/sets/{set_name} "
        f"(each value links to coefficients/{set_name}.yaml at registry commit {REGISTRY_COMMIT})",
        "role": "supporting",
    }


def registry_entry_ref(set_name: str) -> str:
    return f"blis-registry coefficients/{set_name}.yaml @ {REGISTRY_COMMIT}"


# ----------------------------------------------------------------------------- inputs


def parse_table(path: Path) -> tuple[list[str], dict[tuple[str, ...], list[tuple[float, str] | None]]]:
    """Read one of our transcription files: ``key words | cell cell ...``."""
    columns: list[str] = []
    rows: dict[tuple[str, ...], list[tuple[float, str] | None]] = {}
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line:
            continue
        if line.startswith("# columns:"):
            columns = line.split(":", 1)[1].split()
            continue
        if line.startswith("#"):
            continue
        key, cells = line.split("|")
        parsed: list[tuple[float, str] | None] = []
        for cell in cells.split():
            if cell == "-":
                parsed.append(None)
            else:
                parsed.append((float(cell[:-1].replace(",", "")), cell[-1]))
        if columns and columns != ["all"] and len(parsed) != len(columns):
            raise SystemExit(f"{path.name}: row {key!r} has {len(parsed)} cells, expected {len(columns)}")
        k = tuple(key.split())
        if k in rows:
            raise SystemExit(f"{path.name}: duplicate row {key!r}")
        rows[k] = parsed
    return columns, rows


METHOD_LETTER = {"m": "measured", "v": "vendor_spec", "a": "assumed", "n": "not_charged"}
COLUMN_PART = {"a100_sxm": "a100-sxm", "a100_80": "a100-80", "gb200_nvl72": "gb200-nvl72"}


def column_part(col: str) -> str:
    return COLUMN_PART.get(col, col)


class Stored:
    """The stored reference copy of one set, indexed by (name, part)."""

    def __init__(self, path: Path) -> None:
        self.by_key: dict[tuple[str, str], dict[str, Any]] = {}
        self.units: dict[str, str] = {}
        doc = yaml.safe_load(path.read_text())
        for item in doc["coefficients"]:
            ((name, entry),) = item.items()
            self.units.setdefault(name, entry["units"])
            for part in entry["scope"].get("hardware", []):
                # later entries win, as in the kernel (the shared a100 scope follows the
                # a100-80-only one in the stored primitives file)
                self.by_key[(name, part)] = entry

    def match(self, name: str, part: str, value: float) -> dict[str, Any] | None:
        e = self.by_key.get((name, part))
        if e is None:
            return None
        return e if same(e["value"], value) else None

    def get(self, name: str, part: str) -> dict[str, Any] | None:
        return self.by_key.get((name, part))


def same(a: float, b: float) -> bool:
    return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)


# ----------------------------------------------------------------------------- entries


def entry(
    value: float,
    units: str,
    method: str,
    fitted: bool,
    parts: list[str],
    sources: list[dict[str, str]],
    rationale: str,
    ci95: list[float] | None = None,
) -> dict[str, Any]:
    if method == "not_charged":
        assert value == 0, "not_charged entries must be zero"
    else:
        assert value != 0, "zero is only legal with not_charged"
    if fitted:
        assert method == "measured"
    e: dict[str, Any] = {
        "value": value,
        "units": units,
        "method": method,
        "fitted": fitted,
        "scope": {"hardware": list(parts)},
    }
    if ci95 is not None:
        assert ci95[0] <= value <= ci95[1], (value, ci95)
        e["ci95"] = list(ci95)
    e["sources"] = sources
    e["rationale"] = " ".join(rationale.split())
    return e


def carried_sources(stored: dict[str, Any], set_name: str) -> list[dict[str, str]]:
    out = [dict(s) for s in stored.get("sources", [])]
    out.append(docs_source(set_name))
    return out

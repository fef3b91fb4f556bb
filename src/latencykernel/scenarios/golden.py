"""mlsysim 0.3.0's recorded outputs for the scenarios we reproduce (package data).

``mlsysim_golden.json`` is a subset of ``mlsysim-golden.json`` (the study's harvest of
mlsysim 0.3.0): the records of every named scenario we ship, the 22
``KvDecodeBatchScenario`` variants, the registry entries our recorded figures copy, the
keys of the scenarios we leave out, and the KV consistency table. ``extract()`` rebuilds it
from the full file; a test checks the two agree where the full file is present.

A Quantity is recorded as ``{"value", "unit", "unit_short"}``; an output that raised as
``{"error": "Type: message"}``.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

__all__ = ["load", "extract", "SHARED_GOLDEN"]

FILENAME = "mlsysim_golden.json"
SHARED_GOLDEN = Path("/work/shared/docs/mlsysim-golden.json")


@lru_cache(maxsize=1)
def load() -> dict[str, Any]:
    """The packaged subset."""
    text = (resources.files("latencykernel.scenarios") / FILENAME).read_text(encoding="utf-8")
    return json.loads(text)  # type: ignore[no-any-return]


def extract(full: dict[str, Any], shipped: set[str], recorded_registry: set[str]) -> dict[str, Any]:
    """The subset of the full golden file our tests and docs use."""
    return {
        "meta": {k: full["meta"][k] for k in ("generated_utc", "packages", "quantity_encoding", "units_note")},
        "scenarios": [s for s in full["scenarios"] if s["key"] in shipped],
        "left_out": [{"key": s["key"], "type": s["type"]} for s in full["scenarios"] if s["key"] not in shipped],
        "variants": full["variants"],
        "registries": {
            kind: [r for r in full["registries"][kind] if r["registry"] in recorded_registry]
            for kind in ("hardware", "workloads")
        },
        "kv_consistency": full["kv_consistency"],
    }


def write(full_path: Path = SHARED_GOLDEN) -> Path:
    """Rebuild the packaged subset from the full file (run by hand after changing what ships)."""
    from latencykernel.scenarios.named import keys
    from latencykernel.scenarios.reference_data import RECORDED_HARDWARE, RECORDED_WORKLOADS

    full = json.loads(full_path.read_text(encoding="utf-8"))
    refs = {h.source.split()[3].rstrip(",") for h in RECORDED_HARDWARE.values()}
    refs |= {w.source.split()[3].rstrip(",") for w in RECORDED_WORKLOADS.values()}
    subset = extract(full, set(keys()), refs)
    out = Path(str(resources.files("latencykernel.scenarios") / FILENAME))
    out.write_text(json.dumps(subset, separators=(",", ":")) + "\n", encoding="utf-8")
    load.cache_clear()
    return out

"""``latencykernel models`` and ``latencykernel chips``: what the catalog holds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from latencykernel.cli import app
from latencykernel.cli.common import GIB, CatalogDir, Json, console, print_json, repos_from


def _dtypes(node: Any) -> set[str]:
    """Every ``weight_dtype`` stated anywhere in a graph document."""
    out: set[str] = set()
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "weight_dtype" and isinstance(v, str):
                out.add(v)
            else:
                out |= _dtypes(v)
    elif isinstance(node, list):
        for v in node:
            out |= _dtypes(v)
    return out


def model_rows(catalog: Path | None) -> list[dict[str, Any]]:
    """One row per catalog model: name, Hugging Face id, parameters, dtypes, layers."""
    from latencykernel.derive.counts import active_parameter_count, layer_count, parameter_count
    from latencykernel.documents.graph import load_graph

    repos = repos_from(None, catalog, None)
    hf = {name: repo for repo, name in repos._repo_ids().items()}
    rows = []
    for name in repos.list_models():
        g = load_graph(repos.graph_path(name))
        rows.append(
            {
                "name": name,
                "hf_id": hf.get(name),
                "parameters": parameter_count(g),
                "active_parameters": active_parameter_count(g),
                "layers": layer_count(g),
                "checkpoint_dtype": g.global_.weight_dtype,
                "weight_dtypes": sorted(_dtypes(g.model_dump(by_alias=True))),
            }
        )
    return rows


def chip_rows(catalog: Path | None) -> list[dict[str, Any]]:
    """One row per catalog chip, with the chips whose figures it repeats (aliases)."""
    from latencykernel.documents.chip import load_chip

    repos = repos_from(None, catalog, None)
    chips = {c: load_chip(repos.chip_path(c)).model_dump() for c in repos.list_chips()}
    rows = []
    for name, d in chips.items():
        rows.append(
            {
                "name": name,
                "memory_gib": d["MemoryGiB"],
                "memory_bytes": int(d["MemoryGiB"] * GIB),
                "hbm_bandwidth_tb_per_s": d["BwPeakTBs"],
                "bf16_peak_tflop_per_s": d["TFlopsPeak"],
                "fp8_peak_tflop_per_s": d["TFlopsFP8"] or None,
                "nvfp4_peak_tflop_per_s": d["TFlopsNVFP4"],
                "intra_node_bandwidth_gb_per_s": d["IntraNodeBwGBps"],
                "sm_count": d["SMCount"],
                "gpus_per_node": d["GPUsPerNode"],
                "gpus_per_rack": d["GPUsPerRack"],
                "same_as": [o for o, od in chips.items() if o != name and od == d],
            }
        )
    return rows


@app.command("models")
def models_cmd(catalog: Path | None = CatalogDir, as_json: bool = Json) -> None:
    """List the models in the catalog: name, Hugging Face id, parameters, dtypes.

    Any name or Hugging Face id listed here is accepted by --model (and latencykernel.build);
    so is a path to a config.json or graph.yaml of a model the catalog lacks.

    \b
    Examples:
      latencykernel models
      latencykernel models --json | jq '.[].hf_id'
    """
    rows = model_rows(catalog)
    if as_json:
        print_json(rows)
        return
    from rich.table import Table

    t = Table(title=f"{len(rows)} models in the catalog")
    for col, just in (
        ("name", "left"),
        ("Hugging Face id", "left"),
        ("parameters", "right"),
        ("active", "right"),
        ("layers", "right"),
        ("weights", "left"),
    ):
        t.add_column(col, justify=just)  # type: ignore[arg-type]
    for r in rows:
        t.add_row(
            r["name"],
            r["hf_id"] or "—",
            f"{r['parameters'] / 1e9:,.1f} B",
            f"{r['active_parameters'] / 1e9:,.1f} B",
            str(r["layers"]),
            ", ".join(r["weight_dtypes"]) or r["checkpoint_dtype"],
        )
    console().print(t)


@app.command("chips")
def chips_cmd(catalog: Path | None = CatalogDir, as_json: bool = Json) -> None:
    """List the chips in the catalog: memory, bandwidth, peaks.

    A unique prefix names a chip (--hardware gb200), and so does a prefix shared only by
    aliases with identical figures (--hardware a100).

    \b
    Examples:
      latencykernel chips
      latencykernel chips --json
    """
    rows = chip_rows(catalog)
    if as_json:
        print_json(rows)
        return
    from rich.table import Table

    t = Table(title=f"{len(rows)} chips in the catalog (one GPU each)")
    for col in ("name", "memory GiB", "HBM TB/s", "bf16 TFLOP/s", "fp8 TFLOP/s", "fp4 TFLOP/s", "NVLink GB/s", "SMs"):
        t.add_column(col, justify="left" if col == "name" else "right")
    t.add_column("same as")

    def n(v: Any) -> str:
        return "—" if v is None else f"{v:g}"

    for r in rows:
        t.add_row(
            r["name"],
            n(r["memory_gib"]),
            n(r["hbm_bandwidth_tb_per_s"]),
            n(r["bf16_peak_tflop_per_s"]),
            n(r["fp8_peak_tflop_per_s"]),
            n(r["nvfp4_peak_tflop_per_s"]),
            n(r["intra_node_bandwidth_gb_per_s"]),
            str(r["sm_count"]),
            ", ".join(r["same_as"]),
        )
    console().print(t)

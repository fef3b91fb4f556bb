#!/usr/bin/env python3
"""Check each InferenceX sweep's twin scenario against the layout its run was launched with.

    python bench/audit_layouts.py INFERENCEX_CHECKOUT [--reference DIR]

INFERENCEX_CHECKOUT is a git checkout (or bare mirror) of github.com/SemiAnalysisAI/InferenceX.
For every sweep of ``inferencex_absolutes.json`` it reads
``.github/configs/nvidia-master.yaml`` at the sweep's run date (the newest commit before the
end of that day), takes the entry ``<model prefix>-<precision>-<chip>-<framework>``, and
prints the search-space rows of the sweep's ISL/OSL whose concurrency range holds any of
the sweep's clients (``tp``, ``ep``, ``dp-attn``), in either of the file's forms
(``scenarios.fixed-seq-len`` from 2026, ``seq-len-configs`` in 2025-11). A sweep whose date
has no such rows (the file predates both forms, or names the model otherwise) prints
``unchecked``. Each checked sweep is compared with its twin's layout (tp, experts over the
TP ranks or not, attention DP; ``RUN_LAYOUTS`` applied, a point's own entry first):
``MISMATCH`` where a layout it is priced with is in no listed row. (The rows of one date are
that day's search space; a sweep's points may come from runs of other days, so a client
outside every row's range is not a mismatch.)
``docs/accuracy.md`` fix 29 states what this found; the layouts it corrects are the
scorer's ``RUN_LAYOUTS`` (bench/score_inferencex.py).
"""

from __future__ import annotations

import argparse
import functools
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from score_inferencex import REFERENCE, WORKLOADS, run_layout  # the scorer beside this script: one home

CONFIG = ".github/configs/nvidia-master.yaml"
PREFIX = {
    "deepseek-v3": "dsr1",
    "glm-5": "glm5",
    "gpt-oss-120b": "gptoss",
    "kimi-k2.5": "kimik2.5",
    "llama-3.1-70b-instruct": "70b",
    "minimax-m2.5": "minimaxm2.5",
    "qwen3.5-397b-a17b": "qwen3.5",
}
STEM = re.compile(r"(.*)-(b200|b300|h100|h200)-(fp4|fp8|bf16)-(vllm|sglang|trt)-(.*)")


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=False).stdout


def config_at(repo: Path, date: str, cache: dict[str, Any]) -> Any:
    """The config file as of the end of ``date`` (None where it cannot be read)."""
    if date not in cache:
        commit = _git(repo, "log", "--all", "--format=%h", "--before", f"{date} 23:59", "-1", "--", CONFIG).strip()
        doc = None
        if commit:
            try:
                doc = yaml.safe_load(_git(repo, "show", f"{commit}:{CONFIG}"))
            except yaml.YAMLError:
                doc = None
        cache[date] = doc
    return cache[date]


def rows_for(doc: Any, stem: str, label: str, clients: list[int]) -> list[dict[str, Any]]:
    """The search-space rows of the sweep's entry that cover any of its clients."""
    m = STEM.match(stem)
    if m is None or not isinstance(doc, dict):
        return []
    model, chip, precision, framework, _ = m.groups()
    entry = doc.get(f"{PREFIX.get(model, model)}-{precision}-{chip}-{framework}")
    if not isinstance(entry, dict):
        return []
    isl, osl = WORKLOADS[label]
    out = []
    # the file's two forms: scenarios.fixed-seq-len (2026) and seq-len-configs (2025-11)
    forms = (entry.get("scenarios") or {}).get("fixed-seq-len") or entry.get("seq-len-configs") or []
    for sc in forms:
        if sc.get("isl") != isl or sc.get("osl") != osl:
            continue
        for row in sc.get("search-space") or []:
            lo, hi = row.get("conc-start"), row.get("conc-end")
            if lo is not None and hi is not None and any(lo <= c <= hi for c in clients):
                out.append(row)
    return out


@functools.cache
def twin_widths(stem: str) -> tuple[tuple[str, Any], ...]:
    """The twin scenario's first pool's widths (tp, dp, enable_expert_parallel)."""
    import latencykernel as lk

    par = lk.open_inputs(f"aisimulate/{stem}.yaml").deployment.pools[0].parallel
    return (("tp", par.tp), ("dp", par.dp), ("enable_expert_parallel", bool(par.enable_expert_parallel)))


def twin_layout(stem: str, sweep: str, clients: int) -> tuple[int, bool, int]:
    """(tp, experts over the ranks, dp) a point is priced with: its twin's first pool, with
    the scorer's run_layout applied."""
    got = dict(twin_widths(stem)) | dict(run_layout(sweep, clients))
    return int(got["tp"]), bool(got["enable_expert_parallel"]), int(got["dp"])


def row_layout(row: dict[str, Any]) -> tuple[int, bool, int]:
    """(tp, experts over the ranks, dp) a search-space row launches: the launch scripts turn
    ep > 1 into expert parallelism over the tp ranks, and dp-attn into TP1 x DP tp."""
    tp, ep, dp_attn = int(row.get("tp") or 1), int(row.get("ep") or 1), bool(row.get("dp-attn"))
    if dp_attn:
        return 1, ep > 1, tp
    return tp, ep > 1, 1


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("inferencex", type=Path, help="git checkout or mirror of SemiAnalysisAI/InferenceX")
    ap.add_argument("--reference", type=Path, default=REFERENCE, help="testdata directory of the reference copy")
    args = ap.parse_args(argv)
    data = json.loads((args.reference / "measurements" / "inferencex_absolutes.json").read_text())
    cache: dict[str, Any] = {}
    checked = 0
    for a in data["anchors"]:
        stem, label = a["scenario"].removesuffix(".yaml"), a["label"]
        clients = sorted(int(c) for c in a["absolute_tpot_us"])
        rows = rows_for(config_at(args.inferencex, a["source_run_date"], cache), stem, label, clients)
        checked += bool(rows)
        shown = "; ".join(
            ", ".join(f"{k} {v}" for k, v in r.items() if k not in ("conc-start", "conc-end"))
            + f" @ {r['conc-start']}-{r['conc-end']}"
            for r in rows
        )
        verdict = ""
        if rows:  # every layout the sweep is priced with must be one a listed row launches
            listed = {row_layout(r) for r in rows}
            priced = sorted({twin_layout(stem, f"{stem}/{label}", c) for c in clients})
            bad = [layout for layout in priced if layout not in listed]
            verdict = f"  MISMATCH: priced tp/ep/dp {bad}" if bad else ""
        print(
            f"{stem}/{label} {a['source_run_date']} clients {clients[0]}-{clients[-1]}: {shown or 'unchecked'}{verdict}"
        )
    print(f"{checked} of {len(data['anchors'])} sweeps checked against the config at their run date")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

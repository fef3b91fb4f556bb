"""Score ``serving.estimate`` against the InferenceX absolutes: TPOT and TTFT MAPE.

For every anchor (an embedded aisimulate scenario x workload) and every measured concurrency
c: a closed loop at c with 10 x c prompts, constant lengths (the registry's scoring pins
``--random-range-ratio`` off), and the measured median TPOT / TTFT against the simulation's
medians. Error = |pred / meas - 1|; MAPE is its mean. Nothing here is fitted.

    python bench/score_serving.py [PATH/TO/inferencex_absolutes.json]
"""

from __future__ import annotations

import collections
import json
import statistics
import sys
import time
from pathlib import Path

import latencykernel as lk
from latencykernel.errors import LatencyKernelError
from latencykernel.serving import estimate

DEFAULT = (
    Path(__file__).resolve().parents[2]
    / "shared"
    / "reference"
    / "blis-latency-kernel"
    / "testdata"
    / "measurements"
    / "inferencex_absolutes.json"
)
WORKLOADS = {"1k1k": (1024, 1024), "1k8k": (1024, 8192), "8k1k": (8192, 1024)}


def main(path: Path) -> None:
    data = json.loads(path.read_text())
    err: dict[str, dict[str, list[float]]] = collections.defaultdict(lambda: collections.defaultdict(list))
    refused: list[str] = []
    kernels: dict[str, lk.Kernel] = {}
    start = time.perf_counter()
    for a in data["anchors"]:
        name = "aisimulate/" + a["scenario"]
        try:
            k = kernels.get(name) or kernels.setdefault(name, lk.open(name))
        except LatencyKernelError as e:
            refused.append(f"{name}: {e}")
            continue
        isl, osl = WORKLOADS[a["label"]]
        for c_text, tpot_us in a["absolute_tpot_us"].items():
            c = int(c_text)
            ttft_us = a["absolute_ttft_us"].get(c_text)
            try:
                r = estimate(k, isl=isl, osl=osl, concurrency=c)
            except LatencyKernelError as e:
                refused.append(f"{name} c={c}: {e}")
                continue
            band = "c <= 8" if c <= 8 else "c 16-64" if c <= 64 else "c >= 128"
            for group in ("all", f"engine {a['framework']}", f"chip {a['gpu']}", f"load {band}", f"work {a['label']}"):
                err[group]["tpot"].append(r.tpot.median * 1e6 / float(tpot_us) - 1)
                if ttft_us:
                    err[group]["ttft"].append(r.ttft.median * 1e6 / float(ttft_us) - 1)
    took = time.perf_counter() - start
    print(f"serving.estimate against {path.name}: {len(data['anchors'])} sweeps, {took:.0f} s")
    print(f"{'group':20s} {'points':>6s} {'TPOT MAPE':>10s} {'signed':>8s} {'TTFT MAPE':>10s} {'signed':>8s}")
    for g in sorted(err, key=lambda x: (x != "all", x)):
        t, f = err[g]["tpot"], err[g]["ttft"]
        print(
            f"{g:20s} {len(t):6d} {100 * statistics.mean(map(abs, t)):9.1f}% {100 * statistics.mean(t):7.1f}% "
            f"{100 * statistics.mean(map(abs, f)) if f else 0:9.1f}% {100 * statistics.mean(f) if f else 0:7.1f}%"
        )
    if refused:
        print(f"{len(refused)} points refused, e.g. {refused[0]}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT)

"""Score ``serving.estimate`` against the InferenceX absolutes: TPOT and TTFT MAPE.

For every anchor (an embedded aisimulate scenario x workload) and every measured concurrency
c: a closed loop at c with 10 x c prompts, and the measured mean TPOT / TTFT (the fields the
dump carries) against the simulation's means. Error = |pred / meas - 1|; MAPE is its mean.
Nothing here is fitted. Lengths: ``constant`` (the registry's scoring) or ``aisimulate``
(prompt and output lengths uniform on [0.8 L, L], as AISimulate's campaign pins them).

    python bench/score_serving.py [--lengths constant|aisimulate] [PATH/TO/inferencex_absolutes.json]
"""

from __future__ import annotations

import collections
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import numpy as np

import latencykernel as lk  # noqa: E402
from latencykernel.errors import LatencyKernelError
from latencykernel.serving import estimate
from score_inferencex import REFERENCE, WORKLOADS  # noqa: E402

DEFAULT = REFERENCE / "measurements" / "inferencex_absolutes.json"


def lengths(nominal: int, n: int, how: str, rng: np.random.Generator) -> int | list[int]:
    if how == "constant":
        return nominal
    return rng.integers(int(0.8 * nominal), nominal + 1, size=n).tolist()


def main(path: Path, how: str) -> None:
    data = json.loads(path.read_text())
    rng = np.random.default_rng(0)
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
                r = estimate(k, isl=lengths(isl, 10 * c, how, rng), osl=lengths(osl, 10 * c, how, rng), concurrency=c)
            except LatencyKernelError as e:
                refused.append(f"{name} c={c}: {e}")
                continue
            band = "c <= 8" if c <= 8 else "c 16-64" if c <= 64 else "c >= 128"
            for group in ("all", f"engine {a['framework']}", f"chip {a['gpu']}", f"load {band}", f"work {a['label']}"):
                err[group]["tpot"].append(r.tpot.mean * 1e6 / float(tpot_us) - 1)
                if ttft_us:
                    err[group]["ttft"].append(r.ttft.mean * 1e6 / float(ttft_us) - 1)
    took = time.perf_counter() - start
    print(f"serving.estimate against {path.name} ({how} lengths, means): {len(data['anchors'])} sweeps, {took:.0f} s")
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
    args = sys.argv[1:]
    how = "constant"
    if args[:1] == ["--lengths"]:
        how, args = args[1], args[2:]
    if how not in ("constant", "aisimulate"):
        raise SystemExit("--lengths takes constant or aisimulate")
    main(Path(args[0]) if args else DEFAULT, how)

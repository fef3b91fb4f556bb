"""Fixed part / per-request slope analysis of the InferenceX sweeps (FIT half only).

    python bench/analyse_fit.py [--all] [--model SUBSTR] [--max-c 64]

For each fit-half sweep, fit measured mean TPOT(c) = fixed + slope * c by least squares
over c <= --max-c, and the same for the priced pure-decode step D(c) (step + host per
output token, per data-parallel rank) and for the closed form (D plus prefill
interleaving). Prints one row per sweep and the medians of measured/priced ratios by model,
engine and tensor-parallel width, plus the anchor step's resource split.
"""

from __future__ import annotations

import argparse
import collections
import math
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import latencykernel as lk  # noqa: E402
from latencykernel import Batch  # noqa: E402
from latencykernel.validation import closed_form_prediction  # noqa: E402
from score_inferencex import REFERENCE, half, inferencex_points  # noqa: E402


def linfit(xs: list[float], ys: list[float]) -> tuple[float, float]:
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return my, 0.0
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    return my - b * mx, b


def main(argv: list[str]) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--all", action="store_true", help="all sweeps (default: the fit half only)")
    ap.add_argument("--model", default="")
    ap.add_argument("--max-c", type=int, default=64)
    ap.add_argument("--split", action="store_true", help="print the anchor step's resource split")
    args = ap.parse_args(argv)
    pts = inferencex_points(REFERENCE / "measurements" / "inferencex_absolutes.json")
    sweeps: dict[str, list] = collections.defaultdict(list)
    for p in pts:
        if (args.all or half(p.sweep) == "fit") and args.model in p.sweep:
            sweeps[p.sweep].append(p)
    kernels: dict[str, lk.Kernel] = {}
    ratios: dict[str, list[tuple[float, float]]] = collections.defaultdict(list)
    print(
        f"{'sweep':58s} {'dp':>2s} {'n':>2s} {'m.fix':>7s} {'p.fix':>7s} {'m.slope':>8s} {'d.slope':>8s} {'cf.slope':>8s} {'cf/m@c0':>7s}"
    )
    for sweep, ps in sorted(sweeps.items()):
        ps.sort(key=lambda p: p.load)
        name = ps[0].deployment.scenario
        k = kernels.get(name) or kernels.setdefault(name, lk.open(name))
        lim = k.limits()
        dp = max(lim.data_parallel, 1)
        use = [p for p in ps if p.load <= args.max_c]
        if len(use) < 2:
            continue
        ctx = int(ps[0].isl + ps[0].osl / 2)
        cs = [float(p.load) for p in use]
        meas = [p.tpot.mean * 1e6 for p in use]
        dec = [
            (k.step_time(Batch.decode(math.ceil(p.load / dp), ctx)).no_overlap + k.output_token_overhead()) * 1e6
            for p in use
        ]
        cf = [closed_form_prediction(k, p).tpot.mean * 1e6 for p in use]
        mf, ms = linfit(cs, meas)
        df, ds = linfit(cs, dec)
        cff, cfs = linfit(cs, cf)
        r0 = cf[0] / meas[0]
        print(f"{sweep[:58]:58s} {dp:2d} {len(use):2d} {mf:7.0f} {df:7.0f} {ms:8.1f} {ds:8.1f} {cfs:8.1f} {r0:7.2f}")
        tp = k.constants.tp
        keyv = [f"model {ps[0].model}", f"engine {ps[0].engine}", f"label {sweep.split('/')[-1]}", f"tp {tp}", "all"]
        for key in keyv:
            ratios[key].append((df / mf if mf > 0 else math.nan, cfs / ms if ms > 0 else math.nan))
        if args.split:
            e = k.step_time(Batch.decode(math.ceil(use[0].load / dp), ctx))
            print("   anchor step us:", {str(r): round(v * 1e6) for r, v in e.per_resource.items()})
    print(f"\n{'group':36s} {'n':>3s} {'fixed priced/meas':>18s} {'slope cf/meas':>14s}   (medians)")
    for key in sorted(ratios, key=lambda k: (k != "all", k)):
        v = ratios[key]
        f = statistics.median(x for x, _ in v if not math.isnan(x))
        s = [y for _, y in v if not math.isnan(y)]
        print(f"{key:36s} {len(v):3d} {f:18.2f} {statistics.median(s) if s else math.nan:14.2f}")


if __name__ == "__main__":
    main(sys.argv[1:])

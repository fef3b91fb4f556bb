"""How fast a configuration search runs: candidates (deployment x load point) per second
in this process, on every local core, and on a local Ray instance; and the time a space of
10,000 deployments x 8 concurrencies would take, extrapolated.

    python bench/bench_search.py                      # a 10,000-deployment space, sampled
    python bench/bench_search.py --sample 24 --no-ray # quicker
    python bench/bench_search.py --full               # the whole space, locally, timed (minutes)

The space (``SPACE`` below) has exactly 10,000 deployments; the benchmark runs an evenly
spaced sample of it (``--sample`` deployments, the same every run), each at the 8
concurrencies, with the real serving simulation. Refused deployments cost a build and no
simulation, so the figures are given per deployment of the space (what the extrapolation
needs) and per built candidate. Build times (``lk.new`` of each variant) are printed apart,
min/median/max over the sample.

A search simulates each distinct engine once per load point (``Kernel.fingerprint``:
deployments that resolve alike share their rows; and ``search.evaluate._Bounds``: at a
closed loop's load, deployments that differ only in limits the load never reaches share
them too), so the whole space costs a build per deployment and a simulation per distinct
(engine, load). ``--distinct`` (about half a minute) builds every deployment of the space,
counts the simulations each load point needs, and extrapolates from those counts and the
serial run's cost of one simulation at each load point; without it the extrapolation takes
every deployment as distinct. The reuse is cleared before each executor runs, so no figure
below reuses another run's simulations.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from latencykernel.search import evaluate  # noqa: E402
from latencykernel.search.evaluate import EvaluateJob, LoadPoint, kernels_for, prepare  # noqa: E402
from latencykernel.search.executors import map_chunks  # noqa: E402
from latencykernel.search.space import deployments, load_space  # noqa: E402

CONCURRENCIES = (1, 2, 4, 8, 16, 32, 64, 128)
# 5 chips x 4 tp x 5 dp x 2 expert parallel x 2 KV dtypes x 5 max_num_seqs x 5 token budgets = 10,000
SPACE = {
    "hardware": ["h100", "h200", "b200", "b300", "a100-sxm"],
    "tp": [1, 2, 4, 8],
    "dp": [1, 2, 4, 8, 16],
    "expert_parallel": [False, True],
    "cache_dtype": [None, "fp8"],
    "max_num_seqs": [None, 32, 64, 128, 256],
    "max_num_batched_tokens": [None, 2048, 4096, 8192, 16384],
}


def _stats(xs: list[float]) -> str:
    return f"min {min(xs) * 1e3:.1f} / median {statistics.median(xs) * 1e3:.1f} / max {max(xs) * 1e3:.1f} ms"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="qwen3-30b-a3b")
    ap.add_argument("--isl", type=int, default=1024)
    ap.add_argument("--osl", type=int, default=1024)
    ap.add_argument("--sample", type=int, default=40, help="deployments of the space to run")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--no-ray", action="store_true")
    ap.add_argument("--distinct", action="store_true", help="count the space's distinct engines (builds all)")
    ap.add_argument("--full", action="store_true", help="run the whole space locally, once, and time it (minutes)")
    args = ap.parse_args()

    sp = load_space(SPACE)
    every = deployments(sp)
    # a fixed pseudo-random sample, in space order (the same every run)
    sample = [every[i] for i in sorted(random.Random(0).sample(range(len(every)), min(args.sample, len(every))))]
    loads = tuple(LoadPoint(args.isl, args.osl, concurrency=c) for c in CONCURRENCIES)
    print(f"space: {len(every):,} deployments x {len(loads)} concurrencies; sample {len(sample)} (seeded)")
    print(f"model {args.model}, isl {args.isl}, osl {args.osl}, concurrencies {','.join(map(str, CONCURRENCIES))}")
    t0 = time.perf_counter()
    docs = prepare(args.model, sp)
    print(f"documents read once: {(time.perf_counter() - t0) * 1e3:.0f} ms")

    builds: list[float] = []
    built = 0
    for d in sample:
        t = time.perf_counter()
        try:
            kernels_for(docs, d)
            built += 1
        except Exception:  # a refusal: also a build's cost
            pass
        builds.append(time.perf_counter() - t)
    print(f"builds: {built} of {len(sample)} open; per build {_stats(builds)}")

    share = 1.0  # simulated deployments per deployment of the space
    shares: dict[LoadPoint, float] = {}  # the same, per load point (--distinct)
    if args.distinct:
        t = time.perf_counter()
        keys = set()
        per_load: dict[LoadPoint, set[object]] = {ld: set() for ld in loads}
        for d in every:
            try:
                k = kernels_for(docs, d)[0]
            except Exception:  # a refusal: no simulation
                continue
            keys.add(k.fingerprint())
            bounds = evaluate._Bounds.of(k)
            for ld in loads:
                per_load[ld].add(bounds.key(d.gpus, ld, 0) or (k.fingerprint(), d.gpus, ld))
        share = len(keys) / len(every)
        shares = {ld: len(v) / len(every) for ld, v in per_load.items()}
        print(
            f"distinct engines in the space: {len(keys):,} of {len(every):,} deployments; simulations per load point "
            + ", ".join(f"c={ld.concurrency}: {len(v):,}" for ld, v in per_load.items())
            + f" (counted in {time.perf_counter() - t:.0f} s)"
        )
    build_s = statistics.median(builds)
    if args.full:
        evaluate._ROWS.clear()
        t = time.perf_counter()
        out = map_chunks("local", docs, every, EvaluateJob(loads, 0, None), workers=args.workers)
        dt = time.perf_counter() - t
        built = [o for o in out if o[0] == "built"]
        cands = sum(sum(1 for r in o[3] if r[0] == "ok") for o in built)
        print(
            f"whole space, local ({args.workers} processes): {dt / 60:.1f} min wall for {len(every):,} deployments x "
            f"{len(loads)} loads ({len(every) - len(built):,} refused, {cands:,} candidates simulated or reused)"
        )
        return

    job = EvaluateJob(loads, 0, None)
    # the serial run's seconds per simulation at each load point (for --distinct's extrapolation)
    sim_time: dict[LoadPoint, list[float]] = {ld: [] for ld in loads}
    real_simulate = evaluate.serving_simulate

    def timed_simulate(kernels: Any, dep: Any, load: LoadPoint, seed: int) -> Any:
        t = time.perf_counter()
        try:
            return real_simulate(kernels, dep, load, seed)
        finally:
            sim_time[load].append(time.perf_counter() - t)

    def space_share() -> float:
        """The space's simulation time per deployment over the sample's: the distinct-engine
        share, or with --distinct each load point's share at the serial run's cost of one
        simulation there."""
        if not (shares and all(sim_time.values())):
            return share
        per_sample = sum(sum(v) for v in sim_time.values()) / len(sample)
        return sum(statistics.fmean(sim_time[ld]) * shares[ld] for ld in loads) / per_sample

    runs = [("serial (1 process)", "serial", 1)]
    runs.append((f"local ({args.workers} processes)", "local", args.workers))
    if not args.no_ray:
        runs.append(("ray (local instance)", "ray", None))
    for name, executor, workers in runs:
        if executor == "ray":
            import ray

            src = str(Path(__file__).resolve().parents[1] / "src")
            env = {"PYTHONPATH": os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH", "")) if p)}
            ray.init(num_cpus=args.workers, include_dashboard=False, log_to_driver=False, runtime_env={"env_vars": env})
        evaluate._ROWS.clear()  # no reuse of an earlier run's simulations (forked workers inherit it)
        if executor == "serial":
            evaluate.serving_simulate = timed_simulate  # type: ignore[assignment]
        t, c0 = time.perf_counter(), time.process_time()
        out = map_chunks(executor, docs, sample, job, workers=workers)
        dt, cpu = time.perf_counter() - t, time.process_time() - c0
        evaluate.serving_simulate = real_simulate  # type: ignore[assignment]
        if executor == "ray":
            ray.shutdown()
        cands = sum(sum(1 for r in o[3] if r[0] == "ok") for o in out if o[0] == "built")
        per_dep = len(sample) / dt
        # the whole space: a build for every deployment, the rest for the distinct ones
        procs = workers or os.cpu_count() or 1
        sim_s = max(dt / len(sample) - build_s / procs, 0.0)
        full = len(every) * (build_s / procs + space_share() * sim_s)
        print(
            f"{name:<24} {dt:7.1f} s  {cands / dt:8.1f} candidates/s  {per_dep * len(loads):8.1f} (deployment x load)/s"
            f"  -> 10,000 x 8 in {full / 60:6.1f} min"
        )
        if executor == "serial":
            # CPU time is what the load of other programs inflates least: the whole space on
            # n idle cores would take about len(every) x (CPU s per deployment) / n
            per = cpu / len(sample)
            whole = len(every) * (build_s + space_share() * max(per - build_s, 0.0)) / args.workers
            print(
                f"{'':<24} CPU {per:.2f} s per deployment ({per / len(loads) * 1e3:.0f} ms per load point) -> "
                f"10,000 x 8 on {args.workers} idle cores in about {whole / 60:.1f} min"
            )


if __name__ == "__main__":
    main()

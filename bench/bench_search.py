"""How fast a configuration search runs: candidates (deployment x load point) per second
in this process, on every local core, and on a local Ray instance; and the time a space of
10,000 deployments x 8 concurrencies would take, extrapolated.

    python bench/bench_search.py                      # a 10,000-deployment space, sampled
    python bench/bench_search.py --sample 24 --no-ray # quicker

The space (``SPACE`` below) has exactly 10,000 deployments; the benchmark runs an evenly
spaced sample of it (``--sample`` deployments, the same every run), each at the 8
concurrencies, with the real serving simulation. Refused deployments cost a build and no
simulation, so the figures are given per deployment of the space (what the extrapolation
needs) and per built candidate. Build times (``lk.new`` of each variant) are printed apart,
min/median/max over the sample.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

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

    job = EvaluateJob(loads, 0, None)
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
        t, c0 = time.perf_counter(), time.process_time()
        out = map_chunks(executor, docs, sample, job, workers=workers)
        dt, cpu = time.perf_counter() - t, time.process_time() - c0
        if executor == "ray":
            ray.shutdown()
        cands = sum(sum(1 for r in o[3] if r[0] == "ok") for o in out if o[0] == "built")
        per_dep = len(sample) / dt
        full = len(every) / per_dep
        print(
            f"{name:<24} {dt:7.1f} s  {cands / dt:8.1f} candidates/s  {per_dep * len(loads):8.1f} (deployment x load)/s"
            f"  -> 10,000 x 8 in {full / 60:6.1f} min"
        )
        if executor == "serial":
            # CPU time is what the load of other programs inflates least: the whole space on
            # n idle cores would take about len(every) x (CPU s per deployment) / n
            per = cpu / len(sample)
            print(
                f"{'':<24} CPU {per:.2f} s per deployment ({per / len(loads) * 1e3:.0f} ms per load point) -> "
                f"10,000 x 8 on {args.workers} idle cores in about {len(every) * per / args.workers / 60:.1f} min"
            )


if __name__ == "__main__":
    main()

"""How fast the serving simulation runs (issue 14's targets). Prints one row per figure: min,
median and max over repeated runs, the target, and whether the median meets it.

    python bench/bench_serve.py            # about a minute on a quiet 2-core machine
    python bench/bench_serve.py --quick    # fewer rounds

Figures, on the guide's deployment (DeepSeek-V3, H200 x8), 1,024 prompt / 1,024 output tokens:
one closed-loop point at concurrency 64 (640 prompts); a 10-point concurrency sweep (1 to 512,
10 x concurrency prompts each); a 10,000-request Poisson run at a rate the deployment
sustains (2 req/s, about half its capacity) and one it cannot (8 req/s, saturated); and
4 req/s over two replicas of it (data parallel, each stepping on its own); and the 2 req/s
run scheduled as SGLang (its prefill batches run alone, so the stream steps aside and every
step is decided one by one). The kernel is opened once, outside the timings.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import latencykernel as lk
from latencykernel.serving import ClosedLoop, Poisson, simulate

GUIDE = "aisimulate/deepseek-v3-h200-fp8-sglang-tp8.yaml"
SWEEP = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)


CPU: dict[int, list[float]] = {}


def timed(fn: Callable[[], object], rounds: int) -> list[float]:
    """Wall times of ``rounds`` runs after a warm-up; the process CPU times are kept in
    ``CPU`` (on a loaded machine the CPU time is the closer figure to a quiet run's)."""
    fn()  # warm
    out, cpu = [], []
    for _ in range(rounds):
        t, c = time.perf_counter(), time.process_time()
        fn()
        out.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    CPU[id(out)] = cpu
    return out


def fmt(s: float) -> str:
    return f"{s * 1e3:.1f} ms" if s < 1 else f"{s:.2f} s"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    rounds = 3 if args.quick else 7
    k = lk.open(GUIDE)
    rows: list[tuple[str, float | None, list[float]]] = []
    rows.append(
        (
            "closed loop c=64, 1k/1k, 640 prompts",
            0.050,
            timed(lambda: simulate(k, ClosedLoop(64, 1024, 1024)), rounds),
        )
    )
    rows.append(
        (
            "10-point concurrency sweep 1..512",
            0.5,
            timed(lambda: [simulate(k, ClosedLoop(c, 1024, 1024)) for c in SWEEP], max(rounds // 2, 1)),
        )
    )
    few = 1 if args.quick else 3
    rows.append(
        ("Poisson 2 req/s, 10,000 requests", 1.0, timed(lambda: simulate(k, Poisson(2.0, 1024, 1024, 10000)), few))
    )
    rows.append(
        (
            "Poisson 8 req/s (saturated), 10,000",
            None,
            timed(lambda: simulate(k, Poisson(8.0, 1024, 1024, 10000)), few),
        )
    )
    rows.append(
        (
            "Poisson 4 req/s, 2 replicas (DP2), 10,000",
            None,
            timed(
                lambda: simulate(
                    k, Poisson(4.0, 1024, 1024, 10000), data_parallel_size=2, lockstep_data_parallel=False
                ),
                few,
            ),
        )
    )
    rows.append(
        (
            "Poisson 2 req/s, 10,000, engine sglang",
            None,
            timed(lambda: simulate(k, Poisson(2.0, 1024, 1024, 10000), engine="sglang"), few),
        )
    )
    print(f"{'figure':<40} {'min':>10} {'median':>10} {'max':>10} {'cpu med':>10} {'target':>10}")
    for label, target, ts in rows:
        med = statistics.median(ts)
        cpu = statistics.median(CPU[id(ts)])
        verdict = "" if target is None else ("ok" if med <= target else "MISSED")
        tgt = "" if target is None else f"≤ {fmt(target)}"
        print(f"{label:<40} {fmt(min(ts)):>10} {fmt(med):>10} {fmt(max(ts)):>10} {fmt(cpu):>10} {tgt:>10} {verdict}")


if __name__ == "__main__":
    main()

"""How fast latencykernel prices a step. Prints one row per figure: min, median and max over
repeated timeit rounds, and the issue's target.

    python bench/bench_step.py            # about a minute
    python bench/bench_step.py --quick    # fewer rounds
    python bench/bench_step.py --cpu      # process CPU time instead of wall time (a shared, loaded machine)

Per-call figures are the time of one call (a round of N calls divided by N); throughput
figures are steps priced per second by one ``Kernel.step_times`` call. The reference walk
(``step.price_step``, what every fast figure is tested against) is timed alongside.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
import timeit
from collections.abc import Callable

GUIDE = "aisimulate/deepseek-v3-h200-fp8-sglang-tp8.yaml"
EP16 = "examples/minimax-m2.5-h200-ep16.yaml"
LLAMA = "examples/llama-3.1-8b-instruct-h100-bf16-tp1.yaml"
ROWS: list[tuple[str, str, list[float], str]] = []
CLOCK = "perf_counter"  # or "process_time" (--cpu)


def fmt(seconds: float) -> str:
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds * 1e6:.2f} µs"


def per_call(label: str, fn: Callable[[], object], target_s: float | None, rounds: int) -> None:
    timer = timeit.Timer(fn, timer=getattr(time, CLOCK))
    n, _ = timer.autorange()  # calls per round: at least 0.2 s
    n = max(1, n // 2)
    times = [t / n for t in timer.repeat(repeat=rounds, number=n)]
    verdict = "" if target_s is None else ("ok" if statistics.median(times) <= target_s else "MISSED")
    ROWS.append((label, "" if target_s is None else f"≤ {fmt(target_s)}", times, verdict))


def throughput(label: str, fn: Callable[[], object], steps: int, target: float | None, rounds: int) -> None:
    fn()  # warm: the first call in a process maps its result memory afresh (page faults), as timeit's autorange warms per_call
    times = timeit.Timer(fn, timer=getattr(time, CLOCK)).repeat(repeat=rounds, number=1)
    rates = sorted(steps / t for t in times)
    verdict = "" if target is None else ("ok" if statistics.median(rates) >= target else "MISSED")
    ROWS.append((label, "" if target is None else f"≥ {target / 1e6:.0f} M/s", rates, verdict))


def import_time(rounds: int) -> None:
    code = "import time; t = time.perf_counter(); import latencykernel; print(time.perf_counter() - t)"
    times = [
        float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
        for _ in range(rounds)
    ]
    ROWS.append(
        (
            "import latencykernel (fresh interpreter)",
            "≤ 150.0 ms",
            times,
            "ok" if statistics.median(times) <= 0.150 else "MISSED",
        )
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer rounds")
    ap.add_argument("--cpu", action="store_true", help="time process CPU, not wall clock (import row: wall)")
    args = ap.parse_args()
    global CLOCK
    CLOCK = "process_time" if args.cpu else "perf_counter"
    rounds = 5 if args.quick else 15

    import_time(rounds)
    import numpy as np

    import latencykernel as lk
    from latencykernel import Batch

    for name, scenario in (("guide", GUIDE), ("ep16", EP16)):
        per_call(f"open() warm, {name}", lambda s=scenario: lk.open(s), 0.100, min(rounds, 7))
    k_guide = lk.open(GUIDE)
    per_call(
        "memory: sequence_variable_bytes + fixed_bytes",
        lambda: (k_guide.sequence_variable_bytes(8192), k_guide.fixed_bytes()),
        2e-6,
        rounds,
    )

    cases = [
        ("1 decode", Batch.decode(1, 8192), 5e-6),
        ("256 decodes", Batch.decode(256, 8192), 10e-6),
        ("1,024 decodes", Batch.decode(1024, 32768), 100e-6),
        ("8 prefills + 248 decodes", Batch.from_columns([2048] * 8 + [1] * 248, [0] * 8 + [4095] * 248, 8), 50e-6),
    ]
    for name, scenario in (("guide", GUIDE), ("ep16", EP16), ("llama-8b", LLAMA)):
        k = lk.open(scenario)
        for label, batch, target in cases:
            per_call(f"step_time {name}, {label}", lambda b=batch, k=k: k.step_time(b), target, rounds)
        for label, batch, _ in cases[:2]:
            # a decode batch's context-free part is kept per batch shape (fast.py); above, each
            # call meets a shape seen before, as a simulator's steps mostly do; here none has
            per_call(
                f"  step_time {name}, {label}, a shape not seen before",
                lambda b=batch, k=k: (k._fast._stages.clear(), k.step_time(b)),
                None,
                rounds,
            )
        for label, batch, _ in cases:
            per_call(f"  reference walk {name}, {label}", lambda b=batch, k=k: k._reference_step(b), None, rounds)

    s256 = [1] * 256
    c256 = list(range(4000, 4256))
    per_call("Batch.from_columns, 256 lists", lambda: Batch.from_columns(s256, c256, 8), None, rounds)
    a256, b256 = np.array(s256), np.array(c256)
    per_call("Batch.from_columns, 256 numpy", lambda: Batch.from_columns(a256, b256, 8), None, rounds)

    rng = np.random.default_rng(7)
    # A short run, as the serving simulator prices one: 50 requests decoding for 10 steps
    # (step_times' fixed cost, against 10 step_time calls).
    short_step = np.repeat(np.arange(10), 50)
    short_sched = np.ones(500, dtype=np.int64)
    short_ctx = rng.integers(1, 32768, 500)
    for name, scenario in (("guide", GUIDE), ("llama-8b", LLAMA)):
        k = lk.open(scenario)
        per_call(
            f"step_times {name}, 50 requests × 10 steps (one call)",
            lambda k=k: k.step_times(short_step, short_sched, short_ctx, decode_threshold=8),
            None,  # no issue target: the serving simulator's cut-off between the two ways
            rounds,
        )
    steps, width = 100_000, 32
    step = np.repeat(np.arange(steps), width)
    sched = np.ones(steps * width, dtype=np.int64)
    ctx = rng.integers(1, 32768, steps * width)
    mixed_sched = sched.copy()
    mixed_sched[::width] = 512  # one 512-token prefill chunk per step
    # What reading the inputs costs: one pass over each column (the floor any vectorised
    # price pays), to compare the step_times figures with.
    throughput(
        f"  reading the inputs, {steps:,} steps × 32 rows (one pass per column)",
        lambda: (step.min(), sched.min(), ctx.min()),
        steps,
        None,
        max(5, rounds // 3),
    )
    for name, scenario in (("guide", GUIDE), ("ep16", EP16), ("llama-8b", LLAMA)):
        k = lk.open(scenario)
        throughput(
            f"step_times {name}, {steps:,} steps × 32 decodes",
            lambda k=k: k.step_times(step, sched, ctx, decode_threshold=8),
            steps,
            10e6 if name != "ep16" else None,
            max(5, rounds // 3),
        )
        throughput(
            f"step_times {name}, {steps:,} steps × (1 prefill + 31 decodes)",
            lambda k=k: k.step_times(step, mixed_sched, ctx, decode_threshold=8),
            steps,
            None,
            max(5, rounds // 3),
        )

    clock = "process CPU time" if args.cpu else "wall time"
    print(f"CPython {sys.version.split()[0]}, numpy {np.__version__}; {rounds} rounds per figure; {clock}")
    w = max(len(r[0]) for r in ROWS)
    print(f"{'figure':<{w}}  {'target':>11}  {'min':>10}  {'median':>10}  {'max':>10}")
    for label, target, vals, verdict in ROWS:
        if target.startswith("≥") or "steps ×" in label:  # a rate, steps per second
            cells = [f"{v / 1e6:.2f} M/s" for v in (min(vals), statistics.median(vals), max(vals))]
        else:
            cells = [fmt(v) for v in (min(vals), statistics.median(vals), max(vals))]
        print(f"{label:<{w}}  {target:>11}  {cells[0]:>10}  {cells[1]:>10}  {cells[2]:>10}  {verdict}")


if __name__ == "__main__":
    main()

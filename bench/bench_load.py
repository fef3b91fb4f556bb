"""How fast latencykernel loads: imports, the first and a warm ``open()``, building a variant
deployment in memory, and a scenario ``variant()``. Prints one row per figure (min, median,
max) with the issue's target.

    python bench/bench_load.py            # about a minute
    python bench/bench_load.py --quick    # fewer rounds
    python bench/bench_load.py --cpu      # process CPU time instead of wall time (a shared, loaded machine)

"fresh process" figures start a new interpreter per round and time the statement inside it
(in-process, from before the import to after the statement: interpreter start-up is not
counted); "whole process" figures time the interpreter from outside, start-up included, minus
the fastest empty interpreter. Run it with bytecode allowed (``env -u PYTHONDONTWRITEBYTECODE``
where that is set): without .pyc files every fresh process compiles the package's sources. Warm figures are timed in one process after a first call.
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
ROWS: list[tuple[str, str, list[float], str]] = []
CLOCK = "perf_counter"  # or "process_time" (--cpu)


def fmt(seconds: float) -> str:
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds * 1e6:.2f} µs"


def _row(label: str, times: list[float], target_s: float | None) -> None:
    verdict = "" if target_s is None else ("ok" if statistics.median(times) <= target_s else "MISSED")
    ROWS.append((label, "" if target_s is None else f"≤ {fmt(target_s)}", sorted(times), verdict))


def fresh(label: str, setup: str, stmt: str, target_s: float | None, rounds: int) -> None:
    """``stmt`` timed inside a new interpreter per round (after ``setup``, untimed)."""
    code = f"{setup}\nimport time\nt = time.{CLOCK}()\n{stmt}\nprint(time.{CLOCK}() - t)"
    times = []
    for _ in range(rounds):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
        times.append(float(out.split()[-1]))
    _row(label, times, target_s)


def whole_process(label: str, stmt: str, rounds: int) -> None:
    """A whole interpreter running ``stmt``, minus the fastest empty interpreter (noisy on a loaded machine)."""

    def run(code: str) -> float:
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True)
        return time.perf_counter() - t

    empty = min(run("pass") for _ in range(rounds))  # the least-disturbed empty interpreter
    _row(label, [run(stmt) - empty for _ in range(rounds)], None)


def cli_help(rounds: int) -> None:
    """``latencykernel --help`` as a user runs it: the installed console script, the whole
    process, wall clock, start-up included (without the script on PATH: its entry point,
    ``latencykernel.cli:main``, run by this interpreter)."""
    import shutil

    script = shutil.which("latencykernel")
    code = "import sys; sys.argv = ['latencykernel', '--help']; from latencykernel.cli import main; main()"
    cmd = [script, "--help"] if script else [sys.executable, "-c", code]

    def run() -> float:
        t = time.perf_counter()
        subprocess.run(cmd, check=False, stdout=subprocess.DEVNULL)
        return time.perf_counter() - t

    _row("latencykernel --help (whole process, wall, start-up included)", [run() for _ in range(rounds)], 0.250)


def per_call(label: str, fn: Callable[[], object], target_s: float | None, rounds: int) -> None:
    timer = timeit.Timer(fn, timer=getattr(time, CLOCK))
    n, _ = timer.autorange()
    n = max(1, n // 2)
    _row(label, [t / n for t in timer.repeat(repeat=rounds, number=n)], target_s)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="fewer rounds")
    ap.add_argument("--cpu", action="store_true", help="time process CPU, not wall clock (whole-process row: wall)")
    args = ap.parse_args()
    rounds = 5 if args.quick else 15
    global CLOCK
    CLOCK = "process_time" if args.cpu else "perf_counter"

    fresh("import latencykernel (fresh process)", "", "import latencykernel", None, rounds)
    whole_process("import latencykernel (whole process, minus python -c pass)", "import latencykernel", rounds)
    cli_help(rounds)
    fresh(
        "from latencykernel import Batch, ReqShape (fresh process)",
        "",
        "from latencykernel import Batch, ReqShape",
        None,
        rounds,
    )
    fresh("import latencykernel.scenarios (fresh process)", "", "import latencykernel.scenarios", 0.100, rounds)
    fresh(
        "first named scenario, Scenarios.Gpt2XlChatDecodeBatchesH100 (fresh process, after the import)",
        "from latencykernel.scenarios import Scenarios",
        "Scenarios.Gpt2XlChatDecodeBatchesH100",
        None,
        rounds,
    )
    fresh(
        "first open(), guide (fresh process, import included)",
        "",
        f"import latencykernel as lk\nlk.open({GUIDE!r})",
        0.200,
        rounds,
    )

    import latencykernel as lk
    from latencykernel.scenarios import Scenarios

    lk.open(GUIDE)
    per_call("open() warm, guide", lambda: lk.open(GUIDE), 0.050, rounds)
    lk.build("llama-3.1-8b-instruct", "h100", tp=2)
    widths = iter([1, 2, 4, 8] * 100_000)
    per_call(
        "build('llama-3.1-8b-instruct', 'h100', tp=…) warm, in memory",
        lambda: lk.build("llama-3.1-8b-instruct", "h100", tp=next(widths)),
        0.005,
        rounds,
    )
    lk.build("deepseek-v3", "h200", tp=8)
    per_call(
        "build('deepseek-v3', 'h200', tp=8) warm, in memory",
        lambda: lk.build("deepseek-v3", "h200", tp=8),
        0.005,
        rounds,
    )
    s = Scenarios.Gpt2XlChatDecodeBatchesH100
    per_call("Scenario.variant(context_tokens=2048)", lambda: s.variant(context_tokens=2048), 10e-6, rounds)
    r = Scenarios.ResNet50FasterModelAt80PctH100
    per_call("Scenario.variant(), a queueing scenario", lambda: r.variant(), 10e-6, rounds)

    clock = "process CPU time" if args.cpu else "wall time"
    print(f"CPython {sys.version.split()[0]}; {rounds} rounds per figure; {clock}")
    w = max(len(r[0]) for r in ROWS)
    print(f"{'figure':<{w}} {'target':>11} {'min':>11} {'median':>11} {'max':>11}")
    for label, target, times, verdict in ROWS:
        lo, med, hi = times[0], statistics.median(times), times[-1]
        print(f"{label:<{w}} {target:>11} {fmt(lo):>11} {fmt(med):>11} {fmt(hi):>11}  {verdict}")


if __name__ == "__main__":
    main()

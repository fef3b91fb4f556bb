"""Score the step price's TPOT shape against measured InferenceX sweeps.

The shape test of blis-kernel-spec §15 / validation notes §4.1: for each sweep (an embedded
aisimulate scenario × workload), price a pure-decode step at every measured concurrency c
(c requests, each decoding one token at context ISL + OSL/2), add the per-output-token host
overhead, divide by the same figure at the sweep's lowest concurrency, and compare with the
measured TPOT relative to its own lowest point. Error = |predicted_rel / measured_rel − 1|.

    python bench/score_shape.py [PATH/TO/inferencex_absolutes.json]

The measurements are third-party data and are not shipped; by default the script reads the
copy under ../shared/reference/ beside this repository.
"""

from __future__ import annotations

import collections
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import latencykernel as lk  # noqa: E402
from latencykernel import Batch
from score_inferencex import REFERENCE, WORKLOADS  # noqa: E402

DEFAULT = REFERENCE / "measurements" / "inferencex_absolutes.json"


def pct(xs: list[float]) -> str:
    return f"{100 * statistics.mean(xs):6.2f}%"


def main(path: Path) -> None:
    data = json.loads(path.read_text())
    errors: dict[str, list[float]] = collections.defaultdict(list)
    level: list[float] = []
    kernels: dict[str, lk.Kernel] = {}
    for a in data["anchors"]:
        name = "aisimulate/" + a["scenario"]
        k = kernels.get(name) or kernels.setdefault(name, lk.open(name))
        isl, osl = WORKLOADS[a["label"]]
        ctx = isl + osl // 2
        points = sorted((int(c), float(v)) for c, v in a["absolute_tpot_us"].items())

        def tpot_s(c: int, k: lk.Kernel = k, ctx: int = ctx) -> float:
            return k.step_time(Batch.decode(c, ctx)).no_overlap + k.output_token_overhead()

        c0, m0 = points[0]
        p0 = tpot_s(c0)
        model = a["scenario"].split("-b2")[0].split("-b3")[0].split("-h1")[0].split("-h2")[0]
        for c, m in points:
            p = tpot_s(c)
            level.append(p * 1e6 / m - 1)
            if c == c0:
                continue
            e = (p / p0) / (m / m0) - 1
            for key in ("all", f"engine {a['framework']}", f"model {model}", f"chip {a['gpu']}"):
                errors[key].append(e)
    print(f"TPOT shape against {path.name} ({len(data['anchors'])} sweeps); error = |pred_rel/meas_rel - 1|")
    print(f"{'group':36s} {'points':>6s} {'MAE':>8s} {'median':>8s} {'worst':>8s} {'signed':>8s}")
    for key in sorted(errors, key=lambda k: (k != "all", k)):
        v = errors[key]
        a_ = [abs(x) for x in v]
        print(f"{key:36s} {len(v):6d} {pct(a_)} {100 * statistics.median(a_):7.2f}% {100 * max(a_):7.0f}% {pct(v)}")
    la = [abs(x) for x in level]
    print(
        f"TPOT level, every point: {len(level)} points, MAPE {pct(la)}, median {100 * statistics.median(la):.2f}%, "
        f"signed {pct(level)}"
    )


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT)

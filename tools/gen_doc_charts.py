"""Draw the charts the docs show (docs/img/*.png) from the embedded data:

    python tools/gen_doc_charts.py

Each picture is what the matching command draws with -o; nothing is drawn by hand."""

from __future__ import annotations

from pathlib import Path

IMG = Path(__file__).resolve().parents[1] / "docs" / "img"
GUIDE = "aisimulate/deepseek-v3-h200-fp8-sglang-tp8.yaml"
OTHER = "aisimulate/deepseek-v3-b200-fp8-sglang-tp8.yaml"


def main() -> None:
    import latencykernel as lk
    from latencykernel.charts import (
        anatomy_figure,
        anatomy_sweep,
        capacity_figure,
        capacity_table,
        compare_deployments,
        compare_figure,
        save,
        serving_figure,
        serving_sweep,
    )

    IMG.mkdir(parents=True, exist_ok=True)
    k = lk.open(GUIDE)
    b = lk.open(OTHER)
    sweep = anatomy_sweep(k, 4096, [1, 2, 4, 8, 16, 32, 64, 128, 256], label=k.name)
    table = capacity_table(k, 0.050, [1024, 2048, 4096, 8192, 16384, 32768], label=k.name)
    c = compare_deployments(k, b, 32, 4096, labels=(k.name, b.name), tpot_s=0.050)
    served = serving_sweep(k, isl=1024, osl=256, concurrencies=[1, 2, 4, 8, 16, 32, 64, 128, 256], label=k.name)
    for name, fig in (
        ("anatomy.png", anatomy_figure(sweep)),
        ("capacity.png", capacity_figure(table)),
        ("compare.png", compare_figure(c)),
        ("serving.png", serving_figure(served)),
    ):
        print("wrote", save(fig, IMG / name))


if __name__ == "__main__":
    main()

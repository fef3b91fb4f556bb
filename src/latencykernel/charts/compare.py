"""Two deployments side by side: a step's price per resource, memory, and capacity.

``compare_deployments(a, b, requests, context_tokens)`` measures both on the same batch
and returns a ``Comparison`` (numbers, seconds and bytes); ``compare_figure(comparison)``
draws the step per resource as grouped bars and the memory per rank beside it, with each
difference of more than 5 % labelled by its ratio.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from latencykernel.batch import RESOURCES, Batch
from latencykernel.charts.common import RESOURCE_COLOURS, figure

__all__ = ["Side", "Comparison", "compare_deployments", "compare_figure", "DIFFERENT"]

DIFFERENT = 0.05  # a relative difference above this is highlighted


@dataclass(frozen=True)
class Side:
    """One deployment's figures on the compared batch (seconds, bytes per rank)."""

    label: str
    gpus: int
    overlap_s: float
    no_overlap_s: float
    bottleneck: str
    per_resource_s: dict[str, float]
    weights_bytes: int
    fixed_bytes: int
    kv_budget_bytes: int
    kv_bytes_per_token: float
    max_sequences: int
    max_num_seqs: int
    tpot_max_batch: int | None = None

    @property
    def tokens_per_s_per_gpu(self) -> float:
        """Output tokens a second per GPU at this batch (one token per request per step)."""
        return 0.0 if self.no_overlap_s <= 0 else self.requests / self.no_overlap_s / self.gpus

    requests: int = 0


@dataclass(frozen=True)
class Comparison:
    requests: int
    context_tokens: int
    tpot_s: float | None
    a: Side
    b: Side
    rows: tuple[tuple[str, float, float], ...] = field(default=())  # (figure, a, b): what the table shows

    def as_dict(self) -> dict[str, Any]:
        def side(s: Side) -> dict[str, Any]:
            return {
                "deployment": s.label,
                "gpus": s.gpus,
                "overlap_s": s.overlap_s,
                "no_overlap_s": s.no_overlap_s,
                "bottleneck": s.bottleneck,
                "per_resource_s": s.per_resource_s,
                "tokens_per_s_per_gpu": s.tokens_per_s_per_gpu,
                "weights_bytes": s.weights_bytes,
                "fixed_bytes": s.fixed_bytes,
                "kv_budget_bytes": s.kv_budget_bytes,
                "kv_bytes_per_token": s.kv_bytes_per_token,
                "max_sequences": s.max_sequences,
                "max_num_seqs": s.max_num_seqs,
                "tpot_max_batch": s.tpot_max_batch,
            }

        return {
            "requests": self.requests,
            "context_tokens": self.context_tokens,
            "tpot_s": self.tpot_s,
            "a": side(self.a),
            "b": side(self.b),
            "differences": [
                {"figure": n, "a": x, "b": y, "ratio_b_over_a": (y / x) if x else None, "different": differs(x, y)}
                for n, x, y in self.rows
            ],
        }


def differs(a: float, b: float) -> bool:
    """Whether two figures differ by more than ``DIFFERENT`` of the larger."""
    m = max(abs(a), abs(b))
    return m > 0 and abs(a - b) / m > DIFFERENT


def _side(k: Any, label: str, requests: int, context: int, tpot_s: float | None, decode_threshold: int) -> Side:
    e = k.step_time(Batch.decode(requests, context, decode_threshold))
    lim = k.limits()
    tpot_max = None
    if tpot_s is not None:
        from latencykernel.scenarios.bridge import decode_batch
        from latencykernel.scenarios.units import Q_

        tpot_max = max(int(decode_batch(k, context, [1]).max_batch_within(Q_(tpot_s, "s"))), 0)
    return Side(
        label=label,
        gpus=int(lim.gpus) * int(lim.data_parallel),
        overlap_s=e.overlap,
        no_overlap_s=e.no_overlap,
        bottleneck=e.bottleneck.value,
        per_resource_s={r.value: e.per_resource[r] for r in RESOURCES if r in e.per_resource},
        weights_bytes=int(k.fixed_bytes().weights),
        fixed_bytes=int(k.fixed_bytes().total),
        kv_budget_bytes=int(max(k.kv_budget_bytes(), 0)),
        kv_bytes_per_token=float(k.kv_bytes_per_token()),
        max_sequences=max(int(k.max_sequences(context)), 0),
        max_num_seqs=int(lim.max_num_seqs),
        tpot_max_batch=tpot_max,
        requests=requests,
    )


def compare_deployments(
    a: Any,
    b: Any,
    requests: int,
    context_tokens: int,
    *,
    labels: tuple[str, str] | None = None,
    tpot_s: float | None = None,
    decode_threshold: int = 8,
    serve: dict[str, Any] | None = None,
) -> Comparison:
    """Both kernels on ``requests`` decodes against ``context_tokens``; memory and capacity;
    with ``serve`` (``serving.estimate`` keywords: ``isl``, ``osl``, ``concurrency``), the
    serving figures of both."""
    la, lb = labels or (repr(a), repr(b))
    sa = _side(a, la, requests, context_tokens, tpot_s, decode_threshold)
    sb = _side(b, lb, requests, context_tokens, tpot_s, decode_threshold)
    rows: list[tuple[str, float, float]] = [
        ("GPUs", sa.gpus, sb.gpus),
        ("step, no overlap (s)", sa.no_overlap_s, sb.no_overlap_s),
        ("step, overlap (s)", sa.overlap_s, sb.overlap_s),
    ]
    for r in RESOURCES:
        x, y = sa.per_resource_s.get(r.value, 0.0), sb.per_resource_s.get(r.value, 0.0)
        if x or y:
            rows.append((f"  {r.value} (s)", x, y))
    rows += [
        ("tokens/s per GPU", sa.tokens_per_s_per_gpu, sb.tokens_per_s_per_gpu),
        ("weights per rank (bytes)", sa.weights_bytes, sb.weights_bytes),
        ("fixed memory per rank (bytes)", sa.fixed_bytes, sb.fixed_bytes),
        ("KV budget per rank (bytes)", sa.kv_budget_bytes, sb.kv_budget_bytes),
        ("KV bytes per token per rank", sa.kv_bytes_per_token, sb.kv_bytes_per_token),
        (f"sequences of {context_tokens:,} tokens in KV", sa.max_sequences, sb.max_sequences),
        ("max_num_seqs", sa.max_num_seqs, sb.max_num_seqs),
    ]
    if tpot_s is not None:
        rows.append((f"largest batch meeting TPOT {tpot_s * 1e3:g} ms", sa.tpot_max_batch or 0, sb.tpot_max_batch or 0))
    if serve is not None:
        from latencykernel.serving import estimate

        ra, rb = (estimate(k, **serve) for k in (a, b))
        where = f"at concurrency {serve.get('concurrency')}" if "concurrency" in serve else "served"
        rows += [
            (f"TTFT median {where} (s)", ra.ttft.median, rb.ttft.median),
            (f"TTFT p99 {where} (s)", ra.ttft.p99, rb.ttft.p99),
            (f"TPOT median {where} (s)", ra.tpot.median, rb.tpot.median),
            (f"TPOT p99 {where} (s)", ra.tpot.p99, rb.tpot.p99),
            (f"output tokens/s per GPU {where}", ra.output_throughput_per_gpu, rb.output_throughput_per_gpu),
        ]
    return Comparison(requests, int(context_tokens), tpot_s, sa, sb, tuple(rows))


def compare_figure(c: Comparison, *, title: str | None = None) -> Any:
    """Left: the step per resource (ms), A and B stacked side by side; right: memory per
    rank (GiB). A ratio is written where the two differ by more than 5 %."""
    fig = figure(10.0, 5.0)
    left, right = fig.subplots(1, 2, width_ratios=[1.2, 1])
    names = [r.value for r in RESOURCES if r.value in c.a.per_resource_s or r.value in c.b.per_resource_s]
    for i, s in enumerate((c.a, c.b)):
        bottom = 0.0
        for n in names:
            h = s.per_resource_s.get(n, 0.0) * 1e3
            left.bar(i, h, bottom=bottom, width=0.55, color=RESOURCE_COLOURS[n], label=n if i == 0 else None)
            bottom += h
        left.annotate(
            f"{s.no_overlap_s * 1e3:.1f} ms\n{s.bottleneck}",
            (i, bottom),
            xytext=(0, 4),
            textcoords="offset points",
            ha="center",
            fontsize=9,
        )
    if differs(c.a.no_overlap_s, c.b.no_overlap_s):
        ratio = c.b.no_overlap_s / c.a.no_overlap_s
        left.text(
            0.5,
            0.93,
            f"B / A = {ratio:.2f}×",
            transform=left.transAxes,
            ha="center",
            fontsize=10,
            fontweight="bold",
            color="#C44E52",
        )
    top = max(c.a.no_overlap_s, c.b.no_overlap_s) * 1e3
    left.set_ylim(0, top * 1.3)
    left.set_xticks([0, 1], ["A", "B"])
    left.set_ylabel("step time, no overlap (ms)")
    left.set_title(f"{c.requests} decodes at {c.context_tokens:,} tokens", fontsize=10)
    left.legend(fontsize=8, loc="upper right")
    gib = float(1 << 30)
    groups = ("weights", "fixed total", "KV budget")
    va = [c.a.weights_bytes / gib, c.a.fixed_bytes / gib, c.a.kv_budget_bytes / gib]
    vb = [c.b.weights_bytes / gib, c.b.fixed_bytes / gib, c.b.kv_budget_bytes / gib]
    xs = list(range(len(groups)))
    right.bar([x - 0.2 for x in xs], va, width=0.38, color="#4C72B0", label="A")
    right.bar([x + 0.2 for x in xs], vb, width=0.38, color="#DD8452", label="B")
    for x, p, q in zip(xs, va, vb):
        if differs(p, q) and p > 0:
            right.annotate(
                f"{q / p:.2f}×",
                (x, max(p, q)),
                xytext=(0, 4),
                textcoords="offset points",
                ha="center",
                fontsize=9,
                fontweight="bold",
                color="#C44E52",
            )
    right.set_xticks(xs, groups)
    right.set_ylabel("memory per rank (GiB)")
    right.set_ylim(0, max(va + vb) * 1.2)
    right.set_title("memory per rank", fontsize=10)
    right.legend(fontsize=8)
    fig.suptitle(title or f"A: {c.a.label}\nB: {c.b.label}", fontsize=10)
    return fig

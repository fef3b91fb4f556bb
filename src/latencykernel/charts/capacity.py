"""The capacity figure: the largest batch a deployment holds, against context length.

``capacity_table(kernel, tpot_s, contexts)`` asks, at each context, the largest batch whose
KV cache fits the memory budget (``kernel.max_sequences``, vLLM's paged allocation) and the
largest whose calibrated decode step meets the TPOT target, and the same two questions of
the deployment's first-principles floor (``scenarios.bridge.decode_batch(...).floor``: its
weights and KV read at datasheet bandwidth, weights and KV held in datasheet memory).
``capacity_figure(table)`` draws the four lines, with the engine's ``max_num_seqs`` cap and
the batch the deployment can actually serve (the smallest of the three) shaded.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from latencykernel.charts.common import figure

__all__ = ["CapacityRow", "CapacityTable", "capacity_table", "capacity_figure"]

KV_COLOUR = "#4C72B0"
TPOT_COLOUR = "#DD8452"


@dataclass(frozen=True)
class CapacityRow:
    """One context length: largest batches (0: not even one sequence fits)."""

    context_tokens: int
    kv_max_batch: int  # sequences the KV budget holds (kernel)
    tpot_max_batch: int  # largest batch whose calibrated step meets the TPOT
    floor_kv_max_batch: int  # the floor: sequences beside the weights in datasheet memory
    floor_tpot_max_batch: int  # the floor: largest batch whose bandwidth-bound step meets the TPOT

    @property
    def servable(self) -> int:
        """What the deployment can run at this context: memory and TPOT both met."""
        return min(self.kv_max_batch, self.tpot_max_batch)


@dataclass(frozen=True)
class CapacityTable:
    deployment: str
    tpot_s: float
    max_num_seqs: int
    rows: tuple[CapacityRow, ...]

    def as_dict(self) -> dict[str, Any]:
        return {
            "deployment": self.deployment,
            "tpot_s": self.tpot_s,
            "max_num_seqs": self.max_num_seqs,
            "rows": [
                {
                    "context_tokens": r.context_tokens,
                    "kv_max_batch": r.kv_max_batch,
                    "tpot_max_batch": r.tpot_max_batch,
                    "servable_batch": min(r.servable, self.max_num_seqs),
                    "floor_kv_max_batch": r.floor_kv_max_batch,
                    "floor_tpot_max_batch": r.floor_tpot_max_batch,
                }
                for r in self.rows
            ],
        }


def capacity_table(
    kernel: Any,
    tpot_s: float,
    contexts: Sequence[int],
    *,
    label: str | None = None,
    each: Callable[[Iterable[int]], Iterable[int]] = iter,
) -> CapacityTable:
    """The four largest batches at each context (``each`` wraps the loop, e.g. in a progress bar)."""
    from latencykernel.scenarios.bridge import decode_batch
    from latencykernel.scenarios.units import Q_

    tpot = Q_(float(tpot_s), "s")
    rows = []
    for c in each(contexts):
        d = decode_batch(kernel, int(c), [1])
        rows.append(
            CapacityRow(
                context_tokens=int(c),
                kv_max_batch=max(int(d.max_batch_in_memory), 0),
                tpot_max_batch=max(int(d.max_batch_within(tpot)), 0),
                floor_kv_max_batch=max(int(d.floor.max_batch_in_memory), 0),
                floor_tpot_max_batch=max(int(d.floor.max_batch_within(tpot)), 0),
            )
        )
    return CapacityTable(label or repr(kernel), float(tpot_s), int(kernel.limits().max_num_seqs), tuple(rows))


def _pos(values: Sequence[int]) -> list[float]:
    """Zeros (does not fit) are left off a log axis."""
    return [float(v) if v > 0 else float("nan") for v in values]


def capacity_figure(table: CapacityTable, *, title: str | None = None) -> Any:
    """Largest batch against context: KV memory and TPOT, kernel (solid) and floor (dashed)."""
    fig = figure(9.0, 5.5)
    ax = fig.add_subplot()
    xs = [r.context_tokens for r in table.rows]
    ms = table.tpot_s * 1e3
    kv = [r.kv_max_batch for r in table.rows]
    tp = [r.tpot_max_batch for r in table.rows]
    serv = [min(r.servable, table.max_num_seqs) for r in table.rows]
    ax.fill_between(xs, [0.5] * len(xs), _pos(serv), color="#55A868", alpha=0.18, step=None, label="servable batch")
    ax.plot(xs, _pos(kv), color=KV_COLOUR, marker="o", linewidth=2, label="fits in KV memory (kernel)")
    ax.plot(xs, _pos(tp), color=TPOT_COLOUR, marker="o", linewidth=2, label=f"meets TPOT ≤ {ms:g} ms (kernel)")
    ax.plot(
        xs,
        _pos([r.floor_kv_max_batch for r in table.rows]),
        color=KV_COLOUR,
        linestyle="--",
        marker=".",
        label="fits in memory (first-principles floor)",
    )
    ax.plot(
        xs,
        _pos([r.floor_tpot_max_batch for r in table.rows]),
        color=TPOT_COLOUR,
        linestyle="--",
        marker=".",
        label=f"meets TPOT ≤ {ms:g} ms (floor)",
    )
    ax.axhline(
        table.max_num_seqs, color="#555555", linestyle=":", linewidth=1.2, label=f"max_num_seqs {table.max_num_seqs}"
    )
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(xs, [f"{x:,}" for x in xs])
    ax.set_ylim(bottom=0.8)
    ax.set_xlabel("context length (tokens per sequence)")
    ax.set_ylabel("largest batch (sequences)")
    none = [f"{r.context_tokens:,}" for r in table.rows if r.servable == 0]
    note = f"\nnothing fits at {', '.join(none)} tokens" if none else ""
    ax.set_title(title or f"Capacity: {table.deployment}, TPOT target {ms:g} ms{note}", fontsize=11)
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(loc="lower left", fontsize=8)
    return fig

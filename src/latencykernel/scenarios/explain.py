"""A scenario explained as data: its metadata with its values, for the CLI and the docs.

Nothing here prints. ``report(scenario)`` returns a ``Report`` (plain dataclasses, JSON
ready via ``as_dict``); ``side_by_side(calibrated)`` lines a ``CalibratedDecodeBatch`` up
with its bandwidth floor (``calibrated.floor``), question by question.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from latencykernel.scenarios.base import Scenario
from latencykernel.scenarios.metadata import Formula

__all__ = [
    "Row",
    "Report",
    "Comparison",
    "StepRow",
    "TpotRow",
    "report",
    "side_by_side",
    "fmt",
    "fmt_args",
    "calibrated_for",
]


def fmt(value: Any, digits: int = 6) -> str:
    """A value as text: quantities with their unit, floats to ``digits`` significant figures."""
    if value is None:
        return "—"
    if hasattr(value, "units") and hasattr(value, "magnitude"):
        return f"{value.magnitude:.{digits}g} {value.units}".rstrip()
    if isinstance(value, bool) or isinstance(value, int) or isinstance(value, str):
        return str(value)
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    if isinstance(value, dict):
        return ", ".join(f"{k}: {fmt(v, digits)}" for k, v in value.items())
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(fmt(v, digits) for v in value) + "]"
    if isinstance(value, Scenario):
        return value.key or value.title
    return str(value)


def fmt_args(args: dict[str, Any]) -> str:
    return ", ".join(fmt(v) for v in args.values())


@dataclass(frozen=True)
class Row:
    """One output at one set of arguments."""

    name: str
    args: str
    value: str
    unit: str
    equation: str
    error: str | None = None
    number: float | None = None  # the value as a number, in ``unit`` (None for text or lists)


def _number(value: Any) -> float | None:
    """A scalar value's magnitude (quantities in their own unit), for JSON readers."""
    if hasattr(value, "magnitude") and hasattr(value, "units"):
        value = value.magnitude
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


@dataclass(frozen=True)
class Report:
    """What ``latencykernel explain`` shows for one scenario."""

    key: str | None
    title: str
    cls: str
    mlsysim_type: str | None
    description: str
    sources: tuple[str, ...]
    summary: str
    equation: str
    assumptions: tuple[str, ...]
    excludes: tuple[str, ...]
    inputs: tuple[tuple[str, str], ...]
    rows: tuple[Row, ...]
    formulas: tuple[Formula, ...] = field(default=())

    def as_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["formulas"] = [{k: v for k, v in dataclasses.asdict(f).items() if k != "samples"} for f in self.formulas]
        return d


def report(scenario: Scenario) -> Report:
    """The scenario's metadata, inputs and every output at its sample arguments."""
    rows = []
    for ev in scenario.evaluate():
        f = ev.output.formula
        rows.append(
            Row(
                name=f.name,
                args=fmt_args(ev.args),
                value=fmt(ev.value) if ev.error is None else "—",
                # the unit ``number`` is in: the value's own when it carries one
                unit=(f"{ev.value.units}" if ev.error is None and hasattr(ev.value, "units") else None)
                or f.unit
                or ("as stated" if f.returns == "quantity" else ""),
                equation=f.equation,
                error=ev.error,
                number=_number(ev.value) if ev.error is None else None,
            )
        )
    cls = type(scenario)
    return Report(
        key=scenario.key,
        title=scenario.title,
        cls=cls.__name__,
        mlsysim_type=cls.mlsysim_type,
        description=scenario.description,
        sources=tuple(scenario.sources),
        summary=cls.summary,
        equation=cls.equation,
        assumptions=cls.assumptions,
        excludes=cls.excludes,
        inputs=tuple((k, fmt(v)) for k, v in scenario.inputs().items()),
        rows=tuple(rows),
        formulas=tuple(o.formula for o in cls.outputs()),
    )


@dataclass(frozen=True)
class StepRow:
    """One batch size: the floor's and the calibrated step, in seconds."""

    batch: int
    floor_step_s: float
    calibrated_step_s: float
    over_floor: float | None  # calibrated / floor; None at batch 0
    bottleneck: str


@dataclass(frozen=True)
class TpotRow:
    """One TPOT target: the largest batch each side meets it with (0: not even one fits)."""

    tpot_s: float
    floor_max_batch: int
    calibrated_max_batch: int


@dataclass(frozen=True)
class Comparison:
    """The bandwidth floor beside the calibrated kernel, question by question, as numbers
    (seconds, batch sizes); a batch that does not fit is 0, never negative."""

    deployment: str
    context_tokens: int
    step: tuple[StepRow, ...]
    tpot: tuple[TpotRow, ...]
    memory: tuple[int, int]  # floor, calibrated max_batch_in_memory (0: does not fit)
    floor_sources: tuple[str, ...]
    floor_peak_precision: str = ""

    def as_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["memory"] = {"floor_max_batch": self.memory[0], "calibrated_max_batch": self.memory[1]}
        return d


def side_by_side(calibrated: Any) -> Comparison:
    """A ``CalibratedDecodeBatch`` and its floor, question by question."""
    from latencykernel.scenarios.kv_decode import TPOT_SAMPLES
    from latencykernel.scenarios.units import Q_

    floor = calibrated.floor

    def s(q: Any) -> float:
        return float(q.to("s").magnitude)

    step = tuple(
        StepRow(
            batch=b,
            floor_step_s=s(floor.step_time(b)),
            calibrated_step_s=s(calibrated.step_time(b)),
            over_floor=calibrated.over_floor(b) if b else None,
            bottleneck=calibrated.bottleneck(b),
        )
        for b in calibrated.batch_sizes
    )
    tpot = tuple(
        TpotRow(
            tpot_s=t * 1e-3,
            floor_max_batch=max(int(floor.max_batch_within(Q_(t, "ms"))), 0),
            calibrated_max_batch=max(int(calibrated.max_batch_within(Q_(t, "ms"))), 0),
        )
        for t in TPOT_SAMPLES
    )
    return Comparison(
        deployment=repr(calibrated.kernel),
        context_tokens=calibrated.context_tokens,
        step=step,
        tpot=tpot,
        memory=(max(int(floor.max_batch_in_memory), 0), max(int(calibrated.max_batch_in_memory), 0)),
        floor_sources=tuple(floor.sources),
        floor_peak_precision=str(getattr(floor, "peak_precision", "") or ""),
    )


def calibrated_for(scenario: Scenario, tp: int = 1) -> tuple[Any | None, str]:
    """The calibrated counterpart of a decode scenario whose workload and hardware are in the
    shared catalog, or (None, why not)."""
    from latencykernel.errors import LatencyKernelError
    from latencykernel.scenarios.bridge import decode_batch
    from latencykernel.scenarios.kv_decode import KvDecodeBatchScenario

    if not isinstance(scenario, KvDecodeBatchScenario):
        return None, ""  # only decode batches have a calibrated counterpart
    model, chip = scenario.workload.catalog_name, scenario.hardware.catalog_name
    if not model or not chip:
        missing = "workload" if not model else "hardware"
        return None, f"its {missing} is not in the shared catalog, so no kernel can be built for it"
    try:
        import latencykernel

        kernel = latencykernel.build(model, chip, tp=tp)
        return decode_batch(kernel, scenario.context_tokens, scenario.batch_sizes), ""
    except LatencyKernelError as e:
        return None, f"the kernel refuses {model} on {chip} at tp={tp}: {e}"

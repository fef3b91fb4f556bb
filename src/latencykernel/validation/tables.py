"""Text tables and a JSON form of a validation report (the CLI prints them)."""

from __future__ import annotations

from typing import Any

from latencykernel.validation.score import Report, Scored, summarise

__all__ = ["summary_table", "point_table", "headline", "report_json", "HEADLINE_KEYS"]

HEADLINE_KEYS = (("tpot mean", "shape"), ("tpot mean", "point"), ("ttft mean", "point"))


def _pct(x: float) -> str:
    return f"{100 * x:7.2f}%"


def summary_table(scored: list[Scored], key: str, kind: str, title: str = "", by: tuple[str, ...] = ()) -> str:
    rows = summarise(scored, key, kind, by or ("chip", "engine", "model", "band"))
    if not rows:
        return f"{title or key + ' ' + kind}: no points\n"
    lines = [
        title or f"{key} {kind} error",
        f"{'group':34s} {'n':>5s} {'MAE':>8s} {'median':>8s} {'worst':>8s} {'signed':>8s}",
    ]
    for name, s in rows:
        lines.append(f"{name:34s} {s.n:5d} {_pct(s.mae)} {_pct(s.median)} {_pct(s.worst)} {_pct(s.signed)}")
    return "\n".join(lines) + "\n"


def headline(scored: list[Scored]) -> str:
    """One line: TPOT shape MAE, TPOT MAPE, TTFT MAPE (the issue's three targets)."""
    parts = []
    for key, kind in HEADLINE_KEYS:
        rows = dict(summarise(scored, key, kind, by=()))
        s = rows.get("all")
        label = {"shape": "shape MAE", "point": "MAPE"}[kind]
        parts.append(f"{key.split()[0].upper()} {label} " + (f"{100 * s.mae:.2f}% (n {s.n})" if s else "n/a"))
    return ", ".join(parts)


def point_table(scored: list[Scored]) -> str:
    lines = [
        f"{'sweep':58s} {'load':>6s} {'TPOT ms':>9s} {'pred':>9s} {'err':>8s} {'shape':>8s} "
        f"{'TTFT ms':>9s} {'pred':>9s} {'err':>8s}"
    ]
    for s in sorted(scored, key=lambda s: (s.point.sweep, s.point.load)):
        p = s.point
        if s.prediction is None:
            lines.append(f"{p.sweep[:58]:58s} {p.load:6g}  not priced: {s.error}")
            continue
        pr = s.prediction

        def ms(x: float | None) -> str:
            return f"{1e3 * x:9.2f}" if x is not None else f"{'-':>9s}"

        def e(d: dict[str, float], k: str) -> str:
            return _pct(d[k]) if k in d else f"{'-':>8s}"

        lines.append(
            f"{p.sweep[:58]:58s} {p.load:6g} {ms(p.tpot.mean)} {ms(pr.tpot.mean)} {e(s.errors, 'tpot mean')} "
            f"{e(s.shape, 'tpot mean')} {ms(p.ttft.mean)} {ms(pr.ttft.mean)} {e(s.errors, 'ttft mean')}"
        )
    return "\n".join(lines) + "\n"


def report_json(report: Report) -> dict[str, Any]:
    """Every point with its prediction and errors, plus the summaries, as plain data."""
    points = []
    for s in report.scored:
        p = s.point
        row: dict[str, Any] = {
            "sweep": p.sweep,
            "deployment": p.deployment.key(),
            "engine": s.engine,
            "chip": s.chip,
            "model": s.model,
            "isl": p.isl,
            "osl": p.osl,
            "concurrency": p.concurrency,
            "request_rate": p.request_rate,
            "source": p.source,
        }
        for m in ("ttft", "tpot", "itl"):
            row[f"measured_{m}_s"] = {k: getattr(getattr(p, m), k) for k in ("mean", "median", "p99")}
            if s.prediction is not None:
                row[f"predicted_{m}_s"] = {k: getattr(getattr(s.prediction, m), k) for k in ("mean", "median", "p99")}
        if s.prediction is None:
            row["not_priced"] = s.error
        row["error"] = s.errors
        row["shape_error"] = s.shape
        row["level_error"] = s.level
        points.append(row)
    summaries: dict[str, Any] = {}
    keys = sorted({k for s in report.scored for k in s.errors})
    for key in keys:
        for kind in ("point", "shape", "level"):
            rows = summarise(report.scored, key, kind)
            if rows:
                summaries[f"{key} {kind}"] = {
                    name: {"n": v.n, "mae": v.mae, "median": v.median, "worst": v.worst, "signed": v.signed}
                    for name, v in rows
                }
    return {"method": report.method, "points": points, "summaries": summaries}

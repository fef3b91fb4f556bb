"""A self-contained HTML page of a search: the candidates as points (drawn by inline
JavaScript into an inline SVG from data embedded in the page; nothing is fetched), the front,
and on hover a panel with the point's deployment and figures. Open it from disk, offline."""

from __future__ import annotations

import html
import json
from typing import Any

__all__ = ["html_report", "point_records"]

_CSS = """
body{font:14px system-ui,sans-serif;margin:20px;color:#222}
h1{font-size:18px} .muted{color:#666}
#wrap{position:relative;display:inline-block}
svg{background:#fff;border:1px solid #ddd}
.point{stroke-width:1.2;cursor:pointer} .point.miss{fill:none!important}
.point:hover,.point.on{stroke:#000;stroke-width:2.5}
.front{fill:none;stroke:#000;stroke-width:1}
#tip{position:absolute;display:none;background:#fffff0;border:1px solid #999;padding:6px 8px;
 font:12px ui-monospace,monospace;white-space:pre;pointer-events:none;box-shadow:2px 2px 6px #0002}
table{border-collapse:collapse;margin-top:16px;font-size:12px}
td,th{border:1px solid #ddd;padding:3px 6px;text-align:right} th{background:#f4f4f4}
td:first-child,th:first-child{text-align:left}
"""

_JS = r"""
(function(){
const D = JSON.parse(document.getElementById('data').textContent);
const W = 900, H = 520, M = {l: 70, r: 20, t: 20, b: 50};
const svg = document.getElementById('chart');
const NS = 'http://www.w3.org/2000/svg';
const pts = D.points;
const xs = pts.map(p => p.x), ys = pts.map(p => p.y);
const x0 = 0, x1 = Math.max(1e-9, ...xs) * 1.05, y0 = 0, y1 = Math.max(1e-9, ...ys) * 1.05;
const sx = v => M.l + (v - x0) / (x1 - x0) * (W - M.l - M.r);
const sy = v => H - M.b - (v - y0) / (y1 - y0) * (H - M.t - M.b);
function el(name, attrs, parent){const e = document.createElementNS(NS, name);
  for (const k in attrs) e.setAttribute(k, attrs[k]); (parent || svg).appendChild(e); return e;}
el('line', {x1: M.l, y1: H - M.b, x2: W - M.r, y2: H - M.b, stroke: '#444'});
el('line', {x1: M.l, y1: M.t, x2: M.l, y2: H - M.b, stroke: '#444'});
for (let i = 0; i <= 5; i++) {
  const vx = x0 + (x1 - x0) * i / 5, vy = y0 + (y1 - y0) * i / 5;
  el('text', {x: sx(vx), y: H - M.b + 16, 'text-anchor': 'middle', 'font-size': 11}).textContent = vx.toFixed(0);
  el('text', {x: M.l - 6, y: sy(vy) + 4, 'text-anchor': 'end', 'font-size': 11}).textContent = vy.toFixed(0);
}
el('text', {x: (W + M.l) / 2, y: H - 12, 'text-anchor': 'middle'}).textContent = D.xlabel;
const yl = el('text', {x: 16, y: H / 2, 'text-anchor': 'middle', transform: 'rotate(-90 16 ' + H / 2 + ')'});
yl.textContent = D.ylabel;
const front = pts.filter(p => p.front).sort((a, b) => a.x - b.x);
if (front.length) el('path', {class: 'front', d: 'M' + front.map(p => sx(p.x) + ',' + sy(p.y)).join('L')});
const tip = document.getElementById('tip');
pts.forEach((p, i) => {
  const c = el('circle', {class: 'point' + (p.ok ? '' : ' miss'), cx: sx(p.x), cy: sy(p.y),
    r: p.best ? 8 : 5, fill: p.colour, stroke: p.colour, 'data-i': i});
  c.addEventListener('mouseenter', ev => {
    c.classList.add('on'); tip.textContent = p.text; tip.style.display = 'block';
    tip.style.left = (sx(p.x) + 12) + 'px'; tip.style.top = (sy(p.y) + 12) + 'px';
  });
  c.addEventListener('mouseleave', () => { c.classList.remove('on'); tip.style.display = 'none'; });
});
document.getElementById('count').textContent = pts.length + ' points drawn';
// '#point=N' in the address shows point N's panel, as hovering it does
const m = /point=(\d+)/.exec(location.hash);
if (m) { const c = svg.querySelector('circle[data-i="' + m[1] + '"]');
  if (c) c.dispatchEvent(new MouseEvent('mouseenter')); }
})();
"""

_COLOURS = ("#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B3", "#937860", "#DA8BC3", "#8C8C8C")


def _ms(v: float) -> str:
    return f"{v * 1e3:.1f} ms"


def point_records(result: Any) -> list[dict[str, Any]]:
    """One record per unsaturated candidate: x = tokens/s per user, y = tokens/s per GPU,
    whether it is on the front, meets the SLO or is the best, and its hover text."""
    chips = list(dict.fromkeys(c.deployment.hardware for c in result.candidates))
    colour = {chip: _COLOURS[i % len(_COLOURS)] for i, chip in enumerate(chips)}
    on_front = {id(c) for c in result.front}
    out = []
    for c in result.candidates:
        if c.saturated:
            continue
        f = c.figures
        cost = c.cost.get("usd_per_mtok")
        lines = [
            c.deployment.label(),
            f"load {c.load.label()}  isl {c.load.isl} osl {c.load.osl}  GPUs {c.gpus}",
            f"TTFT mean {_ms(f['ttft_mean_s'])}  p99 {_ms(f['ttft_p99_s'])}",
            f"TPOT mean {_ms(f['tpot_mean_s'])}  p99 {_ms(f['tpot_p99_s'])}",
            f"ITL  mean {_ms(f['itl_mean_s'])}  E2EL mean {f['e2el_mean_s']:.2f} s",
            f"{f['tokens_per_s_per_gpu']:.1f} tok/s/GPU  {f['tokens_per_s_per_user']:.1f} tok/s/user",
            f"{f['output_tokens_per_s']:.0f} output tok/s  {f['request_throughput_per_s']:.2f} req/s",
            "cost " + (f"${cost:.3f} per M output tokens" if cost is not None else "unknown (no price)"),
            "meets SLO" if c.meets_slo else "misses: " + "; ".join(c.misses),
        ]
        out.append(
            {
                "x": f["tokens_per_s_per_user"],
                "y": f["tokens_per_s_per_gpu"],
                "front": id(c) in on_front,
                "ok": c.meets_slo,
                "best": c is result.best,
                "colour": colour[c.deployment.hardware],
                "text": "\n".join(lines),
            }
        )
    return out


def html_report(result: Any, *, title: str | None = None) -> str:
    """The page as one string (see the module docstring)."""
    pts = point_records(result)
    data = {"points": pts, "xlabel": "tokens/s per user (1 / mean TPOT)", "ylabel": "output tokens/s per GPU"}
    # JSON inside <script type="application/json">: escape '<' so no '</script>' can close it
    blob = json.dumps(data).replace("<", "\\u003c")
    prov = result.provenance
    name = title or f"Search: {prov.get('model', '')}"
    rows = []
    for c in result.front:
        f = c.figures
        cost = c.cost.get("usd_per_mtok")
        rows.append(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{:.1f}</td><td>{:.1f}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>".format(
                html.escape(c.deployment.label()),
                html.escape(c.load.label()),
                c.gpus,
                f["tokens_per_s_per_gpu"],
                f["tokens_per_s_per_user"],
                _ms(f["ttft_p99_s"]),
                _ms(f["tpot_mean_s"]),
                f"${cost:.3f}" if cost is not None else "—",
                "yes" if c.meets_slo else "no",
            )
        )
    best = result.best
    best_line = (
        f"best: <b>{html.escape(best.deployment.label())}</b> at {html.escape(best.load.label())}"
        if best is not None
        else "no deployment meets the SLO"
    )
    chips = list(dict.fromkeys(c.deployment.hardware for c in result.candidates))
    legend = " ".join(
        f'<span style="color:{_COLOURS[i % len(_COLOURS)]}">&#9679;</span> {html.escape(chip)}'
        for i, chip in enumerate(chips)
    )
    slo = ", ".join(f"{k} ≤ {v * 1e3:g} ms" for k, v in prov.get("slo", {}).items()) or "none"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(name)}</title>
<style>{_CSS}</style></head><body>
<h1>{html.escape(name)}</h1>
<p class="muted">{result.deployments} deployments, {len(result.candidates)} candidates,
{sum(g.count for g in result.refused)} refused; SLO {html.escape(slo)};
engine rules vLLM {html.escape(str(prov.get("engine_behaviour_version", "")))}. Hover a point for its deployment and figures;
filled points meet the SLO, the line is the Pareto front. <span id="count"></span></p>
<p>{best_line}</p>
<p>{legend}</p>
<div id="wrap"><svg id="chart" width="900" height="520" viewBox="0 0 900 520"></svg><div id="tip"></div></div>
<table><tr><th>front: deployment</th><th>load</th><th>GPUs</th><th>tok/s/GPU</th><th>tok/s/user</th>
<th>TTFT p99</th><th>TPOT mean</th><th>$/M tok</th><th>SLO</th></tr>
{"".join(rows)}</table>
<script type="application/json" id="data">{blob}</script>
<script>{_JS}</script>
</body></html>
"""

"""`--report report.html`: one self-contained page per conversion or verification.

The page holds the verdict, every output's metrics, the per-layer error curve (an inline SVG of
max|d|/max|y| along the graph, log scale, the first diverging value marked), the layout plan and
the blockers when there are any. No script, no external resource: it opens anywhere, offline.
Every string from a model (names, messages) is escaped.
"""

from __future__ import annotations

import html
import math
from pathlib import Path

from tensorbridge.verification.compare import REMEDY, Report

_STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#1d2330}
h1{font-size:1.35em}h2{font-size:1.1em;margin-top:1.8em;border-bottom:1px solid #dde;padding-bottom:.2em}
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #e6e8ef;padding:.3em .5em;text-align:left}
th{background:#f4f5f9}td.num{text-align:right;font-variant-numeric:tabular-nums}
.badge{display:inline-block;padding:.15em .6em;border-radius:.4em;color:#fff;font-weight:600}
.PASS{background:#1f8a4c}.FAIL{background:#c62828}.INCONCLUSIVE{background:#b26a00}.REFUSED{background:#6a1b9a}
.note{color:#555}.bad{color:#c62828;font-weight:600}svg{background:#fbfbfd;border:1px solid #e6e8ef}
"""


def write_report(report: Report, path, layout_plan: dict | None = None, blockers: list | None = None) -> Path:
    """Write the page for a verification `report` (or for `blockers` when the conversion was refused)."""
    path = Path(path)
    path.write_text(render(report, layout_plan, blockers))
    return path


def render(report: Report | None, layout_plan: dict | None = None, blockers: list | None = None,
           title: str = "") -> str:
    e = html.escape
    status = report.status if report is not None else "REFUSED"
    heading = title or (f"{report.source} → {report.target}" if report is not None else "conversion")
    parts = [f"<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>tensorbridge: {e(heading)}</title>"
             f"<style>{_STYLE}</style></head><body>",
             f"<h1>tensorbridge <span class='badge {status}'>{status}</span></h1><p>{e(heading)}</p>"]
    if report is not None:
        parts += [f"<p class=note>note: {e(n)}</p>" for n in report.notes]
        if not report.conclusive:
            parts.append(f"<p class=bad>Matching these outputs proves little: {e(REMEDY)}.</p>")
        parts.append(_inputs(report))
        parts.append(_outputs(report))
        if report.first_divergence is not None:
            parts.append(_layers(report.first_divergence))
    if layout_plan:
        parts.append(_plan(layout_plan))
    if blockers:
        parts.append("<h2>Blockers</h2><table><tr><th>op</th><th>node</th><th>why</th></tr>" + "".join(
            f"<tr><td>{e(b.op)}</td><td>{e(b.node)}</td><td>{e(b.detail)}</td></tr>" for b in blockers) + "</table>")
    parts.append("</body></html>\n")
    return "".join(parts)


def _inputs(report: Report) -> str:
    e = html.escape
    rows = "".join(f"<tr><td>{e(k)}</td><td>{e(str(v['shape']))}</td><td>{e(v['dtype'])}</td></tr>"
                   for k, v in report.inputs.items())
    return f"<h2>Inputs</h2><table><tr><th>input</th><th>shape</th><th>dtype</th></tr>{rows}</table>"


def _outputs(report: Report) -> str:
    e = html.escape
    head = ("<tr><th>output</th><th>shape</th><th>max|d|</th><th>mean rel</th><th>max|d|/max|y|</th>"
            "<th>cosine</th><th>top-5</th><th>result</th></tr>")
    rows = []
    for o in report.outputs:
        top5 = f"{o.topk['top5']:.0%}" if "top5" in o.topk else "-"
        result = "ok" if o.ok else f"runtime differs: {o.runtime_differs}" if o.runtime_differs else \
            f"FAIL (rtol={o.rtol:g} atol={o.atol:g}) {o.problem}"
        if o.inconclusive:
            result += f"; inconclusive: {o.inconclusive}"
        rows.append(f"<tr><td>{e(o.name)}</td><td>{e(str(o.shape))}</td><td class=num>{o.max_abs:.3g}</td>"
                    f"<td class=num>{o.mean_rel:.3g}</td><td class=num>{o.robust_rel:.3g}</td>"
                    f"<td class=num>{o.cosine:.6f}</td><td class=num>{top5}</td>"
                    f"<td class={'bad' if not o.ok else ''}>{e(result)}</td></tr>")
    return f"<h2>Outputs</h2><table>{head}{''.join(rows)}</table>"


def _layers(d: dict) -> str:
    e = html.escape
    curve = d.get("curve") or []
    text = (f"<p class=bad>First diverging op: {e(d['op'])} {e(d['node'])!r} (value {e(d['value'])}, "
            f"max|d|/max|y| = {d['robust_rel']:.3g}); source: {e(d.get('source', ''))}</p>") if d.get("op") else \
        f"<p>All {d['values_compared']} intermediate values compared are within tolerance.</p>"
    return f"<h2>Per layer</h2>{text}{_svg(curve)}"


def _svg(curve: list[dict], width: int = 1000, height: int = 320) -> str:
    """max|d|/max|y| per compared value, in graph order, on a log axis from 1e-10 to 1e2."""
    if not curve:
        return ""
    e = html.escape
    lo, hi, pad = -10.0, 2.0, 40

    def x(i):
        return pad + (width - 2 * pad) * (i / max(len(curve) - 1, 1))

    def y(r):
        v = min(max(math.log10(max(r, 1e-10)), lo), hi)
        return height - pad - (height - 2 * pad) * (v - lo) / (hi - lo)

    def tag(name, body="", **attrs):  # every attribute quoted: an unquoted value would swallow the "/"
        text = " ".join(f"{k.replace('_', '-')}='{e(str(v))}'" for k, v in attrs.items())
        return f"<{name} {text}>{body}</{name}>"

    parts = []
    for p in range(int(lo), int(hi) + 1, 2):
        parts.append(tag("line", x1=pad, x2=width - pad, y1=f"{y(10.0 ** p):.1f}", y2=f"{y(10.0 ** p):.1f}",
                         stroke="#e3e5ee"))
        parts.append(tag("text", f"1e{p}", x=4, y=f"{y(10.0 ** p) + 4:.1f}", font_size=11, fill="#667"))
    points = " ".join(f"{x(i):.1f},{y(c['robust_rel']):.1f}" for i, c in enumerate(curve))
    parts.append(tag("polyline", points=points, fill="none", stroke="#1f5fbf", stroke_width=1.5))
    for i, c in enumerate(curve):
        parts.append(tag("circle", f"<title>{e(c['op'])} {e(c['node'])}: {c['robust_rel']:.3g}</title>",
                         cx=f"{x(i):.1f}", cy=f"{y(c['robust_rel']):.1f}", r=2.5,
                         fill="#1f5fbf" if c["ok"] else "#c62828"))
    first = next((i for i, c in enumerate(curve) if not c["ok"]), None)
    if first is not None:
        parts.append(tag("line", x1=f"{x(first):.1f}", x2=f"{x(first):.1f}", y1=pad, y2=height - pad,
                         stroke="#c62828", stroke_dasharray="4 3"))
        parts.append(tag("circle", cx=f"{x(first):.1f}", cy=f"{y(curve[first]['robust_rel']):.1f}", r=7,
                         fill="none", stroke="#c62828", stroke_width=2.5))
        parts.append(tag("text", f"first divergence: {e(curve[first]['node'])}", x=f"{x(first) + 8:.1f}",
                         y=pad + 12, font_size=12, fill="#c62828"))
    parts.append(tag("text", f"values in graph order ({len(curve)} compared); vertical: max|d|/max|y|, log scale",
                     x=f"{width / 2:.0f}", y=height - 8, font_size=12, text_anchor="middle", fill="#445"))
    return (f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}' role='img' "
            f"aria-label='max|d|/max|y| along the graph'>{''.join(parts)}</svg>")


def _plan(plan: dict) -> str:
    e = html.escape
    ops = plan.get("ops", {})
    counts: dict[str, int] = {}
    for layout in ops.values():
        counts[layout] = counts.get(layout, 0) + 1
    rows = "".join(f"<tr><td>{e(t['op'])}</td><td>{e(t['value'])}</td><td>{e(str(t['perm']))}</td>"
                   f"<td>{e(t['consumer'])}</td><td>{e(t['reason'])}</td></tr>" for t in plan.get("transforms", []))
    summary = ", ".join(f"{n} in {k}" for k, n in sorted(counts.items())) or "none"
    return (f"<h2>Layout plan</h2><p>Layout-carrying ops: {e(summary)}; constants permuted at conversion: "
            f"{plan.get('weights_permuted', 0)}; transposes left: "
            f"{sum(t['op'] == 'Transpose' for t in plan.get('transforms', []))}.</p>"
            + (f"<table><tr><th>op</th><th>value</th><th>perm</th><th>before</th><th>why</th></tr>{rows}</table>"
               if rows else ""))

"""The batch summary: OUTDIR/summary.json (one record per source x target) and OUTDIR/summary.html (a table of
sources by targets: status, reason, time, largest relative error)."""

from __future__ import annotations

import html
import json
from pathlib import Path

STATUSES = ("pass", "wrong", "refused", "crash", "timeout", "unverified")
COLOURS = {"pass": "#d4f4d4", "wrong": "#f8c8c8", "refused": "#f8e8c0", "crash": "#e8c8f0", "timeout": "#e0e0e0",
           "unverified": "#dde8f8"}
FIELDS = ("source", "target", "status", "seconds", "max_rel_error", "reason", "log", "key")


def write(records: list[dict], outdir: Path) -> None:
    rows = [{k: r.get(k) for k in FIELDS} for r in records]
    (outdir / "summary.json").write_text(json.dumps(rows, indent=1))
    (outdir / "summary.html").write_text(html_table(rows))


def totals(records: list[dict]) -> dict[str, int]:
    return {s: sum(r["status"] == s for r in records) for s in STATUSES if any(r["status"] == s for r in records)}


def html_table(records: list[dict]) -> str:
    sources = list(dict.fromkeys(r["source"] for r in records))
    targets = list(dict.fromkeys(r["target"] for r in records))
    cell = {(r["source"], r["target"]): r for r in records}
    head = "".join(f"<th>{html.escape(t)}</th>" for t in targets)
    body = []
    for source in sources:
        cells = []
        for target in targets:
            r = cell.get((source, target))
            if r is None:
                cells.append("<td></td>")
                continue
            error = "" if r.get("max_rel_error") is None else f"<br>max rel {r['max_rel_error']:.2g}"
            seconds = "" if r.get("seconds") is None else f"<br>{r['seconds']:.1f} s"
            reason = f"<div class=r>{html.escape(r['reason'])}</div>" if r.get("reason") else ""
            cells.append(f"<td style='background:{COLOURS.get(r['status'], '#fff')}'><b>{r['status']}</b>"
                         f"{seconds}{error}{reason}</td>")
        body.append(f"<tr><th class=s>{html.escape(Path(source).name)}</th>{''.join(cells)}</tr>")
    summary = ", ".join(f"{n} {s}" for s, n in totals(records).items())
    return ("<!doctype html><meta charset=utf-8><title>tensorbridge batch</title><style>"
            "body{font:14px sans-serif}table{border-collapse:collapse}td,th{border:1px solid #999;padding:4px;"
            "vertical-align:top}th.s{text-align:left}.r{font-size:11px;max-width:28em}</style>"
            f"<h1>tensorbridge batch</h1><p>{len(records)} conversions: {html.escape(summary)}</p>"
            f"<table><tr><th>source</th>{head}</tr>{''.join(body)}</table>")

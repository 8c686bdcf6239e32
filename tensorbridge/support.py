"""The support matrix: which formats read (`in`) and write (`out`) each IR op, with the evidence.

A cell is what the per-op corpus measured (tests/cases: each op's cases written by the format's
backend and run in its runtime; read back by its frontend, which must produce the op, and run):
`yes` when every case passed, `k/n` when some did, `-` when none did, `no` with the reason where
the framework's registry says it cannot express the op at all. The measurements are committed in
`support_evidence.json` (regenerate with `python -m tests.cases.corpus --write`); the test suite
re-runs part of them and checks the rest against the registries. `tensorbridge ops` prints it;
`docs/support.md` is its markdown.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

from tensorbridge import frameworks
from tensorbridge.ops import schema as op_schema

EVIDENCE = Path(__file__).with_name("support_evidence.json")


@functools.cache
def evidence() -> dict:
    """{"versions": {...}, "ops": {op: {"cases": [...], "out": {fmt: [status]}, "in": {fmt: [status]}}}}."""
    return json.loads(EVIDENCE.read_text()) if EVIDENCE.is_file() else {"versions": {}, "ops": {}}


def columns(from_fw: str | None = None, to_fw: str | None = None) -> list[tuple[str, str]]:
    """(format, "in" | "out") for every format that reads or writes models, or the one asked for."""
    for name in (from_fw, to_fw):
        if name:
            frameworks.by_name(name)
    everything = from_fw is None and to_fw is None
    cols = []
    for f in frameworks.FORMATS:
        if f.loader and (everything or f.name == from_fw):
            cols.append((f.name, "in"))
        if f.saver and (everything or f.name == to_fw):
            cols.append((f.name, "out"))
    return cols


def cell(op: str, fmt: str, direction: str) -> str:
    registry = frameworks.registry(frameworks.by_name(fmt))
    if direction == "out" and registry is not None and op in registry.refused:
        return "no: " + registry.refused[op]
    results = evidence()["ops"].get(op, {}).get(direction, {}).get(fmt)
    if not results:
        return "?"
    passed = sum(r == "pass" for r in results)
    return "yes" if passed == len(results) else f"{passed}/{len(results)}" if passed else "-"


def matrix(from_fw: str | None = None, to_fw: str | None = None) -> tuple[list[str], list[list[str]]]:
    """Header and rows: per IR op, each column's cell."""
    cols = columns(from_fw, to_fw)
    header = ["op", "family", "layout", *[f"{f} {d}" for f, d in cols], "summary"]
    rows = []
    for s in op_schema.all_schemas():
        rows.append([s.name, s.family, str(s.layout), *[cell(s.name, f, d) for f, d in cols],
                     s.doc.split(". Equivalents")[0]])
    return header, rows


def coverage(from_fw=None, to_fw=None) -> list[tuple[str, int, int, int]]:
    """Per column: (column, ops with a passing case, ops whose every case passes, ops the format can express at
    all)."""
    cols = columns(from_fw, to_fw)
    _, rows = matrix(from_fw, to_fw)
    out = []
    for i, (f, d) in enumerate(cols, start=3):
        cells = [r[i] for r in rows]
        expressible = [c for c in cells if not c.startswith("no:")]
        out.append((f"{f} {d}", sum(c == "yes" or "/" in c for c in expressible), expressible.count("yes"),
                    len(expressible)))
    return out


def text(from_fw=None, to_fw=None) -> str:
    header, rows = matrix(from_fw, to_fw)
    widths = [max(len(r[i]) for r in [header] + rows) for i in range(len(header) - 1)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths))]
    for r in rows:
        lines.append("  ".join(c.ljust(w) for c, w in zip(r, widths)))
    lines.append("")
    lines += [f"{col}: {n} of {total} ops ({every} in every case)" for col, n, every, total in coverage(from_fw, to_fw)]
    return "\n".join(lines)


def markdown() -> str:
    header, rows = matrix()
    versions = ", ".join(f"{k} {v}" for k, v in sorted(evidence()["versions"].items()))
    out = ["# Support matrix", "",
           "Generated from the per-op corpus (`python -m tests.cases.corpus --write`): each op's cases (the ONNX",
           "node tests' one-op models of the op, or its catalogue examples) are written by each format's backend and",
           "run in that format's runtime (**out**), then read back by its frontend, which must produce the op, and",
           "run again (**in**; a SavedModel is exported from the Keras code, a TorchScript archive traced from the",
           "PyTorch code, a jax.export artifact exported from the Flax code: StableHLO lowers many ops into plain",
           "arithmetic, so **jaxexport in** passes a case whose output is right whichever ops it reads as).",
           "`yes`: every case passed; `k/n`: k of n cases passed (attribute variants the format does not take);",
           "`-`: none did; `no`: the framework cannot express the op at all (the reason follows). Every op runs",
           "in the reference interpreter.",
           "", f"Measured with {versions}." if versions else "", "", "## Coverage per format", "",
           "| column | ops with a passing case | ops passing every case | of the ops it can express |",
           "|---|---|---|---|"]
    for col, n, every, total in coverage():
        out.append(f"| {col} | {n} ({100 * n / max(total, 1):.0f}%) | {every} ({100 * every / max(total, 1):.0f}%) "
                   f"| {total} |")
    out += ["", f"## {len(rows)} IR ops", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for r in rows:
        out.append("| " + " | ".join(c.replace("|", "\\|") for c in r) + " |")
    return "\n".join(out) + "\n"


def main() -> None:
    Path("docs").mkdir(exist_ok=True)
    Path("docs/support.md").write_text(markdown())


if __name__ == "__main__":
    main()

"""The support matrix, generated from the op catalogue and the format registry.

`tensorbridge ops` prints it; `docs/support.md` is this module's markdown output, and a
test fails when the committed file is stale (regenerate with `python -m tensorbridge.support`).
"""

from __future__ import annotations

from pathlib import Path

from tensorbridge import frameworks
from tensorbridge.ops import schema as op_schema


def _capabilities(f) -> tuple[set[str] | None, set[str] | None]:
    """(ops imported, ops exported) by a format, from its registry; None where it has no frontend/backend."""
    everything = op_schema.all_op_names()
    registry = frameworks.registry(f)
    if registry is None:
        return everything, everything
    decomposable = {op for op in everything if op_schema.get(op).decompose is not None}
    exported = registry.exportable()
    if f.name == "tflite":  # float graphs go through the Keras registry and TF's converter
        exported = exported | frameworks.registry(frameworks.by_name("keras")).exportable()
    return (registry.importable() if f.loader else None), ((exported | decomposable) if f.saver else None)


def matrix(from_fw: str | None = None, to_fw: str | None = None) -> tuple[list[str], list[list[str]]]:
    """Header and rows: per IR op, which formats import (`in`) and export (`out`) it."""
    for name in (from_fw, to_fw):
        if name:
            frameworks.by_name(name)
    everything = from_fw is None and to_fw is None
    cols, caps = [], []
    for f in frameworks.FORMATS:
        imported, exported = _capabilities(f)
        if imported is not None and (everything or f.name == from_fw):
            cols.append(f"{f.name} in")
            caps.append(imported)
        if exported is not None and (everything or f.name == to_fw):
            cols.append(f"{f.name} out")
            caps.append(exported)
    header = ["op", "family", "layout", *cols, "summary"]
    rows = []
    for s in op_schema.all_schemas():
        marks = ["yes" if s.name in c else "-" for c in caps]
        rows.append([s.name, s.family, str(s.layout), *marks, s.doc.split(". Equivalents")[0]])
    return header, rows


def text(from_fw=None, to_fw=None) -> str:
    header, rows = matrix(from_fw, to_fw)
    widths = [max(len(r[i]) for r in [header] + rows) for i in range(len(header) - 1)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths))]
    for r in rows:
        lines.append("  ".join(c.ljust(w) for c, w in zip(r, widths)))
    return "\n".join(lines)


def markdown() -> str:
    header, rows = matrix()
    out = ["# Support matrix", "",
           "Generated from the op catalogue and the format registry by `python -m tensorbridge.support`",
           "(a test fails when this file is stale). Every op runs in the reference interpreter.", "",
           f"{len(rows)} IR ops.", "",
           "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for r in rows:
        out.append("| " + " | ".join(c.replace("|", "\\|") for c in r) + " |")
    return "\n".join(out) + "\n"


def main() -> None:
    Path("docs").mkdir(exist_ok=True)
    Path("docs/support.md").write_text(markdown())


if __name__ == "__main__":
    main()

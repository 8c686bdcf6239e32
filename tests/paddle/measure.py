"""The figures of docs/paddle.md: each recorded Paddle model, in each form Paddle saved it, read by tensorbridge and
taken to every target, against what `paddle.inference` computed, with Paddle's own distance from the float64 truth;
then the models written as Paddle by tensorbridge, as Paddle ran them (recorded by tests/paddle/written.py).

    python -m tests.paddle.measure [NAME ...]
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np

import tensorbridge as tb
from tensorbridge.formats.paddle import read_program
from tensorbridge.verification.harness import runner_for
from tests.models.faithful import distance, float64_truth
from tests.paddle.test_paddle import DATA, SAVED, feeds_of, recorded, saved_model
from tests.paddle.written import BACK, ZOO, written

TARGETS = ("onnx", "torch", "keras", "tflite", "flax")


def saved_row(name: str, form: str, folder: Path) -> str:
    theirs = recorded(name)
    model = saved_model(name, form, folder)
    shapes = {v.name: list(theirs[v.name].shape) for v in read_program(model).inputs}
    graph = tb.load(model, input_shapes=shapes)
    feeds = feeds_of(graph, theirs)
    exact = float64_truth(graph, feeds)[graph.outputs[0].name]
    paddle = theirs[f"{form}_output0"]
    cells = [distance(paddle, exact), distance(tb.run(graph, feeds)[graph.outputs[0].name], paddle)]
    for to in TARGETS:
        dest = folder / {"onnx": "m.onnx", "tflite": "m.tflite"}.get(to, f"m_{to}")
        tb.save(graph, dest, to=to)
        target = runner_for(str(dest))
        out = target.run({n: feeds[v.name] for (n, _, _), v in zip(target.inputs, graph.inputs)})
        cells.append(distance(out[target.outputs[0]], paddle))
    return f"| {name} | {form} | " + " | ".join(f"{c:.1e}" for c in cells) + " |"


def written_row(name: str, folder: Path) -> str:
    program, _, expected = written(name, folder)
    with np.load(DATA / f"{name}.written.paddle.npz") as f:
        paddle = f["output"]
    ops = len(read_program(program).ops)
    source = "PyTorch" if name in ZOO else "Paddle (original program)"
    return f"| {name} | {ops} | {source} | {distance(paddle, expected):.1e} |"


def main(names) -> None:
    print("| model | form | Paddle vs float64 truth | read by tensorbridge | " + " | ".join(TARGETS) + " |")
    print("|---|---|---|---|" + "---|" * len(TARGETS))
    for name, form in SAVED:
        if not names or name in names:
            with tempfile.TemporaryDirectory() as tmp:
                print(saved_row(name, form, Path(tmp)))
    print("\n| written as Paddle | ops | compared with | Paddle's output |\n|---|---|---|---|")
    for name in (*ZOO, *BACK):
        if names and name not in names:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            print(written_row(name, Path(tmp)))


if __name__ == "__main__":
    main(sys.argv[1:])

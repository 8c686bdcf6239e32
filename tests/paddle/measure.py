"""The figures of docs/paddle.md: each recorded Paddle model read by tensorbridge and taken to every target,
against what `paddle.inference` computed, with each one's distance from the float64 truth.

    python -m tests.paddle.measure
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import tensorbridge as tb
from tensorbridge.formats.paddle import read_program
from tensorbridge.verification.harness import runner_for
from tests.models.faithful import distance, float64_truth
from tests.paddle.test_paddle import SAVED, SMALL, feeds_of, recorded, saved_model


def main() -> None:
    print("| model | form | Paddle from float64 truth | read back | " + " | ".join(
        ("onnx", "torch", "keras", "tflite", "flax")) + " |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, form in SAVED:
        theirs = recorded(name)
        with tempfile.TemporaryDirectory() as tmp:
            model = saved_model(name, form, Path(tmp))
            shapes = {v.name: list(theirs[v.name].shape) for v in read_program(model).inputs}
            graph = tb.load(model, input_shapes=shapes)
            feeds = feeds_of(graph, theirs)
            exact = float64_truth(graph, feeds)[graph.outputs[0].name]
            paddle = theirs[f"{form}_output0"]
            cells = [f"{distance(tb.run(graph, feeds)[graph.outputs[0].name], paddle):.1e}"]
            for to in ("onnx", "torch", "keras", "tflite", "flax"):
                if form == "legacy" or (name not in SMALL and to not in ("onnx", "torch")):
                    cells.append("")
                    continue
                dest = Path(tmp) / {"onnx": "m.onnx", "tflite": "m.tflite"}.get(to, f"m_{to}")
                tb.save(graph, dest, to=to)
                target = runner_for(str(dest))
                out = target.run({n: feeds[v.name] for (n, _, _), v in zip(target.inputs, graph.inputs)})
                cells.append(f"{distance(out[target.outputs[0]], paddle):.1e}")
            print(f"| {name} | {form} | {distance(paddle, exact):.1e} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()

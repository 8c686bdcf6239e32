"""Measures docs/mxnet.md's table: for each recorded model, the largest relative difference (max|Δ| / max|y|)
between MXNet's recorded outputs and the IR (every op output for the small models), each conversion run in
its own runtime, and MXNet → IR → MXNet run in MXNet (needs `make runtimes`); then models of the PyTorch test
zoo written as MXNet and run in MXNet.

    python -m tests.mxnet.measure
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

import tensorbridge as tb
from tensorbridge.errors import UnsupportedError
from tensorbridge.reference.interpreter import run
from tensorbridge.verification.align import reorder
from tensorbridge.verification.harness import runner_for
from tensorbridge.verification.runners.mxnet import MXNetRunner
from tests.mxnet.test_mxnet import DATA, SMALL, ZOO, recorded, zoo_model
from tests.mxnet.weights import image

TARGETS = ("onnx", "torch", "keras", "tflite")


def rel(a, b) -> float:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64).reshape(np.shape(a))
    return float(np.abs(a - b).max() / max(np.abs(a).max(), 1e-30))


def measure(name: str, folder: Path) -> list[str]:
    theirs = recorded(name)
    if name in SMALL:
        symbol, shapes = DATA / f"{name}-symbol.json", SMALL[name]
        feeds = {k: theirs[k] for k in shapes}
    else:
        symbol, size = zoo_model(name, folder), ZOO[name]
        shapes, feeds = {"data": [1, 3, size, size]}, {"data": image((1, 3, size, size))}
    graph = tb.load(symbol, input_shapes=shapes)
    names = graph.metadata["mxnet"]["outputs"]
    heads = {v: k for k, v in names.items()}
    expected = [theirs[heads[v.name]] if name in SMALL else theirs["output"] for v in graph.outputs]
    ours = run(graph, feeds, intermediates=name in SMALL)
    compared = [rel(theirs[k], ours[v]) for k, v in names.items() if k in theirs and v in ours]
    row = [name, str(sum(1 for n in graph.nodes)), f"{max(compared):.1e}" if name in SMALL else "—",
           f"{max(rel(e, ours[v.name]) for e, v in zip(expected, graph.outputs)):.1e}"]
    for to in TARGETS:
        dest = folder / {"onnx": "m.onnx", "tflite": "m.tflite"}.get(to, f"m_{to}")
        try:
            tb.save(graph, dest, to=to)
        except UnsupportedError as e:
            row.append("refused: " + ", ".join(sorted({b.op for b in e.blockers})))
            continue
        target = runner_for(str(dest))
        given = [feeds[v.name] for v in graph.inputs]
        out = target.run({n: reorder(x, shape) for (n, _, shape), x in zip(target.inputs, given)})
        row.append(f"{max(rel(e, out[t]) for e, t in zip(expected, target.outputs)):.1e}")
    tb.save(graph, folder / "again-symbol.json")
    mx = MXNetRunner(folder / "again-symbol.json")
    out = mx.run(feeds)
    row.append(f"{max(rel(e, out[t]) for e, t in zip(expected, mx.outputs)):.1e}")
    return row


def torch_zoo(folder: Path) -> list[str]:
    from tests.models.torch_zoo import imported

    lines = []
    for name, size in (("resnet18", 64), ("mobilenet_v2", 64), ("resnet50", 224)):
        module, args, graph = imported(name, batch=1, size=size)
        tb.save(graph, folder / f"{name}-symbol.json")
        mx = MXNetRunner(folder / f"{name}-symbol.json")
        out = mx.run({mx.inputs[0][0]: args[0].numpy()})
        lines.append(f"{name} ({size}×{size}) {rel(module(*args).detach().numpy(), out[mx.outputs[0]]):.1e}")
    return lines


def main() -> None:
    print("| model | IR ops | worst op output | IR outputs | → ONNX | → PyTorch code | → Keras code | → TFLite "
          "| MXNet → IR → MXNet |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in (*SMALL, *ZOO):
        with tempfile.TemporaryDirectory() as tmp:
            print("| " + " | ".join(measure(name, Path(tmp))) + " |", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        print("PyTorch zoo → MXNet, run in MXNet:", "; ".join(torch_zoo(Path(tmp))))


if __name__ == "__main__":
    main()

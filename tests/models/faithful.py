"""What "the conversion is faithful" means for float32 models, checked against a float64 truth.

Two float32 runtimes of a deep network differ by their own rounding: measured on ResNet50 with
calibrated BatchNorm statistics, Keras (TensorFlow/oneDNN) is 5e-5 and onnxruntime 4e-5 away from
the same network computed in float64, so a fixed bar like max|d|/max|y| <= 1e-5 between them
is luck. The check here is the one that means something: the converted model is within float32
tolerance of the source runtime AND no farther from the float64 truth than the source runtime
itself is (times a small slack); a conversion that adds an error of its own fails it.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

import tensorbridge as tb
from tensorbridge.reference.interpreter import run_in_float64
from tensorbridge.verification.harness import runner_for


def float64_truth(graph, feeds: dict) -> dict[str, np.ndarray]:
    """The graph's float64 result on `feeds` (taken in the order of the graph's inputs)."""
    return run_in_float64(graph, {v.name: a for v, a in zip(graph.inputs, feeds.values())})


def check(report, truth: dict | None = None, classifier: bool = True, slack: float = 2.0,
          rtol: float = 1e-4) -> None:
    """`report` (source vs target) within `rtol` and conclusive; with `truth`, the target no farther from it
    than the source runtime is (x `slack`, at least 1e-6)."""
    assert report.ok and not any(o.inconclusive for o in report.outputs), report.summary()
    for o, (name, (ref, got)) in zip(report.outputs, report.arrays.items()):
        assert o.robust_rel <= rtol, report.summary()
        if classifier and "top10" in o.topk:
            assert o.topk["top10"] == 1.0, report.summary()
        if truth is not None:
            no_farther_from_truth(name, ref, got, list(truth.values())[list(report.arrays).index(name)], slack,
                                  report.summary())


def distance(value, exact) -> float:
    """max|value - exact| / max|exact|, in float64 (`value` in `exact`'s shape)."""
    exact = np.asarray(exact, np.float64)
    return float(np.abs(np.asarray(value, np.float64).reshape(exact.shape) - exact).max() / np.abs(exact).max())


def no_farther_from_truth(name: str, source, target, exact, slack: float = 2.0, context: str = "") -> None:
    """The target's output no farther from the float64 truth than the source runtime's is (x `slack`, at least
    1e-6)."""
    source_error, target_error = distance(source, exact), distance(target, exact)
    assert target_error <= slack * max(source_error, 1e-6), \
        (f"{name}: the target is {target_error:.3g} from the float64 truth, the source runtime {source_error:.3g}",
         context)


def close(name: str, expected, got, rtol: float = 1e-5) -> None:
    """`got` (in `expected`'s shape) within `rtol` of `expected` (verification's comparison)."""
    from tensorbridge.verification.compare import compare

    report = compare(name, name, expected, np.asarray(got).reshape(expected.shape), rtol=rtol)
    assert report.ok, (name, report.robust_rel, report.problem)


def image_feeds(target, x: np.ndarray) -> dict:
    """The runner's feeds for the NCHW image `x`, in the layout its input takes (channels-last Keras or TFLite
    written with `--io-layout target` take NHWC)."""
    shape = tuple(target.inputs[0][2])
    return {target.inputs[0][0]: x if shape == x.shape else x.transpose(0, 2, 3, 1)}


def read_back(path, args) -> tuple[dict, np.ndarray]:
    """A written model file read back and run by the reference interpreter on `args` (torch tensors, cast to
    the dtypes the file's inputs take): (the feeds, its first output)."""
    graph = tb.load(path)
    feeds = {x.name: a.numpy().astype(x.dtype) for x, a in zip(graph.inputs, args)}
    return feeds, tb.run(graph, feeds)[graph.outputs[0].name]


def written_to_runtime(graph, folder, to: str, x: np.ndarray) -> dict[str, np.ndarray]:
    """`graph` written as `to` into `folder` and run in that target's runtime on the NCHW image `x`: its outputs
    by the graph's output names, in the graph's shapes (channels-last outputs transposed back)."""
    dest = Path(folder) / {"onnx": "m.onnx", "tflite": "m.tflite"}.get(to, f"m_{to}")
    tb.save(graph, dest, to=to)
    target = runner_for(str(dest))
    out = target.run(image_feeds(target, x))
    result = {}
    for value, there in zip(graph.outputs, target.outputs):
        got = np.asarray(out[there])
        result[value.name] = got if got.shape == tuple(value.shape) else got.transpose(0, 3, 1, 2)
    return result


def digest(*paths) -> str:
    """The SHA-256 of the files' bytes, in order (a recorded runtime output belongs to exactly these files)."""
    h = hashlib.sha256()
    for path in paths:
        h.update(Path(path).read_bytes())
    return h.hexdigest()


def conversion_cells(graph, folder, x: np.ndarray, source: dict, targets=("onnx", "torch", "keras", "tflite")) \
        -> list[float]:
    """A docs table's measured cells for `graph` on the NCHW image `x`: each target's outputs (written into
    `folder`, run in its runtime) against `source` (the source runtime's, by output name); then how far the source
    runtime and the farthest target are from the float64 result."""
    truth = float64_truth(graph, {graph.inputs[0].name: x})

    def farthest(values, exact) -> float:
        return max(distance(values[v.name], exact[v.name]) for v in graph.outputs)

    outputs = [written_to_runtime(graph, Path(folder) / to, to, x) for to in targets]
    return [*(farthest(o, source) for o in outputs), farthest(source, truth), max(farthest(o, truth) for o in outputs)]


def table_row(name: str, count: int, cells: list[float], same: bool) -> str:
    """A measured model's row: name, blob/layer count, the cells, whether the round trip is identical."""
    return " | ".join([f"| {name}", str(count), *(f"{d:.1e}" for d in cells), "identical |" if same else
                       "DIFFERENT |"])

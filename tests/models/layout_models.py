"""Small IR models for the layout planner's tests, in either layout family."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import tensorbridge as tb
from tensorbridge.ir.graph import Graph
from tensorbridge.passes.infer_shapes import infer_shapes

H, W, C = 6, 6, 4


def mixed_model(layout: str) -> Graph:
    """Convolutions and pools mixed with Concat on channels, broadcasting Adds with a rank-1 and a rank-3
    constant, Softmax on a spatial axis, Mean over H and W, a Flatten -> Dense head, and a Reshape to a
    token sequence and back; `layout` is the source's (NHWC like Keras/TFLite, NCHW like ONNX/PyTorch)."""
    rng = np.random.default_rng(0)
    nhwc = layout == "NHWC"

    def dims(n, h, w, c):
        return (n, h, w, c) if nhwc else (n, c, h, w)

    def const(name, array):
        return g.add_constant(name, np.asarray(array, np.float32) if np.asarray(array).dtype.kind == "f"
                              else np.asarray(array, np.int64))

    def conv(v, cin, cout, k, name):
        w = const(f"{name}.weight", rng.standard_normal((cout, cin, k, k)) * 0.3)
        b = const(f"{name}.bias", rng.standard_normal(cout) * 0.1)
        return g.op("Conv", v, w, b, name=name, layout=layout, kernel_shape=[k, k], pads=[k // 2] * 4)

    g = Graph("mixed")
    x = g.add_input("image", "float32", dims("batch", H, W, 3))
    channels, height, width = (3, 1, 2) if nhwc else (1, 2, 3)
    cat = g.op("Concat", conv(x, 3, C, 3, "conv_a"), conv(x, 3, C, 1, "conv_b"), axis=channels, name="concat")
    rank1 = const("rank1", rng.standard_normal(2 * C if nhwc else W))
    rank3 = const("rank3", rng.standard_normal((H, W, 2 * C) if nhwc else (2 * C, H, W)) * 0.5)
    t = g.op("Relu", g.op("Add", g.op("Add", cat, rank1, name="add_rank1"), rank3, name="add_rank3"), name="relu")
    t = g.op("Softmax", t, axis=height, name="softmax_over_height")
    pooled = g.op("MaxPool", t, name="pool", layout=layout, kernel_shape=[2, 2], strides=[2, 2])
    flat = g.op("Flatten", pooled, axis=1, name="flatten")
    head = const("head.weight", rng.standard_normal((2 * C * (H // 2) * (W // 2), 5)) * 0.2)
    logits = g.op("Dense", flat, head, const("head.bias", rng.standard_normal(5)), name="logits")
    mean = g.op("ReduceMean", t, const("hw", [height, width]), keepdims=0, name="mean_hw")
    tokens = g.op("Reshape", t, const("to_tokens", [0, H * W, 2 * C] if nhwc else [0, 2 * C, H * W]),
                  name="tokens")
    back = g.op("Reshape", tokens, const("to_image", dims(0, H, W, 2 * C)), name="to_image")
    features = conv(back, 2 * C, C, 3, "conv_c")
    g.outputs = [logits, mean, tokens, features]
    return infer_shapes(g)


def save_source(graph: Graph, folder: Path) -> Path:
    return tb.save(graph, folder / f"{graph.name}.tbir")


def transposes_in(path: Path) -> int:
    """Transpose ops in a converted model (ONNX, TFLite, or a generated PyTorch/Keras folder)."""
    path = Path(path)
    if path.is_dir():
        code = (path / "model.py").read_text()
        return code.count(".permute(") + code.count("ops.transpose(")
    return tb.load(path).op_histogram().get("Transpose", 0)

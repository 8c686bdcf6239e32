"""LSTM/GRU/RNN configurations the layer libraries do not hold (custom activations, clip, peepholes, coupled
gates, sequence lengths, batch-major layout, a GRU resetting before its matmul) reach every target unrolled
over time: the decomposition against the reference, and the written code against onnxruntime."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import tensorbridge as tb
from tensorbridge.ir.graph import Graph
from tensorbridge.passes.decompose import legalize
from tensorbridge.passes.infer_shapes import infer_shapes

GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}
SEQ, BATCH, IN, HID = 4, 3, 5, 6


def _weights(op: str, dirs: int, rng, peepholes: bool) -> dict[str, np.ndarray]:
    g = GATES[op]
    w = {"W": rng.standard_normal((dirs, g * HID, IN)), "R": rng.standard_normal((dirs, g * HID, HID)) * 0.5,
         "B": rng.standard_normal((dirs, 2 * g * HID)) * 0.5}
    if peepholes:
        w["P"] = rng.standard_normal((dirs, 3 * HID))
    return {k: v.astype(np.float32) for k, v in w.items()}


def _graph(op: str, attrs: dict, lens: bool, initial: bool, peepholes: bool = False) -> Graph:
    """One recurrent node with constant weights; inputs x (and the initial states, the lengths)."""
    rng = np.random.default_rng(0)
    dirs = 2 if attrs.get("direction") == "bidirectional" else 1
    layout = attrs.get("layout", 0)
    g = Graph(op)
    x = g.add_input("x", "float32", (BATCH, SEQ, IN) if layout else (SEQ, BATCH, IN))
    w = {k: g.add_constant(k, v) for k, v in _weights(op, dirs, rng, peepholes).items()}
    state_shape = (BATCH, dirs, HID) if layout else (dirs, BATCH, HID)
    seq_lens = g.add_input("lens", "int32", (BATCH,)) if lens else None
    states = [g.add_input(f"h{i}", "float32", state_shape) if initial else None
              for i in range(2 if op == "LSTM" else 1)]
    inputs = [x, w["W"], w["R"], w["B"], seq_lens, *states, w.get("P")]
    while inputs[-1] is None:
        inputs.pop()
    node = g.add_node(op, inputs, {"hidden_size": HID, **attrs}, outputs=3 if op == "LSTM" else 2, name=op.lower())
    g.outputs.extend(node.outputs)
    infer_shapes(g)
    return g


CASES = [  # op, attributes, sequence lengths, initial states, peepholes
    ("GRU", {}, False, False, False),
    ("GRU", {"linear_before_reset": 1, "direction": "reverse"}, False, True, False),
    ("GRU", {"direction": "bidirectional", "clip": 0.8}, True, True, False),
    ("GRU", {"layout": 1, "direction": "reverse"}, True, False, False),
    ("LSTM", {"activations": ["HardSigmoid", "LeakyRelu", "ScaledTanh"], "activation_alpha": [0.3, 0.2, 0.9],
              "activation_beta": [0.4, 1.1]}, False, True, False),
    ("LSTM", {"input_forget": 1, "direction": "bidirectional"}, True, True, False),
    ("LSTM", {"layout": 1, "clip": 1.5}, False, False, False),
    ("LSTM", {"direction": "reverse"}, True, True, True),
    ("RNN", {"activations": ["Affine"], "activation_alpha": [0.7], "activation_beta": [0.1]}, True, False, False),
    ("RNN", {"activations": ["Elu", "Softsign"], "direction": "bidirectional"}, False, True, False),
]


def _feeds(g: Graph) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(1)
    feeds = {v.name: rng.standard_normal(v.shape).astype(np.float32) for v in g.inputs if v.name != "lens"}
    if any(v.name == "lens" for v in g.inputs):
        feeds["lens"] = np.array([SEQ, 1, 3], np.int32)
    return feeds


@pytest.mark.parametrize("op,attrs,lens,initial,peepholes", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_the_unrolled_layer_computes_the_op(op, attrs, lens, initial, peepholes):
    g = _graph(op, attrs, lens, initial, peepholes)
    feeds = _feeds(g)
    expected = [tb.run(g, feeds)[v.name] for v in g.outputs]
    other = tb.run(g, {**feeds, "x": feeds["x"] * -0.5})[g.outputs[0].name]
    assert not np.allclose(other, expected[0], atol=1e-3)  # the outputs depend on the input
    original = g.nodes[0]
    legalize(g, lambda n: "blocked" if n is original else None, "test")
    assert all(n.op != op for n in g.nodes)
    got = tb.run(g, feeds)
    for v, e in zip(g.outputs, expected):
        np.testing.assert_allclose(got[v.name], e, rtol=1e-5, atol=1e-5, err_msg=v.name)


def _onnx_gru(tmp_path) -> str:
    """A bidirectional GRU with ONNX's default linear_before_reset=0 and per-batch sequence lengths."""
    rng = np.random.default_rng(2)
    w = _weights("GRU", 2, rng, False)
    graph = helper.make_graph(
        [helper.make_node("GRU", ["x", "W", "R", "B", "lens"], ["y", "y_h"], hidden_size=HID,
                          direction="bidirectional")], "gru",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [SEQ, BATCH, IN]),
         helper.make_tensor_value_info("lens", TensorProto.INT32, [BATCH])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [SEQ, 2, BATCH, HID]),
         helper.make_tensor_value_info("y_h", TensorProto.FLOAT, [2, BATCH, HID])],
        [numpy_helper.from_array(v, k) for k, v in w.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp_path / "gru.onnx"
    onnx.save(model, path)
    return str(path)


@pytest.mark.parametrize("target", ["torch", "keras"])
def test_a_gru_no_layer_holds_runs_in_the_target(tmp_path, target):
    pytest.importorskip("torch" if target == "torch" else "keras")
    src = _onnx_gru(tmp_path)
    dest = tb.save(tb.load(src), tmp_path / f"gru_{target}", to=target)
    x = np.random.default_rng(3).standard_normal((SEQ, BATCH, IN)).astype(np.float32)
    report = tb.verify(src, dest, inputs={"x": x, "lens": np.array([SEQ, 1, 3], np.int32)})
    assert report.ok, report.summary()

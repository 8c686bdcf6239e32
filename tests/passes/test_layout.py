"""The layout planner: conversions across the NHWC/NCHW families keep only the transposes the plan reports.

Every converted model runs in its own runtime against the source (max|d|/max|ref| <= 1e-5);
`transposes_in` counts what is really in the file, `inspect --layout-plan` what the plan says.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import tensorbridge as tb
from tensorbridge import frameworks
from tensorbridge.cli.main import main
from tensorbridge.errors import UnsupportedError
from tensorbridge.ir.graph import Graph, clone
from tensorbridge.passes.dce import eliminate_dead_code
from tensorbridge.passes.infer_shapes import infer_shapes
from tensorbridge.passes.layout import LayoutOptions, plan_layout
from tests.models.layout_models import mixed_model, transposes_in

CASES = [("NHWC", "onnx", ".onnx"), ("NHWC", "torch", "_torch"), ("NCHW", "keras", "_keras"),
         ("NCHW", "tflite", ".tflite")]


def _plan(src, to: str, layout: LayoutOptions):
    graph = eliminate_dead_code(clone(tb.load(src)))
    return plan_layout(graph, frameworks.layout_target(frameworks.by_name(to)), layout)


@pytest.mark.parametrize("io,expected", [("keep", 4), ("target", 2)])
@pytest.mark.parametrize("source,to,suffix", CASES)
def test_mixed_model_both_ways_keeps_only_the_reported_transposes(source, to, suffix, io, expected, tmp_path):
    pytest.importorskip("tensorflow" if to in ("keras", "tflite") else "onnxruntime")
    if to == "torch":
        pytest.importorskip("torch")
    src = tb.save(mixed_model(source), tmp_path / "mixed.tbir")
    layout = LayoutOptions(io_layout=io)
    dst = tb.save(tb.load(src), tmp_path / f"mixed_{io}{suffix}", to=to, layout=layout)
    report = tb.verify(src, dst, rtol=1e-5, atol=0)
    assert report.ok, report.summary()
    plan = _plan(src, to, layout)
    # keep: image in, Reshape to tokens and back, feature map out; target: only the Reshape pair;
    # TFLite runs SOFTMAX over the last axis only: a softmax over H costs a pair there
    assert len(plan.transposes) == transposes_in(dst) == expected + 2 * (to == "tflite")
    assert {t.consumer.split()[0] for t in plan.transposes} >= {"Reshape", "Conv"}


def _conv1d_graph() -> Graph:
    rng = np.random.default_rng(1)
    g = Graph("audio")
    x = g.add_input("audio", "float32", ("batch", 20, 3))
    w = g.add_constant("w", rng.standard_normal((5, 3, 3)).astype(np.float32))
    y = g.op("Conv", x, w, name="conv1d", layout="NHWC", kernel_shape=[3], pads=[1, 1])
    g.outputs = [g.op("Relu", y, name="relu")]
    return infer_shapes(g)


def test_sequence_inputs_are_never_transposed_by_guess(tmp_path):
    src = tb.save(_conv1d_graph(), tmp_path / "audio.tbir")
    dst = tb.save(tb.load(src), tmp_path / "audio.onnx", layout=LayoutOptions(io_layout="target"))
    model = onnx.load(str(dst))
    dims = [d.dim_value or d.dim_param for d in model.graph.input[0].type.tensor_type.shape.dim]
    assert dims == ["batch", 20, 3]
    assert transposes_in(dst) == 2  # into the channels-first Conv and back for the output
    assert tb.verify(src, dst, rtol=1e-5, atol=0).ok


def test_pinned_input_keeps_its_layout(tmp_path):
    src = tb.save(mixed_model("NHWC"), tmp_path / "mixed.tbir")
    layout = LayoutOptions(io_layout="target", pins={"image": "NHWC"})
    dst = tb.save(tb.load(src), tmp_path / "pinned.onnx", layout=layout)
    dims = [d.dim_value or d.dim_param for d in onnx.load(str(dst)).graph.input[0].type.tensor_type.shape.dim]
    assert dims == ["batch", 6, 6, 3]
    assert transposes_in(dst) == len(_plan(src, "onnx", layout).transposes) == 3
    assert tb.verify(src, dst, rtol=1e-5, atol=0).ok


def _tf2onnx_style_model() -> onnx.ModelProto:
    """An NHWC-shaped ONNX graph as TF exporters write it: each Conv wrapped in two Transposes."""
    rng = np.random.default_rng(2)
    inits = [helper.make_tensor(f"w{i}", TensorProto.FLOAT, (4, c, 3, 3), rng.standard_normal(4 * c * 9))
             for i, c in ((1, 3), (2, 4))]
    nodes = [helper.make_node("Transpose", ["x"], ["t1"], perm=[0, 3, 1, 2]),
             helper.make_node("Conv", ["t1", "w1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Transpose", ["c1"], ["n1"], perm=[0, 2, 3, 1]),
             helper.make_node("Relu", ["n1"], ["r1"]),
             helper.make_node("Transpose", ["r1"], ["t2"], perm=[0, 3, 1, 2]),
             helper.make_node("Conv", ["t2", "w2"], ["c2"], pads=[1, 1, 1, 1]),
             helper.make_node("Transpose", ["c2"], ["y"], perm=[0, 2, 3, 1])]
    graph = helper.make_graph(nodes, "nhwc", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 8, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 8, 4])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.mark.parametrize("io,expected", [("keep", 2), ("target", 0)])
def test_transpose_wrapped_onnx_becomes_plain_nchw(io, expected, tmp_path):
    src = tmp_path / "nhwc.onnx"
    onnx.save(_tf2onnx_style_model(), src)
    dst = tb.save(tb.load(src), tmp_path / f"nchw_{io}.onnx", layout=LayoutOptions(io_layout=io))
    assert transposes_in(dst) == expected
    assert tb.verify(src, dst, rtol=1e-5, atol=0).ok


def test_onnx_to_channels_last_ir_runs_without_transposes(tmp_path):
    src = tmp_path / "nhwc.onnx"
    onnx.save(_tf2onnx_style_model(), src)
    dst = tb.save(tb.load(src), tmp_path / "nhwc.tbir", layout=LayoutOptions(layout="nhwc", io_layout="target"))
    graph = tb.load(dst)
    assert {n.attrs["layout"] for n in graph.nodes if n.op == "Conv"} == {"NHWC"}
    assert "Transpose" not in graph.op_histogram()
    assert tb.verify(src, dst, rtol=1e-5, atol=0).ok


def test_a_layout_the_target_lacks_lists_every_op(tmp_path):
    src = tb.save(mixed_model("NHWC"), tmp_path / "mixed.tbir")
    with pytest.raises(UnsupportedError) as info:
        tb.save(tb.load(src), tmp_path / "x.onnx", layout=LayoutOptions(layout="nhwc"))
    assert all(name in str(info.value) for name in ("conv_a", "conv_b", "conv_c", "pool"))
    assert not (tmp_path / "x.onnx").exists()


def test_per_layer_compares_values_held_in_the_other_layout(tmp_path):
    src = tb.save(mixed_model("NHWC"), tmp_path / "mixed.tbir")
    dst = tb.save(tb.load(src), tmp_path / "mixed.onnx", layout=LayoutOptions(io_layout="target"))
    report = tb.verify(src, dst, per_layer=True)
    assert report.ok and report.first_divergence["op"] is None
    assert report.first_divergence["values_compared"] >= 12  # permuted convolutions and adds included


def test_cli_layout_plan_and_convert(tmp_path, capsys):
    src = tb.save(mixed_model("NHWC"), tmp_path / "mixed.tbir")
    assert main(["-q", "inspect", str(src), "--layout-plan", "--to", "onnx", "--io-layout", "target"]) == 0
    text = capsys.readouterr().out
    assert "transposes left: 2" in text and "Reshape 'tokens'" in text
    out = tmp_path / "mixed.onnx"
    assert main(["-q", "convert", str(src), "-o", str(out), "--io-layout", "target", "--verify"]) == 0
    assert transposes_in(out) == 2
    assert main(["-q", "convert", str(src), "-o", str(tmp_path / "bad.onnx"), "--layout", "nhwc"]) == 2
    assert main(["-q", "convert", str(src), "-o", str(out), "--pin-layout", "image"]) == 2


def _after_conv(build):
    """NHWC Conv -> the op under test -> output; `build(g, y)` adds the op (y is [2, 5, 6, 4])."""
    rng = np.random.default_rng(3)
    g = Graph("op")
    x = g.add_input("x", "float32", (2, 5, 6, 3))
    w = g.add_constant("w", rng.standard_normal((4, 3, 1, 1)).astype(np.float32))
    y = g.op("Conv", x, w, name="conv", layout="NHWC", kernel_shape=[1, 1])
    out = build(g, y)
    g.outputs = out if isinstance(out, list) else [out]
    return infer_shapes(g), rng.standard_normal((2, 5, 6, 3)).astype(np.float32)


def _i64(g, name, values):
    return g.add_constant(name, np.array(values, np.int64))


OPS = {
    "slice": lambda g, y: g.op("Slice", y, _i64(g, "s", [1, 0]), _i64(g, "e", [4, 3]), _i64(g, "a", [1, 3])),
    "slice_default_axes": lambda g, y: g.op("Slice", y, _i64(g, "s", [0, 1, 2, 1]), _i64(g, "e", [2, 4, 5, 3])),
    "pad": lambda g, y: g.op("Pad", y, _i64(g, "p", [0, 1, 2, 0, 0, 0, 1, 1])),
    "split": lambda g, y: g.add_node("Split", [y, _i64(g, "sp", [1, 3])], {"axis": 3}, outputs=2).outputs,
    "squeeze_unsqueeze": lambda g, y: g.op("Squeeze", g.op("Unsqueeze", y, _i64(g, "u", [2, 5])), _i64(g, "q", [2])),
    "reduce_keepdims": lambda g, y: g.op("ReduceMax", y, _i64(g, "r", [3]), keepdims=1),
    "reduce_hw": lambda g, y: g.op("ReduceSum", y, _i64(g, "r", [1, 2]), keepdims=0),
    "argmax": lambda g, y: g.op("ArgMax", y, axis=2, keepdims=0),
    "topk": lambda g, y: g.add_node("TopK", [y, _i64(g, "k", [2])], {"axis": 1}, outputs=2).outputs,
    "gather_scalar": lambda g, y: g.op("Gather", y, _i64(g, "i", 1), axis=3),
    "gather_vector": lambda g, y: g.op("Gather", y, _i64(g, "i", [2, 0]), axis=2),
    "tile": lambda g, y: g.op("Tile", y, _i64(g, "t", [1, 2, 1, 3])),
    "cumsum": lambda g, y: g.op("CumSum", y, _i64(g, "c", 2)),
    "layernorm_channels": lambda g, y: g.op("LayerNormalization", y, g.add_constant("ln", np.ones(4, np.float32)),
                                            axis=-1),
    "log_softmax_w": lambda g, y: g.op("LogSoftmax", y, axis=2),
    "transpose_absorbed": lambda g, y: g.op("Transpose", y, perm=[0, 3, 2, 1]),
    "shape": lambda g, y: g.op("Shape", y),
    "flatten_head": lambda g, y: g.op("MatMul", g.op("Flatten", y, axis=1),
                                      g.add_constant("m", np.ones((120, 3), np.float32))),
}


@pytest.mark.parametrize("name", sorted(OPS))
def test_axis_taking_ops_follow_the_planned_layout(name):
    graph, x = _after_conv(OPS[name])
    expected = tb.run(graph, {"x": x})
    planned = clone(graph)
    plan = plan_layout(planned, frameworks.layout_target(frameworks.by_name("onnx")), LayoutOptions())
    got = tb.run(planned, {"x": x})
    for out in graph.outputs:
        np.testing.assert_allclose(got[out.name], expected[out.name], rtol=1e-5, atol=1e-5)
    assert len(plan.transposes) == sum(n.op == "Transpose" for n in planned.nodes)
    # the op runs on the channels-first tensor: the only transforms are into the Conv and at the outputs,
    # except for a LayerNormalization over channels (its normalised suffix would not stay a suffix)
    inside = [t for t in plan.transforms if t.consumer.split()[0] not in ("Conv", "graph")]
    assert len(inside) == (name == "layernorm_channels"), inside

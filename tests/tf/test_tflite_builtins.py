"""TFLite builtin operators as TensorFlow's converter writes them (or, where it writes none from a TensorFlow op,
as published models carry them), read by the TFLite frontend and run against LiteRT on inputs where TensorFlow's
meaning and the IR op's could differ (negative one-hot indices, empty segments, negative integer division)."""

from __future__ import annotations

import numpy as np
import pytest

import tensorbridge as tb
from tensorbridge.reference.interpreter import run
from tests.tf.seeded import Seeded, litert_outputs

tf = pytest.importorskip("tensorflow")
xla = pytest.importorskip("tensorflow.compiler.tf2xla.python.xla")

ARRAYS = Seeded(0)
_floats, _ints = ARRAYS.floats, ARRAYS.ints


W3 = _floats(2, 3, 3, 4, 5)  # [D, H, W, in, out]
W3T = _floats(2, 3, 3, 5, 4)  # [D, H, W, out, in]

#: name -> (function of the inputs, the inputs, the builtin operator the converter must write)
CASES = {
    "top_k": (lambda x: tf.math.top_k(x, k=3), [_floats(2, 7)], "TOPK_V2"),
    "strided_slice": (lambda x: x[..., 1:3] * x[:, tf.newaxis, ..., ::-2][..., 0, :2] + x[0, ..., 1:3][None],
                      [_floats(2, 3, 5)], "STRIDED_SLICE"),
    "not_equal": (lambda a, b: tf.not_equal(a, b), [_ints(0, 3, 3, 4), _ints(0, 3, 3, 4)], "NOT_EQUAL"),
    "one_hot": (lambda i: tf.one_hot(i, 5, on_value=2.0, off_value=-1.0, axis=1), [np.array([[0, 4, -1, 7, 2]],
                                                                                          np.int32)], "ONE_HOT"),
    "range": (lambda n: tf.range(1.0, tf.cast(n[0], tf.float32), 0.5), [np.array([6], np.int32)], "RANGE"),
    "reduce_any": (lambda x: tf.reduce_any(x > 0.5, axis=1), [_floats(3, 4)], "REDUCE_ANY"),
    "reduce_all": (lambda x: tf.reduce_all(x > -0.5, axis=0), [_floats(3, 4)], "REDUCE_ALL"),
    "reverse": (lambda x: tf.reverse(x, axis=[1, 2]), [_floats(2, 3, 4)], "REVERSE_V2"),
    "scatter_nd": (lambda u: tf.scatter_nd(tf.constant([[1], [3], [1]]), u, [5, 3]), [_floats(3, 3)], "SCATTER_ND"),
    "cumsum": (lambda x: tf.cumsum(x, axis=1, exclusive=True, reverse=True), [_floats(2, 5)], "CUMSUM"),
    "gather_nd": (lambda x: tf.gather_nd(x, tf.constant([[0, 2], [1, 1], [1, 3]])), [_floats(2, 4, 3)], "GATHER_ND"),
    "gather_batch_dims": (lambda x, i: tf.gather(x, i, axis=1, batch_dims=1),
                          [_floats(2, 5, 3), _ints(0, 5, 2, 4)], "GATHER"),
    "space_to_batch": (lambda x: tf.space_to_batch_nd(x, [2, 2], [[1, 1], [0, 2]]), [_floats(2, 4, 4, 3)],
                       "SPACE_TO_BATCH_ND"),
    "batch_to_space": (lambda x: tf.batch_to_space(x, [2, 2], [[1, 1], [0, 2]]), [_floats(8, 3, 3, 2)],
                       "BATCH_TO_SPACE_ND"),
    "atan2": (lambda y, x: tf.math.atan2(y, x), [_floats(4, 5), np.concatenate([_floats(3, 5), np.zeros((1, 5),
                                                                                  np.float32)])], "ATAN2"),
    "add_n": (lambda a, b, c: tf.add_n([a, b, c]), [_floats(2, 3), _floats(2, 3), _floats(2, 3)], "ADD_N"),
    "conv_3d": (lambda x: tf.nn.conv3d(x, W3, strides=[1, 1, 2, 1, 1], padding="SAME"), [_floats(1, 4, 5, 6, 4)],
                "CONV_3D"),
    "conv_3d_transpose": (lambda x: tf.nn.conv3d_transpose(x, W3T, [1, 6, 10, 8, 5], strides=[1, 2, 2, 2, 1],
                                                           padding="SAME"), [_floats(1, 3, 5, 4, 4)],
                          "CONV_3D_TRANSPOSE"),
    "where": (lambda x: tf.where(x > 0.3), [_floats(3, 4)], "WHERE"),
    "unique": (lambda x: tf.unique(x)[0] * tf.cast(tf.reduce_sum(tf.unique(x)[1]), tf.float32),
               [np.array([3, 1, 3, 2, 1, 5], np.float32)], "UNIQUE"),
    "matrix_diag": (lambda d: tf.linalg.diag(d), [_floats(2, 4)], "MATRIX_DIAG"),
    "matrix_set_diag": (lambda x, d: tf.linalg.set_diag(x, d), [_floats(2, 3, 5), _floats(2, 3)], "MATRIX_SET_DIAG"),
    "reverse_sequence": (lambda x, n: tf.reverse_sequence(x, n, seq_axis=1, batch_axis=0),
                         [_floats(3, 5, 2), np.array([2, 5, 1], np.int64)], "REVERSE_SEQUENCE"),
    "segment_sum": (lambda x: tf.math.segment_sum(x, tf.constant([0, 0, 1, 2])), [_floats(4, 3)], "SEGMENT_SUM"),
    "unsorted_segment_max": (lambda x: tf.math.unsorted_segment_max(x, tf.constant([2, 0, 2, 4]), 5),
                             [_floats(4, 3)], "UNSORTED_SEGMENT_MAX"),
    "unsorted_segment_prod": (lambda x: tf.math.unsorted_segment_prod(x, tf.constant([1, 0, 1, 1]), 3),
                              [_floats(4, 3)], "UNSORTED_SEGMENT_PROD"),
    "floor_div_int": (lambda a, b: tf.math.floordiv(a, b), [_ints(-9, 9, 3, 4), _ints(1, 4, 3, 4) * np.int32(-1)
                                                            ** _ints(0, 2, 3, 4)], "FLOOR_DIV"),
    "symmetric_pad": (lambda x: tf.pad(x, [[0, 0], [2, 1], [1, 3]], mode="SYMMETRIC"), [_floats(1, 3, 4)],
                      "MIRROR_PAD"),
    "right_shift": (lambda a: tf.bitwise.right_shift(a, tf.constant(2)), [_ints(-50, 50, 3, 4)], "RIGHT_SHIFT"),
    "bitwise_xor": (lambda a, b: tf.bitwise.bitwise_xor(a, b), [_ints(0, 99, 3, 4), _ints(0, 99, 3, 4)],
                    "BITWISE_XOR"),
    "bitcast": (lambda x: tf.bitcast(x, tf.int32), [_floats(3, 4)], "BITCAST"),
    "dynamic_update_slice": (lambda x, u, i: xla.dynamic_update_slice(x, u, tf.stack([0, i[0], i[1]])),
                             [_floats(2, 6, 4), _floats(2, 3, 2), np.array([5, -1], np.int32)],
                             "DYNAMIC_UPDATE_SLICE"),
    "nms_v4": (lambda b, s: tf.image.non_max_suppression(b, s, 15, iou_threshold=0.3, score_threshold=0.2),
               [ARRAYS.boxes(20), ARRAYS.distinct_scores(20)], "NON_MAX_SUPPRESSION_V4"),
    "nms_v5": (lambda b, s: tf.raw_ops.NonMaxSuppressionV5(boxes=b, scores=s, max_output_size=30, iou_threshold=0.3,
                                                          score_threshold=0.1, soft_nms_sigma=0.0,
                                                          pad_to_max_output_size=True),
               [ARRAYS.boxes(20), ARRAYS.distinct_scores(20)], "NON_MAX_SUPPRESSION_V5"),
}


def _tflite(fn, inputs, path) -> None:
    specs = [tf.TensorSpec(a.shape, tf.as_dtype(a.dtype), name=f"in{i}") for i, a in enumerate(inputs)]
    concrete = tf.function(fn, input_signature=specs).get_concrete_function()
    converter = tf.lite.TFLiteConverter.from_concrete_functions([concrete])
    path.write_bytes(converter.convert())


def _builtins(path) -> set[str]:
    import tflite

    model = tflite.Model.GetRootAsModel(path.read_bytes(), 0)
    names = {v: k for k, v in vars(tflite.BuiltinOperator).items() if not k.startswith("_")}
    return {names[max(model.OperatorCodes(i).BuiltinCode(), model.OperatorCodes(i).DeprecatedBuiltinCode())]
            for i in range(model.OperatorCodesLength())}


@pytest.mark.parametrize("name", sorted(CASES))
def test_builtin_reads_as_litert_computes(name, tmp_path):
    fn, inputs, builtin = CASES[name]
    path = tmp_path / f"{name}.tflite"
    _tflite(fn, inputs, path)
    assert builtin in _builtins(path), f"the converter wrote {sorted(_builtins(path))}"
    graph = tb.load(path)
    got = run(graph, dict(zip([v.name for v in graph.inputs], inputs)))
    expected = list(litert_outputs(path, inputs).values())
    outputs = [got[v.name] for v in graph.outputs]
    assert len(outputs) == len(expected)
    for g, e in zip(outputs, expected):
        assert g.dtype == e.dtype and g.shape == e.shape, (g.dtype, g.shape, e.dtype, e.shape)
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)


def _written(path, builtin, inputs, out_shape, options=None, constants=()) -> None:
    """A one-operator model of `builtin` (inputs given as arrays are graph inputs; `constants` are
    (index, array) pairs placed among them), as published models carry operators no TensorFlow op converts to."""
    from tensorbridge.formats.tflite_flatbuffer import FlatbufferWriter

    fb = FlatbufferWriter()
    fed = [fb.tensor(f"in{i}", a.shape, str(a.dtype)) for i, a in enumerate(inputs)]
    operands = list(fed)
    for at, array in constants:
        operands.insert(at, fb.tensor(f"const{at}", array.shape, str(array.dtype), array))
    y = fb.tensor("y", out_shape, "float32")
    fb.op(builtin, operands, [y], options)
    path.write_bytes(fb.finish(fed, [y]))


TABLE = _floats(6, 3)
WRITTEN = {
    "l2_pool_2d": ("L2_POOL_2D", [np.abs(_floats(1, 5, 5, 2))], (1, 3, 3, 2), ("Pool2DOptions", {
        "Padding": 0, "StrideW": 2, "StrideH": 2, "FilterWidth": 2, "FilterHeight": 3, "FusedActivationFunction": 0}),
        ()),
    "embedding_lookup": ("EMBEDDING_LOOKUP", [np.array([4, 0, 4, 2], np.int32)], (4, 3), None, [(1, TABLE)]),
    "relu_0_to_1": ("RELU_0_TO_1", [_floats(3, 4) * 2], (3, 4), None, ()),
    "strided_slice_ellipsis_new_axis": ("STRIDED_SLICE", [_floats(2, 3, 5)], (3, 1, 2), (  # x[0, ..., None, 1:4:2]
        "StridedSliceOptions", {"EllipsisMask": 2, "NewAxisMask": 4, "ShrinkAxisMask": 1}), [
            (1, np.array([0, 0, 0, 1], np.int32)), (2, np.array([1, 0, 0, 4], np.int32)),
            (3, np.array([1, 1, 1, 2], np.int32))]),
}


@pytest.mark.parametrize("name", sorted(WRITTEN))
def test_written_builtin_reads_as_litert_computes(name, tmp_path):
    builtin, inputs, out_shape, options, constants = WRITTEN[name]
    path = tmp_path / f"{name}.tflite"
    _written(path, builtin, inputs, out_shape, options, constants)
    graph = tb.load(path)
    got = run(graph, dict(zip([v.name for v in graph.inputs], inputs)))[graph.outputs[0].name]
    expected, = list(litert_outputs(path, inputs).values())
    assert got.shape == expected.shape and np.ptp(expected) > 0
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)

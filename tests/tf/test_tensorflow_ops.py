"""TensorFlow GraphDef ops (frozen graphs; SavedModels read the same way) read by the TensorFlow frontend and run
against TensorFlow, on inputs where TensorFlow's meaning and the IR op's could differ (negative one-hot
indices, empty segments, negative integer division, the edge rows of a symmetric pad)."""

from __future__ import annotations

import numpy as np
import pytest

import tensorbridge as tb
from tensorbridge.reference.interpreter import run
from tests.tf.seeded import Seeded

tf = pytest.importorskip("tensorflow")
xla = pytest.importorskip("tensorflow.compiler.tf2xla.python.xla")

ARRAYS = Seeded(1)
_floats, _ints = ARRAYS.floats, ARRAYS.ints


def _unit(*shape):
    return ARRAYS.rng.uniform(-0.9, 0.9, shape).astype(np.float32)


K2T = _floats(3, 3, 5, 4)  # [H, W, out, in]
K3 = _floats(2, 3, 3, 4, 5)

#: name -> (function of the inputs, the inputs, the TensorFlow op the graph must hold)
CASES = {
    "trigonometry": (lambda x: tf.tan(x) + tf.asin(x) + tf.acos(x) + tf.atan(x) + tf.sinh(x) + tf.cosh(x)
                     + tf.asinh(x) + tf.atanh(x) + tf.acosh(x + 2.0), [_unit(3, 4)], "Acosh"),
    "softsign_expm1_log1p_erfc": (lambda x: tf.nn.softsign(x) + tf.math.expm1(x) + tf.math.log1p(tf.abs(x))
                                  + tf.math.erfc(x), [_floats(3, 4)], "Erfc"),
    "is_nan_inf": (lambda x: tf.cast(tf.math.is_nan(tf.math.log(x)), tf.int32) * 2
                   + tf.cast(tf.math.is_inf(1.0 / x), tf.int32), [np.array([1.0, -1.0, 0.0, 2.0], np.float32)],
                   "IsInf"),
    "bitwise": (lambda a, b: tf.bitwise.bitwise_and(a, b) + tf.bitwise.bitwise_or(a, b) * 3
                + tf.bitwise.bitwise_xor(a, b) * 5 + tf.bitwise.invert(a)
                + tf.bitwise.left_shift(a, 2) - tf.bitwise.right_shift(b, 1), [_ints(-40, 40, 3, 4),
                                                                                 _ints(0, 40, 3, 4)], "Invert"),
    "bitcast": (lambda x: tf.bitcast(x, tf.int32), [_floats(3, 4)], "Bitcast"),
    "floordiv_mod": (lambda a, b: tf.math.floordiv(a, b) * 100 + tf.truncatemod(a, b) * 10
                     + tf.truncatediv(a, b), [_ints(-9, 9, 3, 4), np.where(_ints(0, 2, 3, 4) > 0, 1, -1).astype(
                         np.int32) * _ints(1, 4, 3, 4)], "FloorDiv"),
    "not_equal_atan2": (lambda y, x: tf.math.atan2(y, x) * tf.cast(tf.not_equal(y, x), tf.float32),
                        [_floats(4, 5), np.concatenate([_floats(3, 5), np.zeros((1, 5), np.float32)])], "Atan2"),
    "divide_no_nan": (lambda a, b: tf.math.divide_no_nan(a, b),
                      [_floats(3, 4), np.where(_ints(0, 2, 3, 4) > 0, 1.5, 0.0).astype(np.float32)], "DivNoNan"),
    "add_n_clip": (lambda a, b: tf.clip_by_value(tf.add_n([a, b, a]), -1.0, 0.5) + tf.ones_like(a),
                   [_floats(2, 3), _floats(2, 3)], "AddN"),
    "arg_min": (lambda x: tf.argmin(x, axis=1, output_type=tf.int32), [_floats(3, 5)], "ArgMin"),
    "top_k": (lambda x: tf.math.top_k(x, k=3), [_floats(2, 7)], "TopKV2"),
    "cumulative": (lambda x: tf.cumsum(x, axis=1, exclusive=True) + tf.math.cumprod(x, axis=0, reverse=True),
                   [_floats(3, 4)], "Cumprod"),
    "any_all": (lambda x: tf.cast(tf.reduce_any(x > 0.5, axis=1), tf.int32)
                + tf.cast(tf.reduce_all(x > -1.0, axis=1), tf.int32) * 2, [_floats(3, 4)], "All"),
    "einsum": (lambda a, b: tf.einsum("bij,bjk->bik", a, b), [_floats(2, 3, 4), _floats(2, 4, 5)], "Einsum"),
    "determinant": (lambda x: tf.linalg.det(x), [_floats(2, 3, 3)], "MatrixDeterminant"),
    "segments": (lambda x: tf.math.segment_max(x, tf.constant([0, 0, 2, 2])) + tf.math.unsorted_segment_min(
        x, tf.constant([2, 0, 2, 1]), 4)[:3] + tf.math.segment_sum(x, tf.constant([0, 1, 1, 2])),
                 [_floats(4, 3)], "SegmentMax"),
    "one_hot": (lambda i: tf.one_hot(i, 5, on_value=2.0, off_value=-1.0, axis=0),
                [np.array([0, 4, -1, 7, 2], np.int32)], "OneHot"),
    "gather_nd_scatter": (lambda x, u: tf.tensor_scatter_nd_add(x, tf.constant([[1], [3]]), u)
                          + tf.scatter_nd(tf.constant([[0], [1], [0]]), tf.gather_nd(x, [[2], [1], [3]]), [4, 3]),
                          [_floats(4, 3), _floats(2, 3)], "TensorScatterAdd"),
    "gather_batch_dims": (lambda x, i: tf.gather(x, i, axis=1, batch_dims=1), [_floats(2, 5, 3), _ints(0, 5, 2, 4)],
                          "GatherV2"),
    "broadcast_range_slice": (lambda x: tf.broadcast_to(x, [3, 4]) + tf.range(4.0)
                              + tf.slice(tf.reshape(tf.range(24.0), [6, 4]), [1, 0], [3, -1]), [_floats(1, 4)],
                              "BroadcastTo"),
    "reverse": (lambda x: tf.reverse(x, axis=[0, 2]), [_floats(2, 3, 4)], "ReverseV2"),
    "reverse_sequence": (lambda x, n: tf.reverse_sequence(x, n, seq_axis=1, batch_axis=0),
                         [_floats(3, 5, 2), np.array([2, 5, 1], np.int64)], "ReverseSequence"),
    "unstack_size_rank": (lambda x: tf.unstack(x, axis=1)[2] * tf.cast(tf.size(x) + tf.rank(x), tf.float32),
                          [_floats(2, 3, 4)], "Unpack"),
    "where_unique": (lambda x: tf.cast(tf.where(x > 0.3), tf.float32), [_floats(3, 4)], "Where"),
    "unique_with_counts": (lambda x: tf.unique_with_counts(x), [np.array([3, 1, 3, 2, 1, 5], np.int32)],
                           "UniqueWithCounts"),
    "space_batch": (lambda x: tf.batch_to_space(tf.space_to_batch_nd(x, [2, 2], [[1, 1], [0, 2]]) * 2.0, [2, 2],
                                                [[1, 0], [0, 1]]), [_floats(2, 4, 4, 3)], "SpaceToBatchND"),
    "depth_space": (lambda x: tf.nn.space_to_depth(tf.nn.depth_to_space(x, 2) + 1.0, 2), [_floats(1, 2, 3, 8)],
                    "DepthToSpace"),
    "band_diag": (lambda x, d: tf.linalg.band_part(x, 1, 0) + tf.linalg.band_part(x, 0, -1)
                  + tf.linalg.set_diag(x, d) + tf.linalg.diag(d)[:, :, :4], [_floats(2, 4, 4), _floats(2, 4)],
                  "MatrixBandPart"),
    "symmetric_pad": (lambda x: tf.pad(x, [[0, 0], [2, 1], [1, 3]], mode="SYMMETRIC"), [_floats(1, 3, 4)],
                      "MirrorPad"),
    "conv2d_transpose": (lambda x: tf.nn.conv2d_transpose(x, K2T, [1, 9, 11, 5], strides=2, padding="VALID")[
        :, :, :, :] + 0.0, [_floats(1, 4, 5, 4)], "Conv2DBackpropInput"),
    "conv2d_transpose_same": (lambda x: tf.nn.conv2d_transpose(x, K2T, [1, 8, 10, 5], strides=2, padding="SAME"),
                              [_floats(1, 4, 5, 4)], "Conv2DBackpropInput"),
    "conv3d_pool3d": (lambda x: tf.nn.max_pool3d(tf.nn.conv3d(x, K3, [1, 1, 1, 1, 1], "SAME"), 2, 2, "VALID")
                      + tf.nn.avg_pool3d(tf.nn.conv3d(x, K3, [1, 1, 1, 1, 1], "SAME"), 2, 2, "VALID"),
                      [_floats(1, 4, 6, 6, 4)], "Conv3D"),
    "resize": (lambda x: tf.compat.v1.image.resize_bilinear(x, [7, 9], half_pixel_centers=True)
               + tf.compat.v1.image.resize_nearest_neighbor(x, [7, 9], align_corners=True), [_floats(1, 4, 5, 3)],
               "ResizeBilinear"),
    "nms": (lambda b, s: tf.image.non_max_suppression(b, s, 15, iou_threshold=0.3, score_threshold=0.2),
            [ARRAYS.boxes(20), ARRAYS.distinct_scores(20)], "NonMaxSuppressionV3"),
    "nms_padded": (lambda b, s: tf.raw_ops.NonMaxSuppressionV4(boxes=b, scores=s, max_output_size=16,
                                                              iou_threshold=0.4, score_threshold=0.1,
                                                              pad_to_max_output_size=True),
                   [ARRAYS.boxes(20), ARRAYS.distinct_scores(20)], "NonMaxSuppressionV4"),
    "nms_with_scores": (lambda b, s: tf.raw_ops.NonMaxSuppressionV5(boxes=b, scores=s, max_output_size=9,
                                                                   iou_threshold=0.3, score_threshold=0.0,
                                                                   soft_nms_sigma=0.0),
                        [ARRAYS.boxes(20), ARRAYS.distinct_scores(20)], "NonMaxSuppressionV5"),
    "combined_nms": (lambda b, s: tf.image.combined_non_max_suppression(b, s, 3, 7, iou_threshold=0.4,
                                                                         score_threshold=0.75),
                     [ARRAYS.boxes(16).reshape(2, 8, 1, 4), ARRAYS.rng.permutation(48).astype(np.float32).reshape(
                         2, 8, 3) / 48], "CombinedNonMaxSuppression"),
    "combined_nms_per_class_boxes": (lambda b, s: tf.image.combined_non_max_suppression(
        b, s, 2, 9, iou_threshold=0.3, score_threshold=0.1, pad_per_class=True, clip_boxes=False),
        [ARRAYS.boxes(48).reshape(2, 8, 3, 4) * 1.4 - 0.2, ARRAYS.rng.permutation(48).astype(np.float32).reshape(
            2, 8, 3) / 48], "CombinedNonMaxSuppression"),
    "dynamic_update_slice": (lambda x, u, i: xla.dynamic_update_slice(x, u, tf.stack([0, i[0], i[1]])),
                             [_floats(2, 6, 4), _floats(2, 3, 2), np.array([2, 7], np.int32)],
                             "XlaDynamicUpdateSlice"),
    "lrn": (lambda x: tf.nn.local_response_normalization(x, depth_radius=2, bias=1.5, alpha=0.3, beta=0.6),
            [_floats(1, 3, 3, 7)], "LRN"),
    "strided_slice_masks": (lambda x: x[..., 1:3] * x[:, tf.newaxis, ..., ::-2][..., 0, :2]  # box decoding's
                            + x[0, ..., tf.newaxis][..., 0][None, :, 2:4]
                            + tf.reduce_sum(x[..., 1, tf.newaxis, :, :], axis=1)[..., 1:3], [_floats(2, 3, 5)],
                            "StridedSlice"),
}


def _frozen(fn, inputs, path):
    from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

    specs = [tf.TensorSpec(a.shape, tf.as_dtype(a.dtype), name=f"in{i}") for i, a in enumerate(inputs)]
    concrete = tf.function(fn, input_signature=specs).get_concrete_function()
    frozen = convert_variables_to_constants_v2(concrete)
    graph_def = frozen.graph.as_graph_def()
    path.write_bytes(graph_def.SerializeToString())
    return concrete, {node.op for node in graph_def.node}


@pytest.mark.parametrize("name", sorted(CASES))
def test_op_reads_as_tensorflow_computes(name, tmp_path):
    fn, inputs, op = CASES[name]
    path = tmp_path / f"{name}.pb"
    concrete, ops = _frozen(fn, inputs, path)
    assert op in ops, f"the graph holds {sorted(ops)}"
    graph = tb.load(path)
    got = run(graph, {f"in{i}": a for i, a in enumerate(inputs)})  # by name: a frozen graph orders them freely
    expected = tf.nest.flatten(concrete(*[tf.constant(a) for a in inputs]))
    outputs = [got[v.name] for v in graph.outputs]
    assert len(outputs) == len(expected)
    for g, e in zip(outputs, expected):
        e = e.numpy()
        assert g.dtype == e.dtype and g.shape == e.shape, (g.dtype, g.shape, e.dtype, e.shape)
        np.testing.assert_allclose(g, e, rtol=2e-5, atol=2e-5)

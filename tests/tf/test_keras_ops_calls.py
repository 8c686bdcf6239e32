"""keras.ops calls that no layer stands for (ops.square, ops.var, ops.swapaxes, ops.one_hot, ops.scatter_update
...) read by the Keras frontend and run against Keras, on inputs where the meanings could differ (negative and
out-of-range one-hot indices, negative integer division, an empty segment)."""

from __future__ import annotations

import numpy as np
import pytest

import tensorbridge as tb
from tensorbridge.reference.interpreter import run
from tests.tf.seeded import Seeded

keras = pytest.importorskip("keras")
from keras import ops  # noqa: E402

ARRAYS = Seeded(2)
_floats, _ints = ARRAYS.floats, ARRAYS.ints


#: name -> (function of the symbolic inputs, the inputs with their batch axis, the keras.ops classes it records)
CASES = {
    "arithmetic": (lambda x: ops.square(x) + ops.rsqrt(ops.abs(x) + 1) + ops.expm1(x) + ops.log1p(ops.abs(x))
                   + ops.log2(ops.abs(x) + 1) + ops.log10(ops.abs(x) + 1) + ops.trunc(x * 3)
                   + ops.erfc(x) + ops.arctan2(x, x * x - 0.5) + ops.stop_gradient(x) * 2, [_floats(2, 3, 4)],
                   {"Square", "Arctan2", "Trunc", "StopGradient"}),
    "integers": (lambda a, b: ops.floor_divide(a, b) * 100 + ops.fmod(a, b) * 10 + ops.left_shift(a, 2)
                 + ops.right_shift(a, 1) + ops.cast(ops.not_equal(a, b), "int32"),
                 [_ints(-9, 9, 2, 6), np.where(_ints(0, 2, 2, 6) > 0, 1, -1).astype(np.int32) * _ints(1, 4, 2, 6)],
                 {"FloorDivide", "LeftShift", "NotEqual"}),
    "divide_no_nan": (lambda a, b: ops.divide_no_nan(a, b),
                      [_floats(2, 6), np.where(_ints(0, 2, 2, 6) > 0, 1.5, 0.0).astype(np.float32)],
                      {"DivideNoNan"}),
    "activations": (lambda x: ops.selu(x) + ops.celu(x, alpha=0.7) + ops.softsign(x) + ops.hard_tanh(x * 2)
                    + ops.log_sigmoid(x) + ops.concatenate([ops.glu(x), ops.glu(x)], axis=-1),
                    [_floats(2, 3, 4)], {"Glu", "LogSigmoid"}),
    "statistics": (lambda x: ops.var(x, axis=-1, keepdims=True) + ops.std(x, axis=1, keepdims=True)
                   + ops.amax(x, axis=1, keepdims=True) - ops.amin(x, axis=-1, keepdims=True)
                   + ops.logsumexp(x, axis=-1, keepdims=True)
                   + ops.cast(ops.any(x > 1.0, axis=-1, keepdims=True), "float32")
                   + ops.cast(ops.all(x > -1.0, axis=-1, keepdims=True), "float32"), [_floats(2, 3, 4)],
                   {"Var", "Std", "Logsumexp", "Any"}),
    "axes": (lambda x: ops.reshape(ops.swapaxes(x, 1, 2), (-1, 12)) + ops.reshape(ops.moveaxis(x, 1, -1), (-1, 12))
             + ops.reshape(ops.roll(x, 2, axis=2), (-1, 12)) + ops.repeat(ops.reshape(x, (-1, 12))[:, :6], 2, axis=1)
             + ops.zeros_like(ops.reshape(x, (-1, 12))) + ops.full_like(ops.reshape(x, (-1, 12)), 0.5)
             + ops.unstack(ops.reshape(x, (-1, 2, 12)), axis=1)[1], [_floats(2, 3, 4)],
             {"Swapaxes", "Moveaxis", "Roll", "Repeat", "Unstack"}),
    "diagonal_slice": (lambda x: ops.diagonal(x, offset=1, axis1=1, axis2=2) + ops.trace(x, axis1=1, axis2=2)[:, None]
                       + ops.slice(x, (0, 1, 1), (2, 3, 3))[:, 0, :], [_floats(2, 4, 4)], {"Diagonal", "Slice"}),
    "one_hot": (lambda i: ops.one_hot(i, 5) * 2.0, [np.array([[0, 4, -1, 7, 2]], np.int32)], {"OneHot"}),
    "take_along_axis": (lambda x, i: ops.take_along_axis(x, i, axis=1), [_floats(2, 5, 3), _ints(0, 5, 2, 4, 3)],
                        {"TakeAlongAxis"}),
    # CLIP's pooled token: indices of size 1 along the other axes, spread over them
    "take_along_axis_broadcast": (lambda x, i: ops.take_along_axis(x, i[:, :, None], axis=1),
                                  [_floats(2, 5, 3), _ints(0, 5, 2, 1)], {"TakeAlongAxis"}),
    "scatter": (lambda x: ops.scatter_update(x, np.array([[0, 1], [1, 3]]), ops.ones((2,)))
                + ops.scatter(np.array([[1, 0], [0, 2], [1, 0]]), x[0, :3], (2, 4)), [_floats(2, 4)],
                {"ScatterUpdate", "Scatter"}),
    "segments": (lambda x: ops.segment_sum(x, np.array([0, 0, 2]), num_segments=4)
                 + ops.segment_max(x, np.array([1, 0, 1]), num_segments=4), [_floats(3, 5)],
                 {"SegmentSum", "SegmentMax"}),
    "determinant_view": (lambda x: ops.det(x)[:, None] + ops.cast(ops.view(x, "int32")[:, 0, :1] > 0, "float32"),
                         [_floats(2, 3, 3)], {"Det", "View"}),
}


def _conv_layer(x):
    """A custom layer's call as projects write it: its own kernels through ops.conv / ops.depthwise_conv, then
    pooling and normalization by function."""
    rng = np.random.default_rng(5)
    kernel = keras.Variable(rng.standard_normal((3, 3, 3, 4)).astype(np.float32))
    depthwise = keras.Variable(rng.standard_normal((3, 3, 4, 2)).astype(np.float32))
    y = ops.conv(x, kernel, strides=1, padding="same")
    y = ops.depthwise_conv(y, depthwise, padding="valid")
    y = ops.max_pool(y, 2, padding="valid") + ops.average_pool(y, 2, strides=2)
    mean, var = ops.moments(y, axes=[1, 2], keepdims=True)
    return ops.normalize((y - mean) * ops.rsqrt(var + 1e-3), axis=-1) + ops.depth_to_space(
        ops.space_to_depth(y, 2), 2)


NN_CASES = {
    "conv_pool_normalize": (_conv_layer, [_floats(2, 10, 10, 3)], {"Conv", "DepthwiseConv",
                                                                    "MaxPool", "Moments", "Normalize"}),
    "image_resize": (lambda x: ops.image.resize(x, (7, 9)) + ops.image.resize(x, (7, 9), interpolation="nearest"),
                     [_floats(2, 4, 6, 3)], {"Resize"}),
    "adaptive_pool": (lambda x: ops.adaptive_average_pool(x, (2, 3)) + ops.adaptive_max_pool(x, (2, 3)),
                      [_floats(2, 4, 6, 3)], {"AdaptiveAveragePool"}),
}
CASES.update(NN_CASES)


def _traced_layers(x):
    """Built-in layers whose calls trace to keras.ops (Conv3DTranspose: ops.conv_transpose; UnitNormalization:
    ops.normalize)."""
    from keras import layers

    return layers.UnitNormalization()(layers.Conv3DTranspose(3, 2, strides=2, padding="same")(x))


CASES["traced_layers"] = (_traced_layers, [_floats(2, 2, 3, 4, 2)], {"Conv3DTranspose", "UnitNormalization"})


def _preprocessed(x):
    from keras import layers

    y = layers.RandomFlip()(x)
    y = layers.RandomRotation(0.2)(y)
    y = layers.RandomZoom(0.1)(y)
    return layers.CenterCrop(4, 5)(layers.Resizing(7, 9)(y)) + layers.Resizing(4, 5, interpolation="nearest")(y)


CASES["where_of_numbers"] = (  # GPT-OSS's router: a condition of int32 numbers, true where not zero
    lambda x, k: ops.where(k, x, -x) + ops.where(ops.cast(x > 0, "float32"), 1.0, 0.0),
    [_floats(2, 5), _ints(-1, 2, 2, 5)], {"Where"})
CASES["einsum_of_a_computed_tensor"] = (  # ViTDet's relative positions: a backend tensor the layer computed
    lambda x: ops.einsum("bij,jk->bik", x, ops.convert_to_tensor(_floats(4, 3))), [_floats(2, 5, 4)], {"Einsum"})
CASES["products_orders"] = (
    lambda x: ops.reshape(ops.tensordot(x, np.ones((4, 2), np.float32), axes=1), (-1, 6))
    + ops.reshape(ops.dot(x, np.ones((4, 2), np.float32)), (-1, 6))
    + ops.reshape(ops.outer(x[0, 0, :2], x[0, 1, :3]), (1, 6)) + ops.sort(x, axis=1)[:, :, :2].reshape((-1, 6))
    + ops.cast(ops.argsort(x, axis=-1)[:, :, :2].reshape((-1, 6)), "float32")
    + ops.hstack([x[:, 0, :3], x[:, 1, :3]]) + ops.vstack([x[0, 0, :3], x[0, 1, :3]]).reshape((1, 6))
    + ops.cast(ops.arange(6), "float32"), [_floats(2, 3, 4)], {"Tensordot", "Dot", "Outer", "Sort", "Argsort",
                                                               "Hstack", "Vstack"})
def _additive_attention(x):
    from keras import layers

    keras.utils.set_random_seed(1)
    return layers.AdditiveAttention()([x, layers.Dense(4)(x), layers.Dense(4)(x)]) + layers.AdditiveAttention(
        use_scale=False)([x, x])


CASES["additive_attention"] = (_additive_attention, [_floats(2, 5, 4)], {"AdditiveAttention"})
CASES["preprocessing_layers"] = (_preprocessed, [_floats(2, 6, 8, 3)], {"RandomFlip", "Resizing", "CenterCrop"})


@pytest.mark.parametrize("name", sorted(CASES))
def test_keras_ops_call_reads_as_keras_computes(name):
    fn, arrays, classes = CASES[name]
    batchless = name in ("scatter", "segments")  # the operand's leading axis is data, not a batch
    inputs = [keras.Input(batch_shape=a.shape, dtype=str(a.dtype)) if batchless else
              keras.Input(a.shape[1:], dtype=str(a.dtype)) for a in arrays]
    model = keras.Model(inputs, fn(*inputs))
    recorded = {type(layer).__name__ for layer in model.operations}
    assert classes <= recorded, sorted(recorded)
    graph = tb.load(model)
    got = run(graph, dict(zip([v.name for v in graph.inputs], arrays)))[graph.outputs[0].name]
    expected = np.asarray(model(arrays, training=False))  # inference: augmentation layers pass images through
    assert got.dtype == expected.dtype and got.shape == expected.shape, (got.dtype, got.shape, expected.shape)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_a_condition_of_numbers_is_read_as_booleans():
    """ops.where takes a condition of numbers (true where not zero); the IR's Where, as ONNX's, takes booleans."""
    fn, arrays, _ = CASES["where_of_numbers"]
    inputs = [keras.Input(a.shape[1:], dtype=str(a.dtype)) for a in arrays]
    graph = tb.load(keras.Model(inputs, fn(*inputs)))
    conditions = [n.inputs[0].dtype for n in graph.nodes if n.op == "Where"]
    assert conditions and all(d == np.dtype(bool) for d in conditions), conditions

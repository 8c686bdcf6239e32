"""The CNTK test models, written as CNTK's own tutorials write them (the layers library, functional style).

Run only in the CNTK venv (Python 3.6, `make runtimes`) by tests/cntk/record.py: keep this file Python 3.6.
Each builder returns (model function, {input name: a batch of inputs}).
"""

import cntk as C
import numpy as np


def _uniform(seed, shape, low=-1.0, high=1.0):
    return np.random.RandomState(seed).uniform(low, high, shape).astype(np.float32)


def cnn():
    """A CIFAR ResNet in the style of CNTK 201B: convolutions with batch normalisation, a projection shortcut
    with stride 2, max, average and global average pooling, dropout, a dense classifier (logits)."""
    x = C.input_variable((3, 32, 32), name="image")

    def conv_bn(h, filters, size=(3, 3), strides=1, relu=True):
        h = C.layers.Convolution2D(size, filters, strides=strides, pad=True, bias=False,
                                   init=C.he_normal())(h)
        h = C.layers.BatchNormalization(map_rank=1)(h)
        return C.relu(h) if relu else h

    h = conv_bn(x, 16)
    h = C.relu(conv_bn(conv_bn(h, 16), 16, relu=False) + h)
    shortcut = conv_bn(h, 32, (1, 1), strides=2, relu=False)
    h = C.relu(conv_bn(conv_bn(h, 32, strides=2), 32, relu=False) + shortcut)
    h = C.layers.MaxPooling((3, 3), strides=2, pad=True)(h)
    h = C.layers.AveragePooling((2, 2), strides=1)(h)
    h = C.layers.Convolution2D((3, 3), 24, activation=C.leaky_relu, pad=False)(h)
    h = C.layers.GlobalAveragePooling()(h)
    h = C.layers.Dropout(0.25)(h)
    z = C.layers.Dense(10, name="logits")(h)
    return z, {"image": _uniform(1, (2, 3, 32, 32), 0.0, 1.0)}


def lstm():
    """A sequence regressor in the style of CNTK 106 (time series with an LSTM): a recurrence of LSTM cells, the
    last step, dropout, a dense head."""
    x = C.sequence.input_variable(4, name="series")
    h = C.layers.Recurrence(C.layers.LSTM(16))(x)
    h = C.sequence.last(h)
    h = C.layers.Dropout(0.2)(h)
    z = C.layers.Dense(3)(h)
    return z, {"series": _uniform(2, (3, 7, 4))}


def tagger():
    """A slot tagger in the style of CNTK 202 (language understanding): an embedding, a forward LSTM and a
    backward GRU recurrence spliced, a dense layer per step."""
    x = C.sequence.input_variable(20, name="words")
    e = C.layers.Embedding(12)(x)
    forward = C.layers.Recurrence(C.layers.LSTM(8))(e)
    backward = C.layers.Recurrence(C.layers.GRU(6), go_backwards=True)(e)
    z = C.layers.Dense(5)(C.splice(forward, backward))
    return z, {"words": _uniform(3, (2, 6, 20), 0.0, 1.0)}


def layers():
    """A block of the remaining primitives: arithmetic with broadcasting, activations, reshape, transpose, splice,
    slice, reductions, softmax, clip, a 1-D convolution over a vector's static axis."""
    x = C.input_variable((4, 6), name="x")
    y = C.input_variable((6,), name="y")
    h = C.element_times(x, y) + C.exp(C.negate(C.abs(x))) - C.sqrt(C.square(y) + 1)
    h = C.tanh(h) * C.sigmoid(x) + C.elu(x) + C.softplus(y) + C.selu(x)
    h = C.element_divide(h, C.reduce_sum(C.abs(h), axis=1) + 1)
    h = C.splice(h, C.reduce_mean(h, axis=0), axis=0)
    h = C.softmax(h, axis=1) + C.log_softmax(h, axis=0) + C.reduce_max(h, axis=1) - C.reduce_min(h, axis=0)
    h = C.transpose(C.reshape(h, (6, 5)), (1, 0))
    h = C.clip(C.slice(h, 0, 1, 4), -2.0, 2.0) * C.reduce_log_sum_exp(h, axis=0)
    h = C.splice(C.floor(h), C.ceil(h) * 0.5, C.round(h), C.reciprocal(C.abs(h) + 1), axis=1)
    h = C.layers.Dense(7, activation=C.tanh)(C.reshape(h, (-1,)))
    h = C.element_max(h, C.hardmax(h)) + C.element_min(h, 0.25) + C.square(h) + C.log(C.abs(h) + 0.5)
    return h, {"x": _uniform(4, (2, 4, 6)), "y": _uniform(5, (2, 6))}


ARCHITECTURES = {"cnn": cnn, "lstm": lstm, "tagger": tagger, "layers": layers}


# -- one op (or one layer) each: the CNTK per-op corpus ----------------------------------------------------------
def _image(shape=(4, 9, 9)):
    return C.input_variable(shape, name="x"), _uniform(10, (2,) + shape)


def _tensor(shape=(2, 3, 4)):
    return C.input_variable(shape, name="x"), _uniform(11, (2,) + shape)


def _sequence(features=5, steps=6):
    return C.sequence.input_variable(features, name="s"), _uniform(12, (2, steps, features))


def _probe(build, make_input):
    def probe():
        x, data = make_input()
        return build(x), {"x" if not x.dynamic_axes or len(x.dynamic_axes) == 1 else "s": data}
    return probe


def _conv(**options):
    return lambda x: C.layers.Convolution2D(init=C.glorot_uniform(seed=3), **options)(x)


def _custom_recurrence(s):
    """A step function of the user's own: h' = tanh(x W + h / 2)."""
    w = C.parameter((5, 4), init=C.glorot_uniform(seed=4))
    return C.layers.Recurrence(lambda h, x: C.tanh(C.times(x, w) + 0.5 * h))(s)


PROBES = {
    "conv_stride2_pad": _probe(_conv(filter_shape=(3, 3), num_filters=6, strides=2, pad=True), _image),
    "conv_even_kernel": _probe(_conv(filter_shape=(4, 2), num_filters=3, strides=(2, 1), pad=True), _image),
    "conv_valid": _probe(_conv(filter_shape=(2, 3), num_filters=5, pad=False, strides=(1, 2)), _image),
    "conv_grouped": _probe(lambda x: C.convolution(C.parameter((6, 2, 3, 3), init=C.glorot_uniform(seed=5)), x,
                                                   auto_padding=[False, True, True], groups=2), _image),
    "conv1d": _probe(lambda x: C.layers.Convolution1D(3, 4, pad=True, init=C.glorot_uniform(seed=6))(x),
                     lambda: (C.input_variable((3, 10), name="x"), _uniform(13, (2, 3, 10)))),
    "conv3d": _probe(lambda x: C.layers.Convolution3D((2, 3, 3), 2, pad=True, init=C.glorot_uniform(seed=7))(x),
                     lambda: (C.input_variable((2, 4, 5, 5), name="x"), _uniform(14, (2, 2, 4, 5, 5)))),
    "conv_transpose": _probe(lambda x: C.layers.ConvolutionTranspose2D((3, 3), 2, strides=2, pad=True,
                                                                       output_shape=(18, 18))(x), _image),
    "max_pool_valid": _probe(lambda x: C.layers.MaxPooling((2, 2), strides=2)(x), _image),
    "max_pool_same": _probe(lambda x: C.layers.MaxPooling((3, 3), strides=2, pad=True)(x), _image),
    "avg_pool_same": _probe(lambda x: C.layers.AveragePooling((2, 2), strides=2, pad=True)(x), _image),
    "avg_pool_include_pad": _probe(lambda x: C.pooling(x, C.AVG_POOLING, (3, 3), (2, 2), auto_padding=[True],
                                                       include_pad=True), _image),
    "max_pool_ceil": _probe(lambda x: C.pooling(x, C.MAX_POOLING, (2, 2), (2, 2), ceil_out_dim=True), _image),
    "global_max_pool": _probe(lambda x: C.layers.GlobalMaxPooling()(x), _image),
    "batch_norm_spatial": _probe(lambda x: C.layers.BatchNormalization(map_rank=1)(x), _image),
    "batch_norm_elementwise": _probe(lambda x: C.layers.BatchNormalization()(x), _tensor),
    "layer_norm": _probe(lambda x: C.layers.LayerNormalization()(x), _tensor),
    "dense_rank2": _probe(lambda x: C.layers.Dense((3, 2), init=C.glorot_uniform(seed=8))(x), _tensor),
    "dense_map_rank": _probe(lambda x: C.layers.Dense(5, map_rank=1, init=C.glorot_uniform(seed=9))(x), _tensor),
    "times_param_left": _probe(lambda x: C.times(C.parameter((5, 2), init=C.glorot_uniform(seed=10)), x),
                               lambda: (C.input_variable((2, 4), name="x"), _uniform(15, (2, 2, 4)))),
    "transpose_perm": _probe(lambda x: C.transpose(x, (1, 2, 0)), _tensor),
    "transpose_perm2": _probe(lambda x: C.transpose(x, (2, 0, 1)), _tensor),
    "swapaxes": _probe(lambda x: C.swapaxes(x, 0, 2), _tensor),
    "reshape": _probe(lambda x: C.reshape(x, (4, 6)), _tensor),
    "reshape_axes": _probe(lambda x: C.reshape(x, (12,), begin_axis=1), _tensor),
    "reshape_infer": _probe(lambda x: C.reshape(x, (-1, 2)), _tensor),
    "slice_negative": _probe(lambda x: C.slice(x, 2, -3, 0), _tensor),
    "slice_stride": _probe(lambda x: C.slice(x, 2, 0, 4, 2), _tensor),
    "slice_axes": _probe(lambda x: C.slice(x, [0, 1], [1, 0], [2, 2]), _tensor),
    "splice": _probe(lambda x: C.splice(x, C.exp(x), axis=1), _tensor),
    "splice_new_axis": _probe(lambda x: C.splice(x, 2 * x, axis=C.Axis.new_leading_axis()), _tensor),
    "reduce_axes": _probe(lambda x: C.reduce_sum(x, axis=(0, 2)), _tensor),
    "reduce_all": _probe(lambda x: C.reduce_mean(x, axis=C.Axis.all_static_axes()), _tensor),
    "reduce_drop": _probe(lambda x: C.reduce_max(x, axis=1, keepdims=False), _tensor),
    "reduce_prod_lse": _probe(lambda x: C.reduce_prod(x, 0) + C.reduce_log_sum_exp(x, 2), _tensor),
    "argmax": _probe(lambda x: C.argmax(x, axis=1) + C.argmin(x, axis=2), _tensor),
    "softmax_all": _probe(lambda x: C.softmax(x) + C.hardmax(x), _tensor),
    "softmax_axis": _probe(lambda x: C.softmax(x, axis=1) + C.log_softmax(x, axis=0), _tensor),
    "broadcast_param": _probe(lambda x: x * C.parameter((4,), init=C.glorot_uniform(seed=11))
                              + C.parameter((3, 1), init=C.glorot_uniform(seed=12)), _tensor),
    "compare_select": _probe(lambda x: C.element_select(C.greater(x, 0.2), x, -x) + C.less_equal(x, 0)
                             + C.not_equal(x, 0.5), _tensor),
    "clip_tensor": _probe(lambda x: C.clip(x, C.constant(np.full((4,), -0.3, np.float32)), 0.4), _tensor),
    "activations": _probe(lambda x: C.elu(x) + C.selu(x) + C.leaky_relu(x) + C.softplus(x)
                          + C.param_relu(C.constant(np.full((2, 3, 4), 0.2, np.float32)), x), _tensor),
    "arithmetic": _probe(lambda x: C.log_add_exp(x, -x) + C.pow(C.abs(x) + 1, x) + C.sqrt(C.abs(x))
                         + C.element_max(x, 0.1) - C.element_min(x, -0.1) + C.reciprocal(C.abs(x) + 1)
                         + C.sin(x) + C.cos(x) + C.floor(x) + C.ceil(x) + C.round(x) + C.atan(x), _tensor),
    "trigonometry": _probe(lambda x: C.tan(x) + C.asin(x * 0.9) + C.acos(x * 0.9) + C.sinh(x) + C.cosh(x)
                           + C.asinh(x) + C.atanh(x * 0.9) + C.greater_equal(x, 0.1), _tensor),
    "pad_constant": _probe(lambda x: C.pad(x, [(0, 0), (1, 2), (2, 1)], mode=C.CONSTANT_PAD,
                                           constant_value=0.5), _tensor),
    "pad_reflect": _probe(lambda x: C.pad(x, [(1, 0), (1, 1), (0, 2)], mode=C.REFLECT_PAD), _tensor),
    "dropout_alias": _probe(lambda x: C.dropout(C.alias(x), 0.5) + C.stop_gradient(x), _tensor),
    "squeeze": _probe(lambda x: C.squeeze(x), lambda: (C.input_variable((1, 3, 1), name="x"),
                                                       _uniform(16, (2, 1, 3, 1)))),
    "past_value": _probe(lambda s: C.sequence.past_value(s, time_step=2) + C.sequence.future_value(s), _sequence),
    "sequence_first": _probe(lambda s: C.sequence.first(s), _sequence),
    "sequence_slice": _probe(lambda s: C.sequence.slice(s, 1, -1), _sequence),
    "sequence_reduce": _probe(lambda s: C.sequence.reduce_sum(s) + C.sequence.reduce_max(s), _sequence),
    "recurrence_rnn": _probe(lambda s: C.layers.Recurrence(C.layers.RNNStep(4, init=C.glorot_uniform(seed=13)))(s),
                             _sequence),
    "recurrence_gru": _probe(lambda s: C.layers.Recurrence(C.layers.GRU(4, init=C.glorot_uniform(seed=14)))(s),
                             _sequence),
    "recurrence_custom": _probe(_custom_recurrence, _sequence),
    "fold_lstm": _probe(lambda s: C.layers.Fold(C.layers.LSTM(3, init=C.glorot_uniform(seed=15)))(s), _sequence),
    "bidirectional": _probe(lambda s: C.splice(
        C.layers.Recurrence(C.layers.LSTM(3, use_peepholes=True, init=C.glorot_uniform(seed=16)))(s),
        C.layers.Recurrence(C.layers.LSTM(2, init=C.glorot_uniform(seed=17)), go_backwards=True)(s)), _sequence),
}

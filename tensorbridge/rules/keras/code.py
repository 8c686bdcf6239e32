"""IR ops -> Keras 3 model code, as the transpiler writes it (see rules/code.py): `keras.layers` constructors
for layer ops, `keras.ops` calls for the rest, and each layer's weights from the IR op's weight roles.

Layout: image layers keep the source's layout explicitly (`data_format="channels_first"` on each layer
that has one, `axis=1` on channel norms), so every axis in the translated code means what it meant in the
source; the translation never moves data between layouts.
"""

from __future__ import annotations

import ast
import re
from functools import partial

from tensorbridge.codegen import pyast as P
from tensorbridge.rules import numpy_constants
from tensorbridge.rules.code import (
    NOT_LITERAL,
    CodeTable,
    OpCall,
    Refused,
    Renamed,
    TargetSkeleton,
    WeightPort,
    cast_first,
    definition,
    keywords,
    known,
    layer_lambda,
    norm_offset,
    pairs,
    softmax_axis,
    value_of,
)
from tensorbridge.rules.keras.base import R
from tensorbridge.rules.keras.code_attention import HELPERS as ATTENTION_HELPERS
from tensorbridge.rules.keras.code_attention import write_attention
from tensorbridge.rules.keras.code_recurrent import HELPERS as RECURRENT_HELPERS
from tensorbridge.rules.keras.code_recurrent import recurrent_weights, write_recurrent
from tensorbridge.rules.numpy_code import (
    CEIL_MODE_PADDING_HELPER,
    KERAS_CONV,
    MERGE_HELPER,
    POOL_INDEX_HELPERS,
    SPATIAL_PADDING,
    SPATIAL_PADDING_HELPER,
    TRANSFORMER_OPS,
    activation_writers,
    attention_helper,
    attention_weights,
    bilinear_helper,
    bilinear_weights,
    ceil_mode_padding,
    conv_weights,
    dense_weights,
    dtype_keyword,
    function_helpers,
    integer_scale,
    mode_padded,
    nnx_einsum_weights,
    numpy_writers,
    pool_index_helpers,
    prelu_weights,
    shape_argument,
    transformer_layer_weights,
    write_bilinear,
    write_channel_prelu,
    write_conv_function,
    write_nnx_einsum,
    write_pool_index_function,
    write_pool_index_layer,
    write_top_k,
    write_transformer,
)
from tensorbridge.rules.numpy_constants import as_float32
from tensorbridge.rules.recurrent import cell_weights

C = R.code = CodeTable("keras")


def _channels(attrs) -> dict:
    return {"data_format": "channels_first"} if attrs.get("layout") == "channels_first" else {}


def _sequential(*layers_) -> ast.expr:
    return P.call("keras.Sequential", list(layers_)) if len(layers_) > 1 else layers_[0]


def _same_padding(attrs, rank):
    """Keras' "same"/"valid" where provably equal to the source's symmetric pads, else None."""
    pads, k = known(attrs["pads"]), pairs(attrs["kernel_shape"], rank)
    if pads in ("same", "valid"):
        return pads
    p, s, d = pairs(attrs["pads"], rank), pairs(attrs.get("strides", 1), rank), pairs(attrs.get("dilations", 1), rank)
    if p is NOT_LITERAL:
        return None
    if all(v == 0 for v in p):
        return "valid"
    if NOT_LITERAL not in (k, s, d) and all(st == 1 for st in s) and \
            all(di * (kk - 1) == 2 * pp for kk, pp, di in zip(k, p, d)):
        return "same"
    return None


# -- layers ------------------------------------------------------------------------------------------
def _write_conv(call):
    a, rank = call.attrs, call.attrs["rank"]
    padding = _same_padding(a, rank)
    kwargs = keywords(strides=(a["strides"], 1), dilation_rate=(a["dilations"], 1), groups=(a["group"], 1),
                 use_bias=(value_of(a["bias"]), True))
    conv = P.call(_conv_class(f"Conv{rank}D", a, kwargs), a["filters"], a["kernel_shape"], **kwargs,
                  **({"padding": padding} if padding and padding != "valid" else {}), **_channels(a))
    if padding is not None:
        return conv
    return _sequential(P.call(f"layers.ZeroPadding{rank}D", a["pads"], **_channels(a)), conv)


def _write_conv_transpose(call):
    a, rank = call.attrs, call.attrs["rank"]
    if known(a["group"]) != 1:
        raise Refused("grouped transposed convolution (Keras' ConvTranspose has no groups)")
    if known(a["pads"]) is NOT_LITERAL or isinstance(known(a["pads"]), str):
        raise Refused("transposed convolution padding given by a variable")
    out_pad = known(a["output_padding"])
    kwargs = keywords(strides=(a["strides"], 1), dilation_rate=(a["dilations"], 1),
                      use_bias=(value_of(a["bias"]), True))
    if out_pad not in (0, (0,) * rank, [0] * rank):
        kwargs["output_padding"] = a["output_padding"]
    conv = P.call(_conv_class(f"Conv{rank}DTranspose", a, kwargs), a["filters"], a["kernel_shape"], **kwargs,
                  **_channels(a))
    if all(p == 0 for p in pairs(a["pads"], rank)):
        return conv
    if rank == 1 and _channels(a):  # Keras' Cropping1D is channels-last only
        return _sequential(conv, P.call("ChannelsFirstCropping1D", a["pads"]))
    return _sequential(conv, P.call(f"layers.Cropping{rank}D", a["pads"], **_channels(a)))


def _conv_class(name: str, attrs, kwargs) -> str:
    """`layers.<name>`, or the module's channels-first subclass of it when the layer adds a bias to
    channels-first data: Keras' `ops.add` (TensorFlow backend, Keras 3.15) adds a (1, C, 1, 1) bias as a
    channels-last one when the output's width equals C, so those layers add it by broadcasting instead."""
    if attrs.get("layout") == "channels_first" and "use_bias" not in kwargs:
        return f"ChannelsFirst{name}"
    return f"layers.{name}"


_CONVOLVE = {"Conv": "self.convolution_op(inputs, self.kernel)",
             "Transpose": "ops.conv_transpose(inputs, self.kernel, strides=list(self.strides), padding=self.padding, "
                          "output_padding=self.output_padding, dilation_rate=self.dilation_rate, "
                          "data_format=self.data_format)"}


def _channels_first_class(name: str) -> str:
    base = name.removeprefix("ChannelsFirst")
    convolve = _CONVOLVE["Transpose" if base.endswith("Transpose") else "Conv"]
    return (
        f"class {name}(layers.{base}):\n"
        f"    \"\"\"{base} adding its bias by broadcasting (docs/transpile.md: Keras' channels-first bias).\"\"\"\n\n"
        f"    def call(self, inputs):\n"
        f"        outputs = {convolve}\n"
        f"        return outputs + ops.reshape(self.bias, (1, -1) + (1,) * self.rank)\n")


HELPERS = {name: definition(_channels_first_class(name))
           for name in (f"ChannelsFirstConv{n}D{t}" for n in (1, 2, 3) for t in ("", "Transpose"))}
HELPERS.update(RECURRENT_HELPERS)
HELPERS.update(ATTENTION_HELPERS)
HELPERS["Bilinear"] = definition(bilinear_helper(
    "layers.Layer", "ops",
    "self.add_weight(shape={shape}, initializer=keras.initializers.RandomUniform(-bound, bound))", call="call"))
HELPERS["ChannelsFirstCropping1D"] = definition(
    "class ChannelsFirstCropping1D(keras.layers.Layer):\n"
    "    \"\"\"Cropping1D of channels-first sequences (Keras' own crops the middle axis): `cropping` steps cut\n"
    "    from each end of the last axis, or (start, end).\"\"\"\n\n"
    "    def __init__(self, cropping):\n"
    "        super().__init__()\n"
    "        self.cropping = (cropping, cropping) if isinstance(cropping, int) else tuple(cropping)\n\n"
    "    def call(self, x):\n"
    "        start, end = self.cropping\n"
    "        return x[:, :, start:ops.shape(x)[2] - end]\n")
HELPERS["LinearGeneral"] = definition(
    "class LinearGeneral(keras.layers.Layer):\n"
    "    \"\"\"Flax's nnx.LinearGeneral over the input's last axes: a Dense from their flattened size to that of\n"
    "    `out_features`, reshaped to it.\"\"\"\n\n"
    "    def __init__(self, in_features, out_features, use_bias=True):\n"
    "        super().__init__()\n"
    "        self.in_features = tuple(np.atleast_1d(in_features).tolist())\n"
    "        self.out_features = tuple(np.atleast_1d(out_features).tolist())\n"
    "        self.dense = layers.Dense(int(np.prod(self.out_features)), use_bias=use_bias)\n\n"
    "    def call(self, x):\n"
    "        leading = tuple(ops.shape(x)[:len(x.shape) - len(self.in_features)])\n"
    "        y = self.dense(ops.reshape(x, leading + (int(np.prod(self.in_features)),)))\n"
    "        return ops.reshape(y, leading + self.out_features)\n")
HELPERS["NnxEinsum"] = definition(
    "class NnxEinsum(keras.layers.Layer):\n"
    "    \"\"\"Flax's nnx.Einsum: ops.einsum(equation, x, kernel) with a kernel of `kernel_shape`, plus a bias\n"
    "    of `bias_shape` when given.\"\"\"\n\n"
    "    def __init__(self, equation, kernel_shape, bias_shape=None):\n"
    "        super().__init__()\n"
    "        self.equation = equation\n"
    "        self.kernel = self.add_weight(shape=kernel_shape, initializer=\"glorot_uniform\")\n"
    "        self.bias = None if bias_shape is None else self.add_weight(shape=bias_shape, initializer=\"zeros\")\n\n"
    "    def call(self, x):\n"
    "        y = ops.einsum(self.equation, x, self.kernel)\n"
    "        return y + self.bias if self.bias is not None else y\n")
HELPERS["ChannelDropout"] = definition(
    "class ChannelDropout(keras.layers.Layer):\n"
    "    \"\"\"PyTorch's nn.Dropout1d/2d/3d: while training, whole channels dropped: the mask varies over (N, C)\n"
    "    of an input of rank `spatial` + 2, over its first axis otherwise (unbatched, as PyTorch reads other\n"
    "    ranks).\"\"\"\n\n"
    "    def __init__(self, rate, spatial):\n"
    "        super().__init__()\n"
    "        self.rate = rate\n"
    "        self.spatial = spatial\n\n"
    "    def call(self, x, training=None):\n"
    "        if not training or self.rate == 0:\n"
    "            return x\n"
    "        kept = 2 if len(x.shape) == self.spatial + 2 else 1\n"
    "        noise_shape = tuple(ops.shape(x)[:kept]) + (1,) * (len(x.shape) - kept)\n"
    "        return keras.random.dropout(x, self.rate, noise_shape=noise_shape)\n")
HELPERS.update(function_helpers("ops", "ops.rsqrt", "ops.softmax", "ops.cast",
                               dropout="keras.random.dropout(weights, dropout_p)"))
HELPERS.update(numpy_constants.HELPERS)


def _index_value(index: ast.expr) -> ast.expr:
    """An index written as a value passed to a function: its slices as `slice(start, stop)`."""
    if isinstance(index, ast.Tuple):
        return ast.Tuple([_index_value(item) for item in index.elts], ast.Load())
    if isinstance(index, ast.Slice):
        return P.call("slice", *([index.lower or P.lit(None), index.upper] if index.upper else
                                 [index.lower, P.lit(None)] if index.lower else [P.lit(None)]))
    return index


HELPERS["assign_slice"] = definition("""def assign_slice(x, index, value):
    \"\"\"x with x[index] = value, as PyTorch's in-place assignment computes it, without changing x: index holds
    slices with a step of one, integers and an Ellipsis.\"\"\"
    index = index if isinstance(index, tuple) else (index,)
    if Ellipsis in index:
        at = index.index(Ellipsis)
        index = index[:at] + (slice(None),) * (len(x.shape) - len(index) + 1) + index[at + 1:]
    shape = ops.shape(x)
    starts = []
    for axis, item in enumerate(index):
        start = (item.start or 0) if isinstance(item, slice) else item
        starts.append(start + shape[axis] if start < 0 else start)
    updates = ops.cast(ops.broadcast_to(value, ops.shape(x[index])), x.dtype)
    for axis, item in enumerate(index):
        if not isinstance(item, slice):
            updates = ops.expand_dims(updates, axis)
    return ops.slice_update(x, starts + [0] * (len(shape) - len(index)), updates)
""")
HELPERS.update(SPATIAL_PADDING_HELPER)
HELPERS.update(CEIL_MODE_PADDING_HELPER)
HELPERS["copy_layer"] = definition('''def copy_layer(value):
    """copy.deepcopy, also of a layer: Keras copies layers through their saved config, which needs each class
    registered and rebuilt from its arguments; the copy here is of the state of the layer and of every layer in
    it, as PyTorch's deepcopy."""
    if not isinstance(value, keras.layers.Layer):
        return copy.deepcopy(value)
    originals = list(value._flatten_layers())  # the layer and each one it holds, at any depth
    memo = {id(module): module for module in list(sys.modules.values())}  # modules are shared, not copied
    memo.update({id(layer): type(layer).__new__(type(layer)) for layer in originals})
    for layer in originals:
        clone = memo[id(layer)]
        wrappers = {k: v for k, v in vars(clone).items() if callable(v)}  # Keras' __new__ wraps methods per instance
        clone.__dict__.update(copy.deepcopy(layer.__dict__, memo))
        clone.__dict__.update(wrappers)
    return memo[id(value)]''')
HELPERS["pad_edges"] = definition('''def pad_edges(x, widths, mode):
    """The pad modes ops.pad lacks, by taking values: "edge" repeats each border value, "wrap" continues from the
    other end (PyTorch's replicate and circular pads); widths are (before, after) per axis."""
    for axis, (before, after) in enumerate(widths):
        lead, trail = ((ops.zeros((before,), "int32"), ops.full((after,), -1, "int32")) if mode == "edge" else
                       (ops.arange(-before, 0), ops.arange(after)))
        x = ops.concatenate([ops.take(x, lead, axis=axis), x, ops.take(x, trail, axis=axis)], axis=axis)
    return x''')
HELPERS.update(MERGE_HELPER)
HELPERS["functional_conv"] = definition(KERAS_CONV)
C.writes("ConvFn", "functional_conv")(write_conv_function)
HELPERS["index_rows"] = definition('''def index_rows(x, index):
    """`x[index]` as PyTorch and NumPy index by an integer tensor: the items it names along the first axis."""
    if "bool" in str(index.dtype):
        raise TypeError("indexing by a boolean mask (a result of data-dependent size) is not translated")
    return ops.take(x, index, axis=0)''')
C.writes("OneHot", "ops.one_hot")(  # PyTorch's one-hot vectors are int64
    lambda c: P.call("ops.one_hot", c.inputs[0], c.attrs["num_classes"], dtype=c.attrs.get("dtype", "int64")))
C.writes("TensorIndex", "index_rows")(lambda c: P.call("index_rows", *c.inputs))
C.writes("Item", "ops.convert_to_numpy")(lambda c: P.method(P.call("ops.convert_to_numpy", c.inputs[0]), "item"))
HELPERS["unfold"] = definition(
    "def unfold(x, kernel_size, dilation=1, padding=0, stride=1):\n"
    "    \"\"\"PyTorch's F.unfold: the sliding blocks of x (N, C, H, W) as columns, (N, C * kh * kw, blocks), each\n"
    "    channel's kh * kw values together; taken by a convolution with the identity kernel.\"\"\"\n"
    "    kh, kw = (kernel_size, kernel_size) if isinstance(kernel_size, int) else kernel_size\n"
    "    ph, pw = (padding, padding) if isinstance(padding, int) else padding\n"
    "    channels = ops.shape(x)[1]\n"
    "    x = ops.pad(x, [[0, 0], [0, 0], [ph, ph], [pw, pw]])\n"
    "    eye = ops.reshape(ops.eye(kh * kw, dtype=x.dtype), (kh, kw, 1, kh * kw))\n"
    "    planes = ops.reshape(x, (-1, 1, ops.shape(x)[2], ops.shape(x)[3]))\n"
    "    cols = ops.conv(planes, eye, strides=stride, dilation_rate=dilation, data_format='channels_first')\n"
    "    return ops.reshape(cols, (-1, channels * kh * kw, ops.shape(cols)[2] * ops.shape(cols)[3]))\n")
C.writes("Unfold", "unfold")(lambda c: P.call("unfold", c.inputs[0], *[c.attrs[k] for k in (
    "kernel_size", "dilation", "padding", "stride")]))
HELPERS["EmbeddingBag"] = definition('''class EmbeddingBag(layers.Layer):
    """PyTorch's nn.EmbeddingBag: the mean, sum or max of the embeddings of each bag of ids, a row of a 2-D
    input or the run of a 1-D input that each of `offsets` starts (an empty bag gives zeros)."""

    def __init__(self, num_embeddings, embedding_dim, mode="mean", **kwargs):
        super().__init__(**kwargs)
        self.embedding = layers.Embedding(num_embeddings, embedding_dim)
        self.mode = mode

    def call(self, input, offsets=None):
        rows = self.embedding(input)
        if offsets is None:
            return {"mean": ops.mean, "sum": ops.sum, "max": ops.max}[self.mode](rows, axis=1)
        bags = ops.shape(offsets)[0]
        steps = ops.arange(ops.shape(input)[0], dtype="int32")
        bag = ops.searchsorted(ops.cast(offsets, "int32"), steps, side="right") - 1
        counts = ops.segment_sum(ops.ones_like(bag, dtype=rows.dtype), bag, num_segments=bags)[:, None]
        if self.mode == "max":
            return ops.where(counts > 0, ops.segment_max(rows, bag, num_segments=bags), 0.0)
        total = ops.segment_sum(rows, bag, num_segments=bags)
        return total if self.mode == "sum" else total / ops.maximum(counts, 1.0)''')
C.layer("(an nn.EmbeddingBag helper)", "EmbeddingBag", "", write=lambda c: P.call(
    "EmbeddingBag", c.attrs["num_embeddings"], c.attrs["embedding_dim"], **keywords(mode=(c.attrs["mode"], "mean"))),
    from_ir=lambda w, attrs: {"embedding.embeddings": w["W"]})
HELPERS["pretrained_embedding"] = definition(
    "def pretrained_embedding(weights, trainable):\n"
    "    \"\"\"An Embedding starting from the table `weights` (PyTorch's nn.Embedding.from_pretrained).\"\"\"\n"
    "    weights = np.asarray(weights, dtype='float32')\n"
    "    return layers.Embedding(*weights.shape, weights=weights, trainable=trainable)\n")
HELPERS.update(pool_index_helpers("ops", "ops.cast"))
HELPERS["ChannelPReLU"] = definition(
    "class ChannelPReLU(layers.Layer):\n"
    "    \"\"\"PReLU with one slope per channel (axis 1) or one for all, as PyTorch's nn.PReLU.\"\"\"\n\n"
    "    def __init__(self, num_parameters=1, init=0.25, **kwargs):\n"
    "        super().__init__(**kwargs)\n"
    "        self.slope = self.add_weight(shape=(num_parameters,), initializer=keras.initializers.Constant(init),\n"
    "                                     name='slope')\n\n"
    "    def call(self, x):\n"
    "        rank = len(x.shape)\n"
    "        slope = self.slope if rank < 2 else ops.reshape(self.slope, (-1,) + (1,) * (rank - 2))\n"
    "        return ops.where(x >= 0, x, slope * x)\n")


C.layer("keras.layers.Conv2D", "Conv", "",
        write=mode_padded(_write_conv, lambda items: _keras_sequential(items), C), from_ir=conv_weights)
C.layer("keras.layers.Conv2DTranspose", "ConvTranspose", "", write=_write_conv_transpose, from_ir=conv_weights)
C.layer("keras.layers.Dense", "Dense", "",
        write=lambda c: P.call("layers.Dense", c.attrs["units"],
                               **keywords(use_bias=(value_of(c.attrs["bias"]), True))),
        from_ir=dense_weights)


def _norm_kwargs(a, eps_default):
    affine = value_of(a.get("affine", True))
    return keywords(epsilon=(a["epsilon"], eps_default), center=(norm_offset(a), True), scale=(affine, True))


NORM_WEIGHTS = Renamed(gamma="scale", beta="B", moving_mean="mean", moving_variance="var")
EMBEDDING_WEIGHTS = Renamed(embeddings="W")


C.layer("keras.layers.BatchNormalization", "BatchNormalization", "",
        write=lambda c: P.call("layers.BatchNormalization", axis=c.attrs["axis"],
                               **keywords(momentum=(c.attrs["momentum"], 0.99)), **_norm_kwargs(c.attrs, 1e-3)),
        from_ir=NORM_WEIGHTS.from_ir)
C.layer("keras.layers.RMSNormalization", "RMSNormalization", "",
        write=lambda c: P.call("layers.RMSNormalization", **keywords(epsilon=(c.attrs["epsilon"], 1e-6))),
        from_ir=Renamed(scale="scale").from_ir)
C.layer("keras.layers.LayerNormalization", "LayerNormalization", "",
        write=lambda c: P.call("layers.LayerNormalization", **keywords(axis=(c.attrs["axis"], -1)),
                               **_norm_kwargs(c.attrs, 1e-3)),
        from_ir=NORM_WEIGHTS.from_ir)
C.layer("keras.layers.GroupNormalization", "GroupNormalization", "",
        write=lambda c: P.call("layers.GroupNormalization", c.attrs["num_groups"], axis=c.attrs["axis"],
                               **_norm_kwargs(c.attrs, 1e-3)),
        from_ir=NORM_WEIGHTS.from_ir)
C.layer("keras.layers.Embedding", "Embedding", "",
        write=lambda c: P.call("pretrained_embedding", c.attrs["initial"], c.attrs["trainable"])
        if "initial" in c.attrs else P.call("layers.Embedding", c.attrs["num_embeddings"], c.attrs["embedding_dim"]),
        from_ir=EMBEDDING_WEIGHTS.from_ir)
def _write_dropout(c):
    """A dropout; one of whole channels is PyTorch's `ChannelDropout` helper for channels-first data (PyTorch's
    nn.Dropout2d takes unbatched and other ranks too, which SpatialDropout2D refuses), else Keras' own."""
    a = c.attrs
    if not a.get("spatial"):
        return P.call("layers.Dropout", a["ratio"])
    if a.get("layout") == "channels_first":
        return P.call("ChannelDropout", a["ratio"], a["spatial"])
    return P.call(f"layers.SpatialDropout{a['spatial']}D", a["ratio"], **_channels(a))


C.layer("keras.layers.Dropout", "Dropout", "", write=_write_dropout)
C.layer("keras.layers.Identity", "Identity", "", write=lambda c: P.call("layers.Identity"))
C.layer("keras.layers.Flatten", "Flatten", "", write=lambda c: P.call("layers.Flatten"))

ACTIVATION_NAMES = {"Sigmoid": "sigmoid", "Tanh": "tanh", "SiLU": "silu", "HardSwish": "hard_silu",
                    "HardSigmoid": "hard_sigmoid", "Relu6": "relu6", "Mish": "mish", "Softplus": "softplus"}
for _op, _name in ACTIVATION_NAMES.items():
    C.layer("keras.layers.Activation", _op, "", write=lambda c, n=_name: P.call("layers.Activation", n))
C.layer("keras.layers.ReLU", "Relu", "", write=lambda c: P.call("layers.ReLU"))


def _write_gelu_layer(c):
    approximate = known(c.attrs["approximate"])
    if approximate not in ("none", "tanh"):
        raise Refused("GELU approximate given by a variable")
    return P.call("layers.Activation", "gelu" if approximate == "none" else P.name("ops.gelu"))  # ops.gelu: tanh


C.layer("keras.layers.Activation", "Gelu", "", write=_write_gelu_layer)
C.layer("keras.layers.LeakyReLU", "LeakyRelu", "",
        write=lambda c: P.call("layers.LeakyReLU", negative_slope=c.attrs["alpha"]))
C.layer("keras.layers.ELU", "Elu", "", write=lambda c: P.call("layers.ELU", **keywords(alpha=(c.attrs["alpha"], 1.0))))


for _op in ("LSTM", "GRU", "RNN"):
    C.layer("(a PyTorch-style recurrent helper)", _op, "", write=write_recurrent, from_ir=recurrent_weights)
    C.layer("(a PyTorch-style cell helper)", f"{_op}Cell", "", write=write_recurrent,
            from_ir=lambda w, attrs: cell_weights(recurrent_weights(w, attrs)))
C.layer("(a PyTorch-style attention helper)", "MultiHeadAttention", "", write=write_attention,
        from_ir=attention_weights)
C.layer("(an nnx.LinearGeneral helper)", "LinearGeneral", "", write=lambda c: P.call(
    "LinearGeneral", c.attrs["in_features"], c.attrs["out_features"], **keywords(use_bias=(c.attrs["bias"], True))),
    from_ir=lambda w, attrs: {f"dense.{name}": array for name, array in dense_weights(w, attrs).items()})
C.layer("(an nnx.Einsum helper)", "NnxEinsum", "", write=write_nnx_einsum, from_ir=nnx_einsum_weights)
C.layer("(an NNX-style attention helper)", "NnxMultiHeadAttention", "", write=attention_helper("NnxMultiHeadAttention"),
        from_ir=partial(attention_weights, layers=("query", "key", "value", "out")))
for _op in TRANSFORMER_OPS:
    C.layer("(a PyTorch-style transformer helper)", _op, "", write=lambda c: write_transformer(c),
            from_ir=transformer_layer_weights(("gamma", "beta")))
C.layer("(a PReLU helper)", "PRelu", "", write=write_channel_prelu, from_ir=prelu_weights)
C.layer("(a Bilinear helper)", "Bilinear", "", write=write_bilinear, from_ir=bilinear_weights)
for _op in POOL_INDEX_HELPERS:
    C.layer("(a pooling-index helper)", _op, "", write=write_pool_index_layer)
    C.writes(_op, "max_pool_with_indices / max_unpool")(write_pool_index_function)
C.layer("keras.layers.Softmax", "Softmax", "", write=lambda c: P.call("layers.Softmax", axis=softmax_axis(c)))


def _pad_widths(pads, attrs) -> list | ast.expr:
    """`ops.pad` widths for every axis of a pool's input: the spatial pads, none on the batch and channel axes;
    pads given by a variable (an int or one per axis, as PyTorch takes them) through the spatial_padding helper."""
    if pads is NOT_LITERAL:
        return _around_spatial(P.call(SPATIAL_PADDING, attrs["pads"], attrs["rank"]), attrs)
    spatial = [[p, p] for p in pads]
    return [[0, 0]] + spatial + [[0, 0]] if attrs.get("layout") == "channels_last" else [[0, 0], [0, 0]] + spatial


def _ceil_mode_widths(x: ast.expr, attrs) -> ast.expr:
    """`ops.pad` widths of a max pool in PyTorch's ceil_mode on `x` (see numpy_code.ceil_mode_padding)."""
    last = attrs.get("layout") == "channels_last"
    sizes = ast.Subscript(ast.Attribute(x, "shape", ast.Load()), ast.Slice(P.lit(1), P.lit(-1)) if last else
                          ast.Slice(P.lit(2), None), ast.Load())
    return _around_spatial(ceil_mode_padding(sizes, attrs), attrs)


def _around_spatial(spatial: ast.expr, attrs) -> ast.expr:
    """Pad widths for every axis from the spatial axes' (an expression): none on the batch and channel axes."""
    if attrs.get("layout") == "channels_last":
        return P.binop(P.binop([[0, 0]], "+", spatial), "+", [[0, 0]])
    return P.binop([[0, 0], [0, 0]], "+", spatial)


def _write_pool(call):
    a, rank = call.attrs, call.attrs["rank"]
    kind = "Max" if call.op == "MaxPool" else "Average"
    stride = None if known(a["strides"]) == known(a["kernel_shape"]) and known(a["strides"]) is not NOT_LITERAL \
        else a["strides"]
    same = {"padding": "same"} if known(a["pads"]) == "same" else {}
    pads = pairs(a["pads"], rank) if not same else (0,) * rank
    pool = P.call(f"layers.{kind}Pooling{rank}D", a["kernel_shape"], **({"strides": stride} if stride else {}),
                  **same, **_channels(a))
    if a.get("ceil_mode"):  # padded by an amount that depends on the input's size
        pad = layer_lambda(lambda t: P.call("ops.pad", t, _ceil_mode_widths(t, a),
                                            constant_values=P.call("float", "-inf")), [])
        return _sequential(P.call("layers.Lambda", pad), P.call(
            f"layers.{kind}Pooling{rank}D", a["kernel_shape"], **({"strides": stride} if stride else {}),
            **_channels(a)))
    if pads is not NOT_LITERAL and all(p == 0 for p in pads):
        return pool
    if kind == "Average":  # count_include_pad=True: the zeros count, as after ZeroPadding
        return _sequential(P.call(f"layers.ZeroPadding{rank}D", a["pads"], **_channels(a)), pool)
    width = _pad_widths(pads, a)
    pad = P.call("layers.Lambda", layer_lambda(
        lambda t: P.call("ops.pad", t, width, constant_values=P.call("float", "-inf")), [width]))
    return _sequential(pad, pool)


C.layer("keras.layers.MaxPooling2D", "MaxPool", "", write=_write_pool)
C.layer("keras.layers.AveragePooling2D", "AveragePool", "", write=_write_pool)
for _op, _kind in (("GlobalAveragePool", "Average"), ("GlobalMaxPool", "Max")):
    C.layer(f"keras.layers.Global{_kind}Pooling2D", _op, "",
            write=lambda c, k=_kind: P.call(f"layers.Global{k}Pooling{c.attrs['rank']}D", keepdims=True,
                                            **_channels(c.attrs)))


def _write_upsample(call):
    a = call.attrs
    return P.call("layers.UpSampling2D", integer_scale(a, "Keras"), **_channels(a),
                  **keywords(interpolation=(a["mode"], "nearest")))


C.layer("keras.layers.UpSampling2D", "Resize", "", write=_write_upsample)


# -- functions ---------------------------------------------------------------------------------------
numpy_writers(C, "ops", lambda x: P.call("ops.shape", x), "ops.norm", pad_modes=("constant", "reflect"),
              attention_dropout=True, logsumexp="ops.logsumexp", pad_helper="pad_edges")
C.writes("Cast", "ops.cast")(lambda c: P.call("ops.cast", c.inputs[0], c.attrs["to"]))
C.writes("CastLike", "(ops.cast to a tensor's dtype)")(
    lambda c: P.call("ops.cast", c.inputs[0], P.call("ops.dtype", c.inputs[1])))
C.writes("Constant", "ops.convert_to_tensor")(
    lambda c: P.call("ops.convert_to_tensor", c.attrs["value"], **dtype_keyword(c)))
C.writes_call("StopGradient", "ops.stop_gradient")
C.writes_call("LogSigmoid", "ops.log_sigmoid")
C.writes_call("Softsign", "keras.activations.softsign")
C.writes_call("Glu", "ops.glu", axis="axis")
C.writes("TopK", "ops.top_k")(lambda c: write_top_k(c, "ops.top_k"))


def _moment(op: str, fn: str):
    """ops.var / ops.std, which have no Bessel's correction: with one, the variance times n / (n - 1)."""
    @C.writes(op, fn)
    def write(c):
        x, a = c.inputs[0], c.attrs
        kwargs = keywords(axis=(a["axis"], None), keepdims=(a["keepdims"], False))
        if known(a["correction"]) == 0:
            return P.call(fn, x, **kwargs)
        if known(a["axis"]) is None:
            n = P.call("ops.size", x)
        elif isinstance(known(a["axis"]), int):
            n = P.subscript(P.call("ops.shape", x), a["axis"])
        else:
            raise Refused("a variance with Bessel's correction over several axes")
        variance = P.binop(P.call("ops.var", x, **kwargs), "*", P.binop(n, "/", P.binop(n, "-", 1)))
        return variance if op == "ReduceVar" else P.call("ops.sqrt", variance)


_moment("ReduceVar", "ops.var")
_moment("ReduceStd", "ops.std")
for _op, _fn_name in (("Relu", "relu"), ("Sigmoid", "sigmoid"), ("Tanh", "tanh"), ("Rsqrt", "rsqrt"), ("Erf", "erf"),
                      ("SiLU", "silu"), ("HardSwish", "hard_silu"), ("HardSigmoid", "hard_sigmoid"), ("Relu6", "relu6"),
                      ("Softplus", "softplus")):
    C.writes_call(_op, f"ops.{_fn_name}")
C.writes_call("Mish", "keras.activations.mish")
activation_writers(C, "ops", "ops", shrinks=("ops.hard_shrink", "ops.soft_shrink"))
C.writes_call("Elu", "ops.elu", alpha="alpha")
C.writes_call("LeakyRelu", "ops.leaky_relu", negative_slope="alpha")


def _pool_fn(op: str, fn: str):
    """`fn(x, ...)` on `x` padded first (with -inf for a max pool; with zeros, which count, for an average)."""
    @C.writes(op, fn)
    def write(c):
        a, x = c.attrs, c.inputs[0]
        if known(a["pads"]) == "same":
            return P.call(fn, x, a["kernel_shape"], a["strides"], padding="same", data_format=a["layout"])
        pads = pairs(a["pads"], a["rank"])
        if a.get("ceil_mode"):
            x = P.call("ops.pad", x, _ceil_mode_widths(x, a), constant_values=P.call("float", "-inf"))
        elif pads is NOT_LITERAL or any(pads):
            width = _pad_widths(pads, a)
            fill = {"constant_values": P.call("float", "-inf")} if op == "MaxPool" else {}
            x = P.call("ops.pad", x, width, **fill)
        return P.call(fn, x, a["kernel_shape"], a["strides"], data_format=a["layout"])


_pool_fn("MaxPool", "ops.max_pool")
_pool_fn("AveragePool", "ops.average_pool")


@C.writes("Gelu", "ops.gelu")
def _gelu(c):
    approximate = known(c.attrs["approximate"])
    if approximate not in ("none", "tanh"):
        raise Refused("GELU approximate given by a variable")
    return P.call("ops.gelu", c.inputs[0], **({"approximate": False} if approximate == "none" else {}))


for _op, _fn_name in (("Softmax", "ops.softmax"), ("LogSoftmax", "ops.log_softmax")):
    C.writes(_op, _fn_name)(lambda c, f=_fn_name: P.call(f, cast_first(c, lambda x, d: P.call("ops.cast", x, d)),
                                                        axis=softmax_axis(c)))
@C.writes("Resize", "ops.repeat")
def _resize(c):
    a = c.attrs
    scale = known(a["scale"])
    if isinstance(scale, float) and scale.is_integer():
        scale = int(scale)
    if not isinstance(scale, int):
        raise Refused("interpolation to a size or by a non-integer or variable scale")
    x = c.inputs[0]
    if known(a["mode"]) == "nearest":
        return P.call("ops.repeat", P.call("ops.repeat", x, scale, axis=2), scale, axis=3)
    shape = P.call("ops.shape", x)
    size = (P.binop(P.subscript(shape, 2), "*", scale), P.binop(P.subscript(shape, 3), "*", scale))
    return P.call("ops.image.resize", x, size, interpolation="bilinear", data_format="channels_first")


# -- how Keras model code is written -----------------------------------------------------------------
def _keras_sequential(items: ast.expr | None) -> ast.expr:
    """`keras.Sequential(items)`; None: one to add layers to."""
    if items is None:
        return P.call("keras.Sequential")
    if isinstance(items, ast.List) and not items.elts:
        return P.call("layers.Identity")  # Keras cannot call an empty Sequential
    return P.call("keras.Sequential", items)


INITIALIZERS = {"zeros": "zeros", "ones": "ones", "normal": "random_normal", "uniform": "random_uniform"}


def _keras_weight(shape, kind, scale, trainable, name):
    """`self.add_weight(...)`; a constant factor on the initial value becomes the initializer's scale."""
    if scale is None or kind == "zeros":
        init = P.lit(INITIALIZERS[kind])
    elif kind == "ones":
        init = P.call("keras.initializers.Constant", scale)
    elif kind == "normal":
        init = P.call("keras.initializers.RandomNormal", stddev=scale)
    else:
        init = P.call("keras.initializers.RandomUniform", 0.0, scale)
    return P.call(P.name("self.add_weight"), shape=shape, initializer=init,
                  **({} if trainable else {"trainable": False}), name=name)


class KerasWeights(WeightPort):
    def owns(self, obj) -> bool:
        import keras

        return isinstance(obj, keras.layers.Layer)

    def variables(self, dst) -> dict[int, str]:
        return {id(v): v.path for v in getattr(dst, "weights", [])}

    def members(self, dst) -> list | None:
        import keras

        if isinstance(dst, keras.Sequential):
            return dst.layers
        return list(dst) if isinstance(dst, (list, tuple)) else None

    def holders(self, dst) -> list:
        import keras

        return [layer for layer in dst.layers if layer.weights] if isinstance(dst, keras.Sequential) else [dst]

    def unbuilt_hint(self, layer) -> str:
        return "" if layer.built else " (it was never called, so Keras has not built it: call it once)"

    def is_weight(self, obj) -> bool:
        return hasattr(obj, "assign") and hasattr(obj, "path")

    def shape(self, variable) -> tuple:
        return tuple(variable.shape)

    def assign(self, variable, array) -> None:
        variable.assign(array.astype(str(variable.dtype), copy=False))


for _op, _fn_name in (("RandomUniform", "keras.random.uniform"), ("RandomNormal", "keras.random.normal")):
    C.writes(_op, _fn_name)(lambda c, f=_fn_name: P.call(f, shape_argument(c.attrs["shape"]), **dtype_keyword(c)))
    C.writes(f"{_op}Like", _fn_name)(lambda c, f=_fn_name: P.call(
        f, P.call("ops.shape", c.inputs[0]), **dtype_keyword(c, like=c.inputs[0])))


@C.writes("Bernoulli", "keras.random.uniform")
def _bernoulli(c):
    """1 where a uniform draw is below the probability (p, or the input's values), in the input's shape and dtype."""
    x = c.inputs[0]
    probability = c.attrs["p"] if known(c.attrs["p"]) is not None else x
    drawn = P.call("keras.random.uniform", P.call("ops.shape", x))
    return P.call("ops.cast", P.binop(drawn, "<", probability), ast.Attribute(x, "dtype", ast.Load()))


@C.writes("Dropout", "keras.random.dropout")
def _dropout(c):
    """A dropout applied while `training` (the source's flag): `keras.random.dropout(x, rate) if training else x`."""
    return ast.IfExp(c.attrs["training"], P.call("keras.random.dropout", c.inputs[0], c.attrs["ratio"]), c.inputs[0])


def _build_layer(layer: ast.expr, call: OpCall) -> ast.stmt:
    """`self.embed.build()`, `self.proj.build((None, in_features))`: the weights of a layer the code reads before
    calling it, made in `__init__` (Keras makes them on the first call)."""
    if call.op == "Conv":  # its input's channels, where its data format has them
        rank, channels = known(call.attrs["rank"]), call.attrs["in_channels"]
        if known(channels) is None:
            raise Refused("its weights are read, and its input size is left to the first call")
        spatial = [ast.Constant(None)] * rank
        shape = [channels, *spatial] if call.attrs.get("layout") == "channels_first" else [*spatial, channels]
        return P.expr_stmt(P.method(layer, "build", ast.Tuple([ast.Constant(None), *shape], ast.Load())))
    sizes = {"Embedding": None, "Dense": "in_features", "LayerNormalization": "normalized_shape"}
    if call.op not in sizes:
        raise Refused(f"reading the weights of a {call.op} layer")
    if sizes[call.op] is None:
        return P.expr_stmt(P.method(layer, "build"))
    size = call.attrs.get(sizes[call.op])
    if isinstance(known(size), (tuple, list)) and len(known(size)) == 1:  # normalized_shape=(dim,)
        size = ast.Constant(known(size)[0])
    if known(size) is None or isinstance(known(size), (tuple, list)):
        raise Refused("its weights are read, and its input size is left to the first call or spans several axes")
    return P.expr_stmt(P.method(layer, "build", ast.Tuple([ast.Constant(None), size], ast.Load())))


#: Python's arithmetic operators -> the keras.ops functions that promote dtypes as PyTorch does
PROMOTING = {ast.Add: "ops.add", ast.Sub: "ops.subtract", ast.Mult: "ops.multiply", ast.Div: "ops.divide",
             ast.Pow: "ops.power"}


def _promoting_arithmetic(op: ast.operator, left: ast.expr, right: ast.expr) -> ast.expr | None:
    fn = PROMOTING.get(type(op))
    return P.call(fn, left, right) if fn else None


def _layer_name(cls_name: str) -> list[ast.keyword]:
    """`name=` for a class named with a leading underscore (torchvision's `_DenseLayer`): Keras names a layer
    after its class (`__dense_layer`), which TensorFlow's name scopes refuse; the same name without the leading
    underscores, made unique as Keras' own names are."""
    if not cls_name.startswith("_"):
        return []
    base = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", cls_name.lstrip("_")).lower()
    return [ast.keyword("name", ast.parse(f'f"{base}_{{keras.backend.get_uid({base!r})}}"', mode="eval").body)]


C.skeleton = TargetSkeleton(
    sequential_layers="layers",
    base_init_keywords=_layer_name,
    unstack=lambda tensor: P.call("ops.unstack", tensor),
    sequential_append=lambda container, layer: P.method(container, "add", layer),
    layer_base="keras.layers.Layer", forward="call",
    traced_forward=True,
    deep_copy="copy_layer",
    tensors_first=True,
    trainable_attribute="trainable",
    trainable_note="Keras also runs the batch norms in such a layer in inference mode while training",
    imports=(P.import_("copy"), P.import_("itertools"), P.import_("math"), P.import_("sys"), P.import_("keras"),
             P.from_import("keras", ["layers", "ops"]), P.import_("einops.layers.keras"),
             P.from_import("functools", ["partial"]), P.import_("numpy", "np")),
    init_tensors=numpy_constants.TABLE,
    layer_class="keras.layers.Layer",
    is_tensor=lambda value: P.call("ops.is_tensor", value),
    slice_update=lambda x, index, value: P.call("assign_slice", x, _index_value(index), value),
    promoting_arithmetic=_promoting_arithmetic,
    constant_weight=lambda value, trainable, name: P.call(
        "keras.Variable", as_float32(value), **({} if trainable else {"trainable": False}),
        **({"name": name} if name else {})),
    constant=lambda value: P.call("ops.convert_to_tensor", as_float32(value)),
    sequential=_keras_sequential, add_weight=_keras_weight, helpers=HELPERS, port=KerasWeights(),
    function_layer=lambda fn: P.call("layers.Lambda", fn),
    weight_value=lambda weight: ast.Attribute(weight, "value", ast.Load()),
    build_layer=_build_layer,
    reserved_names=frozenset({"keras", "layers", "ops", "np", "training", *HELPERS}),
    reserved_attributes=frozenset({"weights", "dtype", "input", "output", "variables", "losses", "trainable", "path",
                                   "compute_dtype", "metrics", "name", "built", "non_trainable_weights",
                                   "trainable_weights", "dtype_policy", "supports_masking", "input_spec"}))


def _complex(c):
    raise Refused("a complex tensor, which Keras tensors cannot hold (keras.ops.fft takes and gives (real, "
                  "imaginary) pairs)")


C.writes("FFT", "keras.ops.fft")(_complex)
C.writes("Real", "keras.ops.real")(_complex)

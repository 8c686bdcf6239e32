"""IR ops -> Flax NNX model code, as the transpiler writes it (see rules/code.py): `nnx` layer constructors
(taking the `rngs` their model's `__init__` receives) for layer ops, `jax.numpy` / `nnx` activation calls for
the rest, and each layer's weights from the IR op's weight roles, in the same conventions as the Flax code
generator (rules/flax/nn.py): a convolution kernel is [*kernel, in/groups, out], a dense kernel [in, out].

Layout: the translation keeps the source's layout. Flax's convolutions, pools and GroupNorm are
channels-last, so on channels-first data each is wrapped in the module's `ChannelsFirst` helper, which moves
the channel axis last around the layer and back; BatchNorm takes `axis=1` directly. Every axis in the
translated code means what it meant in the source.
"""

from __future__ import annotations

import ast
from functools import partial

from tensorbridge.codegen import pyast as P
from tensorbridge.rules import numpy_constants
from tensorbridge.rules.code import (
    NOT_LITERAL,
    CodeTable,
    Refused,
    Renamed,
    TargetSkeleton,
    WeightPort,
    cast_first,
    definition,
    keywords,
    known,
    l1l2_helper,
    layer_lambda,
    norm_offset,
    pairs,
    softmax_axis,
    value_of,
    with_activation,
)
from tensorbridge.rules.einops_code import einops_functions
from tensorbridge.rules.flax.base import R
from tensorbridge.rules.flax.code_attention import HELPERS as ATTENTION_HELPERS
from tensorbridge.rules.flax.code_attention import write_attention
from tensorbridge.rules.flax.code_recurrent import HELPERS as RECURRENT_HELPERS
from tensorbridge.rules.flax.code_recurrent import recurrent_weights, write_recurrent
from tensorbridge.rules.numpy_code import (
    CEIL_MODE_PADDING_HELPER,
    JAX_CONV,
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
    extract_patches_helper,
    function_helpers,
    integer_scale,
    mode_padded,
    numpy_writers,
    pool_index_helpers,
    prelu_weights,
    separable_conv_writer,
    shape_argument,
    transformer_layer_weights,
    write_bilinear,
    write_channel_prelu,
    write_conv_function,
    write_pool_index_function,
    write_pool_index_layer,
    write_top_k,
    write_transformer,
)
from tensorbridge.rules.numpy_constants import as_float32
from tensorbridge.rules.recurrent import cell_weights

C = R.code = CodeTable("flax")
RNGS = "rngs"


def _rngs() -> dict:
    return {RNGS: P.name(RNGS)}


def _size(value, rank: int):
    """A torch int-or-tuple size as the tuple Flax needs (`ntuple(...)` when it is a variable)."""
    literal = pairs(value, rank)
    return literal if literal is not NOT_LITERAL else P.call("ntuple", value, rank)


def _channels_first(layer: ast.expr, attrs) -> ast.expr:
    return P.call("ChannelsFirst", layer) if attrs.get("layout") == "channels_first" else layer


def _lambda(make, *captured) -> ast.expr:
    """`lambda x: make(x)` of a layer made from the `captured` expressions (see layer_lambda)."""
    return layer_lambda(make, list(captured))


def _shape(x: ast.expr) -> ast.expr:
    return ast.Attribute(x, "shape", ast.Load())


def _partial(fn: str, **kwargs) -> ast.expr:
    return P.call("partial", P.name(fn), **kwargs) if kwargs else P.name(fn)


def _sized(cls: str, size, named: dict, kwargs: dict, axis=-1) -> ast.expr:
    """`cls(size, *named values, **kwargs, rngs=rngs)`; when the source leaves the input size to the first call
    (Keras), `Lazy(partial(cls, **named, **kwargs), rngs=rngs)`, which reads it from axis `axis` of the first input."""
    if known(size) is not None:
        return P.call(cls, size, *named.values(), **kwargs, **_rngs())
    return P.call("Lazy", P.call("partial", P.name(cls), **named, **kwargs), **keywords(axis=(axis, -1)), **_rngs())


def _with_activation(layer: ast.expr, attrs) -> ast.expr:
    return with_activation(C, layer, attrs, lambda *layers: P.call("nnx.Sequential", *layers))


def _uniform(value):
    """A strides or dilation tuple of one repeated int as that int (Flax applies an int to every spatial dim)."""
    v = known(value)
    return v[0] if isinstance(v, (tuple, list)) and v and len(set(v)) == 1 and isinstance(v[0], int) else value


def _conv_padding(pads):
    """Flax's padding for the IR's: "same"/"valid" as Flax spells them, symmetric widths as they are."""
    return known(pads).upper() if isinstance(known(pads), str) else pads


# -- layers ------------------------------------------------------------------------------------------
def _write_conv(call):
    a, rank = call.attrs, call.attrs["rank"]
    kwargs = keywords(strides=(_uniform(a["strides"]), 1), kernel_dilation=(_uniform(a["dilations"]), 1),
                      use_bias=(value_of(a["bias"]), True))
    kwargs["padding"] = _conv_padding(a["pads"])
    kernel = _size(a["kernel_shape"], rank)
    if "depth_multiplier" in a:  # a group per input channel, whose count the source may leave to the first call
        conv = _sized("depthwise_conv", a["in_channels"], {"depth_multiplier": a["depth_multiplier"],
                                                           "kernel_size": kernel}, kwargs)
    else:
        conv = _sized("nnx.Conv", a["in_channels"], {"out_features": a["filters"], "kernel_size": kernel},
                      {**kwargs, **keywords(feature_group_count=(a["group"], 1))})
    return _with_activation(_channels_first(conv, a), a)


def _write_conv_transpose(call):
    """nnx.ConvTranspose with transpose_kernel (the gradient of a convolution, as torch's): its padding is what
    is added around the dilated input, dilation * (kernel - 1) - pad on each side, plus output_padding at the
    end, so it needs those sizes as literals."""
    a, rank = call.attrs, call.attrs["rank"]
    if known(a["group"]) != 1:
        raise Refused("grouped transposed convolution (nnx.ConvTranspose has no groups)")
    if isinstance(known(a["pads"]), str):  # Keras' "same"/"valid": lax's transposed padding of the same name
        if known(a.get("output_padding")) is not None:
            raise Refused("output_padding with padding='same'/'valid'")
        conv = _sized("nnx.ConvTranspose", a["in_channels"], {"out_features": a["filters"],
                                                              "kernel_size": _size(a["kernel_shape"], rank)},
                      {"strides": _uniform(a["strides"]), "padding": _conv_padding(a["pads"]),
                       **keywords(kernel_dilation=(_uniform(a["dilations"]), 1), use_bias=(value_of(a["bias"]), True)),
                       "transpose_kernel": True})
        return _with_activation(_channels_first(conv, a), a)
    sizes = [pairs(a[k], rank) for k in ("kernel_shape", "pads", "dilations", "output_padding")]
    if NOT_LITERAL in sizes:
        raise Refused("transposed convolution whose kernel size, padding, dilation or output padding is a variable "
                      "(Flax's padding is computed from them)")
    kernel, pads, dilations, extra = sizes
    padding = [(d * (k - 1) - p, d * (k - 1) - p + e) for k, p, d, e in zip(kernel, pads, dilations, extra)]
    kwargs = keywords(kernel_dilation=(a["dilations"], 1), use_bias=(value_of(a["bias"]), True))
    conv = _sized("nnx.ConvTranspose", a["in_channels"], {"out_features": a["filters"], "kernel_size": kernel},
                  {"strides": a["strides"], "padding": padding, **kwargs, "transpose_kernel": True})
    return _with_activation(_channels_first(conv, a), a)


C.layer("flax.nnx.Conv", "Conv", "",
        write=mode_padded(_write_conv, lambda items: _nnx_sequential(items), C), from_ir=conv_weights)
C.layer("flax.nnx.ConvTranspose", "ConvTranspose", "", write=_write_conv_transpose, from_ir=conv_weights)
C.layer("flax.nnx.Linear", "Dense", "",
        write=lambda c: _with_activation(_sized("nnx.Linear", c.attrs["in_features"],
                                                {"out_features": c.attrs["units"]},
                                                keywords(use_bias=(value_of(c.attrs["bias"]), True))), c.attrs),
        from_ir=dense_weights)


def _affine(a) -> dict:
    return keywords(use_scale=(value_of(a.get("affine", True)), True), use_bias=(norm_offset(a), True))


NORM_WEIGHTS = Renamed(scale="scale", bias="B", mean="mean", var="var")


def _write_batch_norm(c):
    a = c.attrs
    return _sized("nnx.BatchNorm", a["num_features"], {}, {"axis": a["axis"], **keywords(
        momentum=(a["momentum"], 0.99), epsilon=(a["epsilon"], 1e-5)), **_affine(a)}, axis=a["axis"])


def _write_layer_norm(c):
    a = c.attrs
    if known(a["axis"]) != -1:  # over several trailing dims: nnx.LayerNorm's scale covers the last axis only
        return P.call("LayerNormOver", a["normalized_shape"], **keywords(epsilon=(a["epsilon"], 1e-5)), **_affine(a))
    size = a["normalized_shape"]
    if isinstance(known(size), (list, tuple)):
        size = known(size)[0]
    return _sized("nnx.LayerNorm", size, {}, {**keywords(epsilon=(a["epsilon"], 1e-6)), **_affine(a)})


C.layer("flax.nnx.RMSNorm", "RMSNormalization", "", write=lambda c: _sized(
    "nnx.RMSNorm", c.attrs["features"], {}, keywords(epsilon=(c.attrs["epsilon"], 1e-6))),
    from_ir=Renamed(scale="scale").from_ir)


def _write_group_norm(c):
    a = c.attrs
    norm = _sized("nnx.GroupNorm", a["num_channels"], {}, {"num_groups": a["num_groups"],
                                                          **keywords(epsilon=(a["epsilon"], 1e-6)), **_affine(a)})
    return P.call("ChannelsFirst", norm) if known(a["axis"]) == 1 else norm


C.layer("flax.nnx.BatchNorm", "BatchNormalization", "", write=_write_batch_norm, from_ir=NORM_WEIGHTS.from_ir)
C.layer("flax.nnx.LayerNorm", "LayerNormalization", "", write=_write_layer_norm, from_ir=NORM_WEIGHTS.from_ir)
C.layer("flax.nnx.GroupNorm", "GroupNormalization", "", write=_write_group_norm, from_ir=NORM_WEIGHTS.from_ir)
C.layer("flax.nnx.Embed", "Embedding", "",
        write=lambda c: P.call("pretrained_embed", c.attrs["initial"], c.attrs["trainable"], **_rngs())
        if "initial" in c.attrs else P.call("nnx.Embed", c.attrs["num_embeddings"], c.attrs["embedding_dim"],
                                            **_rngs()),
        from_ir=lambda w, attrs: {"embedding": w["W"]})
C.layer("(an nn.EmbeddingBag helper)", "EmbeddingBag", "", write=lambda c: P.call(
    "EmbeddingBag", c.attrs["num_embeddings"], c.attrs["embedding_dim"], **keywords(mode=(c.attrs["mode"], "mean")),
    **_rngs()), from_ir=lambda w, attrs: {"embedding.embedding": w["W"]})


def _spatial_axes(a) -> dict:
    """nnx.Dropout's broadcast_dims for a dropout of whole channels: the spatial axes."""
    n = a.get("spatial")
    if not n:
        return {}
    first = 1 if a["layout"] == "channels_last" else 2
    return {"broadcast_dims": tuple(range(first, first + n))}


C.layer("flax.nnx.Dropout", "Dropout", "", write=lambda c: P.call("ChannelDropout", c.attrs["ratio"], c.attrs[
    "spatial"], **_rngs()) if c.attrs.get("spatial") and c.attrs.get("layout") == "channels_first" else P.call(
    "nnx.Dropout", c.attrs["ratio"], **_spatial_axes(c.attrs), **_rngs()))
C.layer("(the input itself)", "Identity", "", write=lambda c: _lambda(lambda x: x))
C.layer("(a reshape)", "Flatten", "",
        write=lambda c: _lambda(lambda x: P.method(x, "reshape", P.subscript(_shape(x), 0), -1)))

#: IR activation op -> the `nnx` (or `jax.nn`) function written for it, as a layer and as a call
ACTIVATIONS = {"Relu": "nnx.relu", "Sigmoid": "nnx.sigmoid", "Tanh": "nnx.tanh", "SiLU": "nnx.silu",
               "HardSwish": "nnx.hard_swish", "HardSigmoid": "nnx.hard_sigmoid", "Relu6": "nnx.relu6",
               "Mish": "jax.nn.mish", "Softplus": "nnx.softplus"}


def _activation_layer(op: str):
    return lambda c: P.name(ACTIVATIONS[op])


for _op in ACTIVATIONS:
    C.layer(f"flax.{ACTIVATIONS[_op]}", _op, "", write=_activation_layer(_op))


def _gelu_keywords(c) -> dict:
    approximate = known(c.attrs["approximate"])
    if approximate not in ("none", "tanh"):
        raise Refused("GELU approximate given by a variable")
    return {"approximate": False} if approximate == "none" else {}  # jax's gelu is the tanh form by default


C.layer("flax.nnx.gelu", "Gelu", "", write=lambda c: _partial("nnx.gelu", **_gelu_keywords(c)))
C.layer("flax.nnx.leaky_relu", "LeakyRelu", "",
        write=lambda c: _partial("nnx.leaky_relu", negative_slope=c.attrs["alpha"]))
C.layer("flax.nnx.elu", "Elu", "", write=lambda c: _partial("nnx.elu", **keywords(alpha=(c.attrs["alpha"], 1.0))))
for _op in ("LSTM", "GRU", "RNN"):
    C.layer("(a PyTorch-style recurrent helper)", _op, "", write=write_recurrent, from_ir=recurrent_weights)
    C.layer("(a PyTorch-style cell helper)", f"{_op}Cell", "", write=write_recurrent,
            from_ir=lambda w, attrs: cell_weights(recurrent_weights(w, attrs)))
C.layer("(a Keras-style attention helper)", "KerasMultiHeadAttention", "",
        write=attention_helper("KerasMultiHeadAttention", rngs=P.name("rngs")),
        from_ir=partial(attention_weights, layers=("query_dense", "key_dense", "value_dense", "output_dense")))
C.layer("(a PyTorch-style attention helper)", "MultiHeadAttention", "", write=write_attention,
        from_ir=attention_weights)
for _op in TRANSFORMER_OPS:
    C.layer("(a PyTorch-style transformer helper)", _op, "", write=lambda c: write_transformer(c, rngs=P.name("rngs")),
            from_ir=transformer_layer_weights(("scale", "bias")))
C.layer("(a PReLU helper)", "PRelu", "", write=write_channel_prelu, from_ir=prelu_weights)
C.layer("(a Bilinear helper)", "Bilinear", "", write=lambda c: write_bilinear(c, rngs=P.name(RNGS)),
        from_ir=bilinear_weights)
for _op in POOL_INDEX_HELPERS:
    C.layer("(a pooling-index helper)", _op, "", write=write_pool_index_layer)
    C.writes(_op, "max_pool_with_indices / max_unpool")(write_pool_index_function)
C.layer("flax.nnx.softmax", "Softmax", "", write=lambda c: _partial("nnx.softmax", axis=softmax_axis(c)))
C.layer("flax.nnx.log_softmax", "LogSoftmax", "", write=lambda c: _partial("nnx.log_softmax", axis=softmax_axis(c)))


def _pool(op: str, a) -> ast.expr:
    """`partial(nnx.max_pool | nnx.avg_pool, ...)` over the channels-last spatial dims."""
    rank = a["rank"]
    same = known(a["pads"]) == "same"  # by an amount that depends on the input size, left out of averages
    pads = pairs(a["pads"], rank) if not same else (0,) * rank
    kwargs = {"window_shape": _size(a["kernel_shape"], rank), "strides": _size(a["strides"], rank)}
    if a.get("ceil_mode"):  # padded by an amount that depends on the input's size
        pool = layer_lambda(lambda t: P.call("nnx.max_pool", t, **kwargs, padding=ceil_mode_padding(
            ast.Subscript(ast.Attribute(t, "shape", ast.Load()), ast.Slice(P.lit(1), P.lit(-1)), ast.Load()), a)), [])
        return _channels_first(pool, a)
    if same:
        kwargs["padding"] = "SAME"
        if op == "AveragePool":
            kwargs["count_include_pad"] = False
    elif pads is NOT_LITERAL:  # max_pool pads with -inf; avg_pool counts the zeros, as torch
        kwargs["padding"] = P.call(SPATIAL_PADDING, a["pads"], rank)
    elif any(pads):
        kwargs["padding"] = [(p, p) for p in pads]
    return _channels_first(_partial("nnx.max_pool" if op == "MaxPool" else "nnx.avg_pool", **kwargs), a)


C.layer("flax.nnx.max_pool", "MaxPool", "", write=lambda c: _pool("MaxPool", c.attrs))
C.layer("flax.nnx.avg_pool", "AveragePool", "", write=lambda c: _pool("AveragePool", c.attrs))


def _spatial(attrs) -> tuple:
    """The spatial axes of the source's layout."""
    first = 1 if attrs.get("layout") == "channels_last" else 2
    return tuple(range(first, first + attrs["rank"]))


for _op, _fn_name in (("GlobalAveragePool", "jnp.mean"), ("GlobalMaxPool", "jnp.max")):
    C.layer(f"jax.{_fn_name[4:]}", _op, "",
            write=lambda c, f=_fn_name: _partial(f, axis=_spatial(c.attrs),
                                                 **keywords(keepdims=(value_of(c.attrs.get("keepdims", True)), False))))


def _upsampled(x: ast.expr, a) -> ast.expr:
    """`x` (N, C, H, W) upsampled by an integer factor: repeated rows and columns, or jax.image.resize's
    bilinear (half-pixel centres, as torch's align_corners=False)."""
    scale = integer_scale(a, "the translation")
    h, w = _spatial({**a, "rank": 2})
    if known(a["mode"]) == "nearest":
        return P.call("jnp.repeat", P.call("jnp.repeat", x, scale, axis=h), scale, axis=w)
    shape = _shape(x)
    size = ast.Tuple([P.binop(P.subscript(shape, i), "*", scale) if i in (h, w) else P.subscript(shape, i)
                      for i in range(4)], ast.Load())
    return P.call("jax.image.resize", x, size, "bilinear")


def _zero_padded(x: ast.expr, a) -> ast.expr:
    """`x` padded with zeros by (before, after) per spatial axis of the source's layout (Keras' padding held by a
    variable: read when it runs, by the `keras_zero_padding` helper)."""
    channels_last = a.get("layout") == "channels_last"
    if "padding" in a:
        spatial = ast.Starred(P.call("keras_zero_padding", a["padding"], a["rank"]), ast.Load())
        return P.call("jnp.pad", x, ast.List([P.lit((0, 0)), spatial, P.lit((0, 0))] if channels_last else
                                             [P.lit((0, 0)), P.lit((0, 0)), spatial], ast.Load()))
    spatial = [tuple(value_of(v) for v in pair) for pair in a["pads"]]
    return P.call("jnp.pad", x, [(0, 0)] + spatial + [(0, 0)] if channels_last else [(0, 0), (0, 0)] + spatial)


C.layer("(a zero padding)", "Pad", "", write=lambda c: C.write_function_layer(c) if "trailing_pads" in c.attrs
        else _lambda(lambda x: _zero_padded(x, c.attrs), *([c.attrs["padding"]] if "padding" in c.attrs else
                                                            [v for pair in c.attrs["pads"] for v in pair])))
C.layer("(an upsampling)", "Resize", "", write=lambda c: _lambda(lambda x: _upsampled(x, c.attrs), c.attrs["scale"]))


# -- functions ---------------------------------------------------------------------------------------
numpy_writers(C, "jnp", _shape, "jnp.linalg.norm", attention_dropout=True, random_source=f"self.{RNGS}",
              logsumexp="jax.nn.logsumexp")
C.writes("Cast", "jnp.astype")(lambda c: P.call("jnp.astype", c.inputs[0], c.attrs["to"]))
C.writes("CastLike", "(jnp.astype to an array's dtype)")(
    lambda c: P.call("jnp.astype", c.inputs[0], ast.Attribute(c.inputs[1], "dtype", ast.Load())))
C.writes("Constant", "jnp.asarray")(lambda c: P.call("jnp.asarray", c.attrs["value"], **dtype_keyword(c)))
C.writes_call("StopGradient", "jax.lax.stop_gradient")
C.writes("Regularizer", "L1L2")(lambda c: P.call("L1L2", **keywords(l1=(c.attrs["l1"], 0.0), l2=(c.attrs["l2"], 0.0))))
C.writes("Unfold", "unfold")(lambda c: P.call("unfold", c.inputs[0], *[c.attrs[k] for k in (
    "kernel_size", "dilation", "padding", "stride")]))
C.writes("OneHot", "jax.nn.one_hot")(  # PyTorch's one-hot vectors are int64 (int32 unless JAX enables x64)
    lambda c: P.call("jax.nn.one_hot", c.inputs[0], c.attrs["num_classes"], dtype=c.attrs.get("dtype", "int64")))


# random numbers drawn in the forward pass: from the rngs the module keeps (TargetSkeleton.random_source)
def _key() -> ast.expr:
    return P.call(P.name(f"self.{RNGS}"))


for _op, _fn_name in (("RandomUniform", "jax.random.uniform"), ("RandomNormal", "jax.random.normal")):
    C.writes(_op, _fn_name)(lambda c, f=_fn_name: P.call(f, _key(), shape_argument(c.attrs["shape"]),
                                                         **dtype_keyword(c)))
    C.writes(f"{_op}Like", _fn_name)(lambda c, f=_fn_name: P.call(f, _key(), _shape(c.inputs[0]),
                                                                  **dtype_keyword(c, like=c.inputs[0])))


@C.writes("Bernoulli", "jax.random.bernoulli")
def _bernoulli(c):
    """1 with probability p (or the input's values), in the input's shape and dtype."""
    x = c.inputs[0]
    drawn = P.call("jax.random.bernoulli", _key(), c.attrs["p"], _shape(x)) if known(c.attrs["p"]) is not None \
        else P.call("jax.random.bernoulli", _key(), x)
    return P.call("jnp.astype", drawn, ast.Attribute(x, "dtype", ast.Load()))


@C.writes("Dropout", "jax.random.bernoulli")
def _dropout(c):
    """A dropout applied while training (the source's flag): kept items scaled by 1 / (1 - rate)."""
    x, rate = c.inputs[0], c.attrs["ratio"]
    keep = P.lit(1.0 - known(rate)) if isinstance(known(rate), (int, float)) else P.binop(1.0, "-", rate)
    dropped = P.call("jnp.where", P.call("jax.random.bernoulli", _key(), keep, _shape(x)), P.binop(x, "/", keep), 0.0)
    return ast.IfExp(c.attrs["training"], dropped, x)
C.writes_call("LogSigmoid", "jax.nn.log_sigmoid")
C.writes_call("Softsign", "jax.nn.soft_sign")
C.writes_call("Glu", "jax.nn.glu", axis="axis")
C.writes("TopK", "jax.lax.top_k")(lambda c: write_top_k(c, "jax.lax.top_k"))
for _op, _fn_name in (("ReduceVar", "jnp.var"), ("ReduceStd", "jnp.std")):
    C.writes(_op, _fn_name)(lambda c, f=_fn_name: P.call(f, c.inputs[0], **keywords(
        axis=(c.attrs["axis"], None), ddof=(c.attrs["correction"], 0), keepdims=(c.attrs["keepdims"], False))))
for _op, _fn_name in (("Rsqrt", "jax.lax.rsqrt"), ("Erf", "jax.scipy.special.erf"), *ACTIVATIONS.items()):
    C.writes_call(_op, _fn_name)
C.writes_call("Elu", "nnx.elu", alpha="alpha")
activation_writers(C, "jnp", "nnx")
C.writes_call("LeakyRelu", "nnx.leaky_relu", negative_slope="alpha")
C.writes("Gelu", "nnx.gelu")(lambda c: P.call("nnx.gelu", c.inputs[0], **_gelu_keywords(c)))
for _op, _fn_name in (("Softmax", "nnx.softmax"), ("LogSoftmax", "nnx.log_softmax")):
    C.writes(_op, _fn_name)(lambda c, f=_fn_name: P.call(f, cast_first(c, lambda x, d: P.call("jnp.astype", x, d)),
                                                        axis=softmax_axis(c)))
C.writes("MaxPool", "nnx.max_pool")(lambda c: P.call(_pool("MaxPool", c.attrs), c.inputs[0]))
C.writes("AveragePool", "nnx.avg_pool")(lambda c: P.call(_pool("AveragePool", c.attrs), c.inputs[0]))
C.writes("Resize", "jax.image.resize")(lambda c: _upsampled(c.inputs[0], c.attrs))


# -- how Flax NNX model code is written --------------------------------------------------------------
def _nnx_sequential(items: ast.expr | None) -> ast.expr:
    """`nnx.Sequential(*items)`; None: an empty one, to add layers to."""
    layers = [] if items is None else items.elts if isinstance(items, ast.List) else [ast.Starred(items, ast.Load())]
    return P.call("nnx.Sequential", *layers)


_write_separable, _separable_weights = separable_conv_writer(
    _write_conv, _nnx_sequential,
    lambda layer, a: _with_activation(_channels_first(layer, a), a), conv_weights)
C.layer("(a depthwise then a 1x1 flax.nnx.Conv)", "SeparableConv", "", write=_write_separable,
        from_ir=_separable_weights)


def _nnx_weight(shape, kind, scale, trainable, name):
    """`nnx.Param(jnp.zeros(shape))`-like: its initial value (scaled by a constant) in a Param, or a Variable for
    a buffer; random values draw from the model's `rngs.params()`."""
    if kind in ("zeros", "ones"):
        value = P.call(f"jnp.{kind}", shape)
    else:
        value = P.call(f"jax.random.{kind}", P.call(P.name(f"{RNGS}.params")), shape)
    if scale is not None and kind != "zeros":
        value = P.binop(scale, "*", value)
    return P.call("nnx.Param" if trainable else "nnx.Variable", value)


def _nnx_first_call(bases, body, build, shapes):
    """Weights created from the input shapes on the first call: NNX modules may add variables outside `jax.jit`,
    so `__call__` runs the build method once (call the model once before jitting or porting it). A build that
    draws random values or makes layers keeps the model's `rngs` for it."""
    forward = next(f for f in body if isinstance(f, ast.FunctionDef) and f.name == "__call__")
    init = next((f for f in body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None)
    state = [P.assign_attr("self.built", P.lit(False))]
    sizes = {shape: P.name(f"{given}.shape") for shape, given in shapes.items()}
    if any(isinstance(n, ast.Name) and n.id == RNGS for n in ast.walk(build)):
        state.append(P.assign_attr(f"self.{RNGS}", P.name(RNGS)))
        sizes[RNGS] = P.name(f"self.{RNGS}")
    if init is None:
        body = [P.function("__init__", ["self"], state), *body]
    else:
        init.body.extend(state)
    run = [P.expr_stmt(P.method(P.name("self"), build.name, **sizes)), P.assign_attr("self.built", P.lit(True))]
    first = ast.If(ast.UnaryOp(ast.Not(), P.name("self.built")), run, [])
    forward.body.insert(1 if ast.get_docstring(forward) else 0, first)
    at = body.index(forward)
    return [*body[:at], build, *body[at:]]


HELPERS = {
    "ChannelDropout": definition(
        "class ChannelDropout(nnx.Module):\n"
        "    \"\"\"PyTorch's nn.Dropout1d/2d/3d: while training, whole channels dropped: the mask varies over\n"
        "    (N, C) of an input of rank `spatial` + 2, over its first axis otherwise (unbatched, as PyTorch reads\n"
        "    other ranks). `model.eval()` sets `deterministic`.\"\"\"\n\n"
        "    deterministic = False\n\n"
        "    def __init__(self, rate, spatial, *, rngs: nnx.Rngs):\n"
        "        self.rate = rate\n"
        "        self.spatial = spatial\n"
        "        self.rngs = rngs\n\n"
        "    def __call__(self, x):\n"
        "        if self.deterministic or self.rate == 0:\n"
        "            return x\n"
        "        kept = 2 if x.ndim == self.spatial + 2 else 1\n"
        "        shape = x.shape[:kept] + (1,) * (x.ndim - kept)\n"
        "        mask = jax.random.bernoulli(self.rngs(), 1.0 - self.rate, shape)\n"
        "        return jnp.where(mask, x / (1.0 - self.rate), 0.0)\n"),
    "keras_zero_padding": definition(
        "def keras_zero_padding(padding, rank):\n"
        "    \"\"\"Keras' ZeroPadding `padding` (an int, one width per spatial axis, or (before, after) pairs) as\n"
        "    (before, after) pairs.\"\"\"\n"
        "    if isinstance(padding, int):\n"
        "        padding = (padding,) * rank\n"
        "    return [(p, p) if isinstance(p, int) else tuple(p) for p in padding]\n"),
    "LayerNormOver": definition(
        "class LayerNormOver(nnx.Module):\n"
        "    \"\"\"A layer norm over the trailing axes `shape` covers, its scale and bias of that shape (PyTorch's\n"
        "    LayerNorm over several dims; nnx.LayerNorm's scale covers the last axis).\"\"\"\n\n"
        "    def __init__(self, shape, epsilon=1e-5, use_scale=True, use_bias=True):\n"
        "        self.axes = tuple(range(-len(shape), 0))\n"
        "        self.epsilon = epsilon\n"
        "        self.scale = nnx.Param(jnp.ones(shape)) if use_scale else nnx.data(None)\n"
        "        self.bias = nnx.Param(jnp.zeros(shape)) if use_bias else nnx.data(None)\n\n"
        "    def __call__(self, x):\n"
        "        mean = jnp.mean(x, axis=self.axes, keepdims=True)\n"
        "        var = jnp.mean(jnp.square(x - mean), axis=self.axes, keepdims=True)\n"
        "        y = (x - mean) * jax.lax.rsqrt(var + self.epsilon)\n"
        "        if self.scale is not None:\n"
        "            y = y * self.scale[...]\n"
        "        return y + self.bias[...] if self.bias is not None else y\n"),
    "ChannelsFirst": definition(
        "class ChannelsFirst(nnx.Module):\n"
        "    \"\"\"A channels-last Flax layer applied to channels-first data (docs/transpile.md: layout).\"\"\"\n\n"
        "    def __init__(self, layer):\n"
        "        self.layer = layer\n\n"
        "    def __call__(self, x):\n"
        "        return jnp.moveaxis(self.layer(jnp.moveaxis(x, 1, -1)), -1, 1)\n"),
    "Lazy": definition(
        "class Lazy(nnx.Module):\n"
        "    \"\"\"A layer whose input size is read from its first input, as Keras builds its layers: call the model\n"
        "    once (outside jax.jit) before using or porting it. `make(size, rngs=...)` builds the layer.\"\"\"\n\n"
        "    def __init__(self, make, axis=-1, *, rngs: nnx.Rngs):\n"
        "        self.make = make\n"
        "        self.axis = axis\n"
        "        self.rngs = rngs\n"
        "        self.layer = nnx.data(None)\n"
        "        self.use_running_average = None  # set by model.eval() / model.train(), passed on when built\n\n"
        "    def __call__(self, x):\n"
        "        if self.layer is None:\n"
        "            self.layer = self.make(x.shape[self.axis], rngs=self.rngs)\n"
        "            if self.use_running_average is not None and hasattr(self.layer, 'use_running_average'):\n"
        "                self.layer.use_running_average = self.use_running_average\n"
        "        return self.layer(x)\n"),
    "depthwise_conv": definition(
        "def depthwise_conv(in_features, depth_multiplier, kernel_size, *, rngs: nnx.Rngs, **options):\n"
        "    \"\"\"nnx.Conv with one group per input feature and `depth_multiplier` outputs each.\"\"\"\n"
        "    return nnx.Conv(in_features, in_features * depth_multiplier, kernel_size,\n"
        "                    feature_group_count=in_features, rngs=rngs, **options)\n"),
    "Bilinear": definition(bilinear_helper(
        "nnx.Module", "jnp", "nnx.Param(jax.random.uniform(rngs.params(), {shape}, minval=-bound, maxval=bound))",
        call="__call__", params=", *, rngs: nnx.Rngs", read="[...]")),
    "ChannelPReLU": definition(
        "class ChannelPReLU(nnx.Module):\n"
        "    \"\"\"PReLU with one slope per channel (axis 1) or one for all, as PyTorch's nn.PReLU.\"\"\"\n\n"
        "    def __init__(self, num_parameters=1, init=0.25):\n"
        "        self.slope = nnx.Param(jnp.full((num_parameters,), init))\n\n"
        "    def __call__(self, x):\n"
        "        slope = self.slope[...] if x.ndim < 2 else jnp.reshape(self.slope[...], (-1,) + (1,) * (x.ndim - 2))\n"
        "        return jnp.where(x >= 0, x, slope * x)\n"),
    "pretrained_embed": definition(
        "def pretrained_embed(weights, trainable, *, rngs):\n"
        "    \"\"\"An nnx.Embed starting from the table `weights` (PyTorch's nn.Embedding.from_pretrained); a frozen\n"
        "    table is an nnx.Variable, not an nnx.Param, so optimizers over the parameters leave it as it is.\"\"\"\n"
        "    weights = jnp.asarray(weights, dtype=jnp.float32)\n"
        "    embed = nnx.Embed(*weights.shape, embedding_init=lambda *_: weights, rngs=rngs)\n"
        "    if not trainable:\n"
        "        embed.embedding = nnx.Variable(embed.embedding.value)\n"
        "    return embed\n"),
    "L1L2": l1l2_helper("jnp"),
    "Penalized": definition(
        "class Penalized(nnx.Module):\n"
        "    \"\"\"A layer whose kernel and bias the Keras source regularised: Keras adds their penalties to the\n"
        "    training loss itself; here regularization_loss(model) sums them, to add to the loss.\"\"\"\n\n"
        "    def __init__(self, layer, kernel=None, bias=None):\n"
        "        self.layer = layer\n"
        "        self.kernel_penalty = kernel\n"
        "        self.bias_penalty = bias\n\n"
        "    def __call__(self, *args, **kwargs):\n"
        "        return self.layer(*args, **kwargs)\n\n"
        "    def penalty(self):\n"
        "        total = 0.0\n"
        "        for path, weight in nnx.to_flat_state(nnx.state(self.layer, nnx.Param)):\n"
        "            penalty = self.bias_penalty if path[-1] == 'bias' else self.kernel_penalty\n"
        "            if penalty is not None:\n"
        "                total = total + penalty(weight.value)\n"
        "        return total\n\n\n"
        "def regularization_loss(model):\n"
        "    \"\"\"The penalties of the Keras source's regularizers (its sum(model.losses)): add this to the training\n"
        "    loss.\"\"\"\n"
        "    return sum([m.penalty() for _, m in nnx.iter_graph(model) if isinstance(m, Penalized)])\n"),
    "EmbeddingBag": definition(
        "class EmbeddingBag(nnx.Module):\n"
        "    \"\"\"PyTorch's nn.EmbeddingBag: the mean, sum or max of the embeddings of each bag of ids, a row of a\n"
        "    2-D input or the run of a 1-D input that each of `offsets` starts (an empty bag gives zeros).\"\"\"\n\n"
        "    def __init__(self, num_embeddings, embedding_dim, mode='mean', *, rngs):\n"
        "        self.embedding = nnx.Embed(num_embeddings, embedding_dim, rngs=rngs)\n"
        "        self.mode = mode\n\n"
        "    def __call__(self, input, offsets=None):\n"
        "        rows = self.embedding(input)\n"
        "        if offsets is None:\n"
        "            return {'mean': jnp.mean, 'sum': jnp.sum, 'max': jnp.max}[self.mode](rows, axis=1)\n"
        "        bags = offsets.shape[0]\n"
        "        bag = jnp.searchsorted(offsets, jnp.arange(input.shape[0]), side='right') - 1\n"
        "        counts = jax.ops.segment_sum(jnp.ones_like(bag, dtype=rows.dtype), bag, num_segments=bags)[:, None]\n"
        "        if self.mode == 'max':\n"
        "            return jnp.where(counts > 0, jax.ops.segment_max(rows, bag, num_segments=bags), 0.0)\n"
        "        total = jax.ops.segment_sum(rows, bag, num_segments=bags)\n"
        "        return total if self.mode == 'sum' else total / jnp.maximum(counts, 1.0)\n"),
    "is_layer": definition(
        "def is_layer(value):\n"
        "    \"\"\"Whether `value` is a layer as this translation writes them: an nnx.Module, or a function (NNX's\n"
        "    activations are functions where PyTorch's are modules).\"\"\"\n"
        "    return isinstance(value, nnx.Module) or callable(value) and not isinstance(value, type)\n"),
    "unfold": definition(
        "def unfold(x, kernel_size, dilation=1, padding=0, stride=1):\n"
        "    \"\"\"PyTorch's F.unfold: the sliding blocks of x (N, C, H, W) as columns, (N, C * kh * kw, blocks),\n"
        "    each channel's kh * kw values together.\"\"\"\n"
        "    cols = jax.lax.conv_general_dilated_patches(\n"
        "        x, ntuple(kernel_size, 2), ntuple(stride, 2), [(p, p) for p in ntuple(padding, 2)],\n"
        "        rhs_dilation=ntuple(dilation, 2), dimension_numbers=('NCHW', 'OIHW', 'NCHW'))\n"
        "    return cols.reshape(cols.shape[0], cols.shape[1], -1)\n"),
    "ntuple": definition(
        "def ntuple(size, n):\n"
        "    \"\"\"An int-or-sequence size as an n-tuple, as PyTorch reads kernel sizes.\"\"\"\n"
        "    return tuple(size) if isinstance(size, (tuple, list)) else (size,) * n\n"),
}
HELPERS.update(pool_index_helpers("jnp", "jnp.astype"))
HELPERS.update(RECURRENT_HELPERS)
HELPERS.update(numpy_constants.HELPERS)
HELPERS.update(extract_patches_helper("transpose"))
C.writes("FFT", "jnp.fft.fftn")(lambda c: P.call("jnp.fft.fftn", c.inputs[0], **keywords(axes=(
    ast.Tuple([c.attrs["axes"]], ast.Load()) if isinstance(known(c.attrs["axes"]), int) else c.attrs["axes"], None))))
C.writes("Real", "jnp.real")(lambda c: P.call("jnp.real", c.inputs[0]))
C.writes("ExtractPatches", "extract_patches")(lambda c: P.call("extract_patches", c.inputs[0], c.attrs["size"]))
HELPERS.update(SPATIAL_PADDING_HELPER)
HELPERS.update(CEIL_MODE_PADDING_HELPER)
HELPERS.update(MERGE_HELPER)
HELPERS["functional_conv"] = definition(JAX_CONV)
C.writes("ConvFn", "functional_conv")(write_conv_function)
HELPERS.update(ATTENTION_HELPERS)
HELPERS.update(function_helpers(
    "jnp", "jax.lax.rsqrt", "jax.nn.softmax", "jnp.astype", random_source=RNGS,
    dropout="jnp.where(jax.random.bernoulli(rngs(), 1.0 - dropout_p, weights.shape), weights / (1.0 - dropout_p), "
            "0.0)"))

#: helper classes holding the layer that has the weights as `.layer`
WRAPPERS = ("ChannelsFirst", "Lazy", "Penalized")
#: helper classes that build their layer on the first call -> the attribute that is empty until then
BUILT_ON_FIRST_CALL = {"Lazy": "layer", "KerasRecurrent": "stack"}


class NnxWeights(WeightPort):
    def owns(self, obj) -> bool:
        from flax import nnx

        return isinstance(obj, nnx.Module)

    def variables(self, dst) -> dict[int, str]:
        from flax import nnx

        return {id(v): ".".join(map(str, path)) for path, v in nnx.iter_graph(dst)
                if isinstance(v, nnx.Variable) and not isinstance(v, nnx.RngState)}

    def members(self, dst) -> list | None:
        from flax import nnx

        if isinstance(dst, nnx.Sequential):
            return list(dst.layers)
        return list(dst) if isinstance(dst, (nnx.List, list, tuple)) else None

    def holders(self, dst) -> list:
        from flax import nnx

        if type(dst).__name__ in WRAPPERS and dst.layer is not None:
            return self.holders(dst.layer)
        if isinstance(dst, nnx.Sequential):
            return [h for layer in dst.layers if isinstance(layer, nnx.Module) and self.variables(layer)
                    for h in self.holders(layer)]
        return [dst]

    def unbuilt_hint(self, layer) -> str:
        from flax import nnx

        lazy = any(type(m).__name__ in BUILT_ON_FIRST_CALL and not getattr(m, BUILT_ON_FIRST_CALL[type(m).__name__])
                   for _, m in nnx.iter_modules(layer))
        return " (it holds layers built on the first call: call the model once to build it)" if lazy else ""

    def is_weight(self, obj) -> bool:
        from flax import nnx

        return isinstance(obj, nnx.Variable)

    def shape(self, variable) -> tuple:
        return tuple(variable.value.shape)

    def assign(self, variable, array) -> None:
        import jax.numpy as jnp

        variable.value = jnp.asarray(array, dtype=variable.value.dtype)


einops_functions(C)
C.weight_attributes = {"Embedding": {"embedding": ("W", False)},
                       "Dense": {"kernel": ("W", False), "bias": ("B", False)},
                       "Conv": {"kernel": ("W", "spatial_first"), "bias": ("B", False)},
                       "LayerNormalization": {"scale": ("scale", False), "bias": ("B", False)}}
C.config_attributes = {"Dense": {"in_features": "in_features", "out_features": "units"},
                       "Conv": {"in_features": "in_channels", "out_features": "filters"}, "Dropout": {"rate": "ratio"},
                       "Embedding": {"num_embeddings": "num_embeddings", "features": "embedding_dim"},
                       "LayerNormalization": {"epsilon": "epsilon"}} | {
    f"{rnn}Cell": {"hidden_size": "hidden_size"} for rnn in ("LSTM", "GRU", "RNN")}  # as TorchCell keeps it

C.skeleton = TargetSkeleton(
    sequential_layers="layers",
    layer_base="nnx.Module", forward="__call__",
    imports=(P.import_("itertools"), P.import_("math"), P.import_("jax"), P.import_("jax.numpy", "jnp"),
             P.from_import("flax", ["nnx"]), P.import_("einops"), P.from_import("functools", ["partial"]),
             P.import_("numpy", "np")),
    init_tensors=numpy_constants.TABLE,
    class_layer=lambda layer: P.call("staticmethod", layer),
    # NNX modules take NumPy arrays as they are (Keras and PyTorch convert or require tensors)
    is_tensor=lambda value: P.call("isinstance", value, ast.Tuple([P.name("jax.Array"), P.name("np.ndarray")],
                                                                 ast.Load())),
    constant_weight=lambda value, trainable, name: P.call("nnx.Param" if trainable else "nnx.Variable",
                                                          P.call("jnp.asarray", as_float32(value))),
    constant=lambda value: P.call("jnp.asarray", as_float32(value)),
    sequential=_nnx_sequential, add_weight=_nnx_weight, helpers=HELPERS, port=NnxWeights(),
    module_list=lambda items: P.call("nnx.List", items), module_dict=lambda items: P.call("nnx.Dict", items),
    empty_layer=lambda none: P.call("nnx.data", none), array_data=lambda value: P.call("nnx.data", value),
    function_layer=lambda fn: fn,
    init_argument=(RNGS, "nnx.Rngs"),
    training="deterministic",
    random_source=f"self.{RNGS}",
    first_call=_nnx_first_call,
    wrappers=frozenset(WRAPPERS),
    penalized=lambda layer, penalties: P.call("Penalized", layer, **penalties),
    is_layer=lambda value: P.call("is_layer", value),
    slice_update=lambda x, index, value: P.method(
        ast.Subscript(ast.Attribute(x, "at", ast.Load()), index, ast.Load()), "set", value),
    sequential_append=lambda container, layer: P.method(ast.Attribute(container, "layers", ast.Load()), "append",
                                                        layer),
    weight_value=lambda weight: ast.Subscript(weight, ast.Constant(Ellipsis), ast.Load()),
    reserved_names=frozenset({"jax", "jnp", "nnx", "np", "partial", RNGS, *HELPERS}),
    reserved_attributes=frozenset({"eval", "train", "sow", "perturb", "set_attributes", "iter_children",
                                   "iter_modules", "deterministic", RNGS}))

"""IR ops -> PyTorch model code, as the transpiler writes it (see rules/code.py): `torch.nn` constructors for
layer ops, `torch` / `torch.nn.functional` calls for the rest, and each layer's weights from the IR op's roles.
The rows sit on the same table as the readers (rules/torch/code.py).

A layer whose input size the source leaves to the first call (Keras) is written as the Lazy module that does
the same (`nn.LazyConv2d`, `nn.LazyLinear`, `nn.LazyBatchNorm1d`; a `LazyLayerNorm` helper where torch has
none): build the translated model by calling it once, as the Keras one is built.

Layout: the translation keeps the source's layout. On channels-last data, torch's channels-first layers are
wrapped in the module's `ChannelsLast` helper, which moves the last axis to 1 around the layer and back, and
a channel norm runs on the (N, C) view its `OnAxis` helper makes; every axis means what it meant in the source.
"""

from __future__ import annotations

import ast
import copy

import numpy as np

from tensorbridge.codegen import pyast as P
from tensorbridge.rules import numpy_constants
from tensorbridge.rules.code import (
    COMPARISONS,
    DTYPE_NAMES,
    NOT_LITERAL,
    Refused,
    TargetSkeleton,
    WeightPort,
    definition,
    holds_dtype,
    is_empty_literal,
    keywords,
    known,
    l1l2_helper,
    pairs,
    range_bounds,
    shrink_kind,
    with_activation,
    write_matmul,
)
from tensorbridge.rules.numpy_code import (
    MERGE_HELPER,
    attention_helper,
    extract_patches_helper,
    nnx_einsum_weights,
    separable_conv_writer,
    write_dot_product_attention,
    write_image_resize,
    write_merge,
    write_merge_arithmetic,
    write_nnx_einsum,
)
from tensorbridge.rules.numpy_constants import as_float32
from tensorbridge.rules.torch.code import CONV_WEIGHTS, EMBEDDING_WEIGHTS, NORM_WEIGHTS, C
from tensorbridge.rules.torch.code_attention import HELPERS as ATTENTION_HELPERS
from tensorbridge.rules.torch.code_attention import linear_projection_weights
from tensorbridge.rules.torch.code_recurrent import HELPERS as RECURRENT_HELPERS
from tensorbridge.rules.torch.code_recurrent import recurrent_weights, write_recurrent

NN = "nn."


def _channels_last(layer: ast.expr, attrs) -> ast.expr:
    return P.call("ChannelsLast", layer) if attrs.get("layout") == "channels_last" else layer


def _with_activation(layer: ast.expr, attrs) -> ast.expr:
    return with_activation(C, layer, attrs, lambda *layers: P.call("nn.Sequential", *layers))


def _size(value):
    """An int-or-tuple size argument, a tuple of one repeated int written as that int (`(1, 1)` -> `1`)."""
    v = known(value)
    if isinstance(v, (tuple, list)) and v and len(set(v)) == 1 and isinstance(v[0], int):
        return v[0]
    return value


def _lazy(name: str, size, *args, **kwargs) -> ast.expr:
    """`nn.<Name>(size, ...)`, or `nn.Lazy<Name>(...)` when the source leaves the input size to the first call."""
    if known(size) is None:
        return P.call(f"nn.Lazy{name}", *args, **kwargs)
    return P.call(f"nn.{name}", size, *args, **kwargs)


# -- layers ------------------------------------------------------------------------------------------
def _conv_padding(a, rank):
    """torch's padding for the source's: symmetric pads as they are, "same" as "same" at stride 1; None for a
    strided "same", which the `PadSame` helper computes from the input size."""
    pads = known(a["pads"])
    if pads == "valid":
        return 0
    if pads == "same":
        return "same" if pairs(a["strides"], rank) == (1,) * rank else None
    return a["pads"]


def _write_conv(call):
    a, rank = call.attrs, call.attrs["rank"]
    padding = _conv_padding(a, rank)
    kwargs = keywords(stride=(_size(a["strides"]), 1), padding=(_size(padding if padding is not None else 0), 0),
                      dilation=(_size(a["dilations"]), 1), bias=(a["bias"], True))
    if "depth_multiplier" in a:  # a group per input channel, whose count the source leaves to the first call
        if rank not in (1, 2):
            raise Refused(f"a {rank}-D depthwise convolution (only 1-D and 2-D ones are translated)")
        conv = P.call(f"LazyDepthwiseConv{rank}d", a["depth_multiplier"], _size(a["kernel_shape"]), **kwargs)
    else:
        conv = _lazy(f"Conv{rank}d", a["in_channels"], a["filters"], _size(a["kernel_shape"]),
                     **kwargs, **keywords(groups=(a["group"], 1)))
    if padding is None:
        conv = P.call("PadSame", conv)
    return _with_activation(_channels_last(conv, a), a)


def _transposed_padding(a, rank):
    """(padding, output_padding, the spatial dims to drop the last row of) of torch's ConvTranspose for the
    source's "same"/"valid" or symmetric pads. Keras' "same" crops (k - s) // 2 before and the rest after; torch
    crops `padding` on both sides (and adds `output_padding` after): when k - s is odd, one more row is dropped at
    the end of that dim."""
    pads = known(a["pads"])
    if pads == "valid":
        return 0, a.get("output_padding"), ()
    if pads != "same":
        return a["pads"], a.get("output_padding"), ()
    k, s, d = pairs(a["kernel_shape"], rank), pairs(a["strides"], rank), pairs(a["dilations"], rank)
    if NOT_LITERAL in (k, s, d):
        raise Refused("padding='same' on a transposed convolution of unknown kernel size, strides or dilation")
    k = tuple(dd * (kk - 1) + 1 for kk, dd in zip(k, d))  # the dilated kernel's extent
    if any(kk < ss for kk, ss in zip(k, s)):
        raise Refused("padding='same' on a transposed convolution whose kernel is smaller than its stride")
    if known(a.get("output_padding")) is not None:
        raise Refused("output_padding with padding='same'")
    padding = tuple((kk - ss) // 2 for kk, ss in zip(k, s))
    cropped = tuple(i for i, (kk, ss) in enumerate(zip(k, s)) if (kk - ss) % 2)
    return (padding[0] if len(set(padding)) == 1 else padding), 0, cropped


def _without_last_rows(layer: ast.expr, dims: tuple, rank: int) -> ast.expr:
    """`layer` followed by dropping the last row of each of the spatial `dims` (channels-first)."""
    t = P.name("t")
    index = ast.Tuple([ast.Constant(...), *[ast.Slice(None, P.lit(-1) if d in dims else None) for d in range(rank)]],
                      ast.Load())
    return P.call("nn.Sequential", layer, P.call("Lambda", P.lambda_(["t"], ast.Subscript(t, index, ast.Load()))))


def _write_conv_transpose(call):
    a, rank = call.attrs, call.attrs["rank"]
    padding, output_padding, cropped = _transposed_padding(a, rank)
    kwargs = keywords(stride=(_size(a["strides"]), 1), padding=(_size(padding), 0),
                      output_padding=(_size(output_padding), 0), groups=(a["group"], 1), bias=(a["bias"], True),
                      dilation=(_size(a["dilations"]), 1))
    if known(kwargs.get("output_padding", 0)) is None:
        del kwargs["output_padding"]
    conv = _lazy(f"ConvTranspose{rank}d", a["in_channels"], a["filters"], _size(a["kernel_shape"]), **kwargs)
    if cropped:
        conv = _without_last_rows(conv, cropped, rank)
    return _with_activation(_channels_last(conv, a), a)


C.layer("torch.nn.LazyConv2d", "Conv", "", write=_write_conv, from_ir=CONV_WEIGHTS.from_ir)
C.layer("torch.nn.LazyConvTranspose2d", "ConvTranspose", "", write=_write_conv_transpose, from_ir=CONV_WEIGHTS.from_ir)
C.layer("torch.nn.LazyLinear", "Dense", "",
        write=lambda c: _with_activation(_lazy("Linear", c.attrs["in_features"], c.attrs["units"],
                                               **keywords(bias=(c.attrs["bias"], True))), c.attrs),
        from_ir=lambda w, attrs: {"weight": np.ascontiguousarray(w["W"].T), **({"bias": w["B"]} if "B" in w else {})})


def _affine(a) -> dict:
    """torch's elementwise_affine/affine for the source's scale and bias flags (both or neither)."""
    scale, bias = known(a.get("affine", True)), known(a.get("bias", True))
    if scale is NOT_LITERAL or bias is NOT_LITERAL:
        raise Refused("scale/center given by a variable")
    if scale != bias:
        raise Refused("a norm with a scale but no offset, or the reverse (torch's norms have both or neither)")
    return scale


def _momentum(a):
    """torch's momentum (the weight of the new batch) for the IR's (the weight of the running value)."""
    m = known(a["momentum"])
    if isinstance(m, (int, float)):
        return float(f"{1 - m:.12g}")
    return P.binop(1, "-", a["momentum"])


def _write_batch_norm(c):
    a = c.attrs
    kwargs = keywords(eps=(a["epsilon"], 1e-5), momentum=(_momentum(a), 0.1), affine=(_affine(a), True))
    return P.call("OnAxis", _lazy("BatchNorm1d", a["num_features"], **kwargs), **keywords(axis=(a["axis"], -1)))


def _write_layer_norm(c):
    a = c.attrs
    if known(a["axis"]) != -1:
        raise Refused("LayerNorm over several axes")
    kwargs = keywords(eps=(a["epsilon"], 1e-5), elementwise_affine=(_affine(a), True))
    if known(a["normalized_shape"]) is None:
        return P.call("LazyLayerNorm", **kwargs)
    return P.call("nn.LayerNorm", a["normalized_shape"], **kwargs)


def _write_group_norm(c):
    a = c.attrs
    axis = known(a["axis"])
    if axis not in (1, -1):
        raise Refused("a GroupNorm whose channels are neither axis 1 nor the last axis")
    options = keywords(eps=(a["epsilon"], 1e-5), affine=(_affine(a), True))
    norm = P.call("nn.GroupNorm", a["num_groups"], a["num_channels"], **options) if known(
        a["num_channels"]) is not None else P.call("LazyGroupNorm", a["num_groups"], **options)
    return P.call("ChannelsLast", norm) if axis == -1 else norm


C.layer("torch.nn.LazyBatchNorm1d", "BatchNormalization", "", write=_write_batch_norm, from_ir=NORM_WEIGHTS.from_ir)
C.layer("torch.nn.GroupNorm", "GroupNormalization", "", write=_write_group_norm, from_ir=NORM_WEIGHTS.from_ir)
C.layer("torch.nn.LayerNorm", "LayerNormalization", "", write=_write_layer_norm, from_ir=NORM_WEIGHTS.from_ir)


def _write_rms_norm(c):
    if known(c.attrs["features"]) is None:
        return P.call("LazyRMSNorm", eps=c.attrs["epsilon"])
    return P.call("nn.RMSNorm", c.attrs["features"], eps=c.attrs["epsilon"])


C.layer("torch.nn.RMSNorm", "RMSNormalization", "", write=_write_rms_norm, from_ir=NORM_WEIGHTS.from_ir)
C.layer("torch.nn.Embedding", "Embedding", "",
        write=lambda c: P.call("nn.Embedding", c.attrs["num_embeddings"], c.attrs["embedding_dim"]),
        from_ir=EMBEDDING_WEIGHTS.from_ir)
C.layer("torch.nn.Dropout", "Dropout", "", write=lambda c: _channels_last(P.call(
    f"nn.Dropout{c.attrs['spatial']}d" if c.attrs.get("spatial") else "nn.Dropout",
    **keywords(p=(c.attrs["ratio"], 0.5))), c.attrs))
C.layer("torch.nn.Identity", "Identity", "", write=lambda c: P.call("nn.Identity"))
C.layer("torch.nn.Flatten", "Flatten", "", write=lambda c: P.call("nn.Flatten"))

#: IR activation op -> torch.nn layer class (no arguments)
ACTIVATION_LAYERS = {"Relu": "ReLU", "Sigmoid": "Sigmoid", "Tanh": "Tanh", "SiLU": "SiLU", "Relu6": "ReLU6",
                     "HardSigmoid": "Hardsigmoid", "HardSwish": "Hardswish", "Mish": "Mish", "Softplus": "Softplus"}
for _op, _cls in ACTIVATION_LAYERS.items():
    C.layer(f"torch.nn.{_cls}", _op, "", write=lambda c, cls=_cls: P.call(f"nn.{cls}"))


def _gelu_approximate(c):
    approximate = known(c.attrs["approximate"])
    if approximate not in ("none", "tanh"):
        raise Refused("GELU approximate given by a variable")
    return approximate


def _axis(c):
    if known(c.attrs["axis"]) is None:
        raise Refused("softmax without an axis")
    return c.attrs["axis"]


C.layer("torch.nn.GELU", "Gelu", "",
        write=lambda c: P.call("nn.GELU", **keywords(approximate=(_gelu_approximate(c), "none"))))
C.layer("torch.nn.LeakyReLU", "LeakyRelu", "", write=lambda c: P.call("nn.LeakyReLU", c.attrs["alpha"]))
C.layer("torch.nn.ELU", "Elu", "", write=lambda c: P.call("nn.ELU", **keywords(alpha=(c.attrs["alpha"], 1.0))))
C.layer("torch.nn.Softmax", "Softmax", "", write=lambda c: P.call("nn.Softmax", dim=_axis(c)))
C.layer("torch.nn.LogSoftmax", "LogSoftmax", "", write=lambda c: P.call("nn.LogSoftmax", dim=_axis(c)))


def _write_pool(c):
    a, rank = c.attrs, c.attrs["rank"]
    kind = "Max" if c.op == "MaxPool" else "Avg"
    same_stride = known(a["strides"]) == known(a["kernel_shape"]) and known(a["strides"]) is not NOT_LITERAL
    stride = {} if same_stride else {"stride": _size(a["strides"])}  # variables: given, whatever they hold
    if known(a["pads"]) == "same":
        if kind == "Avg":
            raise Refused("padding='same' on an average pool (the padding is left out of each average, which "
                          "torch's pools do only for symmetric padding)")
        pool = P.call("PadSame", P.call(f"nn.MaxPool{rank}d", _size(a["kernel_shape"]), **stride),
                      value=P.call("float", "-inf"))
        return _channels_last(pool, a)
    pool = P.call(f"nn.{kind}Pool{rank}d", _size(a["kernel_shape"]), **stride, **keywords(padding=(a["pads"], 0)),
                  **_ceil_mode(a))
    return _channels_last(pool, a)


def _ceil_mode(a) -> dict:
    return {"ceil_mode": True} if a.get("ceil_mode") else {}


def _pool_function(c):
    """F.max_pool2d / F.avg_pool2d, on channels-last data between two movedims."""
    a, rank, x = c.attrs, c.attrs["rank"], c.inputs[0]
    kind = "max" if c.op == "MaxPool" else "avg"
    if known(a["pads"]) == "same":
        raise Refused("padding='same' on a pool function (written for the pool layers only)")
    if a.get("layout") == "channels_last":
        x = P.method(x, "movedim", -1, 1)
    pooled = P.call(f"F.{kind}_pool{rank}d", x, _size(a["kernel_shape"]), _size(a["strides"]),
                    **keywords(padding=(_size(a["pads"]), 0)), **_ceil_mode(a))
    return P.method(pooled, "movedim", 1, -1) if a.get("layout") == "channels_last" else pooled


C.writes("MaxPool", "F.max_pool2d")(_pool_function)
C.writes("AveragePool", "F.avg_pool2d")(_pool_function)


def _write_global_pool(c):
    a, rank = c.attrs, c.attrs["rank"]
    pool = _channels_last(P.call(f"nn.Adaptive{'Avg' if c.op == 'GlobalAveragePool' else 'Max'}Pool{rank}d", 1), a)
    keep = known(a["keepdims"])
    if keep is NOT_LITERAL:
        raise Refused("keepdims given by a variable")
    return pool if keep else P.call("nn.Sequential", pool, P.call("nn.Flatten"))


C.layer("torch.nn.MaxPool2d", "MaxPool", "", write=_write_pool)
C.layer("torch.nn.AvgPool2d", "AveragePool", "", write=_write_pool)
C.layer("torch.nn.AdaptiveAvgPool2d", "GlobalAveragePool", "", write=_write_global_pool)
C.layer("torch.nn.AdaptiveMaxPool2d", "GlobalMaxPool", "", write=_write_global_pool)


def _write_upsample(c):
    a = c.attrs
    mode = known(a["mode"])
    return _channels_last(P.call("nn.Upsample", scale_factor=a["scale"], mode=mode), a)


def _write_zero_pad(c):
    """nn.ZeroPad{1,2}d takes (left, right[, top, bottom]): the last axis' pair first."""
    a, rank = c.attrs, c.attrs["rank"]
    if rank not in (1, 2):
        raise Refused(f"{rank}-D zero padding")
    if "padding" in a:  # Keras' padding held by a variable: read when it runs
        return _channels_last(P.call(f"nn.ZeroPad{rank}d", P.call("keras_zero_padding", a["padding"], rank)), a)
    flat = ast.Tuple([P.lit(known(v)) if known(v) is not NOT_LITERAL else v
                      for pair in reversed(a["pads"]) for v in pair], ast.Load())
    return _channels_last(P.call(f"nn.ZeroPad{rank}d", flat), a)


for _op in ("LSTM", "GRU", "RNN"):
    C.layer("(a Keras-style recurrent helper)", _op, "", write=write_recurrent, from_ir=recurrent_weights)
for _helper in ("KerasMultiHeadAttention", "NnxMultiHeadAttention"):  # the code op is the helper's name
    C.layer("(an attention helper)", _helper, "", write=attention_helper(_helper), from_ir=linear_projection_weights)
C.layer("(an nnx.LinearGeneral helper)", "LinearGeneral", "", write=lambda c: P.call(
    "LinearGeneral", c.attrs["in_features"], c.attrs["out_features"], **keywords(bias=(c.attrs["bias"], True))),
    from_ir=lambda w, attrs: {"weight": np.ascontiguousarray(w["W"].T), **({"bias": w["B"]} if "B" in w else {})})
C.layer("(an nnx.Einsum helper)", "NnxEinsum", "", write=write_nnx_einsum, from_ir=nnx_einsum_weights)
C.layer("torch.nn.Upsample", "Resize", "", write=_write_upsample)
C.layer("torch.nn.ZeroPad2d", "Pad", "", write=_write_zero_pad)


# -- functions ---------------------------------------------------------------------------------------
#: NumPy's pad modes -> F.pad's
F_PAD_MODES = {"constant": "constant", "reflect": "reflect", "edge": "replicate", "wrap": "circular"}


@C.writes("Pad", "F.pad")
def _pad_function(c):
    """F.pad of the trailing dims' (before, after) pairs, from the first one not all zeros (F.pad's reflect and
    replicate modes pad the last two or three dims only), flattened last dim first."""
    a = c.attrs
    mode = a.get("mode", "constant")
    if mode not in F_PAD_MODES:
        raise Refused(f"F.pad has no {mode!r} mode")
    pairs_ = [list(p.elts) if isinstance(p, (ast.List, ast.Tuple)) else None for p in a["trailing_pads"]]
    if any(p is None for p in pairs_):
        raise Refused("pad widths given by a variable")
    while pairs_ and all(known(v) == 0 for v in pairs_[0]):
        pairs_.pop(0)
    flat = [v for pair in reversed(pairs_) for v in pair]
    if not flat:
        return c.inputs[0]
    options = {"mode": F_PAD_MODES[mode]} if mode != "constant" else keywords(value=(a["value"], 0.0))
    return P.call("F.pad", c.inputs[0], flat, **options)


for _op, _fn_name in (("Relu", "torch.relu"), ("Sigmoid", "torch.sigmoid"), ("Tanh", "torch.tanh"),
                      ("Exp", "torch.exp"), ("Log", "torch.log"), ("Sqrt", "torch.sqrt"), ("Rsqrt", "torch.rsqrt"),
                      ("Abs", "torch.abs"), ("Neg", "torch.neg"), ("Sin", "torch.sin"), ("Cos", "torch.cos"),
                      ("Erf", "torch.erf"), ("Floor", "torch.floor"), ("Ceil", "torch.ceil"),
                      ("Square", "torch.square"), ("Sign", "torch.sign"), ("Round", "torch.round"),
                      ("LogSigmoid", "F.logsigmoid"), ("Softsign", "F.softsign"), ("SiLU", "F.silu"),
                      ("Relu6", "F.relu6"),
                      ("HardSigmoid", "F.hardsigmoid"), ("HardSwish", "F.hardswish"), ("Mish", "F.mish"),
                      ("Softplus", "F.softplus"), ("Pow", "torch.pow"), ("Where", "torch.where")):
    C.writes_call(_op, _fn_name)
write_matmul(C, "torch.matmul")
for _op, _symbol in (("Add", "+"), ("Sub", "-"), ("Mul", "*"), ("Div", "/")):
    C.writes(_op, f"(the {_symbol} operator)")(lambda c, s=_symbol: P.binop(c.inputs[0], s, c.inputs[1]))


def _extremum(op: str, fn: str, bound: str):
    """torch.maximum / torch.minimum, which take two tensors; with a number, torch.clamp at that bound."""
    @C.writes(op, fn)
    def write(c):
        x, y = c.inputs
        for tensor, number in ((x, y), (y, x)):
            if isinstance(known(number), (int, float)):
                return P.call("torch.clamp", tensor, **{bound: number})
        return P.call(fn, x, y)


_extremum("Max", "torch.maximum", "min")
_extremum("Min", "torch.minimum", "max")
for _op, (_, _name) in COMPARISONS.items():
    C.writes_call(_op, f"torch.{_name}")
C.writes_call("Not", "torch.logical_not")
C.writes_call("Elu", "F.elu", alpha="alpha")


C.writes("NanToNum", "torch.nan_to_num")(lambda c: P.call("torch.nan_to_num", c.inputs[0], **keywords(
    nan=(c.attrs["nan"], 0.0), posinf=(c.attrs["posinf"], None), neginf=(c.attrs["neginf"], None))))


@C.writes("Shrink", "F.softshrink")
def _shrink(c):
    """F.hardshrink / F.softshrink where the bias is 0 / lambd, else the three cases written out."""
    x, lambd, bias = c.inputs[0], c.attrs["lambd"], c.attrs["bias"]
    kind = shrink_kind(c)
    if kind is not None:
        return P.call(f"F.{kind}shrink", x, *([] if known(lambd) == 0.5 else [lambd]))
    return P.call("torch.where", P.binop(x, "<", P.neg(lambd)), P.binop(x, "+", bias),
                  P.call("torch.where", P.binop(x, ">", lambd), P.binop(x, "-", bias), 0.0))

C.writes_call("LeakyRelu", "F.leaky_relu", negative_slope="alpha")
C.writes("Gelu", "F.gelu")(lambda c: P.call("F.gelu", c.inputs[0],
                                            **keywords(approximate=(_gelu_approximate(c), "none"))))
C.writes("Softmax", "torch.softmax")(lambda c: P.call("torch.softmax", c.inputs[0], dim=_axis(c)))
C.writes("LogSoftmax", "torch.log_softmax")(lambda c: P.call("torch.log_softmax", c.inputs[0], dim=_axis(c)))
C.writes_call("Concat", "torch.cat", dim="axis")
C.writes_call("Stack", "torch.stack", dim="axis")
C.writes("TensorIndex", "(indexing)")(lambda c: P.subscript(c.inputs[0], c.inputs[1]))
C.writes("DType", "Tensor.dtype")(lambda c: ast.Attribute(c.inputs[0], "dtype", ast.Load()))
C.writes("IsCuda", "Tensor.is_cuda")(lambda c: ast.Attribute(c.inputs[0], "is_cuda", ast.Load()))
C.writes("AsTensor", "torch.as_tensor")(lambda c: c.inputs[0] if isinstance(c.inputs[0], ast.Call) and ast.unparse(
    c.inputs[0].func) == "torch.as_tensor" else P.call("torch.as_tensor", c.inputs[0]))  # a number made one already
C.writes("ConvFn", "F.conv2d")(lambda c: P.call(f"F.conv{c.attrs['rank']}d", *c.inputs[:2], **keywords(
    bias=(c.inputs[2], None), stride=(c.attrs["stride"], 1), padding=(c.attrs["padding"], 0),
    dilation=(c.attrs["dilation"], 1), groups=(c.attrs["groups"], 1))))
C.writes("Regularizer", "L1L2")(lambda c: P.call("L1L2", **keywords(l1=(c.attrs["l1"], 0.0), l2=(c.attrs["l2"], 0.0))))
C.writes("OneHot", "F.one_hot")(lambda c: P.call("F.one_hot", c.inputs[0], c.attrs["num_classes"]) if c.attrs.get(
    "dtype", "int64") == "int64" else P.method(P.call("F.one_hot", c.inputs[0], c.attrs["num_classes"]), "to",
                                           _dtype(c.attrs["dtype"])))
C.writes("ReshapeItems", "Tensor.reshape")(lambda c: P.method(c.inputs[0], "reshape", P.subscript(
    ast.Attribute(c.inputs[0], "shape", ast.Load()), 0), ast.Starred(c.attrs["shape"], ast.Load())))
C.writes("Merge", "merge")(lambda c: write_merge(c, lambda name: {"multiply": "torch.mul"}.get(name, f"torch.{name}")))
write_merge_arithmetic(C)
C.writes("Item", "Tensor.item")(lambda c: P.method(c.inputs[0], "item"))
C.writes("Linspace", "torch.linspace")(lambda c: P.call("torch.linspace", c.attrs["start"], c.attrs["stop"],
                                                        c.attrs["num"], **_dtype_keyword(c)))
C.writes("MeshGrid", "torch.meshgrid")(lambda c: P.call("torch.meshgrid", *c.inputs[0], indexing=c.attrs["indexing"]))
C.writes_call("SwapAxes", "torch.transpose", "axis1", "axis2")
C.writes_call("Unsqueeze", "torch.unsqueeze", "axis")
C.writes("Einsum", "torch.einsum")(lambda c: P.call("torch.einsum", c.attrs["equation"], *c.inputs[0]))
C.writes("Split", "torch.tensor_split")(
    lambda c: P.call("torch.tensor_split", c.inputs[0], c.attrs["sections"], **keywords(dim=(c.attrs["axis"], 0))))
C.writes("Unflatten", "Tensor.unflatten")(
    lambda c: P.method(c.inputs[0], "unflatten", c.attrs["dim"], c.attrs["sizes"]))
C.writes("Reshape", "torch.reshape")(lambda c: P.call("torch.reshape", c.inputs[0], _sequence(c.attrs["shape"])))
C.writes("Tril", "torch.tril")(lambda c: P.call("torch.tril", c.inputs[0], **keywords(diagonal=(c.attrs["k"], 0))))
C.writes("Expand", "Tensor.expand")(lambda c: P.method(c.inputs[0], "expand", _sequence(c.attrs["sizes"])))
C.writes("LpNormalize", "F.normalize")(
    lambda c: P.call("F.normalize", c.inputs[0], dim=c.attrs["axis"], eps=c.attrs["epsilon"]))
C.writes("Range", "torch.arange")(lambda c: P.call("torch.arange", *range_bounds(c.attrs), **_dtype_keyword(c)))
@C.writes("ConstantOfShape", "torch.full")
def _constant(c):
    shape, value = _sequence(c.attrs["shape"]), known(c.attrs["value"])
    if value in (0.0, 1.0):
        return P.call("torch.ones" if value else "torch.zeros", shape, **_dtype_keyword(c))
    return P.call("torch.full", shape, c.attrs["value"], **_dtype_keyword(c))
C.writes("Rank", "Tensor.dim")(lambda c: P.method(c.inputs[0], "dim"))
C.writes("Identity", "(the input itself)")(lambda c: c.inputs[0])
C.writes_call("Reciprocal", "torch.reciprocal")
C.writes("Dot", "torch.tensordot")(lambda c: P.call(  # NumPy's dot: a's last axis with b's second to last (or only)
    "torch.tensordot", *c.inputs, dims=ast.Tuple([ast.List([P.binop(P.method(c.inputs[0], "dim"), "-", 1)],
                                                            ast.Load()),
                                                  ast.List([P.call("max", P.binop(P.method(c.inputs[1], "dim"), "-", 2),
                                                                   0)], ast.Load())], ast.Load())))
C.writes("Tile", "torch.tile")(lambda c: P.call("torch.tile", c.inputs[0], c.attrs["repeats"] if isinstance(
    c.attrs["repeats"], (ast.Tuple, ast.List)) else P.call("tuple", c.attrs["repeats"])))  # a tensor's: its items
C.writes("TopK", "torch.topk")(lambda c: P.call("torch.topk", c.inputs[0], c.attrs["k"], **keywords(
    dim=(c.attrs.get("axis", -1), -1), largest=(c.attrs.get("largest", True), True))))
C.writes_call("Unstack", "torch.unbind", dim="axis")
C.writes("DotProductAttention", "dot_product_attention")(write_dot_product_attention)
C.writes("CausalMask", "make_causal_mask")(lambda c: P.call("make_causal_mask", c.inputs[0], **keywords(
    extra_batch_dims=(c.attrs["extra_batch_dims"], 0)), **({"dtype": _dtype(c.attrs["dtype"])} if known(
        c.attrs["dtype"]) is not None else {})))
C.writes("ImageResize", "resize")(write_image_resize)
C.writes("CumSum", "torch.cumsum")(lambda c: P.call("torch.cumsum", c.inputs[0], dim=c.attrs["axis"], **(
    {"dtype": _dtype(c.attrs["dtype"])} if known(c.attrs.get("dtype")) is not None else {})))
C.writes_call("Glu", "F.glu", dim="axis")
C.writes_call("Roll", "torch.roll", "shifts", dims="axes")
C.writes("Triu", "torch.triu")(lambda c: P.call("torch.triu", c.inputs[0], **keywords(diagonal=(c.attrs["k"], 0))))
C.writes("Repeat", "torch.repeat_interleave")(lambda c: P.call(
    "torch.repeat_interleave", c.inputs[0], c.attrs["repeats"], **keywords(dim=(c.attrs["axis"], None))))
C.writes("Take", "torch.index_select")(lambda c: P.call("torch.index_select", c.inputs[0], c.attrs["axis"],
                                                        c.inputs[1]))
C.writes("StopGradient", "Tensor.detach")(lambda c: P.method(c.inputs[0], "detach"))
for _op, _fn_name in (("ArgMax", "torch.argmax"), ("ArgMin", "torch.argmin")):
    C.writes(_op, _fn_name)(lambda c, f=_fn_name: P.call(f, c.inputs[0], **keywords(
        dim=(c.attrs["axis"], None), keepdim=(c.attrs["keepdims"], False))))
C.writes("ReduceL2", "torch.linalg.vector_norm")(lambda c: P.call("torch.linalg.vector_norm", c.inputs[0], **keywords(
    dim=(c.attrs["axis"], None), keepdim=(c.attrs["keepdims"], False))))
for _op, _fn_name in (("ReduceVar", "torch.var"), ("ReduceStd", "torch.std")):
    C.writes(_op, _fn_name)(lambda c, f=_fn_name: P.call(f, c.inputs[0], **keywords(
        dim=(c.attrs["axis"], None)), correction=c.attrs["correction"],
        **keywords(keepdim=(c.attrs["keepdims"], False))))


def _dtype(name) -> ast.expr:
    """A dtype the code names ("float32") as torch's (`torch.float32`); another tensor's (`x.dtype`) as it is; one
    given by a variable (a Keras or NumPy dtype name at run time) through the `torch_dtype` helper."""
    if holds_dtype(name):
        return name
    if known(name) is NOT_LITERAL:
        return P.call("torch_dtype", name)
    if known(name) not in DTYPE_NAMES:
        raise Refused(f"dtype {known(name)!r}")
    return P.name(f"torch.{known(name)}")


C.writes("CrossEntropy", "F.cross_entropy")(lambda c: P.call("F.cross_entropy", *c.inputs, **keywords(
    ignore_index=(c.attrs["ignore_index"], -100), reduction=(c.attrs["reduction"], "mean"))))
C.writes("FInfo", "torch.finfo")(lambda c: P.call("torch.finfo", _dtype(c.inputs[0])))
for _op, _fn_name in (("RandomUniform", "torch.rand"), ("RandomNormal", "torch.randn")):
    C.writes(_op, _fn_name)(lambda c, f=_fn_name: P.call(f, _sequence(c.attrs["shape"]), **_dtype_keyword(c)))
    C.writes(f"{_op}Like", f"{_fn_name}_like")(
        lambda c, f=_fn_name: P.call(f"{f}_like", c.inputs[0], **_dtype_keyword(c)))
C.writes("Bernoulli", "torch.bernoulli")(
    lambda c: P.call("torch.bernoulli", c.inputs[0], *[c.attrs["p"]] if known(c.attrs["p"]) is not None else []))


def _dtype_keyword(c) -> dict:
    """`dtype=` of a creation call when the source gives one: a named dtype as torch's, another tensor's as it is
    (`dtype=x.dtype`)."""
    dtype = c.attrs.get("dtype")
    if known(dtype) is None:
        return {}
    if isinstance(dtype, ast.Attribute) and dtype.attr == "dtype":
        return {"dtype": dtype}
    return {"dtype": _dtype(dtype)}


C.writes("Cast", "Tensor.to")(lambda c: P.method(c.inputs[0], "to", _dtype(c.attrs["to"])))
C.writes("Flip", "torch.flip")(lambda c: P.call("torch.flip", c.inputs[0], tuple(c.attrs["axes"]) if isinstance(
    c.attrs["axes"], list) else (c.attrs["axes"],) if isinstance(known(c.attrs["axes"]), int) else c.attrs["axes"]))


@C.writes("ConstantLike", "torch.full_like")
def _constant_like(c):
    value = known(c.attrs["value"])
    dtype = _dtype_keyword(c)
    if value in (0.0, 1.0):
        return P.call("torch.ones_like" if value else "torch.zeros_like", c.inputs[0], **dtype)
    return P.call("torch.full_like", c.inputs[0], c.attrs["value"], **dtype)
C.writes("Flatten", "torch.flatten")(lambda c: P.call("torch.flatten", c.inputs[0], c.attrs.get("start", 1),
                                                      *[c.attrs["end"]] if known(c.attrs.get("end", -1)) != -1 else []))


def _sequence(items):
    """A shape argument (one expression, or a list of per-dim expressions) as one expression."""
    return ast.Tuple(list(items), ast.Load()) if isinstance(items, list) else items


@C.writes("Transpose", "torch.permute")
def _transpose(c):
    if known(c.attrs["perm"]) is None:  # every axis reversed, as NumPy's transpose without axes
        x = c.inputs[0]
        return P.call("torch.permute", x, P.call("tuple", P.call("range", P.binop(P.method(x, "dim"), "-", 1), -1, -1)))
    return P.call("torch.permute", c.inputs[0], _sequence(c.attrs["perm"]))


@C.writes("Squeeze", "torch.squeeze")
def _squeeze(c):
    if known(c.attrs["axis"]) is None:
        return P.call("torch.squeeze", c.inputs[0])
    return P.call("torch.squeeze", c.inputs[0], c.attrs["axis"])


@C.writes("Clip", "torch.clamp")
def _clip(c):
    return P.call("torch.clamp", c.inputs[0], **{k: c.attrs[k] for k in ("min", "max")
                                                 if known(c.attrs[k]) is not None})


@C.writes("Shape", "Tensor.shape")
def _shape(c):
    shape = ast.Attribute(c.inputs[0], "shape", ast.Load())
    return shape if known(c.attrs["index"]) is None else P.subscript(shape, c.attrs["index"])


def _reduction(op, fn):
    @C.writes(op, fn)
    def write(c):
        axis, keep = known(c.attrs["axis"]), known(c.attrs["keepdims"])
        if axis is None:
            if keep is not False:
                raise Refused("a reduction over every axis that keeps the dims")
            return P.call(fn, c.inputs[0])
        return P.call(fn, c.inputs[0], dim=c.attrs["axis"], **keywords(keepdim=(c.attrs["keepdims"], False)))


for _op, _fn_name in (("ReduceMean", "torch.mean"), ("ReduceSum", "torch.sum"), ("ReduceMax", "torch.amax"),
                      ("ReduceMin", "torch.amin"), ("ReduceAll", "torch.all"), ("ReduceAny", "torch.any")):
    _reduction(_op, _fn_name)


@C.writes("ReduceLogSumExp", "torch.logsumexp")
def _logsumexp(c):
    """torch.logsumexp takes the dims to reduce: over every one, the flattened tensor's only dim."""
    if known(c.attrs["axis"]) is None:
        if known(c.attrs["keepdims"]) is not False:
            raise Refused("a log-sum-exp over every axis that keeps the dims")
        return P.call("torch.logsumexp", P.method(c.inputs[0], "flatten"), dim=0)
    return P.call("torch.logsumexp", c.inputs[0], dim=c.attrs["axis"],
                  **keywords(keepdim=(c.attrs["keepdims"], False)))


# -- how PyTorch model code is written ---------------------------------------------------------------
def _torch_sequential(items: ast.expr | None) -> ast.expr:
    """`nn.Sequential(*items)`; None: an empty one, to add layers to."""
    layers = [] if items is None else items.elts if isinstance(items, ast.List) else [ast.Starred(items, ast.Load())]
    return P.call("nn.Sequential", *layers)


_write_separable, _separable_weights = separable_conv_writer(
    _write_conv, _torch_sequential,
    lambda layer, a: _with_activation(_channels_last(layer, a), a), CONV_WEIGHTS.from_ir)
C.layer("(a depthwise then a 1x1 torch.nn.Conv2d)", "SeparableConv", "", write=_write_separable,
        from_ir=_separable_weights)


INITIAL_VALUES = {"zeros": "torch.zeros", "ones": "torch.ones", "normal": "torch.randn", "uniform": "torch.rand"}


def _torch_weight(shape, kind, scale, trainable, name):
    """`nn.Parameter(torch.zeros(shape))`-like, with `requires_grad=False` for a weight that is not trained."""
    value = P.call(INITIAL_VALUES[kind], shape)
    if scale is not None and kind != "zeros":
        value = P.binop(scale, "*", value)
    return P.call("nn.Parameter", value, **({} if trainable else {"requires_grad": False}))


def _torch_first_call(bases, body, build, shapes):
    """Weights created from the input shapes on the first call, as PyTorch's lazy modules make them: the class
    mixes in `LazyModuleMixin`, whose `initialize_parameters` runs once, before the first forward, on its inputs."""
    forward = next(f for f in body if isinstance(f, ast.FunctionDef) and f.name == "forward")
    bases.insert(0, P.name("nn.modules.lazy.LazyModuleMixin"))
    sizes = [P.assign([shape], P.call("tuple", P.name(f"{given}.shape"))) for shape, given in shapes.items()]
    method = ast.FunctionDef("initialize_parameters", copy.deepcopy(forward.args), sizes + build.body, [], None,
                             lineno=build.lineno)
    at = body.index(forward)
    return [*body[:at], method, *body[at:]]


def _container(cls: str, items: ast.expr) -> ast.expr:
    """`nn.ModuleList(items)`; `nn.ModuleList()` for an empty literal."""
    return P.call(cls) if is_empty_literal(items) else P.call(cls, items)


#: PyTorch has no lazy depthwise convolution: nn.Conv<n>d whose groups and sizes come from the first input
LAZY_DEPTHWISE = (
    "class LazyDepthwiseConv{n}d(nn.modules.lazy.LazyModuleMixin, nn.Conv{n}d):\n"
    "    \"\"\"nn.Conv{n}d with one group per input channel and `depth_multiplier` outputs each, its channel count\n"
    "    read from the first input.\"\"\"\n\n"
    "    cls_to_become = nn.Conv{n}d\n\n"
    "    def __init__(self, depth_multiplier, kernel_size, stride=1, padding=0, dilation=1, bias=True):\n"
    "        super().__init__(0, 0, kernel_size, stride, padding, dilation, bias=bias)\n"
    "        self.depth_multiplier = depth_multiplier\n"
    "        self.weight = nn.UninitializedParameter()\n"
    "        if bias:\n"
    "            self.bias = nn.UninitializedParameter()\n\n"
    "    def reset_parameters(self):\n"
    "        if not self.has_uninitialized_params() and self.in_channels:\n"
    "            super().reset_parameters()\n\n"
    "    def initialize_parameters(self, x):\n"
    "        if self.has_uninitialized_params():\n"
    "            channels = x.shape[1]\n"
    "            self.in_channels = self.groups = channels\n"
    "            self.out_channels = channels * self.depth_multiplier\n"
    "            with torch.no_grad():\n"
    "                self.weight.materialize((self.out_channels, 1, *self.kernel_size))\n"
    "                if self.bias is not None:\n"
    "                    self.bias.materialize((self.out_channels,))\n"
    "                self.reset_parameters()\n")


HELPERS = {
    "LinearGeneral": definition(
        "class LinearGeneral(nn.Module):\n"
        "    \"\"\"Flax's nnx.LinearGeneral over the input's last axes: a Linear from their flattened size to that of\n"
        "    `out_features`, reshaped to it.\"\"\"\n\n"
        "    def __init__(self, in_features, out_features, bias=True):\n"
        "        super().__init__()\n"
        "        self.in_features = tuple(np.atleast_1d(in_features).tolist())\n"
        "        self.out_features = tuple(np.atleast_1d(out_features).tolist())\n"
        "        sizes = int(np.prod(self.in_features)), int(np.prod(self.out_features))\n"
        "        self.linear = nn.Linear(*sizes, bias=bias)\n\n"
        "    def forward(self, x):\n"
        "        y = self.linear(x.reshape(*x.shape[:x.dim() - len(self.in_features)], -1))\n"
        "        return y.reshape(*y.shape[:-1], *self.out_features)\n"),
    "dot_product_attention": definition(
        "def dot_product_attention(query, key, value, bias=None, mask=None, scale=None, is_causal=False):\n"
        "    \"\"\"JAX's jax.nn.dot_product_attention on (batch, steps, heads, features): a score masked out (by\n"
        "    `mask`, False where a query may not attend, or causally) is JAX's large negative number, so a query\n"
        "    masked from every key attends to all evenly, as in JAX.\"\"\"\n"
        "    if is_causal:\n"
        "        causal = torch.ones(query.shape[-3], key.shape[-3], dtype=torch.bool, device=query.device).tril()\n"
        "        mask = causal if mask is None else mask & causal\n"
        "    if mask is not None:\n"
        "        kept = torch.as_tensor(0.0 if bias is None else bias, dtype=query.dtype, device=query.device)\n"
        "        bias = torch.where(mask, kept, -0.7 * torch.finfo(query.dtype).max)\n"
        "    out = F.scaled_dot_product_attention(query.transpose(-3, -2), key.transpose(-3, -2),\n"
        "                                         value.transpose(-3, -2), attn_mask=bias, scale=scale)\n"
        "    return out.transpose(-3, -2)\n"),
    "make_causal_mask": definition(
        "def make_causal_mask(x, extra_batch_dims=0, dtype=torch.float32):\n"
        "    \"\"\"Flax's nnx.make_causal_mask: (*x.shape[:-1], 1, steps, steps), 1 where a step may attend (at or\n"
        "    before itself), as `dtype`, after `extra_batch_dims` axes of 1.\"\"\"\n"
        "    n = x.shape[-1]\n"
        "    mask = torch.ones(n, n, device=x.device).tril().to(dtype).expand(*x.shape[:-1], 1, n, n)\n"
        "    return mask.reshape((1,) * extra_batch_dims + tuple(mask.shape))\n"),
    "NnxEinsum": definition(
        "class NnxEinsum(nn.Module):\n"
        "    \"\"\"Flax's nnx.Einsum: torch.einsum(equation, x, kernel) with a kernel of `kernel_shape`, plus a\n"
        "    bias of `bias_shape` when given.\"\"\"\n\n"
        "    def __init__(self, equation, kernel_shape, bias_shape=None):\n"
        "        super().__init__()\n"
        "        self.equation = equation\n"
        "        self.kernel = nn.Parameter(nn.init.normal_(torch.empty(kernel_shape), std=0.02))\n"
        "        self.bias = nn.Parameter(torch.zeros(bias_shape)) if bias_shape is not None else None\n\n"
        "    def forward(self, x):\n"
        "        y = torch.einsum(self.equation, x, self.kernel)\n"
        "        return y + self.bias if self.bias is not None else y\n"),
    "keras_zero_padding": definition(
        "def keras_zero_padding(padding, rank):\n"
        "    \"\"\"Keras' ZeroPadding `padding` (an int, one width per spatial axis, or (before, after) pairs) as\n"
        "    nn.ZeroPad's widths: the last axis' (before, after) first.\"\"\"\n"
        "    if isinstance(padding, int):\n"
        "        padding = (padding,) * rank\n"
        "    pairs = [(p, p) if isinstance(p, int) else tuple(p) for p in padding]\n"
        "    return tuple(width for pair in reversed(pairs) for width in pair)\n"),
    "resize": definition(
        "def resize(x, shape, method=\"linear\", antialias=True):\n"
        "    \"\"\"jax.image.resize to `shape`: each axis whose size changes sampled at half-pixel centres,\n"
        "    nearest or linearly; its antialiasing, which acts only when a linear resize shrinks an axis, is not\n"
        "    translated.\"\"\"\n"
        "    for axis, out in enumerate(shape):\n"
        "        n, out = x.shape[axis], int(out)\n"
        "        if out == n:\n"
        "            continue\n"
        "        if antialias and out < n and method != \"nearest\":\n"
        "            raise NotImplementedError(\"jax.image.resize shrinking linearly with antialias=True is not "
        "translated\")\n"
        "        positions = (torch.arange(out, dtype=torch.float32, device=x.device) + 0.5) * (n / out)\n"
        "        if method == \"nearest\":\n"
        "            x = torch.index_select(x, axis, positions.floor().clamp(max=n - 1).long())\n"
        "            continue\n"
        "        source = (positions - 0.5).clamp(0.0, n - 1)\n"
        "        low = source.floor()\n"
        "        weight = (source - low).reshape([out if a == axis else 1 for a in range(x.dim())])\n"
        "        low = low.long()\n"
        "        high = (low + 1).clamp(max=n - 1)\n"
        "        x = torch.index_select(x, axis, low) * (1 - weight) + torch.index_select(x, axis, high) * weight\n"
        "    return x\n"),
    "in_mode": definition(
        "def in_mode(layer, training, *inputs):\n"
        "    \"\"\"`layer(*inputs)` in training mode when `training`, else in evaluation mode; the modes of the layer\n"
        "    and its sublayers are restored afterwards.\"\"\"\n"
        "    modes = [(module, module.training) for module in layer.modules()]\n"
        "    layer.train(bool(training))\n"
        "    try:\n"
        "        return layer(*inputs)\n"
        "    finally:\n"
        "        for module, mode in modes:\n"
        "            module.training = mode\n"),
    "Lambda": definition(
        "class Lambda(nn.Module):\n"
        "    \"\"\"A layer computing a function of its input (one PyTorch has as a function only).\"\"\"\n\n"
        "    def __init__(self, function):\n"
        "        super().__init__()\n"
        "        self.function = function\n\n"
        "    def forward(self, x):\n"
        "        return self.function(x)\n"),
    "ChannelsLast": definition(
        "class ChannelsLast(nn.Module):\n"
        "    \"\"\"A channels-first torch layer applied to channels-last data (docs/transpile.md: layout).\"\"\"\n\n"
        "    def __init__(self, layer):\n"
        "        super().__init__()\n"
        "        self.layer = layer\n\n"
        "    def forward(self, x):\n"
        "        return self.layer(x.movedim(-1, 1)).movedim(1, -1)\n"),
    "L1L2": l1l2_helper("torch"),
    "Penalized": definition(
        "class Penalized(nn.Module):\n"
        "    \"\"\"A layer whose kernel and bias the Keras source regularised: Keras adds their penalties to the\n"
        "    training loss itself; here regularization_loss(model) sums them, to add to the loss.\"\"\"\n\n"
        "    def __init__(self, layer, kernel=None, bias=None):\n"
        "        super().__init__()\n"
        "        self.layer = layer\n"
        "        self.kernel_penalty = kernel\n"
        "        self.bias_penalty = bias\n\n"
        "    def forward(self, *args, **kwargs):\n"
        "        return self.layer(*args, **kwargs)\n\n"
        "    def penalty(self):\n"
        "        total = 0.0\n"
        "        for name, weight in self.layer.named_parameters():\n"
        "            penalty = self.bias_penalty if name.endswith('bias') else self.kernel_penalty\n"
        "            if penalty is not None:\n"
        "                total = total + penalty(weight)\n"
        "        return total\n\n\n"
        "def regularization_loss(model):\n"
        "    \"\"\"The penalties of the Keras source's regularizers (its sum(model.losses)): add this to the training\n"
        "    loss.\"\"\"\n"
        "    return sum([m.penalty() for m in model.modules() if isinstance(m, Penalized)])\n"),
    "torch_dtype": definition(
        "def torch_dtype(dtype):\n"
        "    \"\"\"A dtype named as Keras and NumPy name them (\"float32\") as torch's; a torch dtype as it is.\"\"\"\n"
        "    return getattr(torch, dtype) if isinstance(dtype, str) else dtype\n"),
    "PadSame": definition(
        "class PadSame(nn.Module):\n"
        "    \"\"\"Pads a strided convolution's or a pool's input as 'same' does in TensorFlow, Keras and Flax: per\n"
        "    spatial dim a total of max((ceil(n / s) - 1) * s + d * (k - 1) + 1 - n, 0), the odd one at the end; with\n"
        "    `value` (-inf for a max pool, which never picks it).\"\"\"\n\n"
        "    def __init__(self, layer, value=0.0):\n"
        "        super().__init__()\n"
        "        self.layer = layer\n"
        "        self.value = value\n\n"
        "    def forward(self, x):\n"
        "        rank = x.dim() - 2\n"
        "        settings = [getattr(self.layer, name, 1) for name in ('kernel_size', 'stride', 'dilation')]\n"
        "        settings = [s if isinstance(s, tuple) else (s,) * rank for s in settings]\n"
        "        pads = []\n"
        "        for n, k, s, d in reversed(list(zip(x.shape[2:], *settings))):\n"
        "            total = max((-(-n // s) - 1) * s + d * (k - 1) + 1 - n, 0)\n"
        "            pads += [total // 2, total - total // 2]\n"
        "        return self.layer(F.pad(x, pads, value=self.value))\n"),
    "OnAxis": definition(
        "class OnAxis(nn.Module):\n"
        "    \"\"\"A norm over axis 1 of (N, C) batches applied along `axis` of a tensor of any rank.\"\"\"\n\n"
        "    def __init__(self, norm, axis=-1):\n"
        "        super().__init__()\n"
        "        self.norm = norm\n"
        "        self.axis = axis\n\n"
        "    def forward(self, x):\n"
        "        moved = x.movedim(self.axis, -1)\n"
        "        flat = self.norm(moved.reshape(-1, moved.shape[-1]))\n"
        "        return flat.reshape(moved.shape).movedim(-1, self.axis)\n"),
    **{f"LazyDepthwiseConv{n}d": definition(LAZY_DEPTHWISE.replace("{n}", str(n))) for n in (1, 2)},
    "LazyRMSNorm": definition(
        "class LazyRMSNorm(nn.modules.lazy.LazyModuleMixin, nn.RMSNorm):\n"
        "    \"\"\"nn.RMSNorm over the last axis, its size read from the first input.\"\"\"\n\n"
        "    cls_to_become = nn.RMSNorm\n\n"
        "    def __init__(self, eps=None):\n"
        "        super().__init__(0, eps)\n"
        "        self.weight = nn.UninitializedParameter()\n\n"
        "    def initialize_parameters(self, x):\n"
        "        if self.has_uninitialized_params():\n"
        "            self.normalized_shape = (x.shape[-1],)\n"
        "            with torch.no_grad():\n"
        "                self.weight.materialize(self.normalized_shape)\n"
        "                self.reset_parameters()\n"),
    "LazyGroupNorm": definition(
        "class LazyGroupNorm(nn.modules.lazy.LazyModuleMixin, nn.GroupNorm):\n"
        "    \"\"\"nn.GroupNorm, its number of channels (axis 1) read from the first input.\"\"\"\n\n"
        "    cls_to_become = nn.GroupNorm\n\n"
        "    def __init__(self, num_groups, eps=1e-05, affine=True):\n"
        "        super().__init__(num_groups, num_groups, eps, affine)\n"
        "        if affine:\n"
        "            self.weight = nn.UninitializedParameter()\n"
        "            self.bias = nn.UninitializedParameter()\n\n"
        "    def initialize_parameters(self, x):\n"
        "        self.num_channels = x.shape[1]\n"
        "        if self.has_uninitialized_params():\n"
        "            with torch.no_grad():\n"
        "                self.weight.materialize((self.num_channels,))\n"
        "                self.bias.materialize((self.num_channels,))\n"
        "                self.reset_parameters()\n"),
    "LazyLayerNorm": definition(
        "class LazyLayerNorm(nn.modules.lazy.LazyModuleMixin, nn.LayerNorm):\n"
        "    \"\"\"nn.LayerNorm over the last axis, its size read from the first input.\"\"\"\n\n"
        "    cls_to_become = nn.LayerNorm\n\n"
        "    def __init__(self, eps=1e-05, elementwise_affine=True):\n"
        "        super().__init__(0, eps, elementwise_affine)\n"
        "        if elementwise_affine:\n"
        "            self.weight = nn.UninitializedParameter()\n"
        "            self.bias = nn.UninitializedParameter()\n\n"
        "    def initialize_parameters(self, x):\n"
        "        if self.has_uninitialized_params():\n"
        "            self.normalized_shape = (x.shape[-1],)\n"
        "            with torch.no_grad():\n"
        "                self.weight.materialize(self.normalized_shape)\n"
        "                self.bias.materialize(self.normalized_shape)\n"
        "                self.reset_parameters()\n"),
}
HELPERS.update(RECURRENT_HELPERS)
HELPERS.update(ATTENTION_HELPERS)
HELPERS.update(numpy_constants.HELPERS)
HELPERS.update(MERGE_HELPER)
HELPERS.update(extract_patches_helper("permute"))
C.writes("FFT", "torch.fft.fftn")(lambda c: P.call("torch.fft.fftn", c.inputs[0],
                                                   **keywords(dim=(c.attrs["axes"], None))))
C.writes("Real", "Tensor.real")(lambda c: ast.Attribute(c.inputs[0], "real", ast.Load()))
C.writes("ExtractPatches", "extract_patches")(lambda c: P.call("extract_patches", c.inputs[0], c.attrs["size"]))


class TorchWeights(WeightPort):
    def owns(self, obj) -> bool:
        import torch

        return isinstance(obj, torch.nn.Module)

    def variables(self, dst) -> dict[int, str]:
        return {id(t): n for n, t in [*dst.named_parameters(), *dst.named_buffers()]
                if not n.endswith("num_batches_tracked")}

    def members(self, dst) -> list | None:
        import torch

        if isinstance(dst, (torch.nn.Sequential, torch.nn.ModuleList, list, tuple)):
            return list(dst)
        return None

    def holders(self, dst) -> list:
        return [m for m in dst.modules() if any(True for _ in m.parameters(recurse=False))]

    def unbuilt_hint(self, layer) -> str:
        import torch

        lazy = any(isinstance(p, torch.nn.parameter.UninitializedParameter) for p in layer.parameters()) or any(
            type(m).__name__ == "KerasRecurrent" and m.rnn is None for m in layer.modules())
        return " (it holds lazy parameters: call the model once to build it)" if lazy else ""

    def is_weight(self, obj) -> bool:
        import torch

        return isinstance(obj, torch.Tensor)

    def shape(self, variable) -> tuple:
        return tuple(variable.shape)

    def assign(self, variable, array) -> None:
        import torch

        with torch.no_grad():
            variable.copy_(torch.from_numpy(np.ascontiguousarray(array)).to(variable.dtype))


def _training_call(layer: ast.expr, op: str | None, inputs: list, flag: ast.expr) -> ast.expr:
    """A held layer called in the mode `flag` says: a dropout as `F.dropout(x, p, training=flag)`, any other
    layer through the `in_mode` helper (a batch norm, a model class of the module)."""
    if op == "Dropout" and len(inputs) == 1:
        return P.call("F.dropout", inputs[0], ast.Attribute(layer, "p", ast.Load()), training=flag)
    return P.call("in_mode", layer, flag, *inputs)


C.skeleton = TargetSkeleton(
    layer_base="nn.Module", forward="forward",
    imports=(P.import_("torch"), P.from_import("torch", ["nn"]), P.import_("torch.nn.functional", "F"),
             P.import_("einops.layers.torch"), P.import_("numpy", "np")),
    sequential=_torch_sequential, add_weight=_torch_weight, helpers=HELPERS, port=TorchWeights(),
    training_call=_training_call,
    constant_weight=lambda value, trainable, name: P.call("nn.Parameter", P.call("torch.as_tensor", value), **(
        {} if trainable else {"requires_grad": False})),
    module_list=lambda items: _container("nn.ModuleList", items),
    module_dict=lambda items: _container("nn.ModuleDict", items),
    training="attribute",
    layer_class="nn.Module",
    is_tensor=lambda value: P.call("isinstance", value, P.name("torch.Tensor")),
    array_constant=lambda value: P.call("torch.as_tensor", as_float32(value)),
    function_layer=lambda fn: P.call("Lambda", fn),
    first_call=_torch_first_call,
    wrappers=frozenset({"ChannelsLast", "PadSame", "Penalized"}),
    penalized=lambda layer, penalties: P.call("Penalized", layer, **penalties),
    scalar_tensor=lambda value: P.call("torch.as_tensor", value),
    reserved_names=frozenset({"torch", "nn", "F", "np", *HELPERS}),
    reserved_attributes=frozenset({"training", "forward", "parameters", "modules", "children", "apply", "train",
                                   "eval", "to", "type", "float", "double", "half", "cuda", "cpu", "state_dict",
                                   "buffers", "zero_grad", "register_buffer", "register_parameter", "add_module",
                                   "named_modules", "named_parameters", "load_state_dict"}))

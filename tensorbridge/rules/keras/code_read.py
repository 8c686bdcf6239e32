"""Keras 3 model code -> IR ops, as the transpiler reads it (see rules/code.py): `keras.layers` constructors
and `keras.ops` / `keras.activations` calls. The rows sit on the same table as the writers (rules/keras/code.py),
so one table reads and writes Keras code; each layer row's `to_ir` is the inverse of its writer's `from_ir`.

Keras layers infer their input size on the first call, so a layer's input channels/features are left unknown
(None) and the target writes a layer that infers them too (PyTorch's Lazy modules). A layer without a
`data_format` argument is read in Keras' default layout, channels-last.
"""

from __future__ import annotations

import ast
import sys
from functools import partial

import numpy as np

from tensorbridge.rules.code import (
    COMPARISONS,
    DTYPE_NAMES,
    NOT_LITERAL,
    OpCall,
    Refused,
    SourceSkeleton,
    WeightSource,
    dtype_name,
    held_layers,
    known,
    only,
    read_gelu,
    read_pad,
    required,
)
from tensorbridge.rules.einops_code import einops_layers
from tensorbridge.rules.keras.code import EMBEDDING_WEIGHTS, NORM_WEIGHTS, C
from tensorbridge.rules.keras.code_recurrent import ORDER
from tensorbridge.rules.keras.code_tensorflow import DTYPES as TF_DTYPES
from tensorbridge.rules.numpy_code import DENSE_WEIGHTS, conv_weights_to_ir, per_head_projections_to_ir
from tensorbridge.rules.recurrent import GATE_OPS, gate_blocks

K = "keras.layers."
#: keyword arguments every Keras layer takes (base Layer) that do not change what it computes
BASE = "name=None dtype=None trainable=True"
#: training-only arguments that must be left at their default (they add loss terms or clip weights)
TRAINING_ONLY = ("kernel_regularizer", "bias_regularizer", "activity_regularizer", "kernel_constraint",
                 "bias_constraint", "beta_regularizer", "gamma_regularizer", "beta_constraint", "gamma_constraint",
                 "embeddings_regularizer", "embeddings_constraint", "depthwise_regularizer", "depthwise_constraint",
                 "pointwise_regularizer", "pointwise_constraint", "recurrent_regularizer", "recurrent_constraint")
REGULARIZED = ("kernel_regularizer=None bias_regularizer=None activity_regularizer=None kernel_constraint=None "
               "bias_constraint=None")


def _plain(a, penalized: dict | None = None) -> dict:
    """Refuse constraints and regularizers, which change training, except those in `penalized` ({argument:
    weight}: "kernel" or "bias"), returned as the layer's penalties, {weight: regularizer} (see
    TargetSkeleton.penalized)."""
    penalized = penalized or {}
    for name in TRAINING_ONLY:
        if name in a and name not in penalized and known(a[name]) is not None:
            raise Refused(f"{name} (a training-time term; add it to the target's loss or optimizer instead)")
    penalties = {}
    for name, weight in penalized.items():
        given = known(a[name])
        if isinstance(given, str):
            raise Refused(f"{name}={given!r} (a regularizer named by a string: write regularizers.L2(...))")
        if given is not None:
            penalties[weight] = a[name]
    return penalties


#: the regularizers of a layer's kernel and bias, as the penalties read
WEIGHT_PENALTIES = {"kernel_regularizer": "kernel", "bias_regularizer": "bias"}


def _layout(a) -> str:
    fmt = known(a.get("data_format"))
    if fmt is None:
        return "channels_last"
    if fmt not in ("channels_last", "channels_first"):
        raise Refused("data_format given by a variable")
    return fmt


def _padding(a) -> str:
    """"valid" or "same", in any case (Keras lowercases it: keras.io's `padding="VALID"`)."""
    padding = known(a["padding"])
    padding = padding.lower() if isinstance(padding, str) else padding
    if padding not in ("valid", "same"):
        raise Refused("padding given by a variable" if not isinstance(padding, str) else f"padding={padding!r}")
    return padding


def _activation(a) -> OpCall | None:
    """The fused `activation=` argument as the IR op it applies after the layer (None for none)."""
    name = known(a["activation"])
    if name is NOT_LITERAL or not (name is None or name in ACTIVATION_OPS):
        raise Refused(f"activation={ast.unparse(a['activation'])} (only the built-in names are translated)")
    return None if name in (None, "linear") else activation_call(name)


# -- layers ------------------------------------------------------------------------------------------
def _conv(rank, transposed=False, separable=False):
    def read(a):
        penalties = _plain(a, WEIGHT_PENALTIES if not separable and "depth_multiplier" not in a else None)
        attrs = {"rank": rank, "in_channels": None, "filters": a.get("filters"), "kernel_shape": a["kernel_size"],
                 "strides": a["strides"], "pads": _padding(a), "dilations": a["dilation_rate"],
                 "group": a.get("groups", 1), "bias": a["use_bias"], "layout": _layout(a),
                 "activation": _activation(a)}
        if transposed:
            attrs["output_padding"] = a["output_padding"]
        if "depth_multiplier" in a:  # one group per input channel, depth_multiplier outputs each
            attrs.update(group=None, depth_multiplier=a["depth_multiplier"])
        if penalties:
            attrs["penalties"] = penalties
        return OpCall("ConvTranspose" if transposed else "SeparableConv" if separable else "Conv", attrs=attrs)
    return read


def depthwise_to_ir(w, attrs) -> dict:
    """A depthwise kernel (k..., in, multiplier) is a grouped convolution's (k..., 1, in * multiplier)."""
    kernel = w["kernel"]
    return conv_weights_to_ir({**w, "kernel": kernel.reshape(*kernel.shape[:-2], 1, -1)}, attrs)


def separable_to_ir(w, attrs) -> list:
    """A separable convolution's weights as its two convolutions' (depthwise, then 1x1 with the bias)."""
    return [depthwise_to_ir({"kernel": w["depthwise_kernel"]}, attrs),
            conv_weights_to_ir({"kernel": w["pointwise_kernel"], **({"bias": w["bias"]} if "bias" in w else {})},
                               attrs)]


CONV = ("filters kernel_size strides={s} padding='valid' data_format=None dilation_rate={s} groups=1 "
        f"activation=None use_bias=True kernel_initializer='glorot_uniform' bias_initializer='zeros' {REGULARIZED} "
        f"{BASE}")
TCONV = ("filters kernel_size strides={s} padding='valid' {order} dilation_rate={s} "
         f"activation=None use_bias=True kernel_initializer='glorot_uniform' bias_initializer='zeros' {REGULARIZED} "
         f"{BASE}")
DEPTHWISE = ("kernel_size strides={s} padding='valid' depth_multiplier=1 data_format=None dilation_rate={s} "
             "activation=None use_bias=True depthwise_initializer='glorot_uniform' bias_initializer='zeros' "
             "depthwise_regularizer=None bias_regularizer=None activity_regularizer=None depthwise_constraint=None "
             f"bias_constraint=None {BASE}")
SEPARABLE = ("filters kernel_size strides={s} padding='valid' data_format=None dilation_rate={s} depth_multiplier=1 "
             "activation=None use_bias=True depthwise_initializer='glorot_uniform' "
             "pointwise_initializer='glorot_uniform' bias_initializer='zeros' depthwise_regularizer=None "
             "pointwise_regularizer=None bias_regularizer=None activity_regularizer=None depthwise_constraint=None "
             f"pointwise_constraint=None bias_constraint=None {BASE}")
for _n in (1, 2, 3):
    _ones = "1" if _n == 1 else "(" + ",".join("1" * _n) + ")"
    C.layer(f"{K}Conv{_n}D", "Conv", CONV.format(s=_ones), read=_conv(_n), to_ir=conv_weights_to_ir)
    if _n < 3:
        C.layer(f"{K}DepthwiseConv{_n}D", "Conv", DEPTHWISE.format(s=_ones), read=_conv(_n), to_ir=depthwise_to_ir)
        C.layer(f"{K}SeparableConv{_n}D", "SeparableConv", SEPARABLE.format(s=_ones), read=_conv(_n, separable=True),
                to_ir=separable_to_ir)
    _order = "data_format=None output_padding=None" if _n == 3 else "output_padding=None data_format=None"
    C.layer(f"{K}Conv{_n}DTranspose", "ConvTranspose", TCONV.format(s=_ones, order=_order), read=_conv(_n, True),
            to_ir=conv_weights_to_ir)


def _dense(a):
    penalties = _plain(a, WEIGHT_PENALTIES)
    only(a, lora_rank=None, quantization_config=None)
    return OpCall("Dense", attrs={"in_features": None, "units": a["units"], "bias": a["use_bias"],
                                  "activation": _activation(a), **({"penalties": penalties} if penalties else {})})


# -- recurrent layers ------------------------------------------------------------------------------
OPS = {"LSTM": "LSTM", "GRU": "GRU", "SimpleRNN": "RNN"}
#: Keras' gate blocks in the IR's order (the inverse of the writers' order)
TO_IR = {op: [int(i) for i in np.argsort(order)] for op, order in ORDER.items()}
ARGS = ("units {activations}use_bias=True kernel_initializer='glorot_uniform' recurrent_initializer='orthogonal' "
        "bias_initializer='zeros' {forget}kernel_regularizer=None recurrent_regularizer=None bias_regularizer=None "
        "activity_regularizer=None kernel_constraint=None recurrent_constraint=None bias_constraint=None dropout=0.0 "
        "recurrent_dropout=0.0 {seed}return_sequences=False return_state=False go_backwards=False stateful=False "
        "unroll=False {tail}name=None dtype=None trainable=True")
GATED = "activation='tanh' recurrent_activation='sigmoid' "
SIGNATURES = {
    "LSTM": ARGS.format(activations=GATED, forget="unit_forget_bias=True ", seed="seed=None ",
                        tail="use_cudnn='auto' "),
    "GRU": ARGS.format(activations=GATED, forget="", seed="seed=None ", tail="reset_after=True use_cudnn='auto' "),
    "SimpleRNN": ARGS.format(activations="activation='tanh' ", forget="", seed="", tail="seed=None "),
}


def read_recurrent(kind: str):
    """layers.LSTM / GRU / SimpleRNN -> the IR op, with Keras' call (`return_sequences`, `return_state`)."""
    def read(a):
        _plain(a)
        only(a, dropout=0.0, recurrent_dropout=0.0, go_backwards=False, stateful=False,
             **({"recurrent_activation": "sigmoid"} if "recurrent_activation" in a else {}),
             **({"reset_after": True} if kind == "GRU" else {}))
        activation, allowed = known(a["activation"]), ("tanh", "relu") if kind == "SimpleRNN" else ("tanh",)
        if activation not in allowed:
            raise Refused(f"an activation other than {' or '.join(map(repr, allowed))} (not translated)")
        return OpCall(OPS[kind], attrs={"input_size": None, "hidden_size": a["units"], "num_layers": 1,
                                        "bias": a["use_bias"], "batch_first": True, "dropout": 0.0,
                                        "bidirectional": False, "activation": activation,
                                        "return_sequences": a["return_sequences"], "return_state": a["return_state"]})
    return read


def read_bidirectional(a) -> OpCall:
    """layers.Bidirectional(<recurrent layer>) -> the wrapped layer's IR op, both directions concatenated."""
    only(a, merge_mode="concat", weights=None, backward_layer=None)
    inner = a["layer"]
    if inner.op not in OPS.values():
        raise Refused(f"Bidirectional over {inner.op} (only LSTM, GRU and SimpleRNN are translated)")
    return OpCall(inner.op, attrs={**inner.attrs, "bidirectional": True})


def recurrent_to_ir(w: dict, attrs) -> dict:
    """A Keras recurrent layer's kernel, recurrent_kernel and bias (Bidirectional: prefixed forward_layer. and
    backward_layer.) -> W0, R0, B0."""
    prefixes = ["forward_layer.", "backward_layer."] if "forward_layer.kernel" in w else [""]
    kernels = [w[p + "kernel"] for p in prefixes]
    op = GATE_OPS[kernels[0].shape[1] // w[prefixes[0] + "recurrent_kernel"].shape[0]]
    order = TO_IR[op]

    def biases(p):
        bias = w[p + "bias"]
        given, held = (bias[0], bias[1]) if op == "GRU" else (bias, np.zeros_like(bias))
        return np.concatenate([gate_blocks(given, order), gate_blocks(held, order)])

    out = {"W0": np.stack([gate_blocks(k.T, order) for k in kernels]),
           "R0": np.stack([gate_blocks(w[p + "recurrent_kernel"].T, order) for p in prefixes])}
    if prefixes[0] + "bias" in w:
        out["B0"] = np.stack([biases(p) for p in prefixes])
    return out


for _kind, _op in OPS.items():
    C.layer(f"{K}{_kind}", _op, SIGNATURES[_kind], read=read_recurrent(_kind), to_ir=recurrent_to_ir)
#: its op is the wrapped layer's (LSTM, GRU or RNN): every target maps the three's weights with one function
C.layer(f"{K}Bidirectional", "RNN", f"layer merge_mode='concat' weights=None backward_layer=None {BASE}",
        read=read_bidirectional, to_ir=recurrent_to_ir, layer_arguments=("layer",))
C.layer(f"{K}Dense", "Dense", "units activation=None use_bias=True kernel_initializer='glorot_uniform' "
        f"bias_initializer='zeros' {REGULARIZED} lora_rank=None lora_alpha=None quantization_config=None {BASE}",
        read=_dense, to_ir=DENSE_WEIGHTS.to_ir)


def _time_distributed(a):
    """layers.TimeDistributed(Dense(...)): a dense layer on every step is the dense layer itself (it takes the last
    axis whatever the rank); other wrapped layers are refused."""
    inner = a["layer"]
    if not isinstance(inner, OpCall) or inner.op != "Dense":
        raise Refused("TimeDistributed over a layer other than Dense (not translated)")
    return inner


#: its op is the wrapped Dense's: the same weights, by the same names
C.layer(f"{K}TimeDistributed", "Dense", f"layer {BASE}", read=_time_distributed, to_ir=DENSE_WEIGHTS.to_ir,
        layer_arguments=("layer",))


def _affine(a) -> dict:
    center, scale = known(a["center"]), known(a["scale"])
    if NOT_LITERAL in (center, scale):
        raise Refused("center/scale given by a variable")
    return {"affine": scale, "bias": center}


def _batch_norm(a):
    _plain(a)
    only(a, renorm=False, synchronized=False)
    axis = known(a["axis"])
    if not isinstance(axis, int):
        raise Refused("axis other than one int")
    return OpCall("BatchNormalization", attrs={"num_features": None, "epsilon": a["epsilon"],
                                               "momentum": a["momentum"], "axis": axis, **_affine(a)})


C.layer(f"{K}BatchNormalization", "BatchNormalization", "axis=-1 momentum=0.99 epsilon=0.001 center=True scale=True "
        "beta_initializer='zeros' gamma_initializer='ones' moving_mean_initializer='zeros' "
        "moving_variance_initializer='ones' beta_regularizer=None gamma_regularizer=None beta_constraint=None "
        f"gamma_constraint=None renorm=False renorm_clipping=None renorm_momentum=0.99 synchronized=False {BASE}",
        read=_batch_norm, to_ir=NORM_WEIGHTS.to_ir)


def _group_norm(a):
    _plain(a)
    axis = known(a["axis"])
    if not isinstance(axis, int):
        raise Refused("axis other than one int")
    affine = _affine(a)
    if affine["affine"] != affine["bias"]:
        raise Refused("center and scale differing (the targets' group norms have both or neither)")
    return OpCall("GroupNormalization", attrs={"num_groups": a["groups"], "epsilon": a["epsilon"],
                                               "affine": affine["affine"], "axis": axis, "num_channels": None})


C.layer(f"{K}GroupNormalization", "GroupNormalization", "groups=32 axis=-1 epsilon=0.001 center=True scale=True "
        "beta_initializer='zeros' gamma_initializer='ones' beta_regularizer=None gamma_regularizer=None "
        f"beta_constraint=None gamma_constraint=None {BASE}", read=_group_norm, to_ir=NORM_WEIGHTS.to_ir)


def _layer_norm(a):
    _plain(a)
    if known(a["axis"]) not in (-1, [-1], (-1,)):
        raise Refused(f"axis={ast.unparse(a['axis']) if isinstance(a['axis'], ast.AST) else a['axis']} (only the "
                      "last axis is translated)")
    return OpCall("LayerNormalization", attrs={"axis": -1, "epsilon": a["epsilon"], "normalized_shape": None,
                                               **_affine(a)})


C.layer(f"{K}LayerNormalization", "LayerNormalization", "axis=-1 epsilon=0.001 center=True scale=True "
        "beta_initializer='zeros' gamma_initializer='ones' beta_regularizer=None gamma_regularizer=None "
        f"beta_constraint=None gamma_constraint=None {BASE}", read=_layer_norm, to_ir=NORM_WEIGHTS.to_ir)


def _embedding(a):
    penalties = _plain(a, {"embeddings_regularizer": "kernel"})
    only(a, mask_zero=False, weights=None, lora_rank=None, quantization_config=None)
    return OpCall("Embedding", attrs={"num_embeddings": a["input_dim"], "embedding_dim": a["output_dim"],
                                      **({"penalties": penalties} if penalties else {})})


C.layer(f"{K}Embedding", "Embedding", "input_dim output_dim embeddings_initializer='uniform' "
        "embeddings_regularizer=None embeddings_constraint=None mask_zero=False weights=None lora_rank=None "
        f"lora_alpha=None quantization_config=None {BASE}", read=_embedding,
        to_ir=EMBEDDING_WEIGHTS.to_ir)


def _attention(a):
    _plain(a)
    only(a, output_shape=None, attention_axes=None, sliding_window=None, use_gate=False)
    return OpCall("KerasMultiHeadAttention", attrs={k: a[k] for k in ("num_heads", "key_dim", "value_dim", "dropout",
                                                                      "use_bias")})


def _attention_to_ir(w, attrs) -> dict:
    """MultiHeadAttention's projections (EinsumDense layers) as the IR's [in, out] weights."""
    return per_head_projections_to_ir(w, ("query", "key", "value", "attention_output"))


C.layer(f"{K}MultiHeadAttention", "KerasMultiHeadAttention", "num_heads key_dim value_dim=None dropout=0.0 "
        "use_bias=True output_shape=None attention_axes=None sliding_window=None flash_attention=None "
        "kernel_initializer='glorot_uniform' bias_initializer='zeros' "
        f"{REGULARIZED} use_gate=False seed=None {BASE}", read=_attention, to_ir=_attention_to_ir,
        call="query value key=None value_mask=None key_mask=None attention_mask=None "
             "return_attention_scores=False use_causal_mask=False")


def _dropout(a):
    only(a, noise_shape=None)
    return OpCall("Dropout", attrs={"ratio": a["rate"]})


C.layer(f"{K}Dropout", "Dropout", f"rate noise_shape=None seed=None {BASE}", read=_dropout)
for _n in (1, 2, 3):  # whole channels (SpatialDropout1D's are last)
    C.layer(f"{K}SpatialDropout{_n}D", "Dropout", f"rate {'data_format=None ' if _n > 1 else ''}seed=None {BASE}",
            read=lambda a, n=_n: OpCall("Dropout", attrs={"ratio": a["rate"], "spatial": n, "layout": _layout(a)}))
C.layer(f"{K}Identity", "Identity", BASE, read=lambda a: OpCall("Identity"))
C.layer(f"{K}Reshape", "ReshapeItems", f"target_shape {BASE}",
        read=lambda a: OpCall("ReshapeItems", attrs={"shape": a["target_shape"]}))
C.layer(f"{K}Rescaling", "Rescale", f"scale offset=0.0 {BASE}",
        read=lambda a: OpCall("Rescale", attrs={"scale": a["scale"], "offset": a["offset"]}))
# the merge layers, called with a list of tensors
for _name, _combine in (("Add", "add"), ("Multiply", "multiply"), ("Average", "average"), ("Maximum", "maximum"),
                        ("Minimum", "minimum")):
    C.layer(f"{K}{_name}", "Merge", BASE, read=lambda a, m=_combine: OpCall("Merge", attrs={"combine": m}))
C.layer(f"{K}Subtract", "Difference", BASE, read=lambda a: OpCall("Difference"))
C.layer(f"{K}Concatenate", "Concat", f"axis=-1 {BASE}", read=lambda a: OpCall("Concat", attrs={"axis": a["axis"]}))
# the weight regularizers, as the factors of their penalty: l1 * sum(|w|) + l2 * sum(w ** 2)
R = "keras.regularizers."
C.function(f"{R}L1 {R}l1", "Regularizer", "l1=0.01", returns="python",
           read=lambda a: OpCall("Regularizer", attrs={"l1": a["l1"], "l2": 0.0}))
C.function(f"{R}L2 {R}l2", "Regularizer", "l2=0.01", returns="python",
           read=lambda a: OpCall("Regularizer", attrs={"l1": 0.0, "l2": a["l2"]}))
C.function(f"{R}L1L2 {R}l1_l2", "Regularizer", "l1=0.0 l2=0.0", returns="python",
           read=lambda a: OpCall("Regularizer", attrs={"l1": a["l1"], "l2": a["l2"]}))
# ... and their functional forms (`layers.add([x, y])`)
for _combine in ("add", "multiply", "average", "maximum", "minimum"):
    C.function(f"{K}{_combine}", "Merge", f"inputs {BASE}",
               read=lambda a, m=_combine: OpCall("Merge", [a["inputs"]], {"combine": m}))
C.function(f"{K}subtract", "Difference", f"inputs {BASE}", read=lambda a: OpCall("Difference", [a["inputs"]]))
C.reads(f"{K}concatenate", "Concat", f"inputs axis=-1 {BASE}", inputs="inputs", axis="axis")
C.layer(f"{K}Flatten", "Flatten", f"data_format=None {BASE}",
        read=lambda a: OpCall("Flatten", attrs={"axis": 1, "layout": _layout(a)}))

#: Keras activation name -> (IR op, attributes): as `layers.Activation(name)`, `activation=name`
ACTIVATION_OPS = {"relu": ("Relu", {}), "sigmoid": ("Sigmoid", {}), "tanh": ("Tanh", {}), "silu": ("SiLU", {}),
                  "swish": ("SiLU", {}), "gelu": ("Gelu", {"approximate": "none"}), "relu6": ("Relu6", {}),
                  "hard_sigmoid": ("HardSigmoid", {}), "hard_silu": ("HardSwish", {}),
                  "hard_swish": ("HardSwish", {}), "mish": ("Mish", {}), "softplus": ("Softplus", {}),
                  "elu": ("Elu", {"alpha": 1.0}), "softmax": ("Softmax", {"axis": -1}),
                  "log_softmax": ("LogSoftmax", {"axis": -1}), "leaky_relu": ("LeakyRelu", {"alpha": 0.2}),
                  "linear": ("Identity", {}), None: ("Identity", {})}


def activation_call(name) -> OpCall:
    """The IR op a Keras activation name computes."""
    op, attrs = ACTIVATION_OPS[name]
    return OpCall(op, attrs=dict(attrs))


def _activation_layer(a):
    name = known(a["activation"])
    if name not in ACTIVATION_OPS or name is None:
        raise Refused("an activation that is not a built-in name")
    return activation_call(name)


def _relu(a):
    only(a, negative_slope=0.0, threshold=0.0)
    bound = known(a["max_value"])
    if bound is None:
        return OpCall("Relu")
    if bound == 6:
        return OpCall("Relu6")
    raise Refused("max_value other than None or 6")


C.layer(f"{K}Activation", "Activation", f"activation {BASE}", read=_activation_layer)
C.layer(f"{K}ReLU", "Relu", f"max_value=None negative_slope=0.0 threshold=0.0 {BASE}", read=_relu)
C.layer(f"{K}LeakyReLU", "LeakyRelu", f"negative_slope=0.3 {BASE}",
        read=lambda a: OpCall("LeakyRelu", attrs={"alpha": a["negative_slope"]}))
C.layer(f"{K}ELU", "Elu", f"alpha=1.0 {BASE}", read=lambda a: OpCall("Elu", attrs={"alpha": a["alpha"]}))
C.layer(f"{K}Softmax", "Softmax", f"axis=-1 {BASE}", read=lambda a: OpCall("Softmax", attrs={"axis": a["axis"]}))


def _pool(op, rank):
    def read(a):
        strides = a["strides"] if known(a["strides"]) is not None else a["pool_size"]
        pads = _padding(a)  # "same": by an amount that depends on the input size, left out of averages
        return OpCall(op, attrs={"rank": rank, "kernel_shape": a["pool_size"], "strides": strides,
                                 "pads": "same" if pads == "same" else 0, "layout": _layout(a)})
    return read


def _global_pool(op, rank):
    def read(a):
        return OpCall(op, attrs={"rank": rank, "keepdims": a["keepdims"], "layout": _layout(a)})
    return read


for _n in (1, 2, 3):
    _two = "2" if _n == 1 else "(" + ",".join("2" * _n) + ")"
    C.layer(f"{K}MaxPooling{_n}D", "MaxPool", f"pool_size={_two} strides=None padding='valid' data_format=None "
            f"{BASE}", read=_pool("MaxPool", _n))
    C.layer(f"{K}AveragePooling{_n}D", "AveragePool", f"pool_size strides=None padding='valid' data_format=None "
            f"{BASE}", read=_pool("AveragePool", _n))
    C.layer(f"{K}GlobalAveragePooling{_n}D", "GlobalAveragePool", f"data_format=None keepdims=False {BASE}",
            read=_global_pool("GlobalAveragePool", _n))
    C.layer(f"{K}GlobalMaxPooling{_n}D", "GlobalMaxPool", f"data_format=None keepdims=False {BASE}",
            read=_global_pool("GlobalMaxPool", _n))


def _upsampling(a):
    size = known(a["size"])
    if isinstance(size, (tuple, list)) and len(set(size)) == 1:
        size = size[0]
    if not isinstance(size, int):
        raise Refused("an upsampling size other than one integer factor for both axes")
    mode = known(a["interpolation"])
    if mode not in ("nearest", "bilinear"):
        raise Refused(f"interpolation={mode!r}")
    return OpCall("Resize", attrs={"rank": 2, "scale": size, "mode": mode, "layout": _layout(a)})


C.layer(f"{K}UpSampling2D", "Resize", f"size=(2,2) data_format=None interpolation='nearest' {BASE}",
        read=_upsampling)


def _zero_padding(rank):
    """ZeroPadding{1,2}D's `padding` as one (before, after) pair per spatial axis; the widths may be expressions.
    A padding held by a variable (CCT's tokenizer) is kept as `padding`, for the target's `keras_zero_padding`
    helper to read its structure when it runs."""
    def read(a):
        node = a["padding"]
        items = list(node.elts) if isinstance(node, (ast.Tuple, ast.List)) else None
        if isinstance(known(node), int):
            pairs_ = [(node, node)] * rank
        elif items and rank == 1 and len(items) == 2:
            pairs_ = [tuple(items)]  # ZeroPadding1D((left, right))
        elif items and len(items) == rank and all(isinstance(i, (ast.Tuple, ast.List)) and len(i.elts) == 2
                                                  for i in items):
            pairs_ = [tuple(i.elts) for i in items]
        elif items and len(items) == rank and not any(isinstance(i, (ast.Tuple, ast.List)) for i in items):
            pairs_ = [(i, i) for i in items]  # one symmetric width per axis
        elif items is None and known(node) is NOT_LITERAL:  # a variable: its structure is read when it runs
            return OpCall("Pad", attrs={"rank": rank, "padding": node, "layout": _layout(a)})
        else:
            raise Refused("padding whose structure (int, pair or pairs) cannot be read")
        return OpCall("Pad", attrs={"rank": rank, "pads": pairs_, "layout": _layout(a)})
    return read


C.layer(f"{K}RMSNormalization", "RMSNormalization", f"axis=-1 epsilon=1e-06 {BASE}",
        read=lambda a: only(a, axis=-1) or OpCall("RMSNormalization", attrs={"features": None,
                                                                              "epsilon": a["epsilon"]}),
        to_ir=lambda w, attrs: {"scale": w["scale"]})

C.layer(f"{K}ZeroPadding1D", "Pad", f"padding=1 data_format=None {BASE}", read=_zero_padding(1))
C.layer(f"{K}ZeroPadding2D", "Pad", f"padding=(1,1) data_format=None {BASE}", read=_zero_padding(2))


# -- functions: keras.ops and keras.activations -----------------------------------------------------------
_fn = partial(C.reads, inputs="x")


def _ops(names: str) -> str:
    return " ".join(f"keras.ops.{n}" for n in names.split())


for _name, _op in (("relu", "Relu"), ("sigmoid", "Sigmoid"), ("tanh", "Tanh"), ("exp", "Exp"), ("log", "Log"),
                   ("sqrt", "Sqrt"), ("rsqrt", "Rsqrt"), ("abs", "Abs"), ("negative", "Neg"), ("sin", "Sin"),
                   ("cos", "Cos"), ("erf", "Erf"), ("floor", "Floor"), ("ceil", "Ceil"), ("square", "Square"),
                   ("silu", "SiLU"), ("relu6", "Relu6"), ("hard_sigmoid", "HardSigmoid"), ("hard_silu", "HardSwish"),
                   ("softplus", "Softplus")):
    _fn(_ops(_name) + (f" keras.activations.{_name}" if _name in ("sigmoid", "tanh", "silu", "relu6", "softplus",
                                                                   "hard_sigmoid", "hard_silu") else ""), _op, "x")
_fn("keras.activations.relu", "Relu", "x negative_slope=0.0 max_value=None threshold=0.0",
    check=lambda a: only(a, negative_slope=0.0, max_value=None, threshold=0.0))
_fn("keras.activations.mish", "Mish", "x")
for _name, _op in (("add", "Add"), ("subtract", "Sub"), ("multiply", "Mul"), ("divide", "Div"), ("maximum", "Max"),
                   ("minimum", "Min"), ("power", "Pow"), ("matmul", "MatMul"), ("dot", "Dot")):
    _fn(_ops(_name), _op, "x1 x2", inputs="x1 x2")
for _op, (_name, _) in COMPARISONS.items():
    _fn(_ops(_name), _op, "x1 x2", inputs="x1 x2")
_fn(_ops("logical_not"), "Not", "x")
C.function("keras.ops.gelu", "Gelu", "x approximate=True", read=read_gelu)
C.function("keras.activations.gelu", "Gelu", "x approximate=False", read=read_gelu)
_fn("keras.ops.softmax keras.activations.softmax", "Softmax", "x axis=-1", axis="axis")
_fn("keras.ops.log_softmax keras.activations.log_softmax", "LogSoftmax", "x axis=-1", axis="axis")
_fn("keras.ops.leaky_relu", "LeakyRelu", "x negative_slope=0.2", alpha="negative_slope")
_fn("keras.ops.elu", "Elu", "x alpha=1.0", alpha="alpha")
_fn("keras.ops.nan_to_num", "NanToNum", "x nan=0.0 posinf=None neginf=None", nan="nan", posinf="posinf",
    neginf="neginf")
C.function("keras.ops.hard_shrink", "Shrink", "x threshold=0.5",
           read=lambda a: OpCall("Shrink", [a["x"]], {"lambd": a["threshold"], "bias": 0.0}))
C.function("keras.ops.soft_shrink", "Shrink", "x threshold=0.5",
           read=lambda a: OpCall("Shrink", [a["x"]], {"lambd": a["threshold"], "bias": a["threshold"]}))
_fn("keras.ops.concatenate", "Concat", "xs axis=0", inputs="xs", axis="axis")
_fn("keras.ops.stack", "Stack", "x axis=0", axis="axis")
C.function("keras.ops.meshgrid", "MeshGrid", "*x indexing='xy'",
           read=lambda a: OpCall("MeshGrid", [list(a["x"])], {"indexing": a["indexing"]}), returns="tensors")
_fn("keras.ops.reshape", "Reshape", "x newshape", shape="newshape")
_fn("keras.ops.image.extract_patches", "ExtractPatches", "images size strides=None dilation_rate=1 padding='valid' "
    "data_format=None", inputs="images", size="size",
    check=lambda a: only(a, strides=None, dilation_rate=1, padding="valid", data_format=None))
_fn("keras.ops.transpose", "Transpose", "x axes=None", perm="axes")
_fn("keras.ops.swapaxes", "SwapAxes", "x axis1 axis2", axis1="axis1", axis2="axis2")
_fn("keras.ops.expand_dims", "Unsqueeze", "x axis", axis="axis")
_fn("keras.ops.squeeze", "Squeeze", "x axis=None", axis="axis")
_fn("keras.ops.split", "Split", "x indices_or_sections axis=0", returns="tensors", sections="indices_or_sections",
    axis="axis")
_fn("keras.ops.einsum", "Einsum", "subscripts *operands", inputs="operands", equation="subscripts")
_fn("keras.ops.where", "Where", "condition x1=None x2=None", inputs="condition x1 x2",
    check=lambda a: required(a, "x1", "x2"))
_fn("keras.ops.clip", "Clip", "x x_min x_max", min="x_min", max="x_max")
_fn("keras.ops.tril", "Tril", "x k=0", k="k")
_fn("keras.ops.broadcast_to", "Expand", "x shape", sizes="shape")
_fn("keras.ops.shape", "Shape", "x", returns="python", index=None)
_fn("keras.ops.ones", "ConstantOfShape", "shape dtype=None", inputs="", shape="shape", value=1.0,
    check=lambda a: only(a, dtype=None))
_fn("keras.ops.zeros", "ConstantOfShape", "shape dtype=None", inputs="", shape="shape", value=0.0,
    check=lambda a: only(a, dtype=None))
C.function("keras.ops.pad", "Pad", "x pad_width mode='constant' constant_values=None",
           read=lambda a: read_pad(a, "x", "pad_width", "constant_values",
                                   {"constant": "constant", "reflect": "reflect", "edge": "edge", "wrap": "wrap"}))
_fn("keras.ops.arange", "Range", "start stop=None step=None dtype=None", inputs="", start="start", stop="stop",
    step="step", dtype="dtype", check=lambda a: dtype_name(a["dtype"]))
_fn("keras.ops.linspace", "Linspace", "start stop num=50 endpoint=True retstep=False dtype=None axis=0", inputs="",
    start="start", stop="stop", num="num", dtype="float32",
    check=lambda a: only(a, endpoint=True, retstep=False, dtype=None, axis=0))

for _name, _op in (("sign", "Sign"), ("log_sigmoid", "LogSigmoid")):
    _fn(_ops(_name), _op, "x")
_fn("keras.activations.softsign", "Softsign", "x")
_fn("keras.ops.round", "Round", "x decimals=0", check=lambda a: only(a, decimals=0))
_fn("keras.ops.cumsum", "CumSum", "x axis=None dtype=None", axis="axis", dtype="dtype",
    check=lambda a: required(a, "axis"))
_fn("keras.ops.flip", "Flip", "x axis=None", axes="axis", check=lambda a: required(a, "axis"))
_fn("keras.ops.roll", "Roll", "x shift axis=None", shifts="shift", axes="axis")
_fn("keras.ops.tile", "Tile", "x repeats", repeats="repeats")
_fn("keras.ops.repeat", "Repeat", "x repeats axis=None", repeats="repeats", axis="axis")
_fn("keras.ops.triu", "Triu", "x k=0", k="k")
for _name, _op in (("argmax", "ArgMax"), ("argmin", "ArgMin")):
    _fn(_ops(_name), _op, "x axis=None keepdims=False", axis="axis", keepdims="keepdims")
_fn("keras.ops.take", "Take", "x indices axis=None", inputs="x indices", axis="axis",
    check=lambda a: required(a, "axis"))
_fn("keras.ops.unstack", "Unstack", "x num=None axis=0", axis="axis", returns="tensors")
for _name, _value in (("zeros_like", 0.0), ("ones_like", 1.0)):
    _fn(_ops(_name), "ConstantLike", "x dtype=None", value=_value, dtype="dtype")
_fn("keras.ops.full_like", "ConstantLike", "x fill_value dtype=None", value="fill_value", dtype="dtype")
for _name, _op in (("var", "ReduceVar"), ("std", "ReduceStd")):
    _fn(_ops(_name), _op, "x axis=None keepdims=False", axis="axis", keepdims="keepdims", correction=0)
_fn("keras.ops.norm", "ReduceL2", "x ord=None axis=None keepdims=False", axis="axis", keepdims="keepdims",
    check=lambda a: only(a, ord=None))
_fn("keras.ops.cast", "Cast", "x dtype", to="dtype")
_fn("keras.ops.stop_gradient", "StopGradient", "variable", inputs="variable")
C.function("keras.ops.convert_to_tensor", "AsTensor", "x dtype=None sparse=None ragged=None", read=lambda a: OpCall(
    "AsTensor", [a["x"]]) if known(a["dtype"]) is None else OpCall("Cast", [a["x"]], {"to": a["dtype"]}))


def _one_hot(a):
    """keras.ops.one_hot: float32 unless a dtype is given (PyTorch's are int64), along the last axis."""
    only(a, axis=-1, sparse=False)
    dtype = known(a["dtype"])
    if dtype is not None and dtype not in DTYPE_NAMES:
        raise Refused("dtype given by a variable")
    return OpCall("OneHot", [a["x"]], {"num_classes": a["num_classes"], "dtype": dtype or "float32"})


C.function("keras.ops.one_hot", "OneHot", "x num_classes axis=-1 dtype=None sparse=False", read=_one_hot)
_fn("keras.ops.glu", "Glu", "x axis=-1", axis="axis")
_fn("keras.ops.top_k", "TopK", "x k sorted=True", k="k", returns="tensors", check=lambda a: only(a, sorted=True))


def _normalize(a):
    only(a, order=2)
    epsilon = a["epsilon"] if known(a["epsilon"]) is not None else 1e-7  # keras.config.epsilon()'s default
    return OpCall("LpNormalize", [a["x"]], {"axis": a["axis"], "epsilon": epsilon})


C.function("keras.ops.normalize", "LpNormalize", "x axis=-1 order=2 epsilon=None", read=_normalize)


def _random(op: str, defaults: dict):
    """keras.random.normal / uniform with their default distribution; the draw comes from the target's random
    source (a seed given is not carried over: the frameworks' generators differ)."""
    def read(a):
        only(a, **defaults)
        return OpCall(op, [], {"shape": a["shape"], "dtype": a["dtype"]})
    return read


C.function("keras.random.normal", "RandomNormal", "shape mean=0.0 stddev=1.0 dtype=None seed=None",
           read=_random("RandomNormal", {"mean": 0.0, "stddev": 1.0}))
C.function("keras.random.uniform", "RandomUniform", "shape minval=0.0 maxval=1.0 dtype=None seed=None",
           read=_random("RandomUniform", {"minval": 0.0, "maxval": 1.0}))
_fn(_ops("logsumexp"), "ReduceLogSumExp", "x axis=None keepdims=False", axis="axis", keepdims="keepdims")
for _name, _op in (("mean", "ReduceMean"), ("sum", "ReduceSum"), ("max", "ReduceMax"), ("min", "ReduceMin"),
                   ("all", "ReduceAll"), ("any", "ReduceAny")):
    _fn(_ops(_name), _op, "x axis=None keepdims=False" + (" initial=None" if _name in ("max", "min") else ""),
        axis="axis", keepdims="keepdims", check=(lambda a: only(a, initial=None)) if _name in ("max", "min") else None)


# -- how Keras model code is recognised --------------------------------------------------------------
class KerasWeightSource(WeightSource):
    def owns(self, obj) -> bool:
        import keras

        return isinstance(obj, keras.layers.Layer)

    def layer_weights(self, layer) -> dict:
        import keras

        if isinstance(layer, keras.layers.Bidirectional):  # two layers whose weights have the same names
            return {f"{side}.{v.name}": np.asarray(v) for side in ("forward_layer", "backward_layer")
                    for v in getattr(layer, side).weights}
        if isinstance(layer, keras.layers.MultiHeadAttention):  # four projections, each a kernel and a bias
            return {f"{v.path.split('/')[-2]}.{v.name}": np.asarray(v) for v in layer.weights}
        return {v.name: np.asarray(v) for v in layer.weights}

    def members(self, obj) -> list | None:
        import keras

        if isinstance(obj, keras.Sequential):
            return list(obj.layers)
        return list(obj) if isinstance(obj, (list, tuple)) else None

    def mapping(self, obj) -> dict | None:
        return dict(obj) if isinstance(obj, dict) else None

    def own_weights(self, obj) -> dict:
        return {n: np.asarray(v) for n, v in _attributes(obj).items() if _is_variable(v)}

    def children(self, obj) -> dict:
        import keras

        return held_layers(_attributes(obj), lambda v: isinstance(v, keras.layers.Layer))


def _is_variable(value) -> bool:
    """A Keras variable, or a TensorFlow one a layer written for TensorFlow holds (`tf.Variable(...)`, which Keras 3
    computes with but does not list among the layer's weights)."""
    import keras

    tensorflow = sys.modules.get("tensorflow")
    return isinstance(value, keras.Variable) or tensorflow is not None and isinstance(value, tensorflow.Variable)


def _attributes(obj) -> dict:
    """The public attributes a Keras layer instance holds (those its model code assigned)."""
    return {n: v for n, v in vars(obj).items() if not n.startswith("_")}


einops_layers(C, "einops.layers.keras")
C.weight_attributes = {"Embedding": {"embeddings": ("W", False)},
                       "Dense": {"kernel": ("W", False), "bias": ("B", False)},
                       "Conv": {"kernel": ("W", "spatial_first"), "bias": ("B", False)},
                       "LayerNormalization": {"gamma": ("scale", False), "beta": ("B", False)}}
C.config_attributes = {"Dense": {"units": "units"}, "Conv": {"filters": "filters"}, "Dropout": {"rate": "ratio"},
                       "Embedding": {"input_dim": "num_embeddings", "output_dim": "embedding_dim"},
                       "LayerNormalization": {"epsilon": "epsilon"}} | {
    f"{rnn}Cell": {"units": "hidden_size"} for rnn in ("LSTM", "GRU", "RNN")}  # TorchCell keeps `units` too

C.source = SourceSkeleton(
    sequential_layers="layers", sequential_append="add",
    module_classes=frozenset({"keras.layers.Layer", "keras.Layer", "keras.Model", "keras.models.Model"}),
    layer_classes=frozenset({"keras.layers.Layer", "keras.Layer"}),
    base_options=True,
    containers={"keras.Sequential": "sequential", "keras.models.Sequential": "sequential"},
    parameter_classes={"keras.Variable": True, "keras.variables.Variable": True, "tensorflow.Variable": True},
    constant_attributes={"compute_dtype": "float32", "variable_dtype": "float32"},
    init_module="keras.initializers",
    initializer_modules={"keras.initializers": {
        **{n: "zeros" for n in ("Zeros", "zeros")}, **{n: "ones" for n in ("Ones", "ones")},
        **{n: "normal" for n in ("RandomNormal", "TruncatedNormal", "GlorotNormal", "HeNormal", "LecunNormal",
                                 "VarianceScaling", "Orthogonal", "random_normal", "truncated_normal")},
        **{n: "uniform" for n in ("RandomUniform", "GlorotUniform", "HeUniform", "LecunUniform", "random_uniform",
                                  "glorot_uniform")}},
        # TensorFlow's own (`tf.random_uniform_initializer()`, keras.io's VQ-VAE)
        "tensorflow": {"zeros_initializer": "zeros", "ones_initializer": "ones",
                       "random_normal_initializer": "normal", "truncated_normal_initializer": "normal",
                       "random_uniform_initializer": "uniform", "glorot_uniform_initializer": "uniform",
                       "glorot_normal_initializer": "normal"}},
    initializers={},
    tensor_attributes={"shape": lambda x: OpCall("Shape", [x], {"index": None}),
                       "ndim": lambda x: OpCall("Rank", [x]), "dtype": lambda x: OpCall("DType", [x])},
    forward="call",
    training_parameter="training",
    plain_containers=True,
    weight_method="add_weight",
    loss_method="add_loss",
    named_functions={"activation": "keras.activations", "recurrent_activation": "keras.activations"},
    build_method="build",
    weights=KerasWeightSource(),
    config_methods=frozenset({"get_config", "from_config", "compute_output_shape", "compute_output_spec",
                              "train_step", "test_step", "predict_step", "compute_loss", "compile", "metrics"}),
    bookkeeping=frozenset({"keras.metrics", "keras.random.SeedGenerator"}),
    roots=frozenset({"einops.layers.keras", "tensorflow"}),
    dtypes=TF_DTYPES,
    constants={"tensorflow.newaxis": None},
)

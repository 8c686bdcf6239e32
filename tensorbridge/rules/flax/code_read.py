"""Flax NNX model code -> IR ops, as the transpiler reads it (see rules/code.py): `flax.nnx` layers and activation
functions, `jax.numpy` / `jax.lax` calls and the methods of jax arrays. The rows sit on the same table as the Flax
writers (rules/flax/code.py), so one table reads and writes Flax code; each layer row's `to_ir` is the inverse of
its writer's `from_ir`.

NNX layers take their input size as an argument and are channels-last, so the target writes layers of known size
in the source's layout. The `rngs` every constructor passes on is dropped (the target draws its own initial
values, and `port_weights` copies the trained ones). NNX switches dropout and batch statistics for the whole
model (`model.eval()`); a per-call `deterministic=` or `use_running_average=` is refused.
"""

from __future__ import annotations

import ast
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
    held_layers,
    holds_dtype,
    known,
    only,
    pairs,
    read_gelu,
    required,
)
from tensorbridge.rules.flax.code import NORM_WEIGHTS, C
from tensorbridge.rules.flax.code_recurrent import nnx_recurrent_to_ir
from tensorbridge.rules.numpy_code import DENSE_WEIGHTS, conv_weights_to_ir, per_head_projections_to_ir, shape_argument
from tensorbridge.rules.recurrent import NNX_CALL

NNX = "flax.nnx."
JNP = "jax.numpy."
#: jax.nn.initializers' functions (nnx.initializers': the same) by the distribution their initial values are drawn
#: from (without their scales, but for normal's and uniform's)
INITIALIZER_KINDS = {**{n: "zeros" for n in ("zeros", "zeros_init")}, **{n: "ones" for n in ("ones", "ones_init")},
                     **{n: "normal" for n in ("normal", "truncated_normal", "xavier_normal", "glorot_normal",
                                              "lecun_normal", "he_normal", "kaiming_normal", "variance_scaling",
                                              "orthogonal")},
                     **{n: "uniform" for n in ("uniform", "xavier_uniform", "glorot_uniform", "lecun_uniform",
                                               "he_uniform", "kaiming_uniform")}}
#: arguments that change the arithmetic (dtypes, precision, custom kernels): only their defaults are translated
NUMERICS = ("dtype", "param_dtype", "precision", "dot_general", "promote_dtype", "preferred_element_type",
            "conv_general_dilated", "mask", "axis_name", "axis_index_groups")
#: keyword-only arguments of the layers that do not change what they compute once trained
INIT = "kernel_init=None bias_init=None rngs=None kernel_metadata=None bias_metadata=None"


def _numerics(a) -> None:
    only(a, **{n: None for n in NUMERICS if n in a})


def _rank(a, name: str) -> int:
    """The number of spatial dims a kernel or window size names (an int is one, as Flax reads it)."""
    node = a[name]
    if isinstance(node, (ast.Tuple, ast.List)):
        return len(node.elts)
    if isinstance(known(node), int):
        return 1
    raise Refused(f"{name} given by a variable (its length is the layer's number of spatial dims)")


def _padding(a, rank: int):
    """Flax's padding as the IR's: "same"/"valid", or one symmetric width per spatial dim."""
    padding = known(a["padding"])
    if isinstance(padding, str):
        if padding.upper() in ("SAME", "VALID"):
            return padding.lower()
        raise Refused(f"padding={padding!r}")
    if isinstance(padding, int):
        return padding
    widths = _pad_pairs(padding, rank)
    if any(lo != hi for lo, hi in widths):
        raise Refused("asymmetric padding pairs (pad the input explicitly first)")
    return tuple(lo for lo, _ in widths)


def _pad_pairs(padding, rank: int) -> list[tuple[int, int]]:
    """Explicit padding (an int, or a (low, high) pair per spatial dim) as pairs; Refused when it is not literal."""
    if isinstance(padding, int):
        return [(padding, padding)] * rank
    if isinstance(padding, (list, tuple)) and len(padding) == rank and all(
            isinstance(p, (list, tuple)) and len(p) == 2 for p in padding):
        return [tuple(p) for p in padding]
    raise Refused("padding given by a variable or in a form other than 'SAME', 'VALID', an int or (low, high) pairs")


# -- layers ------------------------------------------------------------------------------------------
def _conv(a):
    _numerics(a)
    only(a, input_dilation=1)
    rank = _rank(a, "kernel_size")
    strides = a["strides"] if known(a["strides"]) is not None else 1
    return OpCall("Conv", attrs={"rank": rank, "in_channels": a["in_features"], "filters": a["out_features"],
                                 "kernel_shape": a["kernel_size"], "strides": strides, "pads": _padding(a, rank),
                                 "dilations": a["kernel_dilation"], "group": a["feature_group_count"],
                                 "bias": a["use_bias"], "layout": "channels_last", "activation": None})


def _transposed_pads(a, rank: int):
    """(pads, output_padding) of the IR's transposed convolution (PyTorch's) for Flax's padding. Flax pads the
    stride-dilated input by (low, high) per dim and convolves; PyTorch pads by dilation * (kernel - 1) - pads low
    and that plus output_padding high, so pads = d(k-1) - low and output_padding = high - low, where those fit."""
    sizes = [pairs(a[n], rank) for n in ("kernel_size", "strides", "kernel_dilation")]
    if NOT_LITERAL in sizes:
        raise Refused("transposed convolution whose kernel size, strides or dilation is a variable (the padding is "
                      "computed from them)")
    padding = known(a["padding"])
    pads, extra = [], []
    for i, (k, s, d) in enumerate(zip(*sizes)):
        span = d * (k - 1) + 1
        if isinstance(padding, str) and padding.upper() == "SAME":
            low = span - 1 if s > span - 1 else -(-(span + s - 2) // 2)
            high = span + s - 2 - low
        elif isinstance(padding, str) and padding.upper() == "VALID":
            low, high = span - 1, s - 1 + max(span - s, 0)
        elif isinstance(padding, str):
            raise Refused(f"padding={padding!r}")
        else:
            low, high = _pad_pairs(padding, rank)[i]
        pad, out = span - 1 - low, high - low
        if pad < 0 or not 0 <= out < max(s, d):
            raise Refused(f"transposed convolution padding ({low}, {high}), which PyTorch's and Keras' form cannot "
                          "express (it would need a negative output_padding)")
        pads.append(pad)
        extra.append(out)
    return tuple(pads), tuple(extra)


def _conv_transpose(a):
    _numerics(a)
    rank = _rank(a, "kernel_size")
    if known(a["strides"]) is None:
        a["strides"] = 1
    if known(a["kernel_dilation"]) is None:
        a["kernel_dilation"] = 1
    if known(a["transpose_kernel"]) not in (True, False):
        raise Refused("transpose_kernel given by a variable")
    pads, extra = _transposed_pads(a, rank)
    return OpCall("ConvTranspose", attrs={"rank": rank, "in_channels": a["in_features"], "filters": a["out_features"],
                                          "kernel_shape": a["kernel_size"], "strides": a["strides"], "pads": pads,
                                          "output_padding": extra, "dilations": a["kernel_dilation"], "group": 1,
                                          "bias": a["use_bias"], "layout": "channels_last", "activation": None})


def _conv_transpose_to_ir(w, attrs):
    """Flax's transposed kernel: (k..., out, in) with transpose_kernel (the gradient of a convolution, as Keras and
    PyTorch), else (k..., in, out) applied without flipping, which is the other form's kernel flipped and swapped."""
    kernel = w["kernel"]
    if not attrs.get("transpose_kernel", False):
        kernel = np.flip(kernel, tuple(range(kernel.ndim - 2))).swapaxes(-1, -2)
    return conv_weights_to_ir({**w, "kernel": kernel}, attrs)


CONV = ("in_features out_features kernel_size strides=1 padding='SAME' input_dilation=1 kernel_dilation=1 "
        "feature_group_count=1 use_bias=True mask=None dtype=None param_dtype=None precision=None kernel_init=None "
        "bias_init=None conv_general_dilated=None promote_dtype=None preferred_element_type=None rngs=None "
        "kernel_metadata=None bias_metadata=None")
C.layer(f"{NNX}Conv", "Conv", CONV, read=_conv, to_ir=conv_weights_to_ir)
C.layer(f"{NNX}ConvTranspose", "ConvTranspose",
        "in_features out_features kernel_size strides=None padding='SAME' kernel_dilation=None use_bias=True mask=None "
        "dtype=None param_dtype=None precision=None kernel_init=None bias_init=None transpose_kernel=False "
        "promote_dtype=None preferred_element_type=None rngs=None kernel_metadata=None bias_metadata=None",
        read=_conv_transpose, to_ir=_conv_transpose_to_ir)


def _linear(a):
    _numerics(a)
    return OpCall("Dense", attrs={"in_features": a["in_features"], "units": a["out_features"], "bias": a["use_bias"],
                                  "activation": None})


C.layer(f"{NNX}Linear", "Dense", "in_features out_features use_bias=True dtype=None param_dtype=None precision=None "
        "kernel_init=None bias_init=None dot_general=None promote_dtype=None preferred_element_type=None rngs=None "
        "kernel_metadata=None bias_metadata=None", read=_linear, to_ir=DENSE_WEIGHTS.to_ir)


def _affine(a) -> dict:
    scale, bias = known(a["use_scale"]), known(a["use_bias"])
    if NOT_LITERAL in (scale, bias):
        raise Refused("use_scale/use_bias given by a variable")
    return {"affine": scale, "bias": bias}


NORM = ("dtype=None param_dtype=None use_bias=True use_scale=True bias_init=None scale_init=None {axes} "
        "axis_name=None axis_index_groups=None use_fast_variance=True promote_dtype=None rngs=None bias_metadata=None "
        "scale_metadata=None")


def _batch_norm(a):
    _numerics(a)
    only(a, use_running_average=False)
    axis = known(a["axis"])
    if not isinstance(axis, int):
        raise Refused("axis other than one int")
    return OpCall("BatchNormalization", attrs={"num_features": a["num_features"], "epsilon": a["epsilon"],
                                               "momentum": a["momentum"], "axis": axis, **_affine(a)})


def _layer_norm(a):
    _numerics(a)
    only(a, reduction_axes=-1, feature_axes=-1)
    return OpCall("LayerNormalization", attrs={"axis": -1, "epsilon": a["epsilon"],
                                               "normalized_shape": a["num_features"], **_affine(a)})


def _group_norm(a):
    _numerics(a)
    only(a, reduction_axes=None)
    groups, size = known(a["num_groups"]), known(a["group_size"])
    if (groups is None) == (size is None):
        raise Refused("give one of num_groups and group_size")
    num_groups = a["num_groups"] if size is None else ast.BinOp(a["num_features"], ast.FloorDiv(), a["group_size"])
    return OpCall("GroupNormalization", attrs={"num_groups": num_groups, "num_channels": a["num_features"],
                                               "epsilon": a["epsilon"], "axis": -1, **_affine(a)})


C.layer(f"{NNX}BatchNorm", "BatchNormalization", "num_features use_running_average=False axis=-1 momentum=0.99 "
        "epsilon=1e-05 " + NORM.format(axes=""), read=_batch_norm,
        to_ir=NORM_WEIGHTS.to_ir)
C.layer(f"{NNX}LayerNorm", "LayerNormalization",
        "num_features epsilon=1e-06 " + NORM.format(axes="reduction_axes=-1 feature_axes=-1"), read=_layer_norm,
        to_ir=NORM_WEIGHTS.to_ir)
C.layer(f"{NNX}RMSNorm", "RMSNormalization", "num_features epsilon=1e-06 dtype=None param_dtype=None use_scale=True "
        "scale_init=None reduction_axes=-1 feature_axes=-1 axis_name=None axis_index_groups=None "
        "use_fast_variance=True rngs=None",
        read=lambda a: _numerics(a) or only(a, use_scale=True, scale_init=None, reduction_axes=-1, feature_axes=-1,
                                            axis_name=None, axis_index_groups=None) or OpCall(
            "RMSNormalization", attrs={"features": a["num_features"], "epsilon": a["epsilon"]}),
        to_ir=lambda w, attrs: {"scale": w["scale"]})
C.layer(f"{NNX}GroupNorm", "GroupNormalization",
        "num_features num_groups=32 group_size=None epsilon=1e-06 " + NORM.format(axes="reduction_axes=None"),
        read=_group_norm, to_ir=NORM_WEIGHTS.to_ir)


def _embed(a):
    _numerics(a)
    return OpCall("Embedding", attrs={"num_embeddings": a["num_embeddings"], "embedding_dim": a["features"]})


C.layer(f"{NNX}Embed", "Embedding", "num_embeddings features dtype=None param_dtype=None embedding_init=None "
        "promote_dtype=None rngs=None embedding_metadata=None", read=_embed,
        to_ir=lambda w, attrs: {"W": w["embedding"]})


def _linear_general(a):
    """nnx.LinearGeneral over the input's last axes (`axis=-1`, or the last len(in_features) ones): a dense layer
    from their flattened size to that of `out_features`, reshaped to it (flax's lm1b/wmt attention projections)."""
    _numerics(a)
    only(a, batch_axis=None, dot_general=None, dot_general_cls=None)
    given = a["in_features"]
    count = len(given.elts) if isinstance(given, (ast.Tuple, ast.List)) else 1
    if known(a["axis"]) not in (-1, tuple(range(-count, 0)), list(range(-count, 0))) or \
            known(a["axis"]) == -1 and count != 1:
        raise Refused("axis other than the input's last len(in_features) axes")
    return OpCall("LinearGeneral", attrs={"in_features": given, "out_features": a["out_features"],
                                          "bias": a["use_bias"]})


def _linear_general_to_ir(w, attrs):
    """The kernel (in_features..., out_features...) as a dense layer's (flattened sizes), the bias flattened."""
    ins = int(np.prod(w["kernel"].shape[:len(np.atleast_1d(attrs["in_features"]))]))
    kernel = w["kernel"].reshape(ins, -1)
    return DENSE_WEIGHTS.to_ir({"kernel": kernel, **({"bias": w["bias"].reshape(-1)} if "bias" in w else {})},
                               attrs)


C.layer(f"{NNX}LinearGeneral", "LinearGeneral", "in_features out_features * axis=-1 batch_axis=None use_bias=True "
        "dtype=None param_dtype=None kernel_init=None bias_init=None precision=None promote_dtype=None "
        "dot_general=None dot_general_cls=None preferred_element_type=None rngs=None kernel_metadata=None "
        "bias_metadata=None", read=_linear_general, to_ir=_linear_general_to_ir)


def _einsum_layer(a):
    """nnx.Einsum: einsum(equation, x, kernel of kernel_shape), plus a bias of bias_shape (Gemma's projections)."""
    _numerics(a)
    only(a, einsum_op=None)
    return OpCall("NnxEinsum", attrs={k: a[k] for k in ("einsum_str", "kernel_shape", "bias_shape")})


C.layer(f"{NNX}Einsum", "NnxEinsum", "einsum_str kernel_shape bias_shape=None dtype=None param_dtype=None "
        "precision=None kernel_init=None bias_init=None promote_dtype=None einsum_op=None "
        "preferred_element_type=None rngs=None kernel_metadata=None bias_metadata=None", read=_einsum_layer,
        to_ir=lambda w, attrs: {"W": w["kernel"], **({"B": w["bias"]} if "bias" in w else {})})


def _attention(a):
    _numerics(a)
    if known(a["decode"]) not in (None, False):
        raise Refused("decode (autoregressive decoding with a cache) is not translated")
    only(a, num_kv_heads=None, attention_fn=None, normalize_qk=False,
         qkv_promote_dtype=None, out_promote_dtype=None, ln_promote_dtype=None, qkv_dot_general=None,
         out_dot_general=None, qkv_dot_general_cls=None, out_dot_general_cls=None)
    deterministic = known(a["deterministic"])  # False: dropout while training (model.eval() turns it off)
    if deterministic not in (None, False, True):
        raise Refused("deterministic given by a variable (switch the model with model.eval() instead)")
    attrs = {k: a[k] for k in ("num_heads", "in_features", "qkv_features", "out_features", "in_kv_features",
                               "dropout_rate", "use_bias")}
    return OpCall("NnxMultiHeadAttention", attrs={**attrs, **({"dropout_rate": 0.0} if deterministic else {})})


C.layer(f"{NNX}MultiHeadAttention", "NnxMultiHeadAttention", "num_heads in_features qkv_features=None "
        "out_features=None num_kv_heads=None in_kv_features=None dtype=None param_dtype=None broadcast_dropout=True "
        "dropout_rate=0.0 deterministic=None precision=None kernel_init=None out_kernel_init=None bias_init=None "
        "out_bias_init=None use_bias=True attention_fn=None decode=None normalize_qk=False qkv_promote_dtype=None "
        "out_promote_dtype=None ln_promote_dtype=None qkv_dot_general=None out_dot_general=None "
        "qkv_dot_general_cls=None out_dot_general_cls=None rngs=None keep_rngs=True kernel_metadata=None "
        "out_kernel_metadata=None bias_metadata=None out_bias_metadata=None query_ln_scale_metadata=None "
        "key_ln_scale_metadata=None", read=_attention,
        to_ir=lambda w, attrs: per_head_projections_to_ir(w, ("query", "key", "value", "out")),
        call="inputs_q inputs_k=None inputs_v=None mask=None is_causal=False")


# -- recurrent layers: nnx.RNN over a cell, nnx.Bidirectional over two --------------------------------------
CELLS = {"LSTMCell": "LSTM", "GRUCell": "GRU", "SimpleCell": "RNN"}
CELL_ARGS = ("in_features hidden_features gate_fn=None activation_fn=None kernel_init=None recurrent_kernel_init=None "
             "bias_init=None dtype=None param_dtype=None carry_init=None promote_dtype=None keep_rngs=False rngs=None "
             "kernel_metadata=None recurrent_kernel_metadata=None bias_metadata=None")
SIMPLE_CELL_ARGS = ("in_features hidden_features dtype=None param_dtype=None carry_init=None residual=False "
                    "activation_fn=None kernel_init=None recurrent_kernel_init=None bias_init=None promote_dtype=None "
                    "keep_rngs=False rngs=None kernel_metadata=None recurrent_kernel_metadata=None bias_metadata=None")


def _cell(op: str):
    """A cell (its default gates), read only as nnx.RNN's argument: no target writes a "RecurrentCell" (one step
    of the recurrence, called on its own, is not translated)."""
    def read(a):
        _numerics(a)
        only(a, activation_fn=None, **({"residual": False} if op == "RNN" else {"gate_fn": None}))
        return OpCall("RecurrentCell", attrs={"op": op, "input_size": a["in_features"],
                                              "hidden_size": a["hidden_features"]})
    return read


for _cls, _op in CELLS.items():
    C.layer(f"{NNX}{_cls}", "RecurrentCell", SIMPLE_CELL_ARGS if _op == "RNN" else CELL_ARGS, read=_cell(_op))


def _rnn(a):
    """nnx.RNN(cell, ...) -> the cell's recurrent op with NNX's call (outputs, or (carry, outputs))."""
    cell = a["cell"]
    if not isinstance(cell, OpCall) or cell.op != "RecurrentCell":
        raise Refused("a cell other than nnx.LSTMCell, GRUCell or SimpleCell made in the call")
    only(a, unroll=1, state_axes=None, broadcast_rngs=None)
    attrs = {k: v for k, v in cell.attrs.items() if k != "op"}
    return OpCall(cell.attrs["op"], attrs={**attrs, "num_layers": 1, "bias": True, "bidirectional": False,
                                  "activation": "tanh", **{k: a[k] for k in NNX_CALL if k != "bidirectional"}})


def _bidirectional(a):
    """nnx.Bidirectional(forward_rnn, backward_rnn): both directions' outputs concatenated, as PyTorch's and Keras'
    bidirectional layers give them (the backward one runs reversed, its outputs kept in order)."""
    forward, backward = a["forward_rnn"], a["backward_rnn"]
    only(a, merge_fn=None)
    if not all(isinstance(r, OpCall) and "return_carry" in r.attrs for r in (forward, backward)) or \
            forward.op != backward.op or any(known(forward.attrs[k]) != known(backward.attrs[k]) for k in (
                "input_size", "hidden_size")):
        raise Refused("two nnx.RNN of one cell kind and size made in the call")
    if any(known(forward.attrs[k]) is not False for k in ("time_major", "return_carry", "reverse", "keep_order")):
        raise Refused("options of the wrapped nnx.RNN (only Bidirectional's own are translated)")
    return OpCall(forward.op, attrs={**forward.attrs, "bidirectional": True, "time_major": a["time_major"],
                                     "return_carry": a["return_carry"]})


C.layer(f"{NNX}RNN", "RNN", "cell time_major=False return_carry=False reverse=False keep_order=False unroll=1 "
        "state_axes=None broadcast_rngs=None rngs=None", read=_rnn, to_ir=nnx_recurrent_to_ir,
        layer_arguments=("cell",))
C.layer(f"{NNX}Bidirectional", "RNN", "forward_rnn backward_rnn merge_fn=None time_major=False return_carry=False "
        "rngs=None", read=_bidirectional, to_ir=nnx_recurrent_to_ir, layer_arguments=("forward_rnn", "backward_rnn"))


def _dropout(a):
    only(a, broadcast_dims=())
    deterministic = known(a["deterministic"])
    if deterministic is True:
        return OpCall("Identity")  # never drops
    if deterministic is not False:
        raise Refused("deterministic given by a variable (switch the model with model.eval() instead)")
    return OpCall("Dropout", attrs={"ratio": a["rate"]})


C.layer(f"{NNX}Dropout", "Dropout", "rate broadcast_dims=() deterministic=False rng_collection='dropout' rngs=None",
        read=_dropout)


# -- functions: activations, jax.numpy, array methods --------------------------------------------------
_fn = partial(C.reads, inputs="x")
for _name, _op in (("relu", "Relu"), ("sigmoid", "Sigmoid"), ("silu", "SiLU"), ("relu6", "Relu6"),
                   ("hard_sigmoid", "HardSigmoid"), ("hard_silu", "HardSwish"), ("softplus", "Softplus")):
    _fn(f"{NNX}{_name}", _op, "x")
_fn("jax.nn.mish", "Mish", "x")
C.function(f"{NNX}gelu", "Gelu", "x approximate=True", read=read_gelu)
_fn(f"{NNX}elu", "Elu", "x alpha=1.0", alpha="alpha")
_fn(f"{NNX}leaky_relu", "LeakyRelu", "x negative_slope=0.01", alpha="negative_slope")
_fn(f"{NNX}softmax", "Softmax", "x axis=-1 where=None", axis="axis", check=lambda a: only(a, where=None))
_fn(f"{NNX}log_softmax", "LogSoftmax", "x axis=-1 where=None", axis="axis", check=lambda a: only(a, where=None))
for _name, _op in (("tanh", "Tanh"), ("exp", "Exp"), ("log", "Log"), ("sqrt", "Sqrt"), ("abs", "Abs"),
                   ("negative", "Neg"), ("sin", "Sin"), ("cos", "Cos"), ("floor", "Floor"), ("ceil", "Ceil"),
                   ("square", "Square"), ("reciprocal", "Reciprocal")):
    _fn(f"{JNP}{_name}", _op, "x")
_fn("jax.lax.rsqrt", "Rsqrt", "x accuracy=None", check=lambda a: only(a, accuracy=None))
_fn("jax.scipy.special.erf", "Erf", "x")
for _name, _op in (("add", "Add"), ("subtract", "Sub"), ("multiply", "Mul"), ("divide", "Div"),
                   ("maximum", "Max"), ("minimum", "Min"), ("power", "Pow")):
    _fn(f"{JNP}{_name}", _op, "x1 x2", inputs="x1 x2")
for _op, (_name, _) in COMPARISONS.items():
    if not _name.startswith("logical"):  # jnp.logical_and/or take any number of arrays
        _fn(f"{JNP}{_name}", _op, "x y", inputs="x y")
_fn(f"{JNP}logical_not", "Not", "x")
_fn(f"{JNP}dot", "Dot", "a b precision=None preferred_element_type=None out_sharding=None", inputs="a b",
    check=lambda a: only(a, precision=None, preferred_element_type=None))
_fn(f"{JNP}matmul", "MatMul", "a b precision=None preferred_element_type=None out_sharding=None", inputs="a b",
    check=lambda a: only(a, precision=None, preferred_element_type=None))
_fn(f"{JNP}concat", "Concat", "arrays axis=0", inputs="arrays", axis="axis")
_fn(f"{JNP}concatenate", "Concat", "arrays axis=0 dtype=None", inputs="arrays", axis="axis",
    check=lambda a: only(a, dtype=None))
_fn(f"{JNP}stack", "Stack", "arrays axis=0 out=None dtype=None", inputs="arrays", axis="axis",
    check=lambda a: only(a, dtype=None))


def _meshgrid(a):
    only(a, sparse=False)
    return OpCall("MeshGrid", [list(a["xi"])], {"indexing": a["indexing"]})


C.function(f"{JNP}meshgrid", "MeshGrid", "*xi copy=True sparse=False indexing='xy'", read=_meshgrid,
           returns="tensors")
_fn(f"{JNP}swapaxes", "SwapAxes", "a axis1 axis2", inputs="a", axis1="axis1", axis2="axis2")
_fn(f"{JNP}expand_dims", "Unsqueeze", "a axis", inputs="a", axis="axis")
_fn(f"{JNP}squeeze", "Squeeze", "a axis=None", inputs="a", axis="axis")
_fn(f"{JNP}split", "Split", "ary indices_or_sections axis=0", inputs="ary", returns="tensors",
    sections="indices_or_sections", axis="axis")
_fn(f"{JNP}einsum", "Einsum", "subscripts *operands", inputs="operands", equation="subscripts")
_fn(f"{JNP}where", "Where", "condition x=None y=None", inputs="condition x y",
    check=lambda a: required(a, "x", "y"))
_fn(f"{JNP}clip", "Clip", "arr=None min=None max=None", inputs="arr", min="min", max="max")
_fn(f"{JNP}tril", "Tril", "m k=0", inputs="m", k="k")
_fn(f"{JNP}broadcast_to", "Expand", "array shape", inputs="array", sizes="shape")
#: Python's types given as dtypes (`jnp.ones(n, dtype=bool)`) -> JAX's dtype for them (64-bit types off)
PYTHON_DTYPES = {"bool": "bool", "int": "int32", "float": "float32"}


def _dtype(a):
    """The dtype argument as a dtype name (None when not given) or a dtype the translation holds (`jnp.float32`,
    `x.dtype`); Refused when it is neither."""
    value = a["dtype"]
    if holds_dtype(value):
        return value
    if isinstance(value, ast.Name) and value.id in PYTHON_DTYPES:
        return PYTHON_DTYPES[value.id]
    name = known(value)
    if name is not None and name not in DTYPE_NAMES:
        raise Refused("dtype given by a variable or not a dtype")
    return name


for _name, _value in (("ones", 1.0), ("zeros", 0.0)):
    C.function(f"{JNP}{_name}", "ConstantOfShape", "shape dtype=None", read=lambda a, v=_value: OpCall(
        "ConstantOfShape", [], {"shape": a["shape"], "value": v, "dtype": _dtype(a)}))
C.function(f"{JNP}arange", "Range", "start stop=None step=None dtype=None", read=lambda a: OpCall(
    "Range", [], {"start": a["start"], "stop": a["stop"], "step": a["step"], "dtype": _dtype(a)}))
_fn(f"{JNP}linspace", "Linspace", "start stop num=50 endpoint=True retstep=False dtype=None axis=0 device=None",
    inputs="", start="start", stop="stop", num="num", dtype="float32",
    check=lambda a: only(a, endpoint=True, retstep=False, dtype=None, axis=0, device=None))
_fn(f"{JNP}reshape", "Reshape", "a shape order='C'", inputs="a", shape="shape", check=lambda a: only(a, order="C"))
_fn(f"{JNP}transpose", "Transpose", "a axes=None", inputs="a", perm="axes")
for _name, _op in (("all", "ReduceAll"), ("any", "ReduceAny")):
    _fn(f"{JNP}{_name} Tensor.{_name}", _op, "a axis=None out=None keepdims=False where=None", inputs="a",
        axis="axis", keepdims="keepdims", check=lambda a: only(a, where=None))
for _name, _op in (("mean", "ReduceMean"), ("sum", "ReduceSum")):
    _fn(f"{JNP}{_name} Tensor.{_name}", _op, "a axis=None dtype=None out=None keepdims=False", inputs="a",
        axis="axis", keepdims="keepdims", check=lambda a: only(a, dtype=None))
_fn("jax.nn.logsumexp jax.scipy.special.logsumexp", "ReduceLogSumExp", "a axis=None b=None keepdims=False "
    "return_sign=False where=None", inputs="a", axis="axis", keepdims="keepdims",
    check=lambda a: only(a, b=None, return_sign=False, where=None))
for _name, _op in (("max", "ReduceMax"), ("min", "ReduceMin")):
    _fn(f"{JNP}{_name} Tensor.{_name}", _op, "a axis=None out=None keepdims=False initial=None where=None",
        inputs="a", axis="axis", keepdims="keepdims", check=lambda a: only(a, initial=None, where=None))

_fn(f"{JNP}sign", "Sign", "x")
C.function(f"{JNP}asarray {JNP}array", "AsTensor", "a dtype=None copy=None", read=lambda a: OpCall(
    "AsTensor", [a["a"]]) if known(a["dtype"]) is None else OpCall("Cast", [a["a"]], {"to": a["dtype"]}))
C.function(f"{JNP}finfo", "FInfo", "dtype", read=lambda a: OpCall("FInfo", [a["dtype"]]), returns="python")
_fn("jax.nn.log_sigmoid", "LogSigmoid", "x")
_fn("jax.nn.soft_sign", "Softsign", "x")
_fn("jax.nn.glu", "Glu", "x axis=-1", axis="axis")
_fn(f"{JNP}round", "Round", "a decimals=0 out=None", inputs="a", check=lambda a: only(a, decimals=0))
_fn(f"{JNP}cumsum", "CumSum", "a axis=None dtype=None out=None", inputs="a", axis="axis", dtype="dtype",
    check=lambda a: only(a, out=None) or required(a, "axis"))
_fn(f"{JNP}flip", "Flip", "m axis=None", inputs="m", axes="axis", check=lambda a: required(a, "axis"))
_fn(f"{JNP}roll", "Roll", "a shift axis=None", inputs="a", shifts="shift", axes="axis")
_fn(f"{JNP}tile", "Tile", "A reps", inputs="A", repeats="reps")
_fn(f"{JNP}repeat", "Repeat", "a repeats axis=None total_repeat_length=None", inputs="a", repeats="repeats",
    axis="axis")
_fn(f"{JNP}triu", "Triu", "m k=0", inputs="m", k="k")
for _name, _op in (("argmax", "ArgMax"), ("argmin", "ArgMin")):  # keepdims=None (jnp's default) keeps none
    C.function(f"{JNP}{_name}", _op, "a axis=None out=None keepdims=None", read=lambda a, op=_op: OpCall(
        op, [a["a"]], {"axis": a["axis"], "keepdims": a["keepdims"] if known(a["keepdims"]) is not None else False}))
_fn(f"{JNP}unstack", "Unstack", "x axis=0", axis="axis", returns="tensors")
for _name, _value in (("zeros_like", 0.0), ("ones_like", 1.0)):
    _fn(f"{JNP}{_name}", "ConstantLike", "a dtype=None shape=None", inputs="a", value=_value, dtype="dtype",
        check=lambda a: only(a, shape=None))
_fn(f"{JNP}full_like", "ConstantLike", "a fill_value dtype=None shape=None", inputs="a", value="fill_value",
    dtype="dtype", check=lambda a: only(a, shape=None))
for _name, _op in (("var", "ReduceVar"), ("std", "ReduceStd")):
    _fn(f"{JNP}{_name}", _op, "a axis=None dtype=None out=None ddof=0 keepdims=False", inputs="a", axis="axis",
        keepdims="keepdims", correction="ddof", check=lambda a: only(a, dtype=None))
_fn(f"{JNP}linalg.norm", "ReduceL2", "x ord=None axis=None keepdims=False", axis="axis", keepdims="keepdims",
    check=lambda a: only(a, ord=None))
_fn(f"{JNP}astype", "Cast", "x dtype", to="dtype")
_fn("Tensor.astype", "Cast", "x dtype", to="dtype")
_fn("jax.lax.stop_gradient", "StopGradient", "x")
_fn("jax.lax.top_k", "TopK", "operand k", inputs="operand", k="k", returns="tensors")

def _dot_product_attention(a):
    """jax.nn.dot_product_attention on (batch, steps, heads, features), with an additive bias, a mask (True:
    attend) and a causal mask; per-sequence lengths, local windows and the residual are not translated."""
    only(a, query_seq_lengths=None, key_value_seq_lengths=None, local_window_size=None, implementation=None,
         return_residual=False)
    return OpCall("DotProductAttention", [a["query"], a["key"], a["value"], a["bias"], a["mask"]],
                  {"scale": a["scale"], "is_causal": a["is_causal"]})


C.function("jax.nn.dot_product_attention", "DotProductAttention", "query key value bias=None mask=None * scale=None "
           "is_causal=False query_seq_lengths=None key_value_seq_lengths=None local_window_size=None "
           "implementation=None return_residual=False", read=_dot_product_attention)
C.function(f"{NNX}make_causal_mask", "CausalMask", "x extra_batch_dims=0 dtype=None", read=lambda a: OpCall(
    "CausalMask", [a["x"]], {"extra_batch_dims": a["extra_batch_dims"], "dtype": a["dtype"]}))

#: jax.image.resize's methods sampling as the `resize` helpers do (half-pixel centres, nearest or linear per axis)
RESIZE_METHODS = {"nearest": "nearest", "linear": "linear", "bilinear": "linear", "trilinear": "linear",
                  "triangle": "linear"}


def _image_resize(a):
    """jax.image.resize to a full shape, nearest or linear; its antialiasing (on by default) acts only when a
    linear resize shrinks an axis, which the translation's helper refuses when it runs."""
    only(a, precision=None)
    method = known(a["method"])
    if method not in RESIZE_METHODS:
        raise Refused(f"method={method!r} (nearest and linear are translated)")
    if not isinstance(known(a["antialias"]), bool):
        raise Refused("antialias given by a variable")
    return OpCall("ImageResize", [a["image"]], {"shape": a["shape"], "method": RESIZE_METHODS[method],
                                                "antialias": known(a["antialias"])})


C.function("jax.image.resize", "ImageResize", "image shape method antialias=True precision=None",
           read=_image_resize)


def _method_shape(op: str, attr: str):
    """`x.reshape(b, -1)` / `x.reshape((b, -1))` / `x.transpose(0, 2, 1)`: the sizes as one expression."""
    def read(a):
        given = a["shape"]
        value = None if not given else shape_argument(given)
        if op == "Reshape" and value is None:
            raise Refused("reshape without a shape")
        return OpCall(op, [a["x"]], {attr: value})
    return read


C.function("Tensor.reshape", "Reshape", "x *shape", read=_method_shape("Reshape", "shape"))
C.function("Tensor.transpose", "Transpose", "x *shape", read=_method_shape("Transpose", "perm"))
_fn("Tensor.swapaxes", "SwapAxes", "x axis1 axis2", axis1="axis1", axis2="axis2")
_fn("Tensor.squeeze", "Squeeze", "x axis=None", axis="axis")
_fn("Tensor.flatten", "Flatten", "x", start=0, end=-1)


def _pool(op: str):
    def read(a):
        rank = _rank(a, "window_shape")
        strides = a["strides"] if known(a["strides"]) is not None else 1  # Flax's default stride is 1, not the window
        if op == "AveragePool" and known(a["padding"]) != "VALID":
            only(a, count_include_pad=True)
        pads = _padding(a, rank)
        if pads == "same":
            raise Refused("padding='SAME' on a pool (the padding depends on the input size)")
        return OpCall(op, [a["inputs"]], {"rank": rank, "kernel_shape": a["window_shape"], "strides": strides,
                                          "pads": 0 if pads == "valid" else pads, "layout": "channels_last"})
    return read


C.function(f"{NNX}max_pool", "MaxPool", "inputs window_shape strides=None padding='VALID'", read=_pool("MaxPool"))
C.function(f"{NNX}avg_pool", "AveragePool", "inputs window_shape strides=None padding='VALID' count_include_pad=True",
           read=_pool("AveragePool"))


# -- how Flax NNX model code is recognised -------------------------------------------------------------
class NnxWeightSource(WeightSource):
    def owns(self, obj) -> bool:
        from flax import nnx

        return isinstance(obj, nnx.Module)

    def layer_weights(self, layer) -> dict:
        from flax import nnx

        if isinstance(layer, nnx.MultiHeadAttention):  # four projections, each a kernel and a bias
            return {f"{part}.{name}": w for part in ("query", "key", "value", "out")
                    for name, w in self.own_weights(getattr(layer, part)).items()}
        if isinstance(layer, (nnx.RNN, nnx.Bidirectional)):  # the cells' dense layers, by dotted path
            return {".".join(map(str, path)): np.array(v.get_value())
                    for path, v in nnx.state(layer, nnx.Param).flat_state()}
        return self.own_weights(layer)

    def layer_attrs(self, layer) -> dict:
        return {"transpose_kernel": getattr(layer, "transpose_kernel", False),
                "in_features": getattr(layer, "in_features", None)}

    def members(self, obj) -> list | None:
        from flax import nnx

        if isinstance(obj, nnx.Sequential):
            return list(obj.layers)
        return list(obj) if isinstance(obj, (nnx.List, list, tuple)) else None

    def mapping(self, obj) -> dict | None:
        from flax import nnx

        return dict(obj.items()) if isinstance(obj, (nnx.Dict, dict)) else None

    def own_weights(self, obj) -> dict:
        from flax import nnx

        return {n: np.array(v.get_value()) for n, v in _attributes(obj).items() if isinstance(v, nnx.Variable)}

    def children(self, obj) -> dict:
        from flax import nnx

        return held_layers(_attributes(obj), lambda v: isinstance(v, nnx.Module))


def _attributes(obj) -> dict:
    """The public attributes an NNX module instance holds (those its model code assigned)."""
    from flax import nnx

    if not isinstance(obj, nnx.Module):
        return {}
    return {n: v for n, v in vars(obj).items() if not n.startswith("_")}


ARRAY_METHODS = ("all any argmax argmin astype at clip conj copy cumprod cumsum diagonal dot flatten item max mean min "
                 "nonzero prod ravel repeat reshape round sort squeeze std sum swapaxes take trace transpose var view")

C.source = SourceSkeleton(
    sequential_layers="layers", weight_products={"Embedding": {"attend": "W"}},
    module_classes=frozenset({f"{NNX}Module", "flax.nnx.module.Module"}),
    tensor_classes=frozenset({"jax.Array"}),
    containers={f"{NNX}Sequential": "sequential", f"{NNX}List": "list", f"{NNX}Dict": "dict"},
    parameter_classes={f"{NNX}Param": True, f"{NNX}Variable": False, f"{NNX}BatchStat": False},
    init_module=f"{NNX}initializers",
    initializer_modules={f"{NNX}initializers": INITIALIZER_KINDS, "jax.nn.initializers": INITIALIZER_KINDS},
    initializers={f"{JNP}zeros": "zeros", f"{JNP}ones": "ones", "jax.random.normal": "normal",
                  "jax.random.uniform": "uniform"},
    tensor_attributes={"shape": lambda x: OpCall("Shape", [x], {"index": None}),
                       "ndim": lambda x: OpCall("Rank", [x]),
                       "T": lambda x: OpCall("Transpose", [x], {"perm": None}),
                       "value": lambda x: OpCall("Identity", [x]), "dtype": lambda x: OpCall("DType", [x])},
    tensor_methods=frozenset(ARRAY_METHODS.split()),
    float_dtypes=frozenset({f"{JNP}float32"}),
    dtypes={f"{JNP}{name}": name for name in DTYPE_NAMES},
    forward="__call__",
    weights=NnxWeightSource(),
    roots=frozenset({"jax"}),
    init_argument="rngs",
    random_key=True,
    mode_arguments=frozenset({"deterministic", "use_running_average"}),
    neutral_call_arguments={"decode": (None, False), "sow_weights": (False,)},
    data_wrappers=frozenset({f"{NNX}data"}),
)

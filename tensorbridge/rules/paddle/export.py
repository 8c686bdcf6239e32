"""IR ops written as the legacy Paddle ops of a ProgramDesc (what `paddle.jit.save` wrote before PIR).

Export rules take (writer, node) and add ops through the writer (backends/paddle/writer.py): `w.op(type, inputs,
outputs, **attrs)` with inputs and outputs by slot, as IR values (a constant becomes a persistable parameter) or
variable names. Every op written here has a legacy signature in base.LEGACY, so the Paddle frontend reads the
program back; a pooling or a resize is written only once a probe shows that Paddle's op, as the reader states it,
computes the node's.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from tensorbridge.formats.paddle import DTYPES
from tensorbridge.ops.patterns import constant as _const
from tensorbridge.rules.paddle.base import R, attributes
from tensorbridge.rules.paddle.nn import interpolate, pool2d
from tensorbridge.rules.recurrent import fused_mode, fused_weights

UNARY = {"Relu": "relu", "Sigmoid": "sigmoid", "Tanh": "tanh", "Exp": "exp", "Log": "log", "Sqrt": "sqrt",
         "Abs": "abs", "Erf": "erf", "Floor": "floor", "Ceil": "ceil", "Sin": "sin", "Cos": "cos",
         "Reciprocal": "reciprocal", "HardSwish": "hard_swish", "Softplus": "softplus", "SiLU": "swish"}
BINARY = {"Add": "elementwise_add", "Sub": "elementwise_sub", "Mul": "elementwise_mul", "Div": "elementwise_div",
          "Pow": "elementwise_pow", "Max": "elementwise_max", "Min": "elementwise_min"}
REDUCE = {"ReduceSum": "reduce_sum", "ReduceMean": "reduce_mean", "ReduceMax": "reduce_max"}
#: the IR's pad modes pad3d has
PAD_MODES = {"constant": "constant", "reflect": "reflect", "edge": "replicate", "wrap": "circular"}
FLOATS = ("float32",)
#: NumPy dtype -> the VarType code a cast names
CODES = {dtype: code for code, dtype in DTYPES.items()}


def _floats(node) -> bool:
    """The node's first input and its outputs are float32 (the tensors the float ops are written for)."""
    return all(v is None or v.dtype is not None and v.dtype.name in FLOATS for v in [node.input(0), *node.outputs])


def _float_op(node) -> str | None:
    return None if _floats(node) else "Paddle's op is written for float32 tensors"


def _ints(value) -> list[int] | None:
    c = _const(value)
    return None if c is None else [int(v) for v in np.asarray(c).reshape(-1)]


def _xshape(w, node) -> dict:
    """The XShape output reshape2, transpose2, squeeze2 and unsqueeze2 write (the input's shape, for training)."""
    return {"XShape": [w.temp(node.outputs[0], "xshape", shape=(0, *(node.input(0).shape or ())))]}


@R.exports(*UNARY, check=_float_op)
def write_unary(w, node):
    w.op(UNARY[node.op], {"X": [node.input(0)]}, {"Out": [node.outputs[0]]})


def _check_binary(node):
    if len(node.inputs) != 2 or node.input(0).dtype != node.input(1).dtype:
        return "Paddle's element-wise ops take two operands of one type"
    return None


@R.exports("Equal", "Greater", "Less", "And", "Or", check=_check_binary)
def write_compare(w, node):
    kind = {"Equal": "equal", "Greater": "greater_than", "Less": "less_than", "And": "logical_and",
            "Or": "logical_or"}[node.op]
    extra = {"axis": -1} if kind in ("equal", "greater_than", "less_than") else {}
    w.op(kind, {"X": [node.input(0)], "Y": [node.input(1)]}, {"Out": [node.outputs[0]]}, **extra)


@R.exports("Not")
def write_not(w, node):
    w.op("logical_not", {"X": [node.input(0)]}, {"Out": [node.outputs[0]]})


def _check_where(node):
    if node.input(1).dtype != node.input(2).dtype:
        return "a Where of two types"
    shape = node.outputs[0].shape
    if shape is None or not all(isinstance(d, int) for d in shape):
        return "a Where of a shape known only at run time (Paddle's where takes operands of one shape)"
    return None


@R.exports("Where", check=_check_where)
def write_where(w, node):
    """Paddle's where takes three operands of one shape: the others are expanded to the output's first."""
    shape = list(node.outputs[0].shape)
    operands = []
    for v, tag in zip(node.inputs, ("condition", "x", "y")):
        if list(v.shape) != shape:
            spread = w.temp(node.outputs[0], tag, dtype=v.dtype)
            w.op("expand_v2", {"X": [v]}, {"Out": [spread]}, shape=shape)
            v = spread
        operands.append(v)
    w.op("where", {"Condition": operands[:1], "X": operands[1:2], "Y": operands[2:]}, {"Out": [node.outputs[0]]})


@R.exports("Cast", check=lambda n: None if all(v.dtype is not None and v.dtype.name in CODES
                                                for v in (n.input(0), n.outputs[0])) else
           "a Cast between types Paddle does not store")
def write_cast(w, node):
    w.op("cast", {"X": [node.input(0)]}, {"Out": [node.outputs[0]]}, in_dtype=CODES[node.input(0).dtype.name],
         out_dtype=CODES[node.outputs[0].dtype.name])


@R.exports("Expand", check=lambda n: None if n.outputs[0].shape is not None and
           all(isinstance(d, int) for d in n.outputs[0].shape) else "an Expand to a shape known only at run time")
def write_expand(w, node):
    w.op("expand_v2", {"X": [node.input(0)]}, {"Out": [node.outputs[0]]}, shape=list(node.outputs[0].shape))


@R.exports("GatherND", check=lambda n: None if not n.attrs.get("batch_dims") else "a GatherND with batch dims")
def write_gather_nd(w, node):
    w.op("gather_nd", {"X": [node.input(0)], "Index": [node.input(1)]}, {"Out": [node.outputs[0]]})


@R.exports(*BINARY, check=_check_binary)
def write_binary(w, node):
    w.op(BINARY[node.op], {"X": [node.input(0)], "Y": [node.input(1)]}, {"Out": [node.outputs[0]]}, axis=-1)


@R.exports("Neg", check=_float_op)
def write_neg(w, node):
    w.op("scale", {"X": [node.input(0)]}, {"Out": [node.outputs[0]]}, scale=-1.0, bias=0.0, bias_after_scale=True)


def _check_pad(node):
    pads, x, y = _ints(node.input(1)), node.input(0), node.outputs[0]
    if pads is None or x.shape is None or y.shape is None or (len(node.inputs) > 3 and node.input(3) is not None):
        return "a Pad whose pads or axes are computed at run time"
    rank, mode = len(x.shape), node.attrs.get("mode", "constant")
    if any(p < 0 for p in pads):
        return "a Pad that crops (negative pads)"
    if any(pads[i] or pads[i + rank] for i in range(rank - 3)):
        return "a Pad of other axes than the last three (pad3d's)"
    if mode not in PAD_MODES:
        return f"a {mode} Pad"
    if sum(not isinstance(d, int) for d in x.shape) > 1:
        return "a Pad of a tensor with several sizes known only at run time"
    if node.input(2) is not None and (_const(node.input(2)) is None or np.asarray(_const(node.input(2))).size != 1):
        return "a Pad with a value computed at run time"
    return _float_op(node)


def _dims(shape) -> list[int]:
    """A shape for reshape2: its one size known only at run time as -1."""
    return [d if isinstance(d, int) else -1 for d in shape]


@R.exports("Pad", check=_check_pad)
def write_pad(w, node):
    """As pad3d, which pads the last three axes of an (N, C, D, H, W) tensor: the input reshaped to (rest, 1, its
    last three axes) around it. (Paddle 3.3's oneDNN `pad` kernel crashes the process, so that op is not written.)"""
    x, y = node.input(0), node.outputs[0]
    pads, rank = _ints(node.input(1)), len(x.shape)
    value = float(np.asarray(_const(node.input(2))).reshape(())) if node.input(2) is not None else 0.0
    begin, end = ([0] * max(3 - rank, 0) + pads[i:i + rank][-3:] for i in (0, rank))
    last = [1] * max(3 - rank, 0) + list(x.shape[-3:])
    rest = x.shape[:-3]
    volume_shape = [int(np.prod(rest)) if all(isinstance(d, int) for d in rest) else -1, 1, *_dims(last)]
    volume = w.temp(x, "volume", shape=volume_shape)
    w.op("reshape2", {"X": [x]}, {"Out": [volume], "XShape": [w.temp(x, "volume_xshape")]}, shape=volume_shape)
    padded = w.temp(y, "volume", shape=None)
    w.op("pad3d", {"X": [volume]}, {"Out": [padded]}, mode=PAD_MODES[node.attrs.get("mode", "constant")],
         value=value, data_format="NCDHW", paddings=[begin[2], end[2], begin[1], end[1], begin[0], end[0]])
    w.op("reshape2", {"X": [padded]}, {"Out": [y], "XShape": [w.temp(y, "volume_xshape")]}, shape=_dims(y.shape))


@R.exports("Identity", "Dropout", check=lambda n: None if len(n.outputs) == 1 or not n.outputs[1].uses else
           "a Dropout whose mask is read")
def write_identity(w, node):
    w.op("assign", {"X": [node.input(0)]}, {"Out": [node.outputs[0]]})


def _check_clip(node):
    if any(v is not None and (_const(v) is None or np.asarray(_const(v)).size != 1) for v in node.inputs[1:3]):
        return "Paddle clips to constant bounds"
    return _float_op(node)


@R.exports("Clip", check=_check_clip)
def write_clip(w, node):
    low, high = (float(np.asarray(_const(v)).reshape(())) if v is not None else default
                 for v, default in zip(node.inputs[1:3], (-3.4e38, 3.4e38)))
    w.op("clip", {"X": [node.input(0)]}, {"Out": [node.outputs[0]]}, min=low, max=high)


@R.exports("LeakyRelu", check=_float_op)
def write_leaky_relu(w, node):
    w.op("leaky_relu", {"X": [node.input(0)]}, {"Out": [node.outputs[0]]}, alpha=float(node.attrs.get("alpha", .01)))


@R.exports("Elu", check=_float_op)
def write_elu(w, node):
    w.op("elu", {"X": [node.input(0)]}, {"Out": [node.outputs[0]]}, alpha=float(node.attrs.get("alpha", 1.0)))


@R.exports("Gelu", check=_float_op)
def write_gelu(w, node):
    w.op("gelu", {"X": [node.input(0)]}, {"Out": [node.outputs[0]]},
         approximate=node.attrs.get("approximate", "none") == "tanh")


@R.exports("HardSigmoid", check=_float_op)
def write_hard_sigmoid(w, node):
    w.op("hard_sigmoid", {"X": [node.input(0)]}, {"Out": [node.outputs[0]]}, slope=float(node.attrs.get("alpha", .2)),
         offset=float(node.attrs.get("beta", .5)))


@R.exports("Softmax", check=_float_op)
def write_softmax(w, node):
    w.op("softmax", {"X": [node.input(0)]}, {"Out": [node.outputs[0]]}, axis=int(node.attrs.get("axis", -1)))


# -- weights and windows ---------------------------------------------------------------------------------------
def _check_conv(node):
    x = node.input(0)
    if x.shape is None or len(x.shape) != 4 or _const(node.input(1)) is None or \
            (node.input(2) is not None and _const(node.input(2)) is None):
        return "Paddle's conv2d takes (N, C, H, W) images and constant weights"
    if node.attrs.get("auto_pad", "NOTSET") != "NOTSET":
        return "padding given as auto_pad"
    if node.op == "ConvTranspose" and node.attrs.get("output_shape"):
        return "a transposed convolution with output_shape"
    return _float_op(node)


@R.exports("Conv", "ConvTranspose", check=_check_conv)
def write_conv(w, node):
    a, x, weight, bias = node.attrs, node.input(0), node.input(1), node.input(2)
    pads = list(a.get("pads") or [0] * 4)
    group = int(a.get("group", 1))
    channels = x.shape[1]
    options = {"strides": list(a.get("strides") or [1, 1]), "paddings": [pads[0], pads[2], pads[1], pads[3]],
               "dilations": list(a.get("dilations") or [1, 1]), "groups": group, "padding_algorithm": "EXPLICIT",
               "data_format": "NCHW"}
    out = node.outputs[0] if bias is None else w.temp(node.outputs[0], "conv")
    if node.op == "ConvTranspose":
        options["output_padding"] = list(a.get("output_padding") or [0, 0])
        w.op("conv2d_transpose", {"Input": [x], "Filter": [weight]}, {"Output": [out]}, **options)
    else:
        depthwise = group > 1 and group == channels and _const(weight).shape[0] % channels == 0
        w.op("depthwise_conv2d" if depthwise else "conv2d", {"Input": [x], "Filter": [weight]}, {"Output": [out]},
             **options)
    if bias is not None:
        w.op("elementwise_add", {"X": [out], "Y": [bias]}, {"Out": [node.outputs[0]]}, axis=1)


def _check_bn(node):
    if node.attrs.get("training_mode", 0) or any(_const(v) is None for v in node.inputs[1:5]):
        return "Paddle normalises with constant statistics at inference"
    if node.input(0).shape is None or len(node.input(0).shape) < 2 or len(node.outputs) > 1:
        return "Paddle's batch_norm normalises axis 1 of an (N, C, ...) input"
    return _float_op(node)


@R.exports("BatchNormalization", check=_check_bn)
def write_batch_norm(w, node):
    x, scale, bias, mean, var = node.inputs[:5]
    y = node.outputs[0]
    saved = [w.temp(y, name) for name in ("saved_mean", "saved_variance")]
    # MeanOut and VarianceOut are the running statistics themselves (Paddle checks they share their memory)
    w.op("batch_norm", {"X": [x], "Scale": [scale], "Bias": [bias], "Mean": [mean], "Variance": [var]},
         {"Y": [y], "MeanOut": [mean], "VarianceOut": [var], "SavedMean": [saved[0]], "SavedVariance": [saved[1]]},
         epsilon=float(node.attrs.get("epsilon", 1e-5)), is_test=True, use_global_stats=True, data_layout="NCHW")


def _check_ln(node):
    if _const(node.input(1)) is None or (node.input(2) is not None and _const(node.input(2)) is None):
        return "Paddle's layer_norm takes constant scale and bias"
    if len(node.outputs) > 1 and any(v is not None and v.uses for v in node.outputs[1:]):
        return "a LayerNormalization whose mean or deviation is read"
    return _float_op(node)


@R.exports("LayerNormalization", check=_check_ln)
def write_layer_norm(w, node):
    x, scale, bias = node.input(0), node.input(1), node.input(2)
    rank = len(x.shape)
    axis = int(node.attrs.get("axis", -1)) % rank
    y = node.outputs[0]
    flat = np.asarray(_const(scale)).reshape(-1)
    scale_name = w.param(y, "scale", flat)
    bias_name = w.param(y, "bias", np.zeros_like(flat) if bias is None else np.asarray(_const(bias)).reshape(-1))
    w.op("layer_norm", {"X": [x], "Scale": [scale_name], "Bias": [bias_name]},
         {"Y": [y], "Mean": [w.temp(y, "mean")], "Variance": [w.temp(y, "variance")]},
         begin_norm_axis=axis, epsilon=float(node.attrs.get("epsilon", 1e-5)))


def _check_prelu(node):
    x, slope = node.input(0), _const(node.input(1))
    if slope is None or x.shape is None or len(x.shape) < 2:
        return "Paddle's prelu takes constant slopes"
    if slope.size not in (1, x.shape[1]) or slope.size > 1 and slope.size != int(np.prod(slope.shape)) or \
            slope.size > 1 and list(slope.shape) not in ([x.shape[1]], [x.shape[1]] + [1] * (len(x.shape) - 2)):
        return "a PRelu of slopes other than one, or one per channel"
    return _float_op(node)


@R.exports("PRelu", check=_check_prelu)
def write_prelu(w, node):
    slope = np.asarray(_const(node.input(1)))
    mode = "all" if slope.size == 1 else "channel"
    w.op("prelu", {"X": [node.input(0)], "Alpha": [w.param(node.outputs[0], "alpha", slope.reshape(-1))]},
         {"Out": [node.outputs[0]]}, mode=mode, data_format="NCHW")


@R.exports("GroupNormalization", "InstanceNormalization", check=lambda n: _float_op(n) or (
    None if all(_const(v) is not None for v in n.inputs[1:3]) and len(n.input(0).shape or ()) >= 3 else
    "Paddle's group and instance norms take constant scales and biases over (N, C, ...)"))
def write_group_norm(w, node):
    x, y = node.input(0), node.outputs[0]
    channels = x.shape[1]
    groups = channels if node.op == "InstanceNormalization" else int(node.attrs["num_groups"])
    scale, bias = (np.broadcast_to(np.asarray(_const(v), np.float32), (channels,)) if np.asarray(_const(v)).size in
                   (1, channels) else np.repeat(np.asarray(_const(v), np.float32), channels // groups)
                   for v in node.inputs[1:3])
    names = [w.param(y, tag, np.ascontiguousarray(a)) for tag, a in (("scale", scale), ("bias", bias))]
    epsilon = float(node.attrs.get("epsilon", 1e-5))
    if node.op == "InstanceNormalization":
        w.op("instance_norm", {"X": [x], "Scale": names[:1], "Bias": names[1:]},
             {"Y": [y], "SavedMean": [w.temp(y, "mean")], "SavedVariance": [w.temp(y, "variance")]}, epsilon=epsilon)
    else:
        w.op("group_norm", {"X": [x], "Scale": names[:1], "Bias": names[1:]},
             {"Y": [y], "Mean": [w.temp(y, "mean")], "Variance": [w.temp(y, "variance")]}, epsilon=epsilon,
             groups=groups, data_layout="NCHW")


@R.exports("Shape", check=lambda n: None if not n.attrs.get("start") and n.attrs.get("end") is None else
           "a Shape of some of the axes")
def write_shape(w, node):
    w.op("shape", {"Input": [node.input(0)]}, {"Out": [node.outputs[0]]})


#: cuDNN-style modes (rules/recurrent.fused_mode) -> Paddle's rnn modes
RNN_MODES = {"lstm": "LSTM", "gru": "GRU", "rnn_tanh": "RNN_TANH", "rnn_relu": "RNN_RELU"}


@R.exports("LSTM", "GRU", "RNN", check=lambda n: _float_op(n) or (None if fused_mode(n) else
           "Paddle's rnn op takes constant weights, zero initial states, whole sequences of a known shape "
           "(time-major), the default activations and, for a GRU, the reset applied after the hidden product"))
def write_rnn(w, node):
    """One fused rnn op (cuDNN's gate order, zero initial states); its output (T, N, directions x H) shaped back
    into the IR's (T, directions, N, H)."""
    mode = fused_mode(node)
    steps, batch, width = node.input(0).shape
    hidden = int(node.attrs["hidden_size"])
    y = node.outputs[0]
    names = [w.param(y, f"weight{i}", t) for i, t in enumerate(fused_weights(node, mode))]
    directions = len(names) // 4
    zeros = np.zeros((directions, batch, hidden), np.float32)
    kept = ("h", "c") if mode == "lstm" else ("h",)
    states = [w.param(y, f"{tag}0", zeros) for tag in kept]
    final = [node.outputs[k] if len(node.outputs) > k and node.outputs[k] is not None else w.temp(y, tag)
             for k, tag in enumerate(kept, start=1)]
    out = w.temp(y, "sequence", shape=(steps, batch, directions * hidden))
    w.op("rnn", {"Input": [node.input(0)], "PreState": states, "WeightList": names},
         {"Out": [out], "State": final, "Reserve": [w.temp(y, "reserve")],
          "DropoutState": [w.temp(y, "dropout_state", dtype=np.dtype(np.uint8))]},
         mode=RNN_MODES[mode], hidden_size=hidden, input_size=int(width), num_layers=1, is_bidirec=directions == 2,
         dropout_prob=0.0, is_test=True)
    split = w.temp(y, "directions", shape=(steps, batch, directions, hidden))
    w.op("reshape2", {"X": [out]}, {"Out": [split], "XShape": [w.temp(y, "split_xshape")]},
         shape=[steps, batch, directions, hidden])
    w.op("transpose2", {"X": [split]}, {"Out": [y], "XShape": [w.temp(y, "steps_xshape")]}, axis=[0, 2, 1, 3])


def _check_dense(node):
    weight, bias = _const(node.input(1)), node.input(2)
    if weight is None or weight.ndim != 2 or (bias is not None and _const(bias) is None):
        return "Paddle's matmul_v2 multiplies by a constant matrix here"
    return _float_op(node)


@R.exports("Dense", check=_check_dense)
def write_dense(w, node):
    x, weight, bias = node.input(0), node.input(1), node.input(2)
    out = node.outputs[0] if bias is None else w.temp(node.outputs[0], "product")
    w.op("matmul_v2", {"X": [x], "Y": [weight]}, {"Out": [out]}, trans_x=False, trans_y=False)
    if bias is not None:
        w.op("elementwise_add", {"X": [out], "Y": [bias]}, {"Out": [node.outputs[0]]}, axis=-1)


@R.exports("MatMul", check=lambda n: None if all(v.shape is not None and len(v.shape) >= 2 for v in n.inputs)
           else "Paddle's matmul_v2 of vectors is not written" if _floats(n) else _float_op(n))
def write_matmul(w, node):
    w.op("matmul_v2", {"X": [node.input(0)], "Y": [node.input(1)]}, {"Out": [node.outputs[0]]}, trans_x=False,
         trans_y=False)


# -- windows and resizing, proven on a probe --------------------------------------------------------------------
def _as_paddle_reads(rule, kind: str, attrs: dict, constants: list, probe: np.ndarray):
    """The probe run through the Paddle reader's `rule` for the op `kind` (PIR's name) with `attrs` (and
    `constants`, the attributes the reader takes as inputs): what Paddle computes with them, as the reader states
    it; None when the reader refuses them."""
    from tensorbridge.formats.paddle import Op
    from tensorbridge.ir.builder import Builder
    from tensorbridge.ir.graph import Graph
    from tensorbridge.reference.interpreter import run

    graph = Graph("probe")
    x = graph.add_input("x", np.dtype(np.float32), probe.shape)
    b = Builder(graph, "probe")
    reader = SimpleNamespace(b=b, x=x, inputs=[x, *(b.const(c) for c in constants)], attrs=attributes(attrs))
    try:
        out = rule(reader, Op(kind, [], [], attrs))
        graph.outputs.append(out[0] if isinstance(out, list) else out)
        return run(graph, {"x": probe})[graph.outputs[0].name]
    except Exception:  # noqa: BLE001 - a candidate the reader refuses is not Paddle's
        return None


def _first_match(node, candidates, rule, kind: str, constants) -> dict | None:
    """The first candidate attributes with which Paddle computes the node's output on a probe (of the input's
    shape, batch 1 where the batch is open)."""
    from tensorbridge.reference.interpreter import run_node

    x = node.input(0)
    if x.shape is None or len(x.shape) != 4 or not all(isinstance(d, int) for d in x.shape[1:]):
        return None
    batch = x.shape[0] if isinstance(x.shape[0], int) else 1
    probe = np.random.default_rng(0).standard_normal((batch, *x.shape[1:])).astype(np.float32)
    try:
        want = run_node(node, [probe, *(None if v is None else v.const for v in node.inputs[1:])])[0]
    except Exception:  # noqa: BLE001 - a node the probe cannot run is written by no candidate
        return None
    for options in candidates:
        got = _as_paddle_reads(rule, kind, options, constants(options), probe)
        if got is not None and got.shape == want.shape and np.allclose(got, want, rtol=1e-5, atol=1e-6):
            return options
    return None


def pool_options(node) -> dict | None:
    """pool2d's attributes for a 2-D pooling (floor or ceil; padding counted or not), proven on a probe."""
    a = node.attrs
    if a.get("auto_pad", "NOTSET") != "NOTSET" or any(d != 1 for d in a.get("dilations") or []) or \
            len(a["kernel_shape"]) != 2:
        return None
    pads = list(a.get("pads") or [0] * 4)
    base = {"pooling_type": "max" if node.op == "MaxPool" else "avg", "ksize": list(a["kernel_shape"]),
            "strides": list(a.get("strides") or [1, 1]), "paddings": [pads[0], pads[2], pads[1], pads[3]],
            "padding_algorithm": "EXPLICIT", "data_format": "NCHW", "global_pooling": False, "adaptive": False}
    candidates = [{**base, "ceil_mode": ceil, "exclusive": exclusive} for ceil in (False, True)
                  for exclusive in ((True, False) if base["pooling_type"] == "avg" else (True,))]
    return _first_match(node, candidates, pool2d, "pool2d", lambda o: [np.array(o["ksize"], np.int64)])


def resize_options(node) -> tuple[str, dict] | None:
    """(nearest_interp_v2 | bilinear_interp_v2, attributes) resizing as the node does, proven on a probe: to the
    output's size, or by its scales."""
    a, y = node.attrs, node.outputs[0]
    mode = a.get("mode", "nearest")
    if mode not in ("nearest", "linear") or a.get("antialias", 0) or y.shape is None or len(y.shape) != 4 or \
            not all(isinstance(d, int) for d in y.shape[2:]):
        return None
    kind = "nearest_interp_v2" if mode == "nearest" else "bilinear_interp_v2"
    scales = node.input(2).const if len(node.inputs) > 2 and node.input(2) is not None else None
    sizes = [{"out_h": int(y.shape[2]), "out_w": int(y.shape[3]), "scale": []}]
    if scales is not None and np.asarray(scales).size == 4:
        sizes.insert(0, {"out_h": -1, "out_w": -1, "scale": [float(v) for v in np.asarray(scales)[2:]]})
    corners = ((False, 1), (False, 0), (True, 1)) if mode == "linear" else ((False, 1),)
    candidates = [{"interp_method": mode.replace("linear", "bilinear"), "align_corners": c, "align_mode": m,
                   "data_layout": "NCHW", **size} for size in sizes for c, m in corners]
    renamed = [{("data_format" if k == "data_layout" else k): v for k, v in o.items()} for o in candidates]
    found = _first_match(node, renamed, interpolate, kind.removesuffix("_v2"), lambda o: [])
    if found is None:
        return None
    return kind, {("data_layout" if k == "data_format" else k): v for k, v in found.items()}


@R.exports("Resize", check=lambda n: _float_op(n) or (None if resize_options(n) else
                                                       "a resize other than Paddle's nearest (floor) or bilinear"))
def write_resize(w, node):
    kind, options = resize_options(node)
    w.op(kind, {"X": [node.input(0)]}, {"Out": [node.outputs[0]]}, **options)


@R.exports("MaxPool", "AveragePool", check=lambda n: (_float_op(n) or (
    None if len(n.outputs) == 1 and pool_options(n) else "a pooling other than Paddle's (floor or ceil, padding "
                                                         "counted or not)")))
def write_pool(w, node):
    w.op("pool2d", {"X": [node.input(0)]}, {"Out": [node.outputs[0]]}, **pool_options(node))


@R.exports("GlobalAveragePool", "GlobalMaxPool",
           check=lambda n: _float_op(n) or (None if len(n.input(0).shape or ()) == 4 else "Paddle pools (N, C, H, W)"))
def write_global_pool(w, node):
    w.op("pool2d", {"X": [node.input(0)]}, {"Out": [node.outputs[0]]}, ksize=[1, 1], global_pooling=True,
         pooling_type="max" if node.op == "GlobalMaxPool" else "avg", strides=[1, 1], paddings=[0, 0],
         padding_algorithm="EXPLICIT", data_format="NCHW")


# -- data movement ----------------------------------------------------------------------------------------------
def _check_reshape(node):
    target = _ints(node.input(1))
    if target is None or node.attrs.get("allowzero", 0) and 0 in target:
        return "Paddle's reshape2 takes a constant shape (0 keeps a size)"
    return None


@R.exports("Reshape", check=_check_reshape)
def write_reshape(w, node):
    w.op("reshape2", {"X": [node.input(0)]}, {"Out": [node.outputs[0]], **_xshape(w, node)},
         shape=_ints(node.input(1)))


@R.exports("Flatten", check=lambda n: None if n.input(0).shape is not None else "a Flatten of unknown rank")
def write_flatten(w, node):
    axis = int(node.attrs.get("axis", 1)) % max(len(node.input(0).shape), 1)
    w.op("reshape2", {"X": [node.input(0)]}, {"Out": [node.outputs[0]], **_xshape(w, node)},
         shape=[0] * axis + [-1] if axis else [1, -1])


@R.exports("Transpose")
def write_transpose(w, node):
    rank = len(node.input(0).shape)
    perm = list(node.attrs.get("perm") or range(rank - 1, -1, -1))
    w.op("transpose2", {"X": [node.input(0)]}, {"Out": [node.outputs[0]], **_xshape(w, node)}, axis=perm)


@R.exports("Squeeze", "Unsqueeze", check=lambda n: None if len(n.inputs) > 1 and _ints(n.input(1)) is not None
           else f"a {n.op} of axes computed at run time")
def write_squeeze(w, node):
    w.op(node.op.lower() + "2", {"X": [node.input(0)]}, {"Out": [node.outputs[0]], **_xshape(w, node)},
         axes=_ints(node.input(1)))


@R.exports("Concat", check=lambda n: None if n.outputs[0].shape is not None else "a Concat of unknown rank")
def write_concat(w, node):
    if len(node.inputs) == 1:
        w.op("assign", {"X": [node.input(0)]}, {"Out": [node.outputs[0]]})
        return
    axis = int(node.attrs["axis"]) % len(node.outputs[0].shape)
    w.op("concat", {"X": list(node.inputs)}, {"Out": [node.outputs[0]]}, axis=axis)


def _check_slice(node):
    steps = _ints(node.input(4)) if len(node.inputs) > 4 and node.input(4) is not None else None
    if any(_ints(v) is None for v in node.inputs[1:3]) or (len(node.inputs) > 3 and node.input(3) is not None and
                                                          _ints(node.input(3)) is None):
        return "a Slice with bounds computed at run time"
    if steps is not None and any(s != 1 for s in steps):
        return "a Slice with steps (strided_slice is not written yet)"
    return None


@R.exports("Slice", check=_check_slice)
def write_slice(w, node):
    starts, ends = _ints(node.input(1)), _ints(node.input(2))
    axes = _ints(node.input(3)) if len(node.inputs) > 3 and node.input(3) is not None else list(range(len(starts)))
    w.op("slice", {"Input": [node.input(0)]}, {"Out": [node.outputs[0]]}, axes=axes, starts=starts, ends=ends,
         decrease_axis=[], infer_flags=[1] * len(axes))


def _split_sizes(node) -> list[int] | None:
    """The sizes a Split cuts (given, or its outputs' along the axis)."""
    if len(node.inputs) > 1 and node.input(1) is not None:
        return _ints(node.input(1))
    if node.input(0).shape is None or any(o.shape is None for o in node.outputs):
        return None
    axis = int(node.attrs.get("axis", 0)) % len(node.input(0).shape)
    sizes = [o.shape[axis] for o in node.outputs]
    return sizes if all(isinstance(d, int) for d in sizes) else None


@R.exports("Split", check=lambda n: None if _split_sizes(n) is not None and n.input(0).shape is not None else
           "a Split into sizes computed at run time, or of unknown rank")
def write_split(w, node):
    """With the axis counted from the front: Paddle 3.3's oneDNN split crashes the process ("double free") on a
    negative axis."""
    axis = int(node.attrs.get("axis", 0)) % len(node.input(0).shape)
    w.op("split", {"X": [node.input(0)]}, {"Out": list(node.outputs)}, axis=axis, sections=_split_sizes(node), num=0)


def _reduced_axes(node) -> list[int] | None:
    """The axes a reduction reduces ([] for all of them); None when they are computed at run time."""
    if len(node.inputs) < 2 or node.input(1) is None:
        return None if node.attrs.get("noop_with_empty_axes", 0) else []
    return _ints(node.input(1))


def _check_reduce(node):
    axes = _reduced_axes(node)
    if axes is None or (len(node.inputs) > 1 and node.input(1) is not None and not axes):
        return "a reduction over axes that are not given as constants"
    return _float_op(node)


@R.exports(*REDUCE, check=_check_reduce)
def write_reduce(w, node):
    axes = _reduced_axes(node)
    w.op(REDUCE[node.op], {"X": [node.input(0)]}, {"Out": [node.outputs[0]]}, dim=axes or [0],
         keep_dim=bool(node.attrs.get("keepdims", 1)), reduce_all=not axes)


def _check_gather(node):
    if node.input(1).dtype is None or node.input(1).dtype.kind not in "iu" or node.input(0).shape is None:
        return "a Gather by non-integer indices, or of a value of unknown rank"
    embedding = int(node.attrs.get("axis", 0)) == 0 and _const(node.input(0)) is not None and \
        len(node.input(0).shape) == 2
    if len(node.input(1).shape or ()) > 1 and not embedding and \
            not all(isinstance(d, int) for d in node.outputs[0].shape or (None,)):
        return "a Gather by an index array (not a vector) into a shape known only at run time"
    return None


@R.exports("Gather", check=_check_gather)
def write_gather(w, node):
    """An embedding lookup (a constant table) as lookup_table_v2; one constant index as a slice that drops its axis
    (Paddle's gather takes index vectors); other indices as gather."""
    table, ids = node.input(0), node.input(1)
    axis = int(node.attrs.get("axis", 0)) % len(table.shape)
    index = _const(ids)
    if index is not None and np.ndim(index) == 0 and isinstance(table.shape[axis], int):
        start = int(index) % table.shape[axis]
        w.op("slice", {"Input": [table]}, {"Out": [node.outputs[0]]}, axes=[axis], starts=[start], ends=[start + 1],
             decrease_axis=[axis], infer_flags=[1])
    elif axis == 0 and _const(table) is not None and len(table.shape) == 2:
        w.op("lookup_table_v2", {"Ids": [ids], "W": [table]}, {"Out": [node.outputs[0]]}, padding_idx=-1)
    elif len(ids.shape) == 1:
        w.op("gather", {"X": [table], "Index": [ids]}, {"Out": [node.outputs[0]]}, axis=axis)
    else:  # Paddle's gather takes a vector of indices: the array flattened, and the result shaped back
        flat = w.temp(ids, "flat", shape=(-1,))
        w.op("reshape2", {"X": [ids]}, {"Out": [flat], "XShape": [w.temp(ids, "xshape")]}, shape=[-1])
        shape = table.shape
        gathered = w.temp(node.outputs[0], "gathered", shape=(*shape[:axis], -1, *shape[axis + 1:]))
        w.op("gather", {"X": [table], "Index": [flat]}, {"Out": [gathered]}, axis=axis)
        w.op("reshape2", {"X": [gathered]}, {"Out": [node.outputs[0]], "XShape": [w.temp(ids, "gathered_xshape")]},
             shape=list(node.outputs[0].shape))

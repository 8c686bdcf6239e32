"""Keras layer -> IR converters (named in `rules/keras.py`).

Each takes (importer, layer, input values, keras node) and returns the output value(s).
Kernels are permuted into the IR convention: convolution [out, in/groups, *kernel],
transposed convolution [in, out, *kernel]; Dense keeps Keras's [in, out].
"""

from __future__ import annotations

import numpy as np

from tensorbridge.errors import ModelError
from tensorbridge.frontends.keras.importer import to_numpy
from tensorbridge.rules import keras as rules

NHWC = "NHWC"


def _tuple(v, n):
    return [int(v)] * n if isinstance(v, int) else [int(x) for x in v]


def _padding(layer, attrs):
    if layer.padding == "same":
        attrs["auto_pad"] = "SAME_UPPER"
    elif layer.padding == "causal":
        raise ModelError(f"{layer.name}: causal padding is not supported")
    return attrs


def _check_channels_last(layer):
    if getattr(layer, "data_format", "channels_last") != "channels_last":
        raise ModelError(f"{layer.name}: data_format={layer.data_format} is not supported (channels_last only)")


def activate(imp, layer, x, name=None, suffix="activation"):
    """Apply a Keras activation (by name) as a separate IR op."""
    act = name or getattr(layer, "activation", None)
    act = getattr(act, "__name__", act) or "linear"
    if act not in rules.ACTIVATIONS:
        raise ModelError(f"{layer.name}: activation {act!r} is not supported")
    spec = rules.ACTIVATIONS[act]
    if spec is None:
        return x
    op, attrs = spec
    if op == "Clip":
        return imp.emit("Clip", [x, imp.const(attrs["min"]), imp.const(attrs["max"])], suffix=suffix)
    return imp.emit(op, [x], dict(attrs), suffix=suffix)


def _bias(imp, layer, w):
    return imp.weight("bias", to_numpy(layer.bias)) if getattr(layer, "use_bias", False) else None


def conv(imp, layer, inputs, node):
    _check_channels_last(layer)
    kernel = to_numpy(layer.kernel)  # [*k, in/groups, out]
    rank = kernel.ndim - 2
    w = imp.weight("kernel", np.transpose(kernel, (rank + 1, rank, *range(rank))))
    attrs = _padding(layer, {"strides": _tuple(layer.strides, rank), "dilations": _tuple(layer.dilation_rate, rank),
                             "group": int(getattr(layer, "groups", 1)), "layout": NHWC})
    b = _bias(imp, layer, w)
    y = imp.emit("Conv", [inputs[0], w] + ([b] if b is not None else []), attrs,
                 suffix="" if rules.ACTIVATIONS.get(_act_name(layer)) is None else "conv")
    return activate(imp, layer, y)


def _act_name(layer):
    act = getattr(layer, "activation", None)
    return getattr(act, "__name__", act) or "linear"


def _depthwise(imp, layer, dk):
    """A [*k, in, mult] depthwise kernel as the IR's grouped Conv: its weight [in*mult, 1, *k], attrs and rank."""
    _check_channels_last(layer)
    rank = dk.ndim - 2
    flat = dk.reshape(*dk.shape[:rank], -1)  # [*k, in*mult] (in-major, as Keras orders channels)
    w = imp.weight("depthwise_kernel", np.transpose(flat, (rank, *range(rank)))[:, None])
    attrs = _padding(layer, {"strides": _tuple(layer.strides, rank), "dilations": _tuple(layer.dilation_rate, rank),
                             "group": int(dk.shape[rank]), "layout": NHWC})
    return w, attrs, rank


def depthwise_conv(imp, layer, inputs, node):
    w, attrs, _ = _depthwise(imp, layer, to_numpy(layer.kernel))
    b = _bias(imp, layer, w)
    y = imp.emit("Conv", [inputs[0], w] + ([b] if b is not None else []), attrs,
                 suffix="" if rules.ACTIVATIONS.get(_act_name(layer)) is None else "conv")
    return activate(imp, layer, y)


def separable_conv(imp, layer, inputs, node):
    dw, attrs, rank = _depthwise(imp, layer, to_numpy(layer.depthwise_kernel))
    y = imp.emit("Conv", [inputs[0], dw], attrs, suffix="depthwise")
    pk = to_numpy(layer.pointwise_kernel)  # [1.., in*mult, out]
    pw = imp.weight("pointwise_kernel", np.transpose(pk, (rank + 1, rank, *range(rank))))
    b = imp.weight("bias", to_numpy(layer.bias)) if layer.use_bias else None
    y = imp.emit("Conv", [y, pw] + ([b] if b is not None else []), {"layout": NHWC},
                 suffix="pointwise" if rules.ACTIVATIONS.get(_act_name(layer)) is not None else "")
    return activate(imp, layer, y)


def conv_transpose(imp, layer, inputs, node):
    _check_channels_last(layer)
    kernel = to_numpy(layer.kernel)  # [*k, out, in]
    rank = kernel.ndim - 2
    w = imp.weight("kernel", np.transpose(kernel, (rank + 1, rank, *range(rank))))
    strides = _tuple(layer.strides, rank)
    attrs = {"strides": strides, "dilations": _tuple(layer.dilation_rate, rank), "layout": NHWC}
    if getattr(layer, "output_padding", None):
        attrs["output_padding"] = _tuple(layer.output_padding, rank)
    if layer.padding == "same":
        x = inputs[0]
        if x.shape is None or not all(isinstance(d, int) for d in x.shape[1:-1]):
            raise ModelError(f"{layer.name}: 'same' transposed convolution needs static spatial dims")
        extra = attrs.get("output_padding", [0] * rank)
        attrs["output_shape"] = [d * s + e for d, s, e in zip(x.shape[1:-1], strides, extra)]
        attrs["auto_pad"] = "SAME_UPPER"
    b = _bias(imp, layer, w)
    y = imp.emit("ConvTranspose", [inputs[0], w] + ([b] if b is not None else []), attrs,
                 suffix="" if rules.ACTIVATIONS.get(_act_name(layer)) is None else "conv")
    return activate(imp, layer, y)


def dense(imp, layer, inputs, node):
    w = imp.weight("kernel", to_numpy(layer.kernel))
    b = _bias(imp, layer, w)
    y = imp.emit("Dense", [inputs[0], w] + ([b] if b is not None else []),
                 suffix="" if rules.ACTIVATIONS.get(_act_name(layer)) is None else "dense")
    return activate(imp, layer, y)


def batch_norm(imp, layer, inputs, node):
    x = inputs[0]
    rank = len(x.shape) if x.shape is not None else 4
    axis = layer.axis if isinstance(layer.axis, int) else layer.axis[0]
    if axis not in (-1, rank - 1):
        raise ModelError(f"{layer.name}: BatchNormalization over axis {axis} is not supported")
    n = to_numpy(layer.moving_mean).shape[0]
    gamma = to_numpy(layer.gamma) if layer.scale else np.ones(n, np.float32)
    beta = to_numpy(layer.beta) if layer.center else np.zeros(n, np.float32)
    return imp.emit("BatchNormalization", [x, imp.weight("gamma", gamma), imp.weight("beta", beta),
                                           imp.weight("moving_mean", to_numpy(layer.moving_mean)),
                                           imp.weight("moving_variance", to_numpy(layer.moving_variance))],
                    {"epsilon": float(layer.epsilon), "momentum": float(layer.momentum), "layout": NHWC})


def layer_norm(imp, layer, inputs, node):
    x = inputs[0]
    rank = len(x.shape)
    axes = sorted(a % rank for a in ([layer.axis] if isinstance(layer.axis, int) else layer.axis))
    if axes != list(range(axes[0], rank)):
        raise ModelError(f"{layer.name}: LayerNormalization over non-trailing axes {axes}")
    shape = [x.shape[a] for a in axes]
    gamma = to_numpy(layer.gamma) if layer.scale else np.ones(shape, np.float32)
    ins = [x, imp.weight("gamma", gamma)] + ([imp.weight("beta", to_numpy(layer.beta))] if layer.center else [])
    return imp.emit("LayerNormalization", ins, {"axis": axes[0], "epsilon": float(layer.epsilon)})


def group_norm(imp, layer, inputs, node):
    x = inputs[0]
    c = x.shape[-1]
    gamma = to_numpy(layer.gamma) if layer.scale else np.ones(c, np.float32)
    beta = to_numpy(layer.beta) if layer.center else np.zeros(c, np.float32)
    return imp.emit("GroupNormalization", [x, imp.weight("gamma", gamma), imp.weight("beta", beta)],
                    {"num_groups": int(layer.groups), "epsilon": float(layer.epsilon), "layout": NHWC})


def activation(imp, layer, inputs, node):
    return activate(imp, layer, inputs[0], suffix="")


def relu(imp, layer, inputs, node):
    if layer.threshold:
        raise ModelError(f"{layer.name}: ReLU with a threshold is not supported")
    x = inputs[0]
    if layer.negative_slope:
        if layer.max_value is not None:
            raise ModelError(f"{layer.name}: ReLU with both negative_slope and max_value is not supported")
        return imp.emit("LeakyRelu", [x], {"alpha": float(layer.negative_slope)})
    if layer.max_value is not None:
        return imp.emit("Clip", [x, imp.const(0.0), imp.const(float(layer.max_value))])
    return imp.emit("Relu", [x])


def softmax(imp, layer, inputs, node):
    if len(inputs) > 1:
        raise ModelError(f"{layer.name}: Softmax with a mask is not supported")
    return imp.emit("Softmax", [inputs[0]], {"axis": int(layer.axis)})


def leaky_relu(imp, layer, inputs, node):
    return imp.emit("LeakyRelu", [inputs[0]], {"alpha": float(layer.negative_slope)})


def elu(imp, layer, inputs, node):
    return imp.emit("Elu", [inputs[0]], {"alpha": float(layer.alpha)})


def prelu(imp, layer, inputs, node):
    return imp.emit("PRelu", [inputs[0], imp.weight("alpha", to_numpy(layer.alpha))])


_MERGE = {"Add": "Add", "Subtract": "Sub", "Multiply": "Mul", "Maximum": "Max", "Minimum": "Min", "Average": "Mean"}


def merge(imp, layer, inputs, node):
    op = _MERGE[type(layer).__name__]
    if op in ("Max", "Min", "Mean"):
        return imp.emit(op, inputs)
    y = inputs[0]
    for i, v in enumerate(inputs[1:]):
        last = i == len(inputs) - 2
        y = imp.emit(op, [y, v], suffix="" if last else f"{op.lower()}{i}")
    return y


def concatenate(imp, layer, inputs, node):
    return imp.emit("Concat", inputs, {"axis": int(layer.axis)})


def pool(imp, layer, inputs, node):
    _check_channels_last(layer)
    kind = type(layer).__name__
    rank = int(kind[-2])
    k = _tuple(layer.pool_size, rank)
    attrs = _padding(layer, {"kernel_shape": k, "strides": _tuple(layer.strides or k, rank), "layout": NHWC})
    return imp.emit("MaxPool" if kind.startswith("Max") else "AveragePool", [inputs[0]], attrs)


def global_pool(imp, layer, inputs, node):
    _check_channels_last(layer)
    kind = type(layer).__name__
    op = "GlobalMaxPool" if "Max" in kind else "GlobalAveragePool"
    y = imp.emit(op, [inputs[0]], {"layout": NHWC}, suffix="" if layer.keepdims else "pool")
    if layer.keepdims:
        return y
    rank = int(kind[-2])
    return imp.emit("Squeeze", [y, imp.const(list(range(1, rank + 1)), np.int64)])


def zero_padding(imp, layer, inputs, node):
    x = inputs[0]
    rank = len(x.shape)
    pads = layer.padding
    pairs = [(int(pads[0]), int(pads[1]))] if isinstance(pads[0], int) and rank == 3 else [tuple(p) for p in pads]
    begin = [0] + [p[0] for p in pairs] + [0]
    end = [0] + [p[1] for p in pairs] + [0]
    return imp.emit("Pad", [x, imp.const(begin + end, np.int64)], {"mode": "constant"})


def cropping(imp, layer, inputs, node):
    x = inputs[0]
    crops = layer.cropping
    pairs = [tuple(crops)] if isinstance(crops[0], int) else [tuple(c) for c in crops]
    starts = [p[0] for p in pairs]
    ends = [-p[1] if p[1] else 2**62 for p in pairs]
    axes = list(range(1, len(pairs) + 1))
    return imp.emit("Slice", [x, imp.const(starts, np.int64), imp.const(ends, np.int64), imp.const(axes, np.int64)])


def upsampling(imp, layer, inputs, node):
    _check_channels_last(layer)
    sh, sw = _tuple(layer.size, 2)
    if layer.interpolation == "nearest":
        attrs = {"mode": "nearest", "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"}
    elif layer.interpolation == "bilinear":
        attrs = {"mode": "linear", "coordinate_transformation_mode": "half_pixel"}
    else:
        raise ModelError(f"{layer.name}: UpSampling2D interpolation {layer.interpolation!r} is not supported")
    attrs["layout"] = NHWC
    return imp.emit("Resize", [inputs[0], None, imp.const([1.0, sh, sw, 1.0])], attrs)


def reshape(imp, layer, inputs, node):
    return imp.emit("Reshape", [inputs[0], imp.const([0] + [int(d) for d in layer.target_shape], np.int64)])


def flatten(imp, layer, inputs, node):
    return imp.emit("Flatten", [inputs[0]], {"axis": 1})


def permute(imp, layer, inputs, node):
    return imp.emit("Transpose", [inputs[0]], {"perm": [0] + [int(d) for d in layer.dims]})


def identity(imp, layer, inputs, node):
    return inputs[0]


def rescaling(imp, layer, inputs, node):
    y = imp.emit("Mul", [inputs[0], imp.weight("scale", np.asarray(layer.scale, np.float32))],
                 suffix="scale" if layer.offset else "")
    if layer.offset:
        y = imp.emit("Add", [y, imp.weight("offset", np.asarray(layer.offset, np.float32))])
    return y


def normalization(imp, layer, inputs, node):
    if layer.invert:
        raise ModelError(f"{layer.name}: inverted Normalization is not supported")
    mean, var = to_numpy(layer.mean), to_numpy(layer.variance)
    std = np.maximum(np.sqrt(var), np.float32(1e-7)).astype(np.float32)  # keras.backend.epsilon()
    y = imp.emit("Sub", [inputs[0], imp.weight("mean", mean.astype(np.float32))], suffix="center")
    return imp.emit("Div", [y, imp.weight("std", std)])


def embedding(imp, layer, inputs, node):
    return imp.emit("Gather", [imp.weight("embeddings", to_numpy(layer.embeddings)), inputs[0]], {"axis": 0})


def repeat_vector(imp, layer, inputs, node):
    x = imp.emit("Unsqueeze", [inputs[0], imp.const([1], np.int64)], suffix="unsqueeze")
    return imp.emit("Tile", [x, imp.const([1, int(layer.n), 1], np.int64)])


def multi_head_attention(imp, layer, inputs, node):
    """query/key/value projections -> IR Attention (4-D) -> output projection."""
    kwargs = node.arguments.kwargs
    args = list(node.arguments.args)
    given = {"query": args[0] if args else kwargs.get("query"),
             "value": args[1] if len(args) > 1 else kwargs.get("value"),
             "key": args[2] if len(args) > 2 else kwargs.get("key"),
             "attention_mask": kwargs.get("attention_mask")}
    tensors = dict(zip([k for k, t in given.items() if t is not None], inputs))
    q_in = tensors["query"]
    v_in = tensors.get("value", q_in)
    k_in = tensors.get("key", v_in)
    mask = tensors.get("attention_mask")
    heads, key_dim = int(layer.num_heads), int(layer.key_dim)
    value_dim = int(layer.value_dim or key_dim)

    def project(x, dense_layer, dim, tag):
        kernel = to_numpy(dense_layer.kernel)  # [d_model, heads, dim]
        w = imp.weight(f"{tag}.kernel", kernel.reshape(kernel.shape[0], -1))
        ins = [x, w]
        if dense_layer.bias is not None:
            ins.append(imp.weight(f"{tag}.bias", to_numpy(dense_layer.bias).reshape(-1)))
        y = imp.emit("Dense", ins, suffix=f"{tag}")
        y = imp.emit("Reshape", [y, imp.const([0, 0, heads, dim], np.int64)], suffix=f"{tag}.heads")
        return imp.emit("Transpose", [y], {"perm": [0, 2, 1, 3]}, suffix=f"{tag}.bhsd")

    q = project(q_in, layer._query_dense, key_dim, "query")
    k = project(k_in, layer._key_dense, key_dim, "key")
    v = project(v_in, layer._value_dense, value_dim, "value")
    attn_inputs = [q, k, v]
    if mask is not None:  # [B, T, S] (True = attend) -> broadcast over heads
        if mask.dtype != np.bool_:
            mask = imp.emit("Cast", [mask], {"to": "bool"}, suffix="mask_bool")
        attn_inputs.append(imp.emit("Unsqueeze", [mask, imp.const([1], np.int64)], suffix="mask"))
    attrs = {"scale": 1.0 / float(np.sqrt(key_dim))}
    if kwargs.get("use_causal_mask"):
        attrs["is_causal"] = 1
    att = imp.emit("Attention", attn_inputs, attrs, suffix="attention")
    att = imp.emit("Transpose", [att], {"perm": [0, 2, 1, 3]}, suffix="merge")
    att = imp.emit("Reshape", [att, imp.const([0, 0, heads * value_dim], np.int64)], suffix="merge_heads")
    out_kernel = to_numpy(layer._output_dense.kernel)  # [heads, value_dim, d_model]
    ins = [att, imp.weight("output.kernel", out_kernel.reshape(heads * value_dim, -1))]
    if layer._output_dense.bias is not None:
        ins.append(imp.weight("output.bias", to_numpy(layer._output_dense.bias)))
    return imp.emit("Dense", ins)


def _cell_weights(cell, kind):
    """Keras kernels -> IR W [gates*H, in], R [gates*H, H], B [2*gates*H] (ONNX gate order)."""
    kernel, rec = to_numpy(cell.kernel), to_numpy(cell.recurrent_kernel)
    hidden = rec.shape[0]
    bias = to_numpy(cell.bias) if cell.use_bias else None
    if kind == "LSTM":  # keras i f c o -> IR i o f c
        order = [0, 3, 1, 2]
    elif kind == "GRU":  # keras z r h -> IR z r h
        order = [0, 1, 2]
    else:
        order = [0]
    gates = len(order)

    def reorder(m):  # m: [..., gates*H] columns
        return np.concatenate([m[..., i * hidden:(i + 1) * hidden] for i in order], axis=-1)

    W, R = reorder(kernel).T, reorder(rec).T
    if bias is None:
        B = np.zeros(2 * gates * hidden, np.float32)
    elif kind == "GRU" and bias.ndim == 2:  # reset_after: input and recurrent biases
        B = np.concatenate([reorder(bias[0]), reorder(bias[1])])
    else:
        B = np.concatenate([reorder(bias), np.zeros(gates * hidden, np.float32)])
    return W, R, B, hidden


def _recurrent_node(imp, layer, x, cells, direction, suffix=""):
    kind = type(layer).__name__ if type(layer).__name__ != "Bidirectional" else type(layer.forward_layer).__name__
    mats = [_cell_weights(c, kind) for c in cells]
    hidden = mats[0][3]
    cell = cells[0]
    acts = []
    if kind == "LSTM":
        acts = [_act(cell.recurrent_activation), _act(cell.activation), _act(cell.activation)]
    elif kind == "GRU":
        acts = [_act(cell.recurrent_activation), _act(cell.activation)]
        if not cell.reset_after:
            raise ModelError(f"{layer.name}: GRU with reset_after=False is not supported")
    else:
        acts = [_act(cell.activation)]
    attrs = {"hidden_size": hidden, "direction": direction, "activations": acts * len(cells)}
    if kind == "GRU":
        attrs["linear_before_reset"] = 1
    op = {"LSTM": "LSTM", "GRU": "GRU", "SimpleRNN": "RNN"}[kind]
    W = imp.weight(f"{suffix}W", np.stack([m[0] for m in mats]))
    R = imp.weight(f"{suffix}R", np.stack([m[1] for m in mats]))
    B = imp.weight(f"{suffix}B", np.stack([m[2] for m in mats]))
    xt = imp.emit("Transpose", [x], {"perm": [1, 0, 2]}, suffix=f"{suffix}time_major")
    n_out = 3 if op == "LSTM" else 2
    return imp.emit(op, [xt, W, R, B], attrs, outputs=n_out, suffix=f"{suffix}cell")


def _act(fn):
    name = getattr(fn, "__name__", fn)
    table = {"sigmoid": "Sigmoid", "tanh": "Tanh", "relu": "Relu", "hard_sigmoid": "HardSigmoid"}
    if name not in table:
        raise ModelError(f"recurrent activation {name!r} is not supported")
    return table[name]


def _sequence_out(imp, y, return_sequences, suffix=""):
    """IR Y [seq, dirs, batch, H] -> Keras [batch, seq, dirs*H] or last step [batch, dirs*H]."""
    y = imp.emit("Transpose", [y], {"perm": [2, 0, 1, 3]}, suffix=f"{suffix}batch_major")
    y = imp.emit("Reshape", [y, imp.const([0, 0, -1], np.int64)], suffix=f"{suffix}merge" if not return_sequences
                 else "")
    if return_sequences:
        return y
    return imp.emit("Gather", [y, imp.const(-1, np.int64)], {"axis": 1})


def recurrent(imp, layer, inputs, node):
    """go_backwards runs the IR op in reverse; Keras then returns the sequence in reversed time order."""
    if layer.stateful or len(inputs) > 1:
        raise ModelError(f"{layer.name}: stateful layers and initial states are not supported")
    backwards = bool(layer.go_backwards)
    outs = _recurrent_node(imp, layer, inputs[0], [layer.cell], "reverse" if backwards else "forward")
    states = [imp.emit("Squeeze", [s, imp.const([0], np.int64)], suffix=f"state{i}") for i, s in enumerate(outs[1:])]
    if backwards and not layer.return_sequences:
        y = states[0]  # the last step processed is the first in time
    else:
        y = outs[0]
        if backwards:
            big = np.iinfo(np.int64).max
            y = imp.emit("Slice", [y, imp.const([-1], np.int64), imp.const([-big], np.int64),
                                   imp.const([0], np.int64), imp.const([-1], np.int64)], suffix="reversed")
        y = _sequence_out(imp, y, layer.return_sequences)
    return [y, *states] if getattr(layer, "return_state", False) else y


def bidirectional(imp, layer, inputs, node):
    fwd, bwd = layer.forward_layer, layer.backward_layer
    if layer.merge_mode != "concat" or fwd.return_state or len(inputs) > 1:
        raise ModelError(f"{layer.name}: Bidirectional merge_mode={layer.merge_mode!r}/states are not supported")
    outs = _recurrent_node(imp, layer, inputs[0], [fwd.cell, bwd.cell], "bidirectional")
    if fwd.return_sequences:
        return _sequence_out(imp, outs[0], True)
    # last output of each direction: forward at the last step, backward at step 0 -> Y_h
    h = imp.emit("Transpose", [outs[1]], {"perm": [1, 0, 2]}, suffix="final")
    return imp.emit("Reshape", [h, imp.const([0, -1], np.int64)])

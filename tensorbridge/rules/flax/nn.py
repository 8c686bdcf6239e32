"""Flax code for layers (convolution, normalisation, dense), pooling and softmax.

Weighted ops become NNX layers holding the weights in Flax's own conventions: a convolution kernel is
[*kernel, in/groups, out], a dense kernel [in, out]; BatchNorm keeps `mean`/`var` as batch statistics.
"""

from __future__ import annotations

import ast

import numpy as np

from tensorbridge.codegen import pyast as P
from tensorbridge.codegen.rule_helpers import Unsupported, const_operand
from tensorbridge.ops.nn import floor_window_pads, indices_read
from tensorbridge.rules.flax.base import R, explicit_padding, require_nhwc, static_shape


@R.exports("Conv")
def write_conv(em, node):
    require_nhwc(node)
    x, w, b = node.inputs[0], node.inputs[1], node.input(2)
    if w.const is None:
        return _write_computed_conv(em, node)
    wa = const_operand(w)  # [O, I/g, *k]
    nsp = wa.ndim - 2
    group = node.attrs.get("group", 1)
    kernel = tuple(int(k) for k in wa.shape[2:])
    kwargs = {"strides": tuple(node.attrs.get("strides") or [1] * nsp),
              "padding": explicit_padding(node, nsp, kernel),
              "kernel_dilation": tuple(node.attrs.get("dilations") or [1] * nsp),
              "feature_group_count": group, "use_bias": b is not None}
    defaults = {"strides": (1,) * nsp, "kernel_dilation": (1,) * nsp, "feature_group_count": 1, "use_bias": True}
    weights = {"kernel": wa.transpose(*range(2, 2 + nsp), 1, 0)}
    if b is not None:
        weights["bias"] = const_operand(b)
    layer = em.layer(node, "nnx.Conv", [wa.shape[1] * group, wa.shape[0], kernel],
                     {k: v for k, v in kwargs.items() if defaults.get(k, object()) != v}, weights)
    em.out(node, P.call(layer, em.tensor(x)))


#: the layouts of a channels-last convolution whose kernel keeps the IR's [out, in/groups, *kernel], per spatial rank
_COMPUTED_KERNEL_LAYOUTS = {1: ("NWC", "OIW", "NWC"), 2: ("NHWC", "OIHW", "NHWC"), 3: ("NDHWC", "OIDHW", "NDHWC")}


def _write_computed_conv(em, node):
    """A kernel computed in the model (CondConv's per-sample mixture) is no layer weight: jax.lax's convolution,
    the kernel read in the IR's order, and the bias added."""
    x, w, b = node.inputs[0], node.inputs[1], node.input(2)
    nsp = len(static_shape(w)) - 2
    kernel = static_shape(w)[2:]
    y = P.call("jax.lax.conv_general_dilated", em.tensor(x), em.tensor(w),
               window_strides=tuple(node.attrs.get("strides") or [1] * nsp),
               padding=explicit_padding(node, nsp, kernel),
               rhs_dilation=tuple(node.attrs.get("dilations") or [1] * nsp),
               dimension_numbers=_COMPUTED_KERNEL_LAYOUTS[nsp],
               feature_group_count=node.attrs.get("group", 1))
    em.out(node, P.binop(y, "+", em.tensor(b)) if b is not None else y)


def _conv_transpose_blocker(node) -> str | None:
    from tensorbridge.ops.nn import pads_implied  # imported here: the catalogue's families load first

    if node.attrs.get("group", 1) != 1:
        return "grouped ConvTranspose"  # decomposed into one per group
    if pads_implied(node):
        return "ConvTranspose with auto_pad SAME or an output_shape"
    if node.inputs[1].const is None or (node.input(2) is not None and node.input(2).const is None):
        return "ConvTranspose with computed weights"
    return None


@R.exports("ConvTranspose", check=_conv_transpose_blocker)
def write_conv_transpose(em, node):
    """nnx.ConvTranspose with transpose_kernel (the gradient of a convolution, as the IR's): its padding is what
    is added around the dilated input, dilation * (kernel - 1) - pad on each side (plus output_padding at the
    end)."""
    require_nhwc(node)
    x, w, b = node.inputs[0], node.inputs[1], node.input(2)
    wa = const_operand(w)  # [in, out, *k]
    nsp = wa.ndim - 2
    kernel = tuple(int(k) for k in wa.shape[2:])
    strides = tuple(node.attrs.get("strides") or [1] * nsp)
    dilations = tuple(node.attrs.get("dilations") or [1] * nsp)
    pads = node.attrs.get("pads") or [0] * (2 * nsp)
    extra = node.attrs.get("output_padding") or [0] * nsp
    padding = [(d * (k - 1) - pads[i], d * (k - 1) - pads[i + nsp] + extra[i])
               for i, (k, d) in enumerate(zip(kernel, dilations))]
    kwargs = {"strides": strides, "padding": padding, "kernel_dilation": dilations, "transpose_kernel": True,
              "use_bias": b is not None}
    defaults = {"kernel_dilation": (1,) * nsp, "use_bias": True}
    weights = {"kernel": wa.transpose(*range(2, 2 + nsp), 1, 0)}  # (*k, out, in), as transpose_kernel reads it
    if b is not None:
        weights["bias"] = const_operand(b)
    layer = em.layer(node, "nnx.ConvTranspose", [wa.shape[0], wa.shape[1], kernel],
                     {k: v for k, v in kwargs.items() if defaults.get(k, object()) != v}, weights)
    em.out(node, P.call(layer, em.tensor(x)))


@R.exports("BatchNormalization", check=lambda node: "training mode" if node.attrs.get("training_mode") else None)
def write_batch_norm(em, node):
    require_nhwc(node)
    x, scale, bias, mean, var = node.inputs[:5]
    channels = const_operand(scale).shape[0]
    kwargs = {"momentum": float(node.attrs.get("momentum", 0.9)), "epsilon": float(node.attrs.get("epsilon", 1e-5))}
    weights = {"scale": const_operand(scale), "bias": const_operand(bias), "mean": const_operand(mean),
               "var": const_operand(var)}
    em.out(node, P.call(em.layer(node, "nnx.BatchNorm", [channels], kwargs, weights), em.tensor(x)))


@R.exports("GroupNormalization", check=lambda node: None if all(v.const is not None for v in node.inputs[1:])
           else "a computed scale or bias")
def write_group_norm(em, node):
    """nnx.GroupNorm over channels-last input: groups of consecutive channels, as the IR's."""
    require_nhwc(node)
    x, scale, bias = node.inputs
    channels = const_operand(scale).shape[0]
    kwargs = {"num_groups": int(node.attrs["num_groups"]), "epsilon": float(node.attrs.get("epsilon", 1e-5)),
              "use_fast_variance": False}
    weights = {"scale": const_operand(scale), "bias": const_operand(bias)}
    em.out(node, P.call(em.layer(node, "nnx.GroupNorm", [channels], kwargs, weights), em.tensor(x)))


def _norm_blocker(node) -> str | None:
    """NNX's norms normalise the last axis with a constant scale (legalisation decomposes the rest)."""
    x = node.inputs[0]
    if x.shape is None or node.attrs.get("axis", -1) % len(x.shape) != len(x.shape) - 1 or node.inputs[1].const is None:
        return "not over the last axis only"
    return None


def _norm_size(node) -> int:
    """The size of the normalised (last) axis."""
    size = node.inputs[0].shape[-1]
    if not isinstance(size, int):
        raise Unsupported("normalisation over a dynamic axis")
    return size


@R.exports("LayerNormalization", check=_norm_blocker)
def write_layer_norm(em, node):
    x, scale, bias = node.inputs[0], node.inputs[1], node.input(2)
    size = _norm_size(node)
    weights = {"scale": np.broadcast_to(const_operand(scale), (size,)).copy()}
    if bias is not None:
        weights["bias"] = np.broadcast_to(const_operand(bias), (size,)).copy()
    kwargs = {"epsilon": float(node.attrs.get("epsilon", 1e-5)), "use_fast_variance": False}
    if bias is None:
        kwargs["use_bias"] = False
    em.out(node, P.call(em.layer(node, "nnx.LayerNorm", [size], kwargs, weights), em.tensor(x)))


@R.exports("RMSNormalization", check=_norm_blocker)
def write_rms_norm(em, node):
    x, scale = node.inputs[:2]
    size = _norm_size(node)
    weights = {"scale": np.broadcast_to(const_operand(scale), (size,)).copy()}
    kwargs = {"epsilon": float(node.attrs.get("epsilon", 1e-5)), "use_fast_variance": False}
    em.out(node, P.call(em.layer(node, "nnx.RMSNorm", [size], kwargs, weights), em.tensor(x)))


def _linear(em, node, x, w: np.ndarray, b: np.ndarray | None):
    weights = {"kernel": w} if b is None else {"kernel": w, "bias": b}
    layer = em.layer(node, "nnx.Linear", [w.shape[0], w.shape[1]], {} if b is not None else {"use_bias": False},
                     weights)
    em.out(node, P.call(layer, em.tensor(x)))


@R.exports("Dense")
def write_dense(em, node):
    x, w, b = node.inputs[0], node.inputs[1], node.input(2)
    _linear(em, node, x, const_operand(w), None if b is None else const_operand(b))


def _is_weight(v) -> bool:
    return v.const is not None and np.asarray(v.const).ndim == 2 and np.asarray(v.const).dtype.kind == "f"


@R.exports("MatMul")
def write_matmul(em, node):
    a, b = node.inputs
    if _is_weight(b) and a.const is None:
        return _linear(em, node, a, np.asarray(b.const), None)
    em.out(node, P.binop(em.tensor(a), "@", em.tensor(b)))


@R.exports("Gemm")
def write_gemm(em, node):
    a, b, c = node.inputs[0], node.inputs[1], node.input(2)
    alpha, beta = node.attrs.get("alpha", 1.0), node.attrs.get("beta", 1.0)
    if _is_weight(b) and not node.attrs.get("transA") and alpha == 1.0 and beta == 1.0 and \
            (c is None or (c.const is not None and np.asarray(c.const).ndim <= 1)):
        w = np.asarray(b.const)
        w = w.T if node.attrs.get("transB") else w
        bias = None if c is None else np.broadcast_to(np.asarray(c.const), (w.shape[1],)).copy()
        return _linear(em, node, a, w, bias)
    ae, be = em.tensor(a), em.tensor(b)
    ae = P.method(ae, "transpose") if node.attrs.get("transA") else ae
    be = P.method(be, "transpose") if node.attrs.get("transB") else be
    expr = P.binop(ae, "@", be)
    if alpha != 1.0:
        expr = P.binop(alpha, "*", expr)
    if c is not None:
        expr = P.binop(expr, "+", em.tensor(c) if beta == 1.0 else P.binop(beta, "*", em.tensor(c)))
    em.out(node, expr)


@R.exports("Softmax")
def write_softmax(em, node):
    em.out(node, P.call("jax.nn.softmax", em.tensor(node.inputs[0]), axis=node.attrs.get("axis", -1)))


@R.exports("LogSoftmax")
def write_log_softmax(em, node):
    em.out(node, P.call("jax.nn.log_softmax", em.tensor(node.inputs[0]), axis=node.attrs.get("axis", -1)))


def _pool_check(node) -> str | None:
    if any(d != 1 for d in node.attrs.get("dilations") or []):
        return "dilated pooling"
    if node.attrs.get("ceil_mode") and floor_window_pads(node) is None:
        return "ceil_mode over sizes known only at run time (other than a max pool's windows that overlap or tile)"
    return None


def _window(node):
    """(window, strides, padding) of a pool in Flax's terms; ceil_mode becomes extra end padding."""
    kernel = tuple(int(k) for k in node.attrs["kernel_shape"])
    nsp = len(kernel)
    strides = tuple(node.attrs.get("strides") or [1] * nsp)
    if node.attrs.get("ceil_mode"):
        return kernel, strides, [tuple(pair) for pair in zip(*floor_window_pads(node))]
    return kernel, strides, explicit_padding(node, nsp, kernel)


def _max_pool_check(node) -> str | None:
    return "MaxPool indices (nnx.max_pool gives none)" if indices_read(node) else _pool_check(node)


@R.exports("MaxPool", check=_max_pool_check)
def write_max_pool(em, node):
    require_nhwc(node)
    kernel, strides, padding = _window(node)
    em.out(node, P.call("nnx.max_pool", em.tensor(node.inputs[0]), kernel, strides=strides, padding=padding))


def _average_pool_check(node) -> str | None:
    if node.attrs.get("ceil_mode") and node.attrs.get("count_include_pad", 0):
        return "ceil_mode with count_include_pad"  # nnx.avg_pool would count the added window's overhang
    return _pool_check(node)


@R.exports("AveragePool", check=_average_pool_check)
def write_average_pool(em, node):
    require_nhwc(node)
    kernel, strides, padding = _window(node)
    include = bool(node.attrs.get("count_include_pad", 0))
    em.out(node, P.call("nnx.avg_pool", em.tensor(node.inputs[0]), kernel, strides=strides, padding=padding,
                        count_include_pad=include))


@R.exports("GlobalAveragePool", "GlobalMaxPool")
def write_global_pool(em, node):
    require_nhwc(node)
    rank = len(node.inputs[0].shape)
    fn = "jnp.mean" if node.op == "GlobalAveragePool" else "jnp.max"
    em.out(node, P.call(fn, em.tensor(node.inputs[0]), axis=tuple(range(1, rank - 1)), keepdims=True))


def _lstm_check(node) -> str | None:
    from tensorbridge.ops.recurrent import plain_rnn_blocker

    return plain_rnn_blocker(node, "")


@R.exports("LSTM", check=_lstm_check)
def write_lstm(em, node):
    """IR LSTM (ONNX gate order i o f c) as `nnx.RNN` over an `nnx.LSTMCell` per direction."""
    wa, ra = const_operand(node.inputs[1]), const_operand(node.inputs[2])
    hidden = wa.shape[1] // 4
    ba = _biases(node, wa)

    def weights(d):
        out = {}
        for gate, (name_i, name_h) in zip(range(4), (("ii", "hi"), ("io", "ho"), ("if_", "hf"), ("ig", "hg"))):
            rows = slice(gate * hidden, (gate + 1) * hidden)
            out[f"cell.{name_i}.kernel"] = wa[d, rows].T
            out[f"cell.{name_h}.kernel"] = ra[d, rows].T
            out[f"cell.{name_h}.bias"] = ba[d, rows] + ba[d, 4 * hidden:][rows]
        return out

    _recurrent(em, node, "nnx.LSTMCell", weights, lstm=True)


def _gru_check(node) -> str | None:
    from tensorbridge.ops.recurrent import plain_rnn_blocker

    reason = plain_rnn_blocker(node, "nnx.GRUCell applies the reset gate after the matmul")
    b = node.input(3)
    if reason is None and b is not None:
        hidden = node.attrs.get("hidden_size") or (b.shape[-1] // 6 if b.shape else 0)
        if b.const is None or np.any(np.asarray(b.const)[:, 5 * hidden:] != 0):
            return "GRU with a recurrent bias on its candidate state (nnx.GRUCell has none)"
    return reason


@R.exports("GRU", check=_gru_check)
def write_gru(em, node):
    """IR GRU (ONNX gate order z r h, reset after the matmul) as `nnx.RNN` over an `nnx.GRUCell` (order r z n)
    per direction; the recurrent biases of r and z add to the input ones (the candidate's is zero: checked)."""
    wa, ra = const_operand(node.inputs[1]), const_operand(node.inputs[2])
    hidden = wa.shape[1] // 3
    ba = _biases(node, wa)
    order = [1, 0, 2]  # nnx r z n <- IR z r h

    def rows(m, d):
        return np.concatenate([m[d, g * hidden:(g + 1) * hidden] for g in order])

    def weights(d):
        bias = rows(ba[:, :3 * hidden], d) + np.concatenate([rows(ba[:, 3 * hidden:], d)[:2 * hidden],
                                                             np.zeros(hidden, ba.dtype)])
        return {"cell.dense_i.kernel": rows(wa, d).T, "cell.dense_i.bias": bias, "cell.dense_h.kernel": rows(ra, d).T}

    _recurrent(em, node, "nnx.GRUCell", weights, lstm=False)


def _biases(node, wa: np.ndarray) -> np.ndarray:
    b = node.input(3)
    return const_operand(b) if b is not None else np.zeros((wa.shape[0], 2 * wa.shape[1]), wa.dtype)


def _recurrent(em, node, cell_class: str, weights, lstm: bool) -> None:
    """One time-major `nnx.RNN` per direction (the backward one reversed, keeping the time order of its outputs),
    outputs stacked as the IR's [seq, dirs, batch, hidden] Y and [dirs, batch, hidden] final states."""
    x, wa = node.inputs[0], const_operand(node.inputs[1])
    dirs, gates_h, in_size = wa.shape
    hidden = gates_h // (4 if lstm else 3)
    h0, c0 = node.input(5), node.input(6) if lstm else None
    xe = em.tensor(x)
    zeros = P.call("jnp.zeros", ast.Tuple([P.subscript(ast.Attribute(xe, "shape", ast.Load()), 1), P.lit(hidden)],
                                          ast.Load()), dtype=ast.Attribute(xe, "dtype", ast.Load()))
    backward = [node.attrs.get("direction", "forward") == "reverse"] if dirs == 1 else [False, True]
    read = [i < len(node.outputs) and (bool(node.outputs[i].uses()) or node.outputs[i] in em.g.outputs)
            for i in range(3)]
    sequences, finals = [], []
    for d in range(dirs):
        cell = P.call(cell_class, in_size, hidden, rngs=P.name("rngs"))
        options = {"time_major": True, "return_carry": True}
        if backward[d]:
            options.update(reverse=True, keep_order=True)
        layer = em.layer(node, "nnx.RNN", [cell], {**options, "rngs": False}, weights(d),
                         suffix=("backward" if backward[d] else ""))
        h = zeros if h0 is None else P.subscript(em.tensor(h0), d)
        if lstm:
            initial = ast.Tuple([P.subscript(em.tensor(c0), d) if c0 is not None else zeros, h], ast.Load())
        else:
            initial = h
        carry, seq = (em.namer.name(f"{node.name}_{part}", "t") if needed else "_"
                      for part, needed in (("carry", read[1] or read[2]), ("seq", read[0])))
        em.body.append(P.assign([carry, seq], P.call(layer, xe, initial_carry=initial)))
        sequences.append(P.name(seq))
        finals.append(P.name(carry))
    if read[0]:
        em.out(node, P.call("jnp.stack", sequences, axis=1), 0)
    for index, part in ((1, 1), (2, 0)) if lstm else ((1, None),):  # LSTM: Y_h is the carry's h, Y_c its c
        if read[index]:
            em.out(node, P.call("jnp.stack", [P.subscript(f, part) if lstm else f for f in finals]), index)

"""IR op -> Keras 3 code (channels-last graph), one rule per op.

Weighted ops become layers whose weights are recorded in Keras's own order; everything
else is a `keras.ops` call. Rules raise `Unsupported` for configurations Keras cannot express.
"""

from __future__ import annotations

import ast

import numpy as np

from tensorbridge.backends.codegen import pyast as P
from tensorbridge.backends.codegen.rule_helpers import Unsupported, check_plain_rnn
from tensorbridge.backends.codegen.rule_helpers import const_operand as _const
from tensorbridge.backends.codegen.rule_helpers import same as _same
from tensorbridge.ir import dtypes
from tensorbridge.ops.infer import norm_axis


def _nhwc(node):
    if node.attrs.get("layout", "NHWC") != "NHWC":
        raise Unsupported("channels-first layout reached the Keras backend")



def _padding(em, node, x_expr, nsp, kernel, fill=None):
    """(expression, keras padding) for the node's ONNX padding."""
    ap = node.attrs.get("auto_pad", "NOTSET")
    if ap == "SAME_UPPER":
        return x_expr, "same"
    if ap == "VALID":
        return x_expr, "valid"
    if ap == "SAME_LOWER":
        raise Unsupported("SAME_LOWER padding")
    pads = node.attrs.get("pads") or [0] * (2 * nsp)
    if not any(pads):
        return x_expr, "valid"
    widths = [[0, 0]] + [[pads[i], pads[i + nsp]] for i in range(nsp)] + [[0, 0]]
    kwargs = {} if fill is None else {"constant_values": fill}
    return P.call("ops.pad", x_expr, widths, **kwargs), "valid"


# -- layers --------------------------------------------------------------------------------
def conv(em, node):
    _nhwc(node)
    x, w = node.inputs[0], node.inputs[1]
    b = node.input(2)
    wa = _const(w)  # [O, I/g, *k]
    nsp = wa.ndim - 2
    if nsp not in (1, 2, 3):
        raise Unsupported(f"{nsp}-D convolution")
    group = node.attrs.get("group", 1)
    cin = wa.shape[1] * group
    xe, padding = _padding(em, node, em.tensor(x), nsp, wa.shape[2:])
    strides = _same(node.attrs.get("strides") or [1] * nsp)
    dilations = _same(node.attrs.get("dilations") or [1] * nsp)
    kernel = _same(wa.shape[2:])
    bias = [_const(b)] if b is not None else []
    perm = (*range(2, 2 + nsp), 1, 0)
    if group > 1 and group == cin and wa.shape[1] == 1 and nsp in (1, 2):
        mult = wa.shape[0] // cin
        dk = wa.reshape(cin, mult, *wa.shape[2:]).transpose(*range(2, 2 + nsp), 0, 1)
        call = em.layer(node, f"layers.DepthwiseConv{nsp}D", [kernel], {
            "strides": strides, "padding": padding, "depth_multiplier": mult, "dilation_rate": dilations,
            "use_bias": b is not None}, [dk, *bias], xe)
    else:
        call = em.layer(node, f"layers.Conv{nsp}D", [wa.shape[0], kernel], {
            "strides": strides, "padding": padding, "dilation_rate": dilations, "groups": group,
            "use_bias": b is not None}, [wa.transpose(perm), *bias], xe)
    em.out(node, call)


def conv_transpose(em, node):
    _nhwc(node)
    x, w = node.inputs[0], node.inputs[1]
    b = node.input(2)
    wa = _const(w)  # [I, O/g, *k]
    nsp = wa.ndim - 2
    if node.attrs.get("group", 1) != 1 or nsp not in (1, 2, 3):
        raise Unsupported("grouped or >3-D ConvTranspose")
    pads = node.attrs.get("pads") or [0] * (2 * nsp)
    if node.attrs.get("output_shape") or node.attrs.get("auto_pad", "NOTSET") not in ("NOTSET", "VALID"):
        raise Unsupported("ConvTranspose with output_shape/auto_pad")
    bias = [_const(b)] if b is not None else []
    out_pad = node.attrs.get("output_padding")
    kwargs = {"strides": _same(node.attrs.get("strides") or [1] * nsp), "padding": "valid",
              "dilation_rate": _same(node.attrs.get("dilations") or [1] * nsp), "use_bias": b is not None}
    if out_pad and any(out_pad):
        kwargs["output_padding"] = _same(out_pad)
    perm = (*range(2, 2 + nsp), 1, 0)
    y = em.layer(node, f"layers.Conv{nsp}DTranspose", [wa.shape[1], _same(wa.shape[2:])], kwargs,
                 [wa.transpose(perm), *bias], em.tensor(x))
    if any(pads):
        index = [P.slice_()] + [P.slice_(pads[i] or None, -pads[i + nsp] if pads[i + nsp] else None)
                                for i in range(nsp)]
        y = P.subscript(y, ast.Tuple(index, ast.Load()))
    em.out(node, y)


def dense(em, node):
    x, w = node.inputs[0], node.inputs[1]
    b = node.input(2)
    wa = _const(w)
    bias = [_const(b)] if b is not None else []
    em.out(node, em.layer(node, "layers.Dense", [wa.shape[1]], {"use_bias": b is not None}, [wa, *bias],
                          em.tensor(x)))


def matmul(em, node):
    a, b = node.inputs
    if b.const is not None and np.asarray(b.const).ndim == 2 and a.const is None and dtypes.is_float(b.const.dtype):
        wa = np.asarray(b.const)
        return em.out(node, em.layer(node, "layers.Dense", [wa.shape[1]], {"use_bias": False}, [wa], em.tensor(a)))
    em.out(node, P.call("ops.matmul", em.tensor(a), em.tensor(b)))


def gemm(em, node):
    a, b = node.inputs[0], node.inputs[1]
    c = node.input(2)
    at = node.attrs
    if at.get("transA") or at.get("alpha", 1.0) != 1.0 or at.get("beta", 1.0) != 1.0 or b.const is None:
        raise Unsupported("general Gemm (only Dense-like Gemm)")
    wa = np.asarray(b.const)
    w = wa.T if at.get("transB") else wa
    bias = [np.broadcast_to(_const(c), (w.shape[1],)).copy()] if c is not None else []
    em.out(node, em.layer(node, "layers.Dense", [w.shape[1]], {"use_bias": c is not None}, [w, *bias],
                          em.tensor(a)))


def batch_norm(em, node):
    _nhwc(node)
    x, scale, bias, mean, var = node.inputs
    em.out(node, em.layer(node, "layers.BatchNormalization", [], {
        "axis": -1, "epsilon": node.attrs.get("epsilon", 1e-5), "momentum": node.attrs.get("momentum", 0.9)},
        [_const(scale), _const(bias), _const(mean), _const(var)], em.tensor(x)))


def layer_norm(em, node):
    x, scale = node.inputs[0], node.inputs[1]
    b = node.input(2)
    if x.shape is None:
        raise Unsupported("LayerNormalization needs the input rank")
    rank = len(x.shape)
    axis = norm_axis(node.attrs.get("axis", -1), rank)
    axes = list(range(axis, rank))
    shape = tuple(x.shape[axis:])
    gamma = np.broadcast_to(_const(scale), shape).copy()
    weights = [gamma] + ([np.broadcast_to(_const(b), shape).copy()] if b is not None else [])
    em.out(node, em.layer(node, "layers.LayerNormalization", [], {
        "axis": axes if len(axes) > 1 else -1, "epsilon": node.attrs.get("epsilon", 1e-5),
        "center": b is not None}, weights, em.tensor(x)))


def group_norm(em, node):
    _nhwc(node)
    x, scale, bias = node.inputs
    em.out(node, em.layer(node, "layers.GroupNormalization", [], {
        "groups": node.attrs["num_groups"], "axis": -1, "epsilon": node.attrs.get("epsilon", 1e-5)},
        [_const(scale), _const(bias)], em.tensor(x)))


def gather(em, node):
    data, idx = node.inputs
    axis = node.attrs.get("axis", 0)
    if data.const is not None and axis == 0 and np.asarray(data.const).ndim == 2 and dtypes.is_float(data.const.dtype):
        table = np.asarray(data.const)
        return em.out(node, em.layer(node, "layers.Embedding", [table.shape[0], table.shape[1]], {}, [table],
                                     em.tensor(idx)))
    s = em.scalar(idx)
    index = P.lit(int(s)) if s is not None and idx.const.ndim == 0 else em.tensor(idx)
    em.out(node, P.call("ops.take", em.tensor(data), index, axis=axis))


# -- activations ---------------------------------------------------------------------------
ACTIVATION_LAYERS = {"Sigmoid": "sigmoid", "Tanh": "tanh", "SiLU": "silu", "HardSwish": "hard_silu",
                     "Softplus": "softplus", "Softsign": "softsign", "Mish": "mish", "Selu": "selu"}


def activation_layer(em, node):
    em.out(node, em.layer(node, "layers.Activation", [ACTIVATION_LAYERS[node.op]], {}, [],
                          em.tensor(node.inputs[0])))


def relu(em, node):
    em.out(node, em.layer(node, "layers.ReLU", [], {}, [], em.tensor(node.inputs[0])))


def clip(em, node):
    x, lo, hi = (list(node.inputs) + [None, None])[:3]
    lo_s, hi_s = em.scalar(lo), em.scalar(hi)
    if lo_s == 0 and hi_s is not None:
        return em.out(node, em.layer(node, "layers.ReLU", [], {"max_value": float(hi_s)}, [], em.tensor(x)))
    lo_e = P.lit(float(lo_s)) if lo_s is not None else (em.tensor(lo) if lo is not None else P.lit(float("-inf")))
    hi_e = P.lit(float(hi_s)) if hi_s is not None else (em.tensor(hi) if hi is not None else P.lit(float("inf")))
    em.out(node, P.call("ops.clip", em.tensor(x), lo_e, hi_e))


def gelu(em, node):
    approximate = node.attrs.get("approximate", "none") == "tanh"
    em.out(node, P.call("ops.gelu", em.tensor(node.inputs[0]), approximate=approximate))


def hard_sigmoid(em, node):
    a, b = node.attrs.get("alpha", 0.2), node.attrs.get("beta", 0.5)
    x = em.tensor(node.inputs[0])
    if abs(a - 1 / 6) < 1e-7 and b == 0.5:
        return em.out(node, P.call("ops.hard_sigmoid", x))
    em.out(node, P.call("ops.clip", P.binop(P.binop(x, "*", a), "+", b), 0.0, 1.0))


def leaky_relu(em, node):
    em.out(node, em.layer(node, "layers.LeakyReLU", [], {"negative_slope": node.attrs.get("alpha", 0.01)}, [],
                          em.tensor(node.inputs[0])))


def elu(em, node):
    em.out(node, P.call("ops.elu", em.tensor(node.inputs[0]), alpha=node.attrs.get("alpha", 1.0)))


def softmax(em, node):
    fn = "ops.softmax" if node.op == "Softmax" else "ops.log_softmax"
    em.out(node, P.call(fn, em.tensor(node.inputs[0]), axis=node.attrs.get("axis", -1)))


UNARY_OPS = {"Relu6": "ops.relu6", "Exp": "ops.exp", "Log": "ops.log", "Sqrt": "ops.sqrt", "Abs": "ops.abs",
             "Neg": "ops.negative", "Erf": "ops.erf", "Sin": "ops.sin", "Cos": "ops.cos", "Floor": "ops.floor",
             "Ceil": "ops.ceil", "Round": "ops.round", "Sign": "ops.sign", "Reciprocal": "ops.reciprocal",
             "Not": "ops.logical_not", "IsNaN": "ops.isnan"}
BINARY_OPS = {"Add": "ops.add", "Sub": "ops.subtract", "Mul": "ops.multiply", "Div": "ops.divide",
              "Pow": "ops.power", "Max": "ops.maximum", "Min": "ops.minimum", "Equal": "ops.equal",
              "Greater": "ops.greater", "GreaterOrEqual": "ops.greater_equal", "Less": "ops.less",
              "LessOrEqual": "ops.less_equal", "And": "ops.logical_and", "Or": "ops.logical_or"}


def _unary(fn):
    def rule(em, node):
        em.out(node, P.call(fn, em.tensor(node.inputs[0])))
    return rule


def _binary(fn):
    def rule(em, node):
        vals = [em.tensor(v) for v in node.inputs]
        expr = vals[0]
        for v in vals[1:]:
            expr = P.call(fn, expr, v)
        em.out(node, expr)
    return rule


def add(em, node):
    """Constants first: Keras's TF `ops.add` takes a second operand that squeezes to a vector as a bias on
    axis 1 or -1, whichever has its length, which misplaces e.g. a [W, 1] constant when H == W."""
    vals = [em.tensor(v) for v in sorted(node.inputs, key=lambda v: v.const is None)]
    expr = vals[0]
    for v in vals[1:]:
        expr = P.call("ops.add", expr, v)
    em.out(node, expr)


def where(em, node):
    em.out(node, P.call("ops.where", *[em.tensor(v) for v in node.inputs]))


def cast(em, node):
    em.out(node, P.call("ops.cast", em.tensor(node.inputs[0]), dtypes.name(dtypes.dtype(node.attrs["to"]))))


def identity(em, node):
    em.var[id(node.outputs[0])] = em.tensor(node.inputs[0])


# -- pooling -------------------------------------------------------------------------------
def pool(em, node):
    _nhwc(node)
    k = node.attrs["kernel_shape"]
    nsp = len(k)
    if node.attrs.get("ceil_mode") or any(d != 1 for d in node.attrs.get("dilations") or [1]):
        raise Unsupported("ceil_mode or dilated pooling")
    is_max = node.op == "MaxPool"
    if len(node.outputs) > 1 and node.outputs[1].uses():
        raise Unsupported("MaxPool indices")
    cip = node.attrs.get("count_include_pad", 0)
    ap = node.attrs.get("auto_pad", "NOTSET")
    if not is_max and ap == "NOTSET" and any(node.attrs.get("pads") or []) and not cip:
        raise Unsupported("AveragePool with explicit pads that are not counted")
    xe, padding = _padding(em, node, em.tensor(node.inputs[0]), nsp, k, float("-inf") if is_max else None)
    ctor = f"layers.{'Max' if is_max else 'Average'}Pooling{nsp}D"
    em.out(node, em.layer(node, ctor, [], {"pool_size": _same(k),
                                          "strides": _same(node.attrs.get("strides") or [1] * nsp),
                                          "padding": padding}, [], xe))


def global_pool(em, node):
    _nhwc(node)
    x = node.inputs[0]
    nsp = len(x.shape) - 2 if x.shape is not None else 2
    kind = "Average" if node.op == "GlobalAveragePool" else "Max"
    em.out(node, em.layer(node, f"layers.Global{kind}Pooling{nsp}D", [], {"keepdims": True}, [], em.tensor(x)))


def resize(em, node):
    _nhwc(node)
    x = node.inputs[0]
    a = node.attrs
    scales = node.input(2)
    if scales is None or scales.const is None or x.shape is None or len(x.shape) != 4:
        raise Unsupported("Resize without constant scales on a 4-D tensor")
    sc = [float(s) for s in np.asarray(scales.const)]
    if sc[0] != 1 or sc[3] != 1 or any(s != int(s) for s in sc[1:3]):
        raise Unsupported("non-integer Resize scales")
    mode, ctm = a.get("mode", "nearest"), a.get("coordinate_transformation_mode", "half_pixel")
    if mode == "nearest" and ctm == "asymmetric" and a.get("nearest_mode") == "floor":
        interp = "nearest"
    elif mode == "linear" and ctm in ("half_pixel", "pytorch_half_pixel"):
        interp = "bilinear"
    else:
        raise Unsupported(f"Resize mode={mode} coordinate_transformation_mode={ctm}")
    em.out(node, em.layer(node, "layers.UpSampling2D", [], {"size": (int(sc[1]), int(sc[2])), "interpolation": interp},
                          [], em.tensor(x)))


# -- shapes --------------------------------------------------------------------------------
def _ints(v):
    return [int(x) for x in _const(v).ravel()]


def reshape(em, node):
    x, shape = node.inputs
    target = _ints(shape)
    if 0 in target:
        target = [x.shape[i] if d == 0 else d for i, d in enumerate(target)]
        out = node.outputs[0].shape
        if not isinstance(target[0], int) and -1 not in target[1:]:
            target[0] = -1  # the (dynamic) batch dim
        elif out is not None and all(isinstance(d, int) for d in out[1:]):
            target = [-1, *out[1:]]  # only the batch dim is dynamic: the others are known
        if not all(isinstance(d, int) for d in target):
            raise Unsupported("Reshape copying a dynamic dim")
    em.out(node, P.call("ops.reshape", em.tensor(x), tuple(target)))


def expand(em, node):
    x, shape = node.inputs
    target = tuple(_ints(shape))
    if x.shape is None or not all(isinstance(d, int) for d in x.shape):
        raise Unsupported("Expand of a tensor with dynamic dims")
    em.out(node, P.call("ops.broadcast_to", em.tensor(x), tuple(np.broadcast_shapes(tuple(x.shape), target))))


def gather_nd(em, node):
    data, idx = node.inputs
    if node.attrs.get("batch_dims") or data.shape is None or idx.shape is None:
        raise Unsupported("GatherND with batch_dims or unknown shapes")
    k = idx.shape[-1]
    if not isinstance(k, int) or not all(isinstance(d, int) for d in data.shape[:k]):
        raise Unsupported("GatherND over dynamic dims")
    strides = [int(np.prod(data.shape[j + 1:k])) for j in range(k)]
    rest = tuple(data.shape[k:])
    flat = P.call("ops.reshape", em.tensor(data), (-1, *rest))
    position = P.call("ops.sum", P.binop(em.tensor(idx), "*", P.call("np.array", strides, dtype="int64")), axis=-1)
    em.out(node, P.call("ops.take", flat, position, axis=0))


def split(em, node):
    x = node.inputs[0]
    axis = node.attrs.get("axis", 0)
    sizes = node.input(1)
    if sizes is not None:
        parts = _ints(sizes)
    elif x.shape is not None and isinstance(x.shape[axis], int):
        from tensorbridge.ops.shape import split_sizes

        parts = split_sizes(x.shape[axis], node.attrs.get("num_outputs") or len(node.outputs))
    else:
        raise Unsupported("Split of a dynamic dim")
    cuts = [int(c) for c in np.cumsum(parts)[:-1]]
    idents = [em.namer.name(v.name, "t") for v in node.outputs]
    em.body.append(P.assign(idents, P.call("ops.split", em.tensor(x), cuts, axis=axis)))
    for v, ident in zip(node.outputs, idents):
        em.var[id(v)] = P.name(ident)


def flatten(em, node):
    x = node.inputs[0]
    axis = node.attrs.get("axis", 1)
    if axis != 1:
        raise Unsupported("Flatten at an axis other than 1")
    em.out(node, em.layer(node, "layers.Flatten", [], {}, [], em.tensor(x)))


def transpose(em, node):
    em.out(node, P.call("ops.transpose", em.tensor(node.inputs[0]), tuple(node.attrs["perm"])))


def squeeze(em, node):
    axes = node.input(1)
    em.out(node, P.call("ops.squeeze", em.tensor(node.inputs[0]), **({"axis": tuple(_ints(axes))} if axes else {})))


def unsqueeze(em, node):
    axes = sorted(_ints(node.inputs[1]))
    expr = em.tensor(node.inputs[0])
    for a in axes:
        expr = P.call("ops.expand_dims", expr, a)
    em.out(node, expr)


def concat(em, node):
    em.out(node, P.call("ops.concatenate", P.lit([em.tensor(v) for v in node.inputs]), axis=node.attrs["axis"]))


def slice_op(em, node):
    x = node.inputs[0]
    if x.shape is None:
        raise Unsupported("Slice needs the input rank")
    rank = len(x.shape)
    starts, ends = _ints(node.inputs[1]), _ints(node.inputs[2])
    axes = _ints(node.input(3)) if node.input(3) is not None else list(range(len(starts)))
    steps = _ints(node.input(4)) if node.input(4) is not None else [1] * len(starts)
    items = [P.slice_()] * rank
    for s, e, a, st in zip(starts, ends, axes, steps):  # Python's slice clamps out-of-range bounds as ONNX does
        items[norm_axis(a, rank)] = P.slice_(s or None if st > 0 else s, None if abs(e) >= 2**62 else e,
                                             st if st != 1 else None)
    em.out(node, P.subscript(em.tensor(x), ast.Tuple(items, ast.Load())))


def pad(em, node):
    x, pads = node.inputs[0], node.inputs[1]
    if node.input(3) is not None:
        raise Unsupported("Pad with axes")
    p = _ints(pads)
    n = len(p) // 2
    mode = {"constant": "constant", "reflect": "reflect", "edge": "edge", "wrap": "wrap"}[
        node.attrs.get("mode", "constant")]
    value = em.scalar(node.input(2)) if node.input(2) is not None else None
    kwargs = {"mode": mode}
    if mode == "constant" and value:
        kwargs["constant_values"] = value
    em.out(node, P.call("ops.pad", em.tensor(x), [[p[i], p[i + n]] for i in range(n)], **kwargs))


_REDUCE = {"ReduceMean": "ops.mean", "ReduceSum": "ops.sum", "ReduceMax": "ops.max", "ReduceMin": "ops.min",
           "ReduceProd": "ops.prod"}


def reduce(em, node):
    axes = node.input(1)
    kw = {"keepdims": bool(node.attrs.get("keepdims", 1))}
    if axes is not None:
        kw["axis"] = tuple(_ints(axes))
    em.out(node, P.call(_REDUCE[node.op], em.tensor(node.inputs[0]), **kw))


def attention(em, node):
    q, k, v = node.inputs[:3]
    a = node.attrs
    if any(node.input(i) is not None for i in (4, 5, 6)) or len(node.outputs) > 1 or a.get("softcap"):
        raise Unsupported("Attention with a KV cache, softcap or extra outputs")
    if any(t.shape is None or len(t.shape) != 4 for t in (q, k, v)):
        raise Unsupported("Attention on 3-D inputs")

    def bthd(t):  # IR [B, H, T, D] -> keras [B, T, H, D]
        return P.call("ops.transpose", em.tensor(t), (0, 2, 1, 3))

    kw = {"is_causal": bool(a.get("is_causal"))}
    mask = node.input(3)
    if mask is not None:  # [B, H, Tq, Tk] broadcasting, the same in both conventions
        kw["mask" if mask.dtype == np.bool_ else "bias"] = em.tensor(mask)
    if a.get("scale") is not None:
        kw["scale"] = a["scale"]
    y = P.call("ops.dot_product_attention", bthd(q), bthd(k), bthd(v), **kw)
    em.out(node, P.call("ops.transpose", y, (0, 2, 1, 3)))


def recurrent(em, node):
    """IR LSTM/GRU ([seq, batch, in] in, [seq, dirs, batch, hidden] out) as Keras layers per direction."""
    x, w, r = node.inputs[:3]
    b = node.input(3)
    check_plain_rnn(node, "Keras's reset_after=True resets after the matmul")
    wa, ra = _const(w), _const(r)
    dirs, gh, _ = wa.shape
    gates = 4 if node.op == "LSTM" else 3
    hidden = gh // gates
    ba = _const(b) if b is not None else np.zeros((dirs, 2 * gh), wa.dtype)
    order = [0, 2, 3, 1] if node.op == "LSTM" else [0, 1, 2]  # IR i o f c -> Keras i f c o; z r h stays

    def keras_order(m):
        return np.concatenate([m[i * hidden:(i + 1) * hidden] for i in order], axis=0)

    batch_major = P.call("ops.transpose", em.tensor(x), (1, 0, 2))
    seqs, finals = [], [[] for _ in range(2 if node.op == "LSTM" else 1)]  # (h, c) or (h,)
    for d in range(dirs):
        if node.op == "LSTM":
            weights = [keras_order(wa[d]).T, keras_order(ra[d]).T, keras_order(ba[d, :gh]) + keras_order(ba[d, gh:])]
        else:
            weights = [keras_order(wa[d]).T, keras_order(ra[d]).T,
                       np.stack([keras_order(ba[d, :gh]), keras_order(ba[d, gh:])])]
        kwargs = {"return_sequences": True, "return_state": True}
        backward = d == 1 or node.attrs.get("direction") == "reverse"
        if backward:
            kwargs["go_backwards"] = True
        init = [node.input(i) for i in ((5, 6) if node.op == "LSTM" else (5,))]
        layer_call = em.layer(node, f"layers.{node.op}", [hidden], kwargs, weights, batch_major)
        if any(v is not None for v in init):
            if any(v is None for v in init):
                raise Unsupported("LSTM with only one of initial_h / initial_c")
            layer_call.keywords.append(ast.keyword("initial_state", P.lit([P.subscript(em.tensor(v), d)
                                                                          for v in init])))
        names = [em.namer.name(f"{node.name}_d{d}_{tag}", "t") for tag in (("seq", "h", "c")
                                                                             if node.op == "LSTM" else ("seq", "h"))]
        em.body.append(P.assign(names, layer_call))
        seq = P.name(names[0])
        if backward:
            seq = P.call("ops.flip", seq, axis=1)  # Keras returns the backward pass in reversed time order
        seqs.append(P.call("ops.transpose", seq, (1, 0, 2)))
        for i, n in enumerate(names[1:]):
            finals[i].append(P.name(n))
    em.out(node, P.call("ops.stack", P.lit(seqs), axis=1))
    for i, parts in enumerate(finals, start=1):
        if i < len(node.outputs):
            em.out(node, P.call("ops.stack", P.lit(parts), axis=0), i)


RULES = {
    "Conv": conv, "ConvTranspose": conv_transpose, "Dense": dense, "MatMul": matmul, "Gemm": gemm,
    "BatchNormalization": batch_norm, "LayerNormalization": layer_norm, "GroupNormalization": group_norm,
    "Gather": gather, "Relu": relu, "Clip": clip, "Gelu": gelu, "HardSigmoid": hard_sigmoid,
    "LeakyRelu": leaky_relu, "Elu": elu, "Softmax": softmax, "LogSoftmax": softmax,
    **{op: activation_layer for op in ACTIVATION_LAYERS},
    **{op: _unary(fn) for op, fn in UNARY_OPS.items()},
    **{op: _binary(fn) for op, fn in BINARY_OPS.items()},
    "Add": add, "Sum": add, "Where": where, "Cast": cast, "Identity": identity, "Dropout": identity,
    "MaxPool": pool, "AveragePool": pool, "GlobalAveragePool": global_pool, "GlobalMaxPool": global_pool,
    "Resize": resize, "Reshape": reshape, "Flatten": flatten, "Transpose": transpose, "Squeeze": squeeze,
    "Unsqueeze": unsqueeze, "Concat": concat, "Slice": slice_op, "Pad": pad,
    "ReduceMean": reduce, "ReduceSum": reduce, "ReduceMax": reduce, "ReduceMin": reduce, "ReduceProd": reduce,
    "Attention": attention, "Expand": expand, "GatherND": gather_nd, "Split": split,
    "LSTM": recurrent, "GRU": recurrent,
}

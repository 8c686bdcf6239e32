"""IR op -> PyTorch code, one rule per op: a table for one-call ops, named functions otherwise.

A rule receives the `Emitter` and the node, and adds statements through `em.out(...)`,
`em.layer(...)`, `em.tensor(...)`. It raises `Unsupported` with a reason for configurations
PyTorch cannot express; the emitter collects those into one error.
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


def _kwargs(**given_and_defaults):
    """Keep only the keyword arguments that differ from PyTorch's defaults: name=(value, default)."""
    return {k: v for k, (v, d) in given_and_defaults.items() if v != d}


def _momentum(ir_momentum: float) -> float:
    return float(f"{1 - ir_momentum:.12g}")  # IR keeps the running-average factor, torch its complement


# one tensor in, one call out: IR op -> torch callable
UNARY_CALLS = {
    "Relu": "F.relu", "Sigmoid": "torch.sigmoid", "Tanh": "torch.tanh", "Exp": "torch.exp", "Log": "torch.log",
    "Sqrt": "torch.sqrt", "Abs": "torch.abs", "Erf": "torch.erf", "Sin": "torch.sin", "Cos": "torch.cos",
    "Tan": "torch.tan", "Asin": "torch.asin", "Acos": "torch.acos", "Atan": "torch.atan", "Sinh": "torch.sinh",
    "Cosh": "torch.cosh", "Reciprocal": "torch.reciprocal", "Floor": "torch.floor", "Ceil": "torch.ceil",
    "Round": "torch.round", "Sign": "torch.sign", "SiLU": "F.silu", "HardSwish": "F.hardswish",
    "Mish": "F.mish", "Softplus": "F.softplus", "Softsign": "F.softsign", "Not": "torch.logical_not",
    "IsNaN": "torch.isnan", "BitwiseNot": "torch.bitwise_not", "Neg": "torch.neg",
}
BINARY_OPERATORS = {"Add": "+", "Sub": "-", "Mul": "*", "MatMul": "@", "Pow": "**"}
BINARY_CALLS = {"Equal": "torch.eq", "Greater": "torch.gt", "GreaterOrEqual": "torch.ge", "Less": "torch.lt",
                "LessOrEqual": "torch.le", "And": "torch.logical_and", "Or": "torch.logical_or",
                "Xor": "torch.logical_xor", "BitwiseAnd": "torch.bitwise_and", "BitwiseOr": "torch.bitwise_or",
                "BitwiseXor": "torch.bitwise_xor"}


def _unary(fn):
    def rule(em, node):
        em.out(node, P.call(fn, em.tensor(node.inputs[0])))
    return rule


def _binary_op(sym):
    def rule(em, node):
        a, b = node.inputs
        em.out(node, P.binop(_operand(em, a, b), sym, _operand(em, b, a)))
    return rule


def _operand(em, v, other):
    """Scalars stay Python numbers (torch keeps the tensor's dtype), unless both sides are constant."""
    if other.const is not None and v.const is not None:
        return em.tensor(v)
    return em.arg(v)


def _binary_call(fn):
    def rule(em, node):
        a, b = node.inputs
        em.out(node, P.call(fn, em.tensor(a), _operand(em, b, a)))
    return rule


def div(em, node):
    a, b = node.inputs
    kw = {"rounding_mode": "trunc"} if a.dtype is not None and a.dtype.kind in "iu" else {}
    em.out(node, P.call("torch.div", em.tensor(a), _operand(em, b, a), **kw))


def mod(em, node):
    fn = "torch.fmod" if node.attrs.get("fmod") else "torch.remainder"
    em.out(node, P.call(fn, em.tensor(node.inputs[0]), _operand(em, node.inputs[1], node.inputs[0])))


def identity(em, node):
    em.var[id(node.outputs[0])] = em.tensor(node.inputs[0])


def dropout(em, node):
    identity(em, node)
    if len(node.outputs) > 1 and (node.outputs[1].uses() or node.outputs[1] in node.graph.outputs):
        em.out(node, P.call("torch.ones_like", em.tensor(node.inputs[0]), dtype=P.name("torch.bool")), 1)


def variadic(fn):
    def rule(em, node):
        acc = em.tensor(node.inputs[0])
        for v in node.inputs[1:]:
            acc = P.call(fn, acc, em.tensor(v))
        if node.op == "Mean":
            acc = P.binop(acc, "/", len(node.inputs))
        em.out(node, acc)
    return rule


# -- activations ----------------------------------------------------------------------------
def clip(em, node):
    x, lo, hi = (list(node.inputs) + [None, None])[:3]
    lo_s, hi_s = em.scalar(lo), em.scalar(hi)
    if lo_s == 0 and hi_s == 6:
        return em.out(node, P.call("F.relu6", em.tensor(x)))
    kw = {}
    if lo is not None:
        kw["min"] = P.lit(lo_s) if lo_s is not None else em.tensor(lo)
    if hi is not None:
        kw["max"] = P.lit(hi_s) if hi_s is not None else em.tensor(hi)
    em.out(node, P.call("torch.clamp", em.tensor(x), **kw))


def gelu(em, node):
    em.out(node, P.call("F.gelu", em.tensor(node.inputs[0]),
                        **_kwargs(approximate=(node.attrs.get("approximate", "none"), "none"))))


def leaky_relu(em, node):
    em.out(node, P.call("F.leaky_relu", em.tensor(node.inputs[0]), node.attrs.get("alpha", 0.01)))


def elu(em, node):
    em.out(node, P.call("F.elu", em.tensor(node.inputs[0]), alpha=node.attrs.get("alpha", 1.0)))


def hard_sigmoid(em, node):
    a, b = node.attrs.get("alpha", 0.2), node.attrs.get("beta", 0.5)
    x = em.tensor(node.inputs[0])
    if abs(a - 1 / 6) < 1e-7 and b == 0.5:
        return em.out(node, P.call("F.hardsigmoid", x))
    em.out(node, P.call("torch.clamp", P.binop(P.binop(x, "*", a), "+", b), 0.0, 1.0))


def prelu(em, node):
    x, slope = node.inputs
    xe = em.tensor(x)
    em.out(node, P.call("torch.where", P.call("torch.lt", xe, 0), P.binop(xe, "*", em.tensor(slope)), xe))


def softmax(em, node):
    fn = {"Softmax": "torch.softmax", "LogSoftmax": "torch.log_softmax"}[node.op]
    em.out(node, P.call(fn, em.tensor(node.inputs[0]), node.attrs.get("axis", -1)))


# -- layers with weights ----------------------------------------------------------------------

def _layout(node):
    if node.attrs.get("layout", "NCHW") != "NCHW":
        raise Unsupported("channels-last layout (run the layout pass first)")


def _pads(node, nsp):
    pads = node.attrs.get("pads") or [0] * (2 * nsp)
    ap = node.attrs.get("auto_pad", "NOTSET")
    if ap not in ("NOTSET", "VALID", None):
        x = node.inputs[0]
        if x.shape is None or not all(isinstance(d, int) for d in x.shape[2:]):
            raise Unsupported(f"auto_pad={ap} needs static spatial dims")
        from tensorbridge.reference.kernels.conv import resolve_pads

        k = node.attrs.get("kernel_shape") or list(node.inputs[1].shape[2:])
        pads = resolve_pads(x.shape[2:], k, node.attrs.get("strides") or [1] * nsp,
                            node.attrs.get("dilations") or [1] * nsp, None, ap)
    begin, end = list(pads[:nsp]), list(pads[nsp:])
    return begin, end


def _pre_pad(em, x_expr, begin, end, value=0.0):
    """F.pad for asymmetric padding (torch pad lists run from the last dim backwards)."""
    flat = []
    for b, e in zip(reversed(begin), reversed(end)):
        flat += [b, e]
    return P.call("F.pad", x_expr, flat, value=value)


def conv(em, node):
    _layout(node)
    x, w = node.inputs[0], node.inputs[1]
    b = node.input(2)
    wa = _const(w)
    nsp = wa.ndim - 2
    if nsp not in (1, 2, 3):
        raise Unsupported(f"{nsp}-D convolution")
    begin, end = _pads(node, nsp)
    xe = em.tensor(x)
    padding = begin
    if begin != end:
        xe, padding = _pre_pad(em, xe, begin, end), [0] * nsp
    group = node.attrs.get("group", 1)
    weights = {"weight": wa}
    if b is not None:
        weights["bias"] = _const(b)
    dtype = P.name(TORCH_DTYPES["float64"]) if wa.dtype == np.float64 else None  # integer-exact (litert_arithmetic)
    layer = em.layer(node, f"nn.Conv{nsp}d", [wa.shape[1] * group, wa.shape[0], _same(wa.shape[2:])], _kwargs(
        stride=(_same(node.attrs.get("strides") or [1] * nsp), 1), padding=(_same(padding), 0),
        dilation=(_same(node.attrs.get("dilations") or [1] * nsp), 1), groups=(group, 1), bias=(b is not None, True),
        dtype=(dtype, None)), weights)
    em.out(node, P.call(layer, xe))


def conv_transpose(em, node):
    _layout(node)
    x, w = node.inputs[0], node.inputs[1]
    b = node.input(2)
    wa = _const(w)
    nsp = wa.ndim - 2
    if node.attrs.get("output_shape") or node.attrs.get("auto_pad", "NOTSET") not in ("NOTSET", "VALID"):
        raise Unsupported("output_shape/auto_pad on ConvTranspose")
    pads = node.attrs.get("pads") or [0] * (2 * nsp)
    if pads[:nsp] != pads[nsp:]:
        raise Unsupported("asymmetric ConvTranspose pads")
    group = node.attrs.get("group", 1)
    weights = {"weight": wa}
    if b is not None:
        weights["bias"] = _const(b)
    layer = em.layer(node, f"nn.ConvTranspose{nsp}d", [wa.shape[0], wa.shape[1] * group, _same(wa.shape[2:])],
                     _kwargs(stride=(_same(node.attrs.get("strides") or [1] * nsp), 1), padding=(_same(pads[:nsp]), 0),
                             output_padding=(_same(node.attrs.get("output_padding") or [0] * nsp), 0),
                             groups=(group, 1), dilation=(_same(node.attrs.get("dilations") or [1] * nsp), 1),
                             bias=(b is not None, True)), weights)
    em.out(node, P.call(layer, em.tensor(x)))


def dense(em, node):
    x, w = node.inputs[0], node.inputs[1]
    b = node.input(2)
    wa = _const(w)
    if wa.ndim != 2:
        raise Unsupported("Dense weight must be 2-D")
    weights = {"weight": wa.T}
    if b is not None:
        weights["bias"] = _const(b)
    layer = em.layer(node, "nn.Linear", [wa.shape[0], wa.shape[1]], _kwargs(bias=(b is not None, True)), weights)
    em.out(node, P.call(layer, em.tensor(x)))


def matmul(em, node):
    a, b = node.inputs
    if b.const is not None and np.asarray(b.const).ndim == 2 and dtypes.is_float(b.const.dtype) and a.const is None:
        wa = np.asarray(b.const)
        kwargs = {"bias": False, **({"dtype": P.name(TORCH_DTYPES["float64"])} if wa.dtype == np.float64 else {})}
        layer = em.layer(node, "nn.Linear", [wa.shape[0], wa.shape[1]], kwargs, {"weight": wa.T})
        return em.out(node, P.call(layer, em.tensor(a)))
    em.out(node, P.binop(em.tensor(a), "@", em.tensor(b)))


def gemm(em, node):
    a, b = node.inputs[0], node.inputs[1]
    c = node.input(2)
    at = node.attrs
    if at.get("transA", 0) == 0 and at.get("alpha", 1.0) == 1.0 and at.get("beta", 1.0) == 1.0 \
            and b.const is not None and (c is None or c.const is not None and np.asarray(c.const).ndim <= 1):
        wa = np.asarray(b.const)
        weight = wa if at.get("transB", 0) else wa.T
        weights = {"weight": weight}
        if c is not None:
            weights["bias"] = np.broadcast_to(np.asarray(c.const), (weight.shape[0],))
        layer = em.layer(node, "nn.Linear", [weight.shape[1], weight.shape[0]], _kwargs(bias=(c is not None, True)),
                         weights)
        return em.out(node, P.call(layer, em.tensor(a)))
    ae, be = em.tensor(a), em.tensor(b)
    if at.get("transA", 0):
        ae = P.method(ae, "t")
    if at.get("transB", 0):
        be = P.method(be, "t")
    y = P.binop(P.binop(ae, "@", be), "*", at.get("alpha", 1.0)) if at.get("alpha", 1.0) != 1.0 else \
        P.binop(ae, "@", be)
    if c is not None:
        ce = em.tensor(c)
        y = P.binop(y, "+", P.binop(ce, "*", at.get("beta", 1.0)) if at.get("beta", 1.0) != 1.0 else ce)
    em.out(node, y)


def batch_norm(em, node):
    _layout(node)
    if node.attrs.get("training_mode"):
        raise Unsupported("training-mode BatchNormalization")
    x, scale, bias, mean, var = node.inputs
    rank = len(x.shape) if x.shape is not None else 4
    kind = {2: 1, 3: 1, 4: 2, 5: 3}.get(rank)
    if kind is None:
        raise Unsupported(f"BatchNormalization on rank {rank}")
    c = _const(scale).shape[0]
    momentum = _momentum(node.attrs.get("momentum", 0.9))
    layer = em.layer(node, f"nn.BatchNorm{kind}d", [c],
                     _kwargs(eps=(node.attrs.get("epsilon", 1e-5), 1e-5), momentum=(momentum, 0.1)),
                     {"weight": _const(scale), "bias": _const(bias), "running_mean": _const(mean),
                      "running_var": _const(var), "num_batches_tracked": np.array(0, np.int64)})
    em.out(node, P.call(layer, em.tensor(x)))


def instance_norm(em, node):
    _layout(node)
    x, scale, bias = node.inputs
    rank = len(x.shape) if x.shape is not None else 4
    c = _const(scale).shape[0]
    layer = em.layer(node, f"nn.InstanceNorm{max(rank - 2, 1)}d", [c],
                     {**_kwargs(eps=(node.attrs.get("epsilon", 1e-5), 1e-5)), "affine": True},
                     {"weight": _const(scale), "bias": _const(bias)})
    em.out(node, P.call(layer, em.tensor(x)))


def layer_norm(em, node):
    x, scale = node.inputs[0], node.inputs[1]
    b = node.input(2)
    if len(node.outputs) > 1 and any(v.uses() for v in node.outputs[1:]):
        raise Unsupported("LayerNormalization mean/inv-std outputs")
    sa = _const(scale)
    if x.shape is None:
        raise Unsupported("LayerNormalization needs the input rank")
    axis = norm_axis(node.attrs.get("axis", -1), len(x.shape))
    shape = tuple(x.shape[axis:])
    if not all(isinstance(d, int) for d in shape):
        raise Unsupported("LayerNormalization over dynamic dims")
    weights = {"weight": np.broadcast_to(sa, shape)}
    if b is not None:
        weights["bias"] = np.broadcast_to(_const(b), shape)
    layer = em.layer(node, "nn.LayerNorm", [shape[0] if len(shape) == 1 else shape],
                     _kwargs(eps=(node.attrs.get("epsilon", 1e-5), 1e-5), bias=(b is not None, True)), weights)
    em.out(node, P.call(layer, em.tensor(x)))


def group_norm(em, node):
    _layout(node)
    x, scale, bias = node.inputs
    c = _const(scale).shape[0]
    layer = em.layer(node, "nn.GroupNorm", [node.attrs["num_groups"], c],
                     _kwargs(eps=(node.attrs.get("epsilon", 1e-5), 1e-5)),
                     {"weight": _const(scale), "bias": _const(bias)})
    em.out(node, P.call(layer, em.tensor(x)))


def lrn(em, node):
    _layout(node)
    size = node.attrs["size"]
    if size % 2 == 0:
        raise Unsupported("LRN with an even size (PyTorch centres the window differently)")
    layer = em.layer(node, "nn.LocalResponseNorm", [size], _kwargs(
        alpha=(node.attrs.get("alpha", 1e-4), 1e-4), beta=(node.attrs.get("beta", 0.75), 0.75),
        k=(node.attrs.get("bias", 1.0), 1.0)), {})
    em.out(node, P.call(layer, em.tensor(node.inputs[0])))


def rms_norm(em, node):
    x, scale = node.inputs
    if x.shape is None:
        raise Unsupported("RMSNormalization needs the input rank")
    axis = norm_axis(node.attrs.get("axis", -1), len(x.shape))
    shape = tuple(x.shape[axis:])
    layer = em.layer(node, "nn.RMSNorm", [shape], {"eps": node.attrs.get("epsilon", 1e-5)},
                     {"weight": np.broadcast_to(_const(scale), shape)})
    em.out(node, P.call(layer, em.tensor(x)))


# -- pooling ----------------------------------------------------------------------------------
def _pool_common(em, node, fill):
    _layout(node)
    k = node.attrs["kernel_shape"]
    nsp = len(k)
    begin, end = _pads(node, nsp)
    xe = em.tensor(node.inputs[0])
    padding = begin
    if begin != end or any(b > kk // 2 for b, kk in zip(begin, k)):  # torch pads symmetrically, up to k/2
        xe, padding = _pre_pad(em, xe, begin, end, fill), None
    return xe, k, node.attrs.get("strides") or [1] * nsp, padding, nsp


def max_pool(em, node):
    if len(node.outputs) > 1 and node.outputs[1].uses():
        raise Unsupported("MaxPool indices output")
    xe, k, s, p, nsp = _pool_common(em, node, float("-inf"))
    dt = node.inputs[0].dtype
    integer = dt is not None and dt.kind in "iu"  # torch pools floats only; a max of int8 values is exact in float
    y = P.call(f"F.max_pool{nsp}d", P.method(xe, "float") if integer else xe, _same(k), _same(s),
               _same(p or [0] * nsp), **_kwargs(dilation=(_same(node.attrs.get("dilations") or [1] * nsp), 1),
                                                ceil_mode=(bool(node.attrs.get("ceil_mode", 0)), False)))
    em.out(node, P.method(y, "to", P.name(TORCH_DTYPES[dtypes.name(dt)])) if integer else y)


def avg_pool(em, node):
    if node.attrs.get("dilations") and any(d != 1 for d in node.attrs["dilations"]):
        raise Unsupported("dilated AveragePool")
    cip = bool(node.attrs.get("count_include_pad", 0))
    xe, k, s, p, nsp = _pool_common(em, node, 0.0)
    ceil = bool(node.attrs.get("ceil_mode", 0))
    fn = f"F.avg_pool{nsp}d"
    if p is None and not cip:
        # padding was applied by F.pad: divide the window sums by the count of real cells
        begin, end = _pads(node, nsp)
        ones = _pre_pad(em, P.call("torch.ones_like", em.tensor(node.inputs[0])), begin, end, 0.0)
        total = P.call(fn, xe, _same(k), _same(s), **_kwargs(ceil_mode=(ceil, False)))
        count = P.call(fn, ones, _same(k), _same(s), **_kwargs(ceil_mode=(ceil, False)))
        return em.out(node, P.binop(total, "/", count))
    em.out(node, P.call(fn, xe, _same(k), _same(s), _same(p or [0] * nsp), **_kwargs(
        ceil_mode=(ceil, False), count_include_pad=(cip, True))))


def global_pool(em, node):
    _layout(node)
    x = node.inputs[0]
    if x.shape is None:
        raise Unsupported("global pooling needs the input rank")
    nsp = len(x.shape) - 2
    if nsp not in (1, 2, 3):
        raise Unsupported(f"global pooling over {nsp} spatial dims")
    kind = "avg" if node.op == "GlobalAveragePool" else "max"
    em.out(node, P.call(f"F.adaptive_{kind}_pool{nsp}d", em.tensor(x), 1))


# -- shapes -----------------------------------------------------------------------------------
def _shape_arg(em, v, x):
    """A Reshape/Expand target: Python list, with ONNX's 0 ("copy this dim") resolved."""
    if v.const is not None:
        dims = [int(d) for d in np.asarray(v.const).ravel()]
        xe = em.tensor(x)
        return P.lit([P.subscript(ast.Attribute(xe, "shape", ast.Load()), i) if d == 0 else d
                      for i, d in enumerate(dims)])
    return em.pylist(v)


def reshape(em, node):
    x, shape = node.inputs
    if node.attrs.get("allowzero"):
        raise Unsupported("Reshape allowzero=1")
    em.out(node, P.method(em.tensor(x), "reshape", _shape_arg(em, shape, x)))


def flatten(em, node):
    x = node.inputs[0]
    axis = node.attrs.get("axis", 1)
    xe = em.tensor(x)
    if axis == 0:
        return em.out(node, P.method(xe, "reshape", 1, -1))
    if axis == 1:
        return em.out(node, P.method(xe, "flatten", 1))
    if x.shape is None:
        raise Unsupported("Flatten needs the input rank")
    axis = norm_axis(axis, len(x.shape))
    if axis == len(x.shape):
        return em.out(node, P.method(xe, "reshape", -1, 1))
    em.out(node, P.method(P.method(xe, "flatten", 0, axis - 1), "flatten", 1))


def transpose(em, node):
    perm = node.attrs.get("perm")
    xe = em.tensor(node.inputs[0])
    if perm is None:
        x = node.inputs[0]
        if x.shape is None:
            raise Unsupported("Transpose without perm needs the rank")
        perm = list(range(len(x.shape)))[::-1]
    em.out(node, P.method(xe, "permute", *perm))


def squeeze(em, node):
    x = node.inputs[0]
    axes = node.input(1)
    xe = em.tensor(x)
    if axes is None:
        return em.out(node, P.method(xe, "squeeze"))
    dims = [int(a) for a in _const(axes).ravel()]
    em.out(node, P.method(xe, "squeeze", tuple(dims)))


def unsqueeze(em, node):
    x, axes = node.inputs
    dims = [int(a) for a in _const(axes).ravel()]
    rank = (len(x.shape) if x.shape is not None else None)
    expr = em.tensor(x)
    if rank is None and any(d < 0 for d in dims):
        raise Unsupported("Unsqueeze with negative axes needs the input rank")
    out_rank = (rank or 0) + len(dims)
    for d in sorted(norm_axis(d, out_rank) for d in dims):
        expr = P.method(expr, "unsqueeze", d)
    em.out(node, expr)


def concat(em, node):
    em.out(node, P.call("torch.cat", P.lit([em.tensor(v) for v in node.inputs]), node.attrs["axis"]))


def split(em, node):
    x = node.inputs[0]
    sizes = node.input(1)
    axis = node.attrs.get("axis", 0)
    if sizes is not None:
        arg = P.lit([int(s) for s in _const(sizes).ravel()])
    elif x.shape is not None and isinstance(x.shape[axis], int):
        from tensorbridge.ops.shape import split_sizes

        arg = P.lit(split_sizes(x.shape[axis], node.attrs.get("num_outputs") or len(node.outputs)))
    else:
        raise Unsupported("Split of a dynamic dim without sizes")
    em.outs(node, P.call("torch.split", em.tensor(x), arg, axis), len(node.outputs))



def slice_op(em, node):
    x = node.inputs[0]
    starts, ends = node.inputs[1], node.inputs[2]
    axes, steps = node.input(3), node.input(4)
    if x.shape is None:
        raise Unsupported("Slice needs the input rank")
    rank = len(x.shape)
    n = len(x.shape)
    sv = em.pylist(starts)
    ev = em.pylist(ends)
    ax = [int(a) for a in _const(axes).ravel()] if axes is not None else list(range(n))
    st = [int(s) for s in _const(steps).ravel()] if steps is not None else [1] * len(ax)
    items = [P.slice_()] * rank
    flips = []
    for j, (a, s) in enumerate(zip(ax, st)):
        a = norm_axis(a, rank)
        if s < 0:
            if not _full_reversal(x.shape[a], s, sv, ev, j):
                raise Unsupported("negative Slice steps other than a whole reversal")
            flips.append(a)
            continue
        start = P.subscript(sv, j) if not isinstance(sv, ast.List) else sv.elts[j]
        stop = P.subscript(ev, j) if not isinstance(ev, ast.List) else ev.elts[j]
        if isinstance(stop, ast.Constant) and stop.value >= 2**62:
            stop = None
        items[a] = P.slice_(start, stop, s if s != 1 else None)
    def is_full(it):
        return isinstance(it, ast.Slice) and it.lower is None and it.upper is None and it.step is None

    base = P.call("torch.flip", em.tensor(x), flips) if flips else em.tensor(x)
    if all(is_full(it) for it in items):
        return em.out(node, base)
    last = max((i for i, it in enumerate(items) if not is_full(it)), default=0)
    index = items[0] if last == 0 else ast.Tuple(items[:last + 1], ast.Load())
    em.out(node, P.subscript(base, index))


def _full_reversal(dim, step, starts, ends, j) -> bool:
    """Step -1 from the last element past the first: what torch.flip does."""
    if step != -1 or not isinstance(dim, int) or not isinstance(starts, ast.List) or not isinstance(ends, ast.List):
        return False
    start, stop = starts.elts[j], ends.elts[j]
    return isinstance(start, ast.Constant) and isinstance(stop, ast.Constant) and \
        (start.value == -1 or start.value >= dim - 1) and stop.value <= -dim - 1


def gather(em, node):
    data, idx = node.inputs
    axis = node.attrs.get("axis", 0)
    if data.const is not None and axis == 0 and np.asarray(data.const).ndim == 2 and dtypes.is_float(data.const.dtype):
        table = np.asarray(data.const)
        layer = em.layer(node, "nn.Embedding", [table.shape[0], table.shape[1]], {}, {"weight": table})
        return em.out(node, P.call(layer, em.tensor(idx)))
    if data.shape is None:
        raise Unsupported("Gather needs the data rank")
    axis = norm_axis(axis, len(data.shape))
    s = em.scalar(idx)
    item = P.lit(s) if s is not None and idx.const.ndim == 0 else em.tensor(idx)
    em.out(node, P.subscript(em.tensor(data), ast.Tuple([P.slice_()] * axis + [item], ast.Load()) if axis else item))


def gather_nd(em, node):
    if node.attrs.get("batch_dims", 0):
        raise Unsupported("GatherND with batch_dims")
    idx = P.call("tuple", P.method(em.tensor(node.inputs[1]), "unbind", -1))
    em.out(node, P.subscript(em.tensor(node.inputs[0]), idx))


def gather_elements(em, node):
    em.out(node, P.call("torch.gather", em.tensor(node.inputs[0]), node.attrs.get("axis", 0),
                        em.tensor(node.inputs[1])))


def expand(em, node):
    x, shape = node.inputs
    xe = em.tensor(x)
    em.out(node, P.method(xe, "expand", P.call("torch.broadcast_shapes", P.method(xe, "size"),
                                               _shape_arg(em, shape, x))))


def tile(em, node):
    em.out(node, P.method(em.tensor(node.inputs[0]), "repeat", em.pylist(node.inputs[1])))


def pad(em, node):
    x, pads = node.inputs[0], node.inputs[1]
    if node.input(3) is not None:
        raise Unsupported("Pad with axes")
    p = [int(v) for v in _const(pads).ravel()]
    n = len(p) // 2
    flat = []
    for i in reversed(range(n)):
        flat += [p[i], p[i + n]]
    mode = {"constant": "constant", "reflect": "reflect", "edge": "replicate", "wrap": "circular"}[
        node.attrs.get("mode", "constant")]
    value = em.scalar(node.input(2)) if node.input(2) is not None else None
    kw = {"value": value or 0.0} if mode == "constant" else {}
    em.out(node, P.call("F.pad", em.tensor(x), flat, mode=mode, **kw))


def where(em, node):
    c, a, b = node.inputs
    em.out(node, P.call("torch.where", em.tensor(c), em.arg(a), em.arg(b)))


def cast(em, node):
    to = dtypes.name(dtypes.dtype(node.attrs["to"]))
    if to not in TORCH_DTYPES:
        raise Unsupported(f"Cast to {to}")
    em.out(node, P.method(em.tensor(node.inputs[0]), "to", P.name(TORCH_DTYPES[to])))


def _per_tensor(em, node) -> tuple[float, int]:
    scale, zp = em.scalar(node.input(1)), em.scalar(node.input(2)) if node.input(2) is not None else 0
    if scale is None or zp is None:
        raise Unsupported("per-channel or computed quantization parameters on an activation")
    return float(scale), int(zp)


TORCH_QDTYPES = {"int8": "torch.qint8", "uint8": "torch.quint8", "int32": "torch.qint32"}


def quantize_linear(em, node):
    """A PT2E program's own formula, round(x * (1 / scale)) + zero_point, for its quantize nodes; otherwise
    torch's quantizer (it rounds x / scale + zero_point once, as LiteRT's kernels do), as the integer tensor."""
    storage = dtypes.name(node.outputs[0].dtype)
    scale, zp = _per_tensor(em, node)
    x = em.tensor(node.inputs[0])
    if node.meta.get("framework") == "torch" and "quantized_decomposed" in node.meta.get("source_op", ""):
        info = np.iinfo(storage)
        q = _shifted(P.call("torch.round", P.binop(x, "*", P.lit(1.0 / scale))), zp)
        return em.out(node, P.method(P.call("torch.clamp", q, int(info.min), int(info.max)), "to",
                                     P.name(TORCH_DTYPES[storage])))
    if storage not in TORCH_QDTYPES:
        raise Unsupported(f"QuantizeLinear to {storage}")
    q = P.call("torch.quantize_per_tensor", x, P.lit(scale), P.lit(zp), P.name(TORCH_QDTYPES[storage]))
    em.out(node, P.method(q, "int_repr"))


def _shifted(expr, offset: int):
    """expr + offset, written without `+ -n` or `- -n`."""
    if not offset:
        return expr
    return P.binop(expr, "+", offset) if offset > 0 else P.binop(expr, "-", -offset)


def dequantize_linear(em, node):
    scale, zp = _per_tensor(em, node)
    em.out(node, P.binop(_shifted(P.method(em.tensor(node.inputs[0]), "float"), -zp), "*", P.lit(scale)))


TORCH_DTYPES = {"float32": "torch.float32", "float64": "torch.float64", "float16": "torch.float16",
                 "bfloat16": "torch.bfloat16", "int64": "torch.int64", "int32": "torch.int32",
                 "int16": "torch.int16", "int8": "torch.int8", "uint8": "torch.uint8", "bool": "torch.bool"}


def _axes(node):
    axes = node.input(1)
    if axes is None:
        x = node.inputs[0]
        if x.shape is None:
            raise Unsupported("reduction over all axes needs the input rank")
        return tuple(range(len(x.shape))) if not node.attrs.get("noop_with_empty_axes") else None
    return tuple(int(a) for a in _const(axes).ravel())


_REDUCE = {"ReduceMean": "mean", "ReduceSum": "sum", "ReduceMax": "amax", "ReduceMin": "amin"}


def reduce(em, node):
    dims = _axes(node)
    xe = em.tensor(node.inputs[0])
    if dims is None:
        return em.out(node, xe)
    keep = bool(node.attrs.get("keepdims", 1))
    if node.op in _REDUCE:
        return em.out(node, P.method(xe, _REDUCE[node.op], dim=dims, keepdim=keep))
    if node.op == "ReduceProd":
        expr = xe
        for d in sorted(dims, reverse=True):
            expr = P.method(expr, "prod", dim=d, keepdim=keep)
        return em.out(node, expr)
    if node.op == "ReduceL2":
        return em.out(node, P.call("torch.linalg.vector_norm", xe, dim=dims, keepdim=keep))
    raise Unsupported(node.op)


def arg_reduce(em, node):
    fn = "torch.argmax" if node.op == "ArgMax" else "torch.argmin"
    if node.attrs.get("select_last_index"):
        raise Unsupported("select_last_index")
    em.out(node, P.call(fn, em.tensor(node.inputs[0]), dim=node.attrs.get("axis", 0),
                        keepdim=bool(node.attrs.get("keepdims", 1))))


def attention(em, node):
    q, k, v = node.inputs[:3]
    mask = node.input(3)
    a = node.attrs
    if any(node.input(i) is not None for i in (4, 5, 6)) or len(node.outputs) > 1 or a.get("softcap"):
        raise Unsupported("Attention with KV cache, softcap or extra outputs")
    if any(t.shape is None or len(t.shape) != 4 for t in (q, k, v)):
        raise Unsupported("Attention on 3-D inputs")
    kw = {}
    if mask is not None:
        kw["attn_mask"] = em.tensor(mask)
    if a.get("is_causal"):
        kw["is_causal"] = True
    if a.get("scale") is not None:
        kw["scale"] = a["scale"]
    if q.shape[1] != k.shape[1]:
        kw["enable_gqa"] = True
    em.out(node, P.call("F.scaled_dot_product_attention", em.tensor(q), em.tensor(k), em.tensor(v), **kw))


def constant_of_shape(em, node):
    value = node.attrs.get("value")
    arr = np.zeros(1, np.float32) if value is None else np.asarray(value)
    dt = dtypes.name(arr.dtype)
    em.out(node, P.call("torch.full", em.pylist(node.inputs[0]), arr.ravel()[0].item(),
                        dtype=P.name(TORCH_DTYPES[dt])))


def range_op(em, node):
    start, limit, delta = node.inputs
    vals = [em.scalar(v) if v.const is not None else em.pylist(v) for v in (start, limit, delta)]
    dt = dtypes.name(start.dtype) if start.dtype is not None else "int64"
    em.out(node, P.call("torch.arange", *vals, dtype=P.name(TORCH_DTYPES[dt])))


def resize(em, node):
    _layout(node)
    a = node.attrs
    x = node.inputs[0]
    mode, ctm = a.get("mode", "nearest"), a.get("coordinate_transformation_mode", "half_pixel")
    if x.shape is None or len(x.shape) != 4:
        raise Unsupported("Resize of a non-4-D tensor")
    sizes, scales = node.input(3), node.input(2)
    kw = {}
    if sizes is not None:
        kw["size"] = tuple(int(s) for s in _const(sizes).ravel()[2:])
    elif scales is not None:
        sc = [float(s) for s in _const(scales).ravel()]
        if sc[:2] != [1.0, 1.0]:
            raise Unsupported("Resize of batch or channel dims")
        kw["scale_factor"] = tuple(sc[2:])
    if mode == "nearest" and ctm == "asymmetric" and a.get("nearest_mode") == "floor":
        kw["mode"] = "nearest"
    elif mode == "linear" and ctm in ("pytorch_half_pixel", "half_pixel", "align_corners"):
        kw["mode"] = "bilinear"
        kw["align_corners"] = ctm == "align_corners"
    else:
        raise Unsupported(f"Resize mode={mode} coordinate_transformation_mode={ctm}")
    em.out(node, P.call("F.interpolate", em.tensor(x), **kw))


def depth_to_space(em, node):
    _layout(node)
    b = node.attrs["blocksize"]
    if node.attrs.get("mode", "DCR") == "CRD":
        return em.out(node, P.call("F.pixel_shuffle", em.tensor(node.inputs[0]), b))
    raise Unsupported("DepthToSpace DCR mode")


def cumsum(em, node):
    if node.attrs.get("exclusive") or node.attrs.get("reverse"):
        raise Unsupported("exclusive/reverse CumSum")
    em.out(node, P.call("torch.cumsum", em.tensor(node.inputs[0]), em.scalar(node.inputs[1])))


def trilu(em, node):
    fn = "torch.triu" if node.attrs.get("upper", 1) else "torch.tril"
    k = em.scalar(node.input(1)) if node.input(1) is not None else 0
    em.out(node, P.call(fn, em.tensor(node.inputs[0]), k))


def einsum(em, node):
    em.out(node, P.call("torch.einsum", node.attrs["equation"], *[em.tensor(v) for v in node.inputs]))


def top_k(em, node):
    k = em.scalar(node.inputs[1])
    em.outs(node, P.call("torch.topk", em.tensor(node.inputs[0]), k, dim=node.attrs.get("axis", -1),
                         largest=bool(node.attrs.get("largest", 1)), sorted=bool(node.attrs.get("sorted", 1))), 2)


def recurrent(em, node):
    """IR LSTM/GRU (ONNX gate order, [seq, dirs, batch, hidden] output) as nn.LSTM/nn.GRU."""
    x, w, r = node.inputs[:3]
    b = node.input(3)
    check_plain_rnn(node, "PyTorch applies the reset gate after the matmul")
    wa, ra = _const(w), _const(r)
    dirs, gates_h, in_size = wa.shape
    gates = 4 if node.op == "LSTM" else 3
    hidden = gates_h // gates
    order = [0, 2, 3, 1] if node.op == "LSTM" else [1, 0, 2]  # IR (i o f c / z r h) -> torch (i f g o / r z n)
    ba = _const(b) if b is not None else np.zeros((dirs, 2 * gates_h), wa.dtype)

    def torch_order(m):
        return np.concatenate([m[i * hidden:(i + 1) * hidden] for i in order], axis=0)

    weights = {}
    for d in range(dirs):
        suffix = "_l0" + ("_reverse" if d else "")
        weights[f"weight_ih{suffix}"] = torch_order(wa[d])
        weights[f"weight_hh{suffix}"] = torch_order(ra[d])
        weights[f"bias_ih{suffix}"] = torch_order(ba[d, :gates_h])
        weights[f"bias_hh{suffix}"] = torch_order(ba[d, gates_h:])
    ctor = "nn.LSTM" if node.op == "LSTM" else "nn.GRU"
    layer = em.layer(node, ctor, [in_size, hidden], _kwargs(bidirectional=(dirs == 2, False)), weights)
    reverse = node.attrs.get("direction") == "reverse"  # nn.LSTM has no backward-only form: flip time around it
    args = [P.call("torch.flip", em.tensor(x), [0]) if reverse else em.tensor(x)]
    h0 = node.input(5)
    if node.op == "LSTM":
        c0 = node.input(6)
        if (h0 is None) != (c0 is None):
            raise Unsupported("LSTM with only one of initial_h / initial_c")
        if h0 is not None:
            args.append(ast.Tuple([em.tensor(h0), em.tensor(c0)], ast.Load()))
    elif h0 is not None:
        args.append(em.tensor(h0))
    seq_name = em.namer.name(node.outputs[0].name + "_seq", "t")
    graph_outputs = {id(v) for v in node.graph.outputs}

    def state_name(i, tag):
        used = i < len(node.outputs) and (node.outputs[i].uses() or id(node.outputs[i]) in graph_outputs)
        return em.namer.name(f"{node.name}_{tag}", "t") if used else "_"

    state_names = [state_name(1, "h")] + ([state_name(2, "c")] if node.op == "LSTM" else [])
    if all(s == "_" for s in state_names):
        state = P.name("_")
    elif node.op == "LSTM":
        state = ast.Tuple([P.name(s) for s in state_names], ast.Load())
    else:
        state = P.name(state_names[0])
    target = ast.Tuple([P.name(seq_name), state], ast.Load())
    em.body.append(ast.Assign([P._store(target)], P.call(layer, *args), lineno=0))
    seq = P.name(seq_name)
    if reverse:
        em.body.append(P.assign([seq_name], P.call("torch.flip", seq, [0])))
    merged = _merged_sequence_output(node)
    if merged is not None:  # the graph only wants torch's own [seq, batch, dirs * hidden] layout
        transpose_node, reshape_node = merged
        em.skip |= {id(transpose_node), id(reshape_node)}
        em.var[id(reshape_node.outputs[0])] = seq
    else:  # torch: [seq, batch, dirs * hidden] -> IR: [seq, dirs, batch, hidden]
        em.out(node, P.method(P.method(seq, "unflatten", -1, (dirs, hidden)), "transpose", 1, 2), 0)
    for i, s in enumerate(state_names, start=1):
        if i < len(node.outputs) and s != "_":
            em.var[id(node.outputs[i])] = P.name(s)


def _merged_sequence_output(node):
    """(Transpose, Reshape) when Y is only read as Reshape(Transpose(Y, 0 2 1 3), [0, 0, -1])."""
    uses = node.outputs[0].uses()
    if len(uses) != 1 or uses[0][0].op != "Transpose" or uses[0][0].attrs.get("perm") != [0, 2, 1, 3]:
        return None
    t = uses[0][0]
    t_uses = t.outputs[0].uses()
    if len(t_uses) != 1 or t_uses[0][0].op != "Reshape" or t_uses[0][1] != 0:
        return None
    r = t_uses[0][0]
    target = r.inputs[1].const
    if target is None or [int(v) for v in np.asarray(target).ravel()] != [0, 0, -1] or r.attrs.get("allowzero"):
        return None
    return t, r


def emit_shape_op(em, node):
    """Ops on small integer vectors computed from shapes, generated as Python list arithmetic."""
    op = node.op
    ins = node.inputs
    out = node.outputs[0]
    scalar_out = out.shape == ()
    if op == "Shape":
        x = ins[0]
        start, end = node.attrs.get("start", 0), node.attrs.get("end")
        size = ast.Attribute(em.tensor(x), "shape", ast.Load())
        expr = P.call("list", P.subscript(size, P.slice_(start or None, end)) if (start or end is not None) else size)
        return em.out(node, expr)
    if op in ("Identity", "Cast"):
        em.var[id(out)] = em.pylist(ins[0])
        return None
    if op == "Concat":
        parts = [em.pylist(v) for v in ins]
        expr = parts[0]
        for p in parts[1:]:
            expr = P.binop(expr, "+", p)
        return em.out(node, expr)
    if op in ("Add", "Sub", "Mul", "Div"):
        sym = {"Add": "+", "Sub": "-", "Mul": "*", "Div": "//"}[op]
        a, b = ins
        if scalar_out:
            return em.out(node, P.binop(em.pylist(a), sym, em.pylist(b)))
        n = out.shape[0]
        items = [P.binop(_elem(em, a, i), sym, _elem(em, b, i)) for i in range(n)]
        return em.out(node, P.lit(items))
    if op == "Gather":
        data, idx = ins
        ic = np.asarray(_const(idx))
        if ic.ndim == 0:
            return em.out(node, P.subscript(em.pylist(data), int(ic)))
        return em.out(node, P.lit([P.subscript(em.pylist(data), int(i)) for i in ic.ravel()]))
    if op in ("Squeeze", "Reshape") and scalar_out:
        return em.out(node, P.subscript(em.pylist(ins[0]), 0))
    if op in ("Unsqueeze", "Reshape") and ins[0].shape == ():
        return em.out(node, P.lit([em.pylist(ins[0])]))
    if op in ("Squeeze", "Unsqueeze", "Reshape"):
        em.var[id(out)] = em.pylist(ins[0])
        return None
    if op == "Slice":
        starts, ends = (int(_const(v).ravel()[0]) for v in ins[1:3])
        return em.out(node, P.subscript(em.pylist(ins[0]), P.slice_(starts, None if ends >= 2**62 else ends)))
    raise Unsupported(f"{op} on shape values")


def _elem(em, v, i):
    if v.shape == ():
        return em.pylist(v)
    if v.shape is not None and v.shape[0] == 1:
        return P.subscript(em.pylist(v), 0)
    return P.subscript(em.pylist(v), i)


RULES = {
    **{op: _unary(fn) for op, fn in UNARY_CALLS.items()},
    **{op: _binary_op(sym) for op, sym in BINARY_OPERATORS.items()},
    **{op: _binary_call(fn) for op, fn in BINARY_CALLS.items()},
    "MatMul": matmul, "Div": div, "Mod": mod, "Identity": identity, "Dropout": dropout,
    "Max": variadic("torch.maximum"), "Min": variadic("torch.minimum"), "Sum": variadic("torch.add"),
    "Mean": variadic("torch.add"),
    "Clip": clip, "Gelu": gelu, "LeakyRelu": leaky_relu, "Elu": elu, "HardSigmoid": hard_sigmoid, "PRelu": prelu,
    "Softmax": softmax, "LogSoftmax": softmax,
    "Conv": conv, "ConvTranspose": conv_transpose, "Dense": dense, "Gemm": gemm,
    "BatchNormalization": batch_norm, "InstanceNormalization": instance_norm, "LayerNormalization": layer_norm,
    "GroupNormalization": group_norm, "RMSNormalization": rms_norm, "LRN": lrn,
    "MaxPool": max_pool, "AveragePool": avg_pool, "GlobalAveragePool": global_pool, "GlobalMaxPool": global_pool,
    "Reshape": reshape, "Flatten": flatten, "Transpose": transpose, "Squeeze": squeeze, "Unsqueeze": unsqueeze,
    "Concat": concat, "Split": split, "Slice": slice_op, "Gather": gather, "GatherElements": gather_elements,
    "GatherND": gather_nd,
    "Expand": expand, "Tile": tile, "Pad": pad, "Where": where, "Cast": cast,
    "ReduceMean": reduce, "ReduceSum": reduce, "ReduceMax": reduce, "ReduceMin": reduce, "ReduceProd": reduce,
    "ReduceL2": reduce, "ArgMax": arg_reduce, "ArgMin": arg_reduce, "Attention": attention,
    "ConstantOfShape": constant_of_shape, "Range": range_op, "Resize": resize, "DepthToSpace": depth_to_space,
    "CumSum": cumsum, "Trilu": trilu, "Einsum": einsum, "TopK": top_k, "LSTM": recurrent, "GRU": recurrent,
    "Shape": lambda em, node: emit_shape_op(em, node),
    "QuantizeLinear": quantize_linear, "DequantizeLinear": dequantize_linear,
}

"""IR ops written as Core ML MIL ops (the iOS 15 opset, which both ML Programs and neural networks take).

Export rules take (writer, node): `w.x(value)` is an IR value as the builder takes it (a MIL variable, or a
NumPy constant), `w.mb` coremltools' builder, `w.name(node)` the op's name, and `w.set(value, var)` binds a
node's output. The tables here are read both ways: the ML Program reader (rules/coreml/program.py) reads the
same names back into the same IR ops.
"""

from __future__ import annotations

import numpy as np

from tensorbridge.ir import dtypes
from tensorbridge.reference.kernels.conv import resolve_pads
from tensorbridge.rules.core import two_inputs
from tensorbridge.rules.coreml.base import R, axes_of, check_const_inputs, const, known, positive

#: IR op -> MIL op of one input `x`
UNARY = {"Abs": "abs", "Acos": "acos", "Asin": "asin", "Atan": "atan", "Atanh": "atanh", "Ceil": "ceil",
         "Cos": "cos", "Cosh": "cosh", "Erf": "erf", "Exp": "exp", "Floor": "floor", "Round": "round", "Sign": "sign",
         "Sin": "sin", "Sinh": "sinh", "Sqrt": "sqrt", "Tan": "tan", "Tanh": "tanh", "Relu": "relu",
         "Sigmoid": "sigmoid", "Softsign": "softsign", "Softplus": "softplus", "SiLU": "silu", "Not": "logical_not",
         "Identity": "identity"}
#: IR op -> MIL op of two broadcast inputs `x`, `y`
BINARY = {"Add": "add", "Sub": "sub", "Mul": "mul", "Div": "real_div", "Pow": "pow", "Max": "maximum",
          "Min": "minimum", "Equal": "equal", "Greater": "greater", "GreaterOrEqual": "greater_equal",
          "Less": "less", "LessOrEqual": "less_equal", "And": "logical_and", "Or": "logical_or",
          "Xor": "logical_xor"}
#: IR reductions -> MIL's (axes, keep_dims)
REDUCE = {"ReduceSum": "reduce_sum", "ReduceMean": "reduce_mean", "ReduceMax": "reduce_max",
          "ReduceMin": "reduce_min", "ReduceProd": "reduce_prod", "ReduceL1": "reduce_l1_norm",
          "ReduceL2": "reduce_l2_norm", "ReduceLogSum": "reduce_log_sum",
          "ReduceLogSumExp": "reduce_log_sum_exp", "ReduceSumSquare": "reduce_sum_square"}
#: IR activations with one float attribute -> (MIL op, IR attribute, its default)
ALPHA = {"Elu": ("elu", "alpha", 1.0), "LeakyRelu": ("leaky_relu", "alpha", 0.01),
         "ThresholdedRelu": ("thresholded_relu", "alpha", 1.0)}
GELU = {"none": "EXACT", "tanh": "TANH_APPROXIMATION"}
DTYPE_NAMES = {np.dtype("float32"): "fp32", np.dtype("float16"): "fp16", np.dtype("int32"): "int32",
               np.dtype("int64"): "int32", np.dtype("bool"): "bool"}


def _float(node) -> str | None:
    if any(v is not None and v.dtype not in (np.float32, np.float16) for v in node.inputs[:1]):
        return "Core ML computes this op on floats only"
    return None


def _image(rank_from: int = 3, rank_to: int = 5):
    def check(node):
        x = node.input(0)
        if not known(x) or not rank_from <= len(x.shape) <= rank_to:
            return f"Core ML takes (N, C, spatial...) inputs of known shape, rank {rank_from} to {rank_to}"
        if node.attrs.get("layout", "NCHW") != "NCHW":
            return "Core ML's image ops are channels-first"
        return None
    return check


def _all(*checks):
    def check(node):
        return next((why for why in (c(node) for c in checks) if why), None)
    return check


for _ir, _mil in UNARY.items():
    R.exports(_ir)(lambda w, node, _mil=_mil: w.set(node.outputs[0], getattr(w.mb, _mil)(
        x=w.x(node.input(0)), name=w.name(node))))

for _ir, _mil in BINARY.items():
    R.exports(_ir, check=two_inputs)(lambda w, node, _mil=_mil: w.set(node.outputs[0], getattr(w.mb, _mil)(
        x=w.x(node.input(0)), y=w.x(node.input(1)), name=w.name(node))))


@R.exports("Neg", check=_float)
def write_neg(w, node):
    w.set(node.outputs[0], w.mb.mul(x=w.x(node.input(0)), y=np.array(-1, node.input(0).dtype), name=w.name(node)))


@R.exports("Mod", check=_all(two_inputs, lambda n: "C's fmod (Core ML's mod takes the divisor's sign)"
                             if n.attrs.get("fmod", 0) else None))
def write_mod(w, node):
    w.set(node.outputs[0], w.mb.mod(x=w.x(node.input(0)), y=w.x(node.input(1)), name=w.name(node)))


@R.exports("Reciprocal", "Log", check=_float)
def write_inverse_log(w, node):
    """Core ML adds an `epsilon` to the input of both: written as 0, they are the plain functions."""
    op = w.mb.inverse if node.op == "Reciprocal" else w.mb.log
    w.set(node.outputs[0], op(x=w.x(node.input(0)), epsilon=np.float32(0), name=w.name(node)))


for _ir, (_mil, _attr, _default) in ALPHA.items():
    R.exports(_ir, check=_float)(lambda w, node, _mil=_mil, _attr=_attr, _default=_default: w.set(
        node.outputs[0], getattr(w.mb, _mil)(x=w.x(node.input(0)), alpha=np.float32(node.attrs.get(_attr, _default)),
                                            name=w.name(node))))


@R.exports("HardSigmoid", check=_float)
def write_hard_sigmoid(w, node):
    w.set(node.outputs[0], w.mb.sigmoid_hard(x=w.x(node.input(0)), alpha=np.float32(node.attrs.get("alpha", 0.2)),
                                             beta=np.float32(node.attrs.get("beta", 0.5)), name=w.name(node)))


@R.exports("Gelu", check=_all(_float, lambda n: None if n.attrs.get("approximate", "none") in GELU
                                 else f"approximate={n.attrs['approximate']!r}"))
def write_gelu(w, node):
    w.set(node.outputs[0], w.mb.gelu(x=w.x(node.input(0)), mode=GELU[node.attrs.get("approximate", "none")],
                                     name=w.name(node)))


def _check_prelu(node):
    """Core ML's prelu has one slope per channel of an (N, C, ...) input: the IR slope must broadcast so."""
    x, slope = node.input(0), const(node.input(1))
    if slope is None or not known(x) or len(x.shape) < 3 or slope.ndim > len(x.shape):
        return "Core ML's prelu takes constant slopes, one per channel of an (N, C, ...) input"
    aligned = (1,) * (len(x.shape) - slope.ndim) + slope.shape
    if slope.size != 1 and aligned != (1, x.shape[1]) + (1,) * (len(x.shape) - 2):
        return f"slopes of shape {list(slope.shape)}: Core ML's prelu has one per channel"
    return _float(node)


@R.exports("PRelu", check=_check_prelu)
def write_prelu(w, node):
    x, slope = node.input(0), const(node.input(1)).astype(np.float32)
    alpha = np.full(x.shape[1], slope.reshape(-1)[0], np.float32) if slope.size == 1 else slope.reshape(-1)
    w.set(node.outputs[0], w.mb.prelu(x=w.x(x), alpha=alpha, name=w.name(node)))


def _check_clip(node):
    bounds = [node.input(i) if i < len(node.inputs) else None for i in (1, 2)]
    if any(b is not None and b.const is None for b in bounds):
        return "Core ML clips to constant bounds"
    return _float(node)


@R.exports("Clip", check=_check_clip)
def write_clip(w, node):
    """`clip` takes both bounds; an absent one is the float range's end."""
    low, high = (const(node.input(i)) if i < len(node.inputs) else None for i in (1, 2))
    info = np.finfo(np.float32)
    w.set(node.outputs[0], w.mb.clip(x=w.x(node.input(0)), alpha=np.float32(info.min if low is None else low),
                                     beta=np.float32(info.max if high is None else high), name=w.name(node)))


@R.exports("Where")
def write_where(w, node):
    w.set(node.outputs[0], w.mb.select(cond=w.x(node.input(0)), a=w.x(node.input(1)), b=w.x(node.input(2)),
                                       name=w.name(node)))


@R.exports("Sum", "Mean")
def write_variadic_sum(w, node):
    total = w.x(node.input(0))
    for k, v in enumerate(node.inputs[1:]):
        last = k == len(node.inputs) - 2 and node.op == "Sum"
        total = w.mb.add(x=total, y=w.x(v), name=w.name(node) if last else w.name(node, f"sum{k}"))
    if node.op == "Mean":
        total = w.mb.real_div(x=total, y=np.array(len(node.inputs), node.input(0).dtype), name=w.name(node))
    elif len(node.inputs) == 1:
        total = w.mb.identity(x=total, name=w.name(node))
    w.set(node.outputs[0], total)


@R.exports("Cast", check=lambda n: None if dtypes.dtype(n.attrs["to"]) in DTYPE_NAMES
           else f"Core ML has no {dtypes.name(dtypes.dtype(n.attrs['to']))} tensors")
def write_cast(w, node):
    w.set(node.outputs[0], w.mb.cast(x=w.x(node.input(0)), dtype=DTYPE_NAMES[dtypes.dtype(node.attrs["to"])],
                                     name=w.name(node)))


# -- convolution, pooling, normalisation --------------------------------------------------------------------
def _pads(node, rank: int) -> list[int]:
    """The node's padding (explicit, or auto_pad's worked out on the known input) as Core ML's (begin, end)
    per axis."""
    kernel = node.attrs.get("kernel_shape") or list(np.shape(const(node.input(1)))[2:])
    pads = resolve_pads(node.input(0).shape[2:], kernel, node.attrs.get("strides") or [1] * rank,
                        node.attrs.get("dilations") or [1] * rank, node.attrs.get("pads"),
                        node.attrs.get("auto_pad", "NOTSET"))
    return [p for i in range(rank) for p in (pads[i], pads[i + rank])]


def _no_auto_pad(node):
    if node.op == "ConvTranspose" and node.attrs.get("auto_pad", "NOTSET") != "NOTSET":
        return "a transposed convolution padded by auto_pad"
    return None


def _check_conv_transpose(node):
    if node.attrs.get("output_shape"):
        return "a transposed convolution with output_shape"
    if any(node.attrs.get("output_padding") or []):
        return "output_padding on a transposed convolution"
    return None


@R.exports("Conv", "ConvTranspose", check=_all(_image(), _no_auto_pad, check_const_inputs(1, 2, what="weights"),
                                                   _float, lambda n: _check_conv_transpose(n)
                                                   if n.op == "ConvTranspose" else None))
def write_conv(w, node):
    x, weight, bias = node.input(0), const(node.input(1)), const(node.input(2))
    rank = len(x.shape) - 2
    args = {"x": w.x(x), "weight": weight.astype(np.float32), "strides": node.attrs.get("strides") or [1] * rank,
            "pad_type": "custom", "pad": _pads(node, rank), "dilations": node.attrs.get("dilations") or [1] * rank,
            "groups": node.attrs.get("group", 1), "name": w.name(node)}
    if bias is not None:
        args["bias"] = bias.astype(np.float32)
    op = w.mb.conv_transpose if node.op == "ConvTranspose" else w.mb.conv
    w.set(node.outputs[0], op(**args))


def _check_pool(node):
    if any(d != 1 for d in node.attrs.get("dilations") or []):
        return "dilated pooling"
    if len(node.outputs) > 1 and node.outputs[1] is not None and node.outputs[1].uses:
        return "max pooling's indices"
    if node.op == "MaxPool" and node.attrs.get("storage_order", 0):
        return "column-major pooling indices"
    if node.op == "AveragePool" and not node.attrs.get("count_include_pad", 0) and \
            any(p for p in node.attrs.get("pads") or []) and node.attrs.get("ceil_mode", 0):
        return "an average that excludes padding with ceil rounding (Core ML's border rule is not proven equal)"
    x = node.input(0)
    if known(x) and len(x.shape) - 2 > 2 and node.attrs.get("ceil_mode", 0):
        return "ceil rounding of 3-D pooling"
    return None


@R.exports("MaxPool", "AveragePool", check=_all(_image(3, 5), _no_auto_pad, _check_pool, _float))
def write_pool(w, node):
    x = node.input(0)
    rank = len(x.shape) - 2
    args = {"x": w.x(x), "kernel_sizes": node.attrs["kernel_shape"], "strides": node.attrs.get("strides") or [1] * rank,
            "pad_type": "custom", "pad": _pads(node, rank), "ceil_mode": bool(node.attrs.get("ceil_mode", 0)),
            "name": w.name(node)}
    if node.op == "AveragePool":
        args["exclude_padding_from_average"] = not node.attrs.get("count_include_pad", 0)
        w.set(node.outputs[0], w.mb.avg_pool(**args))
    else:
        w.set(node.outputs[0], w.mb.max_pool(**args))


@R.exports("GlobalAveragePool", "GlobalMaxPool", check=_all(_image(3, 5), _float))
def write_global_pool(w, node):
    x = node.input(0)
    op = w.mb.reduce_mean if node.op == "GlobalAveragePool" else w.mb.reduce_max
    w.set(node.outputs[0], op(x=w.x(x), axes=list(range(2, len(x.shape))), keep_dims=True, name=w.name(node)))


@R.exports("BatchNormalization", check=_all(_image(3, 5), check_const_inputs(1, 2, 3, 4, what="statistics"),
                                            lambda n: "training-mode batch normalisation"
                                            if n.attrs.get("training_mode") else None))
def write_batch_norm(w, node):
    scale, bias, mean, var = (const(node.input(i)).astype(np.float32) for i in (1, 2, 3, 4))
    w.set(node.outputs[0], w.mb.batch_norm(x=w.x(node.input(0)), mean=mean, variance=var, gamma=scale, beta=bias,
                                           epsilon=np.float32(node.attrs.get("epsilon", 1e-5)), name=w.name(node)))


@R.exports("InstanceNormalization", check=_all(_image(3, 4), check_const_inputs(1, 2)))
def write_instance_norm(w, node):
    w.set(node.outputs[0], w.mb.instance_norm(
        x=w.x(node.input(0)), gamma=const(node.input(1)).astype(np.float32),
        beta=const(node.input(2)).astype(np.float32), epsilon=np.float32(node.attrs.get("epsilon", 1e-5)),
        name=w.name(node)))


def _check_layer_norm(node):
    x = node.input(0)
    if not known(x):
        return "Core ML normalises inputs of known rank"
    if any(o is not None and o.uses for o in node.outputs[1:]):
        return "layer normalisation's mean and deviation outputs"
    rank = len(x.shape)
    axis = node.attrs.get("axis", -1) % rank
    for i in (1, 2):
        c = const(node.input(i)) if i < len(node.inputs) and node.input(i) is not None else np.ones(1)
        if c is None or (c.size > 1 and c.shape != tuple(x.shape[axis:])):
            return "Core ML's layer_norm takes constant scale and bias of the normalised shape"
    return _float(node)


@R.exports("LayerNormalization", check=_check_layer_norm)
def write_layer_norm(w, node):
    x = node.input(0)
    rank = len(x.shape)
    axis = node.attrs.get("axis", -1) % rank
    shape = tuple(x.shape[axis:])
    gamma, beta = (const(node.input(i)) if i < len(node.inputs) and node.input(i) is not None else None
                   for i in (1, 2))
    args = {"x": w.x(x), "axes": list(range(axis, rank)), "epsilon": np.float32(node.attrs.get("epsilon", 1e-5)),
            "name": w.name(node)}
    if gamma is not None:
        args["gamma"] = np.broadcast_to(gamma, shape).astype(np.float32)
    if beta is not None:
        args["beta"] = np.broadcast_to(beta, shape).astype(np.float32)
    w.set(node.outputs[0], w.mb.layer_norm(**args))


@R.exports("LRN", check=_all(_image(3, 4), _float))
def write_lrn(w, node):
    a = node.attrs
    w.set(node.outputs[0], w.mb.local_response_norm(
        x=w.x(node.input(0)), size=a["size"], alpha=np.float32(a.get("alpha", 1e-4)),
        beta=np.float32(a.get("beta", 0.75)), k=np.float32(a.get("bias", 1.0)), name=w.name(node)))


# -- products and softmax -----------------------------------------------------------------------------------
@R.exports("Dense", check=_all(check_const_inputs(1, 2, what="weights"), _float))
def write_dense(w, node):
    weight, bias = const(node.input(1)), const(node.input(2))
    args = {"x": w.x(node.input(0)), "weight": np.ascontiguousarray(weight.T).astype(np.float32), "name": w.name(node)}
    if bias is not None:
        args["bias"] = bias.astype(np.float32)
    w.set(node.outputs[0], w.mb.linear(**args))


@R.exports("MatMul", check=lambda n: None if all(known(v) and len(v.shape) >= 1 for v in n.inputs)
           else "Core ML multiplies matrices of known rank")
def write_matmul(w, node):
    """A vector operand is made a matrix (a row on the left, a column on the right) and its axis squeezed from
    the product, as NumPy's matmul does: coremltools' matmul takes matrices only."""
    x, y = node.input(0), node.input(1)
    vectors = [-2] if len(x.shape) == 1 else []
    vectors += [-1] if len(y.shape) == 1 else []
    if not vectors:
        return w.set(node.outputs[0], w.mb.matmul(x=w.x(x), y=w.x(y), name=w.name(node)))
    left = w.mb.expand_dims(x=w.x(x), axes=[0], name=w.name(node, "row")) if len(x.shape) == 1 else w.x(x)
    right = w.mb.expand_dims(x=w.x(y), axes=[-1], name=w.name(node, "column")) if len(y.shape) == 1 else w.x(y)
    product = w.mb.matmul(x=left, y=right, name=w.name(node, "product"))
    w.set(node.outputs[0], w.mb.squeeze(x=product, axes=vectors if len(vectors) == 1 else [-2, -1],
                                        name=w.name(node)))


@R.exports("Gemm", check=_float)
def write_gemm(w, node):
    """alpha * A' B' + beta * C: `linear` for a constant matrix and bias vector, else matmul, scale and add."""
    a = node.attrs
    alpha, beta, trans_a, trans_b = a.get("alpha", 1.0), a.get("beta", 1.0), a.get("transA", 0), a.get("transB", 0)
    matrix, bias = const(node.input(1)), const(node.input(2)) if len(node.inputs) > 2 else None
    c = node.input(2) if len(node.inputs) > 2 else None
    if matrix is not None and not trans_a and alpha == 1 and (c is None or (bias is not None and bias.ndim == 1)):
        args = {"x": w.x(node.input(0)), "weight": (matrix if trans_b else matrix.T).astype(np.float32)}
        if bias is not None:
            args["bias"] = np.broadcast_to(beta * bias, matrix.shape[0 if trans_b else 1]).astype(np.float32)
        w.set(node.outputs[0], w.mb.linear(**args, name=w.name(node)))
        return
    y = w.mb.matmul(x=w.x(node.input(0)), y=w.x(node.input(1)), transpose_x=bool(trans_a), transpose_y=bool(trans_b),
                    name=w.name(node, "product") if (alpha != 1 or c is not None) else w.name(node))
    if alpha != 1:
        y = w.mb.mul(x=y, y=np.float32(alpha), name=w.name(node, "scaled") if c is not None else w.name(node))
    if c is not None:
        addend = (beta * bias).astype(np.float32) if bias is not None else (
            w.x(c) if beta == 1 else w.mb.mul(x=w.x(c), y=np.float32(beta), name=w.name(node, "beta")))
        y = w.mb.add(x=y, y=addend, name=w.name(node))
    w.set(node.outputs[0], y)


@R.exports("Softmax", "LogSoftmax", check=_float)
def write_softmax(w, node):
    """LogSoftmax as x - logsumexp(x): the form that does not underflow."""
    axis = node.attrs.get("axis", -1)
    x = w.x(node.input(0))
    if node.op == "Softmax":
        w.set(node.outputs[0], w.mb.softmax(x=x, axis=axis, name=w.name(node)))
        return
    lse = w.mb.reduce_log_sum_exp(x=x, axes=[axis], keep_dims=True, name=w.name(node, "logsumexp"))
    w.set(node.outputs[0], w.mb.sub(x=x, y=lse, name=w.name(node)))


# -- reductions ---------------------------------------------------------------------------------------------
def _check_reduce(node):
    axes = axes_of(node, 1)
    if axes is None:
        return "Core ML reduces over constant axes"
    if not axes and node.attrs.get("noop_with_empty_axes", 0):
        return "an empty-axes reduction that passes its input through"
    if not known(node.input(0)):
        return "Core ML reduces inputs of known rank"
    return None


@R.exports(*REDUCE, check=_check_reduce)
def write_reduce(w, node):
    x = node.input(0)
    axes = axes_of(node, 1) or list(range(len(x.shape)))
    w.set(node.outputs[0], getattr(w.mb, REDUCE[node.op])(
        x=w.x(x), axes=positive(axes, len(x.shape)), keep_dims=bool(node.attrs.get("keepdims", 1)),
        name=w.name(node)))


@R.exports("ArgMax", "ArgMin", check=lambda n: "the last index of ties" if n.attrs.get("select_last_index") else None)
def write_arg(w, node):
    op = w.mb.reduce_argmax if node.op == "ArgMax" else w.mb.reduce_argmin
    w.set(node.outputs[0], op(x=w.x(node.input(0)), axis=node.attrs.get("axis", 0),
                              keep_dims=bool(node.attrs.get("keepdims", 1)), name=w.name(node)))


@R.exports("CumSum", check=check_const_inputs(1, what="its axis"))
def write_cumsum(w, node):
    w.set(node.outputs[0], w.mb.cumsum(x=w.x(node.input(0)), axis=int(const(node.input(1)).reshape(-1)[0]),
                                       exclusive=bool(node.attrs.get("exclusive", 0)),
                                       reverse=bool(node.attrs.get("reverse", 0)), name=w.name(node)))


@R.exports("TopK", check=_all(check_const_inputs(1, what="k"),
                              lambda n: None if n.attrs.get("sorted", 1) else "unsorted top-k"))
def write_topk(w, node):
    values, indices = w.mb.topk(x=w.x(node.input(0)), k=int(const(node.input(1)).reshape(-1)[0]),
                                axis=node.attrs.get("axis", -1), ascending=not node.attrs.get("largest", 1),
                                name=w.name(node))
    w.set(node.outputs[0], values)
    w.set(node.outputs[1], indices)
